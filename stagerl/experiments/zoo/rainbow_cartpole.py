"""Rainbow (double, dueling, n-step, prioritized, C51 DQN) on CartPole-v1: 500 within 50k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import gym_env
from stagerl.experiments.zoo import dqn_cartpole_zoo


@dataclass
class Config(dqn_cartpole_zoo.Config):
    """RL-Zoo's DQN settings (``dqn-cartpole-zoo``, at a learning rate of 1e-3) with every
    extension of Rainbow switched on: double DQN, a dueling head, 3-step returns, prioritized
    replay and a 51-atom return distribution over [0, 100] (CartPole's discounted return at
    gamma 0.99 stays below 100)."""

    learning_rate: float = 1e-3
    double: bool = True
    dueling: bool = True
    n_step: int = 3
    prioritized: bool = True
    alpha: float = 0.5
    distributional: bool = True
    v_min: float = 0.0
    v_max: float = 100.0


EXPERIMENT = NamedExperiment(Config, gym_env, dqn_cartpole_zoo.make_agent)
