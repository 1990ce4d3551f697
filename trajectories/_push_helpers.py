"""Helpers of `Trajectory.push`: the lanes a first push carries, one env's values given a lane
axis, the columns a bulk insert stores."""

from __future__ import annotations

import numpy as np

from trajectories._casting import fast_tables
from trajectories.lanes.base import _NO_ROWS
from trajectories.nested import first_leaf, is_nested

__all__ = ["lanes_of_first_push", "lane_axis_values", "split_truncated"]

# A Python int beyond int64 is no number numpy makes an array of (the laned cast refuses it).
_INT64 = (-(2**63), 2**63 - 1)


def lanes_of_first_push(container, step: dict):
    """The number of lanes a first push into an empty ``container`` carries, or None.

    A push whose ``state`` has one more leading axis than the state trace's frames (and at
    least two entries along it) comes from a vector env. One sub-env is ambiguous with a
    single env pushing a wrongly shaped state, so it is never guessed: say ``n_lanes=1``.
    """
    if "state" not in step or "state" not in container.keys():
        return None
    ref = first_leaf(container.take("state", _NO_ROWS))  # a nested state: its first leaf
    if ref.dtype == object:  # an elastic trace that has not seen a frame: nothing to compare
        return None
    state = step["state"]
    if is_nested(state) and not is_nested(container.take("state", _NO_ROWS)):
        return None
    shape = np.shape(first_leaf(state))
    if len(shape) == ref.ndim and shape[1:] == ref.shape[1:] and shape[0] >= 2:
        return int(shape[0])
    return None


def lane_axis_values(container, specs: dict, step: dict) -> dict:
    """One env's values of ``step`` as a push into every lane of the laned ``container`` (the
    same value in each lane; ``specs``: the caller's cache, names -> each name's spec).

    A value that numpy stores exactly in its trace (`fast_tables`: a scalar of a scalar trace,
    an array of the trace's frame of a dtype stored exactly) comes as a new array of the
    trace's dtype, which the laned cast takes as it is; anything else (nested values, names
    that are not traces, values that need the checked cast) as a read-only broadcast view, for
    the laned cast to check, convert or refuse. Either way every lane holds the same values.
    """
    keys = tuple(step)
    plan = specs.get(keys)
    if plan is None:
        plan = specs[keys] = tuple(_lane_axis_spec(container, name) for name in keys)
    n, row = container.n_lanes, {}
    for (name, value), spec in zip(step.items(), plan, strict=True):
        if spec is not None:
            dtype, frame, scalars, exact = spec
            if (type(value) in scalars and not frame and (type(value) is not int
                                                          or _INT64[0] <= value <= _INT64[1])) \
                    or (type(value) is np.ndarray and value.dtype in exact
                        and value.shape == frame):
                out = np.empty((n, *frame), dtype)
                try:
                    out[...] = value
                except OverflowError:  # a Python int out of the trace's range: the cast says so
                    pass
                else:
                    row[name] = out
                    continue
        row[name] = np.broadcast_to(value, (n, *np.shape(value)))
    return row


def _lane_axis_spec(container, name: str):
    """``(dtype, frame, scalar types, array dtypes)`` that numpy stores exactly into trace
    ``name`` of ``container``, or None (not a trace, a nested or not yet typed one)."""
    if name not in container.keys():
        return None
    ref = container.take(name, _NO_ROWS)
    if is_nested(ref) or ref.dtype == object:
        return None
    scalars, exact = fast_tables(ref.dtype)
    return (ref.dtype, ref.shape[1:], scalars, exact) if exact else None


def split_truncated(columns: dict, keys) -> dict:
    """The columns to store: all but ``truncated`` unless the traces have it. ``truncated``
    must hold one flag per step (checked here, before anything is written)."""
    if "truncated" not in columns or "truncated" in keys:
        return columns
    flags = np.asarray(columns["truncated"])
    steps = min((np.shape(v)[0] for k, v in columns.items() if k != "truncated" and np.ndim(v)),
                default=None)
    if flags.ndim != 1 or flags.dtype.kind not in "biu" or (steps is not None and
                                                             len(flags) != steps):
        raise ValueError(f"truncated must hold one bool per step ({steps} steps), got "
                         f"{columns['truncated']!r}")
    return {k: v for k, v in columns.items() if k != "truncated"}
