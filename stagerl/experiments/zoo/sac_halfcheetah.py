"""SAC on MuJoCo's HalfCheetah with RL-Zoo's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.off_policy import SACConfig, make_sac_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, gym_env


@dataclass
class Config(GymRunSettings, SACConfig):
    """RL-Zoo's ``sac.yml`` for HalfCheetah: 10k random steps first, the rest SB3's defaults
    (a 256-256 MLP, a replay of 1M transitions, batches of 256, learning rate 3e-4, the
    entropy coefficient learned). Needs the ``mujoco`` extra."""

    steps: int = 1_000_000
    env_id: str = "HalfCheetah-v5"
    learning_starts: int = 10_000


def make_env(config: GymRunSettings, seed: int) -> Any:
    from stagerl.envs.mujoco import require_mujoco

    require_mujoco()  # its absence names the pip install
    return gym_env(config, seed)


def make_agent(config: SACConfig, env: Any, seed: int, device: Any) -> Any:
    return make_sac_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
