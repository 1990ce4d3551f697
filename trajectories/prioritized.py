"""`CircularPrioritizedTraces`: traces with a key and a priority per stored row.

The priorities live in a `SumTree` (re-exported here) whose leaves follow the rows of the plain
columns one for one: the traces write first (they validate), then the tree follows, dropping
what the traces dropped, so a failed write leaves both as they were.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from trajectories.sumtree import SumTree
from trajectories.traces import frame_capacity, write_function_of
from trajectories.wrapped import WrappedTraces

__all__ = ["SumTree", "CircularPrioritizedTraces"]


class CircularPrioritizedTraces(WrappedTraces):
    """Traces with a ``key`` and a ``priority`` for every stored row, for prioritised replay.

    Keys are consecutive integers from 0, one per stored row: every push that adds a row to the
    plain (non-multiplex) columns takes the next key with ``default_priority``; a padding row
    (``pad``, the boundary before a new episode) takes the next key with priority 0 and keeps it,
    so it is never drawn; a push of multiplex names only (an episode's first state into an empty
    buffer, a ``next_action`` completion) adds no row and takes no key. The stored keys always
    form one consecutive range, so a key maps to its row by subtraction.

    Args:
        traces: bounded traces (a preset such as ``CircularArraySARTSTraces``).
        default_priority: the priority of each new row.

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> t = CircularPrioritizedTraces(CircularArraySARTSTraces(capacity=3))
        >>> t.push(state=0)
        >>> for s in (1, 2, 3, 4):
        ...     t.push(state=s, action=0, reward=1.0, terminal=False)
        >>> t["key"].tolist(), t["priority"].tolist()
        ([1, 2, 3], [1.0, 1.0, 1.0])
        >>> t.set_priority([0, 2], [5.0, 0.5])   # key 0 is gone: ignored
        >>> t["priority"].tolist()
        [1.0, 0.5, 1.0]
    """

    def __init__(self, traces, default_priority: float = 1.0):
        super().__init__(traces)
        capacity = getattr(traces, "capacity", None)
        if not isinstance(capacity, (int, np.integer)) or capacity <= 0:
            raise ValueError(f"CircularPrioritizedTraces needs bounded traces, "
                             f"got capacity={capacity}")
        self._plain = frozenset(s[0] for s in traces.slots if len(s) == 1)
        # The tree follows the plain columns frame for frame: as many leaves as they hold
        # (a SARTSA layout holds one row more than its capacity, the row awaiting its action).
        self._plain_name = min(self._plain) if self._plain else None
        self._plain_buffer = None
        if self._plain_name is not None:
            capacity = frame_capacity(traces, self._plain_name) or capacity
            inner = traces
            while inner is not None and not hasattr(inner, "_where"):
                inner = getattr(inner, "traces", None)
            if inner is not None:
                self._plain_buffer = inner._where[self._plain_name][1]
        if not (np.isfinite(default_priority) and default_priority >= 0):
            raise ValueError(f"default_priority must be finite and >= 0, got {default_priority}")
        clash = {"key", "priority"} & set(traces.keys())
        if clash:
            raise ValueError(f"traces already have {sorted(clash)}; those names are the wrapper's")
        self.default_priority = float(default_priority)
        self.priorities = SumTree(int(capacity))
        self._is_pad = np.zeros(int(capacity), dtype=bool)  # by the tree's physical slot
        self._next_key = 0
        self._sync(self._plain_rows(), self.default_priority)

    def __repr__(self) -> str:
        return (f"CircularPrioritizedTraces({self.traces!r}, "
                f"default_priority={self.default_priority})")

    # -- the traces interface ----------------------------------------------------------------
    def keys(self):
        return ("key", "priority") + tuple(self.traces.keys())

    # slots (forwarded by WrappedTraces): key and priority are written by the wrapper, never
    # pushed, so they are not slots of a push

    @property
    def first_key(self) -> int:
        return self._next_key - len(self.priorities)

    def _phys(self, idx):
        tree = self.priorities
        return (tree._first + np.asarray(idx, dtype=np.int64)) % tree.capacity

    def take(self, name, idx):
        """Column ``name`` at logical rows ``idx`` (no checks); ``key`` and ``priority`` too."""
        if name == "key":
            return self.first_key + np.asarray(idx, dtype=np.int64)
        if name == "priority":
            tree = self.priorities
            return tree._tree[self._phys(idx) + tree._n_leaves]
        return self.traces.take(name, idx)

    def __getitem__(self, key):
        if isinstance(key, str):
            if key == "key":
                return np.arange(self.first_key, self._next_key, dtype=np.int64)
            if key == "priority":
                return np.asarray(self.priorities)
            return self.traces[key]
        row = self.traces[key]  # raises IndexError for a row out of range
        if isinstance(key, slice):
            rows = np.arange(*key.indices(len(self)))
        else:
            rows = np.int64(key + len(self) if key < 0 else key)
        return {"key": self.take("key", rows), "priority": self.take("priority", rows), **row}

    def set_priority(self, keys, values) -> None:
        """Set the priorities of the rows with these keys; keys no longer stored are ignored."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if keys.size != values.size:
            raise ValueError(f"set_priority got {keys.size} keys and {values.size} values; "
                             "give one priority per key")
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValueError(f"priorities must be finite and non-negative, got {values!r}")
        rows = keys - self.first_key
        stored = (rows >= 0) & (rows < len(self.priorities))
        rows, values = rows[stored], values[stored]
        slots = self._phys(rows)
        real = ~self._is_pad[slots]  # padding rows keep priority 0: never drawn
        if real.all():
            self.priorities._set_slots(slots, values)  # checked above: no second check
        elif real.any():
            self.priorities._set_slots(slots[real], values[real])

    # -- writes: the inner traces validate and write first, then the tree follows -------------
    def _sync(self, added: int, priority: float = 0.0, padding: bool = False,
              from_back: bool = False) -> None:
        """Give the ``added`` new rows keys, then drop the tree's rows that the traces dropped
        (a full layout evicts its oldest row in lockstep, also on a push without a plain row)."""
        tree = self.priorities
        if added == 1:
            tree.push(priority)
            self._is_pad[(tree._first + len(tree) - 1) % tree.capacity] = padding
        elif added:
            tree.append(np.full(added, priority))
            self._is_pad[self._phys(np.arange(len(tree) - min(added, tree.capacity),
                                              len(tree)))] = padding
        self._next_key += added
        for _ in range(len(tree) - self._plain_rows()):
            if from_back:
                tree.pop()
                self._next_key -= 1  # the stored keys stay one consecutive range
            else:
                tree.popleft()

    def write_function(self, keys: tuple, pad: bool = False):
        """The inner traces' ``write(row)`` for these names (see `Traces.write_function`),
        followed by the keys and priorities of the rows it added."""
        write = write_function_of(self.traces, keys, pad)
        if pad:  # a padding row: priority 0, never drawn
            return partial(self._write_synced, write, 1 if self._plain else 0, True)
        return partial(self._write_synced, write, 0 if self._plain.isdisjoint(keys) else 1, False)

    def _write_synced(self, write, added: int, padding: bool, row: dict):
        evict = write(row)  # validates and writes, or raises having changed nothing
        self._sync(added, 0.0 if padding else self.default_priority, padding=padding)
        return evict

    def push(self, **row) -> None:
        self.write_function(tuple(row))(row)

    def pad(self, **row) -> None:
        self.write_function(tuple(row), pad=True)(row)

    def append(self, **rows) -> None:
        self.traces.append(**rows)
        given = [k for k in rows if k in self._plain]
        self._sync(len(rows[given[0]]) if given else 0, self.default_priority)

    def _removed(self, r: int, remove, from_back: bool):
        """Remove a row with ``remove`` (the traces' pop or popleft) and return it with the key
        and priority it had (row ``r`` before the removal)."""
        tagged = 0 <= r < len(self.priorities)
        key, priority = (self.first_key + r, self.priorities[r]) if tagged else (None, None)
        row = remove()
        self._sync(0, from_back=from_back)
        return {"key": key, "priority": priority, **row} if tagged and row else row

    def pop(self):
        return self._removed(self._plain_rows() - 1, self.traces.pop, from_back=True)

    def popleft(self):
        return self._removed(0, self.traces.popleft, from_back=False)

    def clear(self) -> None:
        self.traces.clear()
        self.priorities.clear()
        self._is_pad[:] = False  # keys go on counting: a stale key never names a new row

    def empty_copy(self, capacity=None):
        return CircularPrioritizedTraces(self.traces.empty_copy(capacity), self.default_priority)

    def _plain_rows(self) -> int:
        """The number of frames in the plain columns (0 without plain columns)."""
        if self._plain_buffer is not None:  # O(1) through a Traces
            return len(self._plain_buffer)
        return len(self.traces[self._plain_name]) if self._plain_name is not None else 0

