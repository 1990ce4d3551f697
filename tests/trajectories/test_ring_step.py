"""The vector-step push into lane-major rings (`trajectories.lanes.ring_step`) against the
general push of a laned `Trajectory` (`Trajectory.push_row`), on the same inputs: steps of
every lane, new episodes in some lanes (repeated ones refused), ring wrap-around, pushes to
some lanes and clears that leave another geometry, bad values, both controllers; and the Agent
on a gymnasium vector env, both autoreset modes, terminations and truncations."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import example, given, settings
from hypothesis import strategies as st

import stagerl as rl
import trajectories.trajectory as trajectory_module
from trajectories import BatchSampler, CircularArraySARTSTraces, Trajectory, split_lanes
from trajectories.controllers import EpisodeSampleRatioController, InsertSampleRatioController
from trajectories.lanes import RingLanes

N = 3
STEP = ("state", "action", "reward", "terminal", "episode_start")


class Recording(InsertSampleRatioController):
    """Keeps what every ``on_insert`` was given: the count and the values of the lanes."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_insert(self, n, data=None):
        super().on_insert(n, data)
        self.seen.append((n, {k: np.asarray(data[k]).tolist() for k in data}))


CONTROLLERS = {"insert": InsertSampleRatioController, "episode": EpisodeSampleRatioController,
               "recording": Recording}
MASKS = st.lists(st.booleans(), min_size=N, max_size=N)
OPS = st.lists(st.one_of(
    st.tuples(st.just("step"), MASKS, st.none() | MASKS),  # terminal, episode_start
    st.tuples(st.just("listed"), MASKS),  # values as lists: they need a cast
    st.tuples(st.just("first"),),          # every lane's first state
    st.tuples(st.just("lane_start"), MASKS),  # a first state in some lanes
    st.tuples(st.just("bad"),),            # an action no trace takes
    st.tuples(st.just("keep"),),           # clear(keep_running_episodes=True)
    st.tuples(st.just("pop"), st.integers(0, N - 1)),
), min_size=1, max_size=50)


def snapshot(t):
    c = t.container
    arrays = [c._states, c._samp, c._steps, c._lens, c._start, c._m, c._step, c._kept,
              *(arr for _, arr in c._plain)]
    last_full = None if c.last_full is None else c.last_full.tolist()
    reads = [t[name].tolist() for name in ("state", "next_state", "action", "reward",
                                           "terminal")]
    return ([a.tolist() for a in arrays], c._n_samp, c._us, c._um, bool(c._uniform),
            bool(c._filled), bool(c._any_kept), last_full, c.lane_lengths(), reads,
            c.sampleable_inds.tolist(), c.episodes_lengths.tolist(), vars(t.controller))


def play(t, ops, push_step):
    """Apply ``ops``, vector steps through ``push_step(*values)``; a snapshot (or the error's
    type) after each."""
    out = []
    for i, op in enumerate(ops, start=1):
        state = np.arange(2 * N, dtype=np.float32).reshape(N, 2) + 10 * i
        action = np.arange(N, dtype=np.int64) + i
        reward = np.full(N, float(i))
        try:
            if op[0] == "step":
                start = None if op[2] is None else np.array(op[2], dtype=bool)
                push_step(state, action, reward, np.array(op[1], dtype=bool), start)
            elif op[0] == "listed":
                push_step(state.tolist(), action.tolist(), reward.tolist(), op[1], None)
            elif op[0] == "first":
                t.push(state=state, restart=True)
            elif op[0] == "lane_start":
                t.push(state=state, lanes=np.array(op[1]))
            elif op[0] == "bad":
                push_step(state, action + 0.5, reward, np.zeros(N, bool), None)
            elif op[0] == "keep":
                t.clear(keep_running_episodes=True)
            else:
                t.container.pop(op[1])
            out.append(snapshot(t))
        except (ValueError, TypeError, IndexError) as e:
            out.append((type(e).__name__, snapshot(t)))
    return out


def general_push(t):
    def push(*values):
        row = dict(zip(STEP, values, strict=True))
        if row["episode_start"] is None:
            del row["episode_start"]
        t.push_row(row)
    return push


@pytest.mark.parametrize("controller", CONTROLLERS)
@settings(max_examples=150, deadline=None)
@given(capacity=st.integers(N, 5 * N), ops=OPS)
@example(capacity=N, ops=[("step", [0, 0, 0], None)] * 3 + [
    ("step", [0, 0, 0], [True, False, False]), ("step", [0, 0, 0], [True, False, False]),
    ("step", [0, 1, 0], [False, True, True]), ("step", [0, 0, 0], None)])
@example(capacity=2 * N, ops=[("step", [0, 0, 0], None), ("lane_start", [1, 0, 0]),
                              ("step", [0, 0, 0], [0, 1, 0]), ("first",),
                              ("step", [0, 0, 0], None), ("keep",), ("step", [0, 0, 0], None),
                              ("pop", 2), ("step", [0, 0, 0], [1, 1, 1])])
def test_ring_step_push_and_general_push_agree(controller, capacity, ops):
    agree(controller, capacity, ops)


@pytest.mark.parametrize("capacity", [N, 2 * N, 3 * N, 4 * N])
@pytest.mark.parametrize("steps", range(1, 11))
def test_episodes_ending_at_every_ring_position_agree(capacity, steps):
    """An episode of ``steps`` steps ends in lane 0 wherever its entries sit in the ring,
    wrapped around its end or not; the lanes then go on."""
    ops = [("step", [0, 0, 0], None)] * steps + [("step", [0, 0, 0], [True, False, False])]
    agree("insert", capacity, ops * 3)


@pytest.mark.parametrize("controller", ["insert", "recording"])
@pytest.mark.parametrize("capacity", [N, 2 * N, 4 * N])
def test_episodes_ending_in_several_lanes_at_every_ring_position_agree(controller, capacity):
    """Lane l starts a new episode every l + 2 acts (lanes 0 and 1 together every 6th, all
    three every 12th): over 40 acts each lane's episodes end at every position of its ring of
    at most 13 states, wrapped around its end or not; the padding rows, flags, step numbers,
    episode lengths and what the controller is given agree."""
    ops = [("step", [t % 5 == 0, False, t % 7 == 0],
            [t % (lane + 2) == 0 for lane in range(N)]) for t in range(1, 41)]
    agree(controller, capacity, ops)


def agree(controller, capacity, ops):
    def trajectory():
        t = split_lanes(Trajectory(
            CircularArraySARTSTraces(capacity=capacity, state=(np.float32, (2,))),
            BatchSampler(2, rng=0), CONTROLLERS[controller]()), N)
        t.push(state=np.zeros((N, 2), np.float32))
        return t

    fast, general = trajectory(), trajectory()
    assert type(fast.container) is RingLanes
    push_step = fast.push_values_function(STEP)
    assert push_step.__globals__.get("C") is fast.container  # the generated function
    assert play(fast, ops, push_step) == play(general, ops, general_push(general))


def test_ring_step_push_takes_the_common_step_itself():
    """A step and a new episode in some lane go through the function, not the general path."""
    t = split_lanes(Trajectory(CircularArraySARTSTraces(capacity=4 * N)), N)
    t.push(state=np.zeros(N, np.int64))
    calls = []
    t.container.push_function = lambda keys: calls.append  # where the general path goes
    push_step = t.push_values_function(STEP)
    for i in range(1, 10):  # wraps each lane's ring of 4 rows twice
        push_step(np.full(N, i), np.zeros(N, np.int64), np.ones(N), np.zeros(N, bool),
                  np.arange(N) == i % N if i % 2 == 0 else None)
    assert calls == []
    assert t["state"].tolist() == [5, 6, 7, 8] * N  # the newest 5 states of each lane
    # the rows into a new episode (lane 0 at 6, lane 2 at 8) are padding
    assert np.asarray(t.container.sampleable_inds, bool).tolist() == [
        False, True, True, True, True, True, True, True, True, True, False, True]
    assert t.controller.n_inserted == 9 * N - 4


def test_ring_step_push_with_four_names_takes_no_starts():
    t = split_lanes(Trajectory(CircularArraySARTSTraces(capacity=2 * N)), N)
    t.push(state=np.zeros(N, np.int64))
    push_step = t.push_values_function(STEP[:4])
    for i in range(1, 4):
        push_step(np.full(N, i), np.zeros(N, np.int64), np.ones(N), np.zeros(N, bool))
    assert t["state"].tolist() == [1, 2] * N and t["next_state"].tolist() == [2, 3] * N


def make_envs(mode, n):
    return gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=9)] * n, autoreset_mode=mode)


def agent_contents(mode, fast, monkeypatch):
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(trajectory_module, "ring_step_push", lambda *args: None)
        agent = rl.Agent(rl.RandomPolicy(rng=1), Trajectory(CircularArraySARTSTraces(
            capacity=40, state=(np.float32, (4,)), action=(np.int64, ())),
            BatchSampler(4, rng=0), EpisodeSampleRatioController()))
        env = rl.GymVectorEnv(make_envs(mode, 4), seed=3)
        rl.run(agent, env, rl.StopAfterNSteps(4 * 60, progress=False))
    t = agent.trajectory
    c = t.container
    return ([t[k].tolist() for k in ("state", "next_state", "action", "reward", "terminal")],
            c.lane_lengths(), c.episodes_lengths.tolist(), c.sampleable_inds.tolist(),
            c._lens.tolist(), c._steps.tolist(), vars(t.controller))


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_agent_on_a_vector_env_stores_the_same_with_and_without_ring_step(mode, monkeypatch):
    """Episodes end by termination and by a 9-step time limit, each lane's ring of 10 rows
    wraps many times; the stored rows, episode bookkeeping and controller counts agree."""
    fast = agent_contents(mode, True, monkeypatch)
    assert fast == agent_contents(mode, False, monkeypatch)
    assert fast[-1]["n_episodes"] > 20  # many episodes ended, truncated ones included
