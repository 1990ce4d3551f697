"""check_env: good envs pass; each kind of mistake is named with its fix."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.spaces import Box, Discrete

import stagerl as rl


class GoodEnv(rl.Env):
    """A correct array-state env: a counter that terminates after 4 steps."""

    def __init__(self):
        self._state = np.zeros(2, dtype=np.float32)
        self.t = 0

    def reset(self):
        self.t = 0
        self._state = np.zeros(2, dtype=np.float32)

    def act(self, action):
        if action not in (0, 1):
            raise ValueError(f"bad action {action!r}")
        self.t += 1
        self._state = self._state + 1  # a new array each step

    @property
    def state(self):
        return self._state

    @property
    def reward(self):
        return 1.0

    @property
    def is_terminated(self):
        return self.t >= 4

    @property
    def action_space(self):
        return Discrete(2)

    @property
    def state_space(self):
        return Box(0, 10, (2,), np.float32)


def problems_of(env):
    with pytest.raises(rl.EnvCheckError) as info:
        rl.check_env(env)
    assert isinstance(info.value, ValueError)
    return info.value.problems


@pytest.mark.parametrize(
    "make",
    [
        GoodEnv,
        rl.RandomWalk1D,
        lambda: rl.FixedLengthEnv(length=3, time_limit=2),
        lambda: rl.GymEnv("CartPole-v1", seed=0),
        lambda: rl.GymEnv("Pendulum-v1", seed=0),
        lambda: gymnasium.make("FrozenLake-v1"),
    ],
)
def test_good_envs_pass(make):
    assert rl.check_env(make()) is None


def test_state_mutated_in_place():
    class InPlace(GoodEnv):
        def act(self, action):
            super().act(action)
            self._state = getattr(self, "_buf", self._state)
            self._buf = self._state
            self._buf += 0  # keep one array...
            self._buf[:] = self.t  # ...and overwrite it each step

    [problem] = problems_of(InPlace())
    assert "was changed by" in problem and "copy" in problem


def test_missing_members():
    class NoState(rl.Env):
        def reset(self):
            pass

        def act(self, action):
            pass

        @property
        def action_space(self):
            return Discrete(2)

        @property
        def state_space(self):
            return Discrete(2)

    problems = problems_of(NoState())
    assert any("state is not implemented" in p for p in problems)


def test_spaces_not_gymnasium():
    class BadSpaces(GoodEnv):
        action_space = [0, 1]
        state_space = None

    problems = problems_of(BadSpaces())
    assert len(problems) == 2
    assert "action_space is [0, 1], not a gymnasium space" in problems[0]
    assert "state_space is None" in problems[1]


def test_done_right_after_reset():
    class Done(GoodEnv):
        @property
        def is_terminated(self):
            return True

    problems = problems_of(Done())
    assert "ended right after reset()" in problems[0]


@pytest.mark.parametrize(
    "reward, expected",
    [(None, "must be a number"), (float("nan"), "finite"), (np.ones(1), "must be a number")],
)
def test_bad_rewards(reward, expected):
    class BadReward(GoodEnv):
        @property
        def reward(self):
            return reward

    problems = problems_of(BadReward())
    assert len(problems) == 1 and expected in problems[0]


def test_both_flags_and_non_bool_flags():
    class Both(GoodEnv):
        @property
        def is_truncated(self):
            return 1 if self.t >= 4 else 0

    problems = problems_of(Both())
    assert any("is_truncated at step" in p and "must be a bool" in p for p in problems)
    assert any("both true" in p for p in problems)


def test_state_outside_state_space():
    class WrongDtype(GoodEnv):
        @property
        def state(self):
            return self._state.astype(np.float64)

    [problem] = problems_of(WrongDtype())
    assert "outside state_space" in problem and "dtype float64" in problem


def test_invalid_action_accepted():
    class Lenient(GoodEnv):
        def act(self, action):
            self.t += 1

    [problem] = problems_of(Lenient())
    assert "act(2)" in problem and "did not raise" in problem


def test_reset_raises_and_reset_returns_something():
    class ResetFails(GoodEnv):
        def reset(self):
            raise OSError("no display")

    assert problems_of(ResetFails()) == ["reset() raised OSError: no display"]

    class ResetReturns(GoodEnv):
        def reset(self):
            super().reset()
            return self._state, {}

    [problem] = problems_of(ResetReturns())
    assert "should return None" in problem


def test_act_raising_on_valid_actions():
    class ActFails(GoodEnv):
        def act(self, action):
            raise ZeroDivisionError("oops")

    [problem] = problems_of(ActFails())
    assert problem.startswith("act(") and "ZeroDivisionError: oops" in problem


def test_not_an_env():
    with pytest.raises(TypeError, match="stagerl.Env"):
        rl.check_env(object())
    with pytest.raises(TypeError, match="vector"):
        rl.check_env(gymnasium.make_vec("CartPole-v1", num_envs=2))


def test_message_lists_every_problem():
    class Bad(GoodEnv):
        @property
        def reward(self):
            return "1"

        def act(self, action):
            self.t += 1

    with pytest.raises(rl.EnvCheckError) as info:
        rl.check_env(Bad())
    text = str(info.value)
    assert text.startswith("Bad fails 2 env check(s):")
    assert text.count("\n  - ") == 2
