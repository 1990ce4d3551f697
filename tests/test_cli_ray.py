"""`stagerl run --ray-workers`, as users run it: a named experiment acting in Ray rollout workers
writes the same log directory as a run in one process, with the workers' figures."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ENV = {**os.environ, "CI": "1"}


def stagerl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stagerl", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=300)


def test_a_run_on_two_ray_workers_writes_its_log_directory(tmp_path):
    result = stagerl("run", "ppo-cartpole", "--steps", "2048", "--device", "cpu",
                     "--ray-workers", "2", "--logdir", "out", "--no-tensorboard",
                     "num_envs=2", "n_steps=32", "batch_size=64", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    logdir = tmp_path / "out"
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["env_steps"] == 2048 and summary["eval_episodes"] == 20
    assert summary["workers"]["workers"] == 2
    assert json.loads((logdir / "config.json").read_text())["ray_workers"] == 2
    with open(logdir / "episodes.csv", newline="") as file:
        lengths = [int(row["length"]) for row in csv.DictReader(file)]
    assert sum(lengths) == 2048  # every step a worker took is in an episode row
    assert not (logdir / "checkpoints").exists()  # runs on workers are not checkpointed


@pytest.mark.parametrize("args, message", [
    (["--ray-workers", "2", "--ray-address", "127.0.0.1:9"],
     "cannot reach the Ray cluster at address='127.0.0.1:9'"),
    (["--ray-workers", "2", "--resume"],
     "a run on Ray workers is not checkpointed, so it cannot be resumed"),
    (["--ray-address", "127.0.0.1:9"], "pass ray_workers= too (--ray-workers N)"),
])
def test_what_a_ray_run_cannot_do_is_one_line_and_nothing_written(tmp_path, args, message):
    result = stagerl("run", "ppo-cartpole", "--logdir", "out", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
    assert not list(tmp_path.iterdir())
