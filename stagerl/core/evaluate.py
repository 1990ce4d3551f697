"""Deterministic evaluation of a policy on an env of its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from stagerl.core.dispatch import plan
from stagerl.core.hooks import TotalRewardPerEpisode
from stagerl.core.plum_adapter import LOOKUP_ERRORS, resolve, resolve_types
from stagerl.core.policy import Policy
from stagerl.core.run import Experiment
from stagerl.core.stop_conditions import StopAfterNEpisodes, StopAfterNSteps, StopIfAny
from trajectories.checks import require_positive_int

__all__ = ["acting_policy", "deterministic", "evaluate"]


def acting_policy(policy: Any, env: Any = None) -> Any:
    """The policy whose ``plan`` acts for ``policy``: an Agent's inner policy (the Agent's
    ``plan`` only forwards to it, see ``stagerl.core.dispatch.forwarding``), else ``policy``
    itself. Evaluating that one records nothing in the Agent's trajectory and learns nothing."""
    try:
        if env is None:
            method, _ = resolve_types(plan, (type(policy), object))
        else:
            method, _ = resolve(plan, (policy, env))
    except LOOKUP_ERRORS:
        return policy
    forwards_to = getattr(method, "forwards_to", None)
    if forwards_to is None:
        return policy
    function, args = forwards_to(policy, env)
    return acting_policy(args[0], env) if function is plan else policy


@contextmanager
def deterministic(policy: Policy) -> Iterator[Policy]:
    """Within the block the policy (an Agent's inner policy) acts deterministically
    (``policy.deterministic = True``); yields that policy.

    Example:
        >>> import stagerl as rl
        >>> policy = rl.RandomPolicy(rng=0)
        >>> with rl.deterministic(policy) as acting:
        ...     acting.deterministic
        True
        >>> policy.deterministic
        False
    """
    inner = acting_policy(policy)
    before = inner.__dict__.get("deterministic")
    inner.deterministic = True
    try:
        yield inner
    finally:
        if before is None:
            del inner.deterministic
        else:
            inner.deterministic = before


def evaluate(policy: Policy, env: Any, episodes: int = 20,
             max_episode_steps: int | None = None) -> list[float]:
    """The returns of ``episodes`` deterministic episodes of ``policy`` in ``env``.

    An Agent is evaluated through its inner policy, so nothing is recorded in its trajectory
    and nothing is learned; a policy that honours ``deterministic`` draws nothing from its
    rngs, so a training run continues exactly as it would have without the evaluation. Use an
    env of its own (a separate seed), not the training env. ``max_episode_steps`` cuts an
    episode that has not ended by then (a greedy policy may walk in circles); its return so far
    counts.

    Example:
        >>> import stagerl as rl
        >>> returns = rl.evaluate(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), episodes=3)
        >>> len(returns), all(r in (-1.0, 1.0) for r in returns)
        (3, True)
    """
    require_positive_int("evaluate", "episodes", episodes)
    returns: list[float] = []
    with deterministic(policy) as acting:
        for _ in range(episodes):
            stop: Any = StopAfterNEpisodes(1, progress=False)
            if max_episode_steps is not None:
                stop = StopIfAny(stop, StopAfterNSteps(max_episode_steps, progress=False))
            hook = TotalRewardPerEpisode()
            Experiment(acting, env, stop, hook, check_methods=False).run()
            returns.append(float(hook.rewards[-1]))
    return returns
