"""Runs of the multi-agent experiments for the resume tests: a whole run that checkpoints
mid-game, and (``python resume_games.py DIR NAME``, a fresh process) the run resumed from that
checkpoint, each reduced to a fingerprint of everything the two must agree on."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch

import stagerl as rl
from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, resume
from stagerl.checkpoints.graph import encode
from stagerl.experiments.registry import configure, get_experiment
from stagerl.experiments.runner import make_eval_env
from stagerl.logging import Evaluate
from stagerl.multi_agent import MultiAgentCSVLogger, MultiAgentHook, WinDrawLoss

#: steps: the run's length; k: the mid-game step its checkpoint is written at.
SETUPS = {
    "dqn-tictactoe": {"steps": 1_200, "k": 603, "overrides": {
        "learning_starts": 200, "buffer_size": 500, "net_arch": (16,),
        "target_update_interval": 100}},
    "dqn-tictactoe-selfplay": {"steps": 1_200, "k": 605, "overrides": {
        "learning_starts": 200, "buffer_size": 500, "net_arch": (16,), "n_step": 2,
        "target_update_interval": 100}},
    "ppo-rps": {"steps": 700, "k": 305, "overrides": {
        "n_steps": 64, "batch_size": 32, "n_epochs": 2, "max_cycles": 7}},
}
EVAL_EPISODES = 6


def build(name: str, directory: Path) -> ResumableExperiment:
    """The experiment as ``stagerl run`` builds it (evaluations, per-player logs and hooks),
    checkpointing at its mid-game step ``k``."""
    setup = SETUPS[name]
    experiment = get_experiment(name)
    config = configure(name, steps=setup["steps"], **setup["overrides"])
    torch.manual_seed(0)
    game = experiment.make_env(config, 0)
    policy = experiment.make_agent(config, game, 0, torch.device("cpu"))
    evaluations = Evaluate(setup["steps"] // 3, 4, make_eval_env(experiment, config, 10_000))
    players = MultiAgentHook({p: rl.TotalRewardPerEpisode() + WinDrawLoss()
                              for p in game.players})
    hook = evaluations + players + MultiAgentCSVLogger(directory / "logs")
    schedule = CheckpointSchedule(every_n_steps=setup["k"], directory=directory / "checkpoints",
                                  keep_last=10, at_end=False)
    return ResumableExperiment(policy, game, rl.StopAfterNSteps(setup["steps"], progress=False),
                               hook, checkpoints=schedule, info={"experiment": name})


def checkpoint_at_k(name: str, directory: Path) -> Path:
    return directory / "checkpoints" / f"step-{SETUPS[name]['k']:09d}"


def fingerprint(name: str, experiment: ResumableExperiment) -> dict:
    """Every stored row of every player's Agent (lane by lane), every parameter and optimiser
    state, the hooks' records, the final evaluation, and a digest of the whole state."""
    setup = SETUPS[name]
    policy, hook = experiment.policy, experiment.hook
    out = {}
    for key, member in sorted(policy.policies.items()):
        if isinstance(member, rl.Agent):
            container = member.trajectory.container
            for trace in container.keys():
                out[f"{key}/column/{trace}"] = np.asarray(container[trace])
            out[f"{key}/lanes"] = np.asarray(container.lane_lengths())
            for meta in ("sampleable_inds", "step_numbers"):
                out[f"{key}/meta/{meta}"] = np.asarray(getattr(container, meta))
        for path, value in _flat(member.state_dict()):
            value = value.detach().cpu().numpy() if torch.is_tensor(value) else np.asarray(value)
            out[f"{key}/state/{path}"] = np.asarray(str(value)) if value.dtype == object \
                else value
    evaluations, players = hook[0], hook[1]
    out["evaluations"] = np.asarray(evaluations.returns)
    for player, member in players.hooks.items():
        out[f"returns/{player}"] = np.asarray(member[0].rewards)
        out[f"results/{player}"] = np.asarray([member[1].wins, member[1].draws,
                                               member[1].losses])
    config = configure(name, steps=setup["steps"], **setup["overrides"])
    out["final_evaluation"] = np.asarray(rl.evaluate(
        policy, make_eval_env(get_experiment(name), config, 10_000), EVAL_EPISODES))
    digest = hashlib.sha256()
    encoded = encode((policy, experiment.env, evaluations, players, experiment.stop_condition))
    digest.update(json.dumps(encoded.tree, sort_keys=True, default=str).encode())
    for key in sorted(encoded.tensors, key=int):
        tensor = encoded.tensors[key].contiguous()
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    out["digest"] = np.asarray(digest.hexdigest())
    return out


def _flat(state, prefix=""):
    if isinstance(state, dict):
        for key, value in state.items():
            yield from _flat(value, f"{prefix}{key}/")
    elif isinstance(state, (list, tuple)):
        for i, value in enumerate(state):
            yield from _flat(value, f"{prefix}{i}/")
    elif state is not None:
        yield prefix.rstrip("/"), state


def run_whole(name: str, directory: Path) -> dict:
    return fingerprint(name, build(name, directory).run())


def run_resumed(name: str, directory: Path) -> dict:
    return fingerprint(name, resume(checkpoint_at_k(name, directory)).run())


if __name__ == "__main__":
    where, which = Path(sys.argv[1]), sys.argv[2]
    np.savez(where / "resumed.npz", **run_resumed(which, where))
