"""make_atari_env on real ROMs (ale-py), and the errors that name the install when it is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import stagerl as rl
from stagerl.envs.atari import make_atari_env


def needs_ale():
    pytest.importorskip("ale_py", reason="Atari ROMs need ale-py: pip install 'stagerl[atari]'")
    pytest.importorskip("cv2", reason="Atari preprocessing needs opencv: "
                                      "pip install 'stagerl[atari]'")


def test_breakout_training_runs_a_few_hundred_steps_with_life_loss_episodes():
    needs_ale()
    env = make_atari_env("BreakoutNoFrameskip-v4", num_envs=2, seed=0)
    assert isinstance(env, rl.GymVectorEnv) and env.single_state_space.shape == (84, 84)
    env.reset()
    rng = np.random.default_rng(0)
    lives_lost = games = 0
    for _ in range(400):
        lives = env.info["lives"].copy()
        env.act(rng.integers(4, size=2))
        assert env.state.shape == (2, 84, 84) and env.state.dtype == np.uint8
        assert set(env.reward.tolist()) <= {-1.0, 0.0, 1.0}
        stepped = env.stepped
        lost = stepped & (env.info["lives"] < lives)
        np.testing.assert_array_equal(env.is_terminated, lost)  # each lost life, and only
        lives_lost += int(lost.sum())
        games += int(env.info["game_over"].sum())
    assert lives_lost >= 10 and games >= 1


def test_pong_evaluation_rewards_are_the_scores_and_episodes_are_games():
    needs_ale()
    env = make_atari_env("PongNoFrameskip-v4", seed=1, training=False)
    assert isinstance(env, rl.GymEnv)
    env.reset()
    total, rewards = 0.0, set()
    for _ in range(300):
        env.act(0)
        total += env.reward
        rewards.add(env.reward)
        assert not env.is_terminated  # a game of Pong lasts longer than 300 steps
    assert -1.0 in rewards and total == env.info["game_return"] < 0  # the opponent scores


def test_the_same_seed_plays_the_same_game():
    needs_ale()
    frames = []
    for _ in range(2):
        env = make_atari_env("BreakoutNoFrameskip-v4", seed=3)
        env.reset()
        for t in range(50):
            env.act(t % 4)
        frames.append(env.state)
    np.testing.assert_array_equal(*frames)


def test_an_unknown_game_names_the_id_and_where_roms_come_from():
    needs_ale()
    with pytest.raises(ValueError, match="NoSuchGame.*ale-py>=0.9 ships every ROM"):
        make_atari_env("ALE/NoSuchGame-v5")


def test_a_missing_rom_names_the_install(monkeypatch, tmp_path):
    needs_ale()
    monkeypatch.setenv("ALE_ROMS_DIR", str(tmp_path))  # a folder without the ROM
    with pytest.raises(FileNotFoundError, match=r"pip install --force-reinstall 'ale-py>=0.9'"):
        make_atari_env("PongNoFrameskip-v4")


def test_without_ale_py_the_error_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'stagerl\[atari\]'"):
        make_atari_env("PongNoFrameskip-v4")


@pytest.mark.parametrize("kwargs, match", [
    ({"env_id": "CartPole-v1"}, "Atari id"),
    ({"env_id": "Pong-v4"}, "Atari id"),
    ({"num_envs": 0}, "num_envs"),
    ({"num_envs": 2.0}, "num_envs"),
    ({"frame_skip": 0}, "frame_skip"),
    ({"noop_max": -1}, "noop_max"),
    ({"screen_size": True}, "screen_size"),
    ({"backend": "ray"}, "backend"),
])
def test_bad_arguments_are_refused_before_anything_is_made(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_atari_env(**{"env_id": "PongNoFrameskip-v4", **kwargs})
