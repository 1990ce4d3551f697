"""The no-op fallback methods: every component defines only the stages it cares about.

Each fallback annotates only the positions it dispatches on (the receiver and the stage) and
leaves the others unannotated, and has ``precedence=-1`` (see :mod:`stagerl.core.dispatch`).
``plan`` has no no-op: its fallback raises an error that says which method to define.
"""

from __future__ import annotations

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, MissingMethodError, optimise, plan, push
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


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_missing(policy: Policy, env):
    name = type(policy).__name__
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
