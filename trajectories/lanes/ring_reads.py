"""The reads of `RingLanes`: global rows located in the lane-major arrays.

Functions over a `RingLanes` (its arrays and geometry) that only read; `RingLanes` names each
one as its method (``take = ring_reads.take``), so every read is found here by its own name.

Global row ``g`` is row ``r`` of lane ``l`` (lanes one after the other); its values sit at the
physical position of its state, ``(start[l] + r) % P``, and the flat position ``l * P +
position`` reads every array with one ``ndarray.take`` (see `trajectories.lanes.rings`).
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import TraceKeyError
from trajectories._episode_meta import episode_row_lists

__all__ = ["take", "take_columns", "is_sampleable_at", "step_number_at", "episode_length_at",
           "rows_ahead_at", "rows_behind_at", "n_sampleable", "sampleable_indices",
           "sampleable_inds", "step_numbers", "episodes_lengths", "episode_rows", "item", "rows",
           "row", "located_rows", "flat_positions", "lane_transitions", "take_grid"]


def located_rows(rings, idx):
    """``(lane, local row, position of the row's state)`` for global rows ``idx``."""
    rows = np.asarray(idx, dtype=np.int64)
    if rings._uniform and rings._um > 1:  # every lane holds the same number of rows
        per_lane = rings._um - 1
        lane = rows // per_lane
        np.minimum(lane, rings.n_lanes - 1, out=lane)  # the row past the end: the last lane
        r = rows - lane * per_lane
        return lane, r, r + rings._us
    lane, r = rings.lane_of(rows)
    return lane, r, rings._start[lane] + r


def flat_positions(rings, idx, off: int = 0):
    """Flat positions (``lane * P + position``) of global rows ``idx``, shifted by ``off``
    (1 for the right name of the state multiplex)."""
    lane, _, pos = located_rows(rings, idx)
    if off:
        pos += off
    pos %= rings._P
    lane *= rings._P
    pos += lane
    return pos


def take(rings, name: str, idx) -> np.ndarray:
    """Column ``name`` at global rows ``idx`` (any shape; the result keeps it)."""
    flat_view, off = rings._flat_where[name]
    return flat_view.take(flat_positions(rings, idx, off), axis=0)


def take_columns(rings, names, idx) -> dict:
    """``{name: take(rings, name, idx)}`` for every name of ``names``, the rows located once
    (a rollout read reads a dozen columns at the same rows)."""
    lane, _, pos = located_rows(rings, idx)
    return _take_at(rings, names, pos, lane * rings._P)


def lane_transitions(rings):
    """Where the transitions of every lane sit when each lane holds the same number ``T > 0``
    of them (a rollout of a vector env whose sub-envs all step), found with one index of all
    lanes' rows: ``(positions, rows, continues)``, each ``(n_lanes, T)``, lane by lane in time
    order: the physical position of each transition's state, its local row in its lane, and
    whether its lane's next row is a transition too. ``None`` when the lanes hold different
    numbers of transitions, or none.

    Example:
        >>> from trajectories import CircularArraySARTSTraces, split_lanes
        >>> lb = split_lanes(CircularArraySARTSTraces(capacity=8), 2)
        >>> lb.push(state=np.array([0, 10]))
        >>> for t in (1, 2):
        ...     lb.push(state=np.array([t, 10 + t]), action=np.array([0, 0]),
        ...             reward=np.zeros(2), terminal=np.array([False, False]))
        >>> positions, rows, continues = lane_transitions(lb)
        >>> rows.tolist(), continues.tolist()
        ([[0, 1], [0, 1]], [[True, False], [True, False]])
    """
    held = rings._m - 1  # rows of each lane (-1: an empty lane)
    longest = int(held.max()) if len(held) else 0
    if longest <= 0:
        return None
    r = np.arange(longest + 1)
    positions = rings._start[:, None] + r
    positions %= rings._P
    sampleable = rings._samp_f.take(positions + rings._base[:, None])
    sampleable &= r < held[:, None]  # the column past the longest lane: False everywhere
    counts = np.count_nonzero(sampleable, axis=1)
    T = int(counts[0])
    if T == 0 or np.count_nonzero(counts != T):
        return None
    shape = (rings.n_lanes, T)
    rows = sampleable.nonzero()[1].reshape(shape)
    continues = sampleable[:, 1:][sampleable[:, :-1]].reshape(shape)
    return positions[sampleable].reshape(shape), rows, continues


def take_grid(rings, names, positions) -> dict:
    """``{name: column name at physical positions}``: ``positions`` ``(T, n_lanes)``, column
    ``l`` in lane ``l`` (see `lane_transitions`); each result is ``(T, n_lanes, *frame)``."""
    return _take_at(rings, names, positions, rings._base)


def _take_at(rings, names, positions, base) -> dict:
    """``{name: column name at positions}``: ``positions`` in the lanes' rings (taken modulo the
    ring), ``base`` each one's lane's first flat position (``lane * P``)."""
    P = rings._P
    at_offset: dict = {}  # flat positions by the multiplex offset (0, or 1 for next_state)
    out = {}
    for name in names:
        flat_view, off = rings._flat_where[name]
        at = at_offset.get(off)
        if at is None:
            at = at_offset[off] = (positions + off) % P + base
        out[name] = flat_view.take(at, axis=0)
    return out


def is_sampleable_at(rings, idx) -> np.ndarray:
    return rings._samp_f.take(flat_positions(rings, idx))


def step_number_at(rings, idx) -> np.ndarray:
    return rings._steps_f.take(flat_positions(rings, idx))


def episode_length_at(rings, idx) -> np.ndarray:
    return episode_at(rings, idx)[3]


def rows_ahead_at(rings, idx) -> np.ndarray:
    r, held, steps, lens = episode_at(rings, idx)
    return np.minimum(lens - steps + 1, held - r)


def rows_behind_at(rings, idx) -> np.ndarray:
    r, _, steps, _ = episode_at(rings, idx)
    return np.minimum(steps, r + 1)


def n_sampleable(rings) -> int:
    return rings._n_samp


def sampleable_indices(rings) -> np.ndarray:
    return np.flatnonzero(sampleable_inds(rings))


def sampleable_inds(rings) -> np.ndarray:
    return is_sampleable_at(rings, np.arange(len(rings), dtype=np.int64))


def step_numbers(rings) -> np.ndarray:
    return step_number_at(rings, np.arange(len(rings), dtype=np.int64))


def episodes_lengths(rings) -> np.ndarray:
    return episode_length_at(rings, np.arange(len(rings), dtype=np.int64))


def episode_at(rings, idx):
    """``(local row, rows of its lane, step number, episode length)`` of global rows."""
    lane, r, pos = located_rows(rings, idx)
    flat = pos % rings._P + lane * rings._P
    m, step = rings._m[lane], rings._step[lane]
    current = r >= m - np.minimum(step, m)  # entries of the episode still running
    lens = np.where(current, step - 1, rings._lens_f.take(flat))
    return r, m - 1, rings._steps_f.take(flat), lens


def episode_rows(rings) -> list:
    """Global sampleable rows of every stored episode: lane by lane, oldest first."""
    out, P = [], rings._P
    for lane, o in enumerate(rings._offsets()[:-1].tolist()):
        pos = (rings._start[lane] + np.arange(rings._m[lane])) % P  # all its states
        out += episode_row_lists(rings._steps[lane, pos], rings._samp[lane, pos], o)
    return out


def item(rings, key):
    """``rings[key]``: a column by name, or a sampleable row by global index."""
    if isinstance(key, str):
        if key not in rings._keys:
            raise TraceKeyError(f"no trace named {key!r}; the traces are {rings._keys}")
        return take(rings, key, np.arange(len(rings), dtype=np.int64))
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        n = len(rings)
        i = key + n if -n <= key < 0 else key
        if not 0 <= i < n or not is_sampleable_at(rings, np.array([i]))[0]:
            raise IndexError(f"row {key} is not sampleable (an episode's last state, an "
                             f"incomplete step or out of range for {n} rows)")
        return row(rings, i)
    raise TypeError(f"index a LanedEpisodesBuffer with a trace name or a row, got {key!r}")


def rows(rings):
    """``iter(rings)``: the sampleable rows, as dicts, in global order."""
    for i in sampleable_indices(rings):
        yield row(rings, int(i))


def row(rings, i: int) -> dict:
    """Global row ``i`` as a dict of every trace's value."""
    at = np.array([i])
    return {name: take(rings, name, at)[0] for name in rings._keys}
