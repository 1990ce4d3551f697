"""Named columns of frames: `Traces` and `MultiplexTraces`, composed with ``+``.

A `Traces` is a tuple of *slots*; each slot owns one buffer. A plain slot carries one name; a
multiplex slot carries two names for one buffer, so each state is stored once::

    buffer of MultiplexTraces("state", "next_state"):   s0 s1 s2 s3      (n = 4 frames)
    t["state"]       rows 0..n-2:                        s0 s1 s2
    t["next_state"]  rows 1..n-1:                           s1 s2 s3
    row i = (state=buffer[i], next_state=buffer[i+1]);   len = max(0, n - 1)

Row ``i`` of a `Traces` is frame ``i`` of every plain slot and the pair above of every
multiplex slot; ``len`` is the shortest column.

Lockstep: in a layout that has a multiplex slot, a push that overflows the ring of any multiplex
slot (the states, or the actions of a SARTSA layout) drops the oldest frame of every slot, whether
or not that slot is full. This keeps rows aligned when slots fill at different moments (the action
multiplex of a SARTSA layout holds one frame less than the states mid-episode, one more once the
episode is completed). Layouts without a multiplex behave as independent rings.

Internal contract (shared with `EpisodesBuffer`, the samplers and the wrappers):

- ``keys()`` all names; ``slots`` the names of each slot (``(("state", "next_state"),
  ("action",), ...)``), only pushable storage; ``capacity``; ``len``; ``t[...]``.
- ``push(**row)``: each given name gets one frame (a subset is a partial insert);
  ``write_function(keys, pad=False)`` returns ``write(row)`` doing the same for rows of those
  names and returning whether the push dropped the oldest row of every slot (the lockstep
  above), which the episode metadata follows (`write_function_of` asks any traces for it).
  ``append(**rows)``: each given name gets many frames (counts may differ per name).
  ``pad(**row)``: ``push(**row)`` plus one zero frame for every plain slot not named (the first
  state of a new episode). Every write validates the whole row first and writes nothing on error.
- ``take(name, idx)``: column ``name`` at logical rows ``idx`` (valid int64 array); for the
  right name of a multiplex it reads buffer rows ``idx + 1``.
- ``pop()``, ``popleft()`` (one frame off every non-empty slot: the newest (oldest) state and the
  row leading to it (leaving it); they return that row's values, without the names it has no
  value for yet, such as the ``next_action`` of a row still waiting for it),
  ``clear()``, ``empty_copy(capacity=None)`` (same layout, dtypes and frame shapes, empty).
"""

from __future__ import annotations

import math
from functools import partial
from operator import attrgetter

import numpy as np

from trajectories._casting import TraceKeyError
from trajectories._fastpush import compile_push
from trajectories.buffers import logical_indices
from trajectories.checks import require_positive_int
from trajectories.nested import NestedBuffer, tree_map
from trajectories.trace import as_buffer

_FRAMES = attrgetter("_len")  # every buffer kind's __len__, without the call

__all__ = ["Traces", "MultiplexTraces", "frame_capacity", "write_function_of"]


class Traces:
    """Named columns of equal row count, pushed and read row-wise or column-wise.

    Args:
        **columns: name -> `CircularArrayBuffer`, `ElasticArrayBuffer`, `Trace`, list or array.

    Example:
        >>> from trajectories.buffers import CircularArrayBuffer
        >>> t = Traces(a=[1, 2], b=CircularArrayBuffer(3, dtype=np.float32))
        >>> t.push(b=0.5)                      # a partial insert: only `b`
        >>> t.push(a=3, b=1.5)
        >>> len(t), t["a"], t[0]
        (2, array([1, 2, 3]), {'a': np.int64(1), 'b': np.float32(0.5)})
        >>> t[0:2]["b"]
        array([0.5, 1.5], dtype=float32)
        >>> (t + MultiplexTraces("s", "s2", CircularArrayBuffer(4))).keys()
        ('a', 'b', 's', 's2')
    """

    def __init__(self, **columns):
        self._init_slots([((name,), as_buffer(col)) for name, col in columns.items()])

    @classmethod
    def _from_slots(cls, specs):
        obj = object.__new__(cls)
        obj._init_slots(specs)
        return obj

    def _init_slots(self, specs):
        names = [n for slot, _ in specs for n in slot]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"trace names must be unique, got {dup} twice; rename one of them")
        self._specs = list(specs)
        self._names = tuple(names)
        self.slots = tuple(slot for slot, _ in specs)
        self._bufs = tuple(buf for _, buf in specs)
        self._mux = tuple(len(slot) == 2 for slot in self.slots)
        self._where = {}  # name -> (slot index, buffer, row offset)
        for i, (slot, buf) in enumerate(specs):
            buf._name = slot[0]
            for off, name in enumerate(slot):
                self._where[name] = (i, buf, off)
        self._leaders = tuple(b for b, m in zip(self._bufs, self._mux, strict=True) if m)
        self._plain = tuple(b for b, m in zip(self._bufs, self._mux, strict=True) if not m)
        self._check_plain_capacities()
        self._clear_plans()

    def _check_plain_capacities(self):
        # A plain column holds one frame less than the states (SARTSA: than the states too, a
        # row waiting for its next action included). A smaller ring would drop its oldest frame
        # on its own, before the lockstep, and pair values of different rows: refuse it.
        if not self._leaders:
            return
        need = max(b.capacity for b in self._leaders) - 1
        for slot, buf, mux in zip(self.slots, self._bufs, self._mux, strict=True):
            if not mux and buf.capacity < need:
                size = "an unbounded buffer" if math.isinf(need) else \
                    f"a ring of at least {need} frames"
                raise ValueError(
                    f"trace {slot[0]!r} holds {buf.capacity} frames but the multiplexed traces "
                    f"hold up to {need + 1}: its rows would misalign once it wraps; give it "
                    f"{size} (a preset's extra= sizes added traces for you)")

    def _clear_plans(self):
        # Write plans per key set, compiled code among them: caches, rebuilt when needed.
        self._plans = {}      # tuple(row keys) -> push function, for push
        self._pad_plans = {}  # the same for pad
        self._append_plans = {}  # tuple(keys) -> (writes, leads, others), for append

    def __getstate__(self):
        state = dict(self.__dict__)
        for name in ("_plans", "_pad_plans", "_append_plans"):
            state[name] = {}  # compiled functions do not pickle; they are rebuilt lazily
        return state

    # -- layout -------------------------------------------------------------------------------
    def keys(self) -> tuple:
        return self._names

    def __contains__(self, name) -> bool:
        return name in self._where

    @property
    def capacity(self):
        """The most rows the traces can hold (``inf`` when unbounded)."""
        caps = [b.capacity - m for b, m in zip(self._bufs, self._mux, strict=True)]
        return min(caps) if caps else math.inf

    def __len__(self) -> int:
        # The fewest rows of any column (a multiplexed one's frames less one), read in C.
        plain, leaders = self._plain, self._leaders
        if leaders:
            n = min(map(_FRAMES, leaders)) - 1
            if plain:
                n = min(n, min(map(_FRAMES, plain)))
            return n if n > 0 else 0
        return min(map(_FRAMES, plain)) if plain else 0

    def __add__(self, other):
        if not isinstance(other, Traces):
            return NotImplemented
        return Traces._from_slots(self._specs + other._specs)

    # -- read ---------------------------------------------------------------------------------
    def take(self, name: str, idx: np.ndarray) -> np.ndarray:
        """Column ``name`` at logical rows ``idx`` (a valid int64 array, no bounds checks)."""
        _, buf, off = self._where[name]
        return buf.take(idx + 1 if off else idx)

    def _column(self, name):
        if name not in self._where:
            raise TraceKeyError(f"no trace named {name!r}; the traces are {self._names}")
        i, buf, off = self._where[name]
        if isinstance(buf, NestedBuffer):  # a dict or tuple of columns, one per leaf
            col = buf.all_frames()
            if not self._mux[i]:
                return col
            return tree_map(lambda c: c[1:] if off else c[:-1], col)
        col = np.asarray(buf)
        if not self._mux[i]:
            return col
        return col[1:] if off else col[:-1]

    def __getitem__(self, key):
        if isinstance(key, str):
            return self._column(key)
        n = len(self)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not -n <= key < n:
                raise IndexError(f"row {key} out of range for {n} rows")
            i = key + n if key < 0 else key
            return {name: buf[i + off] for name, (_, buf, off) in self._where.items()}
        idx = logical_indices(key, n, "rows")
        return {name: self.take(name, idx) for name in self._names}

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- write --------------------------------------------------------------------------------
    def write_function(self, keys: tuple, pad: bool = False):
        """``write(row) -> evict`` for rows of exactly these names, built once per key set.

        ``write`` pushes one frame per name (``pad``: plus a zero frame for every plain slot not
        named, the first state of a new episode), validating every value before anything is
        written, and returns whether the push dropped the oldest row of every slot (the
        lockstep of the module docstring), which episode metadata follows. Rings get a
        generated straight-line function (`trajectories._fastpush`), other buffers the general
        `_write`; ``tests/trajectories/test_generated_paths.py`` checks that both agree.
        """
        cache = self._pad_plans if pad else self._plans
        fn = cache.get(keys)
        if fn is None:
            fn = self._plan(keys, pad)[0]
        return fn

    def _plan(self, keys, pad: bool):
        seen = {}
        for name in keys:
            if name not in self._where:
                raise TraceKeyError(f"unknown trace {name!r}; the traces are {self._names}")
            i = self._where[name][0]
            if i in seen:
                raise ValueError(f"got both {seen[i]!r} and {name!r}, two names of one "
                                 f"multiplexed trace; push only one of them")
            seen[i] = name
        writes = tuple((name, self._where[name][1]) for name in keys)
        padded = [b for i, (b, m) in enumerate(zip(self._bufs, self._mux, strict=True))
                  if pad and not m and i not in seen]
        written = [self._bufs[i] for i in seen] + padded
        others = tuple(b for b in self._bufs if all(b is not w for w in written))
        # The written multiplex rings whose overflow drops a row everywhere (see the module).
        leads = tuple(b for b in self._leaders if any(b is w for w in written))
        fn = compile_push(writes, padded, leads, others)
        if fn is None:
            fn = partial(self._write, plan=(tuple((n, b._put) for n, b in writes),
                                            tuple(b._put for b in padded),
                                            tuple(b._commit for b in written), leads, others))
        cache = self._pad_plans if pad else self._plans
        if len(cache) < 64:  # a layout sees a handful of key sets; never grow without bound
            cache[tuple(keys)] = fn
        return fn, writes, leads, others

    def _write(self, row: dict, plan) -> bool:
        # The general path (the generated one in _fastpush does the same, inlined).
        writes, pads, commits, leads, others = plan
        # 1. write every value into its buffer's spare slot: this is where bad input raises,
        #    and nothing is visible yet.
        for name, put in writes:
            put(row[name])
        for put in pads:
            put(0)
        # 2. commit: move the ring pointers; a multiplex ring's overflow evicts a row everywhere.
        evict = any(b._len == b._cap for b in leads)
        for commit in commits:
            commit(evict)
        if evict:
            for b in others:
                if b._len:
                    b._drop_front(1)
        return evict

    def push(self, **row) -> None:
        """Push one frame to each named trace (a subset of names is a partial insert)."""
        self.write_function(tuple(row))(row)

    def pad(self, **row) -> None:
        """`push` plus one zero frame for every plain (non-multiplex) slot not named."""
        self.write_function(tuple(row), pad=True)(row)

    def append(self, **rows) -> None:
        """Append many frames per named trace (first axis), all validated before writing."""
        self._append_rows(rows)

    def _append_rows(self, rows: dict) -> int:
        """`append`; returns how many rows the lockstep dropped from every slot."""
        keys = tuple(rows)
        plan = self._append_plans.get(keys)
        if plan is None:  # _plan compiles a push function: once per key set, not per call
            plan = self._plan(keys, False)[1:]
            if len(self._append_plans) < 64:
                self._append_plans[keys] = plan
        writes, leads, others = plan
        frames = [(buf, buf._prepare(rows[name])) for name, buf in writes]
        evict_n = 0
        for lead in leads:  # as many rows go as the most overflowing multiplex ring drops
            if math.isfinite(lead.capacity):
                k = next(len(f) for b, f in frames if b is lead)
                evict_n = max(evict_n, lead._len + k - lead._cap)
        for buf, f in frames:
            buf._extend_commit(f, evict_n)
        for b in others:
            b._drop_front(min(evict_n, b._len))
        return evict_n

    def _check_nonempty(self, what):
        if all(len(b) == 0 for b in self._bufs):
            raise IndexError(f"{what} from empty traces")

    def _row_values(self, r: int) -> dict:
        """The values row ``r`` has, read frame by frame (a row still waiting for a value, such
        as a SARTSA row's ``next_action``, lacks that name)."""
        out = {}
        for slot, buf in self._specs:
            for off, name in enumerate(slot):
                if 0 <= r + off < buf._len:
                    out[name] = buf[r + off]
        return out

    def pop(self) -> dict:
        """Remove the newest frame of every non-empty slot: the newest state and the row leading
        to it. Returns that row (the values it has; ``{}`` when there was none)."""
        self._check_nonempty("pop")
        if self._leaders:
            r = len(self._leaders[0]) - 2
        else:
            r = max(len(b) for b in self._bufs) - 1
        row = self._row_values(r) if r >= 0 else {}
        for b in self._bufs:
            if b._len:
                b._drop_back()
        return row

    def popleft(self) -> dict:
        """Remove the oldest frame of every non-empty slot: the oldest state and its row.
        Returns that row (the values it has; ``{}`` when there was none)."""
        self._check_nonempty("popleft")
        row = self._row_values(0)
        if self._leaders and len(self._leaders[0]) < 2:
            row = {}  # a lone state: no row leaves it yet
        for b in self._bufs:
            if b._len:
                b._drop_front(1)
        return row

    def clear(self) -> None:
        for b in self._bufs:
            b.clear()

    def empty_copy(self, capacity=None):
        """A new, empty traces object of the same layout, dtypes and frame shapes; ``capacity``
        (rows) replaces the current one, multiplex slots keeping their extra frame."""
        if capacity is not None:
            capacity = require_positive_int(None, "capacity", capacity)
        cap = self.capacity
        specs = []
        for slot, buf in self._specs:
            if capacity is None or not math.isfinite(buf.capacity):
                specs.append((slot, buf.empty_copy()))
            else:
                specs.append((slot, buf.empty_copy(buf.capacity - cap + capacity)))
        return type(self)._from_slots(specs)

    def __repr__(self) -> str:
        cols = ", ".join("/".join(s) for s in self.slots)
        return f"{type(self).__name__}({cols}; len={len(self)}, capacity={self.capacity})"


class MultiplexTraces(Traces):
    """One buffer seen under two names: ``left`` = rows ``0..n-2``, ``right`` = rows ``1..n-1``.

    Pushing either name pushes onto the shared buffer; both names in one push raise
    ``ValueError`` before anything is written.

    Args:
        left: the first name (``"state"``).
        right: the second name (``"next_state"``).
        storage: a buffer, list or array holding the frames.

    Example:
        >>> from trajectories.buffers import CircularArrayBuffer
        >>> t = MultiplexTraces("state", "next_state", CircularArrayBuffer(3, dtype=np.int64))
        >>> for s in range(4):
        ...     t.push(state=s)
        >>> t["state"], t["next_state"], len(t)
        (array([1, 2]), array([2, 3]), 2)
    """

    def __init__(self, left: str, right: str, storage=()):
        if not (isinstance(left, str) and isinstance(right, str)):
            raise TypeError(f"MultiplexTraces takes two names, got {left!r} and {right!r}")
        self._init_slots([((left, right), as_buffer(storage))])


def frame_capacity(traces, name: str):
    """The capacity of the buffer behind trace ``name`` in ``traces`` (through wrappers, which
    keep the traces they wrap in ``.traces``), or None for traces of another kind."""
    while traces is not None and not isinstance(traces, Traces):
        traces = getattr(traces, "traces", None)
    return None if traces is None else traces._where[name][1].capacity


def write_function_of(traces, keys: tuple, pad: bool = False):
    """``traces.write_function(keys, pad)``, or, for traces without one (a user's own), a
    function calling their ``push`` (``pad``) that reports no lockstep eviction."""
    own = getattr(traces, "write_function", None)
    if own is not None:
        return own(keys, pad)
    write = traces.pad if pad else traces.push
    return lambda row: write(**row)
