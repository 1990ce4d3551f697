"""Nested frames: a trace whose every frame is a dict or tuple of arrays (a gymnasium ``Dict`` or
``Tuple`` observation), stored as one buffer per leaf.

`NestedBuffer` has the interface of the other buffers (`trajectories.buffers`), so a `Traces`
slot holds it as it holds a ring: pushing ``state={"image": ..., "speed": ...}`` writes each leaf
into its own ring (its own dtype and frame shape: pixels stay ``uint8``), and reading the trace
gives the same nesting back, every leaf with the batch axes first::

    state trace of a Dict(image=Box(0, 255, (84, 84), uint8), speed=Box(-1, 1, (2,)))

    leaf "image"   ring of (84, 84) uint8 frames     take(idx) -> {"image": (B, 84, 84) uint8,
    leaf "speed"   ring of (2,) float32 frames                     "speed": (B, 2) float32}

Every leaf holds the same number of frames at all times (a push writes all of them or none),
so the multiplex, episode and lane bookkeeping above a slot sees one buffer. Specs nest the same
way: ``{"image": (np.uint8, (84, 84)), "speed": (np.float32, (2,))}`` or a tuple of specs; the
tree helpers here (`tree_map`, `first_leaf`, ...) are the one place nesting is walked.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from trajectories.buffers import logical_indices

__all__ = ["NestedBuffer", "NestedFrames", "is_leaf_spec", "is_nested_spec", "build_buffer",
           "tree_map", "tree_leaves", "first_leaf", "is_nested", "leading_length"]


# -- trees of values ----------------------------------------------------------------------------
def is_nested(value) -> bool:
    """Whether ``value`` is a dict or a tuple of values (a nested frame or batch); a list is a
    sequence of frames, not a nesting."""
    return isinstance(value, (Mapping, tuple))


def tree_map(fn, tree, *others):
    """``fn`` applied to every leaf of ``tree`` (and the matching leaves of ``others``), in the
    same nesting.

    Example:
        >>> tree_map(lambda a, b: a + b, {"x": 1, "y": (2, 3)}, {"x": 10, "y": (20, 30)})
        {'x': 11, 'y': (22, 33)}
    """
    if isinstance(tree, Mapping):
        return {k: tree_map(fn, v, *(o[k] for o in others)) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(tree_map(fn, v, *(o[i] for o in others)) for i, v in enumerate(tree))
    return fn(tree, *others)


def tree_leaves(tree) -> list:
    """The leaves of ``tree``, depth first in the nesting's order."""
    if isinstance(tree, Mapping):
        return [leaf for v in tree.values() for leaf in tree_leaves(v)]
    if isinstance(tree, tuple):
        return [leaf for v in tree for leaf in tree_leaves(v)]
    return [tree]


def first_leaf(tree):
    """The first leaf of ``tree`` (``tree`` itself when it is not nested)."""
    while isinstance(tree, (Mapping, tuple)) and len(tree):
        tree = next(iter(tree.values())) if isinstance(tree, Mapping) else tree[0]
    return tree


def leading_length(value) -> int:
    """The length of the first axis of every leaf of ``value`` (-1 for a scalar); ``ValueError``
    when the leaves disagree."""
    lengths = {len(leaf) if np.ndim(leaf) else -1 for leaf in tree_leaves(value)} \
        if is_nested(value) else {len(value) if np.ndim(value) else -1}
    if len(lengths) != 1:
        raise ValueError(f"the leaves of a nested value must have the same leading length, got "
                         f"lengths {sorted(lengths)}")
    return lengths.pop()


# -- specs --------------------------------------------------------------------------------------
def is_leaf_spec(spec) -> bool:
    """A ``(dtype, shape)`` pair (its dtype is not itself a tuple, list or dict)."""
    return isinstance(spec, (tuple, list)) and len(spec) == 2 and \
        not isinstance(spec[0], (tuple, list, Mapping))


def is_nested_spec(spec) -> bool:
    """A dict of specs, or a tuple of specs that is not a leaf pair."""
    if isinstance(spec, Mapping):
        return True
    return isinstance(spec, (tuple, list)) and not is_leaf_spec(spec) and all(
        isinstance(s, (tuple, list, Mapping)) for s in spec)


def build_buffer(spec, make_leaf):
    """The buffer for ``spec``: ``make_leaf(dtype, shape)`` for a leaf pair, a `NestedBuffer`
    of such buffers for a dict or tuple of specs."""
    if isinstance(spec, Mapping):
        if not spec:
            raise ValueError("a nested spec needs at least one leaf, got {}")
        bad = [k for k in spec if not isinstance(k, str)]
        if bad:
            raise TypeError(f"the keys of a nested spec are strings, got {bad!r}")
        return NestedBuffer({k: build_buffer(v, make_leaf) for k, v in spec.items()})
    if is_nested_spec(spec):
        if not len(spec):
            raise ValueError("a nested spec needs at least one leaf, got ()")
        return NestedBuffer(tuple(build_buffer(v, make_leaf) for v in spec))
    dtype, shape = spec
    return make_leaf(dtype, shape)


# -- the buffer ---------------------------------------------------------------------------------
class NestedFrames:
    """Frames prepared for an append into a `NestedBuffer`: one array per leaf, of one length."""

    __slots__ = ("parts", "n")

    def __init__(self, parts: list, n: int):
        self.parts, self.n = parts, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):  # a slice of every leaf (the bulk path cuts the first state)
        parts = [p[key] for p in self.parts]
        return NestedFrames(parts, len(parts[0]))


class NestedBuffer:
    """A buffer of nested frames (dicts or tuples of arrays), one buffer per leaf.

    Args:
        leaves: a dict of buffers or a tuple of buffers (each a `CircularArrayBuffer`,
            `ElasticArrayBuffer` or `NestedBuffer`), all empty, of one capacity.

    Example:
        >>> from trajectories.buffers import CircularArrayBuffer
        >>> b = NestedBuffer({"image": CircularArrayBuffer(3, (2, 2), np.uint8),
        ...                   "speed": CircularArrayBuffer(3, (), np.float32)})
        >>> for t in range(4):
        ...     b.push({"image": np.full((2, 2), t), "speed": t / 10})
        >>> batch = b.take(np.array([0, 2]))
        >>> batch["image"].dtype, batch["image"][:, 0, 0].tolist(), batch["speed"].tolist()
        (dtype('uint8'), [1, 3], [0.10000000149011612, 0.30000001192092896])
        >>> len(b), b.capacity
        (3, 3)
    """

    def __init__(self, leaves):
        if isinstance(leaves, Mapping):
            self.keys_ = tuple(leaves)
            self.children = tuple(leaves.values())
        elif isinstance(leaves, tuple):
            self.keys_ = None
            self.children = leaves
        else:
            raise TypeError(f"NestedBuffer takes a dict or a tuple of buffers, got "
                            f"{type(leaves).__name__}")
        if not self.children:
            raise ValueError("NestedBuffer needs at least one leaf")
        caps = {c.capacity for c in self.children}
        if len(caps) != 1 or any(len(c) for c in self.children):
            raise ValueError(f"the leaves of a NestedBuffer must be empty buffers of one "
                             f"capacity, got capacities {sorted(caps)}")
        self.label = "buffer"

    # -- the buffer interface ---------------------------------------------------------------
    @property
    def _name(self) -> str:
        return self.label

    @_name.setter
    def _name(self, name: str) -> None:  # Traces names its buffers; leaves are name.key
        self.label = name
        for key, child in zip(self._labels(), self.children, strict=True):
            child._name = f"{name}.{key}"

    def _labels(self) -> tuple:
        return self.keys_ if self.keys_ is not None else tuple(range(len(self.children)))

    def _nest(self, values: list):
        if self.keys_ is None:
            return tuple(values)
        return dict(zip(self.keys_, values, strict=True))

    @property
    def _len(self) -> int:
        return self.children[0]._len

    @property
    def _cap(self):
        return self.children[0]._cap

    @property
    def capacity(self):
        return self.children[0].capacity

    @property
    def isfull(self) -> bool:
        return self.children[0].isfull

    def __len__(self) -> int:
        return self._len

    @property
    def spec(self):
        """The nested ``(dtype, frame shape)`` of the leaves."""
        return self._nest([c.spec if isinstance(c, NestedBuffer) else (c.dtype, c.frame_shape)
                           for c in self.children])

    def take(self, idx: np.ndarray):
        return self._nest([c.take(idx) for c in self.children])

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            return self._nest([c[i] for c in self.children])
        return self.take(logical_indices(i, self._len, "frames"))

    def all_frames(self):
        """Every frame, oldest first, nested (copies)."""
        return self.take(np.arange(self._len, dtype=np.int64))

    def __iter__(self):
        for i in range(self._len):
            yield self[i]

    def _parts(self, x) -> list:
        """The leaves' values of one nested frame (or of a batch of them), in leaf order."""
        if self.keys_ is not None:
            if not isinstance(x, Mapping) or set(x) != set(self.keys_):
                got = sorted(x) if isinstance(x, Mapping) else type(x).__name__
                raise ValueError(f"trace {self.label!r} takes a dict with the keys "
                                 f"{list(self.keys_)}, got {got}")
            return [x[k] for k in self.keys_]
        if not isinstance(x, (tuple, list)) or len(x) != len(self.children):
            raise ValueError(f"trace {self.label!r} takes a tuple of {len(self.children)} "
                             f"values, got {type(x).__name__}"
                             + (f" of {len(x)}" if isinstance(x, (tuple, list)) else ""))
        return list(x)

    def _put(self, x) -> None:
        # Every leaf writes into its spare slot only; nothing is visible before _commit, so a
        # leaf that refuses its value leaves the whole frame unwritten.
        for child, value in zip(self.children, self._parts(x), strict=True):
            child._put(value)

    def _commit(self, evict: bool) -> None:
        for child in self.children:
            child._commit(evict)

    def _prepare(self, xs) -> NestedFrames:
        if isinstance(xs, NestedFrames) and len(xs.parts) == len(self.children):
            return xs  # prepared already (a bulk insert checks before it writes)
        parts = [c._prepare(v) for c, v in zip(self.children, self._parts(xs), strict=True)]
        lengths = {len(p) for p in parts}
        if len(lengths) != 1:
            raise ValueError(f"trace {self.label!r}: every leaf needs as many frames, got "
                             f"{sorted(lengths)}")
        return NestedFrames(parts, lengths.pop())

    def frame_of(self, frames: NestedFrames, i: int):
        """Frame ``i`` of frames this buffer prepared, in its nesting."""
        return self._nest([c.frame_of(p, i) if isinstance(c, NestedBuffer) else p[i]
                           for c, p in zip(self.children, frames.parts, strict=True)])

    def _extend_commit(self, frames: NestedFrames, evict_n: int) -> None:
        for child, part in zip(self.children, frames.parts, strict=True):
            child._extend_commit(part, evict_n)

    def _drop_front(self, n: int) -> None:
        for child in self.children:
            child._drop_front(n)

    def _drop_back(self) -> None:
        for child in self.children:
            child._drop_back()

    def push(self, x) -> None:
        self._put(x)
        self._commit(False)

    def append(self, xs) -> None:
        self._extend_commit(self._prepare(xs), 0)

    def pop(self):
        if self._len == 0:
            raise IndexError("pop from an empty NestedBuffer")
        value = self[self._len - 1]
        self._drop_back()
        return value

    def popleft(self):
        if self._len == 0:
            raise IndexError("popleft from an empty NestedBuffer")
        value = self[0]
        self._drop_front(1)
        return value

    def clear(self) -> None:
        for child in self.children:
            child.clear()

    def empty_copy(self, capacity=None) -> NestedBuffer:
        copies = [c.empty_copy(capacity) for c in self.children]
        return NestedBuffer(self._nest(copies))

    def __repr__(self) -> str:
        return (f"NestedBuffer({self._nest([c for c in self.children])!r}, len={self._len})")
