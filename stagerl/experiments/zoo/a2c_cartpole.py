"""A2C on CartPole-v1 with RL-Zoo's settings (8 envs, SB3 defaults): 500 within 500k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy import A2CConfig, make_a2c_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, A2CConfig):
    """RL-Zoo's A2C CartPole-v1: 8 envs, ent_coef 0, otherwise Stable-Baselines3's defaults
    (5 steps a rollout, RMSprop at 7e-4, gamma 0.99, no GAE smoothing)."""

    steps: int = 500_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8


def make_agent(config: A2CConfig, env: Any, seed: int, device: Any) -> Any:
    return make_a2c_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
