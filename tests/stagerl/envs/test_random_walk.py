"""RandomWalk1D and the toy FixedLengthEnv."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.spaces import Discrete

import stagerl as rl


class AlwaysRight(rl.Policy):
    pass


@rl.plan.dispatch
def plan(policy: AlwaysRight, env: rl.Env):
    return 1


def test_defaults():
    env = rl.RandomWalk1D()
    env.reset()
    assert (env.n, env.start, env.rewards) == (7, 3, (-1.0, 1.0))
    assert (env.state, env.reward, env.is_terminated, env.is_truncated) == (3, 0.0, False, False)
    assert env.action_space == Discrete(2) and env.state_space == Discrete(7)
    assert env.last_action is None


def test_walking_right_reaches_plus_one():
    env = rl.RandomWalk1D()
    env.reset()
    trace = []
    for _ in range(3):
        env.act(1)
        trace.append((env.state, env.reward, env.is_terminated))
    assert trace == [(4, 0.0, False), (5, 0.0, False), (6, 1.0, True)]


def test_walking_left_reaches_minus_one():
    env = rl.RandomWalk1D(n=5, start=1, rewards=(-3, 2))
    env.reset()
    env.act(0)
    assert (env.state, env.reward, env.is_terminated) == (0, -3.0, True)
    assert type(env.reward) is float and type(env.state) is int


def test_reset_starts_over_and_keeps_the_last_action_the_loop_recorded():
    env = rl.RandomWalk1D(n=3)
    rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(1, progress=False))
    action = env.last_action
    env.reset()
    assert (env.state, env.reward, env.is_terminated, env.last_action) == (1, 0.0, False, action)
    assert action in (0, 1)


def test_acting_at_an_end_stays_on_the_line():
    env = rl.RandomWalk1D(n=3)
    env.reset()
    env.act(1)
    env.act(1)
    assert (env.state, env.reward, env.is_terminated) == (2, 1.0, True)
    env.act(0)
    assert (env.state, env.reward, env.is_terminated) == (1, 0.0, False)


def test_run_always_right():
    env = rl.RandomWalk1D()
    hook = rl.run(
        AlwaysRight(),
        env,
        rl.StopAfterNEpisodes(2, progress=False),
        rl.StepsPerEpisode() + rl.TotalRewardPerEpisode(),
    )
    assert hook[0].steps == [3, 3]
    assert hook[1].rewards == [1.0, 1.0]


@pytest.mark.parametrize("action", [np.int64(1), np.array(1), np.int8(1)])
def test_numpy_integer_actions(action):
    env = rl.RandomWalk1D()
    env.reset()
    env.act(action)
    assert env.state == 4 and type(env.state) is int


@pytest.mark.parametrize("action", [2, -1, 1.0, True, "1", None, np.array([1])])
def test_bad_actions_are_refused(action):
    env = rl.RandomWalk1D()
    env.reset()
    with pytest.raises(ValueError, match="action") as info:
        env.act(action)
    assert repr(action) in str(info.value)
    assert env.state == 3


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"n": 2}, ValueError),
        ({"n": 0}, ValueError),
        ({"n": 3.0}, TypeError),
        ({"start": 0}, ValueError),
        ({"start": 6}, ValueError),
        ({"start": 1.5}, TypeError),
        ({"rewards": (1.0,)}, ValueError),
        ({"rewards": ("a", "b")}, ValueError),
    ],
)
def test_bad_construction(kwargs, error):
    with pytest.raises(error):
        rl.RandomWalk1D(**kwargs)


def test_n_below_three_message():
    with pytest.raises(ValueError, match="n=2"):
        rl.RandomWalk1D(n=2)


# ---- FixedLengthEnv ----------------------------------------------------------------------------


def test_fixed_length_terminates():
    env = rl.FixedLengthEnv(length=3)
    hook = rl.run(
        AlwaysRight(), env, rl.StopAfterNEpisodes(2, progress=False), rl.StepsPerEpisode()
    )
    assert hook.steps == [3, 3]
    assert (env.state, env.is_terminated, env.is_truncated) == (3, True, False)


def test_fixed_length_time_limit_truncates():
    env = rl.FixedLengthEnv(length=5, time_limit=2)
    hook = rl.run(
        AlwaysRight(), env, rl.StopAfterNEpisodes(1, progress=False), rl.StepsPerEpisode()
    )
    assert hook.steps == [2]
    assert (env.state, env.is_terminated, env.is_truncated) == (2, False, True)


def test_fixed_length_terminal_wins_over_an_equal_time_limit():
    env = rl.FixedLengthEnv(length=2, time_limit=2)
    env.reset()
    env.act(0)
    env.act(0)
    assert (env.is_terminated, env.is_truncated) == (True, False)


def test_fixed_length_refuses_acting_after_the_end_and_bad_input():
    env = rl.FixedLengthEnv(length=1)
    env.reset()
    with pytest.raises(ValueError, match="action 7"):
        env.act(7)
    env.act(1)
    with pytest.raises(RuntimeError, match="reset"):
        env.act(1)
    with pytest.raises(ValueError, match="length"):
        rl.FixedLengthEnv(length=0)
    with pytest.raises(ValueError, match="time_limit"):
        rl.FixedLengthEnv(time_limit=0)
