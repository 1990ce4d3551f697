"""What the DQN experiments share: their env, their agent, and torch's thread count."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.experiments.registry import use_torch_threads


@dataclass
class DQNExperimentConfig(DQNConfig):
    """``DQNConfig`` plus what a run needs: its length, the env, and torch's CPU threads.

    ``total_timesteps`` left ``None`` follows ``steps`` (the ε schedule spans the run).
    ``torch_threads``: small networks learn fastest on one thread, and on a busy 2-core
    machine two threads can be ten times slower (measured: 4.5 s against 58 s for the same
    10k-step CartPole run); 0 leaves torch's setting alone.
    """

    steps: int = 50_000
    env_id: str = "CartPole-v1"
    torch_threads: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        threads = self.torch_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"torch_threads must be an int >= 0 (0: torch's own setting), "
                             f"got torch_threads={threads!r}")


def make_env(config: DQNExperimentConfig, seed: int) -> rl.GymEnv:
    return rl.GymEnv(config.env_id, seed=seed)


def make_agent(config: DQNExperimentConfig, env: Any, seed: int, device: Any) -> rl.Agent:
    use_torch_threads(config.torch_threads, device)
    if config.total_timesteps is None:
        config = dataclasses.replace(config, total_timesteps=config.steps)
    return make_dqn_agent(env, config, seed=seed, device=device)
