"""A2C on CartPole-v1 with RL-Zoo's settings (8 envs, SB3 defaults): 500 within 500k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms.a2c import A2CConfig, make_a2c_agent
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.experiments.registry import NamedExperiment, config_from


@dataclass
class Config:
    """RL-Zoo's A2C CartPole-v1: 8 envs, ent_coef 0, otherwise Stable-Baselines3's defaults
    (5 steps a rollout, RMSprop at 7e-4, gamma 0.99, no GAE smoothing)."""

    steps: int = 500_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    n_steps: int = 5
    learning_rate: float = 7e-4
    gamma: float = 0.99
    gae_lambda: float = 1.0
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5


def make_env(config: Config, seed: int):
    return make_vector_env(config.env_id, config.num_envs, seed)


def make_agent(config: Config, env, seed: int, device):
    return make_a2c_agent(env, config_from(A2CConfig, config), seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
