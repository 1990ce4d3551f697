"""The Env interface the run loop talks to."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["Env"]


class Env:
    """Base class of environments.

    Subclasses implement :meth:`reset`, :meth:`act` and the properties ``state``, ``reward``,
    ``is_terminated``, ``is_truncated``, ``action_space`` and ``state_space``.

    * ``is_terminated``: the MDP reached a terminal state; nothing is bootstrapped past it.
    * ``is_truncated``: the episode was cut (a time limit); learning bootstraps from ``state``.
    * ``last_action`` is ``None`` until the first :meth:`act`; :meth:`reset` leaves it. The base
      class records it around every subclass's ``act``, so hooks can read it.

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D()
        >>> env.reset(); env.act(1); (env.state, env.reward, env.last_action)
        (4, 0.0, 1)
    """

    last_action: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        act = cls.__dict__.get("act")
        # Subclasses that set last_action themselves (on the hot path) opt out of the wrapper.
        if act is None or getattr(act, "_records_last_action", False):
            return

        @functools.wraps(act)
        def act_recording_action(self, action):
            result = act(self, action)
            self.last_action = action
            return result

        act_recording_action._records_last_action = True
        cls.act = act_recording_action

    def reset(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def act(self, action: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement act(action)")

    @property
    def state(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement the state property")

    @property
    def reward(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement the reward property")

    @property
    def is_terminated(self) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement is_terminated")

    @property
    def is_truncated(self) -> bool:
        return False

    @property
    def action_space(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement action_space")

    @property
    def state_space(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement state_space")
