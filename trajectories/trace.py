"""`Trace`: one column of frames, and what a column may be made from."""

from __future__ import annotations

import numpy as np

from trajectories.buffers import ElasticArrayBuffer, _FrameBuffer

__all__ = ["Trace", "as_buffer"]


def as_buffer(storage) -> _FrameBuffer:
    """The buffer a column is made from: a `Trace`'s, a buffer itself, or a list or array
    (an `ElasticArrayBuffer` holding its items as frames; empty: shaped by the first push)."""
    if isinstance(storage, Trace):
        return storage.buffer
    if isinstance(storage, _FrameBuffer):
        return storage
    if isinstance(storage, (list, tuple, np.ndarray)):
        if len(storage) == 0:  # dtype and frame shape come from the first value pushed
            return ElasticArrayBuffer(shape=None, dtype=None)
        arr = np.asarray(storage)
        buf = ElasticArrayBuffer(arr.shape[1:], arr.dtype)
        buf.append(arr)
        return buf
    raise TypeError(f"a trace is made from a CircularArrayBuffer, ElasticArrayBuffer, list or "
                    f"array, got {type(storage).__name__}")


class Trace:
    """One column of frames: a buffer (or list, array) seen as a trace.

    Args:
        storage: a `CircularArrayBuffer`, `ElasticArrayBuffer`, list or array (lists and arrays
            become an `ElasticArrayBuffer` holding their items as frames).

    Example:
        >>> t = Trace([1, 2, 3])
        >>> t.push(4); len(t), int(t[-1]), np.asarray(t)
        (4, 4, array([1, 2, 3, 4]))
    """

    def __init__(self, storage=()):
        self.buffer = as_buffer(storage)

    def __len__(self):
        return len(self.buffer)

    def __getitem__(self, i):
        return self.buffer[i]

    def __array__(self, dtype=None, copy=None):
        return self.buffer.__array__(dtype)

    capacity = property(lambda self: self.buffer.capacity)

    def take(self, idx):
        return self.buffer.take(idx)

    def push(self, x):
        self.buffer.push(x)

    def append(self, xs):
        self.buffer.append(xs)

    def pop(self):
        return self.buffer.pop()

    def popleft(self):
        return self.buffer.popleft()

    def clear(self):
        self.buffer.clear()

    def __repr__(self):
        return f"Trace({self.buffer!r})"
