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


def _copy(finished: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(finished / "out", tmp_path / "out")
    return tmp_path / "out" / "checkpoints" / "step-000001500"


def _edit_manifest(checkpoint: Path, edit) -> None:
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    edit(manifest)
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


def _one_line_exit_2(result, *words) -> None:
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("stagerl eval: error: ")
    for word in words:
        assert word in result.stderr, result.stderr


def test_an_env_id_in_the_manifest_that_names_a_module_imports_nothing(finished, tmp_path):
    checkpoint = _copy(finished, tmp_path)
    # The manifest has no checksum: anyone can name a module for gymnasium.make to import.
    _edit_manifest(checkpoint, lambda m: m["info"]["config"].update(env_id="somemodule:X-v0"))
    (tmp_path / "somemodule.py").write_text("open('imported', 'w').close()\n")
    before = sorted(tmp_path.rglob("*"))
    result = stagerl("eval", "out", cwd=tmp_path)  # the working directory is on sys.path
    _one_line_exit_2(result, "the env id 'somemodule:X-v0' names a module to import")
    assert not (tmp_path / "imported").exists() and sorted(tmp_path.rglob("*")) == before


def test_a_manifest_env_id_of_another_registered_env_is_refused_by_the_experiment(finished,
                                                                                  tmp_path):
    checkpoint = _copy(finished, tmp_path)
    _edit_manifest(checkpoint, lambda m: m["info"]["config"].update(env_id="NoSuchEnv-v0"))
    _one_line_exit_2(stagerl("eval", "out", cwd=tmp_path),
                     "'NoSuchEnv-v0' is not registered with gymnasium")


def _nested_manifest(checkpoint: Path) -> None:
    text = (checkpoint / "manifest.json").read_text()
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    text = text.replace('"info": {', f'"info": {{"deep": {deep}, ', 1)
    (checkpoint / "manifest.json").write_text(text)


def _crafted_objects(checkpoint: Path) -> None:
    import hashlib

    text = (checkpoint / "objects.json").read_text()
    data = text.replace('"_cap":', '"append":{"method":"write_text","self":{"path":"pwned"}},'
                                   '"_cap":', 1).encode()
    (checkpoint / "objects.json").write_bytes(data)
    _edit_manifest(checkpoint, lambda m: m["files"]["objects.json"].update(
        bytes=len(data), sha256=hashlib.sha256(data).hexdigest()))


@pytest.mark.parametrize("damage, words", [
    (_nested_manifest, ["manifest.json nests too deeply"]),
    (_crafted_objects, ["the method 'write_text' of a PosixPath, which is not a registered"]),
    (lambda ck: (ck / "tensors.pt").write_bytes((ck / "tensors.pt").read_bytes()[:99]),
     ["tensors.pt is truncated"]),
    (lambda ck: _edit_manifest(ck, lambda m: m["info"].update(experiment="os")),
     ["names an experiment this stagerl does not have"]),
])
def test_a_damaged_or_crafted_checkpoint_is_one_line_and_exit_2(finished, tmp_path, damage,
                                                                words):
    damage(_copy(finished, tmp_path))
    before = sorted(tmp_path.rglob("*"))
    _one_line_exit_2(stagerl("eval", "out", cwd=tmp_path), *words)
    assert sorted(tmp_path.rglob("*")) == before and not (tmp_path / "pwned").exists()
