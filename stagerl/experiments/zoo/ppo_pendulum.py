"""PPO on Pendulum-v1 with RL-Zoo's settings (a plain Gaussian policy): -250 within 200k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms.on_policy import PPOConfig
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env
from stagerl.experiments.zoo.ppo_cartpole import make_agent


@dataclass
class Config(GymRunSettings, PPOConfig):
    """RL-Zoo's tuned PPO Pendulum-v1, with a state-independent diagonal Gaussian policy in
    place of its generalised state-dependent exploration (gSDE)."""

    steps: int = 200_000
    env_id: str = "Pendulum-v1"
    num_envs: int = 4
    n_steps: int = 1024
    gamma: float = 0.9
    learning_rate: float = 1e-3


EXPERIMENT = NamedExperiment(Config, same_step_vector_env, make_agent)
