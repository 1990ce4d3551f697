"""PPO on MuJoCo's Hopper with RL-Zoo's settings (observations and rewards normalised)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy import PPOConfig
from stagerl.algorithms.on_policy.ppo import make_ppo_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, same_step_vector_env


@dataclass
class Config(GymRunSettings, PPOConfig):
    """RL-Zoo's ``ppo.yml`` for Hopper: ``normalize: true`` (observations by their running mean
    and standard deviation, rewards by the running standard deviation of the discounted
    return; both statistics are saved with the policy), one env, rollouts of 512 steps, 5
    epochs of minibatches of 32, gamma 0.999, GAE lambda 0.99, its tuned learning rate,
    entropy and value weights, a ReLU 256-256 actor and critic without orthogonal
    initialisation and an initial log standard deviation of -2. Needs the ``mujoco`` extra."""

    steps: int = 1_000_000
    env_id: str = "Hopper-v5"
    normalize_states: bool = True
    normalize_rewards: bool = True
    n_steps: int = 512
    batch_size: int = 32
    gamma: float = 0.999
    learning_rate: float = 9.80828e-05
    ent_coef: float = 0.00229519
    clip_range: float = 0.2
    n_epochs: int = 5
    gae_lambda: float = 0.99
    max_grad_norm: float = 0.7
    vf_coef: float = 0.835671
    log_std_init: float = -2.0
    ortho_init: bool = False
    activation: str = "relu"
    net_arch: tuple[int, ...] = (256, 256)


def make_env(config: GymRunSettings, seed: int) -> Any:
    from stagerl.envs.mujoco import require_mujoco

    require_mujoco()  # its absence names the pip install
    return same_step_vector_env(config, seed)


def make_agent(config: PPOConfig, env: Any, seed: int, device: Any) -> Any:
    return make_ppo_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent)
