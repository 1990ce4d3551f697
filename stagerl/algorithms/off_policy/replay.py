"""The replay of SAC and TD3: a SARTS ring whose controller allows one sample of
``gradient_steps`` batches every ``train_freq`` transitions once learning has started (SB3's
schedule), and the loop that feeds each batch to the algorithm's update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import torch

from stagerl.algorithms.extractors import observation_spec
from stagerl.algorithms.torch_state import denormals_flushed
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from trajectories import (
    BatchSampler,
    CircularArraySARTSTraces,
    InsertSampleRatioController,
    MultiBatchSampler,
    Trajectory,
)
from trajectories.nested import tree_map

__all__ = ["first_update_at", "make_replay_trajectory", "learn_from_replay",
           "report_last_update", "REPORT_EVERY_N_UPDATES"]


def first_update_at(learning_starts: int, train_freq: int) -> int:
    """Transitions before the first update: the first multiple of ``train_freq`` beyond
    ``learning_starts``, where Stable-Baselines3 trains first.

    Example:
        >>> first_update_at(100, 1), first_update_at(10_000, 1), first_update_at(100, 64)
        (101, 10001, 128)
    """
    return (learning_starts // train_freq + 1) * train_freq


def make_replay_trajectory(state_space: Any, action_space: gymnasium.spaces.Box,
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
        state=observation_spec(state_space),
        action=(np.float32, action_space.shape),
        reward=(np.float32, ()),
        terminal=(np.bool_, ()),
    )
    sampler = MultiBatchSampler(BatchSampler(batch_size, rng=rng, device=device or "cpu"),
                                gradient_steps)
    controller = InsertSampleRatioController(
        ratio=1.0 / train_freq, threshold=first_update_at(learning_starts, train_freq))
    return Trajectory(traces, sampler, controller)


def learn_from_replay(policy: Any, trajectory: Any,
                      update: Callable[[Any, dict[str, torch.Tensor]], None]) -> None:
    """``update(policy, batch)`` on every batch the trajectory's controller allows now (one
    sample of ``gradient_steps`` batches per ``train_freq`` transitions), as tensors on the
    policy's device, with denormal floats flushed on the CPU."""
    before = policy.n_updates
    for batches in trajectory:
        with denormals_flushed(policy.device):
            for batch in batches:
                update(policy, {k: tree_map(lambda v: torch.as_tensor(v, device=policy.device), v)
                                for k, v in batch.items()})
    every = REPORT_EVERY_N_UPDATES
    if policy.n_updates // every > before // every and is_logging_scalars():
        report_last_update(policy)


#: Gradient steps between two reports of the last update's figures (CleanRL's every 100).
REPORT_EVERY_N_UPDATES = 100


def report_last_update(policy: Any) -> None:
    """The last update's losses (``losses/critic_loss``, ``losses/actor_loss``, ...) and its
    mean TD target (``losses/q_values``) to whatever loggers listen."""
    for name, value in policy.last_update.items():
        if name == "target_q":
            name, value = "q_values", value.mean()
        log_scalar(f"losses/{name}", value)
