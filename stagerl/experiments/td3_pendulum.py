"""TD3 on Pendulum-v1 with RL-Zoo's settings: evaluation return above -200 within 20k steps."""

from __future__ import annotations

from dataclasses import dataclass

import torch

import stagerl as rl
from stagerl.algorithms.td3 import TD3Config, make_td3_agent
from stagerl.experiments.registry import NamedExperiment


@dataclass
class Config:
    """RL-Zoo's TD3 hyper-parameters for Pendulum-v1 (10k random steps first, Gaussian
    exploration noise of 0.1, a 400-300 MLP; the rest SB3's defaults). ``num_envs > 1`` trains
    on a vector env of that many sub-envs. ``torch_threads``: torch's CPU
    threads, 1 by default: measured here, two threads made a 256-256 SAC update 1.5x faster
    on an idle 2-core machine and over ten times slower on a busy one; 0 leaves torch's
    setting alone."""

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
    return TD3Config(
        learning_rate=config.learning_rate, buffer_size=config.buffer_size,
        learning_starts=config.learning_starts, batch_size=config.batch_size, tau=config.tau,
        gamma=config.gamma, train_freq=config.train_freq, gradient_steps=config.gradient_steps,
        policy_delay=config.policy_delay, target_policy_noise=config.target_policy_noise,
        target_noise_clip=config.target_noise_clip, action_noise=config.action_noise,
        net_arch=config.net_arch, n_critics=config.n_critics)


def make_agent(config: Config, env: rl.Env, seed: int, device) -> rl.Agent:
    if config.torch_threads > 0 and torch.device(device).type == "cpu":
        torch.set_num_threads(config.torch_threads)
    return make_td3_agent(env, td3_config(config), seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
