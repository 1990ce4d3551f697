"""The operators of execution plans over a :class:`~stagerl.distributed.Learner`'s Ray workers
(RLlib's names; see :mod:`stagerl.distributed.plan` for how they compose).

Sources (they ask the workers and yield what they delivered):

* :func:`ParallelRollouts`: ``mode="bulk_sync"``: every worker acts one batch with the current
  weights, the round is yielded as :class:`Batches` in worker order; ``mode="async"``: each
  worker keeps ``in_flight`` requests pending and each batch is yielded as it arrives, every
  worker's batches in the order it acted them, none more than ``max_staleness`` versions behind.
* :func:`AsyncGradients`: each worker acts a batch, computes the gradients of the policy's loss
  on it and sends them (A3C); yielded as they arrive.
* :func:`Replay`: the central trajectory's samples, as its controller allows them.

Operators (``for_each``): :class:`ConcatBatches`, :class:`StoreToReplayBuffer`,
:class:`TrainOneStep`, :class:`UpdateTargetNetwork`, :class:`ApplyGradients`.

A worker that dies is replaced and asked again by the sources; its lost request was never
delivered, and every delivered batch is counted once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stagerl.distributed.batches import RolloutBatch
from stagerl.distributed.plan import (
    NOT_READY,
    Batches,
    Gradients,
    Operator,
    PlanIterator,
    ReplaySample,
    TrainResult,
)

__all__ = ["ParallelRollouts", "AsyncGradients", "Replay", "ConcatBatches",
           "StoreToReplayBuffer", "TrainOneStep", "UpdateTargetNetwork", "ApplyGradients",
           "STALE_GRADIENTS"]

#: What ApplyGradients does with a stale gradient.
STALE_GRADIENTS = ("drop", "scale")


# ---- sources ----------------------------------------------------------------------------------


def ParallelRollouts(learner: Any, mode: str = "bulk_sync") -> PlanIterator:
    """The workers' rollout batches (see the module docstring): :class:`Batches` per round
    (``"bulk_sync"``) or one :class:`~stagerl.distributed.batches.RolloutBatch` at a time
    (``"async"``). Requests stop once the learner's run has the env steps it asked for."""
    if mode == "bulk_sync":
        return PlanIterator(_rounds(learner), Batches, "ParallelRollouts(mode='bulk_sync')")
    if mode == "async":
        return PlanIterator(_stream(learner, gradients=False), RolloutBatch,
                            "ParallelRollouts(mode='async')")
    raise ValueError(f"ParallelRollouts' mode must be 'bulk_sync' or 'async', got mode={mode!r}")


def AsyncGradients(learner: Any) -> PlanIterator:
    """The gradients the workers compute on their own batches (A3C), as they arrive; each
    worker's in the order it computed them."""
    return PlanIterator(_stream(learner, gradients=True), Gradients, "AsyncGradients()")


def Replay(learner: Any) -> PlanIterator:
    """The central trajectory's samples (:class:`ReplaySample`), as many as its controller
    allows; :data:`NOT_READY` when it allows none now."""
    def samples() -> Iterator:
        trajectory = learner.trajectory
        while True:
            for item in trajectory:
                yield ReplaySample(item)
            yield NOT_READY

    return PlanIterator(samples(), ReplaySample, "Replay()")


def _rounds(learner: Any) -> Iterator:
    while True:
        if learner.collected >= learner.target:
            yield NOT_READY
            continue
        workers = learner.pool.workers
        batches: list = [None] * workers
        for slot in range(workers):
            learner.request(slot)
        while learner.has_pending():
            ref = learner.wait_one()
            slot = learner.pool.slot_of(ref)
            batch = learner.receive(ref)
            if batch is None:  # its worker died: ask the replacement
                learner.request(slot)
            else:
                batches[slot] = batch
        learner.collected += sum(batch.env_steps for batch in batches)
        yield Batches(batches)


def _stream(learner: Any, gradients: bool) -> Iterator:
    while True:
        learner.top_up(gradients)
        if not learner.has_pending():
            yield NOT_READY
            continue
        ref = learner.next_in_order()
        if ref is None:  # not blocking (Concurrently's async mode) and none is ready
            yield NOT_READY
            continue
        batch = learner.receive(ref)
        if batch is None:  # its worker died: top_up asks the replacement
            continue
        learner.collected += batch.env_steps
        yield Gradients(batch, batch.gradients) if gradients else batch


# ---- operators --------------------------------------------------------------------------------


class ConcatBatches(Operator):
    """Collect batches until they hold ``min_batch_size`` env steps, then yield them together
    as :class:`Batches` (``None`` for nothing in between: the items that come, yielded as
    they are). Yields :data:`NOT_READY` while collecting."""

    takes = (RolloutBatch, Batches)
    gives = Batches
    hint = "ConcatBatches follows ParallelRollouts"

    def __init__(self, min_batch_size: int):
        if isinstance(min_batch_size, bool) or not isinstance(min_batch_size, int) or \
                min_batch_size < 1:
            raise ValueError(f"ConcatBatches' min_batch_size must be an int >= 1, got "
                             f"min_batch_size={min_batch_size!r}")
        self.min_batch_size = min_batch_size
        self._held = Batches()

    def __call__(self, item: Any) -> Any:
        self._held.extend(item if isinstance(item, Batches) else [item])
        if self._held.env_steps < self.min_batch_size:
            return NOT_READY
        out, self._held = self._held, Batches()
        return out

    def __repr__(self) -> str:
        return f"ConcatBatches({self.min_batch_size})"


class StoreToReplayBuffer(Operator):
    """Insert batches into the central trajectory (one lane per worker sub-env, each fragment
    joined to the episode it continues); yields them on."""

    takes = (RolloutBatch, Batches)
    hint = "StoreToReplayBuffer follows ParallelRollouts"

    def __init__(self, learner: Any):
        self.learner = learner

    def __call__(self, item: Any) -> Any:
        self.learner.insert(item if isinstance(item, Batches) else [item])
        return item


class TrainOneStep(Operator):
    """Learn: from batches, inserted first and then learned from as the trajectory's controller
    allows (``optimise(policy, PostActStage(), trajectory)``, as the loop after a step), or
    from one replayed sample (``learn_on_batch``). The weights become a new version when they
    changed; the workers get them with their next request."""

    takes = (RolloutBatch, Batches, ReplaySample)
    gives = TrainResult
    trains = True
    hint = ("TrainOneStep follows ParallelRollouts, ConcatBatches or Replay (gradients go to "
            "ApplyGradients)")

    def __init__(self, learner: Any):
        self.learner = learner

    def __call__(self, item: Any) -> TrainResult:
        learner = self.learner
        if isinstance(item, ReplaySample):
            learner.learn_on_batch(item.item)
            trained = True
        else:
            learner.insert(item if isinstance(item, Batches) else [item])
            trained = learner.learn()
        return TrainResult(trained=trained, version=learner.current_version(),
                           env_steps=learner.env_steps)


class UpdateTargetNetwork(Operator):
    """Let the policy's target network follow as its own schedule says (``update_target``:
    DQN's every ``target_update_interval`` env steps; nothing for policies without one);
    yields the item on."""

    def __init__(self, learner: Any):
        self.learner = learner

    def __call__(self, item: Any) -> Any:
        self.learner.update_target()
        return item


class ApplyGradients(Operator):
    """Apply the workers' gradients to the central policy (A3C; only the worker that sent one
    gets the new weights, with its next request).

    A gradient computed with weights ``s`` versions behind the current ones is *stale*:

    * ``stale="drop"`` (default): applied as it is while ``s <= max_staleness``, dropped beyond;
    * ``stale="scale"``: applied times ``1 / (1 + s)`` (a staleness-dependent step size, as
      Zhang et al. 2016), none dropped.

    Args:
        learner: the learner.
        max_staleness: the staleness a gradient may have (``"drop"``; default: the number of
            workers less one, what the others' gradients add while one computes if all take as
            long).
        stale: ``"drop"`` or ``"scale"``.
    """

    takes = (Gradients,)
    gives = TrainResult
    trains = True
    hint = "ApplyGradients follows AsyncGradients"

    def __init__(self, learner: Any, max_staleness: int | None = None, stale: str = "drop"):
        if stale not in STALE_GRADIENTS:
            raise ValueError(f"ApplyGradients' stale must be 'drop' or 'scale', got "
                             f"stale={stale!r}")
        if max_staleness is None:
            max_staleness = learner.pool.workers * learner.in_flight - 1
        if isinstance(max_staleness, bool) or not isinstance(max_staleness, int) or \
                max_staleness < 0:
            raise ValueError(f"ApplyGradients' max_staleness must be an int >= 0, got "
                             f"max_staleness={max_staleness!r}")
        self.learner, self.max_staleness, self.stale = learner, max_staleness, stale

    def __call__(self, item: Gradients) -> TrainResult:
        learner = self.learner
        staleness = learner.current_version() - item.batch.version
        if self.stale == "drop" and staleness > self.max_staleness:
            learner.gradient_dropped(item, staleness)
            return TrainResult(trained=False, version=learner.current_version(),
                               env_steps=learner.env_steps, staleness=staleness, scale=0.0)
        scale = 1.0 if self.stale == "drop" else 1.0 / (1.0 + staleness)
        learner.apply(item, scale, staleness)
        return TrainResult(trained=True, version=learner.current_version(),
                           env_steps=learner.env_steps, staleness=staleness, scale=scale)

    def __repr__(self) -> str:
        return f"ApplyGradients(max_staleness={self.max_staleness}, stale={self.stale!r})"
