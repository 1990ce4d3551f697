"""Schedules of a setting over a run: what a hyper-parameter is at some point of it.

One rule for every family: ``"constant"``, or ``"linear"``, falling from the set value to 0 at
the run's ``total_steps`` (RL-Zoo's ``lin_<value>``).
"""

from __future__ import annotations

import math

__all__ = ["SCHEDULES", "scheduled"]

#: What a schedule may be: constant, or falling linearly to 0 at ``total_steps``.
SCHEDULES = ("constant", "linear")


def scheduled(value: float, schedule: str, progress_remaining: float) -> float:
    """``value`` under a schedule: ``"constant"``, or ``"linear"`` (down to 0 at the end, as
    RL-Zoo's ``lin_<value>``; an infinite value stays infinite); ``progress_remaining`` goes
    from 1 to 0 over the run.

    Example:
        >>> scheduled(1e-3, "linear", 0.25), scheduled(1e-3, "constant", 0.25)
        (0.00025, 0.001)
        >>> scheduled(2.0, "linear", -0.5)   # past the run's end it stays at 0
        0.0
    """
    if schedule == "linear" and value != math.inf:
        return value * max(progress_remaining, 0.0)
    return value
