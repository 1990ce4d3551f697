import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSTraces,
    CircularPrioritizedTraces,
    NormalizedTraces,
    Normalizer,
)


def test_normalizer_matches_numpy_in_batches_and_one_by_one():
    rng = np.random.default_rng(0)
    xs = rng.normal(3.0, 2.0, size=(50, 3))
    a, b = Normalizer(), Normalizer()
    a.append(xs[:7])
    a.append(xs[7:])
    for x in xs:
        b.push(x)
    for n in (a, b):
        assert n.count == 50
        np.testing.assert_allclose(n.mean, xs.mean(axis=0))
        np.testing.assert_allclose(n.std, xs.std(axis=0, ddof=1))
    np.testing.assert_allclose(a.normalize(xs[:2]),
                               (xs[:2] - xs.mean(0)) / (xs.std(0, ddof=1) + 1e-8))


def test_normalizer_before_two_values_and_constant_values():
    n = Normalizer()
    assert n.normalize(np.array([5.0])).tolist() == [5.0]  # nothing seen: identity
    n.push(5.0)
    assert float(n.std) == 1.0
    np.testing.assert_allclose(n.normalize(np.array([5.0, 7.0])), [0.0, 2.0])
    n.push(5.0)
    assert float(n.std) == 0.0
    assert n.normalize(np.array([5.0])).tolist() == [0.0]  # epsilon keeps it finite
    assert np.isfinite(n.normalize(np.array([6.0]))).all()
    assert n.normalize(np.array([1, 2])).dtype == np.float32  # integers come back float32
    with pytest.raises(ValueError):
        Normalizer(epsilon=-1.0)


def filled(capacity=10):
    t = NormalizedTraces(CircularArraySARTSTraces(capacity=capacity, state=(np.float32, (2,))),
                         reward=Normalizer(), state=Normalizer())
    t.push(state=[0.0, 0.0])
    for k in range(1, 5):
        t.push(state=[k, 10.0 * k], action=0, reward=float(k), terminal=False)
    return t


def test_reads_are_normalised_and_storage_stays_raw():
    t = filled()
    states = np.array([[k, 10.0 * k] for k in range(5)])
    rewards = np.array([1.0, 2.0, 3.0, 4.0])
    s_mean, s_std = states.mean(0), states.std(0, ddof=1)
    r_mean, r_std = rewards.mean(), rewards.std(ddof=1)
    assert t["reward"].tolist() == rewards.tolist()  # t[name] is raw
    assert t["state"].tolist() == states[:-1].tolist()
    np.testing.assert_allclose(t[1]["reward"], (2.0 - r_mean) / r_std, rtol=1e-6)
    np.testing.assert_allclose(t[0:2]["next_state"], (states[1:3] - s_mean) / s_std, rtol=1e-6)
    assert t[1]["action"] == 0  # not normalised
    batch = BatchSampler(64, rng=0).sample(t)
    raw_r = batch["reward"] * r_std + r_mean
    np.testing.assert_allclose(raw_r, np.round(raw_r), atol=1e-5)
    np.testing.assert_allclose(batch["next_state"] * s_std + s_mean,
                               batch["state"] * s_std + s_mean + [1.0, 10.0], atol=1e-4)
    assert batch["reward"].dtype == np.float32
    assert t.traces["reward"].tolist() == rewards.tolist()  # nothing written back


def test_multiplex_names_share_one_normaliser_and_padding_is_not_counted():
    t = filled()
    assert t.normalizers["state"] is t.normalizers["next_state"]
    assert t.normalizers["state"].count == 5 and t.normalizers["reward"].count == 4
    t.pad(state=[100.0, 100.0])  # a new episode: zero reward/terminal/action padding
    assert t.normalizers["state"].count == 6 and t.normalizers["reward"].count == 4
    assert float(t.normalizers["reward"].mean) == 2.5


def test_append_feeds_every_value():
    t = NormalizedTraces(CircularArraySARTSTraces(capacity=3), reward=Normalizer())
    t.append(state=np.arange(6), action=np.zeros(5, dtype=np.int64),
             reward=np.arange(5, dtype=np.float32), terminal=np.zeros(5, dtype=bool))
    n = t.normalizers["reward"]
    assert n.count == 5 and float(n.mean) == 2.0  # all pushed values, not just those kept
    assert len(t) == 3


def test_a_failed_push_leaves_statistics_untouched():
    t = filled()
    with pytest.raises(ValueError):
        t.push(state=[1.0, 2.0, 3.0], action=0, reward=1.0, terminal=False)
    assert t.normalizers["state"].count == 5 and t.normalizers["reward"].count == 4


def test_bad_construction():
    base = CircularArraySARTSTraces(capacity=3)
    with pytest.raises(ValueError, match="available traces"):
        NormalizedTraces(base, rewards=Normalizer())
    with pytest.raises(TypeError):
        NormalizedTraces(base, reward=1.0)
    with pytest.raises(ValueError, match="share one stored column"):
        NormalizedTraces(base, state=Normalizer(), next_state=Normalizer())


def test_default_normalisers_and_empty_copy():
    t = NormalizedTraces(CircularArraySARTSTraces(capacity=3))
    assert set(t.normalizers) == {"reward", "state", "next_state"}
    t.push(state=0)
    t.push(state=1, action=0, reward=1.0, terminal=False)
    c = t.empty_copy(capacity=5)
    assert len(c) == 0 and c.capacity == 5 and c.normalizers["state"].count == 0
    assert c.normalizers["state"] is c.normalizers["next_state"]


def test_wraps_prioritised_traces_and_forwards_set_priority():
    t = NormalizedTraces(CircularPrioritizedTraces(CircularArraySARTSTraces(capacity=4)),
                         reward=Normalizer())
    t.push(state=0)
    t.push(state=1, action=0, reward=1.0, terminal=False)
    t.push(state=2, action=0, reward=3.0, terminal=False)
    t.set_priority([0, 1], [0.0, 1.0])
    batch = BatchSampler(8, rng=0).sample(t)
    assert batch["key"].tolist() == [1] * 8
    np.testing.assert_allclose(batch["reward"], (3.0 - 2.0) / np.sqrt(2.0), rtol=1e-6)


def test_in_an_episodes_buffer_padding_is_not_counted():
    from trajectories import EpisodesBuffer

    traces = NormalizedTraces(CircularArraySARTSTraces(capacity=20), reward=Normalizer())
    eb = EpisodesBuffer(traces)
    eb.push(state=0)
    eb.push(state=1, action=0, reward=2.0, terminal=True)
    eb.push(state=5)  # pads reward with a 0.0 that the statistics never see
    eb.push(state=6, action=0, reward=4.0, terminal=False)
    norm = traces.normalizers["reward"]
    assert norm.count == 2 and float(norm.mean) == 3.0
    assert traces["reward"].tolist() == [2.0, 0.0, 4.0]
    batch = BatchSampler(50, rng=0).sample(eb)
    z = 1 / np.sqrt(2)  # (2 - 3) / std([2, 4]) and (4 - 3) / std([2, 4])
    np.testing.assert_allclose(np.abs(batch["reward"]), z, rtol=1e-6)
    assert set(np.sign(batch["reward"]).tolist()) == {-1.0, 1.0}
