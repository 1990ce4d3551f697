"""Finished episodes per sub-env (EpisodeTracker, EpisodeHook) and the hooks and conditions
that read them: on a vector env each sub-env's episodes, as if run one after another.

The scripted lanes (``scripted_envs``) have known episodes: lane i has reward
``100 i + 10 t + action``; its even episodes terminate after ``length`` steps, odd ones are
truncated after ``length + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from scripted_envs import scripted_env, scripted_vector_env

import stagerl as rl

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


class AlwaysOne(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_always_one(policy: AlwaysOne, env: rl.GymVectorEnv):
    return np.ones(env.num_envs, dtype=np.int64)


class AlwaysOneSingle(rl.Policy):
    pass


@rl.plan.dispatch
def _plan_always_one_single(policy: AlwaysOneSingle, env):
    return 1


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


# ---- the one source: EpisodeTracker and EpisodeHook ------------------------------------------


@dataclass
class Episodes(rl.EpisodeHook):
    """A per-episode hook written once: every finished episode, as a record."""

    seen: list = field(default_factory=list)

    def on_episode(self, episode, policy, env):
        self.seen.append((episode.lane, episode.total_reward, episode.length, episode.terminated,
                          episode.truncated))


@pytest.mark.parametrize("mode", MODES)
def test_an_episode_hook_sees_each_sub_envs_episodes_with_lane_return_length_and_flags(mode):
    hook = Episodes()
    rl.run(AlwaysOne(), vector_env(mode), rl.StopAfterNEpisodes(3, progress=False), hook)
    # lane 0: terminated after 2 steps (1 + 11), then truncated after 3 (1 + 11 + 21); lane 1:
    # terminated after 3 steps (101 + 111 + 121), then cut by the stop after 2 (101 + 111).
    assert hook.seen == [
        (0, 12.0, 2, True, False),
        (1, 333.0, 3, True, False),
        (0, 33.0, 3, False, True),
        (1, 212.0, 2, False, False),
    ]


def test_the_same_episode_hook_on_one_env_sees_each_episode_at_its_end():
    hook = Episodes()
    env = rl.GymEnv(scripted_env(lane=1, length=2), seed=0)
    rl.run(AlwaysOneSingle(), env, rl.StopAfterNEpisodes(3, progress=False), hook)
    assert hook.seen == [
        (0, 212.0, 2, True, False),   # 101 + 111, terminated
        (0, 333.0, 3, False, True),   # 101 + 111 + 121, truncated by the time limit
        (0, 212.0, 2, True, False),
    ]


def test_an_episode_cut_by_the_stop_on_one_env_has_neither_flag():
    hook = Episodes()
    env = rl.GymEnv(scripted_env(lane=0, length=5), seed=0)
    rl.run(AlwaysOneSingle(), env, rl.StopAfterNSteps(3, progress=False), hook)
    assert hook.seen == [(0, 33.0, 3, False, False)]  # 1 + 11 + 21


def test_the_tracker_reports_nothing_at_post_act_on_one_env_and_the_episode_at_its_end():
    env, tracker = rl.FixedLengthEnv(2), rl.EpisodeTracker(keep_rewards=True)
    env.reset()
    tracker.start(env)
    env.act(0)
    assert tracker.step(env) == () and tracker.running_length == 1
    env.act(0)
    assert tracker.step(env) == ()
    (episode,) = tracker.finish(env)
    assert episode == rl.Episode(0, 2.0, 2, True, False, (1.0, 1.0))
    assert tracker.running_reward == 0.0 and tracker.running_length == 0


def test_an_episode_hook_copies_and_continues_exactly():
    import copy

    env = vector_env(AutoresetMode.NEXT_STEP)
    hook = Episodes()
    rl.run(AlwaysOne(), env, rl.StopAfterNSteps(6, progress=False), hook)
    twin_env, twin_hook = copy.deepcopy((env, hook))
    rl.run(AlwaysOne(), env, rl.StopAfterNSteps(10, progress=False), hook)
    rl.run(AlwaysOne(), twin_env, rl.StopAfterNSteps(10, progress=False), twin_hook)
    assert twin_hook.seen == hook.seen
