"""Tabular Q-learning example: it really learns (RandomWalk1D quickly; both envs when slow)."""

from __future__ import annotations

import importlib.util
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
