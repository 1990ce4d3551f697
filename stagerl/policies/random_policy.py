"""RandomPolicy: uniform actions over an action space."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import numpy as np

from stagerl.core.dispatch import plan
from stagerl.policies.base import Policy, as_rng

__all__ = ["RandomPolicy"]

# Actions are drawn from the rng in blocks: one ``rng.integers`` call costs ~1.2 µs, a sixth of
# a CartPole step, while a block of 128 costs ~2 µs. numpy draws a block element by element, so
# the actions are exactly those of one ``int(rng.integers(n))`` call per action.
_BLOCK = 128


class RandomPolicy(Policy):
    """Uniform random actions over ``action_space``, or over the env's action space if ``None``.

    For a ``Discrete(n, start)`` space the actions are Python ints, ``int(rng.integers(n)) +
    start``; for a ``Box`` with finite bounds and a float dtype, ``low + (high - low) *
    rng.random(shape)`` in the space's dtype; for any other space a copy of the space seeded
    once from ``rng`` samples. The same seed gives the same actions. When the env has a
    ``legal_actions_mask`` (a boolean array, one entry per action) only legal actions are drawn.

    Args:
        action_space: a ``gymnasium.spaces.Space``, or ``None`` for the env's.
        rng: an int seed, an ``np.random.Generator`` (used as is) or ``None``.

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D()
        >>> env.reset()
        >>> a = [rl.plan(rl.RandomPolicy(rng=0), env) for _ in range(2)]
        >>> a[0] == a[1] and a[0] in (0, 1)
        True
        >>> rl.RandomPolicy(rng=0)
        RandomPolicy(action_space=None)
    """

    def __init__(self, action_space: gymnasium.spaces.Space | None = None, rng: Any = None):
        if action_space is not None and not isinstance(action_space, gymnasium.spaces.Space):
            raise TypeError(
                "RandomPolicy(action_space) needs a gymnasium.spaces.Space or None (the env's "
                f"action space), got {action_space!r} of type {type(action_space).__name__}"
            )
        self.action_space = action_space
        self.rng = as_rng(rng)
        self._bound_env: Any = None
        self._space: Any = None
        self._buffer: list[Any] = []  # pending pre-drawn actions, popped from the end
        self._draw_block: Any = None
        self._sample: Any = None
        self._masked = False

    def _bind(self, env: Any) -> None:
        """Resolve, once per env, the space to sample and how to sample it."""
        space = self.action_space if self.action_space is not None else env.action_space
        self._bound_env = env
        self._masked = hasattr(type(env), "legal_actions_mask") or hasattr(
            env, "legal_actions_mask"
        )
        if space is self._space and space is not None:
            return
        if not isinstance(space, gymnasium.spaces.Space):
            raise TypeError(
                f"RandomPolicy needs a gymnasium.spaces.Space, but {type(env).__name__}'s "
                f"action_space is {space!r}; pass RandomPolicy(action_space=...)"
            )
        self._space = space
        self._buffer = []
        self._draw_block = self._sample = None
        if isinstance(space, gymnasium.spaces.Discrete):
            n, start = int(space.n), int(space.start)

            def draw_block():
                return (self.rng.integers(n, size=_BLOCK) + start).tolist()[::-1]

            self._draw_block = draw_block
        elif (
            isinstance(space, gymnasium.spaces.Box)
            and np.issubdtype(space.dtype, np.floating)
            and space.is_bounded("both")
        ):
            low, width, dtype = space.low, space.high - space.low, space.dtype
            shape = space.shape

            def draw_block():
                block = (low + width * self.rng.random((_BLOCK, *shape))).astype(dtype, copy=False)
                return list(block[::-1])

            self._draw_block = draw_block
        else:
            sampler = copy.deepcopy(space)
            sampler.seed(int(self.rng.integers(2**63)))
            self._sample = sampler.sample

    def _draw(self, env: Any) -> Any:
        if self._masked:
            return self._draw_masked(env)
        if self._draw_block is None:
            return self._sample()
        self._buffer = self._draw_block()
        return self._buffer.pop()

    def _draw_masked(self, env: Any) -> Any:
        mask = np.asarray(env.legal_actions_mask, dtype=bool)
        space = self._space
        if isinstance(space, gymnasium.spaces.Discrete):
            legal = np.flatnonzero(mask)
            if legal.size == 0:
                raise ValueError(f"{type(env).__name__}.legal_actions_mask allows no action")
            return int(legal[self.rng.integers(legal.size)]) + int(space.start)
        if self._sample is None:
            sampler = copy.deepcopy(space)
            sampler.seed(int(self.rng.integers(2**63)))
            self._sample = sampler.sample
        return self._sample(mask=mask.astype(np.int8))

    def __repr__(self) -> str:
        return f"RandomPolicy(action_space={self.action_space})"


@plan.dispatch
def _plan_random_policy(policy: RandomPolicy, env):
    # The fast path is two checks and a list pop; everything else is resolved by _bind.
    if env is not policy._bound_env:
        policy._bind(env)
    buffer = policy._buffer
    if buffer and not policy._masked:
        return buffer.pop()
    return policy._draw(env)
