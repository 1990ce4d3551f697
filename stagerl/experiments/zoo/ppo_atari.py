"""PPO on an Atari game (Breakout by default, any with env_id=) with RL-Zoo's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms.on_policy import PPOConfig
from stagerl.algorithms.on_policy.ppo import make_ppo_agent
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings


@dataclass
class Config(GymRunSettings, PPOConfig):
    """RL-Zoo's ``ppo.yml`` for Atari (its ``atari`` entry): 8 sub-envs, rollouts of 128 steps,
    4 epochs of minibatches of 256, the learning rate (2.5e-4) and the clip range (0.1) falling
    linearly to 0, an entropy bonus of 0.01, the Nature CNN shared by actor and critic over 4
    stacked 84×84 grey frames (no hidden layers after it). The env is gymnasium's Atari
    preprocessing (``stagerl.envs.atari.make_atari_env``) with each sub-env's frames stacked
    (``frame_stack=4``); the rollout stores each stack once (state and next state share
    it)."""

    steps: int = 10_000_000
    env_id: str = "BreakoutNoFrameskip-v4"
    num_envs: int = 8
    n_steps: int = 128
    n_epochs: int = 4
    batch_size: int = 256
    learning_rate: float = 2.5e-4
    learning_rate_schedule: str = "linear"
    clip_range: float = 0.1
    clip_range_schedule: str = "linear"
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    net_arch: tuple[int, ...] = ()
    frame_stack: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        from stagerl.algorithms._checks import check_ints

        check_ints(self, "frame_stack")


def make_env(config: Config, seed: int) -> Any:
    from stagerl.envs.atari import make_atari_env

    return make_atari_env(config.env_id, num_envs=config.num_envs, seed=seed, training=True,
                          vector=True, frame_stack=config.frame_stack)


def make_eval_env(config: Config, seed: int) -> Any:
    """Whole games with the game's own score (no life-loss episodes, no reward clipping)."""
    from stagerl.envs.atari import make_atari_env

    return make_atari_env(config.env_id, seed=seed, training=False,
                          frame_stack=config.frame_stack)


def make_agent(config: PPOConfig, env: Any, seed: int, device: Any) -> Any:
    return make_ppo_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
