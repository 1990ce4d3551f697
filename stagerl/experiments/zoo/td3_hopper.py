"""TD3 on MuJoCo's Hopper with RL-Zoo's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.off_policy import TD3Config, make_td3_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, gym_env


@dataclass
class Config(GymRunSettings, TD3Config):
    """RL-Zoo's ``td3.yml`` for Hopper: 10k random steps first, Gaussian exploration noise of
    0.1, a 400-300 MLP, learning rate 3e-4, batches of 256, the rest SB3's defaults. Needs the
    ``mujoco`` extra."""

    steps: int = 1_000_000
    env_id: str = "Hopper-v5"
    learning_rate: float = 3e-4
    learning_starts: int = 10_000


def make_env(config: GymRunSettings, seed: int) -> Any:
    from stagerl.envs.mujoco import require_mujoco

    require_mujoco()  # its absence names the pip install
    return gym_env(config, seed)


def make_agent(config: TD3Config, env: Any, seed: int, device: Any) -> Any:
    return make_td3_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
