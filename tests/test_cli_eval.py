"""`stagerl eval`, as users run it: a run's checkpoint evaluated in a fresh process repeats the
run's final evaluation, films an episode, and refuses what it cannot evaluate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {**os.environ, "CI": "1"}
NAME = "tabular-q-random-walk"


def stagerl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stagerl", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    tmp_path = tmp_path_factory.mktemp("eval")
    result = stagerl("run", "dqn-cartpole", "--steps", "1500", "--seed", "3", "--device", "cpu",
                     "--logdir", "out", "learning_starts=200", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path


def test_eval_of_a_finished_run_repeats_its_final_evaluation(finished):
    summary = json.loads((finished / "out" / "summary.json").read_text())
    result = stagerl("eval", "out", cwd=finished)
    assert result.returncode == 0, result.stderr
    checkpoint = Path("out") / "checkpoints" / "step-000001500"
    assert result.stdout == (
        f"dqn-cartpole at env step 1,500 ({checkpoint}): return "
        f"{summary['eval_return_mean']:.4g} ± {summary['eval_return_std']:.3g} over 20 "
        "deterministic episodes (seed 10003)\n")


def test_eval_films_the_first_episode(finished):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")  # the video extra, in dev
    result = stagerl("eval", "out/checkpoints/best", "--episodes", "1", "--video", "first.mp4",
                     cwd=finished)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no complaint from the renderer's sound system
    assert result.stdout.splitlines()[-1] == "video: first.mp4"
    returned = float(result.stdout.split("return ")[1].split(" ")[0])
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(finished / "first.mp4"))
    assert frames == returned + 1  # CartPole pays 1 a step: the reset's frame and one a step


@pytest.mark.parametrize("args, message", [
    (["nowhere"], "no checkpoint to evaluate at nowhere (nowhere does not exist)"),
    (["out", "--episodes", "0"], "episodes"),
    (["out", "--video", "clip.avi"], ".avi"),
    (["out", "--video", "missing/clip.gif"], "missing"),
])
def test_what_cannot_be_evaluated_is_one_line_and_nothing_written(finished, args, message):
    before = sorted(finished.rglob("*"))
    result = stagerl("eval", *args, cwd=finished)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("stagerl eval: error: ") and message in result.stderr
    assert sorted(finished.rglob("*")) == before
