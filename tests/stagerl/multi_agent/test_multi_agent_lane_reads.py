"""Whole game runs read their lanes' rows by the one-lane path and the cached lane offsets; the
same runs with every read located lane by lane and the offsets summed afresh at every read give
the same networks, explorer state and stored rows, bit for bit (rings wrapped)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
from stagerl import experiments
from trajectories.lanes.per_lane import PerLaneEpisodes


def _general_reads(monkeypatch) -> list:
    """Route every PerLaneEpisodes read through the located path, offsets never cached; the
    list returned counts those reads."""
    reads = []

    def gather(self, idx, read):
        reads.append(1)
        return self._gather_located(np.asarray(idx), read)

    def offsets(self):
        return np.cumsum([0] + [len(lane) for lane in self._lanes])

    monkeypatch.setattr(PerLaneEpisodes, "_gather", gather)
    monkeypatch.setattr(PerLaneEpisodes, "_offsets", offsets)
    return reads


def _run(name: str, **overrides) -> tuple:
    e = experiments.get_experiment(name)
    config = dataclasses.replace(e.config(), **overrides)
    env = e.make_env(config, 0)
    policy = e.make_agent(config, env, 0, torch.device("cpu"))
    rl.run(policy, env, rl.StopAfterNSteps(config.steps, progress=False))
    learners = [m for m in policy.policies.values() if isinstance(m, rl.Agent)]
    stored = []
    for agent in learners:
        container = agent.trajectory.container
        assert isinstance(container, PerLaneEpisodes)
        assert len(container) == container.capacity  # every lane's ring wrapped
        stored.append({k: container[k].tobytes() for k in agent.trajectory.keys()})
    return policy.state_dict(), stored


def _same(a, b, where="") -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            _same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), where
    else:
        assert a == b, where


@pytest.mark.parametrize("name", ["dqn-tictactoe", "dqn-tictactoe-selfplay"])
def test_game_runs_read_lanes_the_same_by_the_fast_and_the_general_path(name, monkeypatch):
    settings = {"steps": 1500, "learning_starts": 200, "buffer_size": 300,
                "target_update_interval": 100, "exploration_fraction": 0.2}
    fast = _run(name, **settings)
    reads = _general_reads(monkeypatch)
    general = _run(name, **settings)
    assert len(reads) > 500  # the second run did read by the general path
    _same(fast, general)
