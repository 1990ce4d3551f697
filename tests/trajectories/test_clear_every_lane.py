"""Clearing lane-major rings where every lane holds a state, on whole arrays
(``clear_every_lane``), is the lane-by-lane clear (``clear_held_lanes``): the same geometry,
flags, step numbers and kept states, and the same contents after further pushes, through ring
wrap-around, pushes to some lanes, new episodes and pops, cleared again and again."""

import copy

import numpy as np
import pytest

from trajectories import CircularArraySARTSTraces, split_lanes
from trajectories.lanes import ring_edits


def contents(lb):
    return ({name: lb[name].tolist() for name in lb.keys()}, lb.sampleable_inds.tolist(),
            lb.episodes_lengths.tolist(), lb.step_numbers.tolist(), lb.lane_lengths(),
            lb.n_sampleable, len(lb), lb.running_lanes().tolist(), lb.open_lanes().tolist())


def geometry(lb):
    state = lb.__getstate__()
    return {name: value.tolist() if isinstance(value, np.ndarray) else value
            for name, value in state.items()
            if isinstance(value, (np.ndarray, bool, int, np.integer, np.bool_))}


@pytest.mark.parametrize("capacity, seed", [(8, 0), (15, 1), (40, 2)])
def test_clearing_every_lane_at_once_is_the_lane_by_lane_clear(capacity, seed):
    n, rng = 4, np.random.default_rng(seed)
    whole = split_lanes(CircularArraySARTSTraces(capacity=capacity, state=(np.float32, (2,))), n)
    whole.push(state=rng.random((n, 2)).astype(np.float32))
    by_lane = copy.deepcopy(whole)
    cleared_at_once, wrapped = 0, False
    for t in range(300):
        lanes = rng.random(n) < 0.8 if t % 7 == 3 else None  # now and then some lanes only
        step = {"state": rng.random((n, 2)).astype(np.float32),
                "action": rng.integers(3, size=n), "reward": rng.random(n),
                "terminal": rng.random(n) < 0.1}
        if rng.random() < 0.1:
            # lanes stepping in an episode, or holding a state a clear kept, may start anew
            step["episode_start"] = (rng.random(n) < 0.5) & (whole.running_lanes()
                                                             | whole._kept)
        if lanes is not None:
            step["lanes"] = lanes
        for lb in (whole, by_lane):
            lb.push(**step)
        if t % 23 == 11:
            lane = int(rng.integers(n))
            if whole._m[lane] > 1:
                for lb in (whole, by_lane):
                    lb.pop(lane)
        if t % 6 == 5:  # the end of a rollout
            every = bool((whole._m > 0).all()) and not whole._uniform
            cleared_at_once += every
            if every:
                ring_edits.clear_every_lane(whole)
            else:
                ring_edits.clear_held_lanes(whole)
            ring_edits.clear_held_lanes(by_lane)
            assert geometry(whole) == geometry(by_lane), t
        assert contents(whole) == contents(by_lane), t
        wrapped |= bool(((whole._start + whole._m) > whole._P).any())
    assert cleared_at_once > 20
    assert wrapped
