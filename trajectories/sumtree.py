"""`SumTree`: a ring of priorities for prioritised replay.

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

from trajectories.checks import as_rng, require_positive_int


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
        self.capacity = require_positive_int("SumTree", "capacity", capacity)
        self._n_leaves = 1 << max(0, (self.capacity - 1).bit_length())
        self._depth = self._n_leaves.bit_length() - 1
        self._tree = np.zeros(2 * self._n_leaves, dtype=np.float64)
        self._sums = memoryview(self._tree)  # Python floats in and out: fast scalar walks
        self._first = 0
        self._len = 0

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_sums"]  # a memoryview of _tree: rebuilt on load
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._sums = memoryview(self._tree)

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
        tree, add = self._tree, np.add.reduce  # the ufunc's reduce: no Python wrapper a level
        children = tree.reshape(-1, 2)  # row k: nodes 2k and 2k + 1, the children of node k
        for _ in range(self._depth):
            nodes = nodes >> 1
            tree[nodes] = add(children[nodes], axis=1)  # one gather a level, not two

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
        self._set_slots(slots.reshape(-1), p.reshape(-1))

    def _set_slots(self, slots: np.ndarray, p: np.ndarray) -> None:
        """Write checked priorities ``p`` (float64) into the physical ``slots`` (int64, in
        range) and the sums above them."""
        nodes = slots + self._n_leaves
        self._tree[nodes] = p
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
        if vs.size and not (np.minimum.reduce(vs) >= 0 and np.maximum.reduce(vs) <= total):
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
        rng = as_rng(rng)
        vs = (np.arange(batch_size) + rng.random(batch_size)) * (self.total / batch_size)
        return self.get_batch(np.minimum(vs, self.total))
