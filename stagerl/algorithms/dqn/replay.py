"""Replay for the DQN family: the trajectory, and the sampler that draws a burst of batches.

The trajectory's controller decides when learning happens: one controller sample is one
*burst* of ``gradient_steps`` gradient steps, allowed every ``train_freq`` inserted transitions
once learning has started (``InsertSampleRatioController(ratio=1 / train_freq, ...)``).
:class:`BurstSampler` draws the burst's batches:

* uniform replay draws every row of the burst at once and gathers each trace in one take
  (``gradient_steps * batch_size`` rows), so the learner can move them to its device in one
  transfer per field and compute all the burst's targets in one forward pass;
* prioritized replay draws batch after batch, so that the priorities written back after one
  gradient step weigh the next draw (as in the prioritized-replay paper).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from trajectories import (
    BatchSampler,
    CircularArraySARTSTraces,
    CircularPrioritizedTraces,
    InsertSampleRatioController,
    NStepBatchSampler,
    Trajectory,
)
from trajectories.nested import is_nested, tree_map

__all__ = ["BurstSampler", "Burst", "DiscountedNStepSampler", "make_dqn_trajectory",
           "as_tensors", "importance_weights", "write_priorities"]

#: The traces a DQN batch needs (other traces a user adds are not gathered).
NAMES = ("state", "next_state", "action", "reward", "terminal")
#: ... and a masked DQN's: the legal actions of each next state.
MASKED_NAMES = (*NAMES, "next_legal_actions_mask")


class DiscountedNStepSampler(NStepBatchSampler):
    """``NStepBatchSampler`` whose batches also carry ``discount = gamma ** ns`` per row.

    ``ns`` (the steps summed) is cut at an episode's end and at the newest stored row; a row cut
    by a time limit or by the newest row still bootstraps from its ``next_state``, with the
    discount of the steps it really spans, not ``gamma ** n``.

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(4), action=np.zeros(3, dtype=np.int64),
        ...               reward=np.ones(3, dtype=np.float32), terminal=np.zeros(3, dtype=bool))
        >>> batch = DiscountedNStepSampler(n=2, gamma=0.5, batch_size=64, rng=0).sample(traces)
        >>> sorted(set(zip(batch["state"].tolist(), batch["discount"].tolist())))
        [(0, 0.25), (1, 0.25), (2, 0.5)]
    """

    def _n_steps(self, container, idx, n_rows):
        ns = super()._n_steps(container, idx, n_rows)
        self._last_n_steps = ns  # read back by sample() right after this draw
        return ns

    def sample(self, container) -> dict:
        batch = super().sample(container)
        batch["discount"] = (self.gamma ** self._last_n_steps).astype(np.float32)
        return batch


class Burst:
    """The batches of one burst: iterate it for ``n_batches`` batches of ``batch_size`` rows.

    ``rows`` holds every row of the burst (``n_batches * batch_size``, batch after batch) when
    they were drawn at once; it is ``None`` when each batch is drawn as it is asked for.
    """

    def __init__(self, n_batches: int, batch_size: int, rows: dict | None = None,
                 draw: Any = None):
        self.n_batches, self.batch_size, self.rows, self._draw = n_batches, batch_size, rows, draw

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self) -> Iterator[dict]:
        if self.rows is None:
            for _ in range(self.n_batches):
                yield self._draw()
            return
        # Each field cut into its batches once (plain slices, views), not field by batch.
        columns = {name: _slices(column, self.batch_size, self.n_batches)
                   for name, column in self.rows.items()}
        for parts in zip(*columns.values(), strict=True):
            yield dict(zip(columns, parts, strict=True))


def _slices(column: Any, size: int, n: int) -> list:
    """The ``n`` consecutive slices of ``size`` rows of ``column`` (of each of its leaves)."""
    if is_nested(column):
        return [tree_map(lambda c: c[i:i + size], column)  # noqa: B023
                for i in range(0, n * size, size)]
    return [column[i:i + size] for i in range(0, n * size, size)]


class BurstSampler:
    """``n_batches`` batches of ``batch_size`` rows for one controller sample (see the module
    docstring); n-step returns (with ``discount`` per row) and stacked frames as
    :class:`~trajectories.NStepBatchSampler` builds them. Batches are numpy arrays; ``masked``
    adds each row's ``next_legal_actions_mask`` (of the row its ``next_state`` comes from).

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(6), action=np.zeros(5, dtype=np.int64),
        ...               reward=np.ones(5, dtype=np.float32), terminal=np.zeros(5, dtype=bool))
        >>> burst = BurstSampler(n_batches=3, batch_size=4, rng=0).sample(traces)
        >>> len(burst), burst.rows["state"].shape, [b["state"].shape for b in burst]
        (3, (12,), [(4,), (4,), (4,)])
    """

    def __init__(self, n_batches: int, batch_size: int, n_step: int = 1, gamma: float = 0.99,
                 stack_size: int = 1, prioritized: bool = False, rng: Any = None,
                 masked: bool = False):
        for name, value in (("n_batches", n_batches), ("batch_size", batch_size),
                            ("n_step", n_step), ("stack_size", stack_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"BurstSampler: {name} must be an int >= 1, got {value!r}")
        self.n_batches, self.batch_size = int(n_batches), int(batch_size)
        self.prioritized = bool(prioritized)
        rows = self.batch_size if self.prioritized else self.n_batches * self.batch_size
        names = MASKED_NAMES if masked else NAMES
        if n_step == 1 and stack_size == 1:
            self.sampler = BatchSampler(rows, names=names, rng=rng)
        else:
            self.sampler = DiscountedNStepSampler(
                n_step, gamma, rows, stack_size=None if stack_size == 1 else stack_size,
                names=names, rng=rng)

    def __repr__(self) -> str:
        return (f"BurstSampler(n_batches={self.n_batches}, batch_size={self.batch_size}, "
                f"sampler={self.sampler!r}, prioritized={self.prioritized})")

    def sample(self, container) -> Burst:
        if self.prioritized:
            return Burst(self.n_batches, self.batch_size,
                         draw=lambda: self.sampler.sample(container))
        return Burst(self.n_batches, self.batch_size, rows=self.sampler.sample(container))


def first_burst_at(learning_starts: int, train_freq: int) -> int:
    """Transitions before the first burst: the first multiple of ``train_freq`` beyond
    ``learning_starts``, where Stable-Baselines3 trains first (after each ``train_freq``
    collected steps, once more than ``learning_starts`` steps were taken)."""
    return (learning_starts // train_freq + 1) * train_freq


def make_dqn_trajectory(state: tuple, n_batches: int, batch_size: int, buffer_size: int,
                        train_freq: int, learning_starts: int, n_step: int = 1,
                        gamma: float = 0.99, stack_size: int = 1, prioritized: bool = False,
                        rng: Any = None, legal_actions_mask: tuple | None = None) -> Trajectory:
    """A SARTS ring of ``buffer_size`` transitions (``state = (dtype, shape)``; prioritized
    when asked), a :class:`BurstSampler` and the controller of the update rate. With
    ``legal_actions_mask = (dtype, shape)`` (a masked DQN) the ring stores each state's
    legal-action mask too, multiplexed like the states, and batches carry
    ``next_legal_actions_mask``.

    Example:
        >>> t = make_dqn_trajectory((np.float32, (4,)), n_batches=2, batch_size=8,
        ...                         buffer_size=100, train_freq=4, learning_starts=10)
        >>> t.controller.threshold, t.controller.ratio
        (12, 0.25)
    """
    traces = CircularArraySARTSTraces(capacity=buffer_size, state=state,
                                      legal_actions_mask=legal_actions_mask)
    if prioritized:
        traces = CircularPrioritizedTraces(traces)
    sampler = BurstSampler(n_batches, batch_size, n_step, gamma, stack_size, prioritized, rng,
                           masked=legal_actions_mask is not None)
    controller = InsertSampleRatioController(
        ratio=1.0 / train_freq, threshold=first_burst_at(learning_starts, train_freq))
    return Trajectory(traces, sampler, controller)


def as_tensors(batch: dict, device: torch.device, action_start: int = 0,
               beta: float = 1.0) -> dict:
    """A numpy batch as tensors on ``device``, one transfer per field: action labels become
    indices (``action - action_start``), ``terminal`` a float, ``priority`` the importance
    weights ``weight`` (exponent ``beta``); ``key`` stays behind.

    Example:
        >>> batch = {"state": np.zeros((2, 3), np.float32), "action": np.array([3, 4]),
        ...          "next_state": np.ones((2, 3), np.float32), "reward": np.ones(2, np.float32),
        ...          "terminal": np.array([True, False]), "priority": np.array([1.0, 4.0])}
        >>> t = as_tensors(batch, torch.device("cpu"), action_start=3, beta=0.5)
        >>> t["action"].tolist(), t["terminal"].tolist(), t["weight"].tolist()
        ([0, 1], [1.0, 0.0], [1.0, 0.5])
    """
    cuda = device.type == "cuda"

    def tensor(value: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(value))
        return t.pin_memory().to(device, non_blocking=True) if cuda else t.to(device)

    out = {name: tree_map(tensor, batch[name]) for name in ("state", "next_state", "reward")}
    action = batch["action"]
    out["action"] = tensor(action - action_start if action_start else action)
    out["terminal"] = tensor(batch["terminal"].astype(np.float32))
    if "next_legal_actions_mask" in batch:
        out["next_legal_actions_mask"] = tensor(batch["next_legal_actions_mask"].astype(bool))
    if "discount" in batch:
        out["discount"] = tensor(batch["discount"])
    if "priority" in batch:
        out["weight"] = tensor(importance_weights(batch["priority"], beta))
    return out


def importance_weights(priorities: np.ndarray, beta: float) -> np.ndarray:
    """Prioritized replay's importance weights ``(N P(i)) ** -beta``, divided by the batch's
    largest: ``(min p / p) ** beta`` (``N`` and the priorities' total cancel).

    Example:
        >>> importance_weights(np.array([1.0, 4.0]), beta=0.5).tolist()
        [1.0, 0.5]
    """
    priorities = np.asarray(priorities, dtype=np.float64)
    return ((priorities.min() / priorities) ** beta).astype(np.float32)


def write_priorities(trajectory: Trajectory, keys: np.ndarray, errors: np.ndarray,
                     alpha: float, eps: float) -> np.ndarray:
    """Set the priorities ``(error + eps) ** alpha`` of the rows ``keys``; new transitions
    then enter with the highest priority seen so far, so each is replayed soon. Returns them."""
    priorities = (np.asarray(errors, dtype=np.float64) + eps) ** alpha
    trajectory.set_priority(keys, priorities)
    layer = trajectory.container
    while not isinstance(layer, CircularPrioritizedTraces):
        layer = layer.traces
    layer.default_priority = max(layer.default_priority, float(priorities.max()))
    return priorities
