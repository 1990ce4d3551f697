"""Execution plans: a training run as a dataflow of operators over lazy iterators (RLlib's).

A plan is built from iterators over items (rollout batches, replayed samples, gradients, train
results), each operator taking one kind of item and giving another::

    rollouts = ParallelRollouts(learner, mode="bulk_sync")        # -> Batches
    train = rollouts.for_each(ConcatBatches(4096))                # -> Batches
    train = train.for_each(TrainOneStep(learner))                 # -> TrainResult

Nothing runs while a plan is built: pulling an item from the last iterator pulls from the ones
before it. The kinds are checked when the plan is built: an operator fed another kind than it
takes is a ``TypeError`` naming both and the fix, and :class:`StandardMetricsReporting` (the end
of every plan) refuses a plan without a training step. A plain function in ``for_each`` is
allowed (its items are of any kind; the next operator checks them as they come).

An iterator may yield :data:`NOT_READY` when it has nothing to give now (an idle worker set, a
replay the controller does not allow yet): ``for_each`` passes it on, :class:`Concurrently`
moves on to its next input, and the learner's loop stops once nothing is pending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["NOT_READY", "PlanIterator", "Operator", "Batches", "ReplaySample", "Gradients",
           "TrainResult", "Concurrently", "StandardMetricsReporting", "kind_name"]


class _NotReady:
    """The item of an iterator that has nothing to give now."""

    def __repr__(self) -> str:
        return "NOT_READY"


#: What an iterator yields when it has nothing to give now (never passed to an operator).
NOT_READY = _NotReady()


class Batches(list):
    """Rollout batches that travel together (a bulk-synchronous round, or ``ConcatBatches``'
    result): a list of :class:`~stagerl.distributed.batches.RolloutBatch`, in worker order."""

    @property
    def env_steps(self) -> int:
        return sum(batch.env_steps for batch in self)


class ReplaySample:
    """One sample of the central trajectory, as its controller allows it (``item``: what
    iterating the trajectory gives, e.g. a DQN burst)."""

    __slots__ = ("item",)

    def __init__(self, item: Any):
        self.item = item


class Gradients:
    """Gradients a worker computed on its own rollout (A3C): ``batch`` is that rollout's
    :class:`~stagerl.distributed.batches.RolloutBatch` (its ``version`` the weights the worker
    held), ``gradients`` what ``compute_gradients`` returned there."""

    __slots__ = ("batch", "gradients")

    def __init__(self, batch: Any, gradients: Any):
        self.batch, self.gradients = batch, gradients


class TrainResult(dict):
    """What a training step reports (``trained``: whether the weights changed, the version
    after it, the env steps so far, and the operator's own figures)."""


def kind_name(kind: Any) -> str:
    return "any item" if kind is object else getattr(kind, "__name__", str(kind))


class Operator:
    """Base of the typed operators: ``takes`` (the kinds of item it accepts), ``gives`` (the
    kind it yields; ``None``: the kind it was given) and ``__call__(item)``. Calling one with
    another kind of item is a ``TypeError`` saying what it takes; ``trains`` marks a training
    step."""

    takes: tuple = (object,)
    gives: Any = None
    trains = False
    #: what to put before it when given another kind (the message's fix)
    hint = ""

    def check(self, kind: Any, source: str) -> Any:
        """The kind this operator yields when fed ``kind`` (from ``source``); ``TypeError``
        when it does not take that kind."""
        if kind is not object and not any(issubclass(kind, t) for t in self.takes):
            wanted = " or ".join(kind_name(t) for t in self.takes)
            raise TypeError(f"{self!r} takes {wanted}, got {kind_name(kind)} items from "
                            f"{source}{'; ' + self.hint if self.hint else ''}")
        return kind if self.gives is None else self.gives

    def check_item(self, item: Any) -> None:
        if not isinstance(item, self.takes):
            wanted = " or ".join(kind_name(t) for t in self.takes)
            raise TypeError(f"{self!r} takes {wanted}, got {item!r} of type "
                            f"{type(item).__name__}{'; ' + self.hint if self.hint else ''}")

    def __call__(self, item: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PlanIterator:
    """A lazy iterator of a plan: ``kind`` is the kind of its items, ``source`` says where
    they come from, ``stages`` the operators and iterators it is made of (for the checks).

    Example:
        >>> items = PlanIterator(iter([1, 2, 3]), int, "numbers")
        >>> list(items.for_each(lambda x: 10 * x))
        [10, 20, 30]
    """

    def __init__(self, items: Iterator, kind: Any = object, source: str = "an iterator",
                 stages: tuple = ()):
        self._items, self.kind, self.source, self.stages = items, kind, source, stages

    def for_each(self, operator: Callable) -> PlanIterator:
        """An iterator of ``operator(item)`` for each item (:data:`NOT_READY` passed on)."""
        if isinstance(operator, Operator):
            kind = operator.check(self.kind, self.source)
        elif callable(operator):
            kind = object  # a plain function's items: checked by the next operator
        else:
            raise TypeError(f"for_each takes an operator or a function, got {operator!r}")
        name = repr(operator) if isinstance(operator, Operator) else \
            getattr(operator, "__name__", repr(operator))
        return PlanIterator(_each(self, operator), kind, f"{self.source}.for_each({name})",
                            (*self.stages, operator))

    def __iter__(self) -> PlanIterator:
        return self

    def __next__(self) -> Any:
        return next(self._items)

    def trains(self) -> bool:
        """Whether a training step is among its stages."""
        return any(getattr(s, "trains", False) or (isinstance(s, PlanIterator) and s.trains())
                   for s in self.stages)

    def __repr__(self) -> str:
        return f"PlanIterator({self.source}, items: {kind_name(self.kind)})"


def _each(source: PlanIterator, operator: Callable) -> Iterator:
    check = operator.check_item if isinstance(operator, Operator) else None
    for item in source:
        if item is NOT_READY:
            yield item
            continue
        if check is not None:
            check(item)
        yield operator(item)


def Concurrently(iterators: list, mode: str = "round_robin", output_indexes: list | None = None,
                 round_robin_weights: list | None = None, learner: Any = None) -> PlanIterator:
    """One iterator that runs several, interleaved (RLlib's ``Concurrently``).

    ``mode="round_robin"``: take ``round_robin_weights[i]`` items from iterator ``i`` in turn
    (default 1 each; ``"*"``: as many as it has ready, until it gives :data:`NOT_READY`), so
    the ratio of their work is fixed. ``mode="async"``: take whichever has an item ready, none
    waited for while another has one (the learner's workers are then polled without blocking,
    and it waits for any of them only when no iterator has anything). ``output_indexes``: yield
    the items of those iterators only (the others run for their side effects).

    Example:
        >>> a, b = PlanIterator(iter("abc"), str, "a"), PlanIterator(iter("xyz"), str, "b")
        >>> list(Concurrently([a, b], round_robin_weights=[1, 2]))
        ['a', 'x', 'y', 'b', 'z', 'c']
    """
    iterators = list(iterators)
    if not iterators or not all(isinstance(i, PlanIterator) for i in iterators):
        raise TypeError(f"Concurrently takes a list of plan iterators, got {iterators!r}")
    if mode not in ("round_robin", "async"):
        raise ValueError(f"Concurrently's mode must be 'round_robin' or 'async', got "
                         f"mode={mode!r}")
    n = len(iterators)
    outputs = list(range(n)) if output_indexes is None else list(output_indexes)
    if not outputs or any(not isinstance(i, int) or not 0 <= i < n for i in outputs):
        raise ValueError(f"output_indexes must name some of the {n} iterators (0 to {n - 1}), "
                         f"got output_indexes={output_indexes!r}")
    weights = [1] * n if round_robin_weights is None else list(round_robin_weights)
    if mode == "async" and round_robin_weights is not None:
        raise ValueError("round_robin_weights are for mode='round_robin'; mode='async' takes "
                         "whatever is ready")
    if len(weights) != n or any(w != "*" and (isinstance(w, bool) or not isinstance(w, int)
                                              or w < 1) for w in weights):
        raise ValueError(f"round_robin_weights must give each of the {n} iterators an int >= 1 "
                         f"or '*', got round_robin_weights={round_robin_weights!r}")
    kinds = {iterators[i].kind for i in outputs}
    kind = kinds.pop() if len(kinds) == 1 else object
    source = f"Concurrently([{', '.join(i.source for i in iterators)}], mode={mode!r})"
    items = _round_robin(iterators, weights, set(outputs)) if mode == "round_robin" else \
        _async(iterators, set(outputs), learner)
    return PlanIterator(items, kind, source, tuple(iterators))


_DONE = object()  # an input that has ended (a finite iterator)


def _round_robin(iterators: list, weights: list, outputs: set) -> Iterator:
    done: set = set()
    while len(done) < len(iterators):
        idle = 0
        for i, (iterator, weight) in enumerate(zip(iterators, weights, strict=True)):
            taken = 0
            while i not in done and (weight == "*" or taken < weight):
                item = next(iterator, _DONE)
                if item is _DONE:
                    done.add(i)
                elif item is NOT_READY:
                    break
                else:
                    taken += 1
                    if i in outputs:
                        yield item
            idle += taken == 0
        if idle == len(iterators) and len(done) < len(iterators):
            yield NOT_READY


def _async(iterators: list, outputs: set, learner: Any) -> Iterator:
    done: set = set()
    while len(done) < len(iterators):
        progressed = False
        for i, iterator in enumerate(iterators):
            if i in done:
                continue
            if learner is not None:
                learner.blocking = False
            try:
                item = next(iterator, _DONE)
            finally:
                if learner is not None:
                    learner.blocking = True
            if item is _DONE:
                done.add(i)
                continue
            if item is NOT_READY:
                continue
            progressed = True
            if i in outputs:
                yield item
        if not progressed and len(done) < len(iterators):
            if learner is not None and learner.has_pending():
                learner.wait_any()  # nothing ready anywhere: wait for a worker
            else:
                yield NOT_READY


def StandardMetricsReporting(train: PlanIterator, learner: Any) -> PlanIterator:
    """The end of a plan (RLlib's): yields the learner's running figures after each item of
    ``train`` (``env_steps``, ``versions``, ``batches``, ``episodes``); refuses, when built, a
    plan without a training step."""
    if not isinstance(train, PlanIterator):
        raise TypeError(f"StandardMetricsReporting takes the plan's last iterator, got "
                        f"{train!r}")
    if not train.trains():
        raise ValueError(
            f"the plan {train.source} never trains: nothing in it changes the weights; end it "
            f"with TrainOneStep(learner) (after ParallelRollouts/ConcatBatches or Replay) or "
            f"ApplyGradients(learner) (after AsyncGradients)")

    def metrics() -> Iterator:
        for item in train:
            yield item if item is NOT_READY else learner.running_figures()

    return PlanIterator(metrics(), dict, f"StandardMetricsReporting({train.source})", (train,))
