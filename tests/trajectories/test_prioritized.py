import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularPrioritizedTraces,
    NStepBatchSampler,
)


def sarts(capacity=8, **kw):
    return CircularPrioritizedTraces(CircularArraySARTSTraces(capacity=capacity), **kw)


def step(t, s, r=1.0, terminal=False):
    t.push(state=s, action=0, reward=r, terminal=terminal)


def test_keys_and_columns():
    t = sarts(default_priority=2.0)
    assert t.keys() == ("key", "priority", "state", "next_state", "action", "reward", "terminal")
    assert t.slots == CircularArraySARTSTraces(capacity=8).slots
    assert t.capacity == 8
    t.push(state=0)  # a multiplex-only push adds no row and takes no key
    assert len(t) == 0 and t["key"].tolist() == [] and len(t.priorities) == 0
    for s in (1, 2, 3):
        step(t, s)
    assert t["key"].tolist() == [0, 1, 2]
    assert t["priority"].tolist() == [2.0, 2.0, 2.0]
    assert t[1] == {"key": 1, "priority": 2.0, **t.traces[1]}
    rows = t[0:2]
    assert rows["key"].tolist() == [0, 1] and rows["state"].tolist() == [0, 1]
    assert t.take("key", np.array([2, 0])).tolist() == [2, 0]
    assert t.take("next_state", np.array([2])).tolist() == [3]


def test_padding_rows_take_a_key_with_priority_zero_and_keep_it():
    t = sarts()
    t.push(state=0)
    step(t, 1)
    step(t, 2, terminal=True)
    t.pad(state=10)  # the boundary row before a new episode
    step(t, 11)
    assert t["key"].tolist() == [0, 1, 2, 3]
    assert t["priority"].tolist() == [1.0, 1.0, 0.0, 1.0]
    t.set_priority([0, 1, 2, 3], [3.0, 4.0, 5.0, 6.0])
    assert t["priority"].tolist() == [3.0, 4.0, 0.0, 6.0]
    batch = BatchSampler(500, rng=0).sample(t)
    assert 2 not in set(batch["key"].tolist())


def test_ring_overwrite_keeps_keys_consecutive_and_ignores_stale_keys():
    t = sarts(capacity=3)
    t.push(state=0)
    for s in range(1, 6):
        step(t, s)
    assert t["key"].tolist() == [2, 3, 4]
    assert t["state"].tolist() == [2, 3, 4]
    t.set_priority([0, 1, 3, 99], [7.0, 7.0, 0.5, 7.0])
    assert t["priority"].tolist() == [1.0, 0.5, 1.0]


def test_set_priority_validation():
    t = sarts()
    t.push(state=0)
    step(t, 1)
    with pytest.raises(ValueError, match="2 keys and 1 values"):
        t.set_priority([0, 1], [1.0])
    with pytest.raises(ValueError):
        t.set_priority([0], [-1.0])
    with pytest.raises(ValueError):
        t.set_priority([0], [np.nan])
    assert t["priority"].tolist() == [1.0]


def test_a_failed_push_leaves_the_tree_untouched():
    t = sarts()
    t.push(state=0)
    step(t, 1)
    with pytest.raises(KeyError):
        t.push(state=2, action=0, reward=1.0, terminal=False, bogus=1)
    with pytest.raises(ValueError):
        t.push(state=np.zeros(3), action=0, reward=1.0, terminal=False)
    assert len(t) == 1 and t["key"].tolist() == [0] and len(t.priorities) == 1


def test_append_pop_popleft_clear():
    t = sarts(capacity=4)
    t.append(state=np.arange(4), action=np.zeros(3, dtype=np.int64),
             reward=np.ones(3, dtype=np.float32), terminal=np.zeros(3, dtype=bool))
    assert t["key"].tolist() == [0, 1, 2]
    t.append(state=np.arange(4, 7), action=np.zeros(3, dtype=np.int64),
             reward=np.ones(3, dtype=np.float32), terminal=np.zeros(3, dtype=bool))
    assert t["state"].tolist() == [2, 3, 4, 5]
    assert t["key"].tolist() == [2, 3, 4, 5]
    row = t.pop()
    assert row["key"] == 5 and row["state"] == 5
    assert t["key"].tolist() == [2, 3, 4]
    row = t.popleft()
    assert row["key"] == 2 and row["state"] == 2
    assert t["key"].tolist() == [3, 4] and len(t) == 2
    step(t, 7)
    assert t["key"].tolist() == [3, 4, 5]
    t.clear()
    assert len(t) == 0 and t["key"].tolist() == [] and t.priorities.total == 0.0


def test_sampling_is_proportional_and_carries_key_and_priority():
    t = sarts(capacity=16)
    t.push(state=0)
    for s in range(1, 6):
        step(t, s)
    p = np.array([1.0, 0.0, 2.0, 3.0, 4.0])
    t.set_priority(np.arange(5), p)
    sampler = BatchSampler(100, names=("state",), rng=0)
    counts = np.zeros(5)
    for _ in range(100):
        batch = sampler.sample(t)
        assert set(batch) == {"state", "key", "priority"}
        assert (batch["state"] == batch["key"]).all()
        assert (batch["priority"] == p[batch["key"]]).all()
        np.add.at(counts, batch["key"], 1)
    expected = p / p.sum() * counts.sum()
    assert counts[1] == 0
    chi2 = (((counts - expected) ** 2)[p > 0] / expected[p > 0]).sum()
    assert chi2 < 16.3  # 3 degrees of freedom, p ~ 0.001


def test_bare_sartsa_never_samples_the_row_waiting_for_its_next_action():
    t = CircularPrioritizedTraces(CircularArraySARTSATraces(capacity=8))
    t.push(state=0)
    t.push(state=1, action=10, reward=1.0, terminal=False)
    t.push(state=2, action=11, reward=1.0, terminal=False)
    # rows: 0 complete (action 10, next_action 11); 1 waits for its next action
    assert len(t) == 1 and t["key"].tolist() == [0, 1]
    batch = BatchSampler(50, rng=0).sample(t)
    assert batch["key"].tolist() == [0] * 50 and batch["next_action"].tolist() == [11] * 50


def test_stratified_batch_is_seeded():
    t = sarts(capacity=32)
    t.push(state=0)
    for s in range(1, 30):
        step(t, s)
    t.set_priority(np.arange(29), np.arange(29) % 5)
    a = BatchSampler(16, rng=3).sample(t)
    b = BatchSampler(16, rng=3).sample(t)
    assert all((a[k] == b[k]).all() for k in a)
    assert (a["priority"] > 0).all()


def test_nstep_on_prioritized_traces_draws_by_priority():
    t = sarts()
    t.push(state=0)
    for s in range(1, 5):
        step(t, s, r=float(s))
    t.set_priority([0, 1, 2, 3], [0.0, 0.0, 1.0, 0.0])
    batch = NStepBatchSampler(n=2, gamma=0.5, batch_size=8, rng=0).sample(t)
    assert batch["key"].tolist() == [2] * 8
    assert batch["reward"].tolist() == [3.0 + 0.5 * 4.0] * 8


def test_construction_errors():
    with pytest.raises(TypeError):
        CircularPrioritizedTraces([1, 2, 3])
    with pytest.raises(ValueError):
        sarts(default_priority=-1.0)
    from trajectories import ElasticArraySARTSTraces
    with pytest.raises(ValueError, match="bounded"):
        CircularPrioritizedTraces(ElasticArraySARTSTraces())
    with pytest.raises(ValueError, match="every stored priority is 0"):
        t = sarts()
        t.push(state=0)
        step(t, 1)
        t.set_priority([0], [0.0])
        BatchSampler(4).sample(t)


def test_in_an_episodes_buffer_boundaries_get_priority_zero():
    from trajectories import EpisodesBuffer

    eb = EpisodesBuffer(sarts(capacity=20))
    eb.push(state=0)
    for s in (1, 2, 3):
        eb.push(state=s, action=0, reward=1.0, terminal=s == 3)
    eb.push(state=10)  # new episode: the row 3 -> 10 is a boundary
    for s in (11, 12):
        eb.push(state=s, action=0, reward=1.0, terminal=False)
    t = eb.traces
    assert t["key"].tolist() == [0, 1, 2, 3, 4, 5]
    assert t["priority"].tolist() == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    eb.set_priority([3, 4], [9.0, 2.0])  # forwarded; the boundary keeps 0
    assert t["priority"].tolist() == [1.0, 1.0, 1.0, 0.0, 2.0, 1.0]
    batch = BatchSampler(600, rng=0).sample(eb)
    assert (batch["next_state"] == batch["state"] + 1).all()
    assert 3 not in set(batch["key"].tolist())


def test_bulk_extend_and_pending_sartsa_rows_in_a_trajectory():
    from trajectories import Trajectory

    traj = Trajectory(CircularPrioritizedTraces(CircularArraySARTSATraces(capacity=20)),
                      sampler=BatchSampler(300, rng=1))
    traj.extend(state=np.arange(4), action=np.array([100, 101, 102]),
                reward=np.ones(3, dtype=np.float32), terminal=np.array([False, False, True]),
                next_action=103)
    traj.extend(state=np.arange(10, 13), action=np.array([110, 111]),
                reward=np.ones(2, dtype=np.float32), terminal=np.zeros(2, dtype=bool))
    t = traj.container.traces
    # rows: 0 1 2 | boundary 3 | 4 5 (5 waits for its next action)
    assert t["key"].tolist() == [0, 1, 2, 3, 4, 5]
    assert t["priority"].tolist() == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    batch = traj.sample()
    assert set(batch["state"].tolist()) == {0, 1, 2, 10}
    assert (batch["next_action"] == batch["action"] + 1).all()
    traj.container.set_priority([0, 1, 2, 4], [0.0, 0.0, 0.0, 1.0])
    assert set(traj.sample()["state"].tolist()) == {10}


def test_positive_priority_only_on_unsampleable_rows_raises():
    from trajectories import EpisodesBuffer

    eb = EpisodesBuffer(CircularPrioritizedTraces(CircularArraySARTSATraces(capacity=8)))
    eb.push(state=0)
    eb.push(state=1, action=10, reward=1.0, terminal=False)
    eb.push(state=2, action=11, reward=1.0, terminal=False)
    eb.set_priority([0], [0.0])  # row 0 (the only complete one) gets priority 0
    with pytest.raises(ValueError, match="no sampleable row"):
        BatchSampler(4, rng=0).sample(eb)


@pytest.mark.parametrize("layout", [CircularArraySARTSTraces, CircularArraySARTSATraces])
def test_keys_follow_rows_through_random_episodes(layout):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from trajectories import EpisodesBuffer

    @settings(max_examples=40, deadline=None)
    @given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=8),
           capacity=st.integers(2, 9), bulk=st.lists(st.booleans(), min_size=8, max_size=8))
    def check(lengths, capacity, bulk):
        eb = EpisodesBuffer(CircularPrioritizedTraces(layout(capacity=capacity)))
        t, s, keys_given = eb.traces, 0, 0
        sartsa = "next_action" in t.keys()
        for e, n in enumerate(lengths):
            if bulk[e]:
                cols = dict(state=np.arange(s, s + n + 1), action=np.arange(s, s + n),
                            reward=np.zeros(n, dtype=np.float32), terminal=np.zeros(n, bool))
                if sartsa:
                    cols["next_action"] = s + n
                eb.extend(**cols)
            else:
                eb.push(state=s)
                for k in range(1, n + 1):
                    eb.push(state=s + k, action=s + k - 1, reward=0.0, terminal=k == n)
                if sartsa:
                    eb.push(next_action=s + n)
            keys_given += n + (e > 0)  # a key per step, and per padding row between episodes
            s += n + 1
            keys, prio = t["key"], t["priority"]
            assert len(keys) == len(t["reward"]) and keys[-1] == keys_given - 1
            assert (np.diff(keys) == 1).all()
            ok = eb.sampleable_inds[: len(keys)]
            # a row is padding (priority 0) exactly when it leads from an episode's last state
            assert ((prio == 0) == ~ok).all()
            # a key names its row: set it, find it
            t.set_priority(keys, np.arange(1, len(keys) + 1, dtype=float))
            batch = BatchSampler(64, rng=e).sample(eb)
            assert (batch["next_state"] == batch["state"] + 1).all()
            assert (batch["priority"] == batch["key"] - keys[0] + 1).all()

    check()
