"""The reads of `RingLanes`: global rows located in the lane-major arrays (a mixin).

Global row ``g`` is row ``r`` of lane ``l`` (lanes one after the other); its values sit at the
physical position of its state, ``(start[l] + r) % P``, and the flat position ``l * P +
position`` reads every array with one ``ndarray.take`` (see `trajectories.lanes.rings`).
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import TraceKeyError
from trajectories._episode_meta import episode_row_lists

__all__: list[str] = []


class _RingReads:
    """Row reads over the storage of `RingLanes`."""

    def _located_rows(self, idx):
        """``(lane, local row, position of the row's state)`` for global rows ``idx``."""
        rows = np.asarray(idx, dtype=np.int64)
        if self._uniform and self._um > 1:  # every lane holds the same number of rows
            per_lane = self._um - 1
            lane = rows // per_lane
            np.minimum(lane, self.n_lanes - 1, out=lane)  # the row past the end: the last lane
            r = rows - lane * per_lane
            return lane, r, r + self._us
        lane, r = self.lane_of(rows)
        return lane, r, self._start[lane] + r

    def _flat(self, idx, off: int = 0):
        """Flat positions (``lane * P + position``) of global rows ``idx``, shifted by ``off``
        (1 for the right name of the state multiplex)."""
        lane, _, pos = self._located_rows(idx)
        if off:
            pos += off
        pos %= self._P
        lane *= self._P
        pos += lane
        return pos

    def take(self, name: str, idx) -> np.ndarray:
        """Column ``name`` at global rows ``idx`` (any shape; the result keeps it)."""
        flat_view, off = self._flat_where[name]
        return flat_view.take(self._flat(idx, off), axis=0)

    def is_sampleable_at(self, idx) -> np.ndarray:
        return self._samp_f.take(self._flat(idx))

    def step_number_at(self, idx) -> np.ndarray:
        return self._steps_f.take(self._flat(idx))

    def _episode_at(self, idx):
        """``(local row, rows of its lane, step number, episode length)`` of global rows."""
        lane, r, pos = self._located_rows(idx)
        flat = pos % self._P + lane * self._P
        m, step = self._m[lane], self._step[lane]
        current = r >= m - np.minimum(step, m)  # entries of the episode still running
        lens = np.where(current, step - 1, self._lens_f.take(flat))
        return r, m - 1, self._steps_f.take(flat), lens

    def episode_length_at(self, idx) -> np.ndarray:
        return self._episode_at(idx)[3]

    def rows_ahead_at(self, idx) -> np.ndarray:
        r, rows, steps, lens = self._episode_at(idx)
        return np.minimum(lens - steps + 1, rows - r)

    def rows_behind_at(self, idx) -> np.ndarray:
        r, _, steps, _ = self._episode_at(idx)
        return np.minimum(steps, r + 1)

    @property
    def n_sampleable(self) -> int:
        return self._n_samp

    def sampleable_indices(self) -> np.ndarray:
        return np.flatnonzero(self.sampleable_inds)

    def _all_rows(self) -> np.ndarray:
        return np.arange(len(self), dtype=np.int64)

    @property
    def sampleable_inds(self) -> np.ndarray:
        return self.is_sampleable_at(self._all_rows())

    @property
    def step_numbers(self) -> np.ndarray:
        return self.step_number_at(self._all_rows())

    @property
    def episodes_lengths(self) -> np.ndarray:
        return self.episode_length_at(self._all_rows())

    def episode_rows(self) -> list:
        """Global sampleable rows of every stored episode: lane by lane, oldest first."""
        out, P = [], self._P
        for lane, o in enumerate(self._offsets()[:-1].tolist()):
            pos = (self._start[lane] + np.arange(self._m[lane])) % P  # all its states
            out += episode_row_lists(self._steps[lane, pos], self._samp[lane, pos], o)
        return out

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self._keys:
                raise TraceKeyError(f"no trace named {key!r}; the traces are {self._keys}")
            return self.take(key, self._all_rows())
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            n = len(self)
            i = key + n if -n <= key < 0 else key
            if not 0 <= i < n or not self.is_sampleable_at(np.array([i]))[0]:
                raise IndexError(f"row {key} is not sampleable (an episode's last state, an "
                                 f"incomplete step or out of range for {n} rows)")
            return self._row(i)
        raise TypeError(f"index a LanedEpisodesBuffer with a trace name or a row, got {key!r}")

    def _row(self, i: int) -> dict:
        at = np.array([i])
        return {name: self.take(name, at)[0] for name in self._keys}

    def __iter__(self):
        for i in self.sampleable_indices():
            yield self._row(int(i))
