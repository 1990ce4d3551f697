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
    split_lanes,
)


def design_example(capacity=20):
    """state=0, five steps, state=6 (new episode), four steps; reward = next state."""
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


def test_batch_sampler_low_acceptance_falls_back_and_stays_exact(monkeypatch):
    import trajectories._rows as rows

    listed = []
    original = rows._Rows._listed
    monkeypatch.setattr(rows._Rows, "_listed",
                        lambda self, *a: listed.append(a[-1]) or original(self, *a))
    # A sub-env that keeps restarting before its first step: each restart leaves a padding
    # row. Per cycle, 5 padding rows and 1 step: a sampleable share of 1/6 < 0.25.
    lb = split_lanes(CircularArraySARTSTraces(capacity=1000), 1)
    for c in range(40):
        lb.push(state=np.array([100 * c]))
        for k in range(1, 5):
            lb.push(state=np.array([100 * c + 10 * k]), restart=True)
        lb.push(state=np.array([100 * c + 41]), action=np.zeros(1, dtype=np.int64),
                reward=np.ones(1), terminal=np.ones(1, dtype=bool))
    assert lb.n_sampleable == 40 and len(lb) == 239
    batch = BatchSampler(4000, rng=2).sample(lb)
    assert listed == [4000]  # the whole batch came from the listed rows
    assert (batch["next_state"] == batch["state"] + 1).all()
    counts = np.bincount(batch["state"] // 100, minlength=40)
    assert (batch["state"] % 100 == 40).all() and counts.min() > 60 and counts.max() < 145


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
    from trajectories import NStepBatchSampler

    lb = split_lanes(CircularArraySARTSTraces(capacity=40), 2)
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


# -- every sampler on lanes whose rings wrapped -------------------------------------------------


def lanes_and_references(storage, layout):
    """3 lanes (capacity 7 rows each, so the rings wrap) fed episodes of different lengths,
    and one EpisodesBuffer per lane fed the same pushes (the reference)."""
    from trajectories.lanes.per_lane import PerLaneEpisodes
    from trajectories.lanes.rings import RingLanes

    n, cap = 3, 7
    lb = {"rings": RingLanes, "per_lane": PerLaneEpisodes}[storage](layout(capacity=n * cap), n)
    refs = [EpisodesBuffer(layout(capacity=cap)) for _ in range(n)]
    sartsa = "next_action" in lb.keys()
    lengths = (3, 4, 6)  # lane i's episodes have lengths[i] steps
    lb.push(state=np.arange(n) * 1000)
    for r, ref in enumerate(refs):
        ref.push(state=r * 1000)
    for t in range(1, 30):
        states = np.arange(n) * 1000 + t
        starts = np.array([t % (lengths[i] + 1) == 0 for i in range(n)])
        ends = np.array([t % (lengths[i] + 1) == lengths[i] for i in range(n)])
        if sartsa and starts.any():
            lb.push(next_action=states % 7, lanes=starts)
            for i in np.flatnonzero(starts):
                refs[i].push(next_action=states[i] % 7)
        lb.push(state=states, action=states % 7, reward=states.astype(float), terminal=ends,
                episode_start=starts)
        for i, ref in enumerate(refs):
            if starts[i]:
                ref.push(state=states[i])
            else:
                ref.push(state=states[i], action=states[i] % 7, reward=float(states[i]),
                         terminal=ends[i])
    return lb, refs


def by_state(batch, names):
    out = {}
    for i, s in enumerate(batch["state"].reshape(len(batch["state"]), -1)[:, -1].tolist()):
        out.setdefault(s, set()).add(tuple(np.asarray(batch[k][i]).tolist().__repr__()
                                           for k in names))
    return out


LANED = [("rings", CircularArraySARTSTraces), ("per_lane", CircularArraySARTSTraces),
         ("per_lane", CircularArraySARTSATraces)]


@pytest.mark.parametrize("storage, layout", LANED, ids=["rings", "per_lane", "per_lane-sartsa"])
def test_every_sampler_on_wrapped_lanes_matches_one_buffer_per_lane(storage, layout):
    from trajectories import NStepBatchSampler

    lb, refs = lanes_and_references(storage, layout)
    assert lb.lane_lengths() == [len(r) for r in refs] and len(lb) == 21  # wrapped
    names = tuple(lb.keys())
    expected_rows = {}
    for ref in refs:
        for row in ref:
            expected_rows[int(row["state"])] = row
    batch = BatchSampler(3000, rng=0).sample(lb)
    got = by_state(batch, names)
    assert set(got) == set(expected_rows)  # every sampleable row, and only those
    for s, values in got.items():
        assert values == {tuple(repr(np.asarray(expected_rows[s][k]).tolist()) for k in names)}
    counts = np.bincount(np.searchsorted(sorted(expected_rows), batch["state"]))
    assert counts.min() > 3000 / len(expected_rows) * 0.6  # uniform over the rows
    for n, k in ((1, None), (3, None), (2, 2), (4, 3)):
        sampler = NStepBatchSampler(n=n, gamma=0.5, batch_size=2000, stack_size=k, rng=1)
        got = by_state(sampler.sample(lb), names)
        want = {}
        for ref in refs:
            if ref.n_sampleable:
                want.update(by_state(NStepBatchSampler(n=n, gamma=0.5, batch_size=2000,
                                                       stack_size=k, rng=2).sample(ref), names))
        assert got == want
    episodes = EpisodesSampler().sample(lb)
    ref_episodes = [e for ref in refs for e in EpisodesSampler().sample(ref)]
    assert [{k: e[k].tolist() for k in names} for e in episodes] == \
        [{k: e[k].tolist() for k in names} for e in ref_episodes]
    meta = MetaSampler(a=BatchSampler(5, rng=3), b=MultiBatchSampler(BatchSampler(2, rng=4), 3))
    both = meta.sample(lb)
    assert len(both["a"]["state"]) == 5 and [len(b["state"]) for b in both["b"]] == [2, 2, 2]
    assert set(both["a"]["state"].tolist()) <= set(expected_rows)
    assert DummySampler().sample(lb) is lb


def test_episodes_sampler_on_a_device_returns_tensors():
    torch = pytest.importorskip("torch")
    lb, _ = lanes_and_references("rings", CircularArraySARTSTraces)
    episodes = EpisodesSampler(names=("state", "reward"), device="cpu").sample(lb)
    plain = EpisodesSampler(names=("state", "reward")).sample(lb)
    assert len(episodes) == len(plain) > 3
    for e, p in zip(episodes, plain, strict=True):
        assert isinstance(e["state"], torch.Tensor) and e["state"].device.type == "cpu"
        assert e["state"].tolist() == p["state"].tolist()
        assert e["reward"].dtype == torch.float32
    eb = design_example()
    single = EpisodesSampler(device="cpu").sample(eb)
    assert [e["state"].tolist() for e in single] == [[0, 1, 2, 3, 4], [6, 7, 8, 9]]
    with pytest.raises(ValueError, match="device"):
        EpisodesSampler(device="gpu0")
