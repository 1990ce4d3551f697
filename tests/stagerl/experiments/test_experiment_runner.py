"""stagerl.experiments.train with a log directory: every file, the checks before anything is
written, and training unchanged by the logging hooks."""

from __future__ import annotations

import csv
import json

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import stagerl as rl
from stagerl.experiments import configure, names, runner, train
from stagerl.experiments.runner import prepare

NAME = "tabular-q-random-walk"
SUMMARY_KEYS = {"experiment", "seed", "device", "env_steps", "wall_seconds", "steps_per_second",
                "eval_return_mean", "eval_return_std", "eval_episodes", "evaluations", "config",
                "versions", "total_seconds", "logdir"}


@pytest.fixture
def evaluate_often(monkeypatch):
    monkeypatch.setattr(runner, "EVAL_EVERY_N_STEPS", 400)


def test_a_run_writes_every_file_of_its_log_directory(tmp_path, evaluate_often):
    logdir = tmp_path / "run"
    summary = train(NAME, steps=1000, seed=2, device="cpu", logdir=logdir, progress=False,
                  lr=0.3)
    files = sorted(p.name for p in logdir.iterdir())
    assert files[:3] == ["checkpoints", "config.json", "episodes.csv"]
    assert files[3].startswith("events.out.tfevents.")
    assert files[4:] == ["learning_curve.png", "summary.json", "updates.csv"]
    assert sorted(p.name for p in (logdir / "checkpoints").iterdir()) == ["best",
                                                                          "step-000001000"]

    config = json.loads((logdir / "config.json").read_text())
    assert {k: config[k] for k in ("experiment", "seed", "device", "steps")} == {
        "experiment": NAME, "seed": 2, "device": "cpu", "steps": 1000}
    assert config["config"]["lr"] == 0.3 and config["config"]["steps"] == 1000

    assert set(summary) == SUMMARY_KEYS
    assert json.loads((logdir / "summary.json").read_text()) == summary
    assert summary["env_steps"] == 1000 and summary["eval_episodes"] == 20
    assert summary["steps_per_second"] == pytest.approx(1000 / summary["wall_seconds"])
    assert summary["versions"]["torch"] == torch.__version__
    assert [e["env_step"] for e in summary["evaluations"]] == [400, 800]

    with open(logdir / "updates.csv", newline="") as file:
        updates = [(row["env_step"], row["name"]) for row in csv.DictReader(file)]
    assert updates == [("400", "eval/return_mean"), ("400", "eval/return_std"),
                       ("800", "eval/return_mean"), ("800", "eval/return_std")]
    events = EventAccumulator(str(logdir))
    events.Reload()
    assert {"charts/episodic_return", "charts/episodic_length", "eval/return_mean"} <= set(
        events.Tags()["scalars"])
    assert (logdir / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_the_logging_hooks_change_nothing_in_training(tmp_path, evaluate_often):
    results = []
    for logdir in (None, tmp_path / "run"):
        totals = rl.TotalRewardPerEpisode()
        summary = train(NAME, steps=1500, logdir=logdir, progress=False, hook=totals)
        results.append((totals.rewards, summary["eval_return_mean"], summary["eval_return_std"]))
    assert results[0] == results[1]


def test_an_existing_log_directory_is_refused_and_left_alone(tmp_path):
    (tmp_path / "episodes.csv").write_text("someone else's run")
    with pytest.raises(ValueError, match="already exists and is not empty"):
        train(NAME, steps=100, logdir=tmp_path, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["episodes.csv"]
    assert (tmp_path / "episodes.csv").read_text() == "someone else's run"


def test_overwrite_replaces_the_run(tmp_path):
    train(NAME, steps=200, logdir=tmp_path, progress=False, seed=0)
    (tmp_path / "notes.txt").write_text("kept")
    summary = train(NAME, steps=300, logdir=tmp_path, progress=False, seed=1, overwrite=True)
    assert summary["env_steps"] == 300
    assert json.loads((tmp_path / "config.json").read_text())["seed"] == 1
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 1
    assert (tmp_path / "notes.txt").read_text() == "kept"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"name": "tabular-q-randomwalk"}, ValueError, "did you mean tabular-q-random-walk"),
    ({"overrides": {"alpha": 0.1}}, ValueError, "no hyper-parameter 'alpha'"),
    ({"overrides": {"lr": "fast"}}, TypeError, "lr expects float"),
    ({"steps": 0}, ValueError, "steps must be a positive int"),
    ({"seed": -1}, ValueError, "seed must be a non-negative int"),
    ({"device": "tpu"}, ValueError, "device must be"),
])
def test_bad_requests_fail_before_anything_is_written(tmp_path, kwargs, error, match):
    request = {"name": NAME, "logdir": tmp_path / "run", **kwargs}
    with pytest.raises(error, match=match):
        prepare(request.pop("name"), **request)
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no CUDA device"):
        prepare(NAME, device="cuda", logdir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_tensorboard_asked_for_but_missing_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "tensorboard_available", lambda: False)
    with pytest.raises(ValueError, match=r"pip install 'stagerl\[tensorboard\]'"):
        prepare(NAME, logdir=tmp_path / "run", tensorboard=True)
    assert not (tmp_path / "run").exists()


def test_tensorboard_missing_is_a_notice_and_the_rest_is_written(tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.setattr(runner, "tensorboard_available", lambda: False)
    train(NAME, steps=200, logdir=tmp_path, progress=False)
    assert capsys.readouterr().err.splitlines() == [
        "stagerl: no TensorBoard logs: tensorboard is not installed: pip install "
        "'stagerl[tensorboard]'"]
    assert not list(tmp_path.glob("events.out.tfevents.*"))
    assert (tmp_path / "summary.json").exists()


def test_without_a_terminal_progress_is_a_line_every_tenth_of_the_run(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    train(NAME, steps=1000, progress=True)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" | ")[0] for line in lines] == [
        f"env steps {n:,}/1,000" for n in range(100, 1001, 100)] + ["done: env steps 1,000/1,000"]


# ---- torch's threads -------------------------------------------------------------------------


class ThreadsSeen(rl.Hook):
    """Torch's CPU threads at every PostAct of the run."""

    def __init__(self):
        self.seen = set()


@rl.push.dispatch
def _see_threads(hook: ThreadsSeen, stage: rl.PostActStage, policy, env):
    hook.seen.add(torch.get_num_threads())


@pytest.mark.parametrize("name", names())
def test_every_named_experiment_trains_on_its_torch_threads_and_restores_them(name):
    from stagerl.experiments.settings import DEFAULT_TORCH_THREADS

    assert DEFAULT_TORCH_THREADS == 1
    small = {"buffer_size": 64} if hasattr(configure(name), "buffer_size") else {}
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        seen = ThreadsSeen()
        train(name, steps=8, seed=0, device="cpu", progress=False, hook=seen, **small)
        assert seen.seen == {DEFAULT_TORCH_THREADS} and torch.get_num_threads() == 3
        seen = ThreadsSeen()
        train(name, steps=8, seed=0, device="cpu", progress=False, hook=seen, torch_threads=2,
              **small)
        assert seen.seen == {2} and torch.get_num_threads() == 3
        seen = ThreadsSeen()
        train(name, steps=8, seed=0, device="cpu", progress=False, hook=seen, torch_threads=0,
              **small)
        assert seen.seen == {3}  # 0: torch's own setting
    finally:
        torch.set_num_threads(before)
