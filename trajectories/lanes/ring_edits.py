"""Bulk inserts and removals of `RingLanes` (one lane at a time, off the per-step path).

`extend` validates every column first, then writes the steps as the equivalent lane pushes
would; `pop` and `popleft` drop a lane's newest or oldest state with its row. All of them leave
the lanes in per-lane geometry (see `trajectories.lanes.rings`).
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import TraceKeyError, coerce_frames
from trajectories._episode_rules import FULL, PARTIAL

__all__: list[str] = []


class _RingEdits:
    """The bulk insert and removals of `RingLanes` (a mixin over its storage)."""

    # -- bulk -----------------------------------------------------------------------------------
    def extend(self, lane: int, *, new_episode: bool = True, **columns) -> int:
        """Bulk-insert steps into one lane; the columns as for `EpisodesBuffer.extend`."""
        lane = self._lane(lane)
        keys = tuple(columns)
        if not keys or self._kind(keys) != FULL:
            raise TraceKeyError(f"extend needs every trace {[s[0] for s in self._slots]}, "
                                f"got {list(keys)}")
        cols = {}
        for name, values in columns.items():
            dtype, frame, _ = self._frames[name]
            cols[name] = coerce_frames(values, dtype, frame, name)
        state_name = next(k for k in keys if k in self._state_names)
        T = len(cols[state_name]) - (1 if new_episode else 0)
        for name, col in cols.items():
            want = T + 1 if new_episode and name == state_name else T
            if len(col) != want or T < 0:
                rule = ("the state column carries T + 1 rows (first state, then T next states), "
                        "the others T" if new_episode else "every column carries T rows")
                raise ValueError(f"extend: column {name!r} has {len(col)} rows, expected "
                                 f"{max(want, 0)}: {rule}")
        only = np.zeros(self.n_lanes, dtype=bool)
        only[lane] = True
        if new_episode:
            self._check(PARTIAL, only)
        elif T:
            self._check(FULL, only)
        # Everything is valid: write it as the equivalent pushes would, one lane at a time.
        n = self.n_lanes
        none = np.zeros(n, dtype=bool)

        def frames(t, names):
            return {k: np.broadcast_to(cols[k][t], (n, *cols[k].shape[1:])) for k in names}

        if new_episode:
            first = frames(0, (state_name,))
            self._push_lanes(first, first[state_name], none, only)
        offset = 1 if new_episode else 0
        for t in range(T):
            row = frames(t, [k for k in keys if k != state_name])
            row[state_name] = np.broadcast_to(cols[state_name][t + offset],
                                              (n, *cols[state_name].shape[1:]))
            self._push_lanes(row, row[state_name], only, none)
        return T

    # -- remove ---------------------------------------------------------------------------------
    def pop(self, lane: int):
        """Remove the newest state of ``lane`` and the row leading to it; return that row."""
        lane = self._lane(lane)
        m = int(self._m[lane])
        if m == 0:
            raise IndexError(f"pop from an empty lane {lane}")
        row = self._lane_row(lane, m - 2) if m >= 2 else {}
        self._version += 1
        self._uniform = False
        m -= 1
        self._m[lane] = m
        if m == 0:
            self._step[lane] = 0
            self._filled = False
            return row
        prev = (self._start[lane] + m - 1) % self._P  # the new newest state leads nowhere yet
        if self._samp[lane, prev]:
            self._samp[lane, prev] = False
            self._n_samp -= 1
        self._step[lane] = self._steps[lane, prev]
        return row

    def popleft(self, lane: int):
        """Remove the oldest state of ``lane`` and its row; return that row."""
        lane = self._lane(lane)
        m = int(self._m[lane])
        if m == 0:
            raise IndexError(f"popleft from an empty lane {lane}")
        row = self._lane_row(lane, 0) if m >= 2 else {}
        self._version += 1
        self._uniform = False
        s = int(self._start[lane])
        if self._samp[lane, s]:
            self._samp[lane, s] = False
            self._n_samp -= 1
        self._start[lane] = (s + 1) % self._P
        self._m[lane] = m - 1
        if m == 1:
            self._step[lane] = 0
            self._filled = False
        return row

    def _lane_row(self, lane: int, r: int) -> dict:
        return self._row(int(self._offsets()[lane]) + r)
