"""DQNConfig, the hyper-parameters of the DQN family, and what the family refuses before
anything runs: bad settings and envs it cannot act in, each with the value at fault and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium

from stagerl.algorithms._checks import (
    Settings,
    check_choice,
    check_ints,
    check_net_arch,
    check_numbers,
    settings_name,
    single_spaces,
)
from stagerl.algorithms.extractors import check_extractor_name, readable_observations
from stagerl.algorithms.schedules import SCHEDULES

__all__ = ["DQNConfig", "check_spaces"]


@dataclass
class DQNConfig(Settings):
    """Hyper-parameters of the DQN family (Stable-Baselines3's names and defaults).

    Steps are env steps (transitions; a vector env takes ``num_envs`` per act).

    Attributes:
        learning_rate: Adam's step size.
        learning_rate_schedule: ``"constant"``, or ``"linear"``: the step size falls linearly
            from ``learning_rate`` to 0 at ``total_steps`` (set before every burst; RL-Zoo's
            ``lin_<value>``).
        batch_size: transitions per gradient step.
        buffer_size: transitions the replay ring holds (split over a vector env's sub-envs).
        learning_starts: env steps of uniformly random actions before learning starts.
        gamma: the discount.
        target_update_interval: env steps between target-network updates.
        tau: 1.0 copies the online network into the target; less blends (Polyak averaging).
        train_freq: env steps between bursts of gradient steps.
        gradient_steps: gradient steps per burst; -1: as many as ``train_freq``.
        exploration_fraction: the share of ``total_steps`` over which ε falls linearly.
        exploration_initial_eps, exploration_final_eps: ε at the start and at the end.
        max_grad_norm: clip the gradient norm to this (``None`` or ``inf``: never clip).
        net_arch: hidden sizes of the MLP body.
        total_steps: the run's length in env steps, of which ``exploration_fraction`` and
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
        features_extractor: the body before the ``net_arch`` layers: ``"auto"`` (the Nature CNN
            for frames, a combined extractor for Dict and Tuple observations, none for
            vectors), ``"mlp"``, ``"nature_cnn"`` or ``"combined"`` (see
            ``stagerl.algorithms.extractors``; a factory of your own goes to
            ``make_dqn_agent``).

    Example:
        >>> DQNConfig(total_steps=10_000, double=True).gradient_steps
        1
        >>> DQNConfig(gamma=1.5)
        Traceback (most recent call last):
        ...
        ValueError: DQNConfig: gamma must be in [0, 1], got gamma=1.5
    """

    learning_rate: float = 1e-4
    learning_rate_schedule: str = "constant"
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
    total_steps: int | None = None
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
    features_extractor: str = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "batch_size", "buffer_size", "target_update_interval", "train_freq",
                   "n_step", "stack_size", "total_steps")
        check_ints(self, "learning_starts", low=0)
        check_ints(self, "n_atoms", low=2)
        if self.gradient_steps != -1 and self.gradient_steps < 1:
            raise ValueError(f"{settings_name(self)}: gradient_steps must be an int >= 1, or -1 "
                             "for as many as train_freq, got "
                             f"gradient_steps={self.gradient_steps!r}")
        check_numbers(self, "learning_rate", "prioritized_eps", "adam_eps", above=0)
        check_numbers(self, "gamma", "exploration_fraction", "exploration_initial_eps",
                      "exploration_final_eps", "beta0", at_least=0, at_most=1)
        check_numbers(self, "tau", above=0, at_most=1)
        check_numbers(self, "alpha", at_least=0)
        check_numbers(self, "max_grad_norm", above=0, inf="never clip")
        check_numbers(self, "v_min", "v_max")
        if not self.v_min < self.v_max:
            raise ValueError(f"{settings_name(self)}: v_min must be below v_max, got "
                             f"v_min={self.v_min}, v_max={self.v_max}")
        check_net_arch(self)
        check_choice(self, "loss", ("huber", "mse"))
        check_choice(self, "learning_rate_schedule", SCHEDULES)
        check_extractor_name(settings_name(self), self.features_extractor)
        if self.distributional and self.loss != "huber":
            raise ValueError(f"{settings_name(self)}: distributional=True learns by "
                             f"cross-entropy; leave loss at its default, got loss={self.loss!r}")

    @property
    def steps_per_burst(self) -> int:
        """Gradient steps per burst (``gradient_steps``, or ``train_freq`` for -1)."""
        return self.train_freq if self.gradient_steps == -1 else self.gradient_steps


def check_spaces(env: Any, config: Any) -> tuple[gymnasium.spaces.Discrete, Any, int]:
    """The env's (single) action space, observation space and number of sub-envs, refused
    where DQN cannot take them."""
    state_space, action_space, num_envs = single_spaces(env, "DQN")
    if isinstance(action_space, gymnasium.spaces.Box):
        raise TypeError(
            f"DQN chooses among discrete actions, but the env's action space is continuous: "
            f"{action_space}; use an algorithm for continuous actions (SAC or TD3, or PPO with a "
            "Gaussian policy), or discretise the actions with a gymnasium ActionWrapper")
    if not isinstance(action_space, gymnasium.spaces.Discrete):
        raise TypeError(
            f"DQN needs a Discrete action space, got {action_space}; for MultiDiscrete or "
            "MultiBinary actions use PPO, A2C, VPG or TRPO, or map the actions onto one "
            "Discrete space with a gymnasium ActionWrapper (one index per combination)")
    if not readable_observations(state_space):
        raise TypeError(
            f"DQN takes Box, Discrete, MultiDiscrete or MultiBinary observations (or a Dict or "
            f"Tuple of them), got {state_space}; flatten them with "
            "gymnasium.wrappers.FlattenObservation (or pass a features_extractor that reads "
            "them)")
    if config.stack_size > 1 and isinstance(state_space, (gymnasium.spaces.Dict,
                                                          gymnasium.spaces.Tuple)):
        raise TypeError(
            f"stack_size={config.stack_size} stacks frames, got the observation space "
            f"{state_space}; leave stack_size at 1 for Dict and Tuple observations")
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

