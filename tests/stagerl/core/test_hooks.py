"""The built-in hooks, fed scripted stages, and hook composition."""

from __future__ import annotations

import time

import pytest

import stagerl as rl

PRE_EXPERIMENT, PRE_EPISODE = rl.PreExperimentStage(), rl.PreEpisodeStage()
PRE_ACT = rl.PreActStage()
POST_ACT, POST_EPISODE = rl.PostActStage(), rl.PostEpisodeStage()
POST_EXPERIMENT = rl.PostExperimentStage()
ALL_STAGES = (PRE_EXPERIMENT, PRE_EPISODE, PRE_ACT, POST_ACT, POST_EPISODE, POST_EXPERIMENT)


class ScriptedEnv:
    """Only what hooks read: ``reward`` is set by the test."""

    def __init__(self):
        self.reward = 0.0


def play(hook, episodes, env=None, policy=None):
    """Push the stages of whole episodes whose per-step rewards are given, as run would."""
    env = ScriptedEnv() if env is None else env
    rl.push(hook, PRE_EXPERIMENT, policy, env)
    for rewards in episodes:
        rl.push(hook, PRE_EPISODE, policy, env)
        for reward in rewards:
            rl.push(hook, PRE_ACT, policy, env)
            env.reward = reward
            rl.push(hook, POST_ACT, policy, env)
        rl.push(hook, POST_EPISODE, policy, env)
    rl.push(hook, POST_EXPERIMENT, policy, env)
    return hook


def test_empty_hook_records_nothing_at_any_stage():
    hook = play(rl.EmptyHook(), [[1.0, 2.0]])
    assert vars(hook) == {}


def test_steps_per_episode_counts_post_acts_and_appends_at_post_episode():
    hook = play(rl.StepsPerEpisode(), [[0.0] * 3, [0.0], []])
    assert hook.steps == [3, 1, 0] and hook.count == 0


def test_steps_per_episode_keeps_counting_an_unfinished_episode():
    hook = rl.StepsPerEpisode()
    for _ in range(2):
        rl.push(hook, POST_ACT, None, ScriptedEnv())
    assert hook.steps == [] and hook.count == 2


def test_rewards_per_episode_starts_a_list_at_pre_episode():
    hook = play(rl.RewardsPerEpisode(), [[1.0, -2.0], [], [0.5]])
    assert hook.rewards == [[1.0, -2.0], [], [0.5]]


def test_total_reward_per_episode_sums_and_resets():
    hook = play(rl.TotalRewardPerEpisode(), [[1.0, 2.0, 3.5], [-1.0], []])
    assert hook.rewards == [6.5, -1.0, 0.0] and hook.reward == 0.0


def test_time_per_step_measures_between_post_acts_and_keeps_the_last_max_steps():
    clock = iter([10.0, 10.5, 10.75, 11.0, 12.0, 12.25]).__next__  # an injected clock
    hook = rl.TimePerStep(max_steps=3, clock=clock)
    env = ScriptedEnv()
    rl.push(hook, POST_ACT, None, env)
    assert hook.times == [0.5]  # the first one: since construction (10.0)
    for _ in range(4):
        rl.push(hook, POST_ACT, None, env)
    assert hook.times == [0.25, 1.0, 0.25]  # the last 3 of 0.5, 0.25, 0.25, 1.0, 0.25
    assert rl.TimePerStep().max_steps == 100 and rl.TimePerStep().clock is time.perf_counter


def test_do_every_n_steps_calls_f_with_the_step_count():
    calls = []
    policy, env = object(), ScriptedEnv()
    hook = rl.DoEveryNSteps(lambda t, p, e: calls.append((t, p, e)), n=3)
    play(hook, [[0.0] * 4, [0.0] * 4], env, policy)
    assert calls == [(3, policy, env), (6, policy, env)] and hook.t == 8


def test_do_every_n_steps_defaults_to_every_step():
    calls = []
    play(rl.DoEveryNSteps(lambda t, p, e: calls.append(t)), [[0.0] * 3])
    assert calls == [1, 2, 3]


@pytest.mark.parametrize("stage", [rl.PostEpisodeStage, rl.PostEpisodeStage()])
def test_do_every_n_episodes_counts_at_post_episode_by_default(stage):
    calls = []
    hook = rl.DoEveryNEpisodes(lambda t, p, e: calls.append((t, e.reward)), n=2, stage=stage)
    play(hook, [[1.0], [2.0], [3.0], [4.0], [5.0]])
    assert calls == [(2, 2.0), (4, 4.0)]  # after the episode: its last reward is visible
    assert hook.stage is rl.PostEpisodeStage


@pytest.mark.parametrize("stage", [rl.PreEpisodeStage, rl.PreEpisodeStage()])
def test_do_every_n_episodes_at_pre_episode(stage):
    calls = []
    hook = rl.DoEveryNEpisodes(lambda t, p, e: calls.append((t, e.reward)), stage=stage)
    play(hook, [[1.0], [2.0], [3.0]])
    assert calls == [(1, 0.0), (2, 1.0), (3, 2.0)]  # before the episode: the last one's reward


def test_do_on_exit_calls_f_once_at_post_experiment():
    calls = []
    policy, env = object(), ScriptedEnv()
    play(rl.DoOnExit(lambda p, e: calls.append((p, e))), [[1.0], [2.0]], env, policy)
    assert calls == [(policy, env)]


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: rl.DoEveryNSteps(print, n=0), "n=0"),
        (lambda: rl.DoEveryNSteps(print, n=-3), "n=-3"),
        (lambda: rl.DoEveryNEpisodes(print, n=0), "n=0"),
        (lambda: rl.TimePerStep(max_steps=0), "max_steps=0"),
        (lambda: rl.DoEveryNEpisodes(print, stage=rl.PostActStage), "PostActStage"),
    ],
)
def test_bad_values_raise_value_errors_naming_them(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize(
    "build",
    [
        lambda: rl.DoEveryNSteps("not callable"),
        lambda: rl.DoEveryNEpisodes(None),
        lambda: rl.DoOnExit(3),
        lambda: rl.DoEveryNSteps(print, n=2.5),
    ],
)
def test_bad_kinds_raise_type_errors(build):
    with pytest.raises(TypeError):
        build()


def test_hooks_are_dataclasses_whose_fields_are_their_metrics():
    hook = play(rl.StepsPerEpisode() + rl.TotalRewardPerEpisode(), [[1.0, 1.0]])
    assert repr(hook[0]) == "StepsPerEpisode(steps=[2], count=0)"
    assert repr(hook[1]) == "TotalRewardPerEpisode(rewards=[2.0], reward=0.0)"


# ---- composition --------------------------------------------------------------------------


def test_plus_builds_a_flat_composed_hook_whose_members_run_left_to_right():
    order = []
    first = rl.DoEveryNSteps(lambda t, p, e: order.append("first"))
    second = rl.DoEveryNSteps(lambda t, p, e: order.append("second"))
    third = rl.DoEveryNSteps(lambda t, p, e: order.append("third"))
    empty = rl.EmptyHook()
    hook = (first + second) + (empty + third)
    assert isinstance(hook, rl.ComposedHook) and len(hook) == 4
    assert [hook[i] for i in range(4)] == [first, second, empty, third]
    assert [hook[i] is member for i, member in enumerate((first, second, empty, third))] == [
        True, True, True, True]
    assert list(hook) == list(hook.hooks)
    play(hook, [[0.0]])
    assert order == ["first", "second", "third"]


def test_composed_hooks_stay_flat_however_they_are_nested():
    a, b, c, d = rl.EmptyHook(), rl.StepsPerEpisode(), rl.TotalRewardPerEpisode(), rl.EmptyHook()
    nested = rl.ComposedHook(rl.ComposedHook(a, rl.ComposedHook(b)), c + d)
    assert list(nested) == [a, b, c, d]
    assert all(not isinstance(h, rl.ComposedHook) for h in nested)


def test_composing_with_a_non_hook_is_refused():
    with pytest.raises(TypeError):
        rl.StepsPerEpisode() + 3
    with pytest.raises(TypeError, match="Hook"):
        rl.ComposedHook(rl.EmptyHook(), print)


def test_a_composed_hook_records_like_its_members_alone():
    steps, total = rl.StepsPerEpisode(), rl.TotalRewardPerEpisode()
    play(steps + total, [[1.0, 2.0], [3.0]])
    assert steps.steps == [2, 1] and total.rewards == [3.0, 3.0]
