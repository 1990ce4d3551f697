"""Tabular Q-learning: RandomWalk1D and FrozenLake-v1 (deterministic), in RL.jl's style.

The agent is ``QBasedPolicy(TDLearner(TabularQApproximator), EpsilonGreedyExplorer)`` with a
SARTS trajectory of capacity 1 and the default ``DummySampler`` and
``InsertSampleRatioController``: after every step the learner sees that one new transition
(online Q-learning), and never the padding row an episode boundary leaves.

Usage:
    python examples/tabular_q_random_walk.py [STEPS] [--random-walk-steps N]
                                            [--frozen-lake-steps N] [--seed S]

``STEPS`` is the training budget of each environment; ε decays linearly over its first half.
Exits with 0 when both are solved: on RandomWalk1D the greedy policy goes right from every state
(greedy return 1.0); on FrozenLake the greedy policy reaches the goal (greedy return 1.0).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

import stagerl as rl

DEFAULT_STEPS = 5_000


@dataclass
class Result:
    name: str
    steps: int
    episodes: int
    seconds: float
    greedy_return: float
    solved: bool
    detail: str = ""

    def __str__(self) -> str:
        verdict = "solved" if self.solved else "NOT solved"
        return (
            f"{self.name}: {self.steps} steps, {self.episodes} episodes, {self.seconds:.2f} s; "
            f"greedy return {self.greedy_return:g}{self.detail} -> {verdict}"
        )


def make_agent(n_states: int, n_actions: int, *, steps: int, gamma: float, lr: float,
               seed: int) -> rl.Agent:
    """A Q-learning agent whose ε decays from 1.0 to 0.05 over the first half of ``steps``."""
    policy = rl.QBasedPolicy(
        rl.TDLearner(rl.TabularQApproximator(n_states, n_actions), "SARS", gamma=gamma, lr=lr),
        rl.EpsilonGreedyExplorer(0.05, decay_steps=max(1, steps // 2), rng=seed),
    )
    trajectory = rl.Trajectory(
        rl.CircularArraySARTSTraces(capacity=1), rl.DummySampler(), rl.InsertSampleRatioController()
    )
    return rl.Agent(policy, trajectory)


def train(agent: rl.Agent, env: rl.Env, steps: int) -> tuple[int, float]:
    """Runs ``steps`` steps; returns the number of episodes finished and the seconds taken."""
    start = time.perf_counter()
    hook = rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False), rl.StepsPerEpisode())
    return len(hook.steps), time.perf_counter() - start


def greedy_return(agent: rl.Agent, env: rl.Env, max_steps: int = 100) -> float:
    """The return of one greedy episode (cut after ``max_steps`` steps, should it loop)."""
    return rl.evaluate(agent, env, episodes=1, max_episode_steps=max_steps)[0]


def random_walk(steps: int, seed: int = 0) -> Result:
    env = rl.RandomWalk1D()
    agent = make_agent(7, 2, steps=steps, gamma=0.9, lr=0.5, seed=seed)
    episodes, seconds = train(agent, env, steps)
    q_table = agent.policy.learner.approximator.table
    always_right = bool((np.argmax(q_table[1:-1], axis=1) == 1).all())
    g = greedy_return(agent, rl.RandomWalk1D())
    return Result("RandomWalk1D", steps, episodes, seconds, g, always_right and g == 1.0,
                  f", always right: {always_right}")


def frozen_lake(steps: int, seed: int = 0) -> Result:
    env = rl.GymEnv("FrozenLake-v1", is_slippery=False, seed=seed)
    agent = make_agent(16, 4, steps=steps, gamma=0.95, lr=0.5, seed=seed)
    episodes, seconds = train(agent, env, steps)
    g = greedy_return(agent, rl.GymEnv("FrozenLake-v1", is_slippery=False, seed=seed + 1))
    return Result("FrozenLake-v1 (is_slippery=False)", steps, episodes, seconds, g, g == 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=DEFAULT_STEPS,
                        help=f"training steps per environment (default {DEFAULT_STEPS})")
    parser.add_argument("--random-walk-steps", type=int, default=None)
    parser.add_argument("--frozen-lake-steps", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = [
        random_walk(args.random_walk_steps or args.steps, args.seed),
        frozen_lake(args.frozen_lake_steps or args.steps, args.seed),
    ]
    for result in results:
        print(result)
    return 0 if all(result.solved for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
