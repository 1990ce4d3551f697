"""Rainbow (double, dueling, n-step, prioritized, C51 DQN) on CartPole-v1: 500 within 50k steps."""

from __future__ import annotations

from dataclasses import dataclass

from stagerl.experiments._dqn import DQNExperimentConfig, make_agent, make_env
from stagerl.experiments.registry import NamedExperiment


@dataclass
class Config(DQNExperimentConfig):
    """The ``dqn-cartpole`` settings with every extension of Rainbow switched on: double DQN,
    a dueling head, 3-step returns, prioritized replay and a 51-atom return distribution over
    [0, 100] (CartPole's discounted return at gamma 0.99 stays below 100)."""

    steps: int = 50_000
    env_id: str = "CartPole-v1"
    learning_rate: float = 1e-3
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
    double: bool = True
    dueling: bool = True
    n_step: int = 3
    prioritized: bool = True
    alpha: float = 0.5
    beta0: float = 0.4
    distributional: bool = True
    n_atoms: int = 51
    v_min: float = 0.0
    v_max: float = 100.0


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
