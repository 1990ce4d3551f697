"""PlotLearningCurve and the plots of log directories."""

from __future__ import annotations

import json

import numpy as np
import pytest

import stagerl as rl
from stagerl.logging import CSVLogger, Evaluate, PlotLearningCurve, plot_logdirs, plotting
from stagerl.logging.plotting import moving_average, read_curve

PNG = b"\x89PNG"


def test_moving_average_over_up_to_window_values():
    assert moving_average([2.0, 4.0, 6.0, 8.0, 10.0], 3).tolist() == [2.0, 3.0, 4.0, 6.0, 8.0]
    assert moving_average([], 3).tolist() == []


def test_single_env_points_and_png(tmp_path):
    totals = rl.TotalRewardPerEpisode()
    lengths = rl.StepsPerEpisode()
    hook = PlotLearningCurve(tmp_path / "curve.png")
    rl.run(rl.RandomPolicy(rng=0), rl.GymEnv("CartPole-v1", seed=0),
           rl.StopAfterNEpisodes(6, progress=False), hook + totals + lengths)
    assert hook.returns == totals.rewards
    assert hook.steps == np.cumsum(lengths.steps).tolist()
    assert (tmp_path / "curve.png").read_bytes()[:4] == PNG


def test_vector_env_points_leave_out_the_episodes_the_stop_cut(tmp_path):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    csv_hook, hook = CSVLogger(tmp_path), PlotLearningCurve(tmp_path / "curve.png")
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(300, progress=False),
           csv_hook + hook)
    run = read_curve(tmp_path)
    assert hook.steps == run.steps.tolist() and hook.returns == run.returns.tolist()
    assert len(hook.steps) < csv_hook.episodes  # the cut ones are in the CSV only
    assert (tmp_path / "curve.png").read_bytes()[:4] == PNG


def test_evaluations_are_drawn_from_the_reported_scalars(tmp_path):
    evaluate = Evaluate(100, 2, rl.GymEnv("CartPole-v1", seed=1))
    hook = PlotLearningCurve(None)
    rl.run(rl.RandomPolicy(rng=0), rl.GymEnv("CartPole-v1", seed=0),
           rl.StopAfterNSteps(300, progress=False), evaluate + hook)
    assert hook.eval_steps == [100, 200, 300]
    assert hook.eval_returns == evaluate.means
    assert hook.figure().axes[0].get_xlabel() == "env steps"


def test_shown_inline_in_a_notebook_and_only_there(monkeypatch):
    shown = []
    monkeypatch.setattr(plotting, "show_inline", shown.append)
    for in_notebook, show, expected in [(False, None, 0), (True, None, 1), (True, False, 0),
                                        (False, True, 1)]:
        monkeypatch.setattr(plotting, "in_notebook", lambda answer=in_notebook: answer)
        shown.clear()
        rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=PlotLearningCurve(show=show))
        assert len(shown) == expected


def _fake_run(logdir, experiment, seed, returns, config):
    logdir.mkdir()
    (logdir / "config.json").write_text(json.dumps(
        {"experiment": experiment, "seed": seed, "config": config}))
    lines = ["env_step,episode,sub_env,return,length,terminated,truncated,wall_time"]
    lines += [f"{10 * (i + 1)},{i + 1},0,{r},10,1,0,0.0" for i, r in enumerate(returns)]
    (logdir / "episodes.csv").write_text("\n".join(lines) + "\n")
    (logdir / "updates.csv").write_text("env_step,name,value,wall_time\n"
                                        f"20,eval/return_mean,{returns[1]},0.0\n")


def test_plot_logdirs_groups_seeds_and_labels_what_differs(tmp_path, monkeypatch):
    for name, seed, lr in [("a", 0, 0.1), ("b", 1, 0.1), ("c", 0, 0.5)]:
        _fake_run(tmp_path / name, "demo", seed, [1.0, 2.0, 3.0 + seed], {"lr": lr, "steps": 30})
    drawn = []
    original = plotting.learning_curve_figure
    monkeypatch.setattr(plotting, "learning_curve_figure",
                        lambda curves, window: drawn.append(curves) or original(curves, window))
    path = plot_logdirs([tmp_path / "a", tmp_path / "b", tmp_path / "c"], tmp_path / "all.png")
    assert path.read_bytes()[:4] == PNG
    (curves,) = drawn
    assert [(c.label, len(c.runs), len(c.evals)) for c in curves] == [
        ("demo lr=0.1", 2, 2), ("demo lr=0.5", 1, 1)]
    assert curves[0].runs[1][1].tolist() == [1.0, 2.0, 4.0]


def test_plot_logdirs_refuses_what_is_not_a_run(tmp_path):
    with pytest.raises(ValueError, match="not a stagerl log directory"):
        plot_logdirs([tmp_path], tmp_path / "x.png")
    _fake_run(tmp_path / "empty", "demo", 0, [1.0, 2.0], {})
    (tmp_path / "empty" / "episodes.csv").write_text(
        "env_step,episode,sub_env,return,length,terminated,truncated,wall_time\n")
    with pytest.raises(ValueError, match="no finished episode"):
        plot_logdirs([tmp_path / "empty"], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="path"):
        PlotLearningCurve(3)
    with pytest.raises(ValueError, match="window"):
        PlotLearningCurve(window=0)
