"""Masked DQN playing both sides of tic-tac-toe (self-play), evaluated against masked random."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import stagerl as rl
from stagerl.algorithms.dqn import make_dqn_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.zoo import dqn_tictactoe
from stagerl.multi_agent import MultiAgentPolicy, TicTacToe, Versus, view_of

PLAYERS = TicTacToe.players


@dataclass
class Config(dqn_tictactoe.Config):
    """One DQN agent, its parameters shared by both players, its replay split into one lane per
    player (no sample chains one player's move onto the other's). Env steps are moves: the
    agent makes every one. Evaluated greedily against masked random in each seat in turn (half
    the games first to move, half second): the mean reward per game over both seats."""

    steps: int = 200_000
    buffer_size: int = 50_000
    exploration_fraction: float = 0.2


def make_env(config: Config, seed: int) -> TicTacToe:
    return TicTacToe().score("player_1")  # logged returns: the first mover's, against itself


def make_agent(config: Config, env: Any, seed: int, device: Any) -> MultiAgentPolicy:
    shared = make_dqn_agent(view_of(env, PLAYERS[0]), config, seed=seed, device=device)
    return MultiAgentPolicy({"shared": shared}, dict.fromkeys(PLAYERS, "shared"))


def make_eval_env(config: Config, seed: int) -> Versus:
    opponent = rl.RandomPolicy(rng=dqn_tictactoe.opponent_rng(seed, 2))
    return Versus(TicTacToe(), dict.fromkeys(PLAYERS, opponent), seats=PLAYERS)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
