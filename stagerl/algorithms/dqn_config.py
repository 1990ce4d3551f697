"""DQNConfig, the hyper-parameters of the DQN family, and what the family refuses before
anything runs: bad settings and envs it cannot act in, each with the value at fault and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np

import stagerl as rl

__all__ = ["DQNConfig", "check_config", "check_spaces"]


@dataclass
class DQNConfig:
    """Hyper-parameters of the DQN family (Stable-Baselines3's names and defaults).

    Steps are env steps (transitions; a vector env takes ``num_envs`` per act).

    Attributes:
        learning_rate: Adam's step size.
        batch_size: transitions per gradient step.
        buffer_size: transitions the replay ring holds (split over a vector env's sub-envs).
        learning_starts: env steps of uniformly random actions before learning starts.
        gamma: the discount.
        target_update_interval: env steps between target-network updates.
        tau: 1.0 copies the online network into the target; less blends (Polyak averaging).
        train_freq: env steps between bursts of gradient steps.
        gradient_steps: gradient steps per burst; -1: as many as ``train_freq``.
        exploration_fraction: the share of ``total_timesteps`` over which ε falls linearly.
        exploration_initial_eps, exploration_final_eps: ε at the start and at the end.
        max_grad_norm: clip the gradient norm to this (``None``: no clipping).
        net_arch: hidden sizes of the MLP body.
        total_timesteps: the run's length in env steps, of which ``exploration_fraction`` and
            the annealing of ``beta0`` are fractions (named experiments set it to ``steps``).
        loss: ``"huber"`` (smooth L1, as SB3) or ``"mse"`` (as CleanRL).
        target_network: ``False`` bootstraps from the online network itself.
        double: the online network picks the next action, the target network rates it.
        dueling: separate value and advantage streams.
        n_step: n-step returns (cut at episode ends).
        prioritized: prioritized replay: rows drawn with probability ``~ |TD error| ** alpha``,
            losses weighted by importance weights with exponent ``beta0`` annealed to 1.
        alpha, beta0, prioritized_eps: the priority exponent, the initial importance-weight
            exponent and the constant added to every |TD error|.
        distributional: C51: a distribution over ``n_atoms`` returns in ``[v_min, v_max]``.
        stack_size: the last ``stack_size`` observations (frames) form the network's input.
        adam_eps: Adam's epsilon.

    Example:
        >>> DQNConfig(total_timesteps=10_000, double=True).gradient_steps
        1
        >>> DQNConfig(gamma=1.5)
        Traceback (most recent call last):
        ...
        ValueError: DQNConfig: gamma must be in [0, 1], got gamma=1.5
    """

    learning_rate: float = 1e-4
    batch_size: int = 32
    buffer_size: int = 1_000_000
    learning_starts: int = 100
    gamma: float = 0.99
    target_update_interval: int = 10_000
    tau: float = 1.0
    train_freq: int = 4
    gradient_steps: int = 1
    exploration_fraction: float = 0.1
    exploration_initial_eps: float = 1.0
    exploration_final_eps: float = 0.05
    max_grad_norm: float | None = 10.0
    net_arch: tuple[int, ...] = (64, 64)
    total_timesteps: int | None = None
    loss: str = "huber"
    target_network: bool = True
    double: bool = False
    dueling: bool = False
    n_step: int = 1
    prioritized: bool = False
    alpha: float = 0.6
    beta0: float = 0.4
    prioritized_eps: float = 1e-6
    distributional: bool = False
    n_atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0
    stack_size: int = 1
    adam_eps: float = 1e-8

    def __post_init__(self) -> None:
        check_config(self)

    @property
    def steps_per_burst(self) -> int:
        """Gradient steps per burst (``gradient_steps``, or ``train_freq`` for -1)."""
        return self.train_freq if self.gradient_steps == -1 else self.gradient_steps



def _int(config: Any, name: str, low: int) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"DQNConfig: {name} must be an int, got {name}={value!r}")
    if value < low:
        raise ValueError(f"DQNConfig: {name} must be >= {low}, got {name}={value!r}")


def _number(config: Any, name: str, low: float, high: float = math.inf,
            low_open: bool = False) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"DQNConfig: {name} must be a number, got {name}={value!r}")
    if not ((value > low if low_open else value >= low) and value <= high):
        if high == math.inf:
            wanted = f"> {low:g}" if low_open else f">= {low:g}"
        else:
            wanted = f"in {'(' if low_open else '['}{low:g}, {high:g}]"
        raise ValueError(f"DQNConfig: {name} must be {wanted}, got {name}={value!r}")


def check_config(config: Any) -> None:
    """Raise ``TypeError`` / ``ValueError`` for a setting DQN cannot run with."""
    for name in ("batch_size", "buffer_size", "target_update_interval", "train_freq", "n_step",
                 "stack_size"):
        _int(config, name, 1)
    _int(config, "learning_starts", 0)
    _int(config, "gradient_steps", -1)
    if config.gradient_steps == 0:
        raise ValueError("DQNConfig: gradient_steps must be >= 1, or -1 for as many as "
                         "train_freq, got gradient_steps=0")
    if config.total_timesteps is not None:
        _int(config, "total_timesteps", 1)
    _number(config, "learning_rate", 0.0, low_open=True)
    _number(config, "gamma", 0.0, 1.0)
    _number(config, "tau", 0.0, 1.0, low_open=True)
    for name in ("exploration_fraction", "exploration_initial_eps", "exploration_final_eps",
                 "beta0"):
        _number(config, name, 0.0, 1.0)
    _number(config, "alpha", 0.0)
    _number(config, "prioritized_eps", 0.0, low_open=True)
    _number(config, "adam_eps", 0.0, low_open=True)
    if config.max_grad_norm is not None:
        _number(config, "max_grad_norm", 0.0, low_open=True)
    arch = config.net_arch
    if not isinstance(arch, (tuple, list)) or not all(
            isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h > 0 for h in arch):
        raise TypeError(f"DQNConfig: net_arch must be a tuple of positive ints (hidden sizes), "
                        f"got net_arch={arch!r}")
    config.net_arch = tuple(int(h) for h in arch)
    if config.loss not in ("huber", "mse"):
        raise ValueError(f'DQNConfig: loss must be "huber" or "mse", got loss={config.loss!r}')
    for name in ("target_network", "double", "dueling", "prioritized", "distributional"):
        if not isinstance(getattr(config, name), bool):
            raise TypeError(f"DQNConfig: {name} must be True or False, got "
                            f"{name}={getattr(config, name)!r}")
    if config.distributional:
        _int(config, "n_atoms", 2)
        _number(config, "v_min", -math.inf)
        _number(config, "v_max", -math.inf)
        if not config.v_min < config.v_max:
            raise ValueError(f"DQNConfig: v_min must be below v_max, got v_min={config.v_min}, "
                             f"v_max={config.v_max}")
        if config.loss != "huber":
            raise ValueError('DQNConfig: distributional=True learns by cross-entropy; leave '
                             f'loss at its default, got loss={config.loss!r}')


def _spaces(env: Any) -> tuple[Any, Any, int]:
    if isinstance(env, rl.VectorEnv):
        return env.single_action_space, env.single_state_space, int(env.num_envs)
    action_space = getattr(env, "action_space", None)
    state_space = getattr(env, "state_space", getattr(env, "observation_space", None))
    if action_space is None or state_space is None:
        raise TypeError(f"DQN needs an env with action_space and state_space, got {env!r} of "
                        f"type {type(env).__name__}; wrap gymnasium envs in stagerl.GymEnv")
    return action_space, state_space, 1


def check_spaces(env: Any, config: Any) -> tuple[gymnasium.spaces.Discrete, Any, int]:
    """The env's (single) action space, observation space and number of sub-envs, refused
    where DQN cannot take them."""
    action_space, state_space, num_envs = _spaces(env)
    if isinstance(action_space, gymnasium.spaces.Box):
        raise TypeError(
            f"DQN chooses among discrete actions, but the env's action space is continuous: "
            f"{action_space}; use an algorithm for continuous actions (SAC or TD3, or PPO with a "
            "Gaussian policy), or discretise the actions with a gymnasium ActionWrapper")
    if not isinstance(action_space, gymnasium.spaces.Discrete):
        raise TypeError(
            f"DQN needs a Discrete action space, got {action_space}; for MultiDiscrete or "
            "MultiBinary actions use PPO, or flatten them into one Discrete space")
    if not isinstance(state_space, (gymnasium.spaces.Box, gymnasium.spaces.Discrete,
                                    gymnasium.spaces.MultiBinary)):
        raise TypeError(
            f"DQN takes Box, Discrete or MultiBinary observations, got {state_space}; flatten "
            "them with gymnasium.wrappers.FlattenObservation (or pass a body= network that reads "
            "them)")
    if config.prioritized and num_envs > 1:
        raise ValueError(
            f"prioritized replay is not supported with a vector env ({num_envs} sub-envs): the "
            "trajectory keeps one ring per sub-env and they share no priorities; use a single "
            "env, or prioritized=False (uniform replay)")
    per_lane = math.ceil(config.buffer_size / num_envs)
    needed = config.stack_size + 1
    if per_lane < needed:
        raise ValueError(
            f"buffer_size={config.buffer_size} leaves {per_lane} transitions per sub-env, too few "
            f"for stack_size={config.stack_size} (each sampled row needs {needed}); raise "
            "buffer_size")
    return action_space, state_space, num_envs
