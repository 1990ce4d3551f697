"""Nested frames (Dict and Tuple observations): one ring per leaf, read back with the same
nesting, through traces, episodes, lanes (with ring wrap), samplers and bulk inserts; a bad leaf
writes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    ElasticArraySARTSTraces,
    EpisodesSampler,
    NStepBatchSampler,
    Trajectory,
    split_lanes,
)
from trajectories.nested import NestedBuffer

SPEC = {"frame": (np.uint8, (3, 2)), "position": (np.float32, (2,))}


def frame(lane, episode, t):
    """A nested state that tells where it comes from."""
    f = np.zeros((3, 2), np.uint8)
    f[0] = lane, episode
    f[1, 0] = t
    return {"frame": f, "position": np.array([t, 100 * lane + episode], np.float32)}


def stacked(states):
    return {k: np.stack([s[k] for s in states]) for k in states[0]}


def origin(state):
    """(lane, episode, t) of every state of a nested batch."""
    f = state["frame"]
    return np.stack([f[..., 0, 0], f[..., 0, 1], f[..., 1, 0]], axis=-1)


def test_each_leaf_has_its_own_ring_dtype_and_shape():
    traces = CircularArraySARTSTraces(capacity=4, state=SPEC)
    buffer = traces._where["state"][1]
    assert isinstance(buffer, NestedBuffer)
    assert buffer.spec == {"frame": (np.dtype(np.uint8), (3, 2)),
                           "position": (np.dtype(np.float32), (2,))}
    assert [c.capacity for c in buffer.children] == [5, 5]
    traces.push(state=frame(0, 0, 0))
    for t in range(1, 7):  # past the ring's end
        traces.push(state=frame(0, 0, t), action=t, reward=1.0, terminal=False)
    column = traces["state"]
    assert column["frame"].dtype == np.uint8 and column["position"].dtype == np.float32
    assert origin(column)[:, 2].tolist() == [2, 3, 4, 5]
    assert origin(traces["next_state"])[:, 2].tolist() == [3, 4, 5, 6]
    row = traces[0]
    assert origin(row["state"]).tolist() == [0, 0, 2] and int(row["action"]) == 3


def test_a_bad_leaf_writes_nothing_and_names_the_leaf():
    traces = CircularArraySARTSTraces(capacity=4, state=SPEC)
    traces.push(state=frame(0, 0, 0))
    bad = frame(0, 0, 1)
    bad["position"] = np.array([np.nan, 1.0, 2.0])  # the wrong shape
    with pytest.raises(ValueError, match="state.position"):
        traces.push(state=bad, action=1, reward=0.0, terminal=False)
    with pytest.raises(ValueError, match=r"takes a dict with the keys \['frame', 'position'\]"):
        traces.push(state={"frame": bad["frame"]}, action=1, reward=0.0, terminal=False)
    assert len(traces) == 0 and len(traces._where["state"][1]) == 1
    assert origin(traces._where["state"][1].all_frames()).tolist() == [[0, 0, 0]]


def test_env_spaces_give_nested_specs():
    gymnasium = pytest.importorskip("gymnasium")
    spaces = gymnasium.spaces

    class Env:
        state_space = spaces.Dict(frame=spaces.Box(0, 255, (3, 2), np.uint8),
                                  pair=spaces.Tuple((spaces.Discrete(3),
                                                     spaces.Box(-1.0, 1.0, (2,)))))
        action_space = spaces.MultiDiscrete([3, 2])

    traces = CircularArraySARTSTraces(capacity=4, env=Env())
    traces.push(state={"frame": np.zeros((3, 2), np.uint8), "pair": (2, np.ones(2))})
    traces.push(state={"frame": np.ones((3, 2), np.uint8), "pair": (1, np.zeros(2))},
                action=np.array([2, 1]), reward=1.0, terminal=True)
    row = traces[0]
    assert row["state"]["pair"][0] == 2 and row["next_state"]["pair"][0] == 1
    assert row["action"].tolist() == [2, 1] and traces["action"].dtype == np.int64


@pytest.mark.parametrize("layout", ["sarts", "sartsa"])
def test_lanes_keep_sub_envs_and_episodes_apart_through_ring_wrap(layout):
    preset = CircularArraySARTSTraces if layout == "sarts" else CircularArraySARTSATraces
    n, capacity = 3, 3 * 6
    trajectory = Trajectory(preset(capacity, state=SPEC, action=(np.int64, (2,))),
                            NStepBatchSampler(2, 0.5, batch_size=64, rng=0))
    episode, t = np.zeros(n, int), np.zeros(n, int)
    trajectory.push(state=stacked([frame(i, 0, 0) for i in range(n)]))
    for _ in range(40):
        t += 1
        ends = t >= 3 + np.arange(n)  # lane i: episodes of 3 + i steps
        trajectory.push(state=stacked([frame(i, episode[i], t[i]) for i in range(n)]),
                        action=np.stack([t, t + 100 * np.arange(n)], axis=1),
                        reward=np.ones(n, np.float32), terminal=ends)
        if layout == "sartsa" and ends.any():
            trajectory.push(next_action=np.zeros((n, 2), np.int64), lanes=ends)
        if ends.any():
            episode[ends] += 1
            t[ends] = 0
            trajectory.push(state=stacked([frame(i, episode[i], 0) for i in range(n)]),
                            lanes=ends)
    container = trajectory.container
    assert container.n_lanes == n and type(container).__name__ == "PerLaneEpisodes"
    assert container.lane_lengths() == [6, 6, 6]  # every lane wrapped many times
    batch = trajectory.sample()
    here, there = origin(batch["state"]), origin(batch["next_state"])
    assert batch["state"]["frame"].dtype == np.uint8 and batch["state"]["frame"].shape == \
        (64, 3, 2)
    # same lane, same episode, one or two steps on (n-step 2, cut at episode ends)
    assert (here[:, :2] == there[:, :2]).all()
    assert set((there[:, 2] - here[:, 2]).tolist()) <= {1, 2}
    assert (batch["action"][:, 0] == here[:, 2] + 1).all()  # the action stored with the step
    assert (batch["action"][:, 1] - batch["action"][:, 0] == 100 * here[:, 0]).all()
    assert (batch["state"]["position"][:, 1] == 100 * here[:, 0] + here[:, 1]).all()


def test_stacked_windows_of_nested_frames_stay_in_their_episode():
    trajectory = Trajectory(CircularArraySARTSTraces(20, state=SPEC),
                            NStepBatchSampler(1, 0.9, batch_size=32, stack_size=3, rng=1))
    for episode in range(3):
        trajectory.push(state=frame(0, episode, 0))
        for t in range(1, 5):
            trajectory.push(state=frame(0, episode, t), action=0, reward=1.0, terminal=t == 4)
    batch = trajectory.sample()
    windows = origin(batch["state"])  # (32, 3, 3): lane, episode, t per stacked frame
    assert windows.shape == (32, 3, 3)
    assert (windows[:, :, 1] == windows[:, :1, 1]).all()  # one episode per window
    assert (np.diff(windows[:, :, 2], axis=1) == 1).all()
    assert (origin(batch["next_state"])[:, -1, 2] == windows[:, -1, 2] + 1).all()


def test_bulk_inserts_episodes_and_device_batches_keep_the_nesting():
    torch = pytest.importorskip("torch")
    trajectory = Trajectory(ElasticArraySARTSTraces(state=SPEC))
    states = stacked([frame(0, 0, t) for t in range(5)])
    assert trajectory.extend(state=states, action=np.zeros(4, np.int64),
                             reward=np.ones(4, np.float32), terminal=[0, 0, 0, 1]) == 4
    episodes = EpisodesSampler(names=("state",)).sample(trajectory.container)
    assert len(episodes) == 1 and origin(episodes[0]["state"])[:, 2].tolist() == [0, 1, 2, 3]
    batch = BatchSampler(8, rng=0, device="cpu").sample(trajectory.container)
    assert batch["state"]["frame"].dtype == torch.uint8
    assert (batch["next_state"]["position"][:, 0] == batch["state"]["position"][:, 0] + 1).all()


def test_split_lanes_of_nested_traces_takes_one_nested_value_per_lane():
    lanes = split_lanes(CircularArraySARTSTraces(8, state=SPEC), 2)
    lanes.push(state=stacked([frame(0, 0, 0), frame(1, 0, 0)]))
    with pytest.raises(ValueError, match=r"trace 'state.frame' takes one frame of shape \(3, 2\)"):
        lanes.push(state={"frame": np.zeros((3, 3, 2), np.uint8),
                          "position": np.zeros((2, 2), np.float32)},
                   action=np.zeros(2, np.int64), reward=np.zeros(2), terminal=np.zeros(2, bool))
    lanes.push(state=stacked([frame(0, 0, 1), frame(1, 0, 1)]), action=np.zeros(2, np.int64),
               reward=np.zeros(2), terminal=np.zeros(2, bool))
    assert origin(lanes["state"]).tolist() == [[0, 0, 0], [1, 0, 0]]
    assert origin(lanes.take("next_state", np.array([1, 0])))[:, 0].tolist() == [1, 0]
