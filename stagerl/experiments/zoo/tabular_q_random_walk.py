"""Tabular Q-learning on RandomWalk1D: the greedy policy walks right within 1,000 steps."""

from __future__ import annotations

from dataclasses import dataclass

import stagerl as rl
from stagerl.algorithms._checks import check_ints, check_numbers
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import RunSettings


@dataclass
class Config(RunSettings):
    """Online Q-learning (a SARTS trajectory of capacity 1) with ε decaying linearly from 1.0
    to ``epsilon`` over the first ``decay_fraction`` of the run."""

    steps: int = 5_000
    n_states: int = 7  # states of the walk, the two ends included (at least 3)
    gamma: float = 0.9  # the discount, in [0, 1]
    lr: float = 0.5  # the TD step size, in (0, 1]
    epsilon: float = 0.05  # ε after the decay, in [0, 1]
    decay_fraction: float = 0.5  # the share of the run over which ε falls, in [0, 1]

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "n_states", low=3)
        check_numbers(self, "gamma", "epsilon", "decay_fraction", at_least=0, at_most=1)
        check_numbers(self, "lr", above=0, at_most=1)


def make_env(config: Config, seed: int) -> rl.RandomWalk1D:
    return rl.RandomWalk1D(n=config.n_states)


def make_agent(config: Config, env: rl.Env, seed: int, device) -> rl.Agent:
    decay = max(1, int(config.steps * config.decay_fraction))
    policy = rl.QBasedPolicy(
        rl.TDLearner(rl.TabularQApproximator(config.n_states, 2), "SARS", gamma=config.gamma,
                     lr=config.lr),
        rl.EpsilonGreedyExplorer(config.epsilon, decay_steps=decay, rng=seed),
    )
    return rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=1)))


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_env, eval_max_episode_steps=100)
