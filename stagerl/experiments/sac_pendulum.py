"""SAC on Pendulum-v1 with RL-Zoo's settings: evaluation return above -200 within 20k steps."""

from __future__ import annotations

from dataclasses import dataclass

import stagerl as rl
from stagerl.algorithms.sac import SACConfig, make_sac_agent
from stagerl.experiments.registry import NamedExperiment, config_from, use_torch_threads


@dataclass
class Config:
    """RL-Zoo's SAC hyper-parameters for Pendulum-v1 (learning_rate 1e-3, the rest SB3's
    defaults). ``ent_coef`` and ``target_entropy`` are ``"auto"`` or a number written as text;
    ``num_envs > 1`` trains on a vector env of that many sub-envs. ``torch_threads``: torch's CPU
    threads (see ``use_torch_threads``)."""

    steps: int = 20_000
    env_id: str = "Pendulum-v1"
    num_envs: int = 1
    learning_rate: float = 1e-3
    buffer_size: int = 1_000_000
    learning_starts: int = 100
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    ent_coef: str = "auto"
    target_entropy: str = "auto"
    net_arch: tuple[int, ...] = (256, 256)
    torch_threads: int = 1


def make_env(config: Config, seed: int) -> rl.Env:
    if config.num_envs > 1:
        return rl.GymVectorEnv(config.env_id, num_envs=config.num_envs, seed=seed)
    return rl.GymEnv(config.env_id, seed=seed)


def make_agent(config: Config, env: rl.Env, seed: int, device) -> rl.Agent:
    use_torch_threads(config.torch_threads, device)
    return make_sac_agent(env, config_from(SACConfig, config), seed=seed, device=device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
