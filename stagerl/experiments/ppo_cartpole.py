"""PPO on CartPole-v1 with RL-Zoo's settings: 500 within 100k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.ppo import PPOConfig, make_ppo_agent
from stagerl.experiments.registry import NamedExperiment, config_from


@dataclass
class Config:
    """RL-Zoo's tuned PPO CartPole-v1 (``lin_`` schedules decay to 0 over the run)."""

    steps: int = 100_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    n_steps: int = 32
    batch_size: int = 256
    n_epochs: int = 20
    gamma: float = 0.98
    gae_lambda: float = 0.8
    ent_coef: float = 0.0
    learning_rate: float = 1e-3
    learning_rate_schedule: str = "linear"
    clip_range: float = 0.2
    clip_range_schedule: str = "linear"


def make_env(config: Config, seed: int):
    return make_vector_env(config.env_id, config.num_envs, seed)


def make_agent(config: Config, env, seed: int, device):
    return make_ppo_agent(env, config_from(PPOConfig, config, schedule_steps=config.steps),
                          seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
