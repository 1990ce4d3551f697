"""Frame buffers: a preallocated ring (`CircularArrayBuffer`) and an unbounded array
(`ElasticArrayBuffer`) with one interface.

A buffer stores *frames* (one observation, one reward, ...) of a fixed shape and dtype along a
first axis. Logical index 0 is the oldest frame. The ring keeps one spare physical slot::

    capacity 4, physical slots 5, after pushing a b c d e f (a and b were overwritten):

    physical  [ e | f | . | c | d ]        . = spare slot, the next push writes here
                        ^tail ^start
    logical   c d e f   (0 = c = oldest, -1 = f = newest)

The spare slot is what makes writes all-or-nothing: a push first writes into the spare slot (this
is where a bad value raises) and only then moves the pointers ("commits"), so a failed push never
touched the oldest frame of a full ring. `Traces` uses the two halves separately to make a whole
row atomic.

Internal contract (used by traces, samplers, prioritized and normalising wrappers):

- ``take(idx)``: frames at logical indices ``idx`` (an int64 array, already valid, no bounds
  checks); one index computation and one fancy index; returns ``idx.shape + frame_shape``.
- ``_put(x)`` validates one frame and writes it into the spare slot; ``_commit(evict)`` makes
  it visible (``evict=True`` also drops the oldest frame although the buffer is not full: used
  to keep columns of one layout in lockstep).
- ``_prepare(xs)`` validates and casts many frames; ``_extend_commit(frames, evict_n)`` writes
  prepared frames (cannot fail) and drops ``evict_n`` extra oldest frames; ``_drop_front(n)``.
"""

from __future__ import annotations

import math

import numpy as np

from trajectories._casting import as_shape, coerce_frame, coerce_frames, fast_tables
from trajectories.checks import require_positive_int

__all__ = ["CircularArrayBuffer", "ElasticArrayBuffer"]


def _dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype must be a numpy dtype, got dtype={dtype!r}") from e


def logical_indices(key, n: int, what: str) -> np.ndarray:
    """``key`` (a slice, a bool mask or an int array, negatives from the end) as int64 logical
    indices into ``n`` items; out of range raises IndexError naming ``what`` ("frames", "rows")."""
    if isinstance(key, slice):
        return np.arange(n, dtype=np.int64)[key]
    idx = np.asarray(key)
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise IndexError(f"boolean index of shape {idx.shape} for {n} {what}")
        return np.flatnonzero(idx)
    if idx.dtype.kind not in "iu":
        raise IndexError(f"{what} are indexed by int, slice or int array, got {key!r}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"index {key!r} out of range for {n} {what}")
    return np.where(idx < 0, idx + n, idx)


class _FrameBuffer:
    """Shared logic: validation, logical indexing, pop/popleft; subclasses place frames."""

    _name = "buffer"  # used in error messages; Traces sets the trace name

    def _setup(self, shape, dtype):
        self._fshape = shape
        self._dtype = dtype
        self._fast_types, self._fast_dtypes = fast_tables(dtype)

    # -- read ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def frame_shape(self) -> tuple:
        return self._fshape

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Frames at logical indices ``idx`` (valid int64 array); shape ``idx.shape + frame``."""
        return self._data[self._phys(idx)]

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            n = self._len
            if not -n <= i < n:
                raise IndexError(f"index {i} out of range for {n} frames")
            return self._data[self._phys(i + n if i < 0 else i)].copy()
        return self.take(logical_indices(i, self._len, "frames"))

    def __array__(self, dtype=None, copy=None):
        out = self.take(np.arange(self._len, dtype=np.int64))
        return out if dtype is None else out.astype(dtype)

    def __iter__(self):
        for i in range(self._len):
            yield self[i]

    # -- write --------------------------------------------------------------------------------
    def _put(self, x) -> None:
        data, tail = self._data, self._tail
        t = type(x)
        try:
            # Fast path: types numpy's setitem stores exactly (no NaN, no truncation).
            if t in self._fast_types:
                data[tail] = x
                return
            if t is np.ndarray and x.shape == self._fshape and x.dtype in self._fast_dtypes:
                data[tail] = x
                return
        except OverflowError:
            pass  # an int too large for the dtype: the slow path words the error
        data[tail] = coerce_frame(x, self._dtype, self._fshape, self._name)

    def _prepare(self, xs) -> np.ndarray:
        return coerce_frames(xs, self._dtype, self._fshape, self._name)

    def push(self, x) -> None:
        """Write one frame (a scalar fills the frame); a full ring overwrites its oldest."""
        self._put(x)
        self._commit(False)

    def append(self, xs) -> None:
        """Write many frames along the first axis, validated before anything is written."""
        self._extend_commit(self._prepare(xs), 0)

    def pop(self):
        """Remove and return (a copy of) the newest frame."""
        if self._len == 0:
            raise IndexError(f"pop from an empty {type(self).__name__}")
        v = self[self._len - 1]
        self._drop_back()
        return v

    def popleft(self):
        """Remove and return (a copy of) the oldest frame."""
        if self._len == 0:
            raise IndexError(f"popleft from an empty {type(self).__name__}")
        v = self[0]
        self._drop_front(1)
        return v

    def clear(self) -> None:
        """Remove every frame (storage is kept)."""
        self._start = self._tail = self._len = 0

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(len={self._len}, capacity={self.capacity}, "
                f"shape={self._fshape}, dtype={self._dtype})")


class CircularArrayBuffer(_FrameBuffer):
    """A preallocated ring of frames; when full, a push overwrites the oldest frame.

    Args:
        capacity: maximum number of frames held (positive int).
        shape: shape of one frame (``()`` for scalars).
        dtype: numpy dtype of the frames.

    Example:
        >>> b = CircularArrayBuffer(3, dtype=np.int64)
        >>> for x in range(5):
        ...     b.push(x)
        >>> np.asarray(b), int(b[0]), int(b[-1]), len(b), b.isfull
        (array([2, 3, 4]), 2, 4, 3, True)
        >>> b.append([5, 6]); np.asarray(b)
        array([4, 5, 6])
        >>> int(b.pop()), int(b.popleft()), np.asarray(b)
        (6, 4, array([5]))
    """

    def __init__(self, capacity: int, shape=(), dtype=np.float32):
        self._cap = require_positive_int(None, "capacity", capacity)
        self._P = self._cap + 1  # one spare physical slot, see the module docstring
        self._setup(as_shape(shape), _dtype(dtype))
        self._data = np.zeros((self._P, *self._fshape), dtype=self._dtype)
        self._start = self._tail = self._len = 0

    @property
    def capacity(self) -> int:
        return self._cap

    @property
    def isfull(self) -> bool:
        return self._len == self._cap

    def _phys(self, idx):
        return (idx + self._start) % self._P

    def take(self, idx: np.ndarray) -> np.ndarray:
        # ndarray.take wraps the physical index in C (mode="wrap" is modulo P): one pass
        # instead of a modulo and a fancy index, about 2x faster for a batch of 256.
        return self._data.take(idx + self._start, axis=0, mode="wrap")

    def __array__(self, dtype=None, copy=None):
        s, n, P = self._start, self._len, self._P
        if s + n <= P:
            out = self._data[s:s + n].copy()
        else:  # wrapped: oldest frames at the end of the storage, newest at its start
            out = np.concatenate([self._data[s:], self._data[:s + n - P]])
        return out if dtype is None else out.astype(dtype)

    def _commit(self, evict: bool) -> None:
        t = self._tail + 1
        self._tail = 0 if t == self._P else t
        if (evict or self._len == self._cap) and self._len:
            s = self._start + 1
            self._start = 0 if s == self._P else s
        else:
            self._len += 1

    def _extend_commit(self, frames: np.ndarray, evict_n: int) -> None:
        # Only the newest `keep` frames survive; write just the new ones among them. The old
        # frames kept sit right before `tail` and keep + 1 <= P, so the writes never reach them.
        k, P = len(frames), self._P
        keep = max(0, min(self._len + k - evict_n, self._cap))
        w = min(k, keep)
        frames = frames[k - w:]
        t = self._tail
        first = min(w, P - t)
        self._data[t:t + first] = frames[:first]
        self._data[:w - first] = frames[first:]
        self._tail = (t + w) % P
        self._len = keep
        self._start = (self._tail - keep) % P

    def _drop_front(self, n: int) -> None:
        self._start = (self._start + n) % self._P
        self._len -= n

    def _drop_back(self) -> None:
        self._tail = (self._tail - 1) % self._P
        self._len -= 1

    def empty_copy(self, capacity: int | None = None) -> CircularArrayBuffer:
        """A new empty ring with the same frame shape and dtype (and optionally capacity)."""
        return CircularArrayBuffer(self._cap if capacity is None else capacity,
                                   self._fshape, self._dtype)


class ElasticArrayBuffer(_FrameBuffer):
    """An unbounded buffer of frames with the interface of `CircularArrayBuffer`.

    Storage doubles when full, and ``popleft`` only moves a pointer, so pushes and pops are
    amortised O(1). With ``shape=None`` and ``dtype=None`` both are taken from the first value
    pushed or appended (this is what an empty list in `Traces` becomes).

    Example:
        >>> b = ElasticArrayBuffer(shape=(2,), dtype=np.float32)
        >>> b.push([1, 2]); b.push(0)
        >>> np.asarray(b)
        array([[1., 2.],
               [0., 0.]], dtype=float32)
        >>> b.capacity, b.isfull
        (inf, False)
    """

    def __init__(self, shape=(), dtype=np.float32):
        self._undetermined = shape is None or dtype is None
        self._setup(None if shape is None else as_shape(shape),
                    None if dtype is None else _dtype(dtype))
        self._data = None if self._undetermined else np.zeros((16, *self._fshape), self._dtype)
        self._start = self._tail = self._len = 0

    capacity = _cap = math.inf
    isfull = False

    def _phys(self, idx):
        return idx + self._start

    def take(self, idx):
        if self._data is None:  # nothing pushed yet: no dtype, say so with an object array
            return np.empty(np.shape(idx), dtype=object)
        return self._data[idx + self._start]

    def __array__(self, dtype=None, copy=None):
        if self._data is None:
            return np.zeros(0, dtype=np.float64 if dtype is None else dtype)
        out = self._data[self._start:self._tail].copy()
        return out if dtype is None else out.astype(dtype)

    def _determine(self, value: np.ndarray, frame_axis: int) -> None:
        # The first value fixes dtype and frame shape (Python scalars give float64/int64/bool).
        self._setup(self._fshape if self._fshape is not None else value.shape[frame_axis:],
                    self._dtype if self._dtype is not None else value.dtype)
        self._data = np.zeros((16, *self._fshape), dtype=self._dtype)
        self._undetermined = False

    def _room(self, extra: int) -> None:
        need = self._len + extra
        cap = len(self._data)
        if self._start + need <= cap:
            return
        if need <= cap // 2:  # plenty of room once compacted
            self._data[:self._len] = self._data[self._start:self._tail]
        else:
            new = np.zeros((max(16, 2 * need), *self._fshape), dtype=self._dtype)
            new[:self._len] = self._data[self._start:self._tail]
            self._data = new
        self._start, self._tail = 0, self._len

    def _put(self, x) -> None:
        if self._undetermined:
            self._determine(np.asarray(x), 0)
        self._room(1)
        super()._put(x)

    def _prepare(self, xs):
        if self._undetermined:
            self._determine(np.asarray(xs), 1)
        return super()._prepare(xs)

    def _commit(self, evict: bool) -> None:
        self._tail += 1
        if evict and self._len:
            self._start += 1
        else:
            self._len += 1

    def _extend_commit(self, frames, evict_n):
        self._room(len(frames))
        self._data[self._tail:self._tail + len(frames)] = frames
        self._tail += len(frames)
        self._len += len(frames)
        self._drop_front(min(evict_n, self._len))

    def _drop_front(self, n: int) -> None:
        self._start += n
        self._len -= n

    def _drop_back(self) -> None:
        self._tail -= 1
        self._len -= 1

    def empty_copy(self, capacity=None) -> ElasticArrayBuffer:
        """A new empty buffer with the same frame shape and dtype (``capacity`` is ignored)."""
        if self._undetermined:
            return ElasticArrayBuffer(shape=None, dtype=None)
        return ElasticArrayBuffer(self._fshape, self._dtype)
