"""`Trajectory.use_lane`: one env's pushes written into one lane of a laned trajectory, for
producers that take turns (the players of a game played by one agent)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    Trajectory,
    split_lanes,
)


def _laned(traces, n=2):
    return split_lanes(Trajectory(traces, BatchSampler(8, rng=0)), n)


def _step(t, state, action=0, reward=0.0, terminal=False):
    t.push(state=state, action=action, reward=reward, terminal=terminal)


def test_turns_pushed_into_two_lanes_are_each_lanes_own_transitions_exactly():
    t = _laned(CircularArraySARTSTraces(capacity=20))
    for lane, first in ((0, 10), (1, 20)):
        t.use_lane(lane)
        t.push(state=first)
    for turn in range(3):  # the lanes take turns, as two players do
        for lane, base in ((0, 10), (1, 20)):
            t.use_lane(lane)
            _step(t, base + turn + 1, action=lane, reward=float(base + turn))
    assert t.container.lane_lengths() == [3, 3]
    assert t["state"].tolist() == [10, 11, 12, 20, 21, 22]
    assert t["next_state"].tolist() == [11, 12, 13, 21, 22, 23]
    assert t["action"].tolist() == [0, 0, 0, 1, 1, 1]
    assert t["reward"].tolist() == [10.0, 11.0, 12.0, 20.0, 21.0, 22.0]
    assert t.controller.n_inserted == 6  # one insert per step, whichever lane


@pytest.mark.parametrize("traces", [CircularArraySARTSTraces, CircularArraySARTSATraces])
def test_a_first_state_left_alone_is_never_sampled_when_the_lane_starts_again(traces):
    t = _laned(traces(capacity=20))
    t.use_lane(1)
    t.push(state=5)  # a first state, never stepped (a run stopped before the next turn)
    t.push(state=7)  # the next episode of lane 1
    _step(t, 8)
    _step(t, 9)  # (SARTSA: completes the row before)
    rows = t.container.sampleable_indices()
    assert t.container.take("state", rows).tolist()[0] == 7
    assert 5 not in t.container.take("state", rows).tolist()
    assert t.controller.n_inserted == 2


def test_a_completion_of_a_lane_without_a_step_is_dropped_and_of_a_running_lane_written():
    t = _laned(CircularArraySARTSATraces(capacity=20))
    t.use_lane(0)
    t.push(state=1)
    t.push(next_action=3)  # nothing to complete: dropped, no error
    _step(t, 2, action=4)
    t.push(next_action=5)
    assert t["action"].tolist() == [4] and t["next_action"].tolist() == [5]
    assert t.container.lane_lengths() == [1, 0]


def test_use_lane_none_goes_back_to_one_value_per_lane():
    t = _laned(CircularArraySARTSTraces(capacity=20))
    t.use_lane(0)
    t.push(state=1)
    t.use_lane(None)
    assert t.lane is None
    t.push(state=np.array([1, 2]), action=np.array([0, 0]), reward=np.zeros(2),
           terminal=np.array([False, False]), episode_start=np.array([False, True]))
    assert t["state"].tolist() == [1] and t.container.lane_lengths() == [1, 0]


def test_use_lane_refuses_a_trajectory_without_lanes_and_a_lane_out_of_range():
    single = Trajectory(CircularArraySARTSTraces(capacity=8))
    with pytest.raises(TypeError, match="needs a trajectory with lanes"):
        single.use_lane(0)
    laned = _laned(CircularArraySARTSTraces(capacity=8))
    with pytest.raises(IndexError, match="out of range for 2 lanes"):
        laned.use_lane(2)
    with pytest.raises(TypeError, match="lane must be an int"):
        laned.use_lane(True)
    assert laned.lane is None


def test_a_push_of_the_wrong_shape_into_a_lane_raises_before_writing_anything():
    t = _laned(CircularArraySARTSTraces(capacity=8, state=(np.float32, (2,))))
    t.use_lane(1)
    t.push(state=np.zeros(2))
    with pytest.raises(ValueError):
        _step(t, np.zeros(3))
    assert len(t) == 0 and t.container.lane_lengths() == [0, 0]


@pytest.mark.parametrize("copier", [pickle.loads.__name__, "deepcopy"])
def test_a_copy_keeps_its_lane_and_continues_as_the_original(copier):
    def make_copy(x):
        return pickle.loads(pickle.dumps(x)) if copier == "loads" else copy.deepcopy(x)

    t = _laned(CircularArraySARTSTraces(capacity=8))
    t.use_lane(1)
    t.push(state=1)
    twin = make_copy(t)
    assert twin.lane == 1
    for x in (t, twin):
        _step(x, 2)
    assert twin["state"].tolist() == t["state"].tolist() == [1]
    assert "push" not in vars(twin) and "push" not in vars(t)  # no instance patching


def test_an_unlaned_single_env_push_is_unchanged_and_the_first_push_still_finds_lanes():
    single = Trajectory(CircularArraySARTSTraces(capacity=8))
    single.push(state=np.array([1, 2]))  # two sub-envs: lanes found at the first push
    assert single.n_lanes == 2 and single.lane is None
