"""Methods the loop can never call are reported when an experiment starts, not silently ignored.

A method registered for a type the experiment uses, whose signature the loop never calls for an
object in that role, is a mistake that would otherwise do nothing at all:

* a policy run on its own is called ``push(policy, stage, env)``, ``push(policy,
  PostActStage(), env, action)``, ``plan(policy, env)`` and ``optimise(policy, stage)``;
* the policy inside an Agent is called ``plan(policy, env)`` and ``optimise(policy, stage,
  trajectory)`` (the Agent forwards them); the Agent records the steps itself, so no
  ``push(policy, ...)``;
* a hook is called ``push(hook, stage, policy, env)``.

On a vector env the loop's episode spans the whole run (sub-envs reset themselves), so a policy
that learns only at PostEpisodeStage, or a hook that counts episodes at PostEpisodeStage without
deriving from ``EpisodeHook``, would see one episode per run: that is reported too.

Each report is a ``UserWarning`` naming the method and the call the loop makes, given once per
method and role. Methods of stagerl's core (fallbacks and defaults) are not checked.
"""

from __future__ import annotations

import warnings
from typing import Any

from stagerl.core.dispatch import optimise, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.episodes import EpisodeHook
from stagerl.core.plum_adapter import LOOKUP_ERRORS, methods, resolve
from stagerl.core.stages import PostActStage, PostEpisodeStage

__all__ = ["check_methods", "UnreachableMethodWarning"]

# Modules whose methods are the loop's own defaults: they are right by construction.
_TRUSTED = ("stagerl.core.", "stagerl.policies.agent", "stagerl.policies.recurrent")
_reported: set = set()


class UnreachableMethodWarning(UserWarning):
    """A registered method that the run loop never calls for the object it was written for."""


def _name(function: Any) -> str:
    return function.__name__


def _loop_calls(obj: Any, role: str) -> dict[Any, tuple[int, str]]:
    """``{function: (number of arguments, how the loop calls it)}`` for ``obj`` in ``role``."""
    if role == "hook":
        return {push: ((4,), "push(hook, stage, policy, env)")}
    if role == "inner policy":
        return {plan: ((2,), "plan(policy, env)"),
                optimise: ((3,), "optimise(policy, stage, trajectory)"),
                push: ((), "no push(policy, ...) at all: the Agent records the steps itself; to "
                           "record more per step, specialise push(agent: rl.Agent[YourPolicy, "
                           "object], ...)")}
    return {plan: ((2,), "plan(policy, env)"),
            optimise: ((2,), "optimise(policy, stage) (inside an rl.Agent it is given the "
                             "trajectory: optimise(policy, stage, trajectory))"),
            push: ((3, 4), "push(policy, stage, env) and push(policy, PostActStage(), env, "
                           "action)")}


def _applies(method: Any, obj: Any) -> bool:
    first = method.signature.types[0] if method.signature.types else object
    if first is object or first is Any:
        return False
    try:
        return isinstance(obj, first)
    except TypeError:
        return False


def _check(obj: Any, role: str) -> None:
    for function, (arities, described) in _loop_calls(obj, role).items():
        for method in methods(function):
            implementation = method.implementation
            module = getattr(implementation, "__module__", "") or ""
            if module.startswith(_TRUSTED) or not _applies(method, obj):
                continue
            if method.signature.has_varargs or len(method.signature.types) in arities:
                continue
            key = (implementation, role)
            if key in _reported:
                continue
            _reported.add(key)
            warnings.warn(
                f"{module}.{implementation.__qualname__} is registered as "
                f"{_name(function)}{_signature(method)} for {type(obj).__name__}, but the loop "
                f"never calls it for {_article(role)} {role}: it calls {described}",
                UnreachableMethodWarning,
                stacklevel=4,
            )


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def _signature(method: Any) -> str:
    names = [getattr(t, "__name__", str(t)) for t in method.signature.types]
    return "(" + ", ".join(names) + ")"


def _learns_per_episode_only(policy: Any, trajectory: Any) -> bool:
    """Whether ``policy`` has an ``optimise`` method at PostEpisodeStage but none at
    PostActStage (checked with the arguments the loop would pass)."""
    args = (policy, PostEpisodeStage()) if trajectory is None else (
        policy, PostEpisodeStage(), trajectory)
    post_act = (policy, PostActStage()) + args[2:]
    return _effective(optimise, args) and not _effective(optimise, post_act)


def _effective(function: Any, args: tuple) -> bool:
    from stagerl.core.stage_calls import no_op_fallbacks

    try:
        method, _ = resolve(function, args)
    except LOOKUP_ERRORS:
        return False
    return method not in no_op_fallbacks()


def _warn_vector_episodes(policy: Any, inner: Any, trajectory: Any, hooks: list,
                          env: Any) -> None:
    learner, passed = (policy, None) if inner is None else (inner, trajectory)
    if _learns_per_episode_only(learner, passed):
        key = (type(learner), "vector episodes")
        if key not in _reported:
            _reported.add(key)
            warnings.warn(
                f"{type(learner).__name__} learns at PostEpisodeStage only, but on a vector env "
                "the loop's episode spans the whole run (sub-envs reset themselves), so it would "
                "learn once per run. Learn at PostActStage instead, when the trajectory's "
                "controller allows (rl.EpisodeSampleRatioController counts every sub-env's "
                "finished episodes, truncated ones too)",
                UnreachableMethodWarning,
                stacklevel=4,
            )
    for hook in hooks:
        if isinstance(hook, EpisodeHook):
            continue
        if _effective(push, (hook, PostEpisodeStage(), policy, env)):
            key = (type(hook), "vector episodes")
            if key not in _reported:
                _reported.add(key)
                warnings.warn(
                    f"{type(hook).__name__} does something at PostEpisodeStage, but on a vector "
                    "env that comes once per run, not once per sub-env episode; derive it from "
                    "rl.EpisodeHook and write on_episode(episode, policy, env) to see every "
                    "sub-env's finished episodes",
                    UnreachableMethodWarning,
                    stacklevel=4,
                )


def check_methods(policy: Any, env: Any, hooks: list) -> None:
    """Warn about the methods the loop will never call in this experiment (module docstring).

    ``hooks`` are the hook's members (a composed hook's, or the hook itself).
    """
    _check(policy, "policy")
    inner, trajectory = None, None
    try:
        forwarded, _ = resolve(optimise, (policy, PostActStage()))
    except LOOKUP_ERRORS:
        forwarded = None
    forwards_to = getattr(forwarded, "forwards_to", None)
    if forwards_to is not None:  # an Agent: its policy is called as the inner policy
        _, (inner, _, trajectory) = forwards_to(policy, PostActStage())
        _check(inner, "inner policy")
    for hook in hooks:
        _check(hook, "hook")
    if isinstance(env, VectorEnv):
        _warn_vector_episodes(policy, inner, trajectory, hooks, env)
