"""The example scripts run end to end, shrunk to a few seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, timeout: float = 120) -> str:
    env = {**os.environ, "CI": "1"}  # no progress bars in captured output
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_logging_hooks_prints_episode_returns_and_a_summary():
    out = run_example("logging_hooks.py", "1000")
    lines = out.splitlines()
    assert any(line.startswith("episode    25  return") for line in lines)
    assert "-- 1,000 steps" in lines
    assert lines[-1].startswith("done: ") and "1000 steps" in lines[-1]
