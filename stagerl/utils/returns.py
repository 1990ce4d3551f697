"""Discounted returns and generalized advantage estimation (GAE) over a rollout.

Time is the first axis: ``rewards`` is ``(T,)`` for one env or ``(T, n_envs)`` for a vector env.
``terminal[t]`` says step ``t`` ended its episode in a terminal state, so nothing after it is
bootstrapped or accumulated into it. numpy arrays (and lists) give numpy arrays; torch tensors
give tensors on their own device.

A step cut by a time limit in the middle of a rollout is not terminal, but the value that follows
it in ``values`` belongs to the next episode's first state. Fold the bootstrap into its reward
(``reward += gamma * V(final state)``) and mark it terminal, as Stable-Baselines3 does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["discount_rewards", "generalized_advantage_estimation"]


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "detach") and hasattr(x, "device")


def _as_float_array(x: Any, name: str, like: Any = None) -> Any:
    """``x`` as a floating numpy array, or a floating tensor (on ``like``'s device if given)."""
    if _is_tensor(x) or _is_tensor(like):
        import torch

        device = like.device if _is_tensor(like) else x.device
        x = torch.as_tensor(x, device=device)
        return x if x.is_floating_point() else x.to(torch.get_default_dtype())
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {x.dtype}")
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _check_rewards(rewards: Any) -> None:
    if rewards.ndim not in (1, 2):
        raise ValueError(
            f"rewards must have shape (T,) or (T, n_envs), got shape {tuple(rewards.shape)}"
        )


def _continues(terminal: Any, rewards: Any) -> Any:
    """``1 - terminal`` as floats in the type of ``rewards``, or ``None`` when no terminal."""
    if terminal is None:
        return None
    terminal = _as_float_array(terminal, "terminal", like=rewards)
    if tuple(terminal.shape) != tuple(rewards.shape):
        raise ValueError(
            f"terminal must have the shape of rewards {tuple(rewards.shape)}, got "
            f"{tuple(terminal.shape)}"
        )
    return 1.0 - terminal


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {name}={value!r}")


def _empty_like(x: Any, dtype: Any) -> Any:
    if _is_tensor(x):
        return x.new_empty(x.shape, dtype=dtype)
    return np.empty(x.shape, dtype=dtype)


def discount_rewards(rewards: Any, gamma: float, terminal: Any = None, init: Any = 0.0) -> Any:
    """The discounted return from every step: ``G[t] = r[t] + gamma * (1 - terminal[t]) * G[t+1]``.

    Args:
        rewards: ``(T,)`` or ``(T, n_envs)``.
        gamma: the discount, in [0, 1].
        terminal: like ``rewards``; a terminal step's return is its reward alone.
        init: the return after the last step (a bootstrap value): a scalar or ``(n_envs,)``.

    Example:
        >>> from stagerl.utils import discount_rewards
        >>> discount_rewards([1.0, 1.0, 1.0], 0.5).tolist()
        [1.75, 1.5, 1.0]
        >>> discount_rewards([1.0, 1.0, 1.0], 0.5, terminal=[False, True, False], init=4.0).tolist()
        [1.5, 1.0, 3.0]
    """
    _check_rate("gamma", gamma)
    rewards = _as_float_array(rewards, "rewards")
    _check_rewards(rewards)
    continues = _continues(terminal, rewards)
    gain = _as_float_array(init, "init", like=rewards)
    if tuple(gain.shape) not in ((), tuple(rewards.shape[1:])):
        raise ValueError(
            f"init must be a scalar or have shape {tuple(rewards.shape[1:])} (one per env), got "
            f"shape {tuple(gain.shape)}"
        )
    returns = _empty_like(rewards, rewards.dtype)
    for t in range(rewards.shape[0] - 1, -1, -1):
        if continues is None:
            gain = rewards[t] + gamma * gain
        else:
            gain = rewards[t] + gamma * continues[t] * gain
        returns[t] = gain
    return returns


def generalized_advantage_estimation(
    rewards: Any, values: Any, gamma: float, lam: float, terminal: Any = None
) -> Any:
    """GAE(gamma, lambda) advantages (Schulman et al. 2016), one per reward.

    ``delta[t] = r[t] + gamma * (1 - terminal[t]) * V[t+1] - V[t]`` and
    ``A[t] = delta[t] + gamma * lam * (1 - terminal[t]) * A[t+1]``. The returns that a critic
    regresses on are ``A + values[:-1]``.

    Args:
        rewards: ``(T,)`` or ``(T, n_envs)``.
        values: ``(T + 1,)`` or ``(T + 1, n_envs)``: the value of every step's state plus the
            bootstrap value of the state after the last step.
        gamma: the discount, in [0, 1].
        lam: the GAE lambda, in [0, 1] (0: one-step TD errors; 1: Monte-Carlo returns minus V).
        terminal: like ``rewards``; zeroes the bootstrap and cuts the accumulation.

    Example:
        >>> from stagerl.utils import generalized_advantage_estimation
        >>> generalized_advantage_estimation([1.0, 1.0], [0.0, 0.0, 2.0], 0.5, 1.0).tolist()
        [2.0, 2.0]
        >>> generalized_advantage_estimation([1.0, 1.0], [0.0, 0.0, 2.0], 0.5, 1.0,
        ...                                  terminal=[False, True]).tolist()
        [1.5, 1.0]
    """
    _check_rate("gamma", gamma)
    _check_rate("lam", lam)
    rewards = _as_float_array(rewards, "rewards", like=values)
    values = _as_float_array(values, "values", like=rewards)
    _check_rewards(rewards)
    expected = (rewards.shape[0] + 1, *rewards.shape[1:])
    if tuple(values.shape) != expected:
        raise ValueError(
            f"values must have one more entry than rewards (the bootstrap value): rewards has "
            f"shape {tuple(rewards.shape)}, so values needs shape {expected}, got values of shape "
            f"{tuple(values.shape)}"
        )
    continues = _continues(terminal, rewards)
    dtype = rewards.dtype if rewards.dtype == values.dtype else (rewards[:1] + values[:1]).dtype
    advantages = _empty_like(rewards, dtype)
    # The TD errors of every step at once, and one multiply-add a step for the recursion: the
    # same float operations, in the same order and dtypes, as one step at a time (the values
    # are bit for bit those of ``delta + gamma * lam * continues * gae`` written per step).
    if continues is None:
        deltas = rewards + gamma * values[1:] - values[:-1]
        decays = None
    else:
        deltas = rewards + gamma * continues * values[1:] - values[:-1]
        decays = gamma * lam * continues
    gae = 0.0
    for t in range(rewards.shape[0] - 1, -1, -1):
        gae = deltas[t] + (gamma * lam * gae if decays is None else decays[t] * gae)
        advantages[t] = gae
    return advantages
