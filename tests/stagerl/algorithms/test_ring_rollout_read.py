"""The read of a rollout from lane-major rings whose lanes hold equal numbers of steps
(``read_ring_rollout``) is the general row-by-row read (``read_rollout_rows``), field for field
and bit for bit, on the rollouts of vector runs: rings wrapped around and reused across many
rollouts (each cleared, its lanes' start positions moving), terminal and truncated steps at
every row of the rollout including its last (SAME_STEP autoreset, final observations
bootstrapped), the episode steps carried from rollout to rollout; lanes of unequal lengths fall
back to the general read. Clearing every lane at once is the lane-by-lane clear. Whole runs of
every on-policy algorithm learn the same parameters either way."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
import stagerl.algorithms.on_policy.rollout as rollout_module
from stagerl.algorithms.on_policy import A2CConfig, PPOConfig, make_a2c_agent, make_ppo_agent
from stagerl.algorithms.on_policy.erwr import ERWRConfig, make_erwr_agent
from stagerl.algorithms.on_policy.reps import REPSConfig, make_reps_agent
from stagerl.algorithms.on_policy.rollout import (
    carried_steps,
    episode_steps,
    read_rollout,
    read_rollout_rows,
)
from stagerl.algorithms.on_policy.rollout_rings import grid_episode_steps, read_ring_rollout
from stagerl.algorithms.on_policy.trpo import TRPOConfig, make_trpo_agent
from stagerl.algorithms.on_policy.vpg import VPGConfig, make_vpg_agent
from trajectories import CircularArrayBuffer, CircularArraySARTSTraces, Traces, split_lanes
from trajectories.lanes import RingLanes, ring_edits


def short_episodes(num_envs: int, seed: int, limit: int = 13) -> rl.GymVectorEnv:
    """CartPole cut at ``limit`` steps, SAME_STEP autoreset: rollouts hold terminations and
    truncations, each with its final observation."""
    return rl.GymVectorEnv("CartPole-v1", num_envs=num_envs, seed=seed, max_episode_steps=limit,
                           vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})


def rollouts_of(agent, env, steps: int) -> list:
    """``(container copy, lane_steps before)`` of every rollout ``agent`` learns from."""
    policy, seen = agent.policy, []
    learn = policy.learn

    def keep_then_learn(container):
        first = None if policy.lane_steps is None else policy.lane_steps.copy()
        seen.append((copy.deepcopy(container), first))
        learn(container)

    policy.learn = keep_then_learn
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return seen


def recording_bootstraps(policy) -> list:
    """The ``(rows, steps)`` of every ``bootstrap_values`` call of ``policy`` from now on."""
    calls = []
    bootstrap_values = policy.bootstrap_values

    def recorded(container, rows, steps):
        calls.append((np.array(rows), np.array(steps)))
        return bootstrap_values(container, rows, steps)

    policy.bootstrap_values = recorded
    return calls


def assert_same_rollout(fast: dict, general: dict) -> None:
    assert list(fast) == list(general)
    for name, value in general.items():
        assert fast[name].dtype == value.dtype, name
        assert fast[name].shape == value.shape, name
        assert fast[name].flags.c_contiguous, name
        np.testing.assert_array_equal(fast[name], value, err_msg=name)


@pytest.mark.parametrize("n_steps", [5, 3])
@pytest.mark.parametrize("reads_next_state", [False, True])
def test_the_ring_read_is_the_row_by_row_read_on_a_vector_runs_rollouts(n_steps,
                                                                        reads_next_state):
    env = short_episodes(8, seed=n_steps)
    agent = make_a2c_agent(env, A2CConfig(n_steps=n_steps), seed=n_steps, device="cpu")
    rollouts = rollouts_of(agent, env, 8 * n_steps * 60)
    policy = agent.policy
    policy.reads_next_state = reads_next_state  # next_state read too (as REPS reads it)
    ended_at, truncated_at, wrapped, starts = set(), set(), False, set()
    rng = np.random.default_rng(n_steps)
    for container, first_steps in rollouts:
        assert isinstance(container, RingLanes)
        wrapped |= bool(((container._start + container._m) > container._P).any())
        starts.update(container._start.tolist())
        for first in (first_steps, None, rng.integers(0, 50, 8)):
            calls = recording_bootstraps(policy)
            fast = read_ring_rollout(container, policy, first)
            general = read_rollout_rows(container, policy, first)
            assert fast is not None  # every sub-env stepped at every act: equal lanes
            assert_same_rollout(fast, general)
            assert len(calls) == 2  # the critic asked for the same rows, in the same order
            for a, b in zip(calls[0], calls[1], strict=True):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
            assert_same_rollout(read_rollout(container, policy, first), general)
            del policy.bootstrap_values
        assert fast["valid"].all() and fast["chain_end"][-1].all()
        ended_at.update(np.nonzero(fast["terminal"])[0].tolist())
        truncated_at.update(np.nonzero(fast["truncated"])[0].tolist())
        # every row valid: the last row read directly; padded, the general branch
        padded = {name: np.concatenate([value, np.zeros_like(value[:1])])
                  for name, value in fast.items()}
        for first in (first_steps, None):
            carried = carried_steps(fast, first)
            assert carried.dtype == np.int64
            np.testing.assert_array_equal(carried, carried_steps(padded, first))
    assert wrapped and len(starts) > 3  # rings reused, each rollout elsewhere in them
    assert ended_at == truncated_at == set(range(n_steps))  # at every row, the last included
    assert any(first is not None and first.any() for _, first in rollouts)


def test_lanes_of_unequal_lengths_fall_back_to_the_row_by_row_read():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=7, max_episode_steps=13)  # NEXT_STEP
    agent = make_a2c_agent(env, A2CConfig(n_steps=5), seed=7, device="cpu")
    rollouts = rollouts_of(agent, env, 4 * 5 * 40)
    unequal = 0
    for container, first_steps in rollouts:
        counts = [int(container.is_sampleable_at(np.arange(len(container)))[
            container.lane_of(np.arange(len(container)))[0] == lane].sum()) for lane in range(4)]
        if len(set(counts)) > 1:
            unequal += 1
            assert read_ring_rollout(container, agent.policy, first_steps) is None
        general = read_rollout_rows(container, agent.policy, first_steps)
        assert_same_rollout(read_rollout(container, agent.policy, first_steps), general)
    assert unequal > 3


class NextStateValues:
    """A policy stand-in whose bootstrap value is ten times the next state."""

    def bootstrap_values(self, container, rows, steps):
        return 10 * container.take("next_state", rows)


def test_rings_with_an_empty_lane_or_no_transitions_fall_back():
    traces = CircularArraySARTSTraces(capacity=30) + Traces(
        truncated=CircularArrayBuffer(30, (), np.bool_))
    rings, policy = split_lanes(traces, 3), NextStateValues()
    assert read_ring_rollout(rings, policy) is None  # empty
    rings.push(state=np.zeros(3))
    assert read_ring_rollout(rings, policy) is None  # first states only
    step = {"action": np.zeros(3, dtype=np.int64), "reward": np.ones(3),
            "terminal": np.zeros(3, dtype=bool), "truncated": np.zeros(3, dtype=bool)}
    rings.push(state=np.ones(3), lanes=np.array([True, True, False]), **step)
    assert read_ring_rollout(rings, policy) is None  # lane 2 holds none
    assert_same_rollout(read_rollout(rings, policy), read_rollout_rows(rings, policy))
    rings.push(state=np.full(3, 2.0), lanes=np.array([False, False, True]), **step)
    rollout = read_ring_rollout(rings, policy)
    assert rollout["state"].tolist() == [[0.0, 0.0, 0.0]]
    assert rollout["bootstrap_value"].tolist() == [[10.0, 10.0, 20.0]]
    assert_same_rollout(rollout, read_rollout_rows(rings, policy))


def assert_same_rings(a: RingLanes, b: RingLanes) -> None:
    """Every attribute of two rings equal (arrays to the value and dtype)."""
    state_a, state_b = a.__getstate__(), b.__getstate__()
    assert sorted(state_a) == sorted(state_b)
    for name, value in state_a.items():
        if isinstance(value, np.ndarray):
            assert value.dtype == state_b[name].dtype, name
            np.testing.assert_array_equal(value, state_b[name], err_msg=name)
        elif isinstance(value, (bool, int, np.integer, np.bool_, type(None))):
            assert value == state_b[name] and type(value) is type(state_b[name]), name


def test_clearing_every_lane_at_once_is_the_lane_by_lane_clear():
    env = short_episodes(8, seed=5)
    agent = make_a2c_agent(env, A2CConfig(n_steps=5), seed=5, device="cpu")
    rollouts = rollouts_of(agent, env, 8 * 5 * 30)
    fast_cleared = 0
    for container, _ in rollouts:
        held_every_lane = bool((container._m > 0).all()) and not container._uniform
        fast_cleared += held_every_lane
        whole, by_lane, through_clear = (copy.deepcopy(container) for _ in range(3))
        if held_every_lane:
            ring_edits.clear_every_lane(whole)
        else:
            ring_edits.clear_held_lanes(whole)
        ring_edits.clear_held_lanes(by_lane)
        through_clear.clear(keep_running_episodes=True)
        through_clear._version = by_lane._version  # clear counts the edit, the parts do not
        assert_same_rings(whole, by_lane)
        assert_same_rings(through_clear, by_lane)
    assert fast_cleared > 20


def test_grid_episode_steps_are_the_general_episode_steps():
    rng = np.random.default_rng(0)
    for T, n_lanes in ((1, 1), (5, 8), (17, 3), (2, 6)):
        for p in (0.0, 0.3, 0.9):
            ended = rng.random((T, n_lanes)) < p
            first = rng.integers(0, 100, n_lanes)
            t = np.tile(np.arange(T), n_lanes)
            lane = np.repeat(np.arange(n_lanes), T)
            for given in (first, None):
                general = episode_steps(t, lane, ended.T.reshape(-1), n_lanes, given)
                fast = grid_episode_steps(ended, given)
                assert fast.dtype == general.dtype
                np.testing.assert_array_equal(fast, general.reshape(n_lanes, T).T)


BUILDERS = {
    "a2c": lambda env: make_a2c_agent(env, A2CConfig(n_steps=5), 0, "cpu"),
    "ppo": lambda env: make_ppo_agent(env, PPOConfig(n_steps=16, batch_size=32, n_epochs=2,
                                                     normalize_states=True), 0, "cpu"),
    "vpg": lambda env: make_vpg_agent(env, VPGConfig(episodes_per_update=4), 0, "cpu"),
    "trpo": lambda env: make_trpo_agent(env, TRPOConfig(n_steps=32, batch_size=64,
                                                        n_critic_updates=2), 0, "cpu"),
    "reps": lambda env: make_reps_agent(env, REPSConfig(episodes_per_update=4), 0, "cpu"),
    "erwr": lambda env: make_erwr_agent(env, ERWRConfig(episodes_per_update=4), 0, "cpu"),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_whole_runs_learn_the_same_parameters_with_the_ring_read(name, monkeypatch):
    def run(agent_env):
        agent, env = agent_env
        rl.run(agent, env, rl.StopAfterNSteps(4 * 160, progress=False))
        return agent

    def fresh():
        env = short_episodes(4, seed=11, limit=23)
        return BUILDERS[name](env), env

    read_by_rings = []

    def counted(*args):
        rollout = read_ring_rollout(*args)
        read_by_rings.append(rollout is not None)
        return rollout

    cleared_at_once = []

    def clear_every_lane(rings):
        cleared_at_once.append(True)
        clear_every_lane.__wrapped__(rings)

    clear_every_lane.__wrapped__ = ring_edits.clear_every_lane
    with monkeypatch.context() as patch:
        patch.setattr(rollout_module, "read_ring_rollout", counted)
        patch.setattr(ring_edits, "clear_every_lane", clear_every_lane)
        fast = run(fresh())
    assert read_by_rings and all(read_by_rings) and cleared_at_once
    with monkeypatch.context() as patch:  # every rollout read row by row, cleared by lane
        patch.setattr(rollout_module, "read_ring_rollout", lambda *args: None)
        patch.setattr(ring_edits, "clear_every_lane", ring_edits.clear_held_lanes)
        general = run(fresh())
    assert fast.policy.n_updates == general.policy.n_updates > 1
    assert fast.policy.env_steps == general.policy.env_steps
    np.testing.assert_array_equal(fast.policy.lane_steps, general.policy.lane_steps)
    for a, b in zip(fast.policy.model.parameters(), general.policy.model.parameters(),
                    strict=True):
        assert torch.equal(a, b)

