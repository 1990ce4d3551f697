"""The Atari preprocessing stack on a scripted ALE stand-in: what training and evaluation see.

``ScriptedGame`` plays like an ALE game without ROMs: 3 lives, a life lost every
``LIFE_FRAMES`` emulator frames, rewards of +5 every 7th frame and -2 every 11th (so clipping
shows), and a record of every action it got. Only opencv (for gymnasium's resizing) is needed.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import stagerl as rl

pytest.importorskip("cv2", reason="Atari preprocessing needs opencv: pip install 'stagerl[atari]'")

from stagerl.envs.atari_wrappers import (  # noqa: E402
    ClipRewardToSign,
    FireOnReset,
    GameScore,
    wrap_atari,
)

LIFE_FRAMES = 40
FRAMES = np.arange(1, 3 * LIFE_FRAMES + 1)  # the frames of a game
GAME_SCORE = 5.0 * (FRAMES % 7 == 0).sum() - 2.0 * (FRAMES % 11 == 0).sum()


class ScriptedAle:
    def __init__(self, game):
        self.game = game

    def lives(self):
        return self.game.lives

    def getScreenGrayscale(self, out):
        out.fill(self.game.frame % 256)

    def getScreenRGB(self, out):
        out.fill(self.game.frame % 256)


class ScriptedGame(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0, 255, (210, 160, 3), np.uint8)

    def __init__(self, fire=True):
        self.meanings = ["NOOP", "FIRE", "RIGHT", "LEFT"] if fire else ["NOOP", "RIGHT", "LEFT"]
        self.action_space = gymnasium.spaces.Discrete(len(self.meanings))
        self._frameskip = 1
        self.ale = ScriptedAle(self)
        self.actions = []  # every action of the game running
        self.total = 0.0  # every frame's reward of the game running
        self.games = 0

    def get_action_meanings(self):
        return self.meanings

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.frame, self.lives, self.actions, self.total = 0, 3, [], 0.0
        self.games += 1
        return self.observation_space.sample() * 0, {"lives": self.lives}

    def step(self, action):
        self.actions.append(int(action))
        self.frame += 1
        reward = (5.0 if self.frame % 7 == 0 else 0.0) - (2.0 if self.frame % 11 == 0 else 0.0)
        self.total += reward
        if self.frame % LIFE_FRAMES == 0:
            self.lives -= 1
        obs = np.zeros((210, 160, 3), np.uint8)
        return obs, reward, self.lives == 0, False, {"lives": self.lives}


def atari(training, fire=True, noop_max=0):
    game = ScriptedGame(fire)
    return game, rl.GymEnv(wrap_atari(game, training=training, noop_max=noop_max), seed=0)


def play(env, game, acts, action=3):
    """Acts with ``action``; resets where the loop would. Per act: (reward, terminated,
    game_return, game_over, lives)."""
    env.reset()
    seen = []
    for _ in range(acts):
        env.act(action)
        seen.append((env.reward, env.is_terminated, env.info["game_return"],
                     env.info["game_over"], game.lives))
        if env.is_terminated or env.is_truncated:
            env.reset()
    return seen


def test_training_ends_an_episode_at_each_lost_life_and_goes_on_with_the_same_game():
    game, env = atari(training=True)
    seen = play(env, game, 40)
    ends = [i for i, s in enumerate(seen) if s[1]]
    assert [seen[i][4] for i in ends] == [2, 1, 0, 2, 1]
    assert [seen[i][3] for i in ends][:3] == [False, False, True]  # only the last life is the game
    assert game.games == 2  # one reset of the emulator per game, none per life


def test_evaluation_episodes_are_whole_games():
    game, env = atari(training=False)
    seen = play(env, game, 40)
    ends = [i for i, s in enumerate(seen) if s[1]]
    assert [seen[i][4] for i in ends] == [0] * len(ends) and len(ends) >= 1
    assert all(seen[i][3] for i in ends)


def test_training_rewards_are_clipped_and_the_game_return_is_unclipped():
    game, env = atari(training=True)
    # 3 lives of 40 frames: FIRE and action 2 at the start, then 8 acts of 4 frames; NOOP, FIRE
    # and action 2 after each lost life, then 7 acts: the game ends at the 22nd act
    seen = play(env, game, 22)
    assert {r for r, *_ in seen} <= {-1.0, 0.0, 1.0} and 1.0 in {r for r, *_ in seen}
    assert seen[-1][3] and seen[-1][2] == GAME_SCORE  # every frame's, resets' frames included


@pytest.mark.parametrize("noop_max", [0, 30])
def test_evaluation_rewards_are_the_games_and_sum_to_its_return(noop_max):
    game, env = atari(training=False, noop_max=noop_max)
    env.reset()
    total = 0.0
    while not env.is_terminated:
        env.act(3)
        total += env.reward
    # the reset's frames (no-ops, FIRE) scored too: their rewards come with the first step's
    assert total == env.info["game_return"] == game.total == GAME_SCORE


def test_fire_is_pressed_at_a_game_start_and_after_each_lost_life():
    # training: the reset after a lost life takes NOOP, FIRE, then action 2
    game, env = atari(training=True)
    play(env, game, 12)
    assert game.actions[:8] == [1] * 4 + [2] * 4  # 4 frames per step
    assert game.actions[8:40] == [3] * 32
    assert game.actions[40:52] == [0] * 4 + [1] * 4 + [2] * 4
    # evaluation: the step that loses the life goes on with the same three steps
    game, env = atari(training=False)
    play(env, game, 12)
    assert game.actions[:8] == [1] * 4 + [2] * 4
    assert game.actions[40:52] == [0] * 4 + [1] * 4 + [2] * 4


def test_games_without_fire_get_none():
    game, env = atari(training=True, fire=False)
    play(env, game, 12, action=2)
    assert 1 not in game.actions[:40] and game.actions[40:44] == [0] * 4
    assert not any(isinstance(w, FireOnReset) for w in _wrappers(env.env))


def test_the_noops_at_a_game_start_are_drawn_from_the_seed_and_counted_in_the_game_return():
    counts = []
    for _ in range(2):
        game, env = atari(training=False, noop_max=30)
        env.reset()
        counts.append(game.actions.index(1))  # no-ops before the first FIRE
        assert env.info["game_return"] == game.total
    assert counts[0] == counts[1] and 1 <= counts[0] <= 30


def test_frames_are_84_by_84_grey_uint8_and_not_stacked():
    game, env = atari(training=True)
    env.reset()
    env.act(3)
    assert env.state.shape == (84, 84) and env.state.dtype == np.uint8
    assert env.state_space == gymnasium.spaces.Box(0, 255, (84, 84), np.uint8)
    assert (env.state == game.frame % 256).all()  # the grey screen after the step's frames


def test_the_order_of_the_training_stack():
    game, env = atari(training=True)
    names = [type(w).__name__ for w in _wrappers(env.env)]
    assert names == ["ClipRewardToSign", "FireOnReset", "LifeLossEndsEpisode",
                     "AtariPreprocessing", "GameScore"]
    game, env = atari(training=False)
    names = [type(w).__name__ for w in _wrappers(env.env)]
    assert names == ["RewardIsGameScore", "FireAfterLifeLoss", "FireOnReset",
                     "AtariPreprocessing", "GameScore"]


def test_a_vector_env_reports_each_lanes_game_across_its_resets():
    games = []

    def make():
        games.append(ScriptedGame())
        return wrap_atari(games[-1], training=True, noop_max=0)

    env = rl.GymVectorEnv(gymnasium.vector.SyncVectorEnv([make, make]), seed=0)
    env.reset()
    over = []
    for step in range(70):
        env.act(np.array([3, 2]))
        assert env.info["game_return"].shape == (2,)
        for lane in np.flatnonzero(env.info["game_over"]):
            over.append((step, int(lane), float(env.info["game_return"][lane])))
        assert not (env.info["game_over"] & ~env.is_terminated).any()
    assert [lane for _, lane, _ in over] == [0, 1, 0, 1]
    assert {r for *_, r in over} == {GAME_SCORE}


def test_clipping_gives_the_sign():
    env = ClipRewardToSign(GameScore(ScriptedGame()))
    assert [env.reward(r) for r in (-3.5, 0.0, 0.25, 7)] == [-1.0, 0.0, 1.0, 1.0]


def _wrappers(env):
    while isinstance(env, gymnasium.Wrapper):
        yield env
        env = env.env


def test_game_scores_reports_each_game_once_with_its_unclipped_score():
    from stagerl.envs.atari import GameScores

    def make():
        return wrap_atari(ScriptedGame(), training=True, noop_max=0)

    env = rl.GymVectorEnv(gymnasium.vector.SyncVectorEnv([make, make]), seed=0)
    hook = rl.run(rl.RandomPolicy(rng=0), env, rl.StopAfterNSteps(2 * 70, progress=False),
                  GameScores())
    assert hook.scores == [GAME_SCORE] * 4 and hook.lanes == [0, 1, 0, 1]
    # a single env, reset by the loop at every lost life: the same games
    single = rl.GymEnv(make(), seed=0)
    hook = rl.run(rl.RandomPolicy(rng=0), single, rl.StopAfterNSteps(70, progress=False),
                  GameScores())
    assert hook.scores == [GAME_SCORE] * 3 and hook.lanes == [0] * 3
