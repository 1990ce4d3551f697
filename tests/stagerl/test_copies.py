"""Every public component pickles and deep-copies before and after a run, and the copy
continues exactly as the original would (checkpoints, Ray workers, multiprocessing need it)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import stagerl as rl


def _tabular_agent():
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5),
                             rl.EpsilonGreedyExplorer(0.1, decay_steps=300, rng=1))
    trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=64),
                               rl.BatchSampler(8, rng=2),
                               rl.InsertSampleRatioController(threshold=10))
    return rl.Agent(policy, trajectory), rl.RandomWalk1D()


def _vector_agent(traces):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    trajectory = rl.Trajectory(traces, rl.BatchSampler(16, rng=3))
    return rl.Agent(rl.RandomPolicy(rng=4), trajectory), env


SETUPS = {
    "tabular on one env": _tabular_agent,
    "SARTS lanes on a vector env": lambda: _vector_agent(
        rl.CircularArraySARTSTraces(capacity=60, state=(np.float32, (4,)))),
    "SARTSA lanes on a vector env": lambda: _vector_agent(
        rl.CircularArraySARTSATraces(capacity=60, state=(np.float32, (4,)))),
}
COPIES = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "deepcopy": copy.deepcopy}


def _run(parts, steps):
    agent, env, hook = parts
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False), hook)


def _hooks():
    return rl.TotalRewardPerEpisode() + rl.StepsPerEpisode() + rl.RewardsPerEpisode()


def _same(a, b):
    agent_a, _, hook_a = a
    agent_b, _, hook_b = b
    container_a, container_b = agent_a.trajectory.container, agent_b.trajectory.container
    assert container_a.keys() == container_b.keys()
    for name in container_a.keys():
        np.testing.assert_array_equal(container_a[name], container_b[name], err_msg=name)
    np.testing.assert_array_equal(container_a.sampleable_inds, container_b.sampleable_inds)
    assert hook_a[0].rewards == hook_b[0].rewards and hook_a[1].steps == hook_b[1].steps
    assert hook_a[2].rewards == hook_b[2].rewards
    batch_a, batch_b = agent_a.trajectory.sample(), agent_b.trajectory.sample()
    for name in batch_a:
        np.testing.assert_array_equal(batch_a[name], batch_b[name], err_msg=name)
    assert agent_a.state_dict().keys() == agent_b.state_dict().keys()


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("setup", SETUPS)
def test_a_copy_after_a_run_continues_exactly_as_the_original(setup, how):
    agent, env = SETUPS[setup]()
    original = (agent, env, _hooks())
    _run(original, 150)
    copied = COPIES[how](original)
    _run(original, 150)
    _run(copied, 150)
    _same(original, copied)
    if isinstance(agent.policy, rl.QBasedPolicy):
        np.testing.assert_array_equal(original[0].policy.learner.approximator.table,
                                      copied[0].policy.learner.approximator.table)


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("setup", SETUPS)
def test_a_copy_before_any_run_runs_exactly_as_the_original(setup, how):
    agent, env = SETUPS[setup]()
    original = (agent, env, _hooks())
    copied = COPIES[how](original)
    _run(original, 120)
    _run(copied, 120)
    _same(original, copied)


@pytest.mark.parametrize("component", [
    rl.StopAfterNSteps(10), rl.StopAfterNEpisodes(3), rl.StopIfEnvTerminated(),
    rl.StopAfterNSeconds(60), rl.StopSignal(), rl.StopIfAny(rl.StopAfterNSteps(3)),
    rl.ResetAfterNSteps(3), rl.ResetIfEnvTerminated(), rl.TimePerStep(),
    rl.EmptyHook(), rl.GreedyExplorer(), rl.UCBExplorer(3, rng=0), rl.WeightedExplorer(rng=0),
    rl.WeightedSoftmaxExplorer(rng=0), rl.GumbelSoftmaxExplorer(rng=0),
    rl.FixedLengthEnv(3, time_limit=2), rl.GymEnv("FrozenLake-v1", seed=0),
], ids=lambda c: type(c).__name__)
def test_components_pickle_and_deep_copy(component):
    for clone in COPIES.values():
        assert type(clone(component)) is type(component)
