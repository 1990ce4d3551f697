"""The window starts listed from an EpisodesBuffer's metadata columns are the container's own
readers' answer, row by row, and a sampler drawing with them draws the same batches."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectories import CircularArraySARTSTraces, SequenceSampler, Trajectory, sequences
from trajectories._window_starts import listed_window_starts

STATE = {"recurrent_state": (np.float32, (2,))}

#: what each act does: 0 a step, 1 a step that ends the episode (terminal), 2 one that is
#: truncated (a time limit); after either end the next act starts a new episode
ACTS = st.lists(st.integers(0, 2), min_size=0, max_size=90)


def _filled(capacity, acts):
    t = Trajectory(CircularArraySARTSTraces(capacity, extra=STATE))
    t.push(state=0)
    ended, value = False, 0
    for act in acts:
        value += 1
        if ended:
            t.push(state=value)
            ended = False
            continue
        t.push(state=value, action=act, reward=float(value), terminal=act == 1,
               truncated=act == 2, recurrent_state=np.full(2, value, np.float32))
        ended = act != 0
    return t


def _by_the_readers(container, period, needed):
    rows = np.arange(len(container))
    aligned = (container.step_number_at(rows) - 1) % period == 0
    return container.is_sampleable_at(rows) & aligned & (container.rows_ahead_at(rows) >= needed)


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(3, 25), acts=ACTS, period=st.integers(1, 9), needed=st.integers(1, 9))
def test_listed_starts_are_the_readers_answer_for_every_row(capacity, acts, period, needed):
    container = _filled(capacity, acts).container
    listed = listed_window_starts(container, period, needed)
    expected = _by_the_readers(container, period, needed)
    assert listed.dtype == np.bool_ and listed.tolist() == expected.tolist()


def test_every_ring_position_and_episode_end_is_covered():
    # one long run of short episodes over a small ring: every start slot, wrapped or not,
    # with terminal and truncated ends and a running episode at the end
    rng = np.random.default_rng(0)
    acts = rng.choice(3, size=400, p=[0.7, 0.15, 0.15]).tolist()
    starts, wrapped = set(), 0
    for k in range(1, len(acts)):
        container = _filled(11, acts[:k]).container
        meta = container._meta
        starts.add(meta.start)
        wrapped += meta.start + len(container) > meta.P
        for period in (1, 2, 3, 16):
            for needed in (1, 2, 5, 20):
                assert listed_window_starts(container, period, needed).tolist() == \
                    _by_the_readers(container, period, needed).tolist()
    assert starts == set(range(container._meta.P)) and wrapped > 50


@settings(max_examples=80, deadline=None)
@given(capacity=st.integers(4, 40), acts=ACTS, length=st.integers(1, 8),
       burn_in=st.integers(0, 4), period=st.integers(1, 9), pad=st.booleans(),
       seed=st.integers(0, 3))
def test_batches_drawn_with_the_listed_starts_are_those_drawn_with_the_readers(
        capacity, acts, length, burn_in, period, pad, seed):
    burn_in = min(burn_in, length - 1)
    container = _filled(capacity, acts).container
    fast, general = (SequenceSampler(length, batch_size=16, burn_in=burn_in, period=period,
                                     pad=pad, rng=seed) for _ in range(2))
    with_readers = sequences.listed_window_starts
    try:
        sequences.listed_window_starts = lambda *args: None  # the general listing
        if not general.can_sample(container):
            return
        theirs = [general.sample(container) for _ in range(3)]
        windows_theirs = general.windows(container)
    finally:
        sequences.listed_window_starts = with_readers
    assert fast.can_sample(container)
    for batch in theirs:
        ours = fast.sample(container)
        assert sorted(ours) == sorted(batch)
        for name, value in ours.items():
            assert value.dtype == batch[name].dtype and np.array_equal(value, batch[name])
    windows = fast.windows(container)
    assert len(windows) == len(windows_theirs)
    for ours, theirs in zip(windows, windows_theirs, strict=True):
        for name, value in ours.items():
            assert np.array_equal(value, theirs[name])


def test_an_empty_buffer_or_one_without_a_window_is_refused_as_by_the_general_draw():
    import pytest

    # nothing stored; one episode of one step, too short for a window of 3 not padded
    for acts in ([], [1, 0]):
        container = _filled(8, acts).container
        with pytest.raises(ValueError) as ours:
            SequenceSampler(3, batch_size=4, pad=False).sample(container)
        with_readers = sequences.listed_window_starts
        try:
            sequences.listed_window_starts = lambda *args: None
            with pytest.raises(ValueError) as theirs:
                SequenceSampler(3, batch_size=4, pad=False).sample(container)
        finally:
            sequences.listed_window_starts = with_readers
        assert str(ours.value) == str(theirs.value)


class _Rows:
    """A container of ``n`` rows as the row draws see it: which rows are sampleable."""

    def __init__(self, sampleable):
        self.sampleable = sampleable

    def __len__(self):
        return len(self.sampleable)

    @property
    def n_sampleable(self):
        return int(self.sampleable.sum())

    def is_sampleable_at(self, idx):
        return self.sampleable[idx]


def test_the_rounds_drawn_at_once_are_the_rounds_drawn_one_by_one_and_leave_the_same_rng(
        monkeypatch):
    from trajectories import _window_starts
    from trajectories._rows import _Rows as Draws

    calls = []
    at_once = _window_starts._rounds_at_once
    monkeypatch.setattr(_window_starts, "_rounds_at_once",
                        lambda *args: calls.append(at_once(*args)) or calls[-1])
    filled_early = all_rounds = 0
    for n in (40, 1000, 5000):
        for accepted in (0.002, 0.01, 0.05, 0.1, 0.3, 0.6, 0.9, 1.0):
            for seed in range(6):
                rng = np.random.default_rng(seed)
                sampleable = rng.random(n) < 0.8
                accept = rng.random(n) < accepted
                listed = sampleable & accept
                if not listed.any():
                    continue
                for batch_size in (1, 16, 32, 64):
                    ours, theirs = Draws("ours", np.random.default_rng(seed)), \
                        Draws("theirs", np.random.default_rng(seed))
                    container = _Rows(sampleable)
                    for _ in range(3):  # each batch from where the last one left the rng
                        before = len(calls)
                        got = _window_starts.draw_listed(ours, container, batch_size, listed)
                        want = theirs.uniform(container, batch_size, accept.__getitem__)
                        assert got.dtype == want.dtype and got.tolist() == want.tolist()
                        assert ours.rng.bit_generator.state == theirs.rng.bit_generator.state
                        if len(calls) > before:
                            filled_early += calls[-1].size == batch_size
                            all_rounds += calls[-1].size < batch_size
    assert filled_early > 20 and all_rounds > 20  # both ends of the draw at once were taken


def test_another_bit_generator_draws_round_by_round():
    from trajectories._rows import _Rows as Draws
    from trajectories._window_starts import draw_listed

    rng = np.random.default_rng(0)
    sampleable, accept = rng.random(500) < 0.9, rng.random(500) < 0.05
    container = _Rows(sampleable)
    ours = Draws("ours", np.random.Generator(np.random.MT19937(3)))
    theirs = Draws("theirs", np.random.Generator(np.random.MT19937(3)))
    for _ in range(3):
        assert draw_listed(ours, container, 32, sampleable & accept).tolist() == \
            theirs.uniform(container, 32, lambda idx: accept[idx]).tolist()
