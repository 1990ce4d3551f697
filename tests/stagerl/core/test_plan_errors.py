"""What ``plan`` says when no method applies: which method to define when the policy has none,
and which env its methods take when it was given something else (an observation, say)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import stagerl as rl
from stagerl.core.dispatch import MissingMethodError


@dataclass
class GreedyOnEnv(rl.Policy):
    """A user's policy whose plan takes any stagerl env."""

    n_actions: int = 2


@rl.plan.dispatch
def plan(policy: GreedyOnEnv, env: rl.Env):
    return policy.n_actions - 1


@dataclass
class BatchedOnly(rl.Policy):
    """A user's policy whose plan takes vector envs only."""


@rl.plan.dispatch
def plan(policy: BatchedOnly, env: rl.VectorEnv):  # noqa: F811
    return np.zeros(env.num_envs, dtype=np.int64)


class Planless(rl.Policy):
    """A user's policy with no plan at all."""


def test_plan_of_an_observation_names_the_env_the_method_takes_and_what_to_call():
    policy = GreedyOnEnv()
    assert rl.plan(policy, rl.RandomWalk1D()) == 1  # the method exists: it takes an env
    with pytest.raises(MissingMethodError) as raised:
        rl.plan(policy, np.zeros(4, dtype=np.float32))
    assert str(raised.value) == (
        "plan(GreedyOnEnv, ndarray): plan(policy, env) chooses an action for env.state, and "
        "the plan method for GreedyOnEnv takes env: stagerl.Env, not a numpy.ndarray; pass the "
        "env whose state that is, or compute the actions for observations without an env with "
        "stagerl.compute_actions(policy, observations) (stagerl.evaluate(policy, env, episodes) "
        "runs whole episodes in an env)")


def test_plan_with_the_wrong_kind_of_env_names_the_kind_the_method_takes():
    with pytest.raises(MissingMethodError) as raised:
        rl.plan(BatchedOnly(), rl.RandomWalk1D())
    assert str(raised.value) == (
        "plan(BatchedOnly, RandomWalk1D): plan(policy, env) chooses an action for env.state, "
        "and the plan method for BatchedOnly takes env: stagerl.VectorEnv, not a "
        "stagerl.RandomWalk1D")


@pytest.mark.parametrize("env", [rl.RandomWalk1D(), np.zeros(3)])
def test_a_policy_without_plan_is_told_which_method_to_define(env):
    with pytest.raises(MissingMethodError) as raised:
        rl.plan(Planless(), env)
    assert str(raised.value) == (
        "no plan(...) method for Planless; define one with @stagerl.plan.dispatch, e.g.\n"
        "    @stagerl.plan.dispatch\n"
        "    def plan(policy: Planless, env: stagerl.Env):\n"
        "        return ...  # an action for env.state")


def _built_in_policies():
    """One policy of every built-in family, each of whose plan methods takes any env."""
    import gymnasium

    from stagerl.algorithms import RecurrentPPOConfig, SACPolicy, make_recurrent_ppo_agent
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
    from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent, make_vector_env

    cartpole = rl.GymEnv("CartPole-v1", seed=0)
    vector = make_vector_env("CartPole-v1", num_envs=2, seed=0)
    q_based = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2)), rl.GreedyExplorer())
    return {
        "RandomPolicy": (rl.RandomPolicy(rng=0), np.zeros(4)),
        "QBasedPolicy": (q_based, 3),
        "DQNPolicy": (make_dqn_agent(cartpole, DQNConfig(total_steps=10), device="cpu").policy,
                      np.zeros(4)),
        "PPOPolicy": (make_ppo_agent(vector, PPOConfig(n_steps=8, batch_size=8),
                                     device="cpu").policy, [0.0, 0.0, 0.0, 0.0]),
        "SACPolicy": (SACPolicy(gymnasium.spaces.Box(-1.0, 1.0, (3,)),
                                gymnasium.spaces.Box(-2.0, 2.0, (1,))), np.zeros(3)),
        "RecurrentPPOPolicy": (make_recurrent_ppo_agent(
            vector, RecurrentPPOConfig(n_steps=8, batch_size=8), device="cpu").policy,
            np.zeros(4)),
    }


@pytest.mark.parametrize("name", list(_built_in_policies()))
def test_a_built_in_policy_given_an_observation_names_the_env_and_compute_actions(name):
    policy, observation = _built_in_policies()[name]
    kind = type(observation).__name__
    with pytest.raises(MissingMethodError) as raised:
        rl.plan(policy, observation)
    message = str(raised.value)
    assert message.startswith(f"plan({name}, {kind}): plan(policy, env) chooses an action for "
                              f"env.state, and the plan method for {name} takes an env, not a")
    assert "stagerl.compute_actions(policy, observations)" in message
    with pytest.raises(MissingMethodError, match=r"stagerl\.compute_actions"):
        rl.plan(rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(4, extra={
            "recurrent_state": (np.float32, getattr(policy, "recurrent_state_shape", ()))}))),
            observation)
