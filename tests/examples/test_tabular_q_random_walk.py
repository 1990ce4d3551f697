"""Tabular Q-learning example: it really learns (RandomWalk1D quickly; both envs when slow)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example():
    name = "tabular_q_random_walk"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while it executes
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_walk_is_learned_in_a_thousand_steps(seed):
    example = load_example()
    result = example.random_walk(1000, seed=seed)
    assert result.solved, str(result)
    assert result.greedy_return == 1.0
    assert result.episodes > 50


@pytest.mark.parametrize("seed", range(5))  # about half a second each: CI runs them
def test_both_environments_are_solved_with_the_default_budget(seed):
    example = load_example()
    for result in (example.random_walk(example.DEFAULT_STEPS, seed),
                   example.frozen_lake(example.DEFAULT_STEPS, seed)):
        assert result.solved, str(result)


@pytest.mark.slow
def test_main_job_runs_and_reports_both_solved():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "main_job.py")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "CI": "1"},
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("RandomWalk1D:") and lines[0].endswith("-> solved")
    assert lines[1].startswith("FrozenLake-v1") and lines[1].endswith("-> solved")
