"""Checked conversion of pushed values into a trace's dtype and frame shape.

numpy's own assignment silently truncates ``1.5`` into an int trace, turns NaN into ``True`` in
a bool trace and wraps out-of-range ints when casting arrays; a replay buffer that stores such
values corrupts learning quietly. These helpers refuse them with a message that names the
value and the fix. Buffers call them only off their fast path (see ``fast_tables``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CastError", "TraceKeyError", "as_shape", "coerce_frame", "coerce_frames",
           "fast_tables", "declare_hint"]


class CastError(TypeError, ValueError):
    """A value that cannot be stored in a trace's dtype (a string into a float trace, NaN or
    1.5 into an int trace, 2 into a bool trace). Both a TypeError (wrong kind of value) and a
    ValueError (wrong value), as numpy itself raises either for these cases."""


class TraceKeyError(KeyError, TypeError, ValueError):
    """An unknown or missing trace name: a failed lookup (KeyError), a wrong argument name
    (TypeError, like an unexpected keyword) and a wrong value (ValueError)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def as_shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError as e:
        raise TypeError(f"shape must be a tuple of ints, got shape={shape!r}") from e
    if any(d < 0 for d in shape):
        raise ValueError(f"shape must have non-negative sizes, got shape={shape!r}")
    return shape


_ALL_SCALARS = (bool, int, float, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                np.uint16, np.uint32, np.uint64, np.float16, np.float32, np.float64)


def fast_tables(dtype):
    """Python/numpy scalar types and array dtypes that numpy's setitem stores exactly into
    ``dtype`` (so no check is needed): everything real into floats, safely castable ints into
    ints, only bools into bools."""
    if dtype is None:
        return frozenset(), frozenset()
    if dtype.kind in "fc":
        types = frozenset(_ALL_SCALARS)
    elif dtype.kind in "iu":
        # Python ints go through numpy's range check (OverflowError, handled by the caller).
        types = frozenset({int, bool} | {t for t in _ALL_SCALARS[3:]
                                         if np.dtype(t).kind in "biu" and np.can_cast(t, dtype)})
        types |= {np.bool_}
    elif dtype.kind == "b":
        types = frozenset({bool, np.bool_})
    else:
        return frozenset(), frozenset()
    return types, frozenset(np.dtype(t) for t in types if t not in (bool, int, float))


def _short(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def declare_hint(name: str, frame) -> str:
    """How to declare trace ``name`` for frames like ``frame`` (empty for non-numeric ones)."""
    arr = np.asarray(frame)
    if arr.dtype.kind not in "biuf":
        return ""
    dtype = "bool_" if arr.dtype.kind == "b" else arr.dtype.name
    return (f"; if one step's {name} is such a value, declare the trace for it: "
            f"{name}=(np.{dtype}, {arr.shape}) in the preset, or build the preset with env=")


def _cast(arr: np.ndarray, dtype: np.dtype, value, name: str, frame_axis: int = 0) -> np.ndarray:
    src, tk = arr.dtype, dtype.kind
    if src == dtype:
        return arr

    def fail(why):
        hint = declare_hint(name, arr[(0,) * frame_axis] if arr.size else arr)
        return CastError(f"cannot store {_short(value)} in trace {name!r} of dtype {dtype}: "
                         f"{why}{hint}; else convert it to {dtype}")

    k = src.kind
    if tk in "fc":
        if k in "biuf" or (k == "c" and tk == "c"):
            return arr.astype(dtype)
        raise fail(f"a {src} value is not a real number")
    if tk in "iu":
        if k == "b" or (k in "iu" and np.can_cast(src, dtype)):
            return arr.astype(dtype)
        if k not in "iuf":
            raise fail(f"a {src} value is not an integer")
        if k == "f":
            if not np.isfinite(arr).all():
                raise fail("NaN and infinity have no integer value")
            if (arr != np.trunc(arr)).any():
                raise fail("the value is not a whole number")
        info = np.iinfo(dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise fail(f"out of range [{info.min}, {info.max}]")
        return arr.astype(dtype)
    if tk == "b":
        if k in "iuf":
            if not ((arr == 0) | (arr == 1)).all():
                raise fail("only 0, 1, False and True are booleans")
            return arr.astype(dtype)
        raise fail(f"a {src} value is not a boolean")
    try:  # string, object or structured traces: numpy decides
        return arr.astype(dtype)
    except (TypeError, ValueError) as e:
        raise fail(str(e)) from e


def _as_array(value, dtype, name) -> np.ndarray:
    if isinstance(value, (str, bytes)) and dtype.kind not in "USO":
        raise CastError(f"cannot store {_short(value)} in trace {name!r} of dtype {dtype}: "
                        f"a string is not a number; pass a number or array")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nested lists
        raise ValueError(f"cannot make an array of {_short(value)} for trace {name!r}: {e}; "
                         f"pass a rectangular array") from e
    if arr.dtype.kind == "O" and dtype.kind != "O":
        if isinstance(value, int):
            raise CastError(f"cannot store {_short(value)} in trace {name!r} of dtype {dtype}: "
                            f"out of range; use a wider dtype for the trace")
        raise CastError(f"cannot store {_short(value)} in trace {name!r} of dtype {dtype}: "
                        f"it is not numeric; pass a number or numeric array")
    return arr


def coerce_frame(value, dtype, frame_shape, name) -> np.ndarray:
    """One frame (or a scalar, which fills the frame) as ``dtype``; raises before any write."""
    arr = _as_array(value, dtype, name)
    if arr.shape != frame_shape and arr.shape != ():
        hint = declare_hint(name, arr)
        raise ValueError(f"trace {name!r} takes frames of shape {frame_shape} ({dtype}), got "
                         f"{_short(value)} of shape {arr.shape} ({arr.dtype}){hint}; else "
                         f"pass one frame of shape {frame_shape} (or a scalar to fill it)")
    return _cast(arr, dtype, value, name)


def coerce_frames(values, dtype, frame_shape, name) -> np.ndarray:
    """Many frames along the first axis as ``dtype``, shape ``(n, *frame_shape)``."""
    arr = _as_array(values, dtype, name)
    if arr.ndim != len(frame_shape) + 1 or arr.shape[1:] != frame_shape:
        hint = declare_hint(name, arr[0]) if arr.ndim and len(arr) else ""
        raise ValueError(f"trace {name!r} appends frames of shape {frame_shape} ({dtype}), got "
                         f"an array of shape {arr.shape}{hint}; else pass shape "
                         f"(n, *{frame_shape})")
    return _cast(arr, dtype, values, name, frame_axis=1)
