"""The no-op fallback methods: every component defines only the stages it cares about.

Each fallback annotates only the positions it dispatches on (the receiver and the stage) and
leaves the others unannotated, and has ``precedence=-1`` (see :mod:`stagerl.core.dispatch`).
``plan`` has no no-op: its fallback raises an error that says which method to define, or, when
the policy has plan methods for other arguments (an observation passed instead of the env), which
env they take.
"""

from __future__ import annotations

import sys

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


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_missing(policy: Policy, env):
    name = type(policy).__name__
    envs = _envs_planned_for(policy, env)
    if envs:
        takes = " or ".join(f"env: {_type_name(kind)}" for kind in envs)
        message = (f"plan({name}, {type(env).__name__}): plan(policy, env) chooses an action "
                   f"for env.state, and the plan method for {name} takes {takes}, not a "
                   f"{_type_name(type(env))}")
        if not isinstance(env, Env):  # an observation, most likely
            message += ("; pass the env whose state that is, not the observation "
                        "(stagerl.evaluate(policy, env, episodes) runs whole episodes in an env)")
        raise MissingMethodError(message)
    raise MissingMethodError(
        f"no plan(...) method for {name}; define one with @stagerl.plan.dispatch, e.g.\n"
        f"    @stagerl.plan.dispatch\n"
        f"    def plan(policy: {name}, env: stagerl.Env):\n"
        f"        return ...  # an action for env.state"
    )


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_composed_hook(hook: ComposedHook, stage: Stage, policy, env):
    for member in hook.hooks:
        push(member, stage, policy, env)
