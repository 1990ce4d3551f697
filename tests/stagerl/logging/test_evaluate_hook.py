"""Evaluate: deterministic episodes on an env of their own, kept, reported, changing nothing."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

import stagerl as rl
from stagerl.core.evaluate import acting_policy
from stagerl.experiments import get_experiment
from stagerl.logging import Evaluate, ScalarListener


class NoisyLean(rl.Policy):
    """CartPole: push the way the pole falls, but act at random with probability 0.3 unless
    deterministic; the rng is drawn from only then."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)


@rl.plan.dispatch
def plan(policy: NoisyLean, env: rl.Env):
    state = np.asarray(env.state)
    action = (state[..., 2] + state[..., 3] > 0).astype(np.int64)
    if not policy.deterministic:
        flip = policy.rng.random(action.shape) < 0.3
        action = np.where(flip, policy.rng.integers(0, 2, action.shape), action)
    return action if action.ndim else int(action)


def tabular_agent(steps: int = 2000):
    experiment = get_experiment("tabular-q-random-walk")
    config = experiment.config(steps=steps)
    return experiment.make_agent(config, experiment.make_env(config, 0), 0, None)


def test_evaluations_at_every_multiple_on_a_single_env():
    hook = Evaluate(every_n_steps=100, episodes=3, env=rl.GymEnv("CartPole-v1", seed=1))
    rl.run(NoisyLean(0), rl.GymEnv("CartPole-v1", seed=0),
           rl.StopAfterNSteps(350, progress=False), hook)
    assert hook.steps == [100, 200, 300]
    assert [len(r) for r in hook.returns] == [3, 3, 3]
    assert hook.means == [statistics.fmean(r) for r in hook.returns]


def test_on_a_vector_env_evaluations_count_env_steps():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    hook = Evaluate(every_n_steps=100, episodes=2, env=rl.GymEnv("CartPole-v1", seed=1))
    rl.run(NoisyLean(0), env, rl.StopAfterNSteps(300, progress=False), hook)
    assert hook.steps == [102, 201, 300]  # the first act (3 env steps) past each multiple


@pytest.mark.parametrize("vector", [False, True])
def test_training_goes_on_exactly_as_without_evaluations(vector):
    def train(with_evaluations):
        env = (rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0) if vector
               else rl.GymEnv("CartPole-v1", seed=0))
        totals = rl.TotalRewardPerEpisode()
        hook = totals
        if with_evaluations:
            hook = Evaluate(50, 2, rl.GymEnv("CartPole-v1", seed=1)) + totals
        rl.run(NoisyLean(0), env, rl.StopAfterNSteps(600, progress=False), hook)
        return totals.rewards

    assert train(True) == train(False)


def test_an_agent_learns_nothing_while_evaluated():
    def train(with_evaluations):
        agent = tabular_agent()
        hook = Evaluate(200, 3, rl.RandomWalk1D(), max_episode_steps=100) if with_evaluations \
            else rl.EmptyHook()
        rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(2000, progress=False), hook)
        return agent.policy.learner.approximator.table.copy(), len(agent.trajectory)

    (table, stored), (table_evaluated, stored_evaluated) = train(False), train(True)
    np.testing.assert_array_equal(table, table_evaluated)
    assert stored == stored_evaluated


def test_evaluate_leaves_no_trace_on_the_policy():
    agent = tabular_agent()
    rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(2000, progress=False))
    assert rl.evaluate(agent, rl.RandomWalk1D(), 4, 100) == [1.0] * 4
    lean = NoisyLean(0)
    rl.evaluate(lean, rl.GymEnv("CartPole-v1", seed=3), 3)
    assert "deterministic" not in vars(lean) and "deterministic" not in vars(agent.policy)


def test_the_acting_policy_of_an_agent_is_its_inner_policy():
    agent = tabular_agent()
    assert acting_policy(agent, rl.RandomWalk1D()) is agent.policy
    assert acting_policy(agent) is agent.policy  # without an env: by the Agent's type
    lean = NoisyLean(0)
    assert acting_policy(lean, rl.RandomWalk1D()) is lean


def test_results_are_reported_to_the_loggers():
    hook = Evaluate(every_n_steps=100, episodes=2, env=rl.GymEnv("CartPole-v1", seed=1))
    with ScalarListener() as listener:
        rl.run(NoisyLean(0), rl.GymEnv("CartPole-v1", seed=0),
               rl.StopAfterNSteps(200, progress=False), hook)
    expected = []
    for step, returns in zip(hook.steps, hook.returns, strict=True):
        expected += [("eval/return_mean", statistics.fmean(returns), step),
                     ("eval/return_std", statistics.pstdev(returns), step)]
    assert listener.received == expected


def test_the_training_env_is_refused_before_anything_runs():
    env = rl.GymEnv("CartPole-v1", seed=0)
    totals = rl.TotalRewardPerEpisode()
    with pytest.raises(ValueError, match="an env of its own"):
        rl.run(NoisyLean(0), env, rl.StopAfterNSteps(10, progress=False),
               Evaluate(5, 1, env) + totals)
    assert totals.rewards == []


@pytest.mark.parametrize("kwargs, error, match", [
    ({"every_n_steps": 0, "episodes": 1}, ValueError, "every_n_steps"),
    ({"every_n_steps": 10, "episodes": 1.5}, TypeError, "episodes"),
    ({"every_n_steps": 10, "episodes": 1, "max_episode_steps": 0}, ValueError,
     "max_episode_steps"),
])
def test_bad_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        Evaluate(env=rl.RandomWalk1D(), **kwargs)


def test_an_env_that_is_not_one_is_refused():
    with pytest.raises(TypeError, match="stagerl env of its own"):
        Evaluate(10, 1, "CartPole-v1")
