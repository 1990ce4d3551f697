"""Stop conditions, checked with scripted envs, one call per step."""

from __future__ import annotations

import math
import threading
import time

import pytest

import stagerl as rl


class ScriptedEnv:
    """An env whose episode-end flags the test sets."""

    def __init__(self, is_terminated=False, is_truncated=False):
        self.is_terminated, self.is_truncated = is_terminated, is_truncated


RUNNING, TERMINATED, TRUNCATED = ScriptedEnv(), ScriptedEnv(True), ScriptedEnv(False, True)


def answers(condition, envs):
    return [condition.check(None, env) for env in envs]


def test_stop_after_n_steps_is_true_from_the_nth_call_on():
    stop = rl.StopAfterNSteps(3, progress=False)
    assert answers(stop, [RUNNING] * 5) == [False, False, True, True, True]
    assert stop.step == 5


def test_stop_after_one_step():
    assert answers(rl.StopAfterNSteps(1, progress=False), [RUNNING] * 2) == [True, True]


def test_stop_after_n_steps_shows_a_progress_bar_redrawn_every_k_steps(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stop = rl.StopAfterNSteps(1000)
    answers(stop, [RUNNING] * 999)
    bar = stop._bar
    assert bar is not None and bar.n == 990  # redrawn every 10 steps (1%), not every step
    assert stop.check(None, RUNNING) and bar.n == 1000
    assert "1000/1000" in capsys.readouterr().err


def test_no_progress_bar_under_ci_or_with_progress_false(capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    for stop in (rl.StopAfterNSteps(5), rl.StopAfterNEpisodes(2)):
        answers(stop, [TERMINATED] * 5)
        assert stop._bar is None
    monkeypatch.delenv("CI")
    stop = rl.StopAfterNSteps(5, progress=False)
    answers(stop, [RUNNING] * 5)
    assert stop._bar is None and capsys.readouterr().err == ""


def test_stop_after_n_episodes_counts_terminated_or_truncated_calls():
    stop = rl.StopAfterNEpisodes(3, progress=False)
    script = [RUNNING, TERMINATED, RUNNING, RUNNING, TRUNCATED, RUNNING, TERMINATED, RUNNING]
    assert answers(stop, script) == [False] * 6 + [True, True]
    assert stop.episode == 3


def test_stop_after_n_episodes_progress_bar_counts_episodes(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stop = rl.StopAfterNEpisodes(2)
    answers(stop, [RUNNING, TERMINATED, TRUNCATED])
    assert stop._bar.n == 2 and "2/2" in capsys.readouterr().err


def test_stop_if_env_terminated_ignores_truncation():
    assert answers(rl.StopIfEnvTerminated(), [RUNNING, TRUNCATED, TERMINATED]) == [
        False, False, True,
    ]


def test_stop_after_no_improvement_follows_the_design_rule():
    values = iter([1.0, 2.0, 2.05, 1.0, 3.0, 3.0, 3.0])
    read = []

    def fn():
        read.append(True)
        return next(values)

    stop = rl.StopAfterNoImprovement(fn, patience=2, delta=0.1)
    assert stop.peak == -math.inf and stop.counter == 1
    script = [RUNNING, TERMINATED, TERMINATED, TRUNCATED, RUNNING, TERMINATED, TERMINATED,
              TERMINATED, TERMINATED]
    # values:         1.0 (peak)  2.0 (peak)  2.05 (+0.05 <= delta)       1.0        3.0 (peak)
    #                 3.0 (no)    3.0 (no: counter 3 > 2)
    assert answers(stop, script) == [False, False, False, False, False, True, False, False, True]
    assert len(read) == 7 and stop.peak == 3.0 and stop.counter == 3


def test_stop_after_no_improvement_first_episode_always_improves():
    stop = rl.StopAfterNoImprovement(lambda: -1e9, patience=1)
    assert answers(stop, [TERMINATED, TERMINATED]) == [False, True]


def test_stop_after_n_seconds_counts_from_construction():
    stop = rl.StopAfterNSeconds(0.05)
    assert not stop.check(None, RUNNING)
    time.sleep(0.06)
    assert stop.check(None, RUNNING)


def test_stop_signal_is_thread_safe_and_settable_from_anywhere():
    signal = rl.StopSignal()
    assert not signal.check(None, RUNNING)
    thread = threading.Thread(target=signal.set)
    thread.start()
    thread.join()
    assert signal.check(None, RUNNING) and signal.is_set()
    signal.clear()
    assert not signal.check(None, RUNNING)


def test_stop_if_any_and_all_evaluate_every_member_each_call():
    short, long = rl.StopAfterNSteps(2, progress=False), rl.StopAfterNSteps(4, progress=False)
    any_ = rl.StopIfAny(short, long)
    assert answers(any_, [RUNNING] * 2) == [False, True]
    assert short.step == 2 and long.step == 2  # no short-circuit: the second counter advanced

    short, long = rl.StopAfterNSteps(2, progress=False), rl.StopAfterNSteps(4, progress=False)
    all_ = rl.StopIfAll(long, short)
    assert answers(all_, [RUNNING] * 4) == [False, False, False, True]
    assert short.step == 4 and long.step == 4


def test_stop_if_any_ends_a_run():
    hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
                  rl.StopIfAny(rl.StopAfterNSteps(10**6, progress=False),
                               rl.StopAfterNEpisodes(2, progress=False)),
                  rl.StepsPerEpisode())
    assert len(hook.steps) == 2


@pytest.mark.parametrize(
    "build, exception, words",
    [
        (lambda: rl.StopAfterNSteps(0), ValueError, "n=0"),
        (lambda: rl.StopAfterNSteps(-5), ValueError, "n=-5"),
        (lambda: rl.StopAfterNSteps(2.5), TypeError, "n=2.5"),
        (lambda: rl.StopAfterNEpisodes(0), ValueError, "n=0"),
        (lambda: rl.StopAfterNoImprovement(lambda: 0.0, patience=0), ValueError, "patience=0"),
        (lambda: rl.StopAfterNoImprovement(3.0, patience=2), TypeError, "fn=3.0"),
        (lambda: rl.StopAfterNSeconds(0), ValueError, "seconds=0"),
        (lambda: rl.StopAfterNSeconds(-1.5), ValueError, "seconds=-1.5"),
        (lambda: rl.StopIfAny(), ValueError, "at least one"),
        (lambda: rl.StopIfAll(rl.StopSignal(), 10), TypeError, "10"),
    ],
)
def test_bad_arguments_are_refused_at_construction(build, exception, words):
    with pytest.raises(exception, match=words):
        build()


def test_the_base_class_asks_subclasses_for_check():
    with pytest.raises(NotImplementedError, match="check"):
        rl.StopCondition().check(None, RUNNING)
