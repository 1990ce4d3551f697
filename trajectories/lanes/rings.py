"""`RingLanes`: lane-major ring storage for layouts with one state multiplex (SARTS and kin).

A vector env pushes one step per lane on every act; writing the lanes one `EpisodesBuffer` at a
time costs a few microseconds per lane. Here every trace is one array ``(n_lanes, P, *frame)``
and a push writes all lanes with one numpy operation per trace. A lane is a ring of states
(``P = capacity per lane + 1``); row ``r`` of a lane (the transition leaving state ``r``) keeps
its plain values (action, reward, terminal, ...) at the physical position of state ``r``::

    lane l, start = 3, m = 4 states (3 rows), P = 6:

    physical        0     1     2     3     4     5
    state           s3    .     .     s0    s1    s2      next_state of row r = state r + 1
    action          (a3)  .     .     a0    a1    a2      (a3: nothing yet, s3 is the newest)
    samp/steps/lens: one entry per state, at the state's position, as in `EpisodeMeta`

Episode bookkeeping follows `EpisodesBuffer` exactly, under the same rules
(`trajectories._episode_rules`); the episode length of the running episode is read as
``step - 1`` over its entries and written when it ends.

While every push reaches every lane, all lanes keep the same ring geometry (a step and a new
episode both add one state), so writes use one column index (*uniform* mode); pushes to some
lanes, pops and bulk inserts switch to per-lane positions.

The class holds the storage and the per-step push; the reads (`trajectories.lanes.ring_reads`)
and the bulk inserts, removals and clearing (`trajectories.lanes.ring_edits`) are functions
over it that its methods call.
"""

from __future__ import annotations

import math

import numpy as np

import trajectories.lanes.ring_edits as ring_edits
import trajectories.lanes.ring_reads as ring_reads
from trajectories._casting import fast_tables
from trajectories._episode_rules import EMPTY, FULL, KEPT, PARTIAL, STARTED, STEPPING
from trajectories.lanes.base import (
    _NO_ROWS,
    NO_CONTROLS,
    LanedEpisodesBuffer,
    _as_mask,
    lane_controls,
)

__all__ = ["RingLanes"]

# On a few lanes np.count_nonzero costs ~0.2 us where .any() and .all() cost ~1 us, and
# mask.nonzero()[0] ~0.1 us where np.flatnonzero(mask) costs ~1 us: a push asks several.

class RingLanes(LanedEpisodesBuffer):
    """`LanedEpisodesBuffer` for SARTS-like ring layouts; ``split_lanes(traces, n)`` builds one
    when ``traces`` suit it (see `trajectories.lanes.ring_layout`). Same interface and contents.

    Example:
        >>> import numpy as np
        >>> from trajectories import CircularArraySARTSTraces, split_lanes
        >>> lb = split_lanes(CircularArraySARTSTraces(capacity=4), 2)
        >>> type(lb).__name__
        'RingLanes'
        >>> lb.push(state=np.array([0, 10]))
        >>> for t in range(1, 5):
        ...     lb.push(state=np.array([t, 10 + t]), action=np.array([0, 1]),
        ...             reward=np.ones(2), terminal=np.array([False, t == 4]))
        >>> lb["state"].tolist(), lb["next_state"].tolist()     # 2 rows a lane, oldest gone
        ([2, 3, 12, 13], [3, 4, 13, 14])
    """

    def __init__(self, traces, n_lanes: int):
        traces = self._checked(traces, n_lanes)
        n = self.n_lanes
        self._init_layout(traces.slots, traces.keys())
        self._lane_cap = math.ceil(traces.capacity / n)
        P = self._P = self._lane_cap + 1
        self._where, self._frames, self._plain = {}, {}, []
        for slot in self._slots:
            ref = traces.take(slot[0], _NO_ROWS)
            frame = ref.shape[1:]
            arr = np.zeros((n, P, *frame), dtype=ref.dtype)
            for off, name in enumerate(slot):
                self._where[name] = (arr, off)
                self._frames[name] = (ref.dtype, frame, fast_tables(ref.dtype)[1])
            if len(slot) == 2:
                self._states, self._state_names = arr, slot
            else:
                self._plain.append((slot[0], arr))
        self._samp = np.zeros((n, P), dtype=bool)
        self._steps = np.zeros((n, P), dtype=np.int32)
        self._lens = np.zeros((n, P), dtype=np.int32)
        self._all = np.arange(n)
        self._base = self._all * P
        self._flat_views()
        self._reset_geometry()

    def _flat_views(self) -> None:
        # The same arrays with lane and position in one axis: when lanes sit at different
        # positions, one flat index (lane * P + position) writes them faster than index pairs.
        # Views share memory with the arrays; a copy (pickle, deepcopy) rebuilds them.
        n, P = self.n_lanes, self._P
        flat = [a.reshape(n * P, *a.shape[2:]) for a in (self._states, self._samp, self._steps)]
        self._states_f, self._samp_f, self._steps_f = flat
        self._plain_f = [(name, a.reshape(n * P, *a.shape[2:])) for name, a in self._plain]
        self._lens_f = self._lens.reshape(n * P)
        self._flat_where = {name: (arr.reshape(n * P, *arr.shape[2:]), off)
                            for name, (arr, off) in self._where.items()}
        self._offsets_at = (-1, None)
        self._ones = np.ones(n, dtype=np.int64)  # step += 1 with an array: ~0.3 us, not ~0.55

    _VIEWS = ("_states_f", "_samp_f", "_steps_f", "_plain_f", "_lens_f", "_flat_where",
              "_offsets_at", "_ones")

    def __getstate__(self):
        return {k: v for k, v in super().__getstate__().items() if k not in self._VIEWS}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._flat_views()

    def _reset_geometry(self) -> None:
        n = self.n_lanes
        self._start = np.zeros(n, dtype=np.int64)  # physical position of each lane's oldest state
        self._m = np.zeros(n, dtype=np.int64)      # states held by each lane
        self._step = np.zeros(n, dtype=np.int64)   # step number of each lane's newest state
        self._samp[:] = False
        self._n_samp = 0
        self._filled = False  # every lane holds a state: a step may go to any lane
        self._uniform = True  # every lane has the same start and m (kept in _us, _um)
        self._us = self._um = 0
        self._kept = np.zeros(n, dtype=bool)  # lanes whose lone state was kept by a clear
        self._any_kept = False

    # -- layout ---------------------------------------------------------------------------------
    @property
    def capacity(self):
        return self._lane_cap * self.n_lanes

    def _rows(self) -> np.ndarray:
        return np.maximum(self._m - 1, 0)

    def __len__(self) -> int:
        if self._uniform:
            return self.n_lanes * max(self._um - 1, 0)
        return int(self._rows().sum())

    def lane_lengths(self) -> list:
        return self._rows().tolist()

    def _offsets(self) -> np.ndarray:
        cached = self._offsets_at
        if cached[0] != self._version:  # lane lengths change only with writes
            cached = self._offsets_at = (self._version,
                                         np.concatenate(([0], np.cumsum(self._rows()))))
        return cached[1]

    def open_lanes(self) -> np.ndarray:
        return np.isin(self._phases(), (KEPT, STARTED))

    def running_lanes(self) -> np.ndarray:
        return self._phases() == STEPPING

    def _phases(self) -> np.ndarray:
        """Where each lane's newest episode stands (these layouts have no completion)."""
        return np.where(self._m == 0, EMPTY, np.where(
            self._kept, KEPT, np.where(self._step == 1, STARTED, STEPPING)))

    def _in_phase(self, phase: int) -> np.ndarray:
        """The lanes whose newest episode stands in ``phase``."""
        if phase == EMPTY:
            return self._m == 0
        if phase == STARTED:
            return (self._step == 1) & (self._m > 0) & ~self._kept
        return self._step > 1

    def _check(self, kind: int, lanes: np.ndarray, restart: bool = False) -> None:
        """Raise for the first lane in the bool mask ``lanes`` where the rules refuse ``kind``;
        with ``restart``, a lane's lone first state may be followed by a new episode (it stays
        as an episode without steps). Only the phases the rules refuse are looked at."""
        allowed = self._rules.allowed[kind]
        for phase in (EMPTY, STARTED, STEPPING):
            if allowed[phase] or (restart and kind == PARTIAL and phase == STARTED):
                continue
            bad = lanes & (self._step == 1 if phase == STARTED else self._in_phase(phase))
            if phase == STARTED and np.count_nonzero(bad):  # every vector step checks this
                bad &= self._in_phase(STARTED)  # one: narrowed in two steps, the cheap one first
            if np.count_nonzero(bad):
                raise self._rules.refusal(kind, phase, lane=int(np.flatnonzero(bad)[0]))

    # -- push -----------------------------------------------------------------------------------
    def _push_row(self, key_set, row: dict) -> int:
        episode_start, lanes, restart = lane_controls(row) if key_set.controls else NO_CONTROLS
        n = self.n_lanes
        kind = key_set.kind
        chosen = None if lanes is None else _as_mask(lanes, n, "lanes")
        if chosen is not None and np.count_nonzero(chosen) == n:
            chosen = None
        starts = None if episode_start is None else _as_mask(episode_start, n, "episode_start")
        if starts is not None and (kind == PARTIAL or not np.count_nonzero(starts)):
            starts = None  # a partial push starts an episode in every lane it reaches anyway
        cast = self._cast(key_set, row)
        name = self._state_names[0] if self._state_names[0] in cast else self._state_names[1]
        state = cast[name]
        if chosen is None:
            return self._push_all(kind, cast, state, starts, restart)
        part = chosen & starts if starts is not None else \
            (chosen if kind == PARTIAL else np.zeros(n, dtype=bool))
        return self._push_lanes(cast, state, chosen & ~part, part, restart)

    def _push_all(self, kind, cast, state, part, restart=False) -> int:
        """A push that reaches every lane: ``part`` (a bool mask, or None for none) start a new
        episode, the others take a step (all of them start one for a partial push).

        In uniform geometry every lane writes at one column (basic indexing); otherwise each
        lane at its own position (one fancy index a trace)."""
        n, P = self.n_lanes, self._P
        m, step = self._m, self._step
        uniform = self._uniform
        # While every lane holds a state (``_filled``), each is STARTED or STEPPING, where a
        # full step is allowed: only the starts need checking then.
        if kind == FULL and not self._filled:
            self._check(FULL, ~part if part is not None else np.ones(n, dtype=bool))
        if kind == PARTIAL or part is not None:
            self._check(PARTIAL, np.ones(n, dtype=bool) if part is None else part, restart)
        self._version += 1
        if self._any_kept:
            self._release_kept(np.ones(n, dtype=bool) if kind == PARTIAL else part)
            uniform = self._uniform
        if uniform:  # m and _start hold _um and _us in every lane: set with fill (~0.13 us)
            if self._um == P:  # every ring is full: each lane's oldest state and row go
                s = self._us
                oldest = self._samp[:, s]
                self._n_samp -= int(np.count_nonzero(oldest))
                oldest.fill(False)
                self._us = (s + 1) % P
                self._start.fill(self._us)
                self._um -= 1  # m is set at the end (_finish reads _um in uniform geometry)
            new = (self._us + self._um) % P
            prev = new - 1 if new else P - 1
            at_new, at_prev = (slice(None), new), (slice(None), prev)
            states, plain, samp, steps = self._states, self._plain, self._samp, self._steps
            grows = self._um > 0
        else:
            full_rings = m == P
            if np.count_nonzero(full_rings):
                ev = full_rings.nonzero()[0]
                s = self._start[ev]
                self._n_samp -= int(np.count_nonzero(self._samp[ev, s]))
                self._samp[ev, s] = False
                self._start[ev] = (s + 1) % P
                m[ev] -= 1
            new = self._start + m
            new %= P
            at_new = self._base + new
            at_prev = at_new - 1
            at_prev[new == 0] += P
            states, plain, samp, steps = (self._states_f, self._plain_f, self._samp_f,
                                          self._steps_f)
            grows = True  # empty lanes write into unused slots: harmless
        states[at_new] = state
        inserted = 0
        if kind == FULL:
            for name, arr in plain:
                arr[at_prev] = cast[name]
            if part is None:
                if uniform:  # a column view: fill costs ~0.24 us, an assignment ~0.36 us
                    samp[at_prev].fill(True)
                else:
                    samp[at_prev] = True
                inserted = n
                self.last_full = None
            else:
                lanes = part.nonzero()[0]
                for _, arr in plain:  # the rows into a new episode are padding
                    if uniform:
                        arr[at_prev][part] = 0  # a column view, then a mask: ~2x faster
                    else:
                        arr[at_prev[part]] = 0
                full = ~part
                samp[at_prev] = full
                inserted = int(np.count_nonzero(full))
                self._finish(lanes)
                self.last_full = full
            step += self._ones
            if part is not None:
                step[part] = 1
            steps[at_new] = step
        else:
            if grows:
                for _, arr in plain:
                    arr[at_prev] = 0
                self._finish(self._all)
            step[:] = 1
            steps[at_new] = 1
            self.last_full = np.zeros(n, dtype=bool)
        self._n_samp += inserted
        if uniform:
            self._um += 1
            m.fill(self._um)
        else:
            m += 1
        if not self._filled:
            self._filled = np.count_nonzero(m) == n
        return inserted

    def _push_lanes(self, cast, state, full, part, restart=False) -> int:
        """Push to the lanes in ``full`` (a step) and ``part`` (a new episode), bool masks."""
        m, step, P = self._m, self._step, self._P
        empty = m == 0
        self._check(FULL, full)
        self._check(PARTIAL, part, restart)
        self._version += 1
        self._uniform = False
        if self._any_kept:
            self._release_kept(part, full | part)
        lanes = (full | part).nonzero()[0]
        ev = lanes[m[lanes] == P]
        if ev.size:  # full rings: the oldest state and row go
            s = self._start[ev]
            self._n_samp -= int(np.count_nonzero(self._samp[ev, s]))
            self._samp[ev, s] = False
            self._start[ev] = (s + 1) % P
            m[ev] -= 1
        start = self._start
        new = (start[lanes] + m[lanes]) % P
        self._states[lanes, new] = state[lanes]
        f = full.nonzero()[0]
        if f.size:
            prev = (start[f] + m[f] - 1) % P
            for name, arr in self._plain:
                arr[f, prev] = cast[name][f]
            self._samp[f, prev] = True
            self._n_samp += f.size
        p = (part & ~empty).nonzero()[0]
        if p.size:
            prev = (start[p] + m[p] - 1) % P
            for _, arr in self._plain:
                arr[p, prev] = 0
            self._finish(p)
        step[f] += 1
        step[part] = 1
        self._steps[lanes, new] = step[lanes]
        m[lanes] += 1
        self._filled = np.count_nonzero(m) == self.n_lanes
        self.last_full = full
        return int(f.size)

    def _finish(self, lanes) -> None:
        """The running episodes of ``lanes`` end: write their length over their entries."""
        P, lens, steps = self._P, self._lens, self._step[lanes].tolist()
        if self._uniform:  # every lane's start and m: two ints, not two reads a lane
            geometry = [(self._us, self._um)] * len(steps)
        else:
            geometry = zip(self._start[lanes].tolist(), self._m[lanes].tolist(), strict=True)
        for lane, step, (start, m) in zip(lanes.tolist(), steps, geometry, strict=True):
            k = min(step, m)
            a = (start + m - k) % P  # the entries are a..a+k-1, mod P
            b = min(a + k, P)
            lens[lane, a:b] = step - 1
            lens[lane, :a + k - b] = step - 1

    # -- reads: functions over the arrays above, in `trajectories.lanes.ring_reads` -----------
    take = ring_reads.take
    is_sampleable_at = ring_reads.is_sampleable_at
    step_number_at = ring_reads.step_number_at
    episode_length_at = ring_reads.episode_length_at
    rows_ahead_at = ring_reads.rows_ahead_at
    rows_behind_at = ring_reads.rows_behind_at
    n_sampleable = property(ring_reads.n_sampleable)
    sampleable_indices = ring_reads.sampleable_indices
    sampleable_inds = property(ring_reads.sampleable_inds)
    step_numbers = property(ring_reads.step_numbers)
    episodes_lengths = property(ring_reads.episodes_lengths)
    episode_rows = ring_reads.episode_rows
    __getitem__ = ring_reads.item
    __iter__ = ring_reads.rows

    # -- edits (`trajectories.lanes.ring_edits`) ------------------------------------------------
    _release_kept = ring_edits.release_kept

    def extend(self, lane: int, *, new_episode: bool = True, **columns) -> int:
        """Bulk-insert steps into one lane; the columns as for `EpisodesBuffer.extend`."""
        return ring_edits.extend(self, lane, new_episode, columns)

    def pop(self, lane: int):
        """Remove the newest state of ``lane`` and the row leading to it; return that row."""
        return ring_edits.pop(self, lane)

    def popleft(self, lane: int):
        """Remove the oldest state of ``lane`` and its row; return that row."""
        return ring_edits.popleft(self, lane)

    def clear(self, keep_running_episodes: bool = False) -> None:
        """Empty every lane (see `LanedEpisodesBuffer`)."""
        ring_edits.clear(self, keep_running_episodes)
