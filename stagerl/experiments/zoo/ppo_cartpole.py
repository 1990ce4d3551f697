"""PPO on CartPole-v1 with RL-Zoo's settings: 500 within 100k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, PPOConfig):
    """RL-Zoo's tuned PPO CartPole-v1 (``lin_`` schedules decay to 0 over the run)."""

    steps: int = 100_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    n_steps: int = 32
    batch_size: int = 256
    n_epochs: int = 20
    gamma: float = 0.98
    gae_lambda: float = 0.8
    learning_rate: float = 1e-3
    learning_rate_schedule: str = "linear"
    clip_range_schedule: str = "linear"


def make_agent(config: PPOConfig, env: Any, seed: int, device: Any) -> Any:
    return make_ppo_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
