"""TRPO on CartPole-v1 with RL-Zoo's settings (sb3-contrib): 500 within 100k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy import TRPOConfig, make_trpo_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, TRPOConfig):
    """RL-Zoo's tuned TRPO CartPole-v1 (its trpo.yml): 2 envs of 512 steps a rollout, the
    critic in 20 epochs of 512-step minibatches; sb3-contrib's defaults otherwise (target KL
    0.01, 15 conjugate-gradient steps, line search of 10 halvings by 0.8).
    ``line_search=False`` makes it NPG."""

    steps: int = 100_000
    env_id: str = "CartPole-v1"
    num_envs: int = 2
    n_steps: int = 512
    batch_size: int = 512
    gae_lambda: float = 0.98
    n_critic_updates: int = 20
    cg_damping: float = 1e-3


def make_agent(config: TRPOConfig, env: Any, seed: int, device: Any) -> Any:
    return make_trpo_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
