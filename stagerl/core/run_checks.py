"""The checks of :class:`~stagerl.core.run.Experiment`'s arguments: wrong kinds fail there,
with the fix, not deep inside the loop."""

from __future__ import annotations

from typing import Any

import gymnasium

from stagerl.core.env import Env
from stagerl.core.hooks_base import Hook
from stagerl.core.policy import Policy

__all__ = ["checked_policy", "checked_env", "checked_stop_condition", "checked_hook",
           "checked_after_step", "checked_reset_condition"]


def checked_policy(policy: Any) -> Policy:
    if not isinstance(policy, Policy):
        raise TypeError(
            f"run needs a stagerl.Policy as policy, got {policy!r} of type "
            f"{type(policy).__name__}; subclass stagerl.Policy and define its plan with "
            "@stagerl.plan.dispatch, or use stagerl.RandomPolicy()"
        )
    return policy


def checked_env(env: Any) -> Any:
    if isinstance(env, Env):
        return env
    # Other objects with reset() and act() are driven too; a gymnasium env has no act().
    if isinstance(env, gymnasium.Env) or not all(
        callable(getattr(env, verb, None)) for verb in ("reset", "act")
    ):
        raise TypeError(
            f"run needs a stagerl.Env as env, got {env!r} of type {type(env).__name__}; wrap a "
            "gymnasium env or id in stagerl.GymEnv(...), or subclass stagerl.Env"
        )
    return env


def _has_check(condition: Any) -> bool:
    return callable(getattr(condition, "check", None))


def checked_stop_condition(stop_condition: Any) -> Any:
    # Any object with a callable check(policy, env) will do; the base class is a convenience.
    if _has_check(stop_condition):
        return stop_condition
    if isinstance(stop_condition, int) and not isinstance(stop_condition, bool):
        fix = f"to stop after {stop_condition} steps pass StopAfterNSteps({stop_condition})"
    else:
        fix = ("pass e.g. StopAfterNSteps(n) or StopAfterNEpisodes(n), or an object with a "
               "check(policy, env) method (a stagerl.StopCondition subclass, say)")
    raise TypeError(
        f"stop_condition needs a check(policy, env) method, got {stop_condition!r} of type "
        f"{type(stop_condition).__name__}; {fix}"
    )


def checked_hook(hook: Any) -> Hook:
    if isinstance(hook, Hook):
        return hook
    if callable(hook):
        fix = "to call a function every step pass DoEveryNSteps(f), or subclass stagerl.Hook"
    else:
        fix = "pass e.g. TotalRewardPerEpisode(), compose hooks with +, or subclass stagerl.Hook"
    raise TypeError(
        f"hook must be a stagerl.Hook, got {hook!r} of type {type(hook).__name__}; {fix}"
    )


def checked_after_step(after_step: Any) -> tuple:
    if callable(after_step) or isinstance(after_step, (str, bytes)):
        raise TypeError(f"after_step must be a list of callables f(stop), got {after_step!r}; "
                        "pass [f] for one")
    try:
        callbacks = tuple(after_step)
    except TypeError:
        raise TypeError(f"after_step must be a list of callables f(stop), got {after_step!r}"
                        ) from None
    for callback in callbacks:
        if not callable(callback):
            raise TypeError(f"after_step holds {callback!r}, which is not callable; each entry "
                            "is called as f(stop) after every step's stop check")
    return callbacks


def checked_reset_condition(reset_condition: Any) -> Any:
    if _has_check(reset_condition):
        return reset_condition
    raise TypeError(
        f"reset_condition needs a check(policy, env) method, got {reset_condition!r} of type "
        f"{type(reset_condition).__name__}; pass e.g. ResetIfEnvTerminated() or "
        "ResetAfterNSteps(n), or an object with a check(policy, env) method (a "
        "stagerl.ResetCondition subclass, say)"
    )
