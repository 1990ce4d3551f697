"""A3C (A2C with asynchronous gradients on Ray workers) on CartPole-v1: 500 with 2 workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy.a3c import A3CConfig, make_a3c_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, A3CConfig):
    """A2C's RL-Zoo CartPole-v1 settings in each worker (8 envs, 5 steps a rollout, RMSprop at
    7e-4, gamma 0.99), each rollout's gradient applied by the learner as it arrives, gradients
    more than one version stale dropped. Run it with workers (``--ray-workers 2``); in one
    process it is A2C."""

    steps: int = 500_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8


def make_agent(config: A3CConfig, env: Any, seed: int, device: Any) -> Any:
    return make_a3c_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
