"""PPO on Pendulum-v1 with RL-Zoo's settings (a plain Gaussian policy): -250 within 200k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.ppo import PPOConfig, make_ppo_agent
from stagerl.experiments.registry import NamedExperiment, config_from


@dataclass
class Config:
    """RL-Zoo's tuned PPO Pendulum-v1, with a state-independent diagonal Gaussian policy in
    place of its generalised state-dependent exploration (gSDE)."""

    steps: int = 200_000
    env_id: str = "Pendulum-v1"
    num_envs: int = 4
    n_steps: int = 1024
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 0.9
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    learning_rate: float = 1e-3
    clip_range: float = 0.2


def make_env(config: Config, seed: int):
    return make_vector_env(config.env_id, config.num_envs, seed)


def make_agent(config: Config, env, seed: int, device):
    return make_ppo_agent(env, config_from(PPOConfig, config, schedule_steps=config.steps),
                          seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
