"""Masked DQN as the second player of tic-tac-toe against a masked random first player."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import RunSettings
from stagerl.multi_agent import MultiAgentPolicy, TicTacToe, Versus, view_of

#: The player DQN plays, and the one masked random plays.
LEARNER, OPPONENT = "player_2", "player_1"


@dataclass
class Config(RunSettings, DQNConfig):
    """DQN with legal-action masks (acting and the TD target's max) and 3-step returns. Env
    steps are moves of either player: the learner makes about half of them, and its
    ε schedule, target updates and ``train_freq`` count its own moves. Evaluated greedily against
    another masked random first player: the mean reward per game (+1 win, 0 draw, -1 loss);
    random play scores about -0.3 there."""

    steps: int = 50_000
    learning_rate: float = 1e-3
    batch_size: int = 64
    buffer_size: int = 20_000
    learning_starts: int = 1_000
    gamma: float = 0.9
    target_update_interval: int = 500
    train_freq: int = 4
    exploration_fraction: float = 0.3
    n_step: int = 3
    net_arch: tuple[int, ...] = (128, 128)


def opponent_rng(seed: int, stream: int) -> np.random.Generator:
    """The masked random player's generator: its own stream of the run's seed (``stream`` 1 in
    training, 2 in evaluation), apart from the learner's."""
    return np.random.default_rng([seed, stream])


def make_env(config: Config, seed: int) -> TicTacToe:
    return TicTacToe().score(LEARNER)  # logged returns are the learner's


def make_agent(config: Config, env: Any, seed: int, device: Any) -> MultiAgentPolicy:
    learner = make_dqn_agent(view_of(env, LEARNER), config, seed=seed, device=device)
    return MultiAgentPolicy({OPPONENT: rl.RandomPolicy(rng=opponent_rng(seed, 1)),
                             LEARNER: learner})


def make_eval_env(config: Config, seed: int) -> Versus:
    return Versus(TicTacToe(), {OPPONENT: rl.RandomPolicy(rng=opponent_rng(seed, 2))},
                  seats=LEARNER)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
