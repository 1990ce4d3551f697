"""The gymnasium wrappers of stagerl's Atari envs, beside gymnasium's ``AtariPreprocessing``.

The stack a training env is built of, innermost first (:func:`wrap_atari` builds it; SB3's
``AtariWrapper`` uses the same steps in the same order):

1. the ALE env itself, without frame skipping (``frameskip=1``);
2. :class:`GameScore`: the true game's score and end, on every step's ``info``;
3. gymnasium's ``AtariPreprocessing``: up to 30 random no-ops at a game's start, 4 frames per
   step with the last two max-pooled, 84×84 grey ``uint8`` frames;
4. training only, :class:`LifeLossEndsEpisode`: a lost life terminates the episode, the next
   reset goes on with the same game;
5. games that need FIRE to start, :class:`FireOnReset`; in evaluation,
   :class:`FireAfterLifeLoss` as well (a lost life is no reset there, so the game is restarted
   the way training's reset after a lost life restarts it);
6. training only, :class:`ClipRewardToSign`; evaluation only, :class:`RewardIsGameScore` (the
   rewards of the frames a reset plays, no-ops and FIRE, are added to the next step's, so an
   evaluation episode's rewards sum to the game's score exactly).

Rewards and episode ends above step 2 are what the agent learns from; ``info["game_return"]``
(the unclipped score of the running game, every frame's reward included) and
``info["game_over"]`` (the ALE's game over or frame limit) are the game as a person plays it.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium
import numpy as np

__all__ = ["GameScore", "LifeLossEndsEpisode", "FireOnReset", "FireAfterLifeLoss",
           "ClipRewardToSign", "RewardIsGameScore", "atari_game", "needs_fire", "wrap_atari"]

NOOP, FIRE = 0, 1
_ID = re.compile(r"^(?:ALE/(?P<v5>[A-Za-z0-9]+)-v5|(?P<v4>[A-Za-z0-9]+?)NoFrameskip-v4)$")


def _lives(env: gymnasium.Env) -> int:
    return int(env.unwrapped.ale.lives())


class GameScore(gymnasium.Wrapper):
    """Puts the true game's figures on every ``info``: ``game_return`` and ``game_over``.

    Wraps the ALE env directly, so it sees every emulator step (skipped frames, no-ops and the
    steps a reset takes): ``game_return`` is the unclipped score of the running game so far, and
    ``game_over`` is whether this step ended the game (no lives left, or the frame limit). A
    reset starts a new game (``game_return`` 0).
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.game_return = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self.game_return = 0.0
        return obs, {**info, "game_return": 0.0, "game_over": False}

    def step(self, action: Any) -> tuple:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_return += float(reward)
        info = {**info, "game_return": self.game_return, "game_over": bool(terminated or truncated)}
        return obs, reward, terminated, truncated, info


class LifeLossEndsEpisode(gymnasium.Wrapper):
    """Training only: a lost life terminates the episode; the reset after it goes on with the
    same game (one NOOP step) unless the game is over, as SB3's ``EpisodicLifeEnv``."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any) -> tuple:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = bool(terminated or truncated)
        lives = _lives(self.env)
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(NOOP)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = _lives(self.env)
        return obs, info


class FireOnReset(gymnasium.Wrapper):
    """For games that wait for FIRE: every reset presses FIRE, then action 2, as SB3's
    ``FireResetEnv`` (a step that ends the episode there resets again)."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        for action in (FIRE, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class FireAfterLifeLoss(gymnasium.Wrapper):
    """Evaluation of games that wait for FIRE: the step that loses a life goes on with NOOP,
    FIRE and action 2, the steps training's reset takes after a lost life; their rewards are
    added to the step's. Without it a policy trained with life-loss resets may never press FIRE
    and the game stalls until its frame limit."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.lives = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self.lives = _lives(self.env)
        return obs, info

    def step(self, action: Any) -> tuple:
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = _lives(self.env)
        if 0 < lives < self.lives and not (terminated or truncated):
            for restart in (NOOP, FIRE, 2):
                obs, more, terminated, truncated, info = self.env.step(restart)
                reward += more
                if terminated or truncated:
                    break
            lives = _lives(self.env)
        self.lives = lives
        return obs, reward, terminated, truncated, info


class ClipRewardToSign(gymnasium.RewardWrapper):
    """Training only: each reward becomes its sign (-1.0, 0.0 or 1.0)."""

    def reward(self, reward: Any) -> float:
        return float(np.sign(reward))


class RewardIsGameScore(gymnasium.Wrapper):
    """Evaluation: each step's reward is what the game's score gained since the last step or
    the game's start, so the frames a reset plays (no-ops, FIRE) count too and an episode's rewards
    sum to ``info["game_return"]``. Every reset starts a game (no life-loss resets here)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.score = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self.score = 0.0  # what the reset's frames scored comes with the first step
        return obs, info

    def step(self, action: Any) -> tuple:
        obs, _, terminated, truncated, info = self.env.step(action)
        reward, self.score = info["game_return"] - self.score, info["game_return"]
        return obs, reward, terminated, truncated, info


def atari_game(env_id: Any) -> tuple[str, float]:
    """The game's name and the id's sticky-action probability: ``ALE/Pong-v5`` (0.25, as the
    ALE recommends) or ``PongNoFrameskip-v4`` (0.0, as RL-Zoo and SB3 train)."""
    match = _ID.match(env_id) if isinstance(env_id, str) else None
    if match is None:
        raise ValueError(
            f"make_atari_env needs an Atari id such as 'PongNoFrameskip-v4' (RL-Zoo's settings) "
            f"or 'ALE/Pong-v5' (sticky actions), got env_id={env_id!r}")
    if match["v5"]:
        return match["v5"], 0.25
    return match["v4"], 0.0


def needs_fire(env: gymnasium.Env) -> bool:
    """Whether the game waits for FIRE to start (SB3's test: FIRE among its actions)."""
    return "FIRE" in env.unwrapped.get_action_meanings()


def wrap_atari(env: gymnasium.Env, training: bool = True, noop_max: int = 30,
               frame_skip: int = 4, screen_size: int = 84) -> gymnasium.Env:
    """The Atari preprocessing stack around an ALE env made with ``frameskip=1``.

    Args:
        env: the ALE env (``gymnasium.make("ALE/Pong-v5", frameskip=1)`` or a NoFrameskip id).
        training: life loss ends an episode and rewards are clipped to their sign; without,
            episodes are games and rewards the game's.
        noop_max: the most random no-ops at a game's start.
        frame_skip: emulator frames per step (the last two max-pooled).
        screen_size: the side of the square grey frame.
    """
    from gymnasium.wrappers import AtariPreprocessing

    env = AtariPreprocessing(GameScore(env), noop_max=noop_max, frame_skip=frame_skip,
                             screen_size=screen_size, terminal_on_life_loss=False,
                             grayscale_obs=True, scale_obs=False)
    if training:
        env = LifeLossEndsEpisode(env)
    if needs_fire(env):
        env = FireOnReset(env)
        if not training:
            env = FireAfterLifeLoss(env)
    return ClipRewardToSign(env) if training else RewardIsGameScore(env)
