"""SAC on Pendulum-v1 with RL-Zoo's settings: evaluation return above -200 within 20k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.off_policy import SACConfig, make_sac_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, gym_env


@dataclass
class Config(GymRunSettings, SACConfig):
    """RL-Zoo's SAC hyper-parameters for Pendulum-v1 (learning_rate 1e-3, the rest SB3's
    defaults). ``ent_coef`` and ``target_entropy`` are ``"auto"`` or a number written as text;
    ``num_envs > 1`` trains on a vector env of that many sub-envs."""

    steps: int = 20_000
    env_id: str = "Pendulum-v1"
    learning_rate: float = 1e-3


def make_agent(config: SACConfig, env: Any, seed: int, device: Any) -> Any:
    return make_sac_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, gym_env, make_agent)
