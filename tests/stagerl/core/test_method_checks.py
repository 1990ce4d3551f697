"""Methods the loop never calls are reported when an experiment starts, not silently ignored."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stagerl as rl
from stagerl.core import method_checks
from stagerl.core.method_checks import UnreachableMethodWarning


@pytest.fixture(autouse=True)
def _fresh_reports():
    # Each mistake is reported once per process; each test starts with none reported.
    method_checks._reported.clear()
    yield
    method_checks._reported.clear()


def _warnings_of(policy, env, hook=None, steps=3):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rl.run(policy, env, rl.StopAfterNSteps(steps, progress=False), hook)
    return [str(w.message) for w in caught if issubclass(w.category, UnreachableMethodWarning)]


class LearnsWithoutTrajectory(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_learns_without_trajectory(policy: LearnsWithoutTrajectory, env):
    return 0


@rl.optimise.dispatch
def _optimise_learns_without_trajectory(policy: LearnsWithoutTrajectory, stage: rl.PostActStage):
    raise AssertionError("never called inside an Agent")


def test_optimise_without_trajectory_for_a_policy_inside_an_agent_is_reported():
    agent = rl.Agent(LearnsWithoutTrajectory(), rl.Trajectory(rl.CircularArraySARTSTraces(10)))
    (message,) = _warnings_of(agent, rl.RandomWalk1D())
    assert "_optimise_learns_without_trajectory" in message
    assert "optimise(LearnsWithoutTrajectory, PostActStage)" in message
    assert "optimise(policy, stage, trajectory)" in message


class HookWithoutPolicy(rl.Hook):
    pass


@rl.push.dispatch
def _push_hook_without_policy(hook: HookWithoutPolicy, stage: rl.PostActStage, env):
    raise AssertionError("never called")


def test_a_hook_method_without_the_policy_is_reported_with_the_call_the_loop_makes():
    (message,) = _warnings_of(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), HookWithoutPolicy())
    assert "_push_hook_without_policy" in message
    assert "push(hook, stage, policy, env)" in message


class TrajectoryLearner(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_trajectory_learner(policy: TrajectoryLearner, env):
    return 0


@rl.optimise.dispatch
def _optimise_trajectory_learner(policy: TrajectoryLearner, stage: rl.PostActStage, trajectory):
    pass


def test_optimise_with_a_trajectory_for_a_policy_run_on_its_own_is_reported():
    (message,) = _warnings_of(TrajectoryLearner(), rl.RandomWalk1D())
    assert "optimise(policy, stage)" in message and "rl.Agent" in message
    # inside an Agent it is called: nothing to report
    agent = rl.Agent(TrajectoryLearner(), rl.Trajectory(rl.CircularArraySARTSTraces(10)))
    assert _warnings_of(agent, rl.RandomWalk1D()) == []


def test_each_mistake_is_reported_once_and_correct_experiments_report_nothing():
    assert len(_warnings_of(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), HookWithoutPolicy())) == 1
    assert _warnings_of(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), HookWithoutPolicy()) == []
    hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode() + rl.TimePerStep()
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(rl.CircularArraySARTSTraces(10)))
    assert _warnings_of(agent, rl.RandomWalk1D(), hook) == []


def test_check_methods_false_reports_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreachableMethodWarning)
        rl.Experiment(LearnsPerEpisodeOnce(), rl.RandomWalk1D(),
                      rl.StopAfterNSteps(3, progress=False), None, check_methods=False).run()


# ---- vector envs: PostEpisodeStage comes once per run ----------------------------------------


class LearnsPerEpisodeOnce(rl.Policy):
    def __init__(self):
        self.updates = 0


@rl.plan.dispatch
def _plan_per_episode(policy: LearnsPerEpisodeOnce, env):
    return np.zeros(env.num_envs, dtype=np.int64) if isinstance(env, rl.VectorEnv) else 0


@rl.optimise.dispatch
def _optimise_per_episode(policy: LearnsPerEpisodeOnce, stage: rl.PostEpisodeStage, trajectory):
    policy.updates += 1


def test_a_learner_at_post_episode_only_is_warned_on_a_vector_env_with_the_way_to_do_it():
    agent = rl.Agent(LearnsPerEpisodeOnce(), rl.Trajectory(
        rl.CircularArraySARTSTraces(100, state=(np.float32, (4,)))))
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    messages = _warnings_of(agent, env, steps=200)
    assert any("learns at PostEpisodeStage only" in m and "EpisodeSampleRatioController" in m
               for m in messages)
    assert agent.policy.updates == 1  # what the warning is about: once per run


class CountsEpisodesAtPostEpisode(rl.Hook):
    def __init__(self):
        self.episodes = 0


@rl.push.dispatch
def _push_counts_episodes(hook: CountsEpisodesAtPostEpisode, stage: rl.PostEpisodeStage, policy,
                          env):
    hook.episodes += 1


def test_a_hook_counting_at_post_episode_is_warned_on_a_vector_env_but_not_on_one_env():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    messages = _warnings_of(rl.RandomPolicy(rng=0), env, CountsEpisodesAtPostEpisode(), 200)
    assert any("rl.EpisodeHook" in m and "on_episode" in m for m in messages)
    single = rl.GymEnv("CartPole-v1", seed=0)
    assert _warnings_of(rl.RandomPolicy(rng=0), single, CountsEpisodesAtPostEpisode(), 20) == []


# ---- a policy refuses an env it cannot act in, before anything runs --------------------------


def test_tabular_q_on_a_box_state_space_fails_when_the_experiment_is_built():
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(16, 2)),
                             rl.EpsilonGreedyExplorer(0.1, rng=0))
    env = rl.GymEnv("CartPole-v1", seed=0)
    with pytest.raises(TypeError, match=r"state space is Box.*needs Discrete states"):
        rl.Experiment(rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(1))), env,
                      rl.StopAfterNSteps(5, progress=False), None)
    too_small = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(4, 2)),
                                rl.EpsilonGreedyExplorer(0.1, rng=0))
    with pytest.raises(ValueError, match="n_states=7"):
        rl.run(too_small, rl.RandomWalk1D())
