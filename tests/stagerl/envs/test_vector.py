"""GymVectorEnv: per-lane fields, autoreset modes, seeding and bad input."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from scripted_envs import ScriptedLaneEnv, scripted_env, scripted_vector_env

from stagerl.core.env import Env
from stagerl.envs.vector import GymVectorEnv


def lanes(state):
    return [tuple(row) for row in state.tolist()]


def test_reset_fields():
    env = GymVectorEnv(scripted_vector_env((1, 2, 3)))
    assert isinstance(env, Env) and env.num_envs == 3
    env.reset()
    assert lanes(env.state) == [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    assert env.episode_start.tolist() == [True] * 3
    assert env.reward.tolist() == [0.0] * 3
    assert env.is_terminated.tolist() == env.is_truncated.tolist() == [False] * 3
    assert env.final_state is env.state
    assert env.last_action is None


def test_spaces():
    env = GymVectorEnv("CartPole-v1", num_envs=4)
    assert env.single_action_space == gymnasium.spaces.Discrete(2)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([2] * 4)
    assert env.single_state_space.shape == (4,)
    assert env.state_space.shape == (4, 4)


def test_next_step_autoreset():
    env = GymVectorEnv(scripted_vector_env((1, 2), AutoresetMode.NEXT_STEP))
    env.reset()
    env.act(np.array([1, 0]))
    # lane 0 terminates after its one step
    assert lanes(env.state) == [(0, 0, 1), (1, 0, 1)]
    assert env.reward.tolist() == [1.0, 100.0]
    assert env.is_terminated.tolist() == [True, False]
    assert env.episode_start.tolist() == [False, False]
    env.act(np.array([1, 1]))
    # lane 0 was only reset: no transition, reward 0, flags cleared; lane 1 terminates
    assert lanes(env.state) == [(0, 1, 0), (1, 0, 2)]
    assert env.episode_start.tolist() == [True, False]
    assert env.reward.tolist() == [0.0, 111.0]
    assert env.is_terminated.tolist() == [False, True]
    assert env.final_state is env.state
    env.act(np.array([0, 0]))
    assert lanes(env.state) == [(0, 1, 1), (1, 1, 0)]
    assert env.episode_start.tolist() == [False, True]
    assert env.reward.tolist() == [0.0, 0.0]
    assert env.is_terminated.tolist() == [False, False]
    env.act(np.array([0, 0]))
    # lane 0's odd episode is truncated after length + 1 = 2 steps
    assert lanes(env.state) == [(0, 1, 2), (1, 1, 1)]
    assert env.is_truncated.tolist() == [True, False]
    assert env.is_terminated.tolist() == [False, False]


def test_same_step_autoreset_exposes_final_state():
    env = GymVectorEnv(scripted_vector_env((1, 2), AutoresetMode.SAME_STEP))
    assert env.autoreset_mode == AutoresetMode.SAME_STEP
    env.reset()
    env.act(np.array([1, 0]))
    assert lanes(env.state) == [(0, 1, 0), (1, 0, 1)]  # lane 0 already restarted
    assert lanes(env.final_state) == [(0, 0, 1), (1, 0, 1)]
    assert env.reward.tolist() == [1.0, 100.0]
    assert env.is_terminated.tolist() == [True, False]
    assert env.episode_start.tolist() == [True, False]
    env.act(np.array([0, 1]))
    assert lanes(env.state) == [(0, 1, 1), (1, 1, 0)]
    assert lanes(env.final_state) == [(0, 1, 1), (1, 0, 2)]
    assert env.reward.tolist() == [0.0, 111.0]
    assert env.episode_start.tolist() == [False, True]
    env.act(np.array([0, 0]))
    assert env.is_truncated.tolist() == [True, False]
    assert lanes(env.final_state)[0] == (0, 1, 2) and lanes(env.state)[0] == (0, 2, 0)


def test_reset_starts_over():
    env = GymVectorEnv(scripted_vector_env((1, 2)))
    env.reset()
    env.act([1, 1])
    env.reset()
    assert env.episode_start.all() and not env.is_terminated.any()
    env.act([1, 1])
    assert env.episode_start.tolist() == [False, False]  # the earlier end is forgotten


def test_state_is_a_copy_for_copy_false_envs():
    fns = [lambda: scripted_env(0, 3), lambda: scripted_env(1, 3)]
    env = GymVectorEnv(SyncVectorEnv(fns, copy=False))
    env.reset()
    first = env.state
    env.act([0, 0])
    assert lanes(first) == [(0, 0, 0), (1, 0, 0)]
    second = env.state
    env.act([0, 0])
    assert lanes(second) == [(0, 0, 1), (1, 0, 1)]


def test_states_of_a_copying_env_stay_as_they_were():
    env = GymVectorEnv(scripted_vector_env((3, 3)))  # copy=True: gymnasium copies already
    env.reset()
    env.act([0, 0])
    first = env.state
    env.act([0, 0])
    assert lanes(first) == [(0, 0, 1), (1, 0, 1)] and first is not env.state


def test_seeding_per_sub_env():
    env = GymVectorEnv("CartPole-v1", num_envs=3, seed=7)
    env.reset()
    for i in range(3):
        single = gymnasium.make("CartPole-v1")
        np.testing.assert_array_equal(env.state[i], single.reset(seed=7 + i)[0])
    other = GymVectorEnv("CartPole-v1", num_envs=3, seed=7)
    other.reset()
    assert env.action_space.sample().tolist() == other.action_space.sample().tolist()
    first = env.state
    env.reset()  # later resets are not seeded again
    assert not np.array_equal(first, env.state)


def test_async_vector_env():
    env = GymVectorEnv(scripted_vector_env((1, 2), vectorization_mode="async"))
    try:
        env.reset()
        env.act(np.array([1, 1]))
        env.act(np.array([1, 1]))
        assert lanes(env.state) == [(0, 1, 0), (1, 0, 2)]
        assert env.episode_start.tolist() == [True, False]
        assert env.reward.tolist() == [0.0, 111.0]
    finally:
        env.close()


def test_make_vec_from_id_async():
    with GymVectorEnv("CartPole-v1", num_envs=2, seed=0, vectorization_mode="async") as env:
        env.reset()
        env.act(env.action_space.sample())
        assert env.state.shape == (2, 4)


def test_disabled_autoreset_is_refused():
    envs = scripted_vector_env((1, 2), AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match="NEXT_STEP and SAME_STEP"):
        GymVectorEnv(envs)


def test_unknown_autoreset_mode_is_refused():
    envs = scripted_vector_env((1, 2))
    envs.metadata["autoreset_mode"] = "sometimes"
    with pytest.raises(ValueError, match="'sometimes'"):
        GymVectorEnv(envs)


def test_missing_autoreset_tag_means_next_step():
    envs = scripted_vector_env((1, 2))
    del envs.metadata["autoreset_mode"]
    assert GymVectorEnv(envs).autoreset_mode == AutoresetMode.NEXT_STEP


def test_single_env_is_refused():
    with pytest.raises(TypeError, match="GymEnv"):
        GymVectorEnv(gymnasium.make("CartPole-v1"))
    with pytest.raises(TypeError, match="GymEnv"):
        GymVectorEnv(ScriptedLaneEnv())
    with pytest.raises(TypeError, match="VectorEnv"):
        GymVectorEnv(42)


@pytest.mark.parametrize("num_envs", [0, -2])
def test_non_positive_num_envs(num_envs):
    with pytest.raises(ValueError, match=f"num_envs={num_envs}"):
        GymVectorEnv("CartPole-v1", num_envs=num_envs)


def test_num_envs_mismatch_and_bad_types():
    with pytest.raises(ValueError, match="num_envs=3"):
        GymVectorEnv(scripted_vector_env((1, 2)), num_envs=3)
    with pytest.raises(TypeError, match="num_envs"):
        GymVectorEnv("CartPole-v1", num_envs=2.0)
    with pytest.raises(TypeError, match="seed"):
        GymVectorEnv("CartPole-v1", num_envs=2, seed="0")
    with pytest.raises(TypeError, match="only used to make one from an id"):
        GymVectorEnv(scripted_vector_env((1, 2)), max_episode_steps=3)


def test_non_array_observations_are_refused():
    class TextObs(ScriptedLaneEnv):  # a Dict of arrays is read leaf by leaf; text is not
        def __init__(self):
            super().__init__()
            self.observation_space = gymnasium.spaces.Dict(
                {"x": self.observation_space, "name": gymnasium.spaces.Text(5)})

    with pytest.raises(TypeError, match=r"needs array observations .* got Dict\('name': Text"
                                        r".*; flatten them with gymnasium.wrappers.vector."
                                        r"FlattenObservation"):
        GymVectorEnv(SyncVectorEnv([TextObs, TextObs]))


def test_dict_observations_come_as_a_dict_of_batches_the_next_step_cannot_touch():
    class DictObs(ScriptedLaneEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gymnasium.spaces.Dict({"x": self.observation_space})

        def reset(self, **kwargs):
            obs, info = super().reset(**kwargs)
            return {"x": obs}, info

        def step(self, action):
            obs, *rest = super().step(action)
            return ({"x": obs}, *rest)

    env = GymVectorEnv(SyncVectorEnv([DictObs, DictObs]))
    env.reset()
    first = env.state
    env.act(np.array([1, 1]))
    assert set(first) == {"x"} and lanes(first["x"]) == [(0, 0, 0), (0, 0, 0)]  # unchanged
    assert lanes(env.state["x"]) == [(0, 0, 1), (0, 0, 1)]


@pytest.mark.parametrize("action", [np.array([1, 1, 1]), [1], 1, np.int64(0), np.array(1)])
def test_wrong_batch_size_raises_before_stepping(action):
    env = GymVectorEnv(scripted_vector_env((2, 2)))
    env.reset()
    with pytest.raises(ValueError, match="num_envs=2"):
        env.act(action)
    assert lanes(env.state) == [(0, 0, 0), (1, 0, 0)]
    assert env.last_action is None
    env.act([1, 1])  # the env was not stepped
    assert lanes(env.state) == [(0, 0, 1), (1, 0, 1)]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_stepped_marks_real_steps(mode):
    env = GymVectorEnv(scripted_vector_env((1, 3), mode))
    env.reset()
    assert env.stepped.tolist() == [False, False]
    env.act([0, 0])
    assert env.stepped.tolist() == [True, True]
    env.act([0, 0])  # lane 0 ended last act: NEXT_STEP only resets it now
    expected = [False, True] if mode == AutoresetMode.NEXT_STEP else [True, True]
    assert env.stepped.tolist() == expected


class _PassThrough(gymnasium.vector.VectorWrapper):
    """A vector wrapper that changes nothing: GymVectorEnv masks reset-only lanes behind it."""


@pytest.mark.parametrize("asynchronous", [False, True])
def test_gymnasiums_own_vector_envs_need_no_masking_of_reset_only_lanes(asynchronous):
    # GymVectorEnv trusts gymnasium's own vector envs to report reward 0 and no flags in a lane
    # that a NEXT_STEP act only resets; behind a wrapper it masks them itself. Both give the
    # same figures, act by act, over many episode ends (CartPole, 5-step time limits too).
    def make():
        fns = [lambda i=i: gymnasium.make("CartPole-v1", max_episode_steps=5 + i)
               for i in range(3)]
        return (gymnasium.vector.AsyncVectorEnv(fns) if asynchronous
                else gymnasium.vector.SyncVectorEnv(fns))

    trusted, masked = GymVectorEnv(make(), seed=3), GymVectorEnv(_PassThrough(make()), seed=3)
    assert not trusted._masks_reset_lanes and masked._masks_reset_lanes
    trusted.reset(), masked.reset()
    rng = np.random.default_rng(0)
    restarts = 0
    for _ in range(60):
        action = rng.integers(2, size=3)
        trusted.act(action), masked.act(action)
        restarts += int(trusted.episode_start.sum())
        for name in ("state", "reward", "is_terminated", "is_truncated", "episode_start",
                     "stepped"):
            np.testing.assert_array_equal(getattr(trusted, name), getattr(masked, name))
        start = trusted.episode_start
        assert not trusted.reward[start].any() and not trusted.is_terminated[start].any()
        assert not trusted.is_truncated[start].any()
        assert trusted.any_episode_start == masked.any_episode_start
        assert trusted.any_episode_end == masked.any_episode_end
    assert restarts > 10
    trusted.close(), masked.close()
