"""DQN on CartPole-v1 at RL-Zoo's settings: evaluation return 500 within 50k steps."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.experiments.registry import NamedExperiment


@dataclass
class Config(DQNConfig):
    """RL-Zoo's CartPole-v1 hyper-parameters (``dqn.yml``); every other ``DQNConfig`` field
    keeps Stable-Baselines3's default and can be overridden too (``double=True``...).
    ``total_timesteps`` left ``None`` follows ``steps``."""

    steps: int = 50_000
    env_id: str = "CartPole-v1"
    learning_rate: float = 2.3e-3
    batch_size: int = 64
    buffer_size: int = 100_000
    learning_starts: int = 1_000
    gamma: float = 0.99
    target_update_interval: int = 10
    train_freq: int = 256
    gradient_steps: int = 128
    exploration_fraction: float = 0.16
    exploration_final_eps: float = 0.04
    net_arch: tuple[int, ...] = (256, 256)


def make_env(config: Config, seed: int) -> rl.GymEnv:
    return rl.GymEnv(config.env_id, seed=seed)


def make_agent(config: Config, env: rl.Env, seed: int, device) -> rl.Agent:
    if config.total_timesteps is None:  # the ε schedule spans the run
        config = dataclasses.replace(config, total_timesteps=config.steps)
    return make_dqn_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
