"""VPG (REINFORCE with a learned baseline) on CartPole-v1: 500 within 150k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy import VPGConfig, make_vpg_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, VPGConfig):
    """Whole episodes from 8 sub-envs, one policy step (Adam) per 16 finished episodes, five
    full-batch steps of the value baseline per update, Monte-Carlo returns at gamma 0.99."""

    steps: int = 150_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    learning_rate: float = 5e-3


def make_agent(config: VPGConfig, env: Any, seed: int, device: Any) -> Any:
    return make_vpg_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
