"""TD3 on Pendulum-v1 with RL-Zoo's settings: evaluation return above -200 within 20k steps."""

from __future__ import annotations

from dataclasses import dataclass

import stagerl as rl
from stagerl.algorithms.td3 import TD3Config, make_td3_agent
from stagerl.experiments.registry import NamedExperiment, config_from, use_torch_threads


@dataclass
class Config:
    """RL-Zoo's TD3 hyper-parameters for Pendulum-v1 (10k random steps first, Gaussian
    exploration noise of 0.1, a 400-300 MLP; the rest SB3's defaults). ``num_envs > 1`` trains
    on a vector env of that many sub-envs. ``torch_threads``: torch's CPU
    threads (see ``use_torch_threads``)."""

    steps: int = 20_000
    env_id: str = "Pendulum-v1"
    num_envs: int = 1
    learning_rate: float = 1e-3
    buffer_size: int = 200_000
    learning_starts: int = 10_000
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.98
    train_freq: int = 1
    gradient_steps: int = 1
    policy_delay: int = 2
    target_policy_noise: float = 0.2
    target_noise_clip: float = 0.5
    action_noise: float = 0.1
    net_arch: tuple[int, ...] = (400, 300)
    n_critics: int = 2
    torch_threads: int = 1


def make_env(config: Config, seed: int) -> rl.Env:
    if config.num_envs > 1:
        return rl.GymVectorEnv(config.env_id, num_envs=config.num_envs, seed=seed)
    return rl.GymEnv(config.env_id, seed=seed)


def td3_config(config: Config) -> TD3Config:
    """The algorithm's settings from the experiment's (every field but steps, env_id,
    num_envs and torch_threads)."""
    return config_from(TD3Config, config)


def make_agent(config: Config, env: rl.Env, seed: int, device) -> rl.Agent:
    use_torch_threads(config.torch_threads, device)
    return make_td3_agent(env, td3_config(config), seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
