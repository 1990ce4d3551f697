"""DQN on Acrobot-v1 at RL-Zoo's settings: evaluation return above -100 within 100k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.algorithms.dqn import DQNConfig
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, gym_env
from stagerl.experiments.zoo.dqn_cartpole_zoo import make_agent


@dataclass
class Config(GymRunSettings, DQNConfig):
    """RL-Zoo's Acrobot-v1 hyper-parameters (its ``dqn.yml``): one gradient step per env step
    (``gradient_steps=-1``: as many as the ``train_freq`` steps between updates)."""

    steps: int = 100_000
    env_id: str = "Acrobot-v1"
    learning_rate: float = 6.3e-4
    batch_size: int = 128
    buffer_size: int = 50_000
    learning_starts: int = 0
    target_update_interval: int = 250
    train_freq: int = 4
    gradient_steps: int = -1
    exploration_fraction: float = 0.12
    exploration_final_eps: float = 0.1
    net_arch: tuple[int, ...] = (256, 256)


EXPERIMENT = NamedExperiment(Config, gym_env, make_agent)
