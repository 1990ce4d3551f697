"""DDPG (TD3 with one critic, no smoothing, no delay) on Pendulum-v1 with RL-Zoo's settings."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import gym_env
from stagerl.experiments.zoo import td3_pendulum


@dataclass
class Config(td3_pendulum.Config):
    """RL-Zoo's DDPG hyper-parameters for Pendulum-v1: TD3's (10k random steps, noise 0.1, a
    400-300 MLP, gamma 0.98) with SB3's DDPG settings: one critic, the actor stepped with every
    critic step, no target policy smoothing."""

    policy_delay: int = 1
    target_policy_noise: float = 0.0
    target_noise_clip: float = 0.0
    n_critics: int = 1


EXPERIMENT = NamedExperiment(Config, gym_env, td3_pendulum.make_agent)
