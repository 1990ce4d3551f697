"""A `Trajectory` over lanes: one per sub-env of a vector env (see `LanedEpisodesBuffer`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from trajectories.lanes.base import _NO_ROWS, LanedEpisodesBuffer

__all__ = ["split_lanes", "watch_lanes", "lanes_of_first_push", "watching_first_push",
           "restore_lanes", "split_truncated"]


def split_lanes(trajectory, n_lanes: int):
    """Make an empty ``trajectory`` store ``n_lanes`` lanes (one per sub-env of a vector env).

    Its container becomes a `LanedEpisodesBuffer` over the same traces (the total capacity is
    split over the lanes) and ``trajectory.push`` takes one value per lane, with optional
    ``episode_start=`` and ``lanes=`` (see `LanedEpisodesBuffer.push`); the controller counts
    one insert per lane that got a step. ``trajectory.extend(lane, ...)`` bulk-inserts into one
    lane. Asking again for the same number of lanes does nothing. Returns the trajectory.

    Example:
        >>> import numpy as np
        >>> from trajectories import CircularArraySARTSTraces, Trajectory
        >>> t = split_lanes(Trajectory(CircularArraySARTSTraces(capacity=100)), 2)
        >>> t.push(state=np.array([0, 10]))
        >>> t.push(state=np.array([1, 11]), action=np.array([0, 0]), reward=np.zeros(2),
        ...        terminal=np.array([False, False]))
        >>> len(t), t.controller.n_inserted, t.container.n_lanes
        (2, 2, 2)
    """
    container = trajectory.container
    if isinstance(container, LanedEpisodesBuffer):
        if container.n_lanes != n_lanes:
            raise ValueError(f"the trajectory already stores {container.n_lanes} lanes, got "
                             f"n_lanes={n_lanes}; use one trajectory per vector env")
        _install(trajectory, container)
        return trajectory
    if len(np.asarray(container.step_numbers)):
        raise ValueError(f"split_lanes needs an empty trajectory, this one holds "
                         f"{len(container)} rows; split it before the first push")
    laned = LanedEpisodesBuffer(container, n_lanes)
    trajectory.container = laned
    _install(trajectory, laned)
    return trajectory


def _install(trajectory, laned) -> None:
    # Instance attributes: the class's single-lane methods stay as they are.
    trajectory.n_lanes = laned.n_lanes
    trajectory.push = _LanedPush(trajectory, laned)
    trajectory.extend = _LanedExtend(trajectory, laned)


def watching_first_push(trajectory) -> bool:
    """Whether ``trajectory`` waits for its first push to decide about lanes."""
    return isinstance(vars(trajectory).get("push"), _FirstPush)


def restore_lanes(trajectory, first_push: bool) -> None:
    """Install again, on a copy of a trajectory, what the original had: its lanes' push, or
    the wait for the first push."""
    if isinstance(trajectory.container, LanedEpisodesBuffer):
        _install(trajectory, trajectory.container)
    elif first_push:
        trajectory.push = _FirstPush(trajectory)


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


def watch_lanes(trajectory) -> None:
    """Called by `Trajectory` when built: split it into ``trajectory.n_lanes`` lanes when that
    is given (or the container has lanes), else decide at the first push."""
    container = trajectory.container
    if isinstance(container, LanedEpisodesBuffer):
        if trajectory.n_lanes not in (None, container.n_lanes):
            raise ValueError(f"n_lanes={trajectory.n_lanes} but the container has "
                             f"{container.n_lanes} lanes")
        _install(trajectory, container)
    elif trajectory.n_lanes is not None:
        split_lanes(trajectory, trajectory.n_lanes)
    elif "state" in container.keys() and not len(np.asarray(container.step_numbers)):
        trajectory.push = _FirstPush(trajectory)


class _FirstPush:
    """The first ``trajectory.push``: one state per sub-env splits the trajectory into lanes;
    then it steps aside, leaving the class's ``push`` (single env) or the laned one. A push that
    raises leaves the trajectory as it was (no lanes), still waiting for its first push."""

    __slots__ = ("trajectory",)

    def __init__(self, trajectory):
        self.trajectory = trajectory

    def __call__(self, **step) -> None:
        trajectory = self.trajectory
        container = trajectory.container
        n = lanes_of_first_push(container, step)
        del trajectory.push
        try:
            if n is None:
                trajectory.push(**step)
                return
            split_lanes(trajectory, n)
            trajectory.container.inferred_from = np.shape(step["state"])
            trajectory.push(**step)
        except Exception as laned_error:
            # A failed push changes nothing, lanes included: the trajectory waits again.
            for name in ("push", "extend"):
                vars(trajectory).pop(name, None)
            trajectory.container, trajectory.n_lanes = container, None
            trajectory.push = self
            if n is None or not isinstance(laned_error, (TypeError, ValueError)):
                raise
            # The lanes were a guess: say what is wrong with the push taken as one env's step
            # (a state of the wrong shape or dtype for its trace, most likely).
            try:
                type(trajectory).push(trajectory, **step)
            except (TypeError, ValueError) as single_error:
                raise single_error from laned_error
            del trajectory.push  # it fitted one env after all


class _LanedPush:
    """``trajectory.push`` of a laned trajectory: push every lane, count the lanes' steps."""

    __slots__ = ("trajectory", "push_row")

    def __init__(self, trajectory, container):
        self.trajectory = trajectory
        self.push_row = container._push_row

    def __call__(self, *, episode_start=None, lanes=None, restart=False, **step) -> None:
        row = step
        if "truncated" in step and "truncated" not in self.push_row.__self__.keys():
            row = {k: v for k, v in step.items() if k != "truncated"}  # the controller's alone
        n = self.push_row(row, episode_start, lanes, restart)
        if n:
            full = self.push_row.__self__.last_full
            data = step if full is None else _StepsOnly(step, full)
            self.trajectory.controller.on_insert(n, data)


class _StepsOnly(Mapping):
    """The pushed values of the lanes that took a step, selected when a controller reads them
    (most controllers only count)."""

    __slots__ = ("step", "full")

    def __init__(self, step, full):
        self.step, self.full = step, full

    def __getitem__(self, name):
        return np.asarray(self.step[name])[self.full]

    def __iter__(self):
        return iter(self.step)

    def __len__(self):
        return len(self.step)


class _LanedExtend:
    """``trajectory.extend(lane, ...)`` of a laned trajectory."""

    __slots__ = ("trajectory", "container")

    def __init__(self, trajectory, container):
        self.trajectory, self.container = trajectory, container

    def __call__(self, lane: int, *, new_episode: bool = True, **columns) -> int:
        stored = split_truncated(columns, self.container.keys())
        n = self.container.extend(lane, new_episode=new_episode, **stored)
        if n:
            self.trajectory.controller.on_insert(n, columns)
        return n


def lanes_of_first_push(container, step: dict):
    """The number of lanes a first push into an empty ``container`` carries, or None.

    A push whose ``state`` has one more leading axis than the state trace's frames (and at
    least two entries along it) comes from a vector env. One sub-env is ambiguous with a
    single env pushing a wrongly shaped state, so it is never guessed: say ``n_lanes=1``.
    """
    if "state" not in step or "state" not in container.keys():
        return None
    ref = container.take("state", _NO_ROWS)
    if ref.dtype == object:  # an elastic trace that has not seen a frame: nothing to compare
        return None
    shape = np.shape(step["state"])
    if len(shape) == ref.ndim and shape[1:] == ref.shape[1:] and shape[0] >= 2:
        return int(shape[0])
    return None
