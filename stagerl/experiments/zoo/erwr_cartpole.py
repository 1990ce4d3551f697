"""ERWR (episodic reward-weighted regression, rllab's) on CartPole-v1: 500 within 500k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy.erwr import ERWRConfig, make_erwr_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, ERWRConfig):
    """Whole episodes from 8 sub-envs, one update per 32 finished episodes: returns against
    rllab's linear feature baseline, centred and shifted to positive weights, then 20 L-BFGS
    iterations of weighted maximum likelihood (rllab's defaults otherwise)."""

    steps: int = 500_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    episodes_per_update: int = 32


def make_agent(config: ERWRConfig, env: Any, seed: int, device: Any) -> Any:
    return make_erwr_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
