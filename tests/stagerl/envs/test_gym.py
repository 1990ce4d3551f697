"""GymEnv: seeding, terminated vs truncated, state copies, bad input."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.spaces import Box, Dict, Discrete

import stagerl as rl


class ArrayEnv(gymnasium.Env):
    """A scripted gymnasium env whose observation is ``[t, t]`` (``t`` counts the steps).

    ``mode`` says how the observation is handed out: ``"fresh"`` builds a new array each step,
    ``"inplace"`` returns one internal array mutated in place, ``"view"`` a new view of it,
    ``"dict"`` a dict holding the internal array. ``rewards`` scripts the rewards.
    """

    def __init__(self, mode="fresh", rewards=None, length=10):
        self.mode, self.rewards, self.length = mode, rewards, length
        self.action_space = Discrete(2)
        box = Box(0, 100, (2,), np.float64)
        self.observation_space = Dict({"x": box}) if mode == "dict" else box
        self.buf = np.zeros(2)
        self.returned_ids = []
        self.reset_kwargs = []

    def _obs(self):
        self.buf[:] = self.t
        if self.mode == "fresh":
            obs = np.full(2, float(self.t))
        elif self.mode == "inplace":
            obs = self.buf
        elif self.mode == "view":
            obs = self.buf[:]
        else:
            obs = {"x": self.buf}
        self.returned_ids.append(id(obs))  # an id, not a reference: it must not pin the array
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.reset_kwargs.append(seed)
        self.t = 0
        return self._obs(), {"reset": True}

    def step(self, action):
        if action not in (0, 1):
            raise RuntimeError("bad action")
        self.t += 1
        reward = 1.0 if self.rewards is None else self.rewards[self.t - 1]
        return self._obs(), reward, self.t >= self.length, False, {"t": self.t}


def _trace(env, actions):
    env.reset()
    states, rewards = [env.state.copy()], []
    for a in actions:
        env.act(a)
        states.append(env.state.copy())
        rewards.append(env.reward)
        if env.is_terminated or env.is_truncated:
            env.reset()
            states.append(env.state.copy())
    return np.array(states), rewards


# ---- seeding -----------------------------------------------------------------------------------


def test_same_seed_gives_same_states_and_rewards():
    actions = [i % 2 for i in range(60)] + [1] * 40
    s1, r1 = _trace(rl.GymEnv("CartPole-v1", seed=7), actions)
    s2, r2 = _trace(rl.GymEnv("CartPole-v1", seed=7), actions)
    s3, _ = _trace(rl.GymEnv("CartPole-v1", seed=8), actions)
    np.testing.assert_array_equal(s1, s2)
    assert r1 == r2
    assert not np.array_equal(s1[0], s3[0])


def test_seeds_only_the_first_reset_and_the_action_space():
    raw = ArrayEnv()
    env = rl.GymEnv(raw, seed=3)
    env.reset()
    env.reset()
    env.reset()
    assert raw.reset_kwargs == [3, None, None]
    other = rl.GymEnv(ArrayEnv(), seed=3)
    other.reset()
    assert [env.action_space.sample() for _ in range(20)] == [
        other.action_space.sample() for _ in range(20)
    ]


def test_later_episodes_differ_from_the_first():
    env = rl.GymEnv("CartPole-v1", seed=0)
    env.reset()
    first = env.state
    env.reset()
    assert not np.array_equal(first, env.state)


def test_without_seed_never_passes_one():
    raw = ArrayEnv()
    env = rl.GymEnv(raw)
    env.reset()
    env.reset()
    assert raw.reset_kwargs == [None, None]


# ---- terminated vs truncated -------------------------------------------------------------------


class Alternate(rl.Policy):
    """0, 1, 0, 1, ...: keeps CartPole's pole up for many steps."""

    def __init__(self):
        self.t = 0


@rl.plan.dispatch
def plan(policy: Alternate, env: rl.Env):
    policy.t += 1
    return policy.t % 2


class AlwaysRight(rl.Policy):
    pass


@rl.plan.dispatch
def plan(policy: AlwaysRight, env: rl.Env):  # noqa: F811  (another method of plan)
    return 1


def test_time_limit_truncates_and_does_not_terminate():
    env = rl.GymEnv("CartPole-v1", seed=0, max_episode_steps=5)
    hook = rl.run(Alternate(), env, rl.StopAfterNEpisodes(1, progress=False), rl.StepsPerEpisode())
    assert hook.steps == [5]
    assert env.is_truncated is True
    assert env.is_terminated is False


def test_falling_pole_terminates_and_is_not_truncated():
    env = rl.GymEnv("CartPole-v1", seed=0, max_episode_steps=500)
    hook = rl.run(
        AlwaysRight(), env, rl.StopAfterNEpisodes(1, progress=False), rl.StepsPerEpisode()
    )
    assert hook.steps[0] < 20
    assert env.is_terminated is True
    assert env.is_truncated is False


def test_reset_clears_flags_and_reward_and_keeps_last_action():
    env = rl.GymEnv(ArrayEnv(length=1))
    env.reset()
    assert env.info == {"reset": True}
    env.act(1)
    assert (env.is_terminated, env.reward, env.info, env.last_action) == (
        True, 1.0, {"t": 1}, None)  # acting outside the run loop records no action
    env.last_action = 1  # what the loop does right after act
    env.reset()
    assert (env.is_terminated, env.is_truncated, env.reward, env.last_action) == (
        False,
        False,
        0.0,
        1,
    )


def test_reward_is_a_python_float():
    env = rl.GymEnv(ArrayEnv(rewards=[np.float32(0.5), 2]))
    env.reset()
    env.act(0)
    assert type(env.reward) is float and env.reward == 0.5
    env.act(0)
    assert type(env.reward) is float and env.reward == 2.0


def test_spaces_are_the_envs():
    raw = gymnasium.make("CartPole-v1")
    env = rl.GymEnv(raw)
    assert env.action_space is raw.action_space
    assert env.state_space is raw.observation_space
    assert env.unwrapped is raw.unwrapped
    assert repr(env) == "GymEnv('CartPole-v1', seed=None)"


# ---- state copies ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fresh", "inplace", "view"])
def test_state_is_never_mutated_by_later_steps(mode):
    env = rl.GymEnv(ArrayEnv(mode))
    env.reset()
    states = [env.state]
    for _ in range(3):
        env.act(0)
        states.append(env.state)
    env.reset()
    assert [s.tolist() for s in states] == [[0, 0], [1, 1], [2, 2], [3, 3]]


def test_dict_state_is_copied():
    env = rl.GymEnv(ArrayEnv("dict"))
    env.reset()
    first = env.state
    env.act(1)
    assert first["x"].tolist() == [0, 0] and env.state["x"].tolist() == [1, 1]


def test_fresh_arrays_nobody_else_holds_are_not_copied():
    raw = ArrayEnv("fresh")
    env = rl.GymEnv(raw)
    env.reset()
    assert id(env.state) == raw.returned_ids[-1]
    env.act(0)
    assert id(env.state) == raw.returned_ids[-1]


@pytest.mark.parametrize("mode", ["inplace", "view"])
def test_arrays_the_env_holds_are_copied(mode):
    raw = ArrayEnv(mode)
    env = rl.GymEnv(raw)
    env.reset()
    assert not np.shares_memory(env.state, raw.buf)
    env.act(0)
    assert not np.shares_memory(env.state, raw.buf)


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: gymnasium.make_vec("CartPole-v1", num_envs=2),
        lambda: gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")]),
    ],
)
def test_vector_env_is_refused(make):
    vec = make()
    with pytest.raises(TypeError, match="GymVectorEnv"):
        rl.GymEnv(vec)
    vec.close()


def test_vector_arguments_with_an_id_are_refused():
    with pytest.raises(TypeError, match="GymVectorEnv"):
        rl.GymEnv("CartPole-v1", num_envs=4)


@pytest.mark.parametrize("bad", [object(), 3, None, rl.RandomWalk1D()])
def test_non_env_is_refused(bad):
    with pytest.raises(TypeError):
        rl.GymEnv(bad)


def test_make_kwargs_with_an_env_object_are_refused():
    with pytest.raises(TypeError, match="make_kwargs"):
        rl.GymEnv(ArrayEnv(), max_episode_steps=3)


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (1.5, TypeError), ("0", TypeError)])
def test_bad_seed(seed, error):
    with pytest.raises(error, match="seed"):
        rl.GymEnv("CartPole-v1", seed=seed)


@pytest.mark.parametrize("action", [-1, 2, 1.5, np.array([0, 1]), "left"])
def test_action_outside_a_discrete_space(action):
    env = rl.GymEnv("CartPole-v1", seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"outside the action space Discrete\(2\)") as info:
        env.act(action)
    assert repr(action) in str(info.value)


def test_negative_action_an_env_would_silently_accept():
    env = rl.GymEnv("Acrobot-v1", seed=0)  # Acrobot indexes its torques with the action
    env.reset()
    with pytest.raises(ValueError, match="action -1"):
        env.act(-1)


def test_action_outside_a_box_space():
    env = rl.GymEnv("MountainCarContinuous-v0", seed=0)
    env.reset()
    with pytest.raises(ValueError, match="outside the action space Box") as info:
        env.act(0.5)  # a scalar where the space wants shape (1,)
    assert isinstance(info.value.__cause__, Exception)


def test_numpy_actions_are_accepted():
    env = rl.GymEnv("CartPole-v1", seed=0)
    env.reset()
    env.act(np.int64(1))
    assert env.reward == 1.0 and env.state.shape == (4,)


def test_an_env_error_for_a_valid_action_propagates_unchanged():
    class Broken(ArrayEnv):
        def step(self, action):
            raise KeyError("internal")

    env = rl.GymEnv(Broken())
    env.reset()
    with pytest.raises(KeyError, match="internal"):
        env.act(1)


def test_nan_reward_names_the_env_and_the_step():
    env = rl.GymEnv(ArrayEnv(rewards=[0.0, float("nan")]))
    env.reset()
    env.act(0)
    with pytest.raises(ValueError, match=r"NaN reward at step 2") as info:
        env.act(0)
    assert "GymEnv(ArrayEnv" in str(info.value)


class ValuesEnv(gymnasium.Env):
    """Steps that return the scripted ``(reward, terminated, truncated)`` values as they are."""

    observation_space = Box(0, 1, (1,), np.float32)
    action_space = Discrete(2)

    def __init__(self, steps):
        self.steps = list(steps)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        reward, terminated, truncated = self.steps.pop(0)
        return np.zeros(1, np.float32), reward, terminated, truncated, {}


class FloatSubclass(float):
    pass


REWARDS = [1.0, -0.5, 0, 3, True, np.float32(0.25), np.float64(-2.0), np.int64(4),
           FloatSubclass(1.5), np.array(0.75), float("inf"), -0.0]
FLAGS = [False, True, 0, 1, np.bool_(True), np.bool_(False), np.int64(0), np.array(True)]


@pytest.mark.parametrize("flag", FLAGS, ids=repr)
@pytest.mark.parametrize("reward", REWARDS, ids=repr)
def test_act_stores_a_python_float_and_bools_as_the_conversions_make_them(reward, flag):
    # act skips float() and bool() for values already of that type: what it stores must be
    # what the conversions give, of exactly that type, for every kind of value an env returns
    env = rl.GymEnv(ValuesEnv([(reward, flag, flag), (reward, False, flag)]))
    env.reset()
    for _ in range(2):
        env.act(0)
        assert type(env.reward) is float and repr(env.reward) == repr(float(reward))
    assert type(env.is_terminated) is bool and env.is_terminated is False
    assert type(env.is_truncated) is bool and env.is_truncated is bool(flag)


@pytest.mark.parametrize("reward", [float("nan"), np.float32("nan"), np.array(float("nan"))],
                         ids=repr)
def test_act_refuses_a_nan_reward_of_any_type(reward):
    env = rl.GymEnv(ValuesEnv([(reward, False, False)]))
    env.reset()
    with pytest.raises(ValueError, match="NaN reward at step 1"):
        env.act(0)
