"""What SAC and TD3 share: the env checks for Box actions, the rescaling of actions to the Box
bounds, the critics, the replay trajectory and the target networks' Polyak averaging.

Both algorithms think in *unit* actions, in ``[-1, 1]`` on every dimension (a ``tanh`` output),
and the env receives them rescaled to its bounds; the trajectory stores what the env received,
and each update rescales the sampled actions back::

    unit action u in [-1, 1]  --to_env-->  low + (u + 1) * (high - low) / 2  --> env.act
    stored action a           --to_unit--> (a - centre) / half_range          --> critics
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from stagerl.core.env import VectorEnv
from stagerl.utils.networks import mlp
from trajectories import (
    BatchSampler,
    CircularArraySARTSTraces,
    InsertSampleRatioController,
    MultiBatchSampler,
    Trajectory,
)

__all__ = ["BoxScale", "Critics", "InplaceReLU", "check_continuous_env", "frozen", "polyak_update",
           "make_replay_trajectory", "first_update_at", "check_int", "check_number",
           "check_net_arch", "check_replay_config"]


# ---- settings and envs ---------------------------------------------------------------------


def check_int(owner: str, name: str, value: Any, low: int) -> None:
    """``TypeError`` unless ``value`` is an int, ``ValueError`` unless it is ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: {name} must be an int, got {name}={value!r}")
    if value < low:
        raise ValueError(f"{owner}: {name} must be >= {low}, got {name}={value!r}")


def check_number(owner: str, name: str, value: Any, low: float, high: float = math.inf,
                 low_open: bool = False) -> None:
    """``TypeError`` unless ``value`` is a real number, ``ValueError`` unless it lies in
    ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {name} must be a number, got {name}={value!r}")
    if not ((value > low if low_open else value >= low) and value <= high):
        left = "(" if low_open else "["
        wanted = (f"> {low}" if low_open else f">= {low}") if high == math.inf else \
            f"in {left}{low}, {high}]"
        raise ValueError(f"{owner}: {name} must be {wanted}, got {name}={value!r}")


def check_net_arch(owner: str, net_arch: Any) -> tuple[int, ...]:
    """``net_arch`` as a tuple of hidden-layer sizes (at least one, each positive)."""
    if not isinstance(net_arch, (tuple, list)) or not net_arch or not all(
            isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h > 0
            for h in net_arch):
        raise TypeError(f"{owner}: net_arch must be a non-empty tuple of positive ints (the "
                        f"hidden layers' sizes), got net_arch={net_arch!r}")
    return tuple(int(h) for h in net_arch)


def check_replay_config(config: Any) -> None:
    """Check the settings SAC's and TD3's configs share (named after the config's class in
    errors) and make ``config.net_arch`` a tuple.

    Example:
        >>> from stagerl.algorithms.td3 import TD3Config
        >>> TD3Config(gamma=1.5)
        Traceback (most recent call last):
        ...
        ValueError: TD3Config: gamma must be in [0.0, 1.0], got gamma=1.5
    """
    owner = type(config).__name__
    for name in ("buffer_size", "batch_size", "train_freq", "gradient_steps", "n_critics"):
        check_int(owner, name, getattr(config, name), 1)
    check_int(owner, "learning_starts", config.learning_starts, 0)
    check_number(owner, "learning_rate", config.learning_rate, 0.0, low_open=True)
    check_number(owner, "tau", config.tau, 0.0, 1.0, low_open=True)
    check_number(owner, "gamma", config.gamma, 0.0, 1.0)
    config.net_arch = check_net_arch(owner, config.net_arch)


def check_continuous_env(env: Any, algorithm: str) -> tuple[gymnasium.spaces.Box,
                                                            gymnasium.spaces.Box]:
    """The env's single-env action and observation spaces, refused where ``algorithm`` cannot
    take them: actions must be a bounded float ``Box`` of one axis, observations a float or
    int ``Box`` of one axis.

    Example:
        >>> import stagerl as rl
        >>> action_space, state_space = check_continuous_env(rl.GymEnv("Pendulum-v1"), "SAC")
        >>> action_space.shape, state_space.shape
        ((1,), (3,))
        >>> check_continuous_env(rl.GymEnv("CartPole-v1"), "SAC")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: SAC acts in continuous (Box) action spaces, got Discrete(2); ... DQN or PPO ...
    """
    if isinstance(env, VectorEnv):
        action_space, state_space = env.single_action_space, env.single_state_space
    else:
        action_space = getattr(env, "action_space", None)
        state_space = getattr(env, "state_space", getattr(env, "observation_space", None))
        if action_space is None or state_space is None:
            raise TypeError(
                f"{algorithm} needs an env with action_space and state_space, got {env!r} of "
                f"type {type(env).__name__}; wrap gymnasium envs in stagerl.GymEnv or "
                "stagerl.GymVectorEnv")
    if not isinstance(action_space, gymnasium.spaces.Box):
        raise TypeError(
            f"{algorithm} acts in continuous (Box) action spaces, got {action_space}; for "
            "discrete actions use DQN or PPO (in stagerl.algorithms)")
    if not np.issubdtype(action_space.dtype, np.floating):
        raise TypeError(f"{algorithm} needs a float Box action space, got {action_space}")
    if len(action_space.shape) != 1:
        raise ValueError(
            f"{algorithm} needs actions on one axis, got the action space {action_space}; "
            "reshape them with a gymnasium ActionWrapper")
    if not action_space.is_bounded("both"):
        raise ValueError(
            f"{algorithm} squashes its actions into the action space's bounds, but {action_space}"
            " is unbounded; give it finite bounds, e.g. with gymnasium.wrappers.ClipAction or "
            "RescaleAction(env, -1.0, 1.0) on an env whose actions are meaningful there")
    if not isinstance(state_space, gymnasium.spaces.Box) or len(state_space.shape) != 1:
        raise TypeError(
            f"{algorithm} reads observations as one flat vector (a Box of one axis), got "
            f"{state_space}; flatten them with gymnasium.wrappers.FlattenObservation")
    return action_space, state_space


# ---- actions --------------------------------------------------------------------------------


class BoxScale(nn.Module):
    """Maps unit actions in ``[-1, 1]`` to a ``Box``'s bounds and back (buffers, so they move
    with the policy).

    Example:
        >>> import gymnasium, torch
        >>> scale = BoxScale(gymnasium.spaces.Box(-2.0, 2.0, (1,)))
        >>> scale.to_env(torch.tensor([[0.5]])).item(), scale.to_unit(torch.tensor([[-2.0]])).item()
        (1.0, -1.0)
    """

    def __init__(self, space: gymnasium.spaces.Box):
        super().__init__()
        low = torch.as_tensor(space.low, dtype=torch.float32)
        high = torch.as_tensor(space.high, dtype=torch.float32)
        self.register_buffer("centre", (high + low) / 2.0)
        self.register_buffer("half_range", (high - low) / 2.0)

    def to_env(self, unit_action: torch.Tensor) -> torch.Tensor:
        return self.centre + self.half_range * unit_action

    def to_unit(self, env_action: torch.Tensor) -> torch.Tensor:
        return (env_action - self.centre) / self.half_range


# ---- networks -------------------------------------------------------------------------------


class InplaceReLU(nn.ReLU):
    """``ReLU`` that overwrites its input: after a ``Linear`` nothing else reads that output, and
    one buffer fewer per layer made SAC's update ~5% faster here.

    Example:
        >>> import torch
        >>> x = torch.tensor([-1.0, 2.0])
        >>> InplaceReLU()(x) is x, x.tolist()
        (True, [0.0, 2.0])
    """

    def __init__(self) -> None:
        super().__init__(inplace=True)


class Critics(nn.Module):
    """``n`` Q-networks ``Q_i(s, a)``, each an MLP over the concatenated state and action.

    ``critics(state_BS, action_BA)`` gives every critic's values as one ``(n, B)`` tensor (SAC and
    TD3 take the minimum over the first axis); ``critics.first(...)`` only ``Q_1``'s, ``(B,)``.

    Example:
        >>> import torch
        >>> critics = Critics(3, 1, (8,), n=2)
        >>> critics(torch.zeros(5, 3), torch.zeros(5, 1)).shape
        torch.Size([2, 5])
    """

    def __init__(self, state_dim: int, action_dim: int, net_arch: tuple[int, ...], n: int = 2):
        super().__init__()
        self.q_networks = nn.ModuleList(
            mlp(state_dim + action_dim, net_arch, 1, activation=InplaceReLU) for _ in range(n))

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([state, action], dim=-1)
        return torch.stack([q(x).squeeze(-1) for q in self.q_networks])

    def first(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.q_networks[0](torch.cat([state, action], dim=-1)).squeeze(-1)


@contextmanager
def frozen(module: nn.Module) -> Iterator[nn.Module]:
    """Inside the block ``module``'s parameters take no gradient: a loss computed through it
    (the actor's loss through the critics) moves only what comes before it, and autograd skips
    the weight gradients it would throw away.

    Example:
        >>> import torch
        >>> net = torch.nn.Linear(1, 1)
        >>> x = torch.ones(1, 1, requires_grad=True)
        >>> with frozen(net):
        ...     net(x).sum().backward()
        >>> net.weight.grad is None, x.grad is not None, net.weight.requires_grad
        (True, True, True)
    """
    parameters = [p for p in module.parameters() if p.requires_grad]
    for p in parameters:
        p.requires_grad_(False)
    try:
        yield module
    finally:
        for p in parameters:
            p.requires_grad_(True)


@torch.no_grad()
def polyak_update(target: nn.Module, online: nn.Module, tau: float) -> None:
    """``target <- (1 - tau) * target + tau * online``, parameter-wise, in one fused call.

    Example:
        >>> import torch
        >>> online, target = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        >>> for p, q in zip(online.parameters(), target.parameters()):
        ...     _ = p.data.fill_(1.0), q.data.fill_(0.0)
        >>> polyak_update(target, online, tau=0.25)
        >>> target.weight.item()
        0.25
    """
    torch._foreach_lerp_(list(target.parameters()), list(online.parameters()), tau)


# ---- replay ---------------------------------------------------------------------------------


def first_update_at(learning_starts: int, train_freq: int) -> int:
    """Transitions before the first update: the first multiple of ``train_freq`` beyond
    ``learning_starts``, where Stable-Baselines3 trains first.

    Example:
        >>> first_update_at(100, 1), first_update_at(10_000, 1), first_update_at(100, 64)
        (101, 10001, 128)
    """
    return (learning_starts // train_freq + 1) * train_freq


def make_replay_trajectory(state_space: gymnasium.spaces.Box, action_space: gymnasium.spaces.Box,
                           buffer_size: int, batch_size: int, learning_starts: int,
                           train_freq: int, gradient_steps: int, rng: Any = None,
                           device: Any = None) -> Trajectory:
    """A SARTS ring of ``buffer_size`` transitions whose controller allows one sample of
    ``gradient_steps`` batches every ``train_freq`` transitions, from the first multiple of
    ``train_freq`` beyond ``learning_starts`` on (SB3's schedule). Each sample is a list of
    batches, torch tensors on ``device``.

    Example:
        >>> import gymnasium
        >>> box = gymnasium.spaces.Box(-1.0, 1.0, (2,))
        >>> t = make_replay_trajectory(box, box, 1000, 64, learning_starts=100, train_freq=1,
        ...                            gradient_steps=1, rng=0)
        >>> t.controller.threshold, t.controller.ratio, t.sampler.n
        (101, 1.0, 1)
    """
    traces = CircularArraySARTSTraces(
        capacity=buffer_size,
        state=(np.float32, state_space.shape),
        action=(np.float32, action_space.shape),
        reward=(np.float32, ()),
        terminal=(np.bool_, ()),
    )
    sampler = MultiBatchSampler(BatchSampler(batch_size, rng=rng, device=device or "cpu"),
                                gradient_steps)
    controller = InsertSampleRatioController(
        ratio=1.0 / train_freq, threshold=first_update_at(learning_starts, train_freq))
    return Trajectory(traces, sampler, controller)
