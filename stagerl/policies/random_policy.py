"""RandomPolicy: uniform actions over an action space, for single and vector envs."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector.utils import batch_space

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan
from stagerl.core.env import VectorEnv
from stagerl.core.policy import Policy, as_rng

__all__ = ["RandomPolicy"]

# Actions are drawn from the rng in blocks: one ``rng.integers`` call costs ~1.2 µs, a sixth of
# a CartPole step, while a block of 128 costs ~2 µs. numpy draws a block element by element, so
# the actions are exactly those of one ``int(rng.integers(n))`` call per action.
_BLOCK = 128
# On a vector env a block holds this many batches of actions (one per act).
_VECTOR_BLOCK = 64


class _Draws:
    """How to draw actions from one space: in blocks (Discrete, bounded float Box) or one at a
    time from a seeded copy of the space. Plain data, so a policy pickles with its pending draws.

    ``batch`` is the number of sub-envs (``None`` for a single env): blocks then hold batches.
    """

    def __init__(self, space: Any, rng: np.random.Generator, batch: int | None) -> None:
        self.space, self.batch = space, batch
        self.pending: list[Any] = []  # drawn, not yet handed out; popped from the end
        self.sampler = None
        if isinstance(space, gymnasium.spaces.Discrete):
            self.kind = "discrete"
        elif (isinstance(space, gymnasium.spaces.Box) and np.issubdtype(space.dtype, np.floating)
              and space.is_bounded("both")):
            self.kind = "box"
        else:
            self.kind = "sample"
            self.sampler = copy.deepcopy(space if batch is None else batch_space(space, batch))
            self.sampler.seed(int(rng.integers(2**63)))

    def next(self, rng: np.random.Generator) -> Any:
        if not self.pending:
            self.pending = self._block(rng)
        return self.pending.pop()

    def _block(self, rng: np.random.Generator) -> list:
        space, batch = self.space, self.batch
        if self.kind == "sample":
            return [self.sampler.sample()]
        size = (_BLOCK,) if batch is None else (_VECTOR_BLOCK, batch)
        if self.kind == "discrete":
            block = rng.integers(int(space.n), size=size) + int(space.start)
            return (block.tolist() if batch is None else list(block))[::-1]
        block = space.low + (space.high - space.low) * rng.random((*size, *space.shape))
        return list(block.astype(space.dtype, copy=False))[::-1]


class RandomPolicy(Policy):
    """Uniform random actions over ``action_space``, or over the env's action space if ``None``.

    For a ``Discrete(n, start)`` space the actions are Python ints, ``int(rng.integers(n)) +
    start``; for a ``Box`` with finite bounds and a float dtype, ``low + (high - low) *
    rng.random(shape)`` in the space's dtype; for any other space a copy of the space seeded
    once from ``rng`` samples. The same seed gives the same actions. When the env has a
    ``legal_actions_mask`` (a boolean array, one entry per action) only legal actions are drawn.
    On a vector env one action per sub-env is drawn (one batch per act).

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
        self._draws: _Draws | None = None
        self._masked = False

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_bound_env"] = None  # bound again on the next plan; the pending draws are kept
        return state

    def _bind(self, env: Any) -> None:
        """Resolve, once per env, the space to sample and how (pending draws are kept while the
        space stays the same)."""
        vector = isinstance(env, VectorEnv)
        space = self.action_space
        if space is None or (vector and space == env.action_space):
            space = env.single_action_space if vector else env.action_space
        if not isinstance(space, gymnasium.spaces.Space):
            raise TypeError(
                f"RandomPolicy needs a gymnasium.spaces.Space, but {type(env).__name__}'s "
                f"action_space is {space!r}; pass RandomPolicy(action_space=...)"
            )
        self._bound_env = env
        self._masked = not vector and (
            hasattr(type(env), "legal_actions_mask") or hasattr(env, "legal_actions_mask")
        )
        batch = env.num_envs if vector else None
        draws = self._draws
        if draws is None or draws.batch != batch or not (draws.space == space):
            self._draws = _Draws(space, self.rng, batch)

    def _draw_masked(self, env: Any) -> Any:
        mask = np.asarray(env.legal_actions_mask, dtype=bool)
        space = self._draws.space
        if isinstance(space, gymnasium.spaces.Discrete):
            legal = np.flatnonzero(mask)
            if legal.size == 0:
                raise ValueError(f"{type(env).__name__}.legal_actions_mask allows no action")
            return int(legal[self.rng.integers(legal.size)]) + int(space.start)
        draws = self._draws
        if draws.sampler is None:
            draws.sampler = copy.deepcopy(space)
            draws.sampler.seed(int(self.rng.integers(2**63)))
        return draws.sampler.sample(mask=mask.astype(np.int8))

    def __repr__(self) -> str:
        return f"RandomPolicy(action_space={self.action_space})"


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_random_policy(policy: RandomPolicy, env):
    # The fast path is two checks and a list pop; everything else is resolved by _bind.
    if env is not policy._bound_env:
        policy._bind(env)
    if policy._masked:
        return policy._draw_masked(env)
    pending = policy._draws.pending
    if pending:
        return pending.pop()
    return policy._draws.next(policy.rng)
