"""Explorers: turn action values into an action.

Every explorer has ``plan(values, mask=None) -> index`` and ``prob(values, mask=None) ->
probabilities``. ``values`` is one row of action values (shape ``(n_actions,)``; ``plan`` returns an
``int``) or a batch of rows (shape ``(batch, n_actions)``, one per sub-env of a vector env; ``plan``
returns an ``np.int64`` array of shape ``(batch,)``). ``mask`` has the shape of ``values`` and is
``True`` where an action is legal: an illegal action is never chosen and has probability 0.
``values`` may also be a list or a torch tensor (on any device).

A batched ``plan`` is one plan: every row uses the same exploration schedule position and a
stateful explorer advances once per call, as it does for one row (explorer steps count plans).

This module holds the value-ranking explorers (ε-greedy, greedy, UCB); the sampling ones
(``WeightedExplorer``, ``WeightedSoftmaxExplorer``, ``GumbelSoftmaxExplorer``) live in
:mod:`stagerl.policies.sampling_explorers` and are importable from here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagerl.core.policy import as_rng
from stagerl.policies.explorer_base import (
    Explorer,
    as_array,
    as_mask,
    greedy_mass,
    masked,
    uniform_among,
)
from stagerl.policies.sampling_explorers import (
    GumbelSoftmaxExplorer,
    WeightedExplorer,
    WeightedSoftmaxExplorer,
)

__all__ = [
    "Explorer",
    "EpsilonGreedyExplorer",
    "GreedyExplorer",
    "UCBExplorer",
    "WeightedExplorer",
    "WeightedSoftmaxExplorer",
    "GumbelSoftmaxExplorer",
]


@dataclass(eq=False)
class EpsilonGreedyExplorer(Explorer):
    """ε-greedy with a linear or exponential ε schedule (RL.jl's ``EpsilonGreedyExplorer``).

    ε at ``step`` (``warmup = warmup_steps``, ``decay = decay_steps``):

    * ``"linear"``: ``epsilon_init`` while ``step <= warmup``; ``epsilon_stable`` once
      ``step >= warmup + decay``; in between
      ``epsilon_stable + (warmup + decay - step) / decay * (epsilon_init - epsilon_stable)``.
    * ``"exp"``: ``epsilon_init`` while ``step <= warmup``, then
      ``epsilon_stable + (epsilon_init - epsilon_stable) * exp(-(step - warmup) / decay)``.

    ``plan`` reads ε, then advances ``step`` by one; it explores (uniformly over the legal
    actions) when ``rng.random() < ε``, and is greedy otherwise: a uniform choice among all
    maxima (``break_ties=True``, the default: a table of zeros must not always pick action 0),
    or the first maximum with ``break_ties=False``. ``prob`` gives ε/n to each of the n legal
    actions plus 1-ε to the greedy choice (split over the maxima with ``break_ties``).
    ``prob`` and ``epsilon`` never advance ``step``.

    Example:
        >>> import stagerl as rl
        >>> explorer = rl.EpsilonGreedyExplorer(0.1, warmup_steps=2, decay_steps=4, rng=0)
        >>> [round(explorer.epsilon_at(step), 3) for step in range(1, 8)]
        [1.0, 1.0, 0.775, 0.55, 0.325, 0.1, 0.1]
        >>> explorer.prob([1.0, 3.0, 2.0]).tolist()
        [0.3333333333333333, 0.3333333333333333, 0.3333333333333333]
        >>> explorer.step = 100
        >>> explorer.prob([1.0, 3.0, 2.0], mask=[True, False, True]).round(3).tolist()
        [0.05, 0.0, 0.95]
    """

    epsilon_stable: float
    kind: str = "linear"
    epsilon_init: float = 1.0
    warmup_steps: int = 0
    decay_steps: int = 0
    step: int = 1
    break_ties: bool = True
    rng: Any = None

    def __post_init__(self) -> None:
        if self.kind not in ("linear", "exp"):
            raise ValueError(f'kind must be "linear" or "exp", got kind={self.kind!r}')
        for name in ("epsilon_stable", "epsilon_init"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {name}={value!r}")
        if self.warmup_steps < 0 or self.decay_steps < 0:
            raise ValueError(
                f"warmup_steps and decay_steps must be >= 0, got warmup_steps="
                f"{self.warmup_steps!r}, decay_steps={self.decay_steps!r}"
            )
        if self.kind == "exp" and self.decay_steps <= 0:
            raise ValueError(
                f'kind="exp" needs decay_steps > 0 (the decay time constant), got '
                f"decay_steps={self.decay_steps!r}"
            )
        self.rng = as_rng(self.rng)

    def epsilon_at(self, step: int) -> float:
        """ε at ``step`` of the schedule (no side effect)."""
        warmup, decay = self.warmup_steps, self.decay_steps
        if step <= warmup:
            return self.epsilon_init
        if self.kind == "exp":
            return self.epsilon_stable + (self.epsilon_init - self.epsilon_stable) * math.exp(
                -(step - warmup) / decay
            )
        if step >= warmup + decay:
            return self.epsilon_stable
        return self.epsilon_stable + (warmup + decay - step) / decay * (
            self.epsilon_init - self.epsilon_stable
        )

    @property
    def epsilon(self) -> float:
        """ε at the current ``step``."""
        return self.epsilon_at(self.step)

    def draw(self, n_actions: int, values: Callable[[], Any], n: int | None = None,
             epsilon: float | None = None, mask: Any = None) -> Any:
        """ε-greedy among ``n_actions`` actions, calling ``values()`` for the action values only
        when some action is greedy: an agent whose values cost a network's forward pass pays
        it only when it does not explore.

        ``n=None`` draws one action (an ``int``; ``values()`` returns ``(n_actions,)``); ``n``
        draws a batch of ``n`` (an array; ``values()`` returns ``(n, n_actions)``: one
        forward pass for every row, unless all explore). ``epsilon`` replaces the schedule's ε
        for this draw; ``step`` advances by one either way. One row draws exactly what
        :meth:`plan` draws; a batch draws what ``plan`` draws with ``break_ties=False`` (with
        ties broken, the tie-breaking draws come after the exploring ones here). ``mask`` (a
        bool per action, or per row and action for a batch) limits both the exploring and the
        greedy choice to the legal actions, as ``plan(values, mask)`` does.

        Example:
            >>> import numpy as np, stagerl as rl
            >>> explorer = rl.EpsilonGreedyExplorer(0.0, epsilon_init=0.0, rng=0)
            >>> calls = []
            >>> explorer.draw(3, lambda: calls.append(1) or np.array([0.1, 0.9, 0.2]))
            1
            >>> explorer.draw(3, lambda: calls.append(1), epsilon=1.0) in (0, 1, 2), len(calls)
            (True, 1)
            >>> explorer.step
            3
        """
        if epsilon is None:
            epsilon = self.epsilon_at(self.step)
        self.step += 1
        rng = self.rng
        if mask is not None:
            mask = as_mask(mask, np.empty(n_actions if n is None else (n, n_actions)))
        if n is None:
            if rng.random() < epsilon:
                if mask is None:
                    return int(rng.integers(n_actions))
                legal = np.flatnonzero(mask)
                return int(legal[rng.integers(legal.shape[0])])
            values = masked(as_array(values()), mask)
            if not self.break_ties:
                return int(np.argmax(values))
            maxima = np.flatnonzero(values == values.max())
            return int(maxima[rng.integers(maxima.shape[0])])
        explores_B = rng.random(n) < epsilon
        random_B = rng.integers(n_actions, size=n) if mask is None else uniform_among(mask, rng)
        if explores_B.all():
            return random_B
        values = masked(as_array(values()), mask)
        if self.break_ties:
            greedy_B = uniform_among(values == values.max(axis=-1, keepdims=True), rng)
        else:
            greedy_B = np.argmax(values, axis=-1)
        return np.where(explores_B, random_B, greedy_B)

    def plan(self, values: Any, mask: Any = None) -> Any:
        values = as_array(values)
        if values.ndim == 1:  # one rule for one row: draw's (among the legal actions)
            return self.draw(values.shape[0], lambda: values, mask=mask)
        epsilon = self.epsilon_at(self.step)
        self.step += 1
        rng = self.rng
        mask = None if mask is None else as_mask(mask, values)
        values = masked(values, mask)
        if self.break_ties:
            greedy_B = uniform_among(values == values.max(axis=-1, keepdims=True), rng)
        else:
            greedy_B = np.argmax(values, axis=-1)
        explores_B = rng.random(values.shape[0]) < epsilon
        if mask is None:
            random_B = rng.integers(values.shape[-1], size=values.shape[0])
        else:
            random_B = uniform_among(mask, rng)
        return np.where(explores_B, random_B, greedy_B)

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        epsilon = self.epsilon_at(self.step)
        values = as_array(values)
        if mask is None:
            p = np.full(values.shape, epsilon / values.shape[-1])
        else:
            mask = as_mask(mask, values)
            p = mask * (epsilon / mask.sum(axis=-1, keepdims=True))
        return p + greedy_mass(masked(values, mask), self.break_ties, 1.0 - epsilon)

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, **super().state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        super().load_state_dict(state)


@dataclass(eq=False)
class GreedyExplorer(Explorer):
    """Always the first action of highest value (among the legal ones).

    Example:
        >>> import stagerl as rl
        >>> explorer = rl.GreedyExplorer()
        >>> explorer.plan([2.0, 5.0, 5.0]), explorer.plan([2.0, 5.0, 5.0], mask=[1, 0, 1])
        (1, 2)
        >>> explorer.prob([2.0, 5.0, 5.0]).tolist()
        [0.0, 1.0, 0.0]
    """

    def plan(self, values: Any, mask: Any = None) -> Any:
        values = as_array(values)
        if mask is not None:
            values = np.where(as_mask(mask, values), values, -np.inf)
        if values.ndim == 1:
            return int(np.argmax(values))
        return np.argmax(values, axis=-1)

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        values = as_array(values)
        mask = None if mask is None else as_mask(mask, values)
        return greedy_mass(masked(values, mask), break_ties=False)


@dataclass(eq=False)
class UCBExplorer(Explorer):
    """Upper-confidence-bound action selection (Sutton & Barto §2.7; RL.jl's ``UCBExplorer``).

    Untried (legal) actions come first, drawn uniformly among them. Once every legal action has
    been tried, the action maximises ``values + c * sqrt(log(t) / N)``, where ``N`` counts how often
    each action was chosen and ``t = step`` is the current time step (1 at the first plan); ties
    are broken uniformly. ``plan`` counts the chosen action and advances ``step``; a batched plan
    chooses row by row. ``prob`` is the distribution ``plan`` draws from now (one-hot but for ties).

    Example:
        >>> import stagerl as rl
        >>> explorer = rl.UCBExplorer(3, rng=0)
        >>> sorted(explorer.plan([0.0, 0.0, 0.0]) for _ in range(3))   # each action once first
        [0, 1, 2]
        >>> explorer.plan([0.0, 1.0, 0.0]), explorer.counts.tolist(), explorer.step
        (1, [1, 2, 1], 5)
    """

    n_actions: int
    c: float = 2.0
    rng: Any = None
    step: int = 1
    counts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.n_actions <= 0:
            raise ValueError(f"n_actions must be positive, got n_actions={self.n_actions!r}")
        if self.c < 0:
            raise ValueError(f"c must be >= 0, got c={self.c!r}")
        self.counts = np.zeros(self.n_actions, dtype=np.int64)
        self.rng = as_rng(self.rng)

    def _candidates(self, values: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """The actions ``plan`` chooses uniformly among now (a boolean row)."""
        if values.shape[-1] != self.n_actions:
            raise ValueError(
                f"UCBExplorer(n_actions={self.n_actions}) got {values.shape[-1]} action values"
            )
        legal = np.ones(self.n_actions, dtype=bool) if mask is None else mask
        untried = legal & (self.counts == 0)
        if untried.any():
            return untried
        with np.errstate(divide="ignore"):
            bounds = values + self.c * np.sqrt(math.log(self.step) / self.counts)
        bounds = np.where(legal, bounds, -np.inf)
        return bounds == bounds.max()

    def _plan_row(self, values: np.ndarray, mask: np.ndarray | None) -> int:
        candidates = np.flatnonzero(self._candidates(values, mask))
        action = int(candidates[self.rng.integers(candidates.shape[0])])
        self.counts[action] += 1
        self.step += 1
        return action

    def plan(self, values: Any, mask: Any = None) -> Any:
        values = as_array(values)
        mask = None if mask is None else as_mask(mask, values)
        if values.ndim == 1:
            return self._plan_row(values, mask)
        masks = [None] * values.shape[0] if mask is None else mask
        actions = [self._plan_row(v, m) for v, m in zip(values, masks, strict=True)]
        return np.asarray(actions, dtype=np.int64)

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        values = as_array(values)
        mask = None if mask is None else as_mask(mask, values)
        if values.ndim == 1:
            candidates = self._candidates(values, mask)
            return candidates / candidates.sum()
        masks = [None] * values.shape[0] if mask is None else mask
        return np.stack([self.prob(v, m) for v, m in zip(values, masks, strict=True)])

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "counts": self.counts.copy(), **super().state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        self.counts = np.asarray(state["counts"], dtype=np.int64).copy()
        super().load_state_dict(state)
