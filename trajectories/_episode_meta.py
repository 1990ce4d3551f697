"""Per-state episode metadata for `EpisodesBuffer`: one ring, three columns.

``samp`` (bool: row sampleable), ``steps`` (int32: step number, 1 at an episode's first state)
and ``lens`` (int32: episode length) share one geometry (start, n, tail) with one spare slot,
like `CircularArrayBuffer`. Unbounded (``capacity=inf``) rings double when full.

``lens`` is written lazily: an episode's entries get its length once, when the next episode
starts (`EpisodesBuffer._finish_episode`); until then, readers substitute the current
episode's length (``step - 1``) over its entries. This keeps every push O(1) instead of
O(episode length).
"""

from __future__ import annotations

import math

import numpy as np


class EpisodeMeta:
    # Invariant: slots not holding an entry have samp False, so appends need not write it.

    def __init__(self, capacity):
        self.capacity = capacity  # entries (states); math.inf when unbounded
        size = capacity + 1 if math.isfinite(capacity) else 16
        self._alloc(size)
        self.start = self.n = self.tail = 0
        self.n_samp = 0  # number of True in samp, kept incrementally
        self.step = 0    # step number of the newest entry (0 when empty)

    def _alloc(self, size):
        self.P = size
        self.samp = np.zeros(size, dtype=np.bool_)
        self.steps = np.zeros(size, dtype=np.int32)
        self.lens = np.zeros(size, dtype=np.int32)

    def clear(self):
        self.samp[:] = False
        self.start = self.n = self.tail = self.n_samp = self.step = 0

    def phys(self, idx):
        return (idx + self.start) % self.P

    def _grow(self, need):
        order = self.phys(np.arange(self.n))
        old = (self.samp[order], self.steps[order], self.lens[order])
        self._alloc(max(2 * self.P, need + 1))
        self.samp[:self.n], self.steps[:self.n], self.lens[:self.n] = old
        self.start, self.tail = 0, self.n

    # -- one entry (the hot path) ---------------------------------------------------------------
    def append(self, step: int, back: int = 0, evict: bool = False) -> None:
        """Mark the entry ``back`` places before the end sampleable (0: none; nothing when there
        is no such entry), then append a not-sampleable entry with step number ``step``,
        dropping the oldest entry when full or when ``evict`` (the states' ring dropped its
        oldest state)."""
        samp, P = self.samp, self.P
        if back and back <= self.n:
            p = self.tail - back
            if p < 0:
                p += P
            if not samp[p]:
                samp[p] = True
                self.n_samp += 1
        if self.n and (evict or self.n == self.capacity):
            s = self.start
            if samp[s]:
                samp[s] = False
                self.n_samp -= 1
            self.start = 0 if s + 1 == P else s + 1
        elif self.n + 1 == P:  # unbounded and out of room
            self._grow(self.n + 1)
            self.n += 1
            P = self.P
        else:
            self.n += 1
        t = self.tail
        self.steps[t] = step
        self.tail = 0 if t + 1 == P else t + 1
        self.step = step

    def mark(self, back: int, value: bool) -> None:
        """Set the sampleable flag of the entry ``back`` places before the end (1 = last), if
        there is one."""
        if back > self.n:
            return
        p = (self.tail - back) % self.P
        if bool(self.samp[p]) is not value:
            self.samp[p] = value
            self.n_samp += 1 if value else -1

    def drop_last(self) -> None:
        self.tail = (self.tail - 1) % self.P
        self.n -= 1
        if self.samp[self.tail]:
            self.samp[self.tail] = False
            self.n_samp -= 1
        self.step = int(self.steps[(self.tail - 1) % self.P]) if self.n else 0

    def drop_first(self) -> None:
        if self.samp[self.start]:
            self.samp[self.start] = False
            self.n_samp -= 1
        self.start = (self.start + 1) % self.P
        self.n -= 1
        if not self.n:
            self.step = 0

    # -- many entries ---------------------------------------------------------------------------
    def extend(self, steps: np.ndarray, samp: np.ndarray) -> None:
        """Append entries (vectorised), evicting the oldest as a sequence of appends would."""
        e = len(steps)
        if e == 0:
            return
        cap = self.capacity
        if math.isfinite(cap):
            evict = max(0, self.n + e - cap)
            old_evicted = min(evict, self.n)
            if old_evicted:
                gone = self.phys(np.arange(old_evicted))
                self.n_samp -= int(np.count_nonzero(self.samp[gone]))
                self.samp[gone] = False
                self.start = (self.start + old_evicted) % self.P
                self.n -= old_evicted
            if evict > old_evicted:  # more new entries than the ring holds: keep the last
                steps, samp = steps[evict - old_evicted:], samp[evict - old_evicted:]
                e = len(steps)
        elif self.n + e >= self.P:
            self._grow(self.n + e)
        pos = (self.tail + np.arange(e)) % self.P
        self.samp[pos], self.steps[pos] = samp, steps
        self.n_samp += int(np.count_nonzero(samp))
        self.tail = (self.tail + e) % self.P
        self.n += e
        self.step = int(steps[-1])

    def fill_lens(self, k: int, value: int) -> None:
        """Write ``value`` into the lengths of the last ``k`` entries."""
        if k > 0:  # one or two slices of the ring, as phys(arange(n - k, n)) indexes it
            first = (self.start + self.n - k) % self.P
            end = first + k
            if end <= self.P:
                self.lens[first:end] = value
            else:
                self.lens[first:] = value
                self.lens[:end - self.P] = value

    def logical(self, arr: np.ndarray) -> np.ndarray:
        return arr[self.phys(np.arange(self.n))]


def episode_row_lists(steps: np.ndarray, ok: np.ndarray, offset: int = 0) -> list:
    """The sampleable rows (plus ``offset``) of each episode among stored states with step
    numbers ``steps`` and sampleable flags ``ok``, oldest first. The first episode may be cut by
    the ring (it starts at the first state whatever its step number); the newest one is
    listed even when it has no row yet."""
    if steps.size == 0:
        return []
    starts = np.flatnonzero(steps == 1)
    if starts.size == 0 or starts[0] != 0:
        starts = np.concatenate([[0], starts])
    ends = np.append(starts[1:], steps.size)
    return [offset + a + np.flatnonzero(ok[a:b]) for a, b in zip(starts, ends, strict=True)]
