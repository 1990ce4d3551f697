"""Recurrent PPO (LSTM) on CartPole-v1 without its velocities: 450 within 50k steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymnasium.vector import AutoresetMode, SyncVectorEnv

from stagerl.algorithms.on_policy import RecurrentPPOConfig, make_recurrent_ppo_agent
from stagerl.envs.wrappers import CARTPOLE_POSITIONS, MaskedEnvMaker
from stagerl.experiments.registry import NamedExperiment
from stagerl.experiments.settings import GymRunSettings, _naming_env_id


@dataclass
class Config(GymRunSettings, RecurrentPPOConfig):
    """sb3-contrib's recurrent PPO test settings (``test_ppo_lstm_performance``): an LSTM of 64
    units for the actor and one for the critic, a 64-unit value head, observations and rewards
    normalised (its ``VecNormalize``), no orthogonal initialisation. The observations are the
    cart's position and the pole's angle only (``MaskObservation``): a memoryless policy stays
    near a return of 50."""

    steps: int = 50_000
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    n_steps: int = 128
    learning_rate: float = 7e-4
    batch_size: int = 256
    n_epochs: int = 10
    max_grad_norm: float = 1.0
    gae_lambda: float = 0.98
    rnn_hidden_size: int = 64
    critic_net_arch: tuple[int, ...] = (64,)
    ortho_init: bool = False
    normalize_states: bool = True
    normalize_rewards: bool = True
    max_seq_len: int = 128


def make_env(config: GymRunSettings, seed: int, autoreset: Any = AutoresetMode.SAME_STEP) -> Any:
    """``config.num_envs`` sub-envs of ``config.env_id`` (one: a ``GymEnv``) whose observations
    hide the velocities; a vector env resets a sub-env in the step that ends its episode."""
    from stagerl.envs.vector import GymVectorEnv

    if config.num_envs == 1:
        return make_eval_env(config, seed)
    maker = MaskedEnvMaker(config.env_id, CARTPOLE_POSITIONS)
    with _naming_env_id(config):
        envs = SyncVectorEnv([maker] * config.num_envs, autoreset_mode=autoreset)
    return GymVectorEnv(envs, seed=seed)


def make_eval_env(config: GymRunSettings, seed: int) -> Any:
    """One env of ``config.env_id`` whose observations hide the velocities."""
    from stagerl.envs.gym import GymEnv

    with _naming_env_id(config):
        return GymEnv(MaskedEnvMaker(config.env_id, CARTPOLE_POSITIONS)(), seed=seed)


def make_agent(config: RecurrentPPOConfig, env: Any, seed: int, device: Any) -> Any:
    return make_recurrent_ppo_agent(env, config, seed, device)


EXPERIMENT = NamedExperiment(Config, make_env, make_agent, make_eval_env)
