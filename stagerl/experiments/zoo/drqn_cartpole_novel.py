"""A recurrent DQN (LSTM, stored-state replay with burn-in) on CartPole-v1 without its
velocities: 300 within 100k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymnasium.vector import AutoresetMode

from stagerl.algorithms.dqn import DRQNConfig, make_drqn_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings
from stagerl.experiments.zoo import ppo_lstm_cartpole_novel as novel


@dataclass
class Config(GymRunSettings, DRQNConfig):
    """The recurrent DQN's defaults on CartPole-v1 with the cart's position and the pole's
    angle observed (``MaskObservation``), one env."""

    steps: int = 100_000
    env_id: str = "CartPole-v1"


def make_env(config: GymRunSettings, seed: int) -> Any:
    """As ``ppo-lstm-cartpole-novel``'s, with gymnasium's default autoreset for a vector env."""
    return novel.make_env(config, seed, AutoresetMode.NEXT_STEP)


def make_agent(config: DRQNConfig, env: Any, seed: int, device: Any) -> Any:
    return make_drqn_agent(env, config, seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, novel.make_eval_env)
