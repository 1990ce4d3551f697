"""Reset conditions."""

from __future__ import annotations

import pytest

import stagerl as rl


class ScriptedEnv:
    def __init__(self, is_terminated=False, is_truncated=False):
        self.is_terminated, self.is_truncated = is_terminated, is_truncated


def test_reset_if_env_terminated_also_resets_truncated_episodes():
    reset = rl.ResetIfEnvTerminated()
    assert not reset.check(None, ScriptedEnv())
    assert reset.check(None, ScriptedEnv(is_terminated=True))
    assert reset.check(None, ScriptedEnv(is_truncated=True))


@pytest.mark.parametrize("n", [1, 3, 5])
def test_reset_after_n_steps_is_true_on_every_n_plus_first_call(n):
    reset = rl.ResetAfterNSteps(n)
    got = [reset.check(None, ScriptedEnv()) for _ in range(3 * (n + 1))]
    assert got == ([False] * n + [True]) * 3


def test_reset_after_n_steps_ignores_the_env():
    reset = rl.ResetAfterNSteps(1)
    assert [reset.check(None, ScriptedEnv(is_terminated=True)) for _ in range(2)] == [False, True]


def test_reset_after_n_steps_gives_episodes_of_n_steps():
    hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(n=10**6),
                  rl.StopAfterNSteps(10, progress=False), rl.StepsPerEpisode(),
                  rl.ResetAfterNSteps(4))
    assert hook.steps == [4, 4, 2]


@pytest.mark.parametrize("n, exception", [(0, ValueError), (-2, ValueError), (1.5, TypeError)])
def test_reset_after_n_steps_refuses_bad_n(n, exception):
    with pytest.raises(exception, match=f"n={n}"):
        rl.ResetAfterNSteps(n)


def test_the_base_class_asks_subclasses_for_check():
    with pytest.raises(NotImplementedError, match="check"):
        rl.ResetCondition().check(None, ScriptedEnv())
