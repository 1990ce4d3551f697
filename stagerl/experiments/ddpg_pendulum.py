"""DDPG (TD3 with one critic, no smoothing, no delay) on Pendulum-v1 with RL-Zoo's settings."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.td3_pendulum import Config as TD3PendulumConfig
from stagerl.experiments.td3_pendulum import make_agent, make_env


@dataclass
class Config(TD3PendulumConfig):
    """RL-Zoo's DDPG hyper-parameters for Pendulum-v1: TD3's (10k random steps, noise 0.1, a
    400-300 MLP, gamma 0.98) with SB3's DDPG settings: one critic, the actor stepped with every
    critic step, no target policy smoothing."""

    policy_delay: int = 1
    target_policy_noise: float = 0.0
    target_noise_clip: float = 0.0
    n_critics: int = 1


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
