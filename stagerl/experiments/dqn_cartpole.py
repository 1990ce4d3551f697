"""DQN on CartPole-v1 at RL-Zoo's settings: evaluation return 500 within 50k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.experiments._dqn import DQNExperimentConfig, make_agent, make_env
from stagerl.experiments.registry import NamedExperiment


@dataclass
class Config(DQNExperimentConfig):
    """RL-Zoo's CartPole-v1 hyper-parameters (its ``dqn.yml``). Every other ``DQNConfig``
    field keeps Stable-Baselines3's default and can be overridden (``double=True``, ...)."""

    steps: int = 50_000
    env_id: str = "CartPole-v1"
    learning_rate: float = 2.3e-3
    batch_size: int = 64
    buffer_size: int = 100_000
    learning_starts: int = 1_000
    gamma: float = 0.99
    target_update_interval: int = 10
    train_freq: int = 256
    gradient_steps: int = 128
    exploration_fraction: float = 0.16
    exploration_final_eps: float = 0.04
    net_arch: tuple[int, ...] = (256, 256)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
