"""RingLanes writes a push to every lane at one column while the lanes share their geometry
(uniform) and at per-lane positions otherwise: both ways, on the same pushes, store the same
values, flags, step numbers and episode lengths, exactly, through ring wrap-around and episode
ends by termination and truncation (a new episode started by ``episode_start``)."""

import numpy as np
import pytest

from trajectories import CircularArraySARTSTraces, split_lanes


def contents(lb):
    return ({name: lb[name].tolist() for name in lb.keys()}, lb.sampleable_inds.tolist(),
            lb.episodes_lengths.tolist(), lb.step_numbers.tolist(), lb.lane_lengths(),
            lb.n_sampleable, len(lb))


@pytest.mark.parametrize("capacity, seed", [(8, 0), (12, 1), (40, 2), (4, 3)])
def test_uniform_and_per_lane_writes_store_the_same(capacity, seed):
    n, rng = 4, np.random.default_rng(seed)
    uniform, per_lane = (split_lanes(CircularArraySARTSTraces(
        capacity=capacity, state=(np.float32, (2,)), action=(np.int64, ())), n) for _ in "ab")
    per_lane._uniform = False  # the per-lane positions path, from the same (empty) geometry
    both = (uniform, per_lane)
    first = rng.random((n, 2)).astype(np.float32)
    for lb in both:
        lb.push(state=first)
    ended = np.zeros(n, dtype=bool)
    for t in range(80):
        state = rng.random((n, 2)).astype(np.float32)
        step = {"state": state, "action": rng.integers(5, size=n),
                "reward": rng.random(n), "terminal": rng.random(n) < 0.1}
        if ended.any():  # a NEXT_STEP act: the ended lanes only start their next episode
            step["episode_start"] = ended.copy()
        for lb in both:
            lb.push(**step)
        if "episode_start" in step:
            ended[:] = False
        else:  # terminated, or cut by a time limit now and then
            ended = step["terminal"] | (rng.random(n) < 0.05)
        assert contents(uniform) == contents(per_lane), t
    assert uniform._uniform and not per_lane._uniform
    assert uniform.n_sampleable < 80 * n  # the rings wrapped
