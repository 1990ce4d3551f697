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


def _one_env_steps():
    """One env's pushes of a game's player: Python and numpy scalars, arrays of the traces'
    dtypes and of others (int64 into int8 frames, a list), a SARTS layout with a mask."""
    yield {"state": np.array([1, -2], dtype=np.int8), "legal_actions_mask": [True, False, True]}
    for k in range(1, 13):
        mask = np.array([k % 2 == 0, True, k % 3 == 0])
        state = np.array([k, -k], dtype=np.int8) if k % 2 else np.array([k, -k])  # int64
        action = k % 3 if k % 4 else np.int64(k % 3)
        reward = float(k) / 4 if k % 3 else np.float32(-k)
        terminal = k % 5 == 0 if k % 2 else np.bool_(k % 5 == 0)
        yield {"state": state, "legal_actions_mask": mask, "action": action, "reward": reward,
               "terminal": terminal}
        if k % 5 == 0:
            yield {"state": np.array([100 + k, 0], dtype=np.int8),
                   "legal_actions_mask": np.ones(3, dtype=bool)}


def _layouts():
    yield CircularArraySARTSTraces(capacity=8, state=(np.int8, (2,)),
                                   legal_actions_mask=(bool, (3,)))  # lanes of EpisodesBuffers
    yield CircularArraySARTSTraces(capacity=8, state=(np.int8, (2,)))  # lane-major rings


@pytest.mark.parametrize("layout", [0, 1], ids=["per_lane", "rings"])
def test_one_envs_values_in_a_lane_are_stored_as_the_same_values_given_to_every_lane(layout):
    traces = [list(_layouts())[layout] for _ in range(2)]
    into_lane, every_lane = (_laned(traces[0].empty_copy(), 3), _laned(traces[1], 3))
    assert type(into_lane.container).__name__ == ("PerLaneEpisodes", "RingLanes")[layout]
    for lane in (2, 0):  # each lane wraps its ring of 3 rows
        into_lane.use_lane(lane)
        for step in _one_env_steps():
            if layout == 1:
                step.pop("legal_actions_mask")
            into_lane.push(**step)
            laned = {k: np.broadcast_to(v, (3, *np.shape(v))) for k, v in step.items()}
            mask = np.arange(3) == lane
            every_lane.push(**laned, lanes=mask, **({} if "action" in step else {"restart": True}))
    assert into_lane.container.lane_lengths() == every_lane.container.lane_lengths() == [3, 0, 3]
    for name in into_lane.keys():
        got, expected = into_lane[name], every_lane[name]
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist(), name
    for meta in ("step_numbers", "sampleable_inds", "episodes_lengths"):
        assert np.asarray(getattr(into_lane.container, meta)).tolist() == \
            np.asarray(getattr(every_lane.container, meta)).tolist()
    assert into_lane.controller.n_inserted == every_lane.controller.n_inserted == 24


@pytest.mark.parametrize("bad, error", [
    ({"action": 1.5}, "not a whole number"), ({"reward": 2**70}, "not numeric"),
    ({"state": np.array([300, 0])}, "out of range"), ({"terminal": 2}, "only 0, 1"),
    ({"action": 2**70}, "not numeric"), ({"action": -2**63 - 1}, "not numeric")])
def test_a_value_one_lane_cannot_store_exactly_is_refused_as_a_laned_push_refuses_it(bad, error):
    t = _laned(CircularArraySARTSTraces(capacity=8, state=(np.int8, (2,))), 2)
    t.use_lane(1)
    t.push(state=np.zeros(2, dtype=np.int8))
    _step(t, np.ones(2, dtype=np.int8))
    step = {"state": np.full(2, 2, dtype=np.int8), "action": 0, "reward": 0.0,
            "terminal": False, **bad}
    with pytest.raises((TypeError, ValueError), match=error):
        t.push(**step)
    assert t["state"].tolist() == [[0, 0]] and t.controller.n_inserted == 1  # nothing written


def test_one_envs_values_become_arrays_of_their_traces_dtypes_where_stored_exactly():
    from trajectories._push_helpers import lane_axis_values

    t = _laned(CircularArraySARTSTraces(capacity=8, state=(np.int8, (2,))), 2)
    specs: dict = {}
    row = lane_axis_values(t.container, specs, {
        "state": np.array([1, 2], dtype=np.int8), "action": 2, "reward": 0.5,
        "terminal": True, "truncated": True})
    assert {k: (v.dtype, v.shape) for k, v in row.items()} == {
        "state": (np.int8, (2, 2)), "action": (np.int64, (2,)), "reward": (np.float32, (2,)),
        "terminal": (np.bool_, (2,)), "truncated": (np.bool_, (2,))}
    assert row["state"].tolist() == [[1, 2], [1, 2]] and row["reward"].tolist() == [0.5, 0.5]
    assert row["state"].flags.writeable and not row["truncated"].flags.writeable  # a view
    assert len(specs) == 1  # one spec per set of names, kept by the caller
