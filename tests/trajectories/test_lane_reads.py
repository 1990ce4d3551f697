"""Reads of `PerLaneEpisodes` at global rows: the one-lane path (rows are the lane's own, nothing
located) gives what the general path (rows located lane by lane) gives, on rings that wrapped."""

import numpy as np
import pytest

from trajectories import CircularArraySARTSATraces, CircularArraySARTSTraces
from trajectories.lanes.per_lane import PerLaneEpisodes

READS = ("take", "is_sampleable_at", "step_number_at", "episode_length_at", "rows_ahead_at",
         "rows_behind_at")


def _wrapped_lanes(n_lanes: int, layout=CircularArraySARTSTraces, seed: int = 0):
    """``n_lanes`` lanes of 9 rows each, 40 steps pushed: every ring wrapped several times,
    episodes of uneven lengths, some cut by the ring."""
    rng = np.random.default_rng(seed)
    sartsa = layout is CircularArraySARTSATraces
    masks = {} if sartsa else {"legal_actions_mask": (bool, (3,))}
    lb = PerLaneEpisodes(layout(capacity=9 * n_lanes, state=(np.float32, (2,)), **masks),
                         n_lanes)
    first = {} if sartsa else {"legal_actions_mask": np.ones((n_lanes, 3), bool)}
    lb.push(state=rng.random((n_lanes, 2)).astype(np.float32), **first)
    for _ in range(40):
        ends = rng.random(n_lanes) < 0.2
        mask = {} if sartsa else {"legal_actions_mask": rng.random((n_lanes, 3)) < 0.5}
        lb.push(state=rng.random((n_lanes, 2)).astype(np.float32),
                action=rng.integers(0, 3, n_lanes), reward=rng.random(n_lanes), terminal=ends,
                **mask)
        if sartsa:
            lb.push(next_action=rng.integers(0, 3, n_lanes), lanes=ends)
        if ends.any():
            lb.push(state=rng.random((n_lanes, 2)).astype(np.float32), lanes=ends, **first)
    return lb


def _read(lb, how: str, name: str):
    if how == "take":
        return lambda lane, rows: lane.take(name, rows)
    return lambda lane, rows: getattr(lane, how)(rows)


def _index_arrays(n_rows: int, rng) -> list:
    return [rng.integers(0, n_rows, 64), rng.integers(0, n_rows, (16, 3)),
            np.arange(n_rows), np.zeros(0, dtype=np.int64), np.array([n_rows - 1, 0, 0]),
            rng.integers(0, n_rows, 5).astype(np.int32)]


@pytest.mark.parametrize("layout", [CircularArraySARTSTraces, CircularArraySARTSATraces])
def test_one_lane_reads_are_the_located_reads(layout):
    lb = _wrapped_lanes(1, layout)
    assert len(lb) == lb.capacity == 9  # full: 40 steps went through a ring of 9
    rng = np.random.default_rng(1)
    for idx in _index_arrays(len(lb), rng):
        for how in READS:
            for name in (lb.keys() if how == "take" else ("",)):
                fast = getattr(lb, how)(name, idx) if how == "take" else getattr(lb, how)(idx)
                general = lb._gather_located(np.asarray(idx), _read(lb, how, name))
                assert fast.dtype == general.dtype and fast.shape == general.shape, (how, name)
                assert fast.tobytes() == general.tobytes(), (how, name, idx)
    # the rows are the global columns' rows
    idx = rng.integers(0, len(lb), 50)
    for name in lb.keys():
        assert lb.take(name, idx).tobytes() == lb[name][idx].tobytes(), name


def test_one_lane_refuses_negative_rows_as_the_located_path_does():
    lb = _wrapped_lanes(1)
    for idx in (np.array([3, -1, 2]), np.array([-2])):
        with pytest.raises((ValueError, IndexError)) as fast:
            lb.take("state", idx)
        with pytest.raises(type(fast.value)):
            lb._gather_located(idx, _read(lb, "take", "state"))


@pytest.mark.parametrize("n_lanes", [2, 3])
def test_several_lanes_read_each_row_from_its_own_lane(n_lanes):
    lb = _wrapped_lanes(n_lanes, seed=n_lanes)
    rng = np.random.default_rng(2)
    offsets = np.cumsum([0] + lb.lane_lengths())
    assert lb._offsets().tolist() == offsets.tolist() and lb._offsets().dtype == np.int64
    for idx in _index_arrays(len(lb), rng):
        for name in lb.keys():
            assert lb.take(name, idx).tobytes() == lb[name][idx].tobytes(), name
        flat = np.asarray(idx, dtype=np.int64).ravel()
        lanes = np.searchsorted(offsets, flat, side="right") - 1
        expected = [lb._lanes[lane].rows_ahead_at(np.array([row - offsets[lane]]))[0]
                    for lane, row in zip(lanes.tolist(), flat.tolist(), strict=True)]
        assert lb.rows_ahead_at(idx).ravel().tolist() == expected


def test_an_index_array_changed_in_place_is_located_again():
    lb = _wrapped_lanes(2)
    idx = np.arange(len(lb))
    before = lb.take("state", idx)
    idx[:] = idx[::-1].copy()
    assert lb.take("state", idx).tobytes() == before[::-1].tobytes()


def test_offsets_follow_every_write_and_stay_out_of_the_state():
    import pickle

    lb = _wrapped_lanes(3)

    def check():
        assert lb._offsets().tolist() == np.cumsum([0] + lb.lane_lengths()).tolist()

    check()
    lb.push(state=np.ones((3, 2), np.float32), action=np.zeros(3, np.int64),
            reward=np.zeros(3), terminal=np.array([True, False, False]),
            legal_actions_mask=np.ones((3, 3), bool))
    check()
    lb.pop(1)
    check()
    lb.popleft(2)
    check()
    lb.extend(0, state=np.zeros((3, 2), np.float32), action=np.zeros(2, np.int64),
              reward=np.zeros(2), terminal=np.array([False, True]),
              legal_actions_mask=np.ones((3, 3), bool))
    check()
    state = lb.__getstate__()
    assert "_offsets_at" not in state  # a cache: what a checkpoint holds is unchanged
    copy = pickle.loads(pickle.dumps(lb))  # a buffer rebuilt from that state reads the same
    idx = np.arange(len(lb))
    assert copy.take("state", idx).tobytes() == lb.take("state", idx).tobytes()
    lb.clear()
    check()
    assert len(lb) == 0
