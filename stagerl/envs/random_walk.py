"""RandomWalk1D: the smallest test environment, as in ReinforcementLearning.jl."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Discrete

from stagerl.core.env import Env

__all__ = ["RandomWalk1D", "discrete_action"]


def discrete_action(action: Any, n: int, owner: Any) -> int:
    """``action`` as an int in ``range(n)``, or a ``ValueError`` naming it and ``owner``.

    Accepts ints, numpy integers and 0-d integer arrays (what an argmax returns); bools and
    floats are refused so that a policy returning the wrong kind of value is caught early.
    """
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action[()]
    if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
        if 0 <= action < n:
            return int(action)
    raise ValueError(
        f"{owner!r} got action {action!r} (of type {type(action).__name__}); its actions are "
        f"the ints 0..{n - 1}"
    )


class RandomWalk1D(Env):
    """A walk on the states ``0..n-1``: action 0 steps left, 1 steps right.

    The walk starts at ``start`` (default ``n // 2``) and terminates at either end, with reward
    ``rewards[0]`` at state 0 and ``rewards[1]`` at state ``n - 1``; every other step gives 0.
    ``state`` is a Python int; the spaces are ``Discrete(n)`` and ``Discrete(2)``.

    Args:
        n: number of states, at least 3.
        start: the first state of every episode, an inner state (``1..n-2``).
        rewards: the rewards at the left and the right end.

    Raises:
        ValueError: ``n < 3``, ``start`` not an inner state, or ``rewards`` not two numbers.

    Example:
        >>> env = RandomWalk1D()
        >>> env.reset(); env.state
        3
        >>> env.act(1); env.act(1); env.act(1)
        >>> env.state, env.reward, env.is_terminated
        (6, 1.0, True)
    """

    # Plain attributes shadow the base class's properties: the loop reads them every step.
    state: int = 0
    reward: float = 0.0
    is_terminated: bool = False
    is_truncated: bool = False

    def __init__(self, n: int = 7, start: int | None = None, rewards: tuple = (-1.0, 1.0)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"RandomWalk1D: n must be an int, got n={n!r}")
        if n < 3:
            raise ValueError(
                f"RandomWalk1D needs n >= 3 states (two ends and one inner), got n={n}"
            )
        self.n = int(n)
        if start is None:
            start = self.n // 2
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
            raise TypeError(f"RandomWalk1D: start must be an int or None, got start={start!r}")
        if not 0 < start < self.n - 1:
            raise ValueError(
                f"RandomWalk1D: start must be an inner state 1..{self.n - 2} (the ends are "
                f"terminal), got start={start}"
            )
        self.start = int(start)
        try:
            left, right = (float(r) for r in rewards)
        except (TypeError, ValueError):
            raise ValueError(
                f"RandomWalk1D: rewards must be two numbers (left end, right end), got "
                f"rewards={rewards!r}"
            ) from None
        self.rewards = (left, right)
        self._action_space = Discrete(2)
        self._state_space = Discrete(self.n)
        self.state = self.start

    @property
    def action_space(self) -> Discrete:
        return self._action_space

    @property
    def state_space(self) -> Discrete:
        return self._state_space

    def reset(self) -> None:
        self.state = self.start
        self.reward = 0.0
        self.is_terminated = False

    def act(self, action: Any) -> None:
        if action == 1 and type(action) is int:
            state = self.state + 1
        elif action == 0 and type(action) is int:
            state = self.state - 1
        else:
            state = self.state + (1 if discrete_action(action, 2, self) else -1)
        # As in RL.jl, acting at an end (a continuing-task reset condition) stays on the line.
        if state <= 0:
            self.state, self.reward, self.is_terminated = 0, self.rewards[0], True
        elif state >= self.n - 1:
            self.state, self.reward, self.is_terminated = self.n - 1, self.rewards[1], True
        else:
            self.state, self.reward, self.is_terminated = state, 0.0, False

    def __repr__(self) -> str:
        return f"RandomWalk1D(n={self.n}, start={self.start}, rewards={self.rewards})"
