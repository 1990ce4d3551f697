"""Small deterministic environments for tests and examples."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Discrete

from stagerl.core.env import Env
from stagerl.envs.random_walk import discrete_action

__all__ = ["FixedLengthEnv"]


class FixedLengthEnv(Env):
    """An episode of exactly ``length`` steps, optionally cut short by a time limit.

    ``state`` counts the steps taken in the episode (0 after :meth:`reset`) and every step gives
    reward ``1.0``, whatever the action (0 or 1), so the return of an episode is its length. The
    episode terminates when ``state == length``; with ``time_limit < length`` it is truncated
    instead when ``state == time_limit``: the case where learning must bootstrap.

    Args:
        length: steps until the terminal state, at least 1.
        time_limit: steps until truncation, or ``None`` for none.

    Example:
        >>> env = FixedLengthEnv(length=5, time_limit=2)
        >>> env.reset(); env.act(0); env.act(1)
        >>> env.state, env.reward, env.is_terminated, env.is_truncated
        (2, 1.0, False, True)
    """

    state: int = 0
    reward: float = 0.0
    is_terminated: bool = False
    is_truncated: bool = False

    def __init__(self, length: int = 5, time_limit: int | None = None):
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise ValueError(f"FixedLengthEnv: length must be an int >= 1, got length={length!r}")
        if time_limit is not None and (
            isinstance(time_limit, bool)
            or not isinstance(time_limit, (int, np.integer))
            or time_limit < 1
        ):
            raise ValueError(
                "FixedLengthEnv: time_limit must be an int >= 1 or None, got "
                f"time_limit={time_limit!r}"
            )
        self.length = int(length)
        self.time_limit = None if time_limit is None else int(time_limit)
        self._action_space = Discrete(2)
        self._state_space = Discrete(self.length + 1)

    @property
    def action_space(self) -> Discrete:
        return self._action_space

    @property
    def state_space(self) -> Discrete:
        return self._state_space

    def reset(self) -> None:
        self.state = 0
        self.reward = 0.0
        self.is_terminated = False
        self.is_truncated = False

    def act(self, action: Any) -> None:
        if self.is_terminated or self.is_truncated:
            raise RuntimeError(f"{self!r}: the episode has ended; call reset() before act()")
        discrete_action(action, 2, self)
        self.state += 1
        self.reward = 1.0
        self.is_terminated = self.state == self.length
        self.is_truncated = not self.is_terminated and self.state == self.time_limit

    def __repr__(self) -> str:
        return f"FixedLengthEnv(length={self.length}, time_limit={self.time_limit})"
