"""Hooks and conditions on a vector env: each sub-env's episodes, as if run one after another.

The scripted lanes (``scripted_envs``) have known episodes: lane i has reward
``100 i + 10 t + action``; its even episodes terminate after ``length`` steps, odd ones are
truncated after ``length + 1``.
"""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from scripted_envs import scripted_vector_env

import stagerl as rl

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


class AlwaysOne(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_always_one(policy: AlwaysOne, env: rl.GymVectorEnv):
    return np.ones(env.num_envs, dtype=np.int64)


def vector_env(mode, lengths=(2, 3)):
    return rl.GymVectorEnv(scripted_vector_env(lengths, autoreset_mode=mode), seed=0)


@pytest.mark.parametrize("mode", MODES)
def test_per_episode_hooks_report_each_lanes_episodes_in_the_order_they_end(mode):
    totals, steps, rewards = (
        rl.TotalRewardPerEpisode(),
        rl.StepsPerEpisode(),
        rl.RewardsPerEpisode(),
    )
    stop = rl.StopAfterNEpisodes(3, progress=False)
    rl.run(AlwaysOne(), vector_env(mode), stop, totals + steps + rewards)
    # lane 0 ends [1, 11]; lane 1 ends [101, 111, 121]; lane 0 is truncated after [1, 11, 21]
    # (the third episode: the stop); lane 1's unfinished [101, 111] is appended at the stop.
    assert rewards.rewards == [
        [1.0, 11.0],
        [101.0, 111.0, 121.0],
        [1.0, 11.0, 21.0],
        [101.0, 111.0],
    ]
    assert totals.rewards == [12.0, 333.0, 33.0, 212.0]
    assert steps.steps == [2, 3, 3, 2]
    assert stop.episode == 3
    assert steps.count.tolist() == [0, 0] and totals.reward.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("mode", MODES)
def test_a_lane_that_only_reset_is_not_an_episode_at_the_stop(mode):
    steps = rl.StepsPerEpisode()
    rl.run(AlwaysOne(), vector_env(mode), rl.StopAfterNSteps(8, progress=False), steps)
    if mode == AutoresetMode.NEXT_STEP:
        assert steps.steps == [2, 3, 1]  # 4 acts: lane 1's 4th act only reset it
    else:
        assert steps.steps == [2, 3, 2, 1]  # SAME_STEP: every act is a step


def test_stop_after_n_steps_counts_num_envs_steps_per_act():
    acts = rl.DoEveryNSteps(lambda t, policy, env: None)
    stop = rl.StopAfterNSteps(10, progress=False)
    rl.run(AlwaysOne(), vector_env(AutoresetMode.NEXT_STEP, (2, 3, 5)), stop, acts)
    assert acts.t == 4 and stop.step == 12  # 3 sub-envs: 4 acts make 12 >= 10 env-steps


def test_reset_if_env_terminated_never_resets_a_vector_env():
    env = vector_env(AutoresetMode.SAME_STEP)
    env.reset()
    reset = rl.ResetIfEnvTerminated()
    for _ in range(6):
        env.act(np.ones(2, dtype=np.int64))
        assert not reset.check(None, env)


def test_vector_flags_in_stop_conditions():
    env = vector_env(AutoresetMode.NEXT_STEP)
    env.reset()
    terminated, episodes = rl.StopIfEnvTerminated(), rl.StopAfterNEpisodes(2, progress=False)
    values = iter([1.0, 1.0])
    no_improvement = rl.StopAfterNoImprovement(lambda: next(values), patience=1)
    answers = []
    for _ in range(3):
        env.act(np.ones(2, dtype=np.int64))
        answers.append(
            (
                terminated.check(None, env),
                episodes.check(None, env),
                no_improvement.check(None, env),
            )
        )
    # act 2: lane 0 terminates; act 3: lane 1 terminates (lane 0 only resets)
    assert answers == [(False, False, False), (True, False, False), (True, True, True)]
