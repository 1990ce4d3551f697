"""Bulk inserts, removals and clearing of `RingLanes` (one lane at a time, off the step path).

Functions over a `RingLanes`, which its ``extend``, ``pop``, ``popleft`` and ``clear`` methods
call. `extend` validates every column first, then writes the steps as the equivalent lane
pushes would; `pop` and `popleft` drop a lane's newest or oldest state with its row; `clear`
empties the lanes, keeping (if asked) each lane's newest state as a kept first state. Edits of
single lanes leave the lanes in per-lane geometry (see `trajectories.lanes.rings`).
"""

from __future__ import annotations

import numpy as np

import trajectories.lanes.ring_reads as ring_reads
from trajectories._casting import TraceKeyError, coerce_frames
from trajectories._episode_rules import FULL, PARTIAL

__all__ = ["extend", "pop", "popleft", "clear", "clear_held_lanes", "clear_every_lane",
           "release_kept"]


def extend(rings, lane: int, new_episode: bool, columns: dict) -> int:
    """Bulk-insert steps into one lane; the columns as for `EpisodesBuffer.extend`."""
    lane = rings._lane(lane)
    keys = tuple(columns)
    if not keys or rings._classify(keys) != FULL:
        raise TraceKeyError(f"extend needs every trace {[s[0] for s in rings._slots]}, "
                            f"got {list(keys)}")
    cols = {}
    for name, values in columns.items():
        dtype, frame, _ = rings._frames[name]
        cols[name] = coerce_frames(values, dtype, frame, name)
    state_name = next(k for k in keys if k in rings._state_names)
    T = len(cols[state_name]) - (1 if new_episode else 0)
    for name, col in cols.items():
        want = T + 1 if new_episode and name == state_name else T
        if len(col) != want or T < 0:
            rule = ("the state column carries T + 1 rows (first state, then T next states), "
                    "the others T" if new_episode else "every column carries T rows")
            raise ValueError(f"extend: column {name!r} has {len(col)} rows, expected "
                             f"{max(want, 0)}: {rule}")
    only = np.zeros(rings.n_lanes, dtype=bool)
    only[lane] = True
    if new_episode:
        rings._check(PARTIAL, only)
    elif T:
        rings._check(FULL, only)
    # Everything is valid: write it as the equivalent pushes would, one lane at a time.
    n = rings.n_lanes
    none = np.zeros(n, dtype=bool)

    def frames(t, names):
        return {k: np.broadcast_to(cols[k][t], (n, *cols[k].shape[1:])) for k in names}

    if new_episode:
        first = frames(0, (state_name,))
        rings._push_lanes(first, first[state_name], none, only)
    offset = 1 if new_episode else 0
    for t in range(T):
        step = frames(t, [k for k in keys if k != state_name])
        step[state_name] = np.broadcast_to(cols[state_name][t + offset],
                                           (n, *cols[state_name].shape[1:]))
        rings._push_lanes(step, step[state_name], only, none)
    return T


def pop(rings, lane: int):
    """Remove the newest state of ``lane`` and the row leading to it; return that row."""
    lane = rings._lane(lane)
    m = int(rings._m[lane])
    if m == 0:
        raise IndexError(f"pop from an empty lane {lane}")
    row = _lane_row(rings, lane, m - 2) if m >= 2 else {}
    rings._version += 1
    rings._uniform = False
    m -= 1
    rings._m[lane] = m
    if m == 0:
        _emptied(rings, lane)
        return row
    prev = (rings._start[lane] + m - 1) % rings._P  # the new newest state leads nowhere yet
    if rings._samp[lane, prev]:
        rings._samp[lane, prev] = False
        rings._n_samp -= 1
    rings._step[lane] = rings._steps[lane, prev]
    return row


def popleft(rings, lane: int):
    """Remove the oldest state of ``lane`` and its row; return that row."""
    lane = rings._lane(lane)
    m = int(rings._m[lane])
    if m == 0:
        raise IndexError(f"popleft from an empty lane {lane}")
    row = _lane_row(rings, lane, 0) if m >= 2 else {}
    rings._version += 1
    rings._uniform = False
    s = int(rings._start[lane])
    if rings._samp[lane, s]:
        rings._samp[lane, s] = False
        rings._n_samp -= 1
    rings._start[lane] = (s + 1) % rings._P
    rings._m[lane] = m - 1
    if m == 1:
        _emptied(rings, lane)
    return row


def clear(rings, keep_running_episodes: bool) -> None:
    """Empty every lane; with ``keep_running_episodes``, every lane holding a state keeps its
    newest one as a kept first state (these layouts have no completed episodes: a lane's
    newest episode is running as long as it holds a state)."""
    rings._version += 1
    if not keep_running_episodes:
        rings._reset_geometry()
        return
    if rings.n_lanes and np.count_nonzero(rings._m) == rings.n_lanes and not rings._uniform:
        clear_every_lane(rings)  # the usual clear of a vector env's rollout
    else:
        clear_held_lanes(rings)


def clear_held_lanes(rings) -> None:
    """`clear` keeping running episodes, in any geometry: each lane holding a state keeps its
    newest one."""
    m, P = rings._m, rings._P
    held = m > 0
    lanes = np.flatnonzero(held)
    newest = (rings._start[lanes] + m[lanes] - 1) % P
    rings._samp[:] = False
    rings._n_samp = 0
    rings._start[lanes] = newest
    rings._steps[lanes, newest] = 1
    rings._step[lanes] = 1
    m[lanes] = 1
    rings._kept[:] = held
    rings._any_kept = bool(lanes.size)
    if rings._uniform and rings._um:  # every lane kept the state at one position
        rings._us, rings._um = (rings._us + rings._um - 1) % P, 1
    rings._filled = bool(m.all())


def clear_every_lane(rings) -> None:
    """`clear_held_lanes` where every lane holds a state, in per-lane geometry: the same
    writes, on whole arrays (a test compares the two)."""
    m = rings._m
    newest = rings._start + m
    newest -= 1
    newest %= rings._P
    rings._samp.fill(False)
    rings._n_samp = 0
    rings._start[:] = newest
    rings._steps_f[rings._base + newest] = 1
    rings._step.fill(1)
    m.fill(1)
    rings._kept.fill(True)
    rings._any_kept = True
    rings._filled = True


def _emptied(rings, lane: int) -> None:
    rings._step[lane] = 0
    rings._kept[lane] = False
    rings._filled = False


def _lane_row(rings, lane: int, r: int) -> dict:
    return ring_reads.row(rings, int(rings._offsets()[lane]) + r)


def release_kept(rings, starts, reached=None) -> None:
    """`RingLanes._release_kept`: before a push reaches ``reached`` (a bool mask; None: every
    lane), the kept states of the lanes in ``starts`` (a bool mask, or None) go, a new episode
    replaces them; the other reached lanes continue from theirs. Runs only after every check
    passed."""
    kept = rings._kept
    if starts is not None:
        gone = kept & starts
        if np.count_nonzero(gone):
            rings._m[gone] = 0
            rings._step[gone] = 0
            rings._uniform = rings._filled = False
    if reached is None:
        kept[:] = False
    else:
        kept[reached] = False
    rings._any_kept = np.count_nonzero(kept) > 0
