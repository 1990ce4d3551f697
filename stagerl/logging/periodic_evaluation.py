"""Evaluate: deterministic episodes on an env of their own every so many env steps."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.evaluate import evaluate
from stagerl.core.hooks_base import Hook
from stagerl.core.stages import PostActStage, PreExperimentStage
from stagerl.core.stop_conditions import (
    steps_per_act,
)
from stagerl.logging.scalars import log_scalar
from trajectories.checks import require_positive_int

__all__ = ["Evaluate"]


@dataclass
class Evaluate(Hook):
    """Every ``every_n_steps`` env steps, ``episodes`` deterministic episodes in ``env``.

    ``env`` is an env of its own (another seed), never the training env. The policy acts with
    ``deterministic`` set and, for an Agent, through its inner policy, so nothing is recorded or
    learned and a policy that honours ``deterministic`` draws nothing from its rngs: the
    training run goes on exactly as it would have without the evaluations. The results are kept
    (``steps``: the env step of each evaluation, ``returns``: its episodes' returns) and reported
    with ``rl.log_scalar`` as ``eval/return_mean`` and ``eval/return_std``, so every logger of
    the experiment writes them. ``max_episode_steps`` cuts an episode that has not ended by
    then (a greedy policy may walk in circles).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.logging import Evaluate
        >>> hook = Evaluate(every_n_steps=50, episodes=3, env=rl.RandomWalk1D())
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...            rl.StopAfterNSteps(120, progress=False), hook)
        >>> hook.steps, [len(r) for r in hook.returns]
        ([50, 100], [3, 3])
    """

    every_n_steps: int
    episodes: int
    env: Any
    max_episode_steps: int | None = None
    steps: list[int] = field(default_factory=list)
    returns: list[list[float]] = field(default_factory=list)
    env_step: int = 0

    def __post_init__(self) -> None:
        require_positive_int("Evaluate", "every_n_steps", self.every_n_steps)
        require_positive_int("Evaluate", "episodes", self.episodes)
        if self.max_episode_steps is not None:
            require_positive_int("Evaluate", "max_episode_steps", self.max_episode_steps)
        if not all(callable(getattr(self.env, verb, None)) for verb in ("reset", "act")):
            raise TypeError(f"Evaluate needs a stagerl env of its own as env, got {self.env!r};"
                            " e.g. rl.GymEnv('CartPole-v1', seed=1)")
        self._per_act = 1
        self._next = self.every_n_steps

    @property
    def means(self) -> list[float]:
        """The mean return of each evaluation."""
        return [statistics.fmean(r) for r in self.returns]

    def pre_experiment(self, policy: Any, env: Any) -> None:
        if env is self.env:
            raise ValueError("Evaluate needs an env of its own, not the training env (its "
                             "episodes would be cut); e.g. rl.GymEnv(env_id, seed=seed + 1)")
        self._per_act = steps_per_act(env)
        self._next = (self.env_step // self.every_n_steps + 1) * self.every_n_steps

    def evaluate(self, policy: Any) -> list[float]:
        """Evaluate now: run the episodes, keep and report their returns."""
        returns = evaluate(policy, self.env, self.episodes, self.max_episode_steps)
        self.steps.append(self.env_step)
        self.returns.append(returns)
        log_scalar("eval/return_mean", statistics.fmean(returns), step=self.env_step)
        log_scalar("eval/return_std", statistics.pstdev(returns), step=self.env_step)
        return returns


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_evaluate_pre_experiment(hook: Evaluate, stage: PreExperimentStage, policy, env):
    hook.pre_experiment(policy, env)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_evaluate_post_act(hook: Evaluate, stage: PostActStage, policy, env):
    hook.env_step += hook._per_act
    if hook.env_step >= hook._next:
        hook._next = (hook.env_step // hook.every_n_steps + 1) * hook.every_n_steps
        hook.evaluate(policy)
