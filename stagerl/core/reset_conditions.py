"""Reset conditions: ``check(policy, env) -> bool``, asked before every step, the first one too.

When a reset condition is true, ``run`` ends the episode (PostEpisode) and resets the env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trajectories.checks import require_positive_int

__all__ = ["ResetCondition", "ResetIfEnvTerminated", "ResetAfterNSteps"]


class ResetCondition:
    """Base class of reset conditions: ``check(policy, env)`` is true when the episode should end.

    Example:
        >>> import stagerl as rl
        >>> class ResetAtRightEnd(rl.ResetCondition):
        ...     def check(self, policy, env):
        ...         return env.state == 6
        >>> ResetAtRightEnd().check(None, rl.RandomWalk1D())
        False
    """

    def check(self, policy: Any, env: Any) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement check(policy, env)")


@dataclass
class ResetIfEnvTerminated(ResetCondition):
    """True when the episode ended: ``env.is_terminated or env.is_truncated`` (the default).

    Never true for a vector env (flags as arrays): its sub-envs reset themselves, so the run's
    one episode spans from ``env.reset()`` to the stop.

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D(); env.reset()
        >>> rl.ResetIfEnvTerminated().check(None, env)
        False
    """

    def check(self, policy: Any, env: Any) -> bool:
        terminated = env.is_terminated
        if isinstance(terminated, np.ndarray) and terminated.ndim:
            return False
        return bool(terminated or env.is_truncated)


@dataclass
class ResetAfterNSteps(ResetCondition):
    """True on every ``(n+1)``-th call, so each episode has ``n`` steps (for continuing tasks).

    ``run`` asks before every step, the first one too: with ``n=3`` the answers are
    F, F, F, T, F, F, F, T, ...

    Example:
        >>> import stagerl as rl
        >>> reset = rl.ResetAfterNSteps(3)
        >>> [reset.check(None, None) for _ in range(8)]
        [False, False, False, True, False, False, False, True]
    """

    n: int
    t: int = 0

    def __post_init__(self) -> None:
        require_positive_int("ResetAfterNSteps", "n", self.n)

    def check(self, policy: Any, env: Any) -> bool:
        self.t += 1
        if self.t > self.n:
            self.t = 0
            return True
        return False
