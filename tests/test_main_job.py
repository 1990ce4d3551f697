"""The README's main job: `make run` is `stagerl run dqn-cartpole` (here through Python, in a
temporary log directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_make_run_runs_the_dqn_cartpole_experiment():
    makefile = (ROOT / "Makefile").read_text()
    assert "stagerl run dqn-cartpole" in makefile.split("\nrun:")[1].split("\n\n")[0]


@pytest.mark.slow
def test_the_main_job_learns_cartpole(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "stagerl", "run", "dqn-cartpole", "--logdir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "1"}, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["env_steps"] == 50_000 and summary["eval_episodes"] == 20
    assert summary["eval_return_mean"] >= 475, summary
    assert "evaluation: return" in result.stdout
