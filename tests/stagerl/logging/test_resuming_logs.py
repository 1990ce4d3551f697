"""Logs of a run resumed from a checkpoint equal the logs of the run never interrupted.

The interrupted run goes on past its checkpoint (writing rows and events the resumed run writes
again) before it ends: here it is stopped there (its files complete on disk, the worst case), or
killed with SIGKILL in a process of its own and resumed in a fresh one (``resumed_logs.py``).
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

sys.path.insert(0, str(Path(__file__).parent))
import resumed_logs  # noqa: E402  (the runs, beside this file)

from stagerl.checkpoints import resume  # noqa: E402

SETUPS = ["single", "vector"]


def csv_rows(path: Path) -> list[dict]:
    """The rows of a CSV file without the wall-clock column."""
    with path.open(newline="") as file:
        return [{k: v for k, v in row.items() if k != "wall_time"} for row in csv.DictReader(file)]


def scalars(logdir: Path) -> dict[str, list]:
    """Every TensorBoard scalar as TensorBoard shows it: ``{tag: [(step, value), ...]}``; steps
    alone for ``charts/SPS`` (a speed, wall-clock)."""
    events = EventAccumulator(str(logdir))
    events.Reload()
    return {tag: [s.step if tag == "charts/SPS" else (s.step, s.value)
                  for s in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.fixture(scope="module", params=SETUPS)
def runs(request, tmp_path_factory):
    """The run never interrupted, and the run stopped past its checkpoint then resumed from it,
    in this process: ``(setup, whole logdir, resumed logdir, the two experiments)``."""
    setup, config = request.param, resumed_logs.SETUPS[request.param]
    directory = tmp_path_factory.mktemp(setup)
    whole = resumed_logs.experiment(setup, directory / "whole", console_file=io.StringIO()).run()
    resumed_logs.experiment(setup, directory / "resumed", steps=config["kill_at"],
                            console_file=io.StringIO()).run()
    rows_then = len(csv_rows(directory / "resumed" / "episodes.csv"))
    checkpoint = directory / "resumed" / "checkpoints" / f"step-{config['k']:09d}"
    resumed = resume(checkpoint, steps=config["steps"]).run()
    return setup, directory / "whole", directory / "resumed", whole, resumed, rows_then


def test_csv_files_of_a_resumed_run_equal_the_uninterrupted_runs(runs):
    setup, whole, resumed, _, _, rows_then = runs
    for name in ("episodes.csv", "updates.csv"):
        assert csv_rows(resumed / name) == csv_rows(whole / name)
    # Episodes had ended between the checkpoint and the stop: the file was cut back.
    k = resumed_logs.SETUPS[setup]["k"]
    assert rows_then > sum(int(row["env_step"]) <= k for row in csv_rows(whole / "episodes.csv"))


def test_tensorboard_scalars_of_a_resumed_run_equal_the_uninterrupted_runs(runs):
    _, whole, resumed, _, _, _ = runs
    assert len(list(resumed.glob("events.out.tfevents.*"))) == 2
    expected = scalars(whole)
    assert set(expected) >= {"charts/episodic_return", "charts/SPS", "eval/return_mean"}
    assert scalars(resumed) == expected


def test_learning_curve_and_evaluations_of_a_resumed_run_equal_the_uninterrupted_runs(runs):
    _, whole_dir, resumed_dir, whole, resumed, _ = runs
    assert resumed_logs.records(resumed) == resumed_logs.records(whole)
    assert (resumed_dir / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
    plot = resumed.hook.hooks[3]
    assert len(plot.steps) == len(csv_rows(whole_dir / "episodes.csv")) - sum(
        row["terminated"] == row["truncated"] == "0" for row in csv_rows(whole_dir /
                                                                        "episodes.csv"))


def summary_lines(text: str) -> list[str]:
    return [re.sub(r" \| [\d,]+ steps/s", "", line) for line in text.splitlines()
            if line.startswith(("env steps", "done:"))]


@pytest.mark.parametrize("setup", SETUPS)
def test_logs_of_a_run_killed_after_a_checkpoint_and_resumed_in_a_fresh_process(setup,
                                                                                tmp_path):
    script, config = resumed_logs.__file__, resumed_logs.SETUPS[setup]
    first = subprocess.run([sys.executable, script, "first", str(tmp_path), setup],
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == -9, first.stderr[-2000:]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    # What the killed process wrote after its checkpoint is on disk: episodes and events.
    k = config["k"]
    assert max(int(r["env_step"]) for r in csv_rows(killed / "episodes.csv")) > k
    assert any(step > k for steps in scalars(killed).values() for step in
               (s if isinstance(s, int) else s[0] for s in steps))

    second = subprocess.run([sys.executable, script, "resumed", str(tmp_path), setup],
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-2000:]
    for name in ("episodes.csv", "updates.csv"):
        assert csv_rows(killed / name) == csv_rows(whole / name)
    assert scalars(killed) == scalars(whole)
    assert json.loads((killed / "hooks.json").read_text()) == json.loads(
        (whole / "hooks.json").read_text())
    whole_lines = summary_lines(first.stdout.split("--- killed run ---")[0])
    assert summary_lines(second.stdout) == [
        line for line in whole_lines
        if line.startswith("done:") or int(line.split()[2].split("/")[0].replace(",", "")) > k]
