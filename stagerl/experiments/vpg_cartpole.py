"""VPG (REINFORCE with a learned baseline) on CartPole-v1: 500 within 150k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.vpg import VPGConfig, make_vpg_agent
from stagerl.experiments.registry import NamedExperiment, config_from


@dataclass
class Config:
    """Whole episodes from 8 sub-envs, one policy step (Adam) per 16 finished episodes, five
    full-batch steps of the value baseline per update, Monte-Carlo returns at gamma 0.99."""

    steps: int = 150_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    episodes_per_update: int = 16
    learning_rate: float = 5e-3
    value_learning_rate: float = 1e-2
    value_epochs: int = 5
    gamma: float = 0.99
    max_episode_steps: int = 500


def make_env(config: Config, seed: int):
    return make_vector_env(config.env_id, config.num_envs, seed)


def make_agent(config: Config, env, seed: int, device):
    return make_vpg_agent(env, config_from(VPGConfig, config), seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
