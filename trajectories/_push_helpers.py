"""Helpers of `Trajectory.push`: the lanes a first push carries, the columns a bulk insert
stores."""

from __future__ import annotations

import numpy as np

from trajectories.lanes.base import _NO_ROWS
from trajectories.nested import first_leaf, is_nested

__all__ = ["lanes_of_first_push", "split_truncated"]


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
