"""TD3 on Pendulum-v1 with RL-Zoo's settings: evaluation return above -200 within 20k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.off_policy import TD3Config, make_td3_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, gym_env


@dataclass
class Config(GymRunSettings, TD3Config):
    """RL-Zoo's TD3 hyper-parameters for Pendulum-v1 (10k random steps first, Gaussian
    exploration noise of 0.1, a 400-300 MLP, gamma 0.98; the rest SB3's defaults).
    ``num_envs > 1`` trains on a vector env of that many sub-envs."""

    steps: int = 20_000
    env_id: str = "Pendulum-v1"
    buffer_size: int = 200_000
    learning_starts: int = 10_000
    gamma: float = 0.98


def make_agent(config: TD3Config, env: Any, seed: int, device: Any) -> Any:
    return make_td3_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, gym_env, make_agent)
