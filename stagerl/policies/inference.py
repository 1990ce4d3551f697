"""``compute_actions`` for the policies of ``stagerl.policies``: the Agent (its policy's answer),
``RandomPolicy`` and ``QBasedPolicy``. The algorithm families answer it in their own modules;
the rules every method shares are in :mod:`stagerl.core.actions`.
"""

from __future__ import annotations

import copy

import gymnasium
import numpy as np

from stagerl.core.actions import _compute_actions, as_batch, no_state, one_or_batch
from stagerl.core.dispatch import DEFAULT_PRECEDENCE
from stagerl.core.fallbacks import refuse_observations
from stagerl.policies.agent import Agent
from stagerl.policies.explorers import GreedyExplorer
from stagerl.policies.q_based import QBasedPolicy
from stagerl.policies.random_policy import RandomPolicy

__all__: list[str] = []

_GREEDY = GreedyExplorer()


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_agent(agent: Agent, observations, state, deterministic):
    return _compute_actions(agent.policy, observations, state, deterministic)


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_random(policy: RandomPolicy, observations, state, deterministic):
    # The observations are not read: a list (or tuple) is a batch, anything else one.
    space = policy.action_space
    if space is None:
        raise ValueError("RandomPolicy(action_space=None) draws from the env's action space; "
                         "give it the space to compute actions without an env: "
                         "RandomPolicy(action_space=env.action_space)")
    no_state(policy, state)
    batch, single = as_batch(observations, None, "RandomPolicy")
    n, rng = len(batch), policy.rng
    if isinstance(space, gymnasium.spaces.Discrete):
        actions = rng.integers(int(space.n), size=n) + int(space.start)
    elif isinstance(space, gymnasium.spaces.Box) and space.is_bounded("both") and \
            np.issubdtype(space.dtype, np.floating):
        actions = (space.low + (space.high - space.low) * rng.random((n, *space.shape))).astype(
            space.dtype, copy=False)
    else:
        sampler = copy.deepcopy(space)  # a copy seeded from the policy's rng
        sampler.seed(int(rng.integers(2**63)))
        actions = np.stack([np.asarray(sampler.sample()) for _ in range(n)])
    return one_or_batch(actions, None, {}, single)


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_q_based(policy: QBasedPolicy, observations, state, deterministic):
    # A tabular learner's observations are state indices: one is a scalar.
    no_state(policy, state)
    approximator = getattr(policy.learner, "approximator", None)
    frame = () if getattr(approximator, "n_states", None) is not None else None
    batch, single = as_batch(observations, frame, "QBasedPolicy")
    values = np.asarray(policy.learner.values(batch))
    # greedy: the explorer's step and rng untouched; one observation's values go in alone,
    # as plan gives them, so the explorer draws from its rng as it does in plan
    explorer = _GREEDY if deterministic else policy.explorer
    actions = np.asarray(explorer.plan(values[0] if single else values))
    return one_or_batch(actions.reshape(len(batch)), None, {"values": values}, single)


refuse_observations(RandomPolicy)
refuse_observations(QBasedPolicy)
