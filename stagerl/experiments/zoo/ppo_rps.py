"""PPO at rock-paper-scissors against an opponent drawn per match: the same move, or beat-last."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stagerl.algorithms._checks import check_ints
from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import RunSettings
from stagerl.multi_agent import (
    AlwaysSameMove,
    BeatLastMove,
    FlattenStates,
    MixedPerEpisode,
    MultiAgentPolicy,
    RockPaperScissors,
    Versus,
    view_of,
)

#: The player PPO plays, and the one the heuristic opponents play.
LEARNER, OPPONENT = "player_0", "player_1"


@dataclass
class Config(RunSettings, PPOConfig):
    """RLlib's rock-paper-scissors example: each match (``max_cycles`` simultaneous moves) the
    opponent is one of two heuristics drawn at random: a move drawn per match and kept, or the
    move that beats the learner's last one. The learner sees the opponent's last move (one-hot)
    and nothing older: the best such policy beats the first always and draws even with the
    second, about 7 per match of 15. Env steps are cycles (both players move in each)."""

    steps: int = 200_000
    max_cycles: int = 15  # cycles of a match (rock-paper-scissors' time limit)
    n_steps: int = 512
    batch_size: int = 128
    n_epochs: int = 4
    gamma: float = 0.9
    learning_rate: float = 1e-3
    ent_coef: float = 0.01
    net_arch: tuple[int, ...] = (32,)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "max_cycles")


def opponent(seed: int, stream: int) -> MixedPerEpisode:
    """The opponent of a match, drawn per match, on its own stream of the run's seed
    (``stream`` 1 in training, 2 in evaluation)."""
    rngs = np.random.SeedSequence([seed, stream]).spawn(3)
    return MixedPerEpisode([AlwaysSameMove(rng=np.random.default_rng(rngs[0])),
                            BeatLastMove(rng=np.random.default_rng(rngs[1]))],
                           rng=np.random.default_rng(rngs[2]))


def make_env(config: Config, seed: int) -> FlattenStates:
    return FlattenStates(RockPaperScissors(config.max_cycles)).score(LEARNER)


def make_agent(config: Config, env: Any, seed: int, device: Any) -> MultiAgentPolicy:
    learner = make_ppo_agent(view_of(env, LEARNER), config, seed=seed, device=device)
    return MultiAgentPolicy({LEARNER: learner, OPPONENT: opponent(seed, 1)})


def make_eval_env(config: Config, seed: int) -> Versus:
    return Versus(FlattenStates(RockPaperScissors(config.max_cycles)),
                  {OPPONENT: opponent(seed, 2)}, seats=LEARNER)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
