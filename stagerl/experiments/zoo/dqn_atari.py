"""DQN on an Atari game (Breakout by default, any with env_id=) with RL-Zoo's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings


@dataclass
class Config(GymRunSettings, DQNConfig):
    """RL-Zoo's ``dqn.yml`` for Atari (its ``atari`` entry): the Nature CNN over 4 stacked
    84×84 grey frames, a replay of 100k transitions, 100k random steps first, a target copy
    every 1,000 steps, ε falling to 0.01 over the first 10% of the run. The env is gymnasium's
    Atari preprocessing (``stagerl.envs.atari.make_atari_env``); each frame is stored once and
    the sampler stacks 4 of one episode (``stack_size``). ``env_id`` takes any
    ``<Game>NoFrameskip-v4`` or ``ALE/<Game>-v5`` id."""

    steps: int = 10_000_000
    env_id: str = "BreakoutNoFrameskip-v4"
    buffer_size: int = 100_000
    learning_rate: float = 1e-4
    batch_size: int = 32
    learning_starts: int = 100_000
    target_update_interval: int = 1_000
    train_freq: int = 4
    gradient_steps: int = 1
    exploration_fraction: float = 0.1
    exploration_final_eps: float = 0.01
    stack_size: int = 4
    net_arch: tuple[int, ...] = ()


def make_env(config: Config, seed: int) -> Any:
    from stagerl.envs.atari import make_atari_env

    return make_atari_env(config.env_id, num_envs=config.num_envs, seed=seed, training=True)


def make_eval_env(config: Config, seed: int) -> Any:
    """Whole games with the game's own score (no life-loss episodes, no reward clipping)."""
    from stagerl.envs.atari import make_atari_env

    return make_atari_env(config.env_id, seed=seed, training=False)


def make_agent(config: DQNConfig, env: Any, seed: int, device: Any) -> Any:
    return make_dqn_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
