"""Tabular Q-learning on RandomWalk1D: the greedy policy walks right within 1,000 steps."""

from __future__ import annotations

from dataclasses import dataclass

import stagerl as rl
from stagerl.experiments.registry import NamedExperiment


@dataclass
class Config:
    """Online Q-learning (a SARTS trajectory of capacity 1) with ε decaying linearly from 1.0
    to ``epsilon`` over the first ``decay_fraction`` of the run."""

    steps: int = 5_000
    n_states: int = 7
    gamma: float = 0.9
    lr: float = 0.5
    epsilon: float = 0.05
    decay_fraction: float = 0.5


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
