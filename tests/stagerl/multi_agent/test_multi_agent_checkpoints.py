"""A multi-agent run checkpointed mid-game and resumed (in a fresh process) ends bit for bit as
the run that was never stopped: every player's stored rows, parameters, hooks and logs."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stagerl as rl
from stagerl.checkpoints import resume

sys.path.insert(0, str(Path(__file__).parent))
import resume_games  # noqa: E402  (the runs, beside this file; the fresh process runs it)


def _differences(a: dict, b: dict) -> list[str]:
    assert sorted(a) == sorted(b)
    return [key for key in a if not (a[key].dtype == b[key].dtype and a[key].shape == b[key].shape
                                     and a[key].tobytes() == b[key].tobytes())]


def _assert_mid_game(name: str, checkpoint: Path) -> None:
    experiment = resume(checkpoint, restore_globals=False)
    policy, game = experiment.policy, experiment.env
    assert experiment.checkpoints.env_step == resume_games.SETUPS[name]["k"]
    assert not (game.is_terminated or game.is_truncated)
    if name == "ppo-rps":  # mid-match, mid-rollout
        learner = policy.policies["player_0"]
        assert 0 < game.unwrapped.cycle < game.unwrapped.max_cycles
        assert 0 < len(learner.trajectory) < learner.policy.config.n_steps
        assert learner.policy._steps  # the pending step's log-prob and value are saved
    else:  # a move waits for its transition
        assert policy.turns.pending and policy.turns.started


@pytest.mark.parametrize("name", list(resume_games.SETUPS))
def test_a_game_checkpointed_mid_game_resumed_in_a_fresh_process_ends_as_the_whole_run(
        name, tmp_path):
    whole = resume_games.run_whole(name, tmp_path)
    checkpoint = resume_games.checkpoint_at_k(name, tmp_path)
    _assert_mid_game(name, checkpoint)
    rows_before = list(csv.reader((tmp_path / "logs" / "episodes.csv").open()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(Path(rl.__file__).parents[1]), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, resume_games.__file__, str(tmp_path), name], check=True,
                   timeout=600, env=env)
    resumed = dict(np.load(tmp_path / "resumed.npz"))
    assert _differences(whole, resumed) == []
    rows_after = list(csv.reader((tmp_path / "logs" / "episodes.csv").open()))
    assert [r[:5] + r[8:] for r in rows_after] == [r[:5] + r[8:] for r in rows_before]
    players = resume(checkpoint, restore_globals=False).env.players
    assert rows_after[0][-2:] == [f"return_{p}" for p in players]


def test_the_multi_agent_classes_load_from_a_checkpoint_as_data(tmp_path):
    experiment = resume_games.build("dqn-tictactoe-selfplay", tmp_path)
    experiment.run()
    loaded = resume(resume_games.checkpoint_at_k("dqn-tictactoe-selfplay", tmp_path))
    policy = loaded.policy
    assert type(policy).__name__ == "MultiAgentPolicy"
    assert policy.policy_mapping == {"player_1": "shared", "player_2": "shared"}
    shared = policy.policies["shared"]
    assert shared.trajectory.container.n_lanes == 2 and "push" not in vars(shared.trajectory)
    assert type(loaded.hook[0].env).__name__ == "MaskedVersus"
