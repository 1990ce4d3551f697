"""`stagerl run --resume`, as users run it: a run stopped by Ctrl-C or killed, resumed in a fresh
process, ends as the run that was never stopped; what may not be resumed is refused untouched."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from stagerl.checkpoints import load_state_dict

ENV = {**os.environ, "CI": "1"}
# A short DQN run that learns from step 200 and checkpoints every 500 steps.
DQN = ["dqn-cartpole", "--steps", "3000", "--seed", "2", "--device", "cpu",
       "--checkpoint-every", "500", "learning_starts=200"]
TABULAR = "tabular-q-random-walk"


def stagerl(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stagerl", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def _rows(logdir: Path, name: str) -> list[dict]:
    with open(logdir / name, newline="") as file:
        return [{k: v for k, v in row.items() if k != "wall_time"}
                for row in csv.DictReader(file)]


def _final_weights(logdir: Path) -> dict:
    return load_state_dict(logdir / "checkpoints" / "step-000003000")


def _stopped_midway(tmp_path: Path, name: str, how: signal.Signals) -> Path:
    """Start the DQN run in ``name``, stop it with ``how`` once its checkpoint of step 1000 is
    written (the run is then somewhere past it, often mid-episode)."""
    logdir = tmp_path / name
    process = subprocess.Popen([sys.executable, "-m", "stagerl", "run", *DQN, "--logdir", name],
                               cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (logdir / "checkpoints" / "step-000001000").exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.02)
    process.send_signal(how)
    out, err = process.communicate(timeout=120)
    assert process.returncode == (130 if how == signal.SIGINT else -signal.SIGKILL), err
    assert not (logdir / "summary.json").exists()
    return logdir


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The run that was never stopped."""
    tmp_path = tmp_path_factory.mktemp("whole")
    result = stagerl("run", *DQN, "--logdir", "whole", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path / "whole"


def _assert_same_run(resumed: Path, whole: Path) -> None:
    ours, theirs = (json.loads((d / "summary.json").read_text()) for d in (resumed, whole))
    assert ours["env_steps"] == theirs["env_steps"] == 3000
    assert ours["eval_return_mean"] == theirs["eval_return_mean"]
    assert ours["evaluations"] == theirs["evaluations"]
    assert _rows(resumed, "episodes.csv") == _rows(whole, "episodes.csv")
    assert _rows(resumed, "updates.csv") == _rows(whole, "updates.csv")
    ours, theirs = _final_weights(resumed), _final_weights(whole)
    assert ours.keys() == theirs.keys()
    for key in theirs:
        if isinstance(theirs[key], torch.Tensor):
            assert torch.equal(ours[key], theirs[key]), key


def test_ctrl_c_writes_a_checkpoint_and_resume_ends_as_the_whole_run(tmp_path, whole):
    logdir = _stopped_midway(tmp_path, "cut", signal.SIGINT)
    steps = sorted(p.name for p in (logdir / "checkpoints").glob("step-*"))
    assert steps[-1] > "step-000001000"  # the checkpoint Ctrl-C wrote, where the run was
    result = stagerl("run", "dqn-cartpole", "--logdir", "cut", "--resume", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _assert_same_run(logdir, whole)
    config = json.loads((logdir / "config.json").read_text())
    assert config["resumed"][0]["env_step"] == int(steps[-1][len("step-"):])


def test_a_killed_run_resumes_from_its_last_checkpoint_and_ends_as_the_whole_run(tmp_path,
                                                                                   whole):
    logdir = _stopped_midway(tmp_path, "killed", signal.SIGKILL)
    result = stagerl("run", "dqn-cartpole", "--logdir", "killed", "--resume", "--steps", "3000",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _assert_same_run(logdir, whole)


def test_a_finished_run_continues_to_more_steps(tmp_path):
    assert stagerl("run", TABULAR, "--steps", "300", "--logdir", "out", cwd=tmp_path
                   ).returncode == 0
    result = stagerl("run", TABULAR, "--steps", "500", "--logdir", "out", "--resume",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["env_steps"] == 500 and summary["resumed_at_step"] == 300
    # The line counts what this process trained: the 200 steps since the resume.
    trained = _trained_line(result.stdout)
    assert trained.startswith(f"{TABULAR} seed 0: 200 env steps in ")
    assert trained.endswith(", resumed at env step 300 (500 in all)")
    assert json.loads((tmp_path / "out" / "config.json").read_text())["steps"] == 500
    assert int(_rows(tmp_path / "out", "episodes.csv")[-1]["env_step"]) > 300


def _trained_line(stdout: str) -> str:
    (line,) = [line for line in stdout.splitlines() if " env steps in " in line]
    return line


def _snapshot(directory: Path) -> dict:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(directory.rglob("*"))}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    tmp_path = tmp_path_factory.mktemp("finished")
    result = stagerl("run", TABULAR, "--steps", "300", "--seed", "4", "--logdir", "out", "lr=0.2",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path


@pytest.mark.parametrize("args, message", [
    (["--resume"], "--resume continues the run in a log directory: pass its --logdir DIR"),
    (["--logdir", "out", "--resume", "lr=0.3"],
     "out holds a run with other hyper-parameters: lr (the run: 0.2, given: 0.3); leave them "
     "out to resume it, or start a new run in another --logdir"),
    (["--logdir", "out", "--resume", "--seed", "5"],
     "out holds the run with seed 4, not 5; leave --seed out to resume it"),
    (["--logdir", "out", "--resume", "--steps", "200"],
     "the run in out is at env step 300, beyond --steps 200; resume with --steps of at least "
     "300"),
    (["--logdir", "out", "--resume", "--overwrite"],
     "resume continues the run in the log directory and overwrite replaces it: pass one of "
     "them"),
    (["--logdir", "nothing-here", "--resume"],
     "nothing-here holds no run to resume (no config.json); start one with stagerl run "
     f"{TABULAR} --logdir nothing-here"),
])
def test_what_cannot_be_resumed_is_refused_and_nothing_is_touched(finished, args, message):
    before = _snapshot(finished)
    result = stagerl("run", TABULAR, *args, cwd=finished)
    assert result.returncode == 2
    assert result.stderr == f"stagerl run: error: {message}\n"
    assert _snapshot(finished) == before


def test_a_checkpoint_of_other_hyper_parameters_than_the_log_directorys_is_refused(finished,
                                                                                   tmp_path):
    import shutil

    logdir = tmp_path / "out"
    shutil.copytree(finished / "out", logdir)
    config = json.loads((logdir / "config.json").read_text())
    config["config"]["gamma"] = 0.5
    (logdir / "config.json").write_text(json.dumps(config))
    before = _snapshot(logdir)
    result = stagerl("run", TABULAR, "--logdir", "out", "--resume", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"stagerl run: error: {Path('out') / 'checkpoints' / 'step-000000300'} was saved with "
        f"other hyper-parameters than {Path('out') / 'config.json'} holds: gamma (the "
        "checkpoint: 0.9, config.json: 0.5); nothing was resumed\n")
    assert _snapshot(logdir) == before


def test_a_log_directory_of_another_experiment_is_refused(finished):
    result = stagerl("run", "dqn-cartpole", "--logdir", "out", "--resume", cwd=finished)
    assert result.returncode == 2
    assert result.stderr == (f"stagerl run: error: out holds a run of {TABULAR!r}, not "
                             f"'dqn-cartpole'; resume it with stagerl run {TABULAR} --logdir "
                             "out --resume\n")


@pytest.fixture(scope="module")
def three_checkpoints(tmp_path_factory) -> Path:
    """A finished tabular run with checkpoints at steps 100, 200 and 300."""
    tmp_path = tmp_path_factory.mktemp("three")
    result = stagerl("run", TABULAR, "--steps", "300", "--seed", "4", "--logdir", "out",
                     "--checkpoint-every", "100", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path


def _copy_run(source: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(source / "out", tmp_path / "out")
    return tmp_path / "out" / "checkpoints"


def test_resume_passes_over_a_damaged_newest_checkpoint_with_one_line(three_checkpoints,
                                                                     tmp_path):
    checkpoints = _copy_run(three_checkpoints, tmp_path)
    tensors = checkpoints / "step-000000300" / "tensors.pt"
    tensors.write_bytes(tensors.read_bytes()[:50])
    result = stagerl("run", TABULAR, "--logdir", "out", "--resume", "--steps", "400",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    damaged = Path("out") / "checkpoints" / "step-000000300"
    assert len(result.stderr.splitlines()) == 1, result.stderr
    line = result.stderr.splitlines()[0]
    assert line.startswith(f"stagerl: {damaged} is damaged and was passed over (")
    assert "tensors.pt is truncated: 50 bytes" in line
    assert line.endswith(f"; resuming from {Path('out') / 'checkpoints' / 'step-000000200'}")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["resumed_at_step"] == 200 and summary["env_steps"] == 400
    assert _trained_line(result.stdout).endswith(", resumed at env step 200 (400 in all)")
    # the damaged checkpoint belonged to a run that no longer happened: overtaken, removed
    assert sorted(p.name for p in checkpoints.glob("step-*")) == [
        "step-000000200", "step-000000300", "step-000000400"]


def test_resume_with_no_intact_checkpoint_is_one_line_exit_2_and_touches_nothing(
        three_checkpoints, tmp_path):
    checkpoints = _copy_run(three_checkpoints, tmp_path)
    for step in (100, 200, 300):
        manifest = checkpoints / f"step-{step:09d}" / "manifest.json"
        manifest.write_text(manifest.read_text()[:-40])
    before = _snapshot(tmp_path / "out")
    result = stagerl("run", TABULAR, "--logdir", "out", "--resume", cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"stagerl run: error: cannot resume the run in out: no "
                                    f"intact checkpoint in {Path('out') / 'checkpoints'} (")
    assert result.stderr.rstrip().endswith("nothing was resumed")
    assert _snapshot(tmp_path / "out") == before


def test_a_crafted_checkpoint_on_resume_is_one_line_exit_2(three_checkpoints, tmp_path):
    import hashlib

    checkpoints = _copy_run(three_checkpoints, tmp_path)
    newest = checkpoints / "step-000000300"
    text = (newest / "objects.json").read_text()
    data = text.replace('"_cap":', '"append":{"method":"unlink","self":{"path":"out/config.json"'
                                   '}},"_cap":', 1).encode()
    (newest / "objects.json").write_bytes(data)
    manifest = json.loads((newest / "manifest.json").read_text())
    manifest["files"]["objects.json"] = {"bytes": len(data),
                                         "sha256": hashlib.sha256(data).hexdigest()}
    (newest / "manifest.json").write_text(json.dumps(manifest))
    for step in (100, 200):  # the others damaged too: nothing to fall back on
        (checkpoints / f"step-{step:09d}" / "tensors.pt").write_bytes(b"")
    before = _snapshot(tmp_path / "out")
    result = stagerl("run", TABULAR, "--logdir", "out", "--resume", cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "the method 'unlink' of a PosixPath, which is not a registered component" in \
        result.stderr
    assert _snapshot(tmp_path / "out") == before and (tmp_path / "out" / "config.json").exists()
