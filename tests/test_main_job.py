"""The README's main job, `make run` (`stagerl run dqn-cartpole`, here through Python in a
temporary log directory; tests/test_docs_commands.py checks the Makefile's recipe), learns."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


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
