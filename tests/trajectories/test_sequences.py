"""Sequences for recurrent learners: exact chunks and windows, a property over random pushes,
episode ends, ring wraps and lanes, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectories import (
    BatchSampler,
    CircularArraySARTSTraces,
    RolloutChunker,
    SequenceSampler,
    Trajectory,
    chop_into_sequences,
)

STATE = {"recurrent_state": (np.float32, (2,))}


# ---- exact ---------------------------------------------------------------------------------


def test_chunking_cuts_at_episode_changes_and_the_maximum_length():
    out = chop_into_sequences(np.array([1, 1, 5, 5, 5, 5]),
                              {"features": np.array([4, 4, 8, 8, 8, 8])}, max_seq_len=3,
                              state=np.arange(6) * 10)
    assert out["seq_lens"].tolist() == [2, 3, 1]
    assert out["features"].reshape(-1).tolist() == [4, 4, 0, 8, 8, 8, 8, 0, 0]
    assert out["initial_state"].tolist() == [0, 20, 50]  # rows 0, 2 and 5
    assert out["mask"].astype(int).tolist() == [[1, 1, 0], [1, 1, 1], [1, 0, 0]]
    assert out["is_first"].astype(int).tolist() == [[1, 0, 0], [1, 0, 0], [0, 0, 0]]
    assert out["rows"].tolist() == [[0, 1, -1], [2, 3, 4], [5, -1, -1]]


def _one_episode(steps=6, then=0):
    """One episode of ``steps`` steps (rewards 1..steps), then ``then`` steps of a second."""
    t = Trajectory(CircularArraySARTSTraces(capacity=32, extra=STATE))
    t.push(state=0)
    for s in range(1, steps + 1):
        t.push(state=s, action=0, reward=float(s), terminal=s == steps,
               recurrent_state=np.full(2, 10.0 * s, np.float32))
    if then:
        t.push(state=100)
        for s in range(1, then + 1):
            t.push(state=100 + s, action=0, reward=100.0 + s, terminal=False,
                   recurrent_state=np.full(2, 1000.0 + s, np.float32))
    return t


def test_replay_windows_of_one_episode_padded_or_dropped_never_into_the_next():
    t = _one_episode(then=4)
    padded = SequenceSampler(3, period=2, names=("reward",)).windows(t.container)
    first = [w for w in padded if w["reward"][0] < 100]
    assert [w["reward"].tolist() for w in first] == [[1, 2, 3], [3, 4, 5], [5, 6, 0]]
    assert [w["mask"].astype(int).tolist() for w in first] == [[1, 1, 1], [1, 1, 1], [1, 1, 0]]
    assert [int(w["seq_lens"]) for w in first] == [3, 3, 2]
    # The stored state of the first row, zero at the episode's first step.
    assert [w["initial_state"].tolist() for w in first] == [[0, 0], [30, 30], [50, 50]]
    assert [w["is_first"].astype(int).tolist() for w in first] == [[1, 0, 0], [0, 0, 0],
                                                                   [0, 0, 0]]
    dropped = SequenceSampler(3, period=2, pad=False, names=("reward",)).windows(t.container)
    assert [w["reward"].tolist() for w in dropped if w["reward"][0] < 100] == [[1, 2, 3],
                                                                              [3, 4, 5]]
    # The running second episode: 4 stored steps, windows from its steps 1 and 3.
    assert [w["reward"].tolist() for w in padded if w["reward"][0] > 100] == [
        [101, 102, 103], [103, 104, 0]]


def test_burn_in_needs_a_step_after_it_and_sets_the_default_period():
    t = _one_episode()
    sampler = SequenceSampler(4, burn_in=2, names=("reward",))
    assert sampler.period == 2
    # Windows from steps 1, 3, 5: the one from 5 has 2 real steps, none after the burn-in.
    assert [w["reward"].tolist() for w in sampler.windows(t.container)] == [[1, 2, 3, 4],
                                                                           [3, 4, 5, 6]]


def test_sampled_windows_are_drawn_among_the_windows_uniformly():
    t = _one_episode()
    sampler = SequenceSampler(3, batch_size=3000, period=2, names=("reward",), rng=0)
    batch = sampler.sample(t.container)
    firsts = batch["reward"][:, 0]
    counts = np.bincount(firsts.astype(int), minlength=7)[[1, 3, 5]]
    assert counts.sum() == 3000 and counts.min() > 900
    assert batch["mask"].sum() == batch["seq_lens"].sum()


def test_chunker_on_a_trajectory_starts_each_chunk_from_its_first_rows_stored_state():
    t = _one_episode(steps=5, then=3)
    chunks = RolloutChunker(2, names=("reward",)).sample(t.container)
    assert chunks["reward"].tolist() == [[1, 2], [3, 4], [5, 0], [101, 102], [103, 0]]
    assert chunks["initial_state"][:, 0].tolist() == [10, 30, 50, 1001, 1003]
    assert chunks["is_first"][:, 0].tolist() == [True, False, False, True, False]
    assert chunks["rows"].tolist() == [[0, 1], [2, 3], [4, -1], [6, 7], [8, -1]]


def test_both_give_torch_tensors_on_a_device():
    torch = pytest.importorskip("torch")
    t = _one_episode()
    for sampler in (SequenceSampler(3, batch_size=2, rng=0, device="cpu"),
                    RolloutChunker(4, device="cpu")):
        batch = sampler.sample(t.container)
        assert all(isinstance(v, torch.Tensor) for v in batch.values())
        assert batch["mask"].dtype == torch.bool and batch["state"].dim() == 2


# ---- the property -------------------------------------------------------------------------


def _code(lane, episode, step):
    """A state's value: which lane, which episode of it, which state of the episode."""
    return lane * 1_000_000 + episode * 1_000 + step


def _decode(value):
    value = np.asarray(value, dtype=np.int64)
    return value // 1_000_000, value // 1_000 % 1_000, value % 1_000


def _filled(n_lanes, capacity, ends):
    """A trajectory of ``n_lanes`` lanes (none: one env) after one act per entry of ``ends``
    (per lane: the step ends its episode); a lane whose episode ended starts a new one at the
    next act. The stored state of each step is its source state's code (nonzero everywhere,
    also at episode starts)."""
    laned = n_lanes > 1
    t = Trajectory(CircularArraySARTSTraces(capacity, extra=STATE),
                   n_lanes=n_lanes if laned else None)
    episode, step, ended = [0] * n_lanes, [0] * n_lanes, [False] * n_lanes
    first = np.array([_code(lane, 0, 0) for lane in range(n_lanes)])
    t.push(state=first if laned else int(first[0]))
    for act in ends:
        starts = np.array(ended)
        states, memory = [], []
        for lane in range(n_lanes):
            if ended[lane]:
                episode[lane], step[lane], ended[lane] = episode[lane] + 1, 0, False
            else:
                memory.append(_code(lane, episode[lane], step[lane]))
                step[lane] += 1
                ended[lane] = bool(act[lane])
            if starts[lane]:
                memory.append(0)
            states.append(_code(lane, episode[lane], step[lane]))
        row = dict(state=np.array(states), action=np.zeros(n_lanes, np.int64),
                   reward=np.zeros(n_lanes, np.float32), terminal=np.array(ended),
                   recurrent_state=np.repeat(np.array(memory, np.float32)[:, None], 2, 1))
        if laned:
            t.push(**row, episode_start=starts) if starts.any() else t.push(**row)
        elif starts[0]:
            t.push(state=int(states[0]))
        else:
            t.push(**{k: v[0] for k, v in row.items()})
    return t


def _stored_steps(container):
    """Per (lane, episode): the stored complete steps' source codes, in order (read from the
    columns, not from the samplers' bookkeeping)."""
    rows = np.flatnonzero(container.is_sampleable_at(np.arange(len(container))))
    states = container.take("state", rows)
    episodes: dict = {}
    for value in states.tolist():
        lane, episode, _ = _decode(value)
        episodes.setdefault((int(lane), int(episode)), []).append(int(value))
    return episodes


def _check_window(window_states, mask, is_first, initial, seq_len, zero_at_start=True):
    real = window_states[mask]
    assert len(real) == seq_len == mask.sum()
    assert mask[:seq_len].all() and not mask[seq_len:].any()  # padding only at the end
    assert np.array_equal(np.diff(real), np.ones(len(real) - 1))  # consecutive steps
    lane, episode, step = _decode(real)
    assert len(set(lane.tolist())) == 1 and len(set(episode.tolist())) == 1
    assert not is_first[1:].any()
    assert bool(is_first[0]) == (step[0] == 0)
    # The stored state of the first row (a step's stored state is its source state's code),
    # zero where that row starts an episode when the sampler zeroes it there.
    assert initial[0] == (0 if step[0] == 0 and zero_at_start else real[0])


@settings(max_examples=60, deadline=None)
@given(n_lanes=st.integers(1, 3), capacity=st.integers(6, 30),
       length=st.integers(1, 5), burn_in=st.integers(0, 4), period=st.integers(1, 4),
       pad=st.booleans(), data=st.data())
def test_windows_stay_inside_one_episode_of_one_lane_and_start_from_the_stored_state(
        n_lanes, capacity, length, burn_in, period, pad, data):
    burn_in = min(burn_in, length - 1)
    acts = data.draw(st.integers(1, 60))
    ends = data.draw(st.lists(st.lists(st.booleans(), min_size=n_lanes, max_size=n_lanes),
                              min_size=acts, max_size=acts))
    t = _filled(n_lanes, capacity, ends)
    sampler = SequenceSampler(length, batch_size=16, burn_in=burn_in, period=period, pad=pad,
                              rng=0)
    windows = sampler.windows(t.container)
    expected = set()
    for codes in _stored_steps(t.container).values():
        for i, code in enumerate(codes):
            if code % 1_000 % period:  # steps 1, 1 + period, ... (step numbers from 1)
                continue
            window = tuple(codes[i:i + length])
            if len(window) == length or (pad and len(window) > burn_in):
                expected.add(window)
    got = set()
    for w in windows:
        _check_window(w["state"], w["mask"], w["is_first"], w["initial_state"], w["seq_lens"])
        got.add(tuple(w["state"][w["mask"]].tolist()))
    assert got == expected
    if windows:
        batch = sampler.sample(t.container)
        assert batch["mask"].sum() == batch["seq_lens"].sum()
        for i in range(16):
            _check_window(batch["state"][i], batch["mask"][i], batch["is_first"][i],
                          batch["initial_state"][i], batch["seq_lens"][i])
            assert tuple(batch["state"][i][batch["mask"][i]].tolist()) in expected


@settings(max_examples=60, deadline=None)
@given(n_lanes=st.integers(1, 3), capacity=st.integers(6, 40), length=st.integers(1, 8),
       burn_in=st.integers(0, 4), period=st.integers(1, 9), pad=st.booleans(),
       seed=st.integers(0, 3), data=st.data())
def test_windows_drawn_with_the_starts_listed_are_those_drawn_by_plain_rejection(
        n_lanes, capacity, length, burn_in, period, pad, seed, data):
    burn_in = min(burn_in, length - 1)
    acts = data.draw(st.integers(1, 80))
    ends = data.draw(st.lists(st.lists(st.booleans(), min_size=n_lanes, max_size=n_lanes),
                              min_size=acts, max_size=acts))
    t = _filled(n_lanes, capacity, ends)
    listed, plain = (SequenceSampler(length, batch_size=16, burn_in=burn_in, period=period,
                                     pad=pad, rng=seed) for _ in range(2))
    plain._admissible_listed = plain._admissible  # every call tests the rows it is given
    if not listed.can_sample(t.container):
        return
    for _ in range(3):
        ours, theirs = listed.sample(t.container), plain.sample(t.container)
        assert sorted(ours) == sorted(theirs)
        for name, value in ours.items():
            assert value.dtype == theirs[name].dtype and np.array_equal(value, theirs[name])


def test_windows_one_row_in_many_starts_are_listed_once_and_drawn_as_by_rejection():
    rng = np.random.default_rng(0)
    t = _filled(3, 60, (rng.random((200, 3)) < 0.05).tolist())  # 20 rows a lane, wrapped
    listed, plain = (SequenceSampler(8, batch_size=32, burn_in=2, period=7, rng=1)
                     for _ in range(2))
    plain._admissible_listed = plain._admissible
    sizes = []
    admissible = listed._admissible
    listed._admissible = lambda c: (lambda idx: sizes.append(len(idx)) or admissible(c)(idx))
    for _ in range(5):
        ours, theirs = listed.sample(t.container), plain.sample(t.container)
        for name, value in ours.items():
            assert np.array_equal(value, theirs[name])
    assert sizes.count(len(t.container)) == 5  # once a batch, the rows all listed
    assert len(sizes) == 10  # and one round of rejection before


@settings(max_examples=60, deadline=None)
@given(n_lanes=st.integers(1, 3), capacity=st.integers(6, 30), max_len=st.integers(1, 6),
       data=st.data())
def test_chunks_cover_every_stored_step_once_inside_one_episode_of_one_lane(
        n_lanes, capacity, max_len, data):
    acts = data.draw(st.integers(1, 60))
    ends = data.draw(st.lists(st.lists(st.booleans(), min_size=n_lanes, max_size=n_lanes),
                              min_size=acts, max_size=acts))
    t = _filled(n_lanes, capacity, ends)
    chunks = RolloutChunker(max_len).sample(t.container)
    assert chunks["mask"].sum() == chunks["seq_lens"].sum()
    assert (chunks["seq_lens"] <= max_len).all()
    stored = _stored_steps(t.container)
    assert sorted(chunks["state"][chunks["mask"]].tolist()) == sorted(
        code for codes in stored.values() for code in codes)
    for i in range(len(chunks["seq_lens"])):
        states, mask = chunks["state"][i], chunks["mask"][i]
        _check_window(states, mask, chunks["is_first"][i], chunks["initial_state"][i],
                      chunks["seq_lens"][i], zero_at_start=False)
    # A chunk is cut only at an episode start or at the maximum length.
    for codes in stored.values():
        pieces = [tuple(chunks["state"][i][chunks["mask"][i]].tolist())
                  for i in range(len(chunks["seq_lens"]))
                  if chunks["state"][i][0] in codes]
        assert [c for piece in pieces for c in piece] == codes
        assert all(len(p) == max_len for p in pieces[:-1])


# ---- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, words", [
    ({"sequence_length": 0}, ValueError, "sequence_length must be positive"),
    ({"sequence_length": 2.5}, TypeError, "sequence_length must be an int"),
    ({"sequence_length": 4, "burn_in": 4}, ValueError, "burn_in must be at least 0 and below"),
    ({"sequence_length": 4, "burn_in": -1}, ValueError, "got burn_in=-1"),
    ({"sequence_length": 4, "period": 0}, ValueError, "period must be positive"),
    ({"sequence_length": 4, "pad": "yes"}, TypeError, "pad must be True"),
    ({"sequence_length": 4, "batch_size": 0}, ValueError, "batch_size must be positive"),
])
def test_bad_sampler_settings_are_refused_with_the_fix(kwargs, error, words):
    with pytest.raises(error, match=words):
        SequenceSampler(**kwargs)


def test_a_trajectory_without_the_state_trace_is_refused_naming_it():
    t = Trajectory(CircularArraySARTSTraces(capacity=8))
    t.push(state=0)
    t.push(state=1, action=0, reward=0.0, terminal=False)
    for sampler in (SequenceSampler(2), RolloutChunker(2)):
        with pytest.raises(ValueError, match="no 'recurrent_state' trace .* extra="):
            sampler.sample(t.container)


def test_bare_traces_are_refused_with_the_fix():
    traces = CircularArraySARTSTraces(capacity=8, extra=STATE)
    with pytest.raises(TypeError, match="wrap the traces in trajectories.Trajectory"):
        SequenceSampler(2).sample(traces)


def test_chopping_refuses_columns_of_another_length_and_a_bad_maximum():
    with pytest.raises(ValueError, match="column 'x' has 2 rows, episode_ids 3"):
        chop_into_sequences(np.array([1, 1, 2]), {"x": np.zeros(2)}, 2)
    with pytest.raises(ValueError, match="max_seq_len must be positive"):
        chop_into_sequences(np.array([1]), {}, 0)


def test_a_batch_sampler_still_sees_the_same_trajectory():
    t = _one_episode()
    assert BatchSampler(4, rng=0).sample(t.container)["recurrent_state"].shape == (4, 2)
