"""``stagerl run <game experiment> --resume``, as users run it: a game run stopped by Ctrl-C in
the middle of a game (moves pending, a rollout half full) and resumed ends as the run that was
never stopped: the same games in episodes.csv (every player's column), the same final
evaluation, the same weights."""

from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest
import torch

from stagerl.checkpoints import load_state_dict, resume
from stagerl.cli import main
from stagerl.multi_agent import RockPaperScissors, TicTacToe

STEPS = 1_200
#: name: (the game class whose acts are counted, the act from which Ctrl-C may arrive, settings)
RUNS = {
    "dqn-tictactoe-selfplay": (TicTacToe, 603, ["learning_starts=200", "buffer_size=500",
                                                "net_arch=16", "n_step=2",
                                                "target_update_interval=100"]),
    "ppo-rps": (RockPaperScissors, 305, ["n_steps=64", "batch_size=32", "n_epochs=2",
                                         "max_cycles=7"]),
}


def _run(name: str, logdir: Path, *extra: str) -> int:
    return main(["run", name, "--steps", str(STEPS), "--seed", "1", "--logdir", str(logdir),
                 "--no-tensorboard", *RUNS[name][2], *extra])


def _stopped_by_ctrl_c(name: str, logdir: Path, monkeypatch) -> int:
    """The run stopped by Ctrl-C pressed during the first act from ``at`` on that leaves the
    game going; returns that act's number (the env step of the checkpoint)."""
    game, at, _ = RUNS[name]
    act, calls, stopped_at = game.act, [], []

    def act_then_ctrl_c(self, action):
        act(self, action)
        calls.append(action)
        if len(calls) >= at and not stopped_at and not (self.is_terminated or self.is_truncated):
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            stopped_at.append(len(calls))
            signal.raise_signal(signal.SIGINT)  # a key press arriving in this act

    monkeypatch.setattr(game, "act", act_then_ctrl_c)
    assert _run(name, logdir) == 130
    monkeypatch.setattr(game, "act", act)
    return stopped_at[0]


def _rows(logdir: Path) -> list[dict]:
    with open(logdir / "episodes.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k != "wall_time"}
                for row in csv.DictReader(file)]


@pytest.mark.parametrize("name", list(RUNS))
def test_a_game_run_stopped_mid_game_by_ctrl_c_resumes_as_the_whole_run(name, tmp_path, capsys,
                                                                       monkeypatch):
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert _run(name, whole) == 0
    at = _stopped_by_ctrl_c(name, stopped, monkeypatch)
    assert not (stopped / "summary.json").exists()
    (checkpoint,) = (stopped / "checkpoints").glob("step-*")
    assert checkpoint.name == f"step-{at:09d}"
    experiment = resume(checkpoint, restore_globals=False)
    game = experiment.env
    assert not (game.is_terminated or game.is_truncated)
    if name == "ppo-rps":  # mid-match, mid-rollout
        learner = experiment.policy.policies["player_0"]
        assert 0 < game.unwrapped.cycle < game.unwrapped.max_cycles
        assert 0 < len(learner.trajectory) < learner.policy.config.n_steps
    else:  # a move waits for its transition
        assert experiment.policy.turns.pending
    capsys.readouterr()

    assert _run(name, stopped, "--resume") == 0
    assert f"resumed at env step {at:,}" in capsys.readouterr().out
    ours, theirs = (json.loads((d / "summary.json").read_text()) for d in (stopped, whole))
    assert ours["env_steps"] == theirs["env_steps"] == STEPS
    assert ours["eval_return_mean"] == theirs["eval_return_mean"]
    assert ours["evaluations"] == theirs["evaluations"]
    rows = _rows(stopped)
    assert rows == _rows(whole) and len(rows) > 10
    players = game.players
    assert all(f"return_{p}" in rows[0] for p in players)
    final = f"step-{STEPS:09d}"
    ours, theirs = (dict(_tensors(load_state_dict(d / "checkpoints" / final)))
                    for d in (stopped, whole))
    assert ours.keys() == theirs.keys() and len(theirs) > 4  # each policy's, by its key
    for key in theirs:
        assert torch.equal(ours[key], theirs[key]), key


def _tensors(state, prefix=""):
    """The tensors of a (nested) state dict, each with its path."""
    if isinstance(state, dict):
        for key, value in state.items():
            yield from _tensors(value, f"{prefix}{key}/")
    elif isinstance(state, (list, tuple)):
        for i, value in enumerate(state):
            yield from _tensors(value, f"{prefix}{i}/")
    elif isinstance(state, torch.Tensor):
        yield prefix.rstrip("/"), state
