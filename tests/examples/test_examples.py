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
    assert "-- 1,000 env steps" in lines
    assert lines[-1].startswith("done: ") and "1000 env steps" in lines[-1]


def test_the_same_logging_hooks_work_on_a_vector_env():
    import importlib.util

    spec = importlib.util.spec_from_file_location("logging_hooks", EXAMPLES / "logging_hooks.py")
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # dataclasses look their module up while being made
    spec.loader.exec_module(example)
    hook = example.main(2000, num_envs=4)
    totals, lengths, _, episode_log = hook[0], hook[1], hook[2], hook[3]
    # every sub-env's episodes, one by one: returns are CartPole lengths, not arrays
    assert len(episode_log.returns) == len(totals.rewards) == len(lengths.steps) > 4 * 5
    assert episode_log.returns == totals.rewards == [float(n) for n in lengths.steps]
    assert 1800 < sum(lengths.steps) <= 2000  # reset-only acts (NEXT_STEP) are not steps
