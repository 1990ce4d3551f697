"""LanedEpisodesBuffer (both storages) and laned Trajectories: each lane is an EpisodesBuffer."""

import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CastError,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularPrioritizedTraces,
    ElasticArraySARTSTraces,
    EpisodeSampleRatioController,
    EpisodesBuffer,
    EpisodesSampler,
    LanedEpisodesBuffer,
    NormalizedTraces,
    NStepBatchSampler,
    TraceKeyError,
    Trajectory,
    split_lanes,
)
from trajectories.lanes.per_lane import PerLaneEpisodes
from trajectories.lanes.rings import RingLanes


def per_lane_buffer(traces, n):
    """The general storage (one EpisodesBuffer per lane), whatever the layout."""
    return PerLaneEpisodes(traces, n)


def sarts(capacity=13):
    return CircularArraySARTSTraces(capacity=capacity, state=(np.int64, (2,)))


STORAGES = {"rings": split_lanes, "per_lane": per_lane_buffer}


def test_the_interface_is_never_built_itself():
    with pytest.raises(TypeError, match=r"split_lanes\(traces, n_lanes\)"):
        LanedEpisodesBuffer(sarts(), 2)


def test_ring_layouts_get_ring_storage():
    assert type(split_lanes(sarts(), 2)) is RingLanes
    for traces in (CircularArraySARTSATraces(capacity=8), ElasticArraySARTSTraces(),
                   NormalizedTraces(sarts())):
        assert type(split_lanes(traces, 2)) is PerLaneEpisodes


def random_pushes(containers, n, seed, steps=60):
    """Random lane-batched pushes (steps, new episodes, subsets of lanes) into every container
    and, lane by lane, into reference EpisodesBuffers; yields after each push."""
    rng = np.random.default_rng(seed)
    refs = [EpisodesBuffer(sarts().empty_copy(5)) for _ in range(n)]
    phase = np.zeros(n, dtype=int)  # 0 empty, 1 a first state only, 2 stepping
    for t in range(1, steps + 1):
        state = np.stack([np.arange(n), np.full(n, t)], axis=1)
        subset = rng.random() < 0.3
        if t == 1 or rng.random() < 0.15:
            sel = phase != 1
            if subset:
                sel &= rng.random(n) < 0.7
            elif not sel.all():
                continue
            if not sel.any():
                continue
            lanes = None if sel.all() else sel
            for c in containers:
                c.push(state=state, lanes=lanes)
            for i in np.flatnonzero(sel):
                refs[i].push(state=state[i])
                phase[i] = 1
        else:
            sel = phase > 0
            if subset:
                sel &= rng.random(n) < 0.7
            if not sel.any():
                continue
            starts = (rng.random(n) < 0.2) & (phase != 1)
            action, reward = rng.integers(5, size=n), rng.random(n)
            terminal = rng.random(n) < 0.1
            for c in containers:
                c.push(state=state, action=action, reward=reward, terminal=terminal,
                       episode_start=starts, lanes=None if sel.all() else sel)
            for i in np.flatnonzero(sel):
                if starts[i]:
                    refs[i].push(state=state[i])
                    phase[i] = 1
                else:
                    refs[i].push(state=state[i], action=action[i], reward=reward[i],
                                 terminal=terminal[i])
                    phase[i] = 2
        yield refs, rng


@pytest.mark.parametrize("seed", range(12))
def test_lanes_hold_what_one_episodes_buffer_per_lane_would(seed):
    n = 3
    rings, per_lane = split_lanes(sarts(), n), per_lane_buffer(sarts(), n)
    assert rings.capacity == per_lane.capacity == 15  # ceil(13 / 3) = 5 rows a lane
    for refs, rng in random_pushes([rings, per_lane], n, seed):
        for c in (rings, per_lane):
            assert len(c) == sum(len(r) for r in refs)
            assert c.lane_lengths() == [len(r) for r in refs]
            for name in c.keys():
                np.testing.assert_array_equal(c[name], np.concatenate([r[name] for r in refs]))
            for attr in ("sampleable_inds", "step_numbers", "episodes_lengths"):
                expected = np.concatenate([getattr(r, attr)[:len(r)] for r in refs])
                np.testing.assert_array_equal(getattr(c, attr), expected)
            assert c.n_sampleable == sum(r.n_sampleable for r in refs)
            np.testing.assert_array_equal(c.sampleable_indices(),
                                          np.flatnonzero(c.sampleable_inds))
        if len(rings):
            idx = rng.integers(len(rings), size=(4, 5))
            for name in rings.keys():
                np.testing.assert_array_equal(rings.take(name, idx), per_lane.take(name, idx))
                assert rings.take(name, idx).shape[:2] == (4, 5)
            for method in ("is_sampleable_at", "step_number_at", "episode_length_at"):
                np.testing.assert_array_equal(getattr(rings, method)(idx),
                                              getattr(per_lane, method)(idx))
        assert [e.tolist() for e in rings.episode_rows()] == \
            [e.tolist() for e in per_lane.episode_rows()]


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_documented_example(make):
    lb = make(CircularArraySARTSTraces(capacity=8), 2)
    lb.push(state=np.array([10, 20]))
    lb.push(state=np.array([11, 21]), action=np.array([0, 1]), reward=np.array([1.0, 2.0]),
            terminal=np.array([True, False]))
    lb.push(state=np.array([30, 22]), action=np.array([0, 1]), reward=np.array([0.0, 2.0]),
            terminal=np.array([False, False]), episode_start=np.array([True, False]))
    lb.push(state=np.array([31, 23]), action=np.array([1, 1]), reward=np.array([1.0, 2.0]),
            terminal=np.array([False, False]))
    assert lb["state"].tolist() == [10, 11, 30, 20, 21, 22]
    assert lb["next_state"].tolist() == [11, 30, 31, 21, 22, 23]
    assert lb["reward"].tolist() == [1.0, 0.0, 1.0, 2.0, 2.0, 2.0]  # row 1 is padding
    assert lb.sampleable_inds.tolist() == [True, False, True, True, True, True]
    assert lb.episodes_lengths.tolist() == [1, 1, 1, 3, 3, 3]
    assert lb.step_numbers.tolist() == [1, 2, 1, 1, 2, 3]
    assert lb[0]["next_state"] == 11 and lb[-1]["state"] == 22
    with pytest.raises(IndexError):
        lb[1]
    assert [row["state"] for row in lb] == [10, 30, 20, 21, 22]
    assert lb.open_lanes().tolist() == [False, False]


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_samplers_never_cross_lanes_or_episodes(make):
    lb = make(CircularArraySARTSTraces(capacity=40), 2)
    lb.push(state=np.array([100, 200]))
    for t in range(1, 8):  # lane 0: 4 steps then a new episode; lane 1: 7 steps
        lb.push(state=np.array([100 + t, 200 + t]), action=np.array([t, t]),
                reward=np.array([float(t), float(t)]), terminal=np.array([t == 4, False]),
                episode_start=np.array([t == 5, False]))
    batch = BatchSampler(500, rng=0).sample(lb)
    assert (batch["next_state"] == batch["state"] + 1).all()
    nstep = NStepBatchSampler(n=3, gamma=1.0, batch_size=500, rng=1).sample(lb)
    got = dict(zip(nstep["state"].tolist(), nstep["next_state"].tolist(), strict=True))
    assert got[102] == 104 and got[103] == 104  # cut at lane 0's first episode end
    assert got[205] == 207 and got[206] == 207  # cut at lane 1's newest state
    assert 104 not in got
    episodes = EpisodesSampler(names=("state",)).sample(lb)
    assert [e["state"].tolist() for e in episodes] == [[100, 101, 102, 103], [105, 106],
                                                       list(range(200, 207))]


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_bad_pushes_write_nothing(make):
    lb = make(sarts(), 3)
    lb.push(state=np.zeros((3, 2), dtype=np.int64))
    before = {name: lb[name].copy() for name in lb.keys()}
    step = dict(state=np.ones((3, 2), dtype=np.int64), action=np.zeros(3, dtype=np.int64),
                reward=np.zeros(3), terminal=np.zeros(3, dtype=bool))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        lb.push(**{**step, "action": np.zeros(2, dtype=np.int64)})
    with pytest.raises(ValueError, match="one frame of shape"):
        lb.push(**{**step, "action": 1})  # one value per lane, not a scalar
    with pytest.raises(CastError):
        lb.push(**{**step, "action": np.array([0.0, np.nan, 1.0])})
    with pytest.raises(TraceKeyError, match="unknown trace 'color'"):
        lb.push(**step, color=np.zeros(3))
    with pytest.raises(TraceKeyError, match="missing"):
        lb.push(state=step["state"], action=step["action"])
    # lane 2 has only a first state: a second one breaks the rules, and nothing is written
    lb.push(**step, lanes=np.array([True, True, False]))
    lengths = lb.lane_lengths()
    with pytest.raises(ValueError, match="lane 2: a partial push right after a partial push"):
        lb.push(state=step["state"], episode_start=np.array([True, True, True]))
    with pytest.raises(ValueError, match="lane 2: a partial push right after a partial push"):
        lb.push(**step, episode_start=np.array([False, True, True]))
    assert lb.lane_lengths() == lengths == [1, 1, 0]
    assert lb.open_lanes().tolist() == [False, False, True]
    assert before["state"].size == 0


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_a_first_push_must_start_episodes(make):
    lb = make(sarts(), 2)
    with pytest.raises(ValueError, match="lane 0: a full step into an empty lane"):
        lb.push(state=np.ones((2, 2), dtype=np.int64), action=np.zeros(2, dtype=np.int64),
                reward=np.zeros(2), terminal=np.zeros(2, dtype=bool))
    assert len(lb) == 0 and lb.lane_lengths() == [0, 0]


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_extend_pop_popleft_clear(make):
    lb = make(sarts(capacity=20), 2)
    lb.push(state=np.array([[0, 0], [1, 0]]), lanes=np.array([False, True]))
    n = lb.extend(1, state=[[1, 1], [1, 2]], action=[3, 4], reward=[0.5, 0.5],
                  terminal=[False, True], new_episode=False)
    assert n == 2 and lb.lane_lengths() == [0, 2]
    assert lb.extend(0, state=[[5, 0], [5, 1], [5, 2]], action=[1, 1], reward=[1.0, 1.0],
                     terminal=[False, False]) == 2
    assert lb["state"].tolist() == [[5, 0], [5, 1], [1, 0], [1, 1]]
    assert lb.sampleable_inds.tolist() == [True, True, True, True]
    assert lb.step_numbers.tolist() == [1, 2, 1, 2]
    with pytest.raises(ValueError, match="extend: column"):
        lb.extend(0, state=[[6, 0], [6, 1], [6, 2]], action=[1], reward=[1.0, 1.0],
                  terminal=[False, False])
    row = lb.pop(0)
    assert row["state"].tolist() == [5, 1] and lb.lane_lengths() == [1, 2]
    assert lb.sampleable_inds.tolist() == [True, True, True]
    first = lb.popleft(1)
    assert first["state"].tolist() == [1, 0] and lb.lane_lengths() == [1, 1]
    with pytest.raises(IndexError, match="lane 5"):
        lb.pop(5)
    lb.clear()
    assert len(lb) == 0 and lb.n_sampleable == 0 and lb.lane_lengths() == [0, 0]
    with pytest.raises(IndexError):
        lb.pop(0)


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_ring_wrap_keeps_lanes_apart(make):
    lb = make(CircularArraySARTSTraces(capacity=6), 2)  # 3 rows a lane
    lb.push(state=np.array([0, 100]))
    for t in range(1, 10):
        lb.push(state=np.array([t, 100 + t]), action=np.zeros(2, dtype=np.int64),
                reward=np.zeros(2), terminal=np.zeros(2, dtype=bool))
    assert lb["state"].tolist() == [6, 7, 8, 106, 107, 108]
    assert lb["next_state"].tolist() == [7, 8, 9, 107, 108, 109]
    assert lb.n_sampleable == 6


def test_normalised_lanes_share_their_statistics():
    traces = NormalizedTraces(CircularArraySARTSTraces(capacity=10))
    lb = split_lanes(traces, 2)
    lb.push(state=np.array([0, 10]))
    lb.push(state=np.array([1, 11]), action=np.array([0, 0]), reward=np.array([1.0, 3.0]),
            terminal=np.array([False, False]))
    assert traces.normalizers["reward"].mean.tolist() == 2.0  # both lanes' rewards
    assert lb["reward"].tolist() == [1.0, 3.0]  # stored raw
    assert lb.take("reward", np.array([0, 1])).tolist() == pytest.approx([-2 ** -0.5, 2 ** -0.5])


def test_sartsa_lanes_complete_with_next_action():
    lb = split_lanes(CircularArraySARTSATraces(capacity=10), 2)
    lb.push(state=np.array([0, 10]))
    step = dict(action=np.array([1, 2]), reward=np.ones(2), terminal=np.array([True, False]))
    lb.push(state=np.array([1, 11]), **step)
    with pytest.raises(ValueError, match="lane 0: the last episode is not complete"):
        lb.push(state=np.array([5, 12]), **step, episode_start=np.array([True, False]))
    lb.push(next_action=np.array([7, 0]), lanes=np.array([True, False]))
    lb.push(state=np.array([5, 12]), **step, episode_start=np.array([True, False]))
    assert lb.running_lanes().tolist() == [False, True]
    assert lb["next_action"].tolist() == [7, 2]  # lane 1's newest row awaits its next action


def test_construction_errors():
    with pytest.raises(ValueError, match="n_lanes must be positive, got n_lanes=0"):
        split_lanes(sarts(), 0)
    with pytest.raises(TypeError, match="n_lanes must be an int"):
        split_lanes(sarts(), 2.0)
    with pytest.raises(TypeError, match="prioritized"):
        split_lanes(CircularPrioritizedTraces(sarts()), 2)
    full = sarts()
    full.push(state=[0, 0])
    full.push(state=[0, 1], action=0, reward=0.0, terminal=False)
    with pytest.raises(ValueError, match="empty traces"):
        split_lanes(full, 2)
    with pytest.raises(TypeError, match="traces"):
        split_lanes([1, 2], 2)


# -- a Trajectory over lanes ------------------------------------------------------------------


def vector_step(t, n=3):
    return dict(state=np.stack([np.arange(n), np.full(n, t)], axis=1),
                action=np.zeros(n, dtype=np.int64), reward=np.ones(n),
                terminal=np.zeros(n, dtype=bool))


def test_trajectory_learns_lanes_from_its_first_push():
    t = Trajectory(sarts(capacity=30))
    t.push(state=vector_step(0)["state"])
    assert t.n_lanes == 3 and isinstance(t.container, LanedEpisodesBuffer)
    t.push(**vector_step(1))
    t.push(**vector_step(2), episode_start=np.array([False, True, False]))
    assert len(t) == 6 and t.controller.n_inserted == 5  # a new episode is no transition
    assert t.container.lane_lengths() == [2, 2, 2]


def test_trajectory_told_its_lanes():
    t = Trajectory(sarts(), n_lanes=1)
    t.push(state=np.array([[0, 0]]))
    t.push(**vector_step(1, n=1))
    assert t.container.lane_lengths() == [1]
    with pytest.raises(ValueError, match="already stores 1 lanes"):
        split_lanes(t, 2)
    assert split_lanes(t, 1) is t


def test_single_env_trajectory_is_untouched():
    t = Trajectory(sarts())
    t.push(state=np.array([0, 0]))
    t.push(state=np.array([0, 1]), action=0, reward=1.0, terminal=False)
    assert type(t.container) is EpisodesBuffer and t.n_lanes is None
    assert "push" not in vars(t)  # the class's push, no wrapper left behind


def test_a_guessed_lane_split_explains_itself():
    t = Trajectory(CircularArraySARTSTraces(capacity=10))  # scalar states
    t.push(state=np.zeros(4))  # one CartPole state: taken as 4 sub-envs
    with pytest.raises(ValueError, match=r"taken as 4 sub-envs.*state=\(np.float32, \(4,\)\)"):
        t.push(state=np.zeros(4), action=0, reward=1.0, terminal=False)


def test_laned_controller_counts_lanes_that_stepped():
    t = Trajectory(sarts(), controller=EpisodeSampleRatioController(), n_lanes=3)
    t.push(state=vector_step(0)["state"])
    t.push(**vector_step(1))
    step = vector_step(2)
    step["terminal"] = np.array([True, False, True])
    t.push(**step, episode_start=np.array([False, False, True]))
    assert t.controller.n_episodes == 1  # lane 2 started anew: its row is no transition
    assert t.extend(1, state=[[1, 2], [1, 3]], action=[0, 0], reward=[0.0, 0.0],
                    terminal=[False, True], new_episode=False) == 2
    assert t.controller.n_episodes == 2


def test_laned_container_in_a_plain_trajectory():
    lb = split_lanes(sarts(), 3)
    t = Trajectory(lb, BatchSampler(8, rng=0))
    assert t.container is lb and t.n_lanes == 3
    t.push(state=vector_step(0)["state"])
    t.push(**vector_step(1))
    assert t.sample()["next_state"][:, 1].tolist() == [1] * 8


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_restart_lets_a_lane_without_steps_start_again(make):
    lb = make(sarts(), 2)
    lb.push(state=np.array([[0, 0], [1, 0]]))
    lb.push(**vector_step(1, n=2))
    lb.push(**vector_step(2, n=2), episode_start=np.array([False, True]))  # lane 1: no step yet
    assert lb.open_lanes().tolist() == [False, True]
    with pytest.raises(ValueError, match="lane 1: a partial push right after a partial push"):
        lb.push(state=np.array([[0, 5], [1, 5]]))
    lb.push(state=np.array([[0, 5], [1, 5]]), restart=True)
    lb.push(**vector_step(6, n=2))
    rows = [(s.tolist(), n.tolist()) for s, n in zip(
        lb.take("state", lb.sampleable_indices()), lb.take("next_state", lb.sampleable_indices()),
        strict=True)]
    assert rows == [([0, 0], [0, 1]), ([0, 1], [0, 2]), ([0, 5], [0, 6]),
                    ([1, 0], [1, 1]), ([1, 5], [1, 6])]
    assert lb.open_lanes().tolist() == [False, False]


# -- SARTSA lanes: columns, pops and restarts ---------------------------------------------------


def sartsa_lanes(capacity=20):
    lb = per_lane_buffer(CircularArraySARTSATraces(capacity=capacity), 2)
    lb.push(state=np.array([0, 100]))
    for s in (1, 2, 3):
        lb.push(state=np.array([s, 100 + s]), action=np.array([10 + s, 110 + s]),
                reward=np.ones(2), terminal=np.array([False, s == 3]))
    return lb


def test_sartsa_lane_columns_line_up_with_the_global_rows():
    lb = sartsa_lanes()
    assert len(lb) == 4 and lb.lane_lengths() == [2, 2]  # each lane: 2 complete rows
    rows = np.arange(len(lb))
    for name in lb.keys():
        np.testing.assert_array_equal(lb[name], lb.take(name, rows))
    assert lb["state"].tolist() == [0, 1, 100, 101]
    assert lb["next_action"].tolist() == [12, 13, 112, 113]
    assert [len(getattr(lb, a)) for a in ("sampleable_inds", "step_numbers",
                                          "episodes_lengths")] == [4, 4, 4]


def test_pop_after_a_completion_keeps_lane_and_buffer_agreeing():
    lb = sartsa_lanes()
    lb.push(next_action=np.array([0, 114]), lanes=np.array([False, True]))  # lane 1 completes
    lb.pop(1)  # lane 1 is now completed one state earlier (by the action taken there, 113)
    assert lb.running_lanes().tolist() == [True, False]
    before = {name: lb[name].tolist() for name in lb.keys()}
    with pytest.raises(ValueError, match="lane 1: push\\(next_action=...\\) twice"):
        lb.push(next_action=np.array([14, 115]))
    assert {name: lb[name].tolist() for name in lb.keys()} == before  # lane 0 untouched
    assert lb.running_lanes().tolist() == [True, False]
    lb.push(next_action=np.array([14, 0]), lanes=np.array([True, False]))
    assert lb["next_action"].tolist() == [12, 13, 14, 112, 113]


def test_restart_keeps_the_previous_episode_completed():
    lb = sartsa_lanes()
    lb.push(next_action=np.array([0, 114]), lanes=np.array([False, True]))
    lb.push(state=np.array([0, 200]), lanes=np.array([False, True]))  # lane 1 resets; a run
    assert lb.open_lanes().tolist() == [False, True]                  # stops here
    lb.push(next_action=np.array([14, 0]), lanes=np.array([True, False]))
    with pytest.raises(ValueError, match="lane 1: a partial push right after a partial push"):
        lb.push(state=np.array([50, 300]))
    lb.push(state=np.array([50, 300]), restart=True)  # the next run's first states
    for s in (1, 2):
        lb.push(state=np.array([50 + s, 300 + s]), action=np.array([60 + s, 400 + s]),
                reward=np.ones(2), terminal=np.array([False, False]))
    lane1 = [(r["state"], r["next_state"], r["action"], r["next_action"]) for r in
             lb._lanes[1]]
    assert lane1 == [(100, 101, 111, 112), (101, 102, 112, 113), (102, 103, 113, 114),
                     (300, 301, 401, 402)]
    assert [r["state"] for r in lb._lanes[0]] == [0, 1, 2, 50]


@pytest.mark.parametrize("make", STORAGES.values(), ids=STORAGES.keys())
def test_episodes_sampler_lists_a_lanes_new_episode_without_rows(make):
    lb = make(CircularArraySARTSTraces(capacity=8), 2)
    lb.push(state=np.array([0, 10]))
    lb.push(state=np.array([1, 11]), action=np.zeros(2, dtype=np.int64), reward=np.ones(2),
            terminal=np.array([True, False]))
    lb.push(state=np.array([5, 0]), lanes=np.array([True, False]))  # lane 0: a new episode
    episodes = EpisodesSampler(names=("state",)).sample(lb)
    assert [e["state"].tolist() for e in episodes] == [[0], [], [10]]


def test_elastic_lanes_take_the_frames_the_first_lane_to_get_a_value_fixed():
    from trajectories import MultiplexTraces, Traces

    traces = MultiplexTraces("state", "next_state", []) + Traces(action=[], reward=[],
                                                                 terminal=[])
    lb = split_lanes(traces, 2)  # dtypes and frames from the first values pushed
    lb.push(state=np.zeros(2), lanes=np.array([False, True]))  # only lane 1 gets values
    lb.push(state=np.ones(2), action=np.array([0, 1]), reward=np.ones(2),
            terminal=np.array([False, False]), lanes=np.array([False, True]))
    lb.push(state=np.zeros(2), lanes=np.array([True, False]))  # lane 0 starts
    before = {name: lb[name].tolist() for name in lb.keys()}
    with pytest.raises(CastError, match="not a whole number"):  # lane 1's actions are ints
        lb.push(state=np.full(2, 2.0), action=np.array([0.5, 1.5]), reward=np.ones(2),
                terminal=np.array([False, False]))
    assert {name: lb[name].tolist() for name in lb.keys()} == before  # lane 0 untouched
