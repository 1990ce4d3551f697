"""Where replay windows may start, for every row of an `EpisodesBuffer` at once.

`SequenceSampler` lists, once a batch, which rows start a window it may draw (a step number
``1, 1 + period, ...`` of its episode and at least ``needed`` complete steps of it stored from
there on). Asked through the container's per-row readers (`is_sampleable_at`,
`step_number_at`, `rows_ahead_at`), that is four passes of index arithmetic over every row
(each reader maps logical rows to ring slots again). Over an `EpisodesBuffer` of a bounded
ring the same answer is read from its metadata's columns directly: each column seen in
logical order is one slice (two where the ring wraps), and the readers' rules are applied to
the columns whole. With the list made, `draw_listed` draws a batch as the rejection draw of
`trajectories._rows._Rows.uniform` does, each round tested by indexing the list.
``tests/trajectories/test_window_starts.py`` checks both against the general path on the same
containers: ring wrap-around, episodes ending (terminal or truncated) and cut at every
position, the same batches from the same seeds.
"""

from __future__ import annotations

import numpy as np

from trajectories._episode_meta import EpisodeMeta
from trajectories._rows import _MAX_ROUNDS, _MIN_ACCEPTANCE, _NO_ROWS, _uniform_indices
from trajectories.episodes import EpisodesBuffer

__all__ = ["listed_window_starts", "draw_listed"]


def listed_window_starts(container, period: int, needed: int):
    """For every row of ``container`` (logical order): whether it is sampleable and starts a
    window (its step number is ``1 + k * period``, at least ``needed`` rows of its episode
    are stored from it on). None for a container this does not cover (then ask its readers).
    """
    if type(container) is not EpisodesBuffer:
        return None
    meta = container._meta
    if type(meta) is not EpisodeMeta:
        return None
    n = len(container)
    start, P = meta.start, meta.P
    if n > meta.n:  # never for a buffer of states and their steps; the readers know
        return None

    def logical(column):
        end = start + n
        return column[start:end] if end <= P else np.concatenate((column[start:], column[:end - P]))

    steps = logical(meta.steps)
    ok = logical(meta.samp) & ((steps - 1) % period == 0)
    # `rows_ahead_at`: the episode's length (the running one's is ``step - 1``, its entries'
    # lengths not yet written), less the rows before this one, and no further than the end.
    lengths = logical(meta.lens).astype(np.int64)
    running = meta.n - min(meta.step, meta.n)
    if running < n:
        lengths[running:] = meta.step - 1
    ok &= lengths - steps + 1 >= needed
    ok[max(n - needed + 1, 0):] = False  # fewer than ``needed`` rows stored from these on
    return ok


def draw_listed(rows, container, batch_size: int, listed: np.ndarray) -> np.ndarray:
    """``rows.uniform(container, batch_size, accept)`` (`trajectories._rows._Rows`) for an
    ``accept`` whose answer for every row is ``listed`` (which refuses the rows that are not
    sampleable, as ``uniform`` does): the same draws of ``rows.rng`` in the same rounds, the
    same rows, each round tested by indexing the list rather than by the container's readers.
    """
    rng, n = rows.rng, len(container)
    if n == 0:
        raise rows._empty()
    n_ok = container.n_sampleable
    if n_ok == 0:
        raise rows._none_ok()
    share = n_ok / n if n_ok < n else 1.0
    idx = _NO_ROWS
    if share >= _MIN_ACCEPTANCE:
        m = int(batch_size / share * 1.05) + 8
        at_once = None
        if m * np.count_nonzero(listed) < batch_size * n:  # a round is unlikely to fill it
            at_once = _rounds_at_once(rng, n, m, batch_size, listed)
        if at_once is not None:
            if at_once.size >= batch_size:
                return at_once
            idx = at_once
        else:
            for _ in range(_MAX_ROUNDS):
                more = _uniform_indices(rng, n, m)
                more = more[listed[more]]
                idx = more if not idx.size else np.concatenate([idx, more])
                if idx.size >= batch_size:
                    return idx[:batch_size]
    candidates = np.flatnonzero(listed)
    if candidates.size == 0:
        raise rows._none_ok()
    return np.concatenate([idx, candidates[rng.integers(candidates.size,
                                                        size=batch_size - idx.size)]])


def _rounds_at_once(rng, n: int, m: int, batch_size: int, listed: np.ndarray):
    """The rows `draw_listed`'s rounds of ``m`` draws accept, drawn in one call of
    ``rng.random``: every round's draws (``_MAX_ROUNDS * m`` doubles, which a PCG64 generator
    gives one after another, as it gives them round by round), then the generator set back
    and moved on by exactly the rounds that filled the batch. Returns the first
    ``batch_size`` rows accepted, or every row accepted when the rounds do not fill the batch
    (all of them drawn then); None for a generator this is not known to hold for."""
    bit_generator = rng.bit_generator
    if type(bit_generator) is not np.random.PCG64:
        return None
    saved = bit_generator.state
    idx = (rng.random(_MAX_ROUNDS * m) * n).astype(np.int64)  # as `_uniform_indices`
    np.minimum(idx, n - 1, out=idx)
    ok = listed[idx]
    filled = int(np.searchsorted(np.cumsum(ok.reshape(_MAX_ROUNDS, m).sum(axis=1)), batch_size))
    if filled == _MAX_ROUNDS:  # every round drawn, as the rounds would have
        return idx[ok]
    used = (filled + 1) * m  # the rounds stopped after this many draws
    bit_generator.state = saved
    rng.random(used)  # the same doubles again: the generator where the rounds leave it
    return idx[:used][ok[:used]][:batch_size]
