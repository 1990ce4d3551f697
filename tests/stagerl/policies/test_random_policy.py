"""RandomPolicy: uniform, seeded, over the given space or the env's."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.spaces import Box, Dict, Discrete, MultiDiscrete

import stagerl as rl


class SpaceEnv(rl.Env):
    """An env that only has an action space (plan never steps it)."""

    def __init__(self, action_space, mask=None):
        self._action_space = action_space
        if mask is not None:
            self.legal_actions_mask = mask

    @property
    def action_space(self):
        return self._action_space


def draws(policy, env, n):
    return [rl.plan(policy, env) for _ in range(n)]


def test_discrete_actions_are_python_ints_and_uniform():
    env = SpaceEnv(Discrete(4))
    actions = draws(rl.RandomPolicy(rng=0), env, 4000)
    assert all(type(a) is int for a in actions)
    counts = np.bincount(actions, minlength=4)
    assert counts.min() > 900 and counts.max() < 1100


def test_same_seed_same_actions_and_other_seed_other_actions():
    env = SpaceEnv(Discrete(3))
    a = draws(rl.RandomPolicy(rng=5), env, 300)
    assert a == draws(rl.RandomPolicy(rng=5), env, 300)
    assert a != draws(rl.RandomPolicy(rng=6), env, 300)


def test_actions_are_those_of_one_integers_call_each():
    rng = np.random.default_rng(11)
    expected = [int(rng.integers(5)) + 2 for _ in range(300)]
    assert draws(rl.RandomPolicy(rng=11), SpaceEnv(Discrete(5, start=2)), 300) == expected


def test_a_generator_is_used_as_is():
    rng = np.random.default_rng(0)
    policy = rl.RandomPolicy(rng=rng)
    assert policy.rng is rng


def test_explicit_space_overrides_the_envs():
    policy = rl.RandomPolicy(Discrete(3, start=10), rng=0)
    env = rl.RandomWalk1D()
    assert set(draws(policy, env, 200)) == {10, 11, 12}


def test_follows_the_env_it_is_given():
    policy = rl.RandomPolicy(rng=0)
    assert set(draws(policy, SpaceEnv(Discrete(2)), 100)) == {0, 1}
    assert set(draws(policy, SpaceEnv(Discrete(3, start=5)), 100)) == {5, 6, 7}


def test_bounded_box():
    space = Box(np.array([-2, 0], np.float32), np.array([2, 0.5], np.float32), dtype=np.float32)
    env = SpaceEnv(space)
    actions = draws(rl.RandomPolicy(rng=0), env, 500)
    assert all(a.dtype == np.float32 and a.shape == (2,) and space.contains(a) for a in actions)
    assert np.array(actions)[:, 0].min() < -1.5 and np.array(actions)[:, 0].max() > 1.5
    again = draws(rl.RandomPolicy(rng=0), env, 500)
    np.testing.assert_array_equal(np.array(actions), np.array(again))


@pytest.mark.parametrize(
    "space",
    [
        Box(-np.inf, np.inf, (3,)),
        Box(0, 5, (2,), dtype=np.int64),
        MultiDiscrete([2, 3]),
        Dict({"a": Discrete(2), "b": Box(0, 1, (1,))}),
    ],
)
def test_other_spaces_sample_from_a_seeded_copy(space):
    env = SpaceEnv(space)
    actions = draws(rl.RandomPolicy(rng=1), env, 20)
    assert all(space.contains(a) for a in actions)
    again = draws(rl.RandomPolicy(rng=1), env, 20)
    assert [str(a) for a in actions] == [str(a) for a in again]


def test_legal_actions_mask():
    env = SpaceEnv(Discrete(4), mask=np.array([False, True, False, True]))
    assert set(draws(rl.RandomPolicy(rng=0), env, 200)) == {1, 3}
    with pytest.raises(ValueError, match="allows no action"):
        rl.plan(rl.RandomPolicy(rng=0), SpaceEnv(Discrete(2), mask=np.zeros(2, bool)))


def test_bad_input():
    with pytest.raises(TypeError, match="gymnasium.spaces.Space"):
        rl.RandomPolicy(action_space=[0, 1])
    with pytest.raises(TypeError, match="rng"):
        rl.RandomPolicy(rng="seed")
    with pytest.raises(TypeError, match="action_space"):
        rl.plan(rl.RandomPolicy(), SpaceEnv(None))


def test_runs_cartpole_reproducibly():
    def episode_lengths(seed):
        env = rl.GymEnv("CartPole-v1", seed=seed)
        hook = rl.run(
            rl.RandomPolicy(rng=seed),
            env,
            rl.StopAfterNEpisodes(3, progress=False),
            rl.StepsPerEpisode(),
        )
        return hook.steps

    assert episode_lengths(3) == episode_lengths(3)
    assert len(episode_lengths(4)) == 3


def test_plan_is_a_cached_dispatch():
    env = rl.RandomWalk1D()
    policy = rl.RandomPolicy(rng=0)
    rl.plan(policy, env)
    rl.plan(policy, env)
    assert (rl.RandomPolicy, rl.RandomWalk1D) in rl.plan._cache


def test_works_with_gymnasium_spaces_of_a_gym_env():
    env = rl.GymEnv(gymnasium.make("FrozenLake-v1"))
    assert set(draws(rl.RandomPolicy(rng=0), env, 200)) == {0, 1, 2, 3}
