"""`stagerl run --ray-workers`, as users run it: a named experiment acting in Ray rollout workers
writes the same log directory as a run in one process, with the workers' figures."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ENV = {**os.environ, "CI": "1"}


def stagerl(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stagerl", *args], cwd=cwd, env=env or ENV,
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


BROKEN_CART = '''
import gymnasium
from gymnasium.envs.classic_control import CartPoleEnv


class BrokenCart(CartPoleEnv):
    steps = 0

    def step(self, action):
        BrokenCart.steps += 1
        if BrokenCart.steps == 300:
            raise ValueError("the cart broke")
        return super().step(action)


gymnasium.register("BrokenCart-v0", entry_point=BrokenCart, max_episode_steps=500)
'''


def test_a_worker_whose_env_raises_prints_the_envs_frames_and_the_worker(tmp_path):
    # A user's own gymnasium env (module:id) that raises in the workers' processes.
    (tmp_path / "brokencart.py").write_text(BROKEN_CART)
    path = os.pathsep.join(p for p in (str(tmp_path), ENV.get("PYTHONPATH")) if p)
    result = stagerl("run", "dqn-cartpole", "--steps", "2000", "--device", "cpu",
                     "--ray-workers", "2", "--logdir", "out", "--no-tensorboard",
                     "env_id=brokencart:BrokenCart-v0", "learning_starts=100",
                     "train_freq=64", "gradient_steps=1",
                     cwd=tmp_path, env={**ENV, "PYTHONPATH": path})
    assert result.returncode == 1
    stderr = result.stderr
    where = stderr.index('brokencart.py", line 12, in step\n    raise ValueError("the cart '
                         'broke")\nValueError: the cart broke')
    cause = stderr.index("ValueError: the cart broke\n\nThe above exception was the direct cause")
    assert where < cause < stderr.index("in _stream")  # then the learner's frames
    assert re.search(r"\nstagerl\.distributed\.worker\.RolloutWorkerError: rollout worker [01] "
                     r"\(incarnation 0\) failed: ValueError: the cart broke\n$", stderr), stderr
