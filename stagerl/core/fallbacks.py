"""The no-op fallback methods: every component defines only the stages it cares about.

Each fallback annotates only the positions it dispatches on (the receiver and the stage) and
leaves the others unannotated, and has ``precedence=-1`` (see :mod:`stagerl.core.dispatch`).
``plan`` has no no-op: its fallback raises an error that says which method to define, or, when
the policy has plan methods for other arguments (an observation passed instead of the env), which
env they take.
"""

from __future__ import annotations

import sys

import numpy as np
import plum

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, MissingMethodError, optimise, plan, push
from stagerl.core.env import Env
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.core.policy import Policy
from stagerl.core.stages import PostActStage, Stage


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_policy(policy: Policy, stage: Stage, env):
    return None


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_policy_action(policy: Policy, stage: PostActStage, env, action):
    return None


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_hook(hook: Hook, stage: Stage, policy, env):
    return None


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_policy(policy: Policy, stage: Stage):
    return None


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_policy_trajectory(policy: Policy, stage: Stage, trajectory):
    return None


def _type_name(kind) -> str:
    """``stagerl.Env`` for a public stagerl type, ``module.Name`` for others."""
    name = getattr(kind, "__name__", None)
    top = sys.modules.get("stagerl")
    if name is None:
        return repr(kind)
    if top is not None and getattr(top, name, None) is kind:
        return f"stagerl.{name}"
    module = getattr(kind, "__module__", "builtins")
    return name if module == "builtins" else f"{module}.{getattr(kind, '__qualname__', name)}"


def _envs_planned_for(policy: Policy, env) -> list:
    """The env types of the plan methods that take ``policy`` but not ``env`` (a method that
    takes both would have been chosen over this fallback, unless it is this fallback)."""
    envs = []
    for method in plan.methods:
        types = method.signature.types
        if len(types) != 2:
            continue
        try:
            if plum.isinstance(policy, types[0]) and not plum.isinstance(env, types[1]):
                envs.append(types[1])
        except TypeError:
            continue
    return list(dict.fromkeys(envs))


#: What an observation (rather than an env) passed to ``plan`` is: arrays, numbers, sequences.
OBSERVATIONS = np.ndarray | np.generic | int | float | list | tuple | dict


def _observation_hint(name: str, env, takes: str) -> str:
    return (f"plan({name}, {type(env).__name__}): plan(policy, env) chooses an action for "
            f"env.state, and the plan method for {name} takes {takes}, not a "
            f"{_type_name(type(env))}; pass the env whose state that is, or compute the "
            f"actions for observations without an env with "
            f"stagerl.compute_actions(policy, observations) (stagerl.evaluate(policy, env, "
            f"episodes) runs whole episodes in an env)")


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_missing(policy: Policy, env):
    name = type(policy).__name__
    envs = _envs_planned_for(policy, env)
    if envs:
        takes = " or ".join(f"env: {_type_name(kind)}" for kind in envs)
        if not isinstance(env, Env):  # an observation, most likely
            raise MissingMethodError(_observation_hint(name, env, takes))
        raise MissingMethodError(
            f"plan({name}, {type(env).__name__}): plan(policy, env) chooses an action for "
            f"env.state, and the plan method for {name} takes {takes}, not a "
            f"{_type_name(type(env))}")
    raise MissingMethodError(
        f"no plan(...) method for {name}; define one with @stagerl.plan.dispatch, e.g.\n"
        f"    @stagerl.plan.dispatch\n"
        f"    def plan(policy: {name}, env: stagerl.Env):\n"
        f"        return ...  # an action for env.state"
    )


def refuse_observations(policy_type: type) -> None:
    """Give ``plan(policy, observation)`` for ``policy_type`` (whose plan method takes any env,
    unannotated) the error that names the env and ``compute_actions``, instead of an
    ``AttributeError`` deep in the method. The method registered is as specific as the
    policy's own in the first position and more in the second, so it is chosen for
    observations only; a user's subclass with a plan method of its own still wins."""

    def _plan_observation(policy, observation):
        raise MissingMethodError(_observation_hint(type(policy).__name__, observation,
                                                   "an env"))

    _plan_observation.__annotations__ = {"policy": policy_type, "observation": OBSERVATIONS}
    _plan_observation.__qualname__ = f"_plan_observation[{policy_type.__name__}]"
    plan.dispatch(precedence=DEFAULT_PRECEDENCE)(_plan_observation)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_composed_hook(hook: ComposedHook, stage: Stage, policy, env):
    for member in hook.hooks:
        push(member, stage, policy, env)
