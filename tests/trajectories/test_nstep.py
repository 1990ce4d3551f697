import numpy as np
import pytest

from trajectories import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    EpisodesBuffer,
    NormalizedTraces,
    Normalizer,
    NStepBatchSampler,
)

# The worked example: state=0, five steps, state=6 (new episode), four steps. Rewards: r = s + 1
# for the row of state s; the terminal is on the row of state 4.
# n=3, gamma=0.5, by hand:   state: (reward, next_state, terminal)
EXPECTED = {
    0: (1 + 0.5 * 2 + 0.25 * 3, 3, False),
    1: (2 + 0.5 * 3 + 0.25 * 4, 4, False),
    2: (3 + 0.5 * 4 + 0.25 * 5, 5, True),
    3: (4 + 0.5 * 5, 5, True),  # cut at the episode end: ns = 2
    4: (5.0, 5, True),  # ns = 1
    6: (7 + 0.5 * 8 + 0.25 * 9, 9, False),
    7: (8 + 0.5 * 9 + 0.25 * 10, 10, False),
    8: (9 + 0.5 * 10, 10, False),  # the episode still being collected: cut at its newest row
    9: (10.0, 10, False),
}


def design_example(traces=None):
    eb = EpisodesBuffer(traces if traces is not None else CircularArraySARTSTraces(capacity=20))
    eb.push(state=0)
    for s in range(1, 6):
        eb.push(state=s, action=s, reward=float(s), terminal=s == 5)
    eb.push(state=6)
    for s in range(7, 11):
        eb.push(state=s, action=s, reward=float(s), terminal=False)
    return eb


def test_nstep_values_at_and_across_episode_ends():
    batch = NStepBatchSampler(n=3, gamma=0.5, batch_size=500, rng=0).sample(design_example())
    assert set(batch) == {"state", "next_state", "action", "reward", "terminal"}
    assert set(batch["state"].tolist()) == set(EXPECTED)
    names = ("state", "reward", "next_state", "terminal", "action")
    for s, r, s2, done, a in zip(*(batch[k].tolist() for k in names), strict=True):
        assert (r, s2, done) == EXPECTED[s]
        assert a == s + 1  # every other trace at row i
    assert batch["reward"].dtype == np.float32


def test_n_one_is_the_plain_transition():
    batch = NStepBatchSampler(n=1, gamma=0.9, batch_size=200, rng=1).sample(design_example())
    assert (batch["next_state"] == batch["state"] + 1).all()
    assert (batch["reward"] == batch["state"] + 1).all()


def test_gamma_zero_and_one():
    eb = design_example()
    b0 = NStepBatchSampler(n=3, gamma=0.0, batch_size=100, rng=2).sample(eb)
    assert (b0["reward"] == b0["state"] + 1).all()
    b1 = NStepBatchSampler(n=3, gamma=1.0, batch_size=100, rng=2).sample(eb)
    assert b1["reward"][b1["state"] == 3].tolist() == [9.0] * int((b1["state"] == 3).sum())


def test_stacked_frames_end_at_their_rows():
    sampler = NStepBatchSampler(n=3, gamma=0.5, batch_size=300, stack_size=2, rng=3)
    batch = sampler.sample(design_example())
    assert batch["state"].shape == (300, 2) and batch["next_state"].shape == (300, 2)
    # only rows with at least 2 states in their episode
    assert set(batch["state"][:, -1].tolist()) == {1, 2, 3, 4, 7, 8, 9}
    for window, next_window, r in zip(batch["state"].tolist(), batch["next_state"].tolist(),
                                      batch["reward"].tolist(), strict=True):
        s = window[-1]
        assert window == [s - 1, s]
        assert next_window == [EXPECTED[s][1] - 1, EXPECTED[s][1]]
        assert r == EXPECTED[s][0]


def test_stacking_with_frames_and_rows_cut_by_the_ring():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=6, state=(np.float32, (2,))))
    eb.push(state=[0, 0])
    for s in range(1, 12):
        eb.push(state=[s, -s], action=0, reward=1.0, terminal=False)
    # stored rows: states 5..10 (step numbers 6..11), the ring cut the episode's start
    batch = NStepBatchSampler(n=1, gamma=1.0, batch_size=200, stack_size=3, rng=4).sample(eb)
    assert batch["state"].shape == (200, 3, 2)
    assert set(batch["state"][:, -1, 0].tolist()) == {7.0, 8.0, 9.0, 10.0}
    last = batch["state"][:, -1, 0]
    np.testing.assert_array_equal(batch["state"][:, 0, 0], last - 2)
    np.testing.assert_array_equal(batch["next_state"][:, :, 1], -(last[:, None] + [-1, 0, 1]))


def test_rare_admissible_rows_are_still_found():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=500))
    for e in range(100):  # 100 one-step episodes ...
        eb.push(state=100 + e)
        eb.push(state=0, action=0, reward=0.0, terminal=True)
    eb.push(state=1)  # ... and one of four steps
    for s in range(2, 6):
        eb.push(state=s, action=0, reward=1.0, terminal=False)
    batch = NStepBatchSampler(n=1, gamma=1.0, batch_size=50, stack_size=4, rng=5).sample(eb)
    assert set(batch["state"][:, -1].tolist()) == {4}


def test_right_hand_multiplex_names_come_from_the_last_row():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=20))
    eb.push(state=0)
    for s in range(1, 5):  # the action taken in state s - 1 is 100 + s - 1
        eb.push(state=s, action=100 + s - 1, reward=1.0, terminal=s == 4)
    eb.push(next_action=999)  # the action planned at the final state
    batch = NStepBatchSampler(n=3, gamma=1.0, batch_size=300, rng=6).sample(eb)
    expected_next_action = {0: 103, 1: 999, 2: 999, 3: 999}
    expected_reward = {0: 3.0, 1: 3.0, 2: 2.0, 3: 1.0}
    for s, a, a2, r in zip(*(batch[k].tolist() for k in
                             ("state", "action", "next_action", "reward")), strict=True):
        assert a == 100 + s
        assert a2 == expected_next_action[s] and r == expected_reward[s]


def test_nstep_sum_uses_normalised_rewards():
    traces = NormalizedTraces(CircularArraySARTSTraces(capacity=20), reward=Normalizer())
    eb = design_example(traces)
    norm = traces.normalizers["reward"]
    raw = np.array([1, 2, 3, 4, 5, 7, 8, 9, 10], dtype=np.float64)
    z = {s: (s + 1 - raw.mean()) / (raw.std(ddof=1) + 1e-8) for s in (0, 1, 2, 3, 4, 6, 7, 8, 9)}
    assert norm.count == 9
    batch = NStepBatchSampler(n=2, gamma=0.5, batch_size=200, rng=7).sample(eb)
    for s, r in zip(batch["state"].tolist(), batch["reward"].tolist(), strict=True):
        ends_here = s in (4, 9)
        want = z[s] if ends_here else z[s] + 0.5 * z[s + 1]
        assert r == pytest.approx(want, rel=1e-5)


def test_bare_traces_cut_at_terminals():
    t = CircularArraySARTSTraces(capacity=10)
    t.append(state=np.arange(6), action=np.zeros(5, dtype=np.int64),
             reward=np.arange(1, 6, dtype=np.float32),
             terminal=np.array([False, True, False, False, False]))
    batch = NStepBatchSampler(n=3, gamma=1.0, batch_size=200, rng=8).sample(t)
    expected = {0: (3.0, 2, True), 1: (2.0, 2, True), 2: (12.0, 5, False), 3: (9.0, 5, False),
                4: (5.0, 5, False)}
    for s, r, s2, d in zip(*(batch[k].tolist() for k in
                             ("state", "reward", "next_state", "terminal")), strict=True):
        assert (r, s2, d) == expected[s]


def test_seeded_and_on_device():
    eb = design_example()
    a = NStepBatchSampler(n=2, gamma=0.9, batch_size=16, rng=9).sample(eb)
    b = NStepBatchSampler(n=2, gamma=0.9, batch_size=16, rng=9).sample(eb)
    assert all((a[k] == b[k]).all() for k in a)
    torch = pytest.importorskip("torch")
    c = NStepBatchSampler(n=2, gamma=0.9, batch_size=16, rng=9, device="cpu").sample(eb)
    assert isinstance(c["reward"], torch.Tensor)
    np.testing.assert_array_equal(c["reward"].numpy(), a["reward"])


def test_validation():
    with pytest.raises(ValueError, match="n=0"):
        NStepBatchSampler(n=0, gamma=0.9)
    with pytest.raises(ValueError, match="gamma"):
        NStepBatchSampler(n=3, gamma=1.5)
    with pytest.raises(ValueError, match="stack_size=0"):
        NStepBatchSampler(n=3, gamma=0.9, stack_size=0)
    with pytest.raises(ValueError, match="batch_size=-1"):
        NStepBatchSampler(n=3, gamma=0.9, batch_size=-1)
    with pytest.raises(ValueError, match="cannot sample an empty"):
        NStepBatchSampler(n=3, gamma=0.9).sample(CircularArraySARTSTraces(capacity=3))


# -- lanes: n-step cuts and stacked windows stay in their lane and episode --------------------


def per_lane(traces, n):
    from trajectories.lanes.per_lane import PerLaneEpisodes

    return PerLaneEpisodes(traces, n)


def rings(traces, n):
    from trajectories.lanes.rings import RingLanes

    return RingLanes(traces, n)


def nstep_by_state(batch):
    return {s: (r, s2) for s, r, s2 in zip(*(batch[k].tolist() for k in
                                               ("state", "reward", "next_state")), strict=True)}


def test_nstep_on_sartsa_lanes_stops_at_each_lanes_newest_complete_row():
    from trajectories import Trajectory

    t = Trajectory(CircularArraySARTSATraces(capacity=100), n_lanes=2)
    t.push(state=np.array([0, 100]))
    for s in (1, 2, 3):
        t.push(state=np.array([s, 100 + s]), action=np.array([0, 0]),
               reward=np.array([1.0, 1000.0]), terminal=np.array([False, False]))
    batch = NStepBatchSampler(n=3, gamma=1.0, batch_size=64, rng=0).sample(t.container)
    # Lane 0 holds rows 0 -> 1 and 1 -> 2; row 2 -> 3 waits for the action at state 3, so
    # ns = min(3, rows ahead) is 2 for state 0: reward 1 + 1, next_state 2 (never lane 1's 1000).
    assert nstep_by_state(batch) == {0: (2.0, 2), 1: (1.0, 2), 100: (2000.0, 102),
                                     101: (1000.0, 102)}
    assert set(batch["next_action"].tolist()) == {0}
    half = NStepBatchSampler(n=3, gamma=0.5, batch_size=64, rng=0).sample(t.container)
    assert nstep_by_state(half)[0] == (1.5, 2)


def test_nstep_on_one_sartsa_buffer_agrees_with_a_lane():
    eb = EpisodesBuffer(CircularArraySARTSATraces(capacity=100))
    eb.push(state=0)
    for s in (1, 2, 3):
        eb.push(state=s, action=0, reward=1.0, terminal=False)
    batch = NStepBatchSampler(n=3, gamma=1.0, batch_size=64, rng=0).sample(eb)
    assert nstep_by_state(batch) == {0: (2.0, 2), 1: (1.0, 2)}


@pytest.mark.parametrize("make, layout", [
    (rings, CircularArraySARTSTraces), (per_lane, CircularArraySARTSTraces),
    (per_lane, CircularArraySARTSATraces)], ids=["rings", "per_lane", "per_lane-sartsa"])
def test_stacked_windows_never_mix_lanes_once_a_ring_wrapped(make, layout):
    lb = make(layout(capacity=8), 2)  # 4 rows a lane
    lb.push(state=np.array([0, 100]))
    for t in range(1, 11):  # one 10-step episode per lane: both rings wrap
        lb.push(state=np.array([t, 100 + t]), action=np.zeros(2, dtype=np.int64),
                reward=np.ones(2), terminal=np.zeros(2, dtype=bool))
    batch = NStepBatchSampler(n=1, gamma=0.9, batch_size=400, stack_size=3, rng=0).sample(lb)
    windows = {tuple(w) for w in batch["state"].tolist()}
    next_windows = {tuple(w) for w in batch["next_state"].tolist()}
    if layout is CircularArraySARTSTraces:  # lane 0 keeps states 6..10, lane 1 106..110
        assert windows == {(6, 7, 8), (7, 8, 9), (106, 107, 108), (107, 108, 109)}
        assert next_windows == {(7, 8, 9), (8, 9, 10), (107, 108, 109), (108, 109, 110)}
    else:  # SARTSA: 4 complete rows and the one awaiting its action: states 5..10
        assert windows == {(5, 6, 7), (6, 7, 8), (105, 106, 107), (106, 107, 108)}
        assert next_windows == {(6, 7, 8), (7, 8, 9), (106, 107, 108), (107, 108, 109)}
    nstep = NStepBatchSampler(n=3, gamma=1.0, batch_size=400, stack_size=2, rng=1).sample(lb)
    for w, w2, r in zip(nstep["state"].tolist(), nstep["next_state"].tolist(),
                        nstep["reward"].tolist(), strict=True):
        assert w[1] == w[0] + 1 and w2[1] == w2[0] + 1 and w2[1] - w[1] == r


def test_stacked_windows_on_one_wrapped_buffer_stay_in_their_episode():
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=6))
    eb.push(state=0)
    for s in range(1, 8):  # an episode of 7 steps, then one of 2: keeps states 5..7 | 20..22
        eb.push(state=s, action=0, reward=1.0, terminal=s == 7)
    eb.push(state=20)
    for s in (21, 22):
        eb.push(state=s, action=0, reward=1.0, terminal=False)
    assert eb.traces["state"].tolist() == [4, 5, 6, 7, 20, 21]
    batch = NStepBatchSampler(n=2, gamma=1.0, batch_size=300, stack_size=2, rng=2).sample(eb)
    assert {tuple(w) for w in batch["state"].tolist()} == {(4, 5), (5, 6), (20, 21)}
    got = {tuple(w): (r, tuple(w2)) for w, r, w2 in zip(
        batch["state"].tolist(), batch["reward"].tolist(), batch["next_state"].tolist(),
        strict=True)}
    assert got == {(4, 5): (2.0, (6, 7)), (5, 6): (1.0, (6, 7)), (20, 21): (1.0, (21, 22))}


def _games_like_lanes(make, layout):
    """Three lanes of 8 rows, episodes of uneven lengths and every ring wrapped; SARTS with a
    legal-action mask multiplexed with the states (as a game's). Rewards are small whole
    numbers, so that every n-step sum at gamma 0.5 is exact."""
    sartsa = layout is CircularArraySARTSATraces
    masks = {} if sartsa else {"legal_actions_mask": (bool, (3,))}
    lb = make(layout(capacity=24, state=(np.int64, ()), **masks), 3)
    first = {} if sartsa else {"legal_actions_mask": np.ones((3, 3), bool)}
    lb.push(state=np.array([0, 1000, 2000]), **first)
    for k in range(1, 31):
        ends = np.array([k % 7 == 0, k % 4 == 0, k % 11 == 0])
        mask = {} if sartsa else {
            "legal_actions_mask": np.arange(3)[None] <= (k + np.arange(3))[:, None] % 3}
        lb.push(state=np.array([0, 1000, 2000]) + k, action=np.full(3, k % 3),
                reward=((k + np.arange(3)) % 5).astype(float), terminal=ends, **mask)
        if sartsa:
            lb.push(next_action=np.full(3, (k + 1) % 3), lanes=ends)
        if ends.any():
            lb.push(state=np.array([0, 1000, 2000]) + 100 * k, lanes=ends, **first)
    return lb


def _nstep_row_by_row(container, idx, n, gamma, names):
    """The n-step batch at rows ``idx``, one row and one name at a time (no index array is
    shared between two reads)."""
    right = {s[1] for s in container.slots if len(s) == 2} | {"terminal"}
    out = {name: [] for name in names}
    for i in idx.tolist():
        ns = max(min(n, int(container.rows_ahead_at(np.array([i]))[0])), 1)
        for name in names:
            if name == "reward":
                total = sum(float(container.take("reward", np.array([i + k]))[0]) * gamma ** k
                            for k in range(ns))
                out[name].append(np.float32(total))
            else:
                at = i + ns - 1 if name in right else i
                out[name].append(container.take(name, np.array([at]))[0])
    return {name: np.array(values) for name, values in out.items()}


@pytest.mark.parametrize("make, layout", [
    (rings, CircularArraySARTSTraces), (per_lane, CircularArraySARTSTraces),
    (per_lane, CircularArraySARTSATraces)], ids=["rings", "per_lane", "per_lane-sartsa"])
def test_nstep_batches_on_wrapped_lanes_equal_the_rows_read_one_by_one(make, layout):
    from trajectories._rows import _Rows

    lb = _games_like_lanes(make, layout)
    assert lb.lane_lengths() == [8, 8, 8]  # every lane's ring wrapped (30 steps each)
    names = ("state", "next_state", "action", "reward", "terminal")
    names += (("next_action",) if layout is CircularArraySARTSATraces
              else ("next_legal_actions_mask",))
    sampler = NStepBatchSampler(n=3, gamma=0.5, batch_size=256, names=names, rng=7)
    batch = sampler.sample(lb)
    idx = _Rows("same draw", np.random.default_rng(7)).uniform(lb, 256)  # the same rng: rows
    expected = _nstep_row_by_row(lb, idx, 3, 0.5, names)
    assert list(batch) == list(names)
    for name in names:
        assert batch[name].dtype == expected[name].dtype, name
        assert batch[name].tolist() == expected[name].tolist(), name
    # rows of 1, 2 and 3 steps (cut by an episode's end or a lane's newest row) are drawn
    assert set(np.minimum(3, lb.rows_ahead_at(idx)).tolist()) == {1, 2, 3}
    assert batch["terminal"].any() and not batch["terminal"].all()


def test_nstep_batches_locate_lanes_once_per_index_array():
    lb = _games_like_lanes(per_lane, CircularArraySARTSTraces)
    located = []
    lane_of = lb.lane_of
    lb.lane_of = lambda idx: located.append(np.shape(idx)) or lane_of(idx)
    names = ("state", "next_state", "action", "reward", "terminal", "next_legal_actions_mask")
    NStepBatchSampler(n=3, gamma=0.5, batch_size=64, names=names, rng=0).sample(lb)
    # the draw's candidates, the drawn rows (rows ahead, then every name at them), the rows
    # the n steps end at (every right-hand name), the rewards' window: four lookups
    assert len(located) == 4 and located[1:] == [(64,), (64,), (64 * 3,)]


@pytest.mark.parametrize("n, gamma", [(2, 0.99), (5, 0.9), (3, 1.0), (4, 0.0)])
def test_nstep_rewards_are_the_masked_discounted_sums_bit_for_bit(n, gamma):
    from trajectories._rows import _Rows

    rng = np.random.default_rng(n)
    lb = per_lane(CircularArraySARTSTraces(capacity=30), 2)
    lb.push(state=np.zeros(2))
    for k in range(1, 41):  # both lanes' rings wrapped, episodes of several lengths
        lb.push(state=np.full(2, k), action=np.zeros(2, dtype=np.int64),
                reward=rng.standard_normal(2).astype(np.float32),
                terminal=np.array([k % 6 == 0, k % 9 == 0]))
    batch = NStepBatchSampler(n=n, gamma=gamma, batch_size=200, names=("reward",),
                              rng=11).sample(lb)
    idx = _Rows("same draw", np.random.default_rng(11)).uniform(lb, 200)
    ahead = np.arange(n)
    ns = np.maximum(np.minimum(n, lb.rows_ahead_at(idx)), 1)
    r = lb.take("reward", np.minimum(idx[:, None] + ahead, len(lb) - 1))
    expected = (r * np.where(ahead < ns[:, None], gamma**ahead, 0.0)).sum(axis=1)
    assert batch["reward"].dtype == np.float32
    assert batch["reward"].tobytes() == expected.astype(np.float32).tobytes()
    assert len(set(ns.tolist())) > 1
