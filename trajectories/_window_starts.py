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
