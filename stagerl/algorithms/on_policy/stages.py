"""What the loop's stages do for an on-policy policy: ``plan`` draws the actions of every
sub-env (among the legal ones in a game), the Agent's ``PostAct`` records the step with the
log-probability and value it was drawn with, ``optimise`` learns once a rollout is complete
(then clears it, episodes going on); and ``compute_actions``, the same decision without an env.
Registered when :mod:`stagerl.algorithms.on_policy` is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stagerl.algorithms.extractors import observation_spec
from stagerl.algorithms.on_policy.base import OnPolicy
from stagerl.core.actions import (
    _compute_actions,
    acting_as,
    as_batch_of_spec,
    no_state,
    one_or_batch,
)
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.fallbacks import refuse_observations
from stagerl.core.stages import PostActStage
from stagerl.policies.agent import Agent, record_step
from trajectories.nested import tree_map

__all__ = ["observations_spec"]


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_on_policy(policy: OnPolicy, env):
    vector = isinstance(env, VectorEnv)  # a batch of states, or one
    state = env.state
    mask = None
    if policy.masked:
        mask = np.asarray(env.legal_actions_mask, dtype=bool)
        mask = mask if vector else mask[None]
    if policy.action_space is None:
        policy.action_space = env.single_action_space
    env_action, stored, log_prob, value = policy.sample(
        state if vector else tree_map(lambda leaf: np.asarray(leaf)[None], state),
        env.single_action_space, mask)
    if not vector:
        env_action = int(env_action[0]) if policy.model.discrete else env_action[0]
    if not policy.deterministic:  # recorded with the step (PostAct)
        policy._steps[getattr(env, "lane", 0)] = (env_action, stored, log_prob, value, state)
    return env_action


def _record_on_policy_step(agent: Any, env: Any, action: Any) -> None:
    policy = agent.policy
    planned, stored, log_prob, value, state = policy._steps.get(getattr(env, "lane", 0),
                                                                (None,) * 5)
    if action is not planned:
        raise RuntimeError(
            f"{type(policy).__name__} records the log-probability and value of the action its "
            f"last plan returned, but the step took another action ({action!r}); act with the "
            "action plan(agent, env) returns, or record the step with stagerl.record_step")
    policy.record_rewards(env)
    if not isinstance(env, VectorEnv):
        stored, log_prob, value = stored[0], log_prob[0], value[0]
    record_step(agent, env, stored, log_prob=log_prob, value=value, truncated=env.is_truncated)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_on_policy_step(agent: Agent[OnPolicy, object], stage: PostActStage, env, action):
    _record_on_policy_step(agent, env, action)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_on_policy_vector_step(agent: Agent[OnPolicy, object], stage: PostActStage,
                                env: VectorEnv, action):
    _record_on_policy_step(agent, env, action)  # as specific as the Agent's vector method


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_on_policy(policy: OnPolicy, stage: PostActStage, trajectory):
    for container in trajectory:  # the controller allows one sample per complete rollout
        policy.learn(container)
        # The next rollout starts at each sub-env's current state; episodes go on.
        trajectory.clear(keep_running_episodes=True)


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_on_policy(policy: OnPolicy, observations, state, deterministic):
    no_state(policy, state)
    name = type(policy).__name__
    batch, single = as_batch_of_spec(observations, observations_spec(policy.model), name)
    space = policy.action_space
    if space is None and policy.model.gaussian:
        raise ValueError(f"{name} clips its Gaussian actions to the action space's bounds, "
                         f"which it learns when it first acts in an env; set "
                         f"policy.action_space = env.action_space first")
    with acting_as(policy, deterministic):
        actions, _, log_prob, value = policy.sample(batch, space)
    extra = {"value": value} if log_prob is None else {"log_prob": log_prob, "value": value}
    return one_or_batch(actions, None, extra, single)


def observations_spec(model: Any) -> Any:
    """How ``model`` takes one observation (:func:`observation_spec` of its observation space;
    a flat float32 vector of its ``n_inputs`` for a model built without one)."""
    space = getattr(model, "observation_space", None)
    return (np.float32, (model.n_inputs,)) if space is None else observation_spec(space)


refuse_observations(OnPolicy)
