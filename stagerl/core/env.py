"""The interfaces of environments the run loop talks to: `Env`, and `VectorEnv` (many sub-envs)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Env", "VectorEnv"]


class Env:
    """Base class of environments.

    Subclasses implement :meth:`reset`, :meth:`act` and the properties ``state``, ``reward``,
    ``is_terminated``, ``is_truncated``, ``action_space`` and ``state_space``.

    * ``is_terminated``: the MDP reached a terminal state; nothing is bootstrapped past it.
    * ``is_truncated``: the episode was cut (a time limit); learning bootstraps from ``state``.
    * ``last_action`` is ``None`` until the run loop's first act; the loop sets it right after
      every ``env.act(action)`` (one place records it), so hooks can read it. :meth:`reset`
      leaves it.
    * ``num_envs``, ``single_action_space`` and ``single_state_space``: the single-env view
      that every env answers, so code reads one sub-env's spaces and the number of sub-envs the
      same way from one env (1, and its own spaces) and from a :class:`VectorEnv`.

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D()
        >>> env.reset(); env.act(1); (env.state, env.reward)
        (4, 0.0)
        >>> env.num_envs, env.single_state_space == env.state_space
        (1, True)
    """

    last_action: Any = None
    #: Sub-envs stepped by one ``act``: 1, except for a :class:`VectorEnv`.
    num_envs: int = 1

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

    @property
    def single_action_space(self) -> Any:
        """One sub-env's action space: for a single env, ``action_space``."""
        return self.action_space

    @property
    def single_state_space(self) -> Any:
        """One sub-env's state space: for a single env, ``state_space``."""
        return self.state_space


class VectorEnv(Env):
    """Base class of environments that step ``num_envs`` sub-envs (lanes) at once.

    What marks a vector env for the loop, the hooks and the Agent. ``state``, ``reward``,
    ``is_terminated`` and ``is_truncated`` hold one entry per sub-env; ``act`` takes one action
    per sub-env; sub-envs reset themselves when their episode ends, so the loop's single
    episode spans the whole run (see ``docs/vector_envs.md``).

    Subclasses also provide:

    * ``num_envs``: the number of sub-envs;
    * ``episode_start``: per sub-env, ``state`` is the first state of an episode;
    * ``stepped``: per sub-env, the last ``act`` was a real step (not only a reset);
    * ``final_state``: the state each sub-env's last step led to (the true last observation
      where an episode ended and the sub-env was reset in the same step);
    * ``single_action_space`` and ``single_state_space``: one sub-env's spaces;
    * ``autoreset_mode``: gymnasium's ``AutoresetMode.NEXT_STEP`` (the act after an episode's
      end only resets that sub-env) or ``SAME_STEP`` (it is reset within the ending act);
    * ``any_episode_start`` and ``any_episode_end``: whether any sub-env started or ended an
      episode in the last act (read on every act; subclasses may cache them).

    :class:`~stagerl.GymVectorEnv` adapts gymnasium's vector envs.
    """

    @property
    def any_episode_start(self) -> bool:
        return bool(np.any(self.episode_start))

    @property
    def any_episode_end(self) -> bool:
        return bool(np.any(np.logical_or(self.is_terminated, self.is_truncated)))

    @property
    def episode_start(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement episode_start")

    @property
    def stepped(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement stepped")

    @property
    def final_state(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement final_state")

    @property
    def single_action_space(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement single_action_space")

    @property
    def single_state_space(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement single_state_space")
