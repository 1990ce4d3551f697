"""Where replay windows may start, for every row of an `EpisodesBuffer` at once.

`SequenceSampler` lists, once a batch, which rows start a window it may draw (a step number
``1, 1 + period, ...`` of its episode and at least ``needed`` complete steps of it stored from
there on). Asked through the container's per-row readers (`is_sampleable_at`,
`step_number_at`, `rows_ahead_at`), that is four passes of index arithmetic over every row
(each reader maps logical rows to ring slots again). Over an `EpisodesBuffer` of a bounded
ring the same answer is read from its metadata's columns directly: each column seen in
logical order is one slice (two where the ring wraps), and the readers' rules are applied to
the columns whole. ``tests/trajectories/test_window_starts.py`` checks it against the readers
on the same containers: ring wrap-around, episodes ending and cut at every position.
"""

from __future__ import annotations

import numpy as np

from trajectories._episode_meta import EpisodeMeta
from trajectories.episodes import EpisodesBuffer

__all__ = ["listed_window_starts"]


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
