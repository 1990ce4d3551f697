"""The multi-agent named experiments: a short run of each learns clearly beyond its opponent's
baseline (the full learning runs: ``benchmarks/multi_agent_learning.py``), and the command line
runs, evaluates and plots them with a column and a TensorBoard tag per player."""

from __future__ import annotations

import csv
import json
import statistics

import pytest

import stagerl as rl
from stagerl.cli import main
from stagerl.experiments import configure, get_experiment, train
from stagerl.experiments.checkpoint_evaluation import evaluate_checkpoint
from stagerl.multi_agent import Versus


def test_dqn_tictactoe_wins_against_masked_random_after_a_short_run():
    # Masked random scores about -0.3 as the second player; the full run reaches +0.8.
    summary = train("dqn-tictactoe", steps=6_000, seed=0, progress=False)
    assert summary["eval_return_mean"] >= 0.3 and summary["eval_episodes"] == 20


def test_dqn_tictactoe_selfplay_wins_against_masked_random_in_both_seats_after_a_short_run():
    summary = train("dqn-tictactoe-selfplay", steps=6_000, seed=0, progress=False)
    assert summary["eval_return_mean"] >= 0.3  # random against random: 0 over both seats


def test_ppo_rps_beats_the_heuristic_opponents_after_a_short_run():
    # Random play scores 0 per match; the best play that sees the last move, about 7.
    summary = train("ppo-rps", steps=15_000, seed=0, progress=False)
    assert summary["eval_return_mean"] >= 4.0


def test_a_self_play_evaluation_is_the_mean_over_both_seats():
    config = configure("dqn-tictactoe-selfplay", steps=50)
    experiment = get_experiment("dqn-tictactoe-selfplay")
    evaluation = experiment.make_eval_env(config, 7)
    assert evaluation.seats == ("player_1", "player_2")
    game = experiment.make_env(config, 0)
    policy = experiment.make_agent(config, game, 0, "cpu")
    rl.evaluate(policy, evaluation, 20)
    assert evaluation.episodes == 20  # ten games in each seat, alternating


@pytest.mark.parametrize("name", ["dqn-tictactoe", "ppo-rps"])
def test_run_eval_and_plot_a_game_from_the_command_line(name, tmp_path, capsys):
    logdir = tmp_path / "run"
    assert main(["run", name, "--steps", "400", "--logdir", str(logdir)]) == 0
    out = capsys.readouterr().out
    summary = json.loads((logdir / "summary.json").read_text())
    assert f"evaluation: return {summary['eval_return_mean']:.4g}" in out
    with (logdir / "episodes.csv").open() as file:
        rows = list(csv.DictReader(file))
    players = get_experiment(name).make_env(configure(name, steps=400), 0).players
    learner = get_experiment(name).make_eval_env(configure(name, steps=400), 0).seats[0]
    assert rows and all(f"return_{p}" in rows[0] for p in players)
    for row in rows:  # the game scores its learner: `return` is the learner's
        assert float(row["return"]) == float(row[f"return_{learner}"])
        assert sum(float(row[f"return_{p}"]) for p in players) == 0.0  # zero-sum
    assert main(["eval", str(logdir)]) == 0
    assert f"return {summary['eval_return_mean']:.4g}" in capsys.readouterr().out
    result = evaluate_checkpoint(logdir)  # the run's final evaluation again, exactly
    assert result["return_mean"] == summary["eval_return_mean"]
    assert main(["plot", str(logdir), "--output", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert isinstance(get_experiment(name).make_eval_env(configure(name), 0), Versus)


def test_a_games_tensorboard_logs_have_a_tag_per_player(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train("dqn-tictactoe", steps=300, seed=0, progress=False, logdir=tmp_path / "run",
          tensorboard=True)
    events = EventAccumulator(str(tmp_path / "run"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"charts/episodic_return", "charts/episodic_return/player_1",
            "charts/episodic_return/player_2"} <= set(tags)
    learner = [e.value for e in events.Scalars("charts/episodic_return/player_2")]
    scored = [e.value for e in events.Scalars("charts/episodic_return")]
    other = [e.value for e in events.Scalars("charts/episodic_return/player_1")]
    assert learner == scored and [-v for v in other] == learner
    assert statistics.fmean(learner) > -1.0
