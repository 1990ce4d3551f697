import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    DummySampler,
    EpisodesBuffer,
    EpisodesSampler,
    InsertSampleRatioController,
    MetaSampler,
    MultiBatchSampler,
    Trajectory,
)


def design_example(capacity=20):
    """DESIGN §8: state=0, five steps, state=6 (new episode), four steps; reward = next state."""
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=capacity))
    eb.push(state=0)
    for s in range(1, 6):
        eb.push(state=s, action=s % 2, reward=float(s), terminal=s == 5)
    eb.push(state=6)
    for s in range(7, 11):
        eb.push(state=s, action=s % 2, reward=float(s), terminal=False)
    return eb


def bare(n=5):
    t = CircularArraySARTSTraces(capacity=10)
    t.append(state=np.arange(n + 1), action=np.zeros(n, dtype=np.int64),
             reward=np.arange(n, dtype=np.float32), terminal=np.zeros(n, dtype=bool))
    return t


def test_batch_sampler_never_crosses_an_episode_boundary():
    eb = design_example()
    batch = BatchSampler(2000, rng=0).sample(eb)
    assert set(batch) == {"state", "next_state", "action", "reward", "terminal"}
    assert (batch["next_state"] == batch["state"] + 1).all()
    assert (batch["reward"] == batch["next_state"]).all()
    assert set(batch["state"].tolist()) == {0, 1, 2, 3, 4, 6, 7, 8, 9}  # never row 5 (5 -> 6)
    assert batch["terminal"].tolist() == (batch["state"] == 4).tolist()


def test_batch_sampler_is_uniform_over_sampleable_rows():
    eb = design_example()
    counts = np.bincount(BatchSampler(9000, names=("state",), rng=1).sample(eb)["state"],
                         minlength=11)
    ok = np.array([1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0], dtype=bool)
    assert (counts[~ok] == 0).all()
    expected = 9000 / ok.sum()
    chi2 = ((counts[ok] - expected) ** 2 / expected).sum()
    assert chi2 < 26.1  # 8 degrees of freedom, p ~ 0.001


def test_batch_sampler_low_acceptance_falls_back_and_stays_exact():
    # one-step episodes: every other row is a boundary
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=200))
    for e in range(60):
        eb.push(state=10 * e)
        eb.push(state=10 * e + 1, action=0, reward=1.0, terminal=True)
    batch = BatchSampler(3000, rng=2).sample(eb)
    assert (batch["next_state"] == batch["state"] + 1).all()
    counts = np.bincount(batch["state"] // 10, minlength=60)
    assert counts.min() > 20 and counts.max() < 85  # about 50 each


def test_batch_sampler_on_bare_traces_uses_every_row_and_seeds():
    t = bare()
    a = BatchSampler(64, rng=7).sample(t)
    b = BatchSampler(64, rng=np.random.default_rng(7)).sample(t)
    assert all((a[k] == b[k]).all() for k in a)
    assert set(a["state"].tolist()) == {0, 1, 2, 3, 4}
    for v in a.values():
        assert v.flags["C_CONTIGUOUS"] and len(v) == 64


def test_batch_sampler_names_and_errors():
    t = bare()
    batch = BatchSampler(3, names=("reward", "next_state"), rng=0).sample(t)
    assert list(batch) == ["reward", "next_state"]
    with pytest.raises(ValueError, match="batch_size=0"):
        BatchSampler(0)
    with pytest.raises(TypeError):
        BatchSampler(2.5)
    with pytest.raises(TypeError):
        BatchSampler(4, names="state")
    with pytest.raises(ValueError, match="available traces.*state"):
        BatchSampler(4, names=("sate",)).sample(t)
    with pytest.raises(ValueError, match=r"BatchSampler\(batch_size=64\) cannot sample an empty"):
        BatchSampler(64).sample(CircularArraySARTSTraces(capacity=4))
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=4))
    eb.push(state=0)
    with pytest.raises(ValueError, match="empty"):
        BatchSampler(64).sample(eb)


def test_sartsa_row_waiting_for_its_next_action_is_never_sampled():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=10))
    eb.push(state=0)
    for s in (1, 2, 3):
        eb.push(state=s, action=10 + s, reward=1.0, terminal=False)
    batch = BatchSampler(500, rng=0).sample(eb)
    assert set(batch["state"].tolist()) == {0, 1}
    assert (batch["next_action"] == batch["action"] + 1).all()


def test_device_cpu_returns_torch_tensors():
    torch = pytest.importorskip("torch")
    batch = BatchSampler(8, rng=0, device="cpu").sample(design_example())
    assert all(isinstance(v, torch.Tensor) for v in batch.values())
    assert batch["state"].dtype == torch.int64 and batch["reward"].dtype == torch.float32
    assert batch["terminal"].dtype == torch.bool and batch["state"].device.type == "cpu"
    assert (batch["next_state"] == batch["state"] + 1).all()
    with pytest.raises(ValueError, match="device"):
        BatchSampler(8, device="gpu0")


def test_dummy_sampler_returns_the_container():
    eb = design_example()
    assert DummySampler().sample(eb) is eb


def test_meta_and_multi_batch_samplers_count_one_controller_sample():
    sampler = MetaSampler(policy=BatchSampler(2, rng=0),
                          critic=MultiBatchSampler(BatchSampler(3, rng=1), 4))
    traj = Trajectory(CircularArraySARTSTraces(capacity=20), sampler=sampler,
                      controller=InsertSampleRatioController(ratio=1.0, threshold=3))
    traj.push(state=0)
    for s in (1, 2, 3):
        traj.push(state=s, action=0, reward=1.0, terminal=False)
    batches = list(traj)
    assert len(batches) == 1 and traj.controller.n_sampled == 1
    (batch,) = batches
    assert set(batch) == {"policy", "critic"}
    assert len(batch["policy"]["state"]) == 2
    assert len(batch["critic"]) == 4 and all(len(b["state"]) == 3 for b in batch["critic"])
    with pytest.raises(ValueError, match="n=0"):
        MultiBatchSampler(BatchSampler(2), 0)
    with pytest.raises(TypeError):
        MetaSampler(policy=3)
    with pytest.raises(ValueError):
        MetaSampler()


def test_episodes_sampler_oldest_first_with_current_episode():
    eb = design_example()
    episodes = EpisodesSampler(names=("state", "next_state", "reward")).sample(eb)
    assert [e["state"].tolist() for e in episodes] == [[0, 1, 2, 3, 4], [6, 7, 8, 9]]
    assert episodes[0]["next_state"].tolist() == [1, 2, 3, 4, 5]
    assert episodes[1]["reward"].tolist() == [7.0, 8.0, 9.0, 10.0]
    eb.push(state=20)  # a new episode without a step yet
    episodes = EpisodesSampler().sample(eb)
    assert len(episodes) == 3 and episodes[2]["state"].shape == (0,)


def test_episodes_sampler_first_episode_cut_by_the_ring():
    eb = design_example(capacity=7)  # keeps rows of states 3..9
    episodes = EpisodesSampler(names=("state",)).sample(eb)
    assert [e["state"].tolist() for e in episodes] == [[3, 4], [6, 7, 8, 9]]


def test_episodes_sampler_on_bare_traces_splits_at_terminals():
    t = CircularArraySARTSTraces(capacity=10)
    t.append(state=np.arange(6), action=np.zeros(5, dtype=np.int64),
             reward=np.ones(5, dtype=np.float32),
             terminal=np.array([False, True, False, False, True]))
    assert [e["state"].tolist() for e in EpisodesSampler().sample(t)] == [[0, 1], [2, 3, 4]]
    assert EpisodesSampler().sample(CircularArraySARTSTraces(capacity=3)) == []


def test_direct_listing_of_sampleable_rows_when_acceptance_is_low(monkeypatch):
    import trajectories._rows as rows

    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=200))
    for e in range(60):
        eb.push(state=10 * e)
        eb.push(state=10 * e + 1, action=0, reward=1.0, terminal=True)
    monkeypatch.setattr(rows, "_MIN_ACCEPTANCE", 0.9)  # force the O(n) path
    a = BatchSampler(3000, rng=2).sample(eb)
    assert (a["next_state"] == a["state"] + 1).all()
    counts = np.bincount(a["state"] // 10, minlength=60)
    assert counts.min() > 20 and counts.max() < 85
    b = BatchSampler(3000, rng=2).sample(eb)
    assert (a["state"] == b["state"]).all()


def test_samplers_on_lanes_of_a_vector_env():
    lanes = pytest.importorskip("trajectories.lanes")
    from trajectories import NStepBatchSampler

    lb = lanes.LanedEpisodesBuffer(CircularArraySARTSTraces(capacity=40), n_lanes=2)
    lb.push(state=np.array([100, 200]))
    for t in range(1, 8):  # lane 0: an episode of 4 steps, then one of 2; lane 1: 7 steps
        lb.push(state=np.array([100 + t, 200 + t]), action=np.array([t, t]),
                reward=np.array([float(t), float(t)]), terminal=np.array([t == 4, False]),
                episode_start=np.array([t == 5, False]))
    batch = BatchSampler(1000, rng=0).sample(lb)
    assert (batch["next_state"] == batch["state"] + 1).all()  # never across lanes or episodes
    assert set(batch["state"].tolist()) == {100, 101, 102, 103, 105, 106, *range(200, 207)}
    nstep = NStepBatchSampler(n=3, gamma=1.0, batch_size=1000, stack_size=2, rng=1).sample(lb)
    got = {tuple(s): (r, tuple(s2)) for s, r, s2 in
           zip(nstep["state"].tolist(), nstep["reward"].tolist(), nstep["next_state"].tolist(),
               strict=True)}
    assert got[(101, 102)] == (3.0 + 4.0, (103, 104))  # cut at lane 0's first episode end
    assert got[(205, 206)] == (7.0, (206, 207))  # cut at lane 1's newest row
    assert (105, 106) in got and (104, 105) not in got and (106, 200) not in got
    episodes = EpisodesSampler(names=("state",)).sample(lb)
    assert [e["state"].tolist() for e in episodes] == [[100, 101, 102, 103], [105, 106],
                                                       list(range(200, 207))]
