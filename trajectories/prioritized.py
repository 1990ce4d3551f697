"""Priorities for prioritised replay: a circular sum tree and the traces wrapper that uses it.

The sum tree keeps one priority per stored row in a binary tree of partial sums, so that drawing a
row proportionally to its priority and updating a priority both cost O(log capacity)::

    leaves (physical slots, a ring)        tree (1-based heap, root = node 1)
                                                        [9]            node 1 = total
    slot:      0   1   2   3                      [3]          [6]     nodes 2, 3
    priority:  1   2   4   2                    [1]  [2]     [4]  [2]  leaves 4..7 = slot + 4

Logical index ``i`` (0 = oldest) lives in physical slot ``(first + i) % capacity``, so pushing
into a full tree overwrites the oldest leaf in place.
"""

from __future__ import annotations

import math

import numpy as np


def _check_priorities(p):
    p = np.asarray(p, dtype=np.float64)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"priorities must be finite and non-negative, got {p!r}")
    return p


class SumTree:
    """A ring of non-negative priorities with O(log n) proportional lookup.

    Args:
        capacity: the most priorities held; pushing into a full tree overwrites the oldest.

    ``tree.get(v)`` returns the leaf whose interval ``[c[i-1], c[i])`` of the cumulative sums
    ``c`` contains ``v``. A zero-priority leaf covers an empty interval and is never returned,
    also when float round-off puts ``v`` at an interval's edge (the walk only ever enters a
    subtree whose sum is positive).

    Example:
        >>> tree = SumTree(4)
        >>> for p in (1.0, 0.0, 3.0):
        ...     tree.push(p)
        >>> len(tree), tree.total
        (3, 4.0)
        >>> tree.get(0.5), tree.get(1.0), tree.get(3.99)
        ((0, 1.0), (2, 3.0), (2, 3.0))
        >>> tree[0] = 2.0
        >>> np.asarray(tree).tolist()
        [2.0, 0.0, 3.0]
    """

    def __init__(self, capacity: int):
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)):
            raise TypeError(f"capacity must be an int, got {type(capacity).__name__}")
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got capacity={capacity}")
        self.capacity = int(capacity)
        self._n_leaves = 1 << max(0, (self.capacity - 1).bit_length())
        self._depth = self._n_leaves.bit_length() - 1
        self._tree = np.zeros(2 * self._n_leaves, dtype=np.float64)
        self._sums = memoryview(self._tree)  # Python floats in and out: fast scalar walks
        self._first = 0
        self._len = 0

    # -- size -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    @property
    def isfull(self) -> bool:
        return self._len == self.capacity

    @property
    def total(self) -> float:
        """The sum of all priorities held."""
        return float(self._tree[1])

    def __repr__(self) -> str:
        return f"SumTree(capacity={self.capacity}, len={self._len}, total={self.total})"

    # -- index mapping ----------------------------------------------------------------------
    def _slots(self, idx) -> np.ndarray:
        """Physical slots of logical indices (negative from the newest); IndexError if outside."""
        idx = np.asarray(idx)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"SumTree indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < -self._len or idx.max() >= self._len):
            raise IndexError(f"index out of range for a SumTree of length {self._len}")
        return (self._first + (idx % max(self._len, 1))) % self.capacity

    def _logical(self, slots: np.ndarray) -> np.ndarray:
        return (slots - self._first) % self.capacity

    def _update(self, nodes: np.ndarray) -> None:
        """Recompute the partial sums above the given leaf nodes (sums, not deltas: no drift;
        a node listed twice is just written twice with the same sum)."""
        tree = self._tree
        for _ in range(self._depth):
            nodes = nodes >> 1
            tree[nodes] = tree[2 * nodes] + tree[2 * nodes + 1]

    def _set_slot(self, slot: int, p: float) -> None:
        sums = self._sums
        node = slot + self._n_leaves
        sums[node] = p
        node >>= 1
        while node:
            sums[node] = sums[2 * node] + sums[2 * node + 1]
            node >>= 1

    # -- writes -----------------------------------------------------------------------------
    def push(self, p: float) -> None:
        """Add a priority as the newest leaf, overwriting the oldest when full."""
        p = float(p)
        if not (p >= 0 and math.isfinite(p)):
            raise ValueError(f"priorities must be finite and non-negative, got {p!r}")
        if self._len < self.capacity:
            slot = (self._first + self._len) % self.capacity
            self._len += 1
        else:
            slot = self._first
            self._first = (self._first + 1) % self.capacity
        self._set_slot(slot, p)

    def append(self, ps) -> None:
        """Push many priorities at once (more than ``capacity`` keeps the last ``capacity``)."""
        ps = _check_priorities(ps).reshape(-1)
        if ps.size > self.capacity:
            self._first = (self._first + self._len + ps.size) % self.capacity
            self._len = 0
            ps = ps[-self.capacity :]
        n_new = ps.size
        start = (self._first + self._len) % self.capacity
        slots = (start + np.arange(n_new)) % self.capacity
        overflow = max(0, self._len + n_new - self.capacity)
        self._first = (self._first + overflow) % self.capacity
        self._len = min(self.capacity, self._len + n_new)
        self._tree[slots + self._n_leaves] = ps
        self._update(slots + self._n_leaves)

    def __setitem__(self, idx, p) -> None:
        slots = self._slots(idx)
        p = _check_priorities(p)
        slots, p = np.broadcast_arrays(slots, p)
        nodes = slots.reshape(-1) + self._n_leaves
        self._tree[nodes] = p.reshape(-1)
        self._update(nodes)

    def __getitem__(self, idx):
        out = self._tree[self._slots(idx) + self._n_leaves]
        return float(out) if out.ndim == 0 else out

    def pop(self) -> float:
        """Remove and return the newest priority."""
        if not self._len:
            raise IndexError("pop from an empty SumTree")
        slot = (self._first + self._len - 1) % self.capacity
        p = float(self._tree[slot + self._n_leaves])
        self._set_slot(slot, 0.0)
        self._len -= 1
        return p

    def popleft(self) -> float:
        """Remove and return the oldest priority."""
        if not self._len:
            raise IndexError("popleft from an empty SumTree")
        slot = self._first
        p = float(self._tree[slot + self._n_leaves])
        self._set_slot(slot, 0.0)
        self._first = (self._first + 1) % self.capacity
        self._len -= 1
        return p

    def clear(self) -> None:
        self._tree[:] = 0.0
        self._first = 0
        self._len = 0

    def __array__(self, dtype=None, copy=None):
        slots = (self._first + np.arange(self._len)) % self.capacity
        out = self._tree[slots + self._n_leaves]
        return out if dtype is None else out.astype(dtype)

    # -- lookups ----------------------------------------------------------------------------
    def _rotation(self) -> tuple[float, float]:
        """``(P, total - P)`` where ``P`` sums the physical slots before the oldest one.

        The walk below runs over physical slots; the logical cumulative sums start at slot
        ``first``, so ``v`` maps to ``v + P`` on the physical axis, or to ``v - (total - P)``
        once it is past the slots ``first..capacity-1`` (the ring wraps)."""
        if self._first == 0:
            return 0.0, self.total
        sums, node, prefix = self._sums, self._first + self._n_leaves, 0.0
        while node > 1:
            if node & 1:
                prefix += sums[node - 1]
            node >>= 1
        return prefix, self.total - prefix

    def get(self, v: float) -> tuple[int, float]:
        """The ``(index, priority)`` of the leaf covering ``v``, for ``0 <= v < total``.

        ``v == total`` is accepted (round-off in a caller's arithmetic) and gives a leaf with a
        positive priority at the end of the ring's storage.
        """
        total = self.total
        if not total > 0:
            raise ValueError("cannot get from a SumTree whose total priority is 0")
        if not 0 <= v <= total:  # also rejects NaN
            raise ValueError(f"v must satisfy 0 <= v < total={total}, got v={v}")
        prefix, tail = self._rotation()
        return self._walk(float(v) + prefix if v < tail else float(v) - tail)

    def _walk(self, v: float) -> tuple[int, float]:
        """Descend from the root by a physical-axis ``v``, never into a zero-sum subtree."""
        sums, node = self._sums, 1
        for _ in range(self._depth):
            node *= 2
            left = sums[node]
            if v >= left and sums[node + 1] > 0:
                v -= left
                node += 1
        return int(self._logical(node - self._n_leaves)), sums[node]

    def get_batch(self, vs) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`get`: ``(indices, priorities)`` for an array of ``vs``."""
        total = self.total
        vs = np.array(vs, dtype=np.float64).reshape(-1)
        if not total > 0:
            raise ValueError("cannot get from a SumTree whose total priority is 0")
        if vs.size and not (vs.min() >= 0 and vs.max() <= total):
            raise ValueError(f"every v must satisfy 0 <= v < total={total}")
        prefix, tail = self._rotation()
        if prefix:
            vs = np.where(vs < tail, vs + prefix, vs - tail)
        axis_vs = vs.copy()
        tree = self._tree
        node = np.ones(vs.shape, dtype=np.int64)
        for _ in range(self._depth):  # the plain walk; the rare zero leaf is redone below
            node <<= 1
            left = tree[node]
            go_right = vs >= left
            np.subtract(vs, left, out=vs, where=go_right)
            node += go_right
        idx, ps = self._logical(node - self._n_leaves), tree[node]
        for i in np.flatnonzero(ps == 0):  # round-off at an edge: the guarded walk
            idx[i], ps[i] = self._walk(float(axis_vs[i]))
        return idx, ps

    def sample(self, batch_size: int, rng=None) -> tuple[np.ndarray, np.ndarray]:
        """Stratified proportional draw: one ``v`` uniform in each of ``batch_size`` equal
        segments of ``[0, total)``. Returns ``(indices, priorities)``."""
        rng = np.random.default_rng(rng)
        vs = (np.arange(batch_size) + rng.random(batch_size)) * (self.total / batch_size)
        return self.get_batch(np.minimum(vs, self.total))


class CircularPrioritizedTraces:
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
        if not hasattr(traces, "keys") or not hasattr(traces, "slots"):
            raise TypeError(f"CircularPrioritizedTraces wraps traces, got {type(traces).__name__}")
        capacity = getattr(traces, "capacity", None)
        if not isinstance(capacity, (int, np.integer)) or capacity <= 0:
            raise ValueError(f"CircularPrioritizedTraces needs bounded traces, "
                             f"got capacity={capacity}")
        if not (np.isfinite(default_priority) and default_priority >= 0):
            raise ValueError(f"default_priority must be finite and >= 0, got {default_priority}")
        clash = {"key", "priority"} & set(traces.keys())
        if clash:
            raise ValueError(f"traces already have {sorted(clash)}; those names are the wrapper's")
        self.traces = traces
        self.default_priority = float(default_priority)
        self.priorities = SumTree(int(capacity))
        self._is_pad = np.zeros(int(capacity), dtype=bool)  # by the tree's physical slot
        self._plain = frozenset(s[0] for s in traces.slots if len(s) == 1)
        self._next_key = 0
        self._plain_rows = _row_counter(traces, self._plain)
        self._sync(self._plain_rows(), self.default_priority)

    def __repr__(self) -> str:
        return (f"CircularPrioritizedTraces({self.traces!r}, "
                f"default_priority={self.default_priority})")

    # -- the traces interface ----------------------------------------------------------------
    def keys(self):
        return ("key", "priority") + tuple(self.traces.keys())

    @property
    def slots(self):
        # key and priority are written by the wrapper, never pushed: not slots of a push
        return self.traces.slots

    @property
    def capacity(self):
        return self.traces.capacity

    def __len__(self) -> int:
        return len(self.traces)

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
        real = ~self._is_pad[self._phys(rows)]  # padding rows keep priority 0: never drawn
        rows, values = rows[real], values[real]
        if rows.size:
            self.priorities[rows] = values

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

    def push(self, **row) -> None:
        self.traces.push(**row)
        self._sync(0 if self._plain.isdisjoint(row) else 1, self.default_priority)

    def pad(self, **row) -> None:
        self.traces.pad(**row)
        self._sync(1 if self._plain else 0, 0.0, padding=True)

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
        return self._removed(len(self) - 1, self.traces.pop, from_back=True)

    def popleft(self):
        return self._removed(0, self.traces.popleft, from_back=False)

    def clear(self) -> None:
        self.traces.clear()
        self.priorities.clear()
        self._is_pad[:] = False  # keys go on counting: a stale key never names a new row

    def empty_copy(self, capacity=None):
        return CircularPrioritizedTraces(self.traces.empty_copy(capacity), self.default_priority)


def _row_counter(traces, plain):
    """A function giving the number of rows in the plain columns: O(1) through the buffer of a
    `Traces` (also under wrappers), else by reading the column."""
    if not plain:
        return lambda: 0
    name = min(plain)
    inner = traces
    while inner is not None and not hasattr(inner, "_where"):
        inner = getattr(inner, "traces", None)
    if inner is not None:
        buffer = inner._where[name][1]
        return buffer.__len__
    return lambda: len(traces[name])
