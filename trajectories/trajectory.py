"""`Trajectory`: a container (in an `EpisodesBuffer`), a sampler and a controller.

Pushing counts transitions with the controller; iterating yields batches while the controller
allows::

    for batch in trajectory:      # while container non-empty and controller.on_sample()
        learn(batch)              #   -> sampler.sample(container)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from trajectories.controllers import InsertSampleRatioController
from trajectories.episodes import EpisodesBuffer
from trajectories.lanes.trajectory import (
    restore_lanes,
    split_truncated,
    watch_lanes,
    watching_first_push,
)
from trajectories.samplers import DummySampler

__all__ = ["Trajectory"]


def _without_truncated(inner, step: dict):
    return inner({k: v for k, v in step.items() if k != "truncated"})


@dataclass(eq=False)
class Trajectory:
    """Experience storage that knows when learning may sample and how.

    Args:
        container: traces (wrapped in an `EpisodesBuffer` unless they are one).
        sampler: builds a batch from the container (default `DummySampler()`: the container).
        controller: decides how many batches inserts allow
            (default `InsertSampleRatioController()`).
        n_lanes: the number of sub-envs of a vector env, one lane each (see `split_lanes`);
            by default learned from the first push (a ``state`` with one more leading axis
            than the state trace's frames), or a single env.

    Example:
        >>> import numpy as np
        >>> from trajectories import CircularArraySARTSTraces, BatchSampler
        >>> from trajectories.controllers import InsertSampleRatioController
        >>> t = Trajectory(CircularArraySARTSTraces(capacity=100),
        ...                BatchSampler(4, rng=0), InsertSampleRatioController(threshold=3))
        >>> t.push(state=0)                                  # an episode's first state
        >>> for s in range(1, 4):
        ...     t.push(state=s, action=1, reward=1.0, terminal=s == 3)
        >>> [batch["state"].shape for batch in t]            # (3 - 3) * 1 + 1 batches
        [(4,)]
        >>> t.extend(state=np.arange(10, 16), action=np.ones(5, dtype=np.int64),
        ...          reward=np.zeros(5), terminal=[0, 0, 0, 0, 1])
        5
        >>> len(t), t.controller.n_inserted, len(list(t))
        (9, 8, 5)
    """

    container: object
    sampler: object = None
    controller: object = None
    n_lanes: object = None
    _handlers: dict = field(init=False, repr=False)
    _container_handler: object = field(init=False, repr=False)

    def __post_init__(self):
        c = self.container
        # Containers that track episodes themselves (an EpisodesBuffer, or one EpisodesBuffer
        # per sub-env lane) are kept as they are: `_push_row(row)` returns the transitions.
        if not isinstance(c, EpisodesBuffer) and not (
                hasattr(c, "_push_row") and hasattr(c, "is_sampleable_at")):
            self.container = c = EpisodesBuffer(c)
        if self.sampler is None:
            self.sampler = DummySampler()
        if self.controller is None:
            self.controller = InsertSampleRatioController()
        for name, needs in (("sampler", "sample"), ("controller", "on_sample")):
            if not hasattr(getattr(self, name), needs):
                raise TypeError(f"Trajectory {name}= needs a {needs}() method, got "
                                f"{type(getattr(self, name)).__name__}")
        self._bind()
        # Vector envs: split into lanes now when told (n_lanes=), else at the first push when it
        # carries one state per sub-env. Only instance attributes change: `push` stays as is.
        watch_lanes(self)

    def _bind(self) -> None:
        # The per-step path: the container's handler per key set, looked up here directly.
        c = self.container
        if isinstance(c, EpisodesBuffer):
            self._handlers, self._container_handler = c._handlers, c._handler
        else:
            self._handlers, self._container_handler = {}, self._container_push
        self._dropping = {}  # keys with "truncated" -> a handler that drops it

    def _container_push(self, keys: tuple):
        return self.container._push_row

    def __getstate__(self):
        # Handlers (compiled code among them) and the installed push are rebuilt on load.
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_handlers", "_container_handler", "_dropping", "push", "extend")}
        state["_watching_first_push"] = watching_first_push(self)
        return state

    def __setstate__(self, state):
        state = dict(state)
        first_push = state.pop("_watching_first_push")
        self.__dict__.update(state)
        self._bind()
        restore_lanes(self, first_push)

    def _new_handler(self, keys: tuple):
        """The container's push handler for ``keys``; ``truncated`` is the controller's alone
        (unless the traces store it): the handler drops it before the container sees the step."""
        if "truncated" not in keys or "truncated" in self.container.keys():
            return self._container_handler(keys)
        handler = self._dropping.get(keys)
        if handler is None:
            handler = partial(_without_truncated,
                              self._container_handler(tuple(k for k in keys if k != "truncated")))
            if len(self._dropping) < 64:
                self._dropping[keys] = handler
        return handler

    def push(self, **step) -> None:
        """Push one step, an episode's first state or ``next_action`` (see `EpisodesBuffer`);
        a full step counts one insert with the controller (``on_insert(1, step)``).

        ``truncated=True`` with a step says a time limit ended the episode there: the
        controller sees it (an `EpisodeSampleRatioController` counts the episode as finished),
        the transition stays bootstrapped (``terminal`` is what it is), and nothing is stored
        unless the traces have a ``truncated`` trace."""
        handler = self._handlers.get(tuple(step))
        if handler is None:
            handler = self._new_handler(tuple(step))
        n = handler(step)
        if n:
            self.controller.on_insert(n, step)

    def extend(self, *, new_episode: bool = True, **columns) -> int:
        """Insert many steps at once (see `EpisodesBuffer.extend`); the controller counts the
        ``T`` transitions in one ``on_insert(T, columns)`` call. Returns ``T``.

        ``truncated`` (one flag per step) says which steps a time limit ended, as with `push`:
        the controller sees it, nothing is stored unless the traces have a ``truncated``
        trace."""
        stored = split_truncated(columns, self.container.keys())
        n = self.container.extend(new_episode=new_episode, **stored)
        if n:
            self.controller.on_insert(n, columns)
        return n

    def __iter__(self):
        # Emptiness is checked first: an empty container never consumes a controller sample.
        while len(self.container) > 0 and self.controller.on_sample():
            yield self.sampler.sample(self.container)

    def sample(self):
        """One batch, ignoring the controller."""
        return self.sampler.sample(self.container)

    def __len__(self) -> int:
        return len(self.container)

    def __getitem__(self, key):
        return self.container[key]

    def keys(self) -> tuple:
        return self.container.keys()

    def set_priority(self, keys, values) -> None:
        self.container.set_priority(keys, values)
