"""The Policy base class."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Policy", "as_rng"]


def as_rng(rng: int | np.random.Generator | None) -> np.random.Generator:
    """An ``np.random.Generator`` from a seed, a generator (used as is) or ``None`` (fresh entropy).

    Example:
        >>> int(as_rng(0).integers(10)) == int(as_rng(0).integers(10))
        True
    """
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(
        f"rng must be an int seed, an np.random.Generator or None, got {rng!r} of type "
        f"{type(rng).__name__}"
    )


class Policy:
    """Base class of everything the run loop can drive.

    A policy answers ``plan(policy, env)`` and may define ``push`` and ``optimise`` methods for the
    stages it cares about; the others fall back to no-ops. Policies that hold torch modules
    override :meth:`to`, :meth:`state_dict` and :meth:`load_state_dict`.

    Example:
        >>> import stagerl as rl
        >>> class AlwaysLeft(rl.Policy):
        ...     pass
        >>> @rl.plan.dispatch
        ... def plan(policy: AlwaysLeft, env: rl.Env):
        ...     return 0
        >>> hook = rl.run(AlwaysLeft(), rl.RandomWalk1D(), hook=rl.StepsPerEpisode())
        >>> hook.steps
        [3]

        Single and vector envs: with a :class:`~stagerl.GymVectorEnv`, ``env.state`` holds one
        row per sub-env and ``plan`` returns one action per sub-env. Written on a leading batch
        axis, one ``plan`` serves both, with one forward pass for the whole batch (a policy
        that must act differently dispatches on ``env: rl.GymVectorEnv``, the more specific
        type). The Agent and the per-episode hooks need nothing more:

        >>> import numpy as np
        >>> class LeanFollower(rl.Policy):  # CartPole: push the way the pole falls
        ...     pass
        >>> @rl.plan.dispatch
        ... def plan(policy: LeanFollower, env: rl.Env):
        ...     state = np.asarray(env.state)  # (4,) for one env, (num_envs, 4) for a vector env
        ...     action = (state[..., 2] + state[..., 3] > 0).astype(np.int64)
        ...     return action if action.ndim else int(action)
        >>> one = rl.run(LeanFollower(), rl.GymEnv("CartPole-v1", seed=0),
        ...              rl.StopAfterNEpisodes(1, progress=False), rl.StepsPerEpisode())
        >>> many = rl.run(LeanFollower(), rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0),
        ...               rl.StopAfterNEpisodes(4, progress=False), rl.StepsPerEpisode())
        >>> one.steps[0] in many.steps  # sub-env 0 is seeded as the single env
        True
    """

    def to(self, device: Any) -> Policy:
        """Move the policy's tensors to ``device``; returns ``self``."""
        return self

    def state_dict(self) -> dict[str, Any]:
        """The policy's learnable state (plain tensors and arrays)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        if state:
            raise ValueError(
                f"{type(self).__name__} has no state to load, got keys {sorted(state)}; "
                f"override load_state_dict to restore them"
            )
