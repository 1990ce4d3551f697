"""Runs for the resume tests, each in a process of its own (``python resume_runs.py ...``).

For each setup NAME (``python resume_runs.py first|resumed DIR NAME...``):

* ``first``: the run of ``SETUPS[NAME]["steps"]`` env steps, never interrupted (its fingerprint
  in ``DIR/NAME/whole.npz``), then the same run sent SIGINT (Ctrl-C) at env step ``k``: it writes
  a checkpoint at the end of that step and stops with ``KeyboardInterrupt``;
* ``resumed`` (a fresh process): the interrupted run's newest checkpoint, resumed and run to the
  end (its fingerprint in ``DIR/NAME/resumed.npz``).

A fingerprint holds every stored column, every parameter and optimiser state, the hooks' records,
the final evaluation, and a digest of the whole state of the agent, the env, the recording hooks
and the stop condition (every array, tensor, counter and rng, as a checkpoint encodes them).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import stagerl as rl
from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, latest, register, resume
from stagerl.checkpoints.graph import encode
from stagerl.experiments.registry import configure, get_experiment
from stagerl.experiments.runner import make_eval_env
from stagerl.logging import Evaluate

SETUPS = {
    "tabular": {"experiment": "tabular-q-random-walk", "steps": 400, "k": 125, "overrides": {}},
    "dqn": {"experiment": "dqn-cartpole", "steps": 1000, "k": 777, "overrides": {
        "net_arch": (32,), "learning_starts": 200, "train_freq": 50, "gradient_steps": 4,
        "buffer_size": 500, "batch_size": 32, "target_update_interval": 100}},
    "ppo": {"experiment": "ppo-cartpole", "steps": 1200, "k": 4 * 37, "overrides": {
        "num_envs": 4, "n_steps": 16, "batch_size": 32, "n_epochs": 2}},
    "sac": {"experiment": "sac-pendulum", "steps": 400, "k": 333, "overrides": {
        "net_arch": (32, 32), "buffer_size": 300, "learning_starts": 100, "batch_size": 32}},
    # recurrent: the lanes' memory live at the interruption
    "ppo-lstm": {"experiment": "ppo-lstm-cartpole-novel", "steps": 1200, "k": 4 * 37,
                 "overrides": {"num_envs": 4, "n_steps": 16, "batch_size": 32, "n_epochs": 2,
                               "rnn_hidden_size": 16, "max_seq_len": 8}},
    "drqn": {"experiment": "drqn-cartpole-novel", "steps": 800, "k": 333, "overrides": {
        "learning_starts": 200, "buffer_size": 300, "batch_size": 8, "sequence_length": 6,
        "burn_in": 2, "rnn_hidden_size": 16, "net_arch": (16,), "target_update_interval": 100}},
    # PPO with the adaptive KL penalty and no clipping: the coefficient resumes as it was
    "ppo-kl": {"experiment": "ppo-cartpole", "steps": 1200, "k": 4 * 37, "overrides": {
        "num_envs": 4, "n_steps": 16, "batch_size": 32, "n_epochs": 2, "kl_coef": 0.2,
        "kl_target": 0.003, "clip_range": float("inf")}},
    # every other named experiment (the slow tests)
    "sac-vector": {"experiment": "sac-pendulum", "steps": 400, "k": 334, "overrides": {
        "net_arch": (32, 32), "buffer_size": 150, "learning_starts": 100, "batch_size": 32,
        "num_envs": 2}},
    "rainbow": {"experiment": "rainbow-cartpole", "steps": 800, "k": 501, "overrides": {
        "buffer_size": 300, "learning_starts": 200}},
    "dqn-acrobot": {"experiment": "dqn-acrobot", "steps": 800, "k": 333, "overrides": {
        "learning_starts": 200, "buffer_size": 300, "net_arch": (32,)}},
    "a2c": {"experiment": "a2c-cartpole", "steps": 600, "k": 4 * 21, "overrides": {
        "num_envs": 4}},
    # rllab's linear feature baseline, refitted each update (before "vpg": the fuzzed
    # checkpoints take the last settings of an experiment, VPG's own network baseline)
    "vpg-linear": {"experiment": "vpg-cartpole", "steps": 1500, "k": 4 * 101, "overrides": {
        "num_envs": 4, "baseline": "linear"}},
    "trpo-linear": {"experiment": "trpo-cartpole", "steps": 1200, "k": 2 * 151, "overrides": {
        "n_steps": 64, "batch_size": 64, "n_critic_updates": 2, "baseline": "linear"}},
    "vpg": {"experiment": "vpg-cartpole", "steps": 1500, "k": 4 * 101, "overrides": {
        "num_envs": 4}},
    # whole-episode learners whose policy L-BFGS fits; REPS's dual starts from its last
    # solution, both learn against the linear baseline (an update every ~30 acts)
    "erwr": {"experiment": "erwr-cartpole", "steps": 1200, "k": 4 * 101, "overrides": {
        "num_envs": 4, "episodes_per_update": 4}},
    "reps": {"experiment": "reps-cartpole", "steps": 1200, "k": 4 * 101, "overrides": {
        "num_envs": 4, "episodes_per_update": 4}},
    "trpo": {"experiment": "trpo-cartpole", "steps": 1200, "k": 4 * 37, "overrides": {}},
    "ppo-pendulum": {"experiment": "ppo-pendulum", "steps": 1200, "k": 4 * 37, "overrides": {
        "num_envs": 4, "n_steps": 64, "batch_size": 64, "n_epochs": 2}},
    "td3": {"experiment": "td3-pendulum", "steps": 400, "k": 333, "overrides": {
        "net_arch": (32, 32), "buffer_size": 300, "learning_starts": 100, "batch_size": 32}},
    "ddpg": {"experiment": "ddpg-pendulum", "steps": 400, "k": 333, "overrides": {
        "net_arch": (32, 32), "buffer_size": 300, "learning_starts": 100, "batch_size": 32}},
    # MuJoCo bodies and Atari games: their simulators' state saved as data
    "sac-halfcheetah": {"experiment": "sac-halfcheetah", "steps": 400, "k": 333, "overrides": {
        "net_arch": (32, 32), "buffer_size": 300, "learning_starts": 100, "batch_size": 32}},
    "ppo-hopper": {"experiment": "ppo-hopper", "steps": 300, "k": 150, "overrides": {
        "n_steps": 64, "batch_size": 32, "n_epochs": 2, "net_arch": (32, 32)}},
    "td3-hopper": {"experiment": "td3-hopper", "steps": 400, "k": 333, "overrides": {
        "net_arch": (32, 32), "buffer_size": 300, "learning_starts": 100, "batch_size": 32}},
    "dqn-atari": {"experiment": "dqn-atari", "steps": 400, "k": 333, "overrides": {
        "learning_starts": 200, "buffer_size": 300, "target_update_interval": 100}},
    "ppo-atari": {"experiment": "ppo-atari", "steps": 8 * 48, "k": 8 * 37, "overrides": {
        "n_steps": 16, "batch_size": 64, "n_epochs": 1}},
    # recurrent policies: the lanes' memory saved with the run
    "ppo-lstm-rps": {"experiment": "ppo-lstm-rps", "steps": 1200, "k": 4 * 37, "overrides": {
        "num_envs": 4, "n_steps": 32, "batch_size": 64, "n_epochs": 2, "rnn_hidden_size": 16}},
    "drqn-vector": {"experiment": "drqn-cartpole-novel", "steps": 800, "k": 334, "overrides": {
        "learning_starts": 200, "buffer_size": 300, "batch_size": 8, "sequence_length": 6,
        "burn_in": 2, "rnn_hidden_size": 16, "net_arch": (16,), "num_envs": 2}},
}
EVAL_EPISODES = 3


@register(name="resume_runs.CtrlCAt")  # one name whether run as a script or imported
@dataclass
class CtrlCAt(rl.Hook):
    """Sends this process SIGINT (as Ctrl-C does) at env step ``at``."""

    at: int
    env_step: int = 0


@rl.push.dispatch
def _push_ctrl_c(hook: CtrlCAt, stage: rl.PostActStage, policy, env):
    hook.env_step += getattr(env, "num_envs", 1)
    if hook.env_step == hook.at:
        os.kill(os.getpid(), signal.SIGINT)


def build(name: str, directory: Path, interrupt_at: int) -> ResumableExperiment:
    """The experiment as the command line builds it, with a checkpoint schedule and Ctrl-C at
    ``interrupt_at``."""
    setup = SETUPS[name]
    experiment = get_experiment(setup["experiment"])
    config = configure(setup["experiment"], steps=setup["steps"], **setup["overrides"])
    torch.manual_seed(0)
    env = experiment.make_env(config, 0)
    _seed_spaces(env)
    agent = experiment.make_agent(config, env, 0, torch.device("cpu"))
    evaluations = Evaluate(setup["steps"] // 3, 2, make_eval_env(experiment, config, 10_000),
                           experiment.eval_max_episode_steps)
    hook = rl.TotalRewardPerEpisode() + evaluations + CtrlCAt(interrupt_at)
    schedule = CheckpointSchedule(every_n_steps=200, directory=directory / "checkpoints",
                                  keep_last=10)
    return ResumableExperiment(agent, env, rl.StopAfterNSteps(setup["steps"], progress=False),
                               hook, checkpoints=schedule,
                               info={"experiment": setup["experiment"]})


def _seed_spaces(env) -> None:
    """Seed the spaces gymnasium leaves on fresh entropy (never sampled by these runs), so that
    the digests of two processes can agree."""
    inner = getattr(env, "env", None)  # the gymnasium env of a GymEnv or GymVectorEnv
    if inner is None:
        return
    for sub_env in getattr(inner, "envs", [inner]):
        sub_env.unwrapped.observation_space.seed(1)
        sub_env.observation_space.seed(1)  # a wrapper's own (StackedFrames')
    for name in ("observation_space", "single_observation_space"):
        space = getattr(inner, name, None)
        if space is not None:
            space.seed(1)


def fingerprint(name: str, experiment: ResumableExperiment) -> dict:
    """Everything the two runs must agree on, as arrays."""
    setup = SETUPS[name]
    agent, hook = experiment.policy, experiment.hook
    out = {}
    container = agent.trajectory.container
    for key in container.keys():
        out[f"column/{key}"] = np.asarray(container[key])
    for meta in ("sampleable_inds", "step_numbers", "episodes_lengths"):
        if hasattr(container, meta):
            out[f"meta/{meta}"] = np.asarray(getattr(container, meta))
    for key, value in _flat(agent.state_dict()):
        value = value.detach().cpu().numpy() if torch.is_tensor(value) else np.asarray(value)
        out[f"state/{key}"] = np.asarray(str(value)) if value.dtype == object else value
    out["hook/rewards"] = np.asarray(hook[0].rewards)
    out["hook/evaluations"] = np.asarray(hook[1].returns)
    config = configure(setup["experiment"], steps=setup["steps"], **setup["overrides"])
    experiment_def = get_experiment(setup["experiment"])
    out["final_evaluation"] = np.asarray(rl.evaluate(
        agent, make_eval_env(experiment_def, config, 10_000), EVAL_EPISODES,
        experiment_def.eval_max_episode_steps))
    out["digest"] = np.asarray(state_digest((agent, experiment.env, hook[0], hook[1],
                                             experiment.stop_condition)))
    return out


def state_digest(obj) -> str:
    """SHA-256 of ``obj`` as a checkpoint encodes it (sets in a fixed order, tensors by value)."""
    encoded = encode(obj)
    digest = hashlib.sha256(json.dumps(_sorted_sets(encoded.tree), sort_keys=True).encode())
    for key in sorted(encoded.tensors, key=int):
        tensor = encoded.tensors[key].contiguous()
        digest.update(f"{key}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _sorted_sets(node):
    if isinstance(node, dict):
        node = {k: _sorted_sets(v) for k, v in node.items()}
        for tag in ("set", "frozenset"):
            if tag in node:
                node[tag] = sorted(node[tag], key=lambda v: json.dumps(v, sort_keys=True))
        return node
    if isinstance(node, list):
        return [_sorted_sets(v) for v in node]
    return node


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
    """The uninterrupted run's fingerprint."""
    return fingerprint(name, build(name, directory / "whole", interrupt_at=-1).run())


def run_interrupted(name: str, directory: Path) -> Path:
    """The run stopped by Ctrl-C at step ``k``; the checkpoint it wrote then."""
    try:
        build(name, directory / "interrupted", interrupt_at=SETUPS[name]["k"]).run()
    except KeyboardInterrupt:
        return latest(directory / "interrupted" / "checkpoints")
    raise AssertionError(f"the {name} run was not interrupted")


def run_resumed(name: str, directory: Path) -> dict:
    """The interrupted run's newest checkpoint, resumed and run to the end: its fingerprint."""
    experiment = resume(latest(directory / "interrupted" / "checkpoints"))
    return fingerprint(name, experiment.run())


def main(mode: str, directory: str, *names: str) -> int:
    """``first``: the whole and the interrupted runs; ``resumed``: the resumed runs; one
    directory per name, a fingerprint ``<mode>.npz`` in each."""
    for name in names:
        where = Path(directory) / name
        if mode == "first":
            np.savez(where / "whole.npz", **run_whole(name, where))
            run_interrupted(name, where)
        elif mode == "resumed":
            np.savez(where / "resumed.npz", **run_resumed(name, where))
        else:
            raise ValueError(f"unknown mode {mode!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
