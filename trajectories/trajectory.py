"""`Trajectory`: a container (in an `EpisodesBuffer`), a sampler and a controller.

Pushing counts transitions with the controller; iterating yields batches while the controller
allows::

    for batch in trajectory:      # while container non-empty and controller.on_sample()
        learn(batch)              #   -> sampler.sample(container)

A push goes ``Trajectory.push`` -> ``container.push_function(keys)`` (the one function per set
of pushed names, built and kept by the container: the episode rules bound to the traces'
writes, `EpisodesBuffer.push_function`) -> the numpy writes (`Traces.write_function`). A
trajectory for a vector env keeps one lane per sub-env (`split_lanes`); it may learn that from
its first push, which is the only push that asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trajectories._push_helpers import lane_axis_values, lanes_of_first_push, split_truncated
from trajectories._step_push import compile_step_push
from trajectories.controllers import InsertSampleRatioController
from trajectories.episodes import EpisodesBuffer
from trajectories.lanes.base import LanedEpisodesBuffer
from trajectories.lanes.factory import lane_storage
from trajectories.lanes.ring_step import ring_step_push, values_push
from trajectories.nested import first_leaf
from trajectories.samplers import DummySampler

__all__ = ["Trajectory", "split_lanes"]

# (lane, n_lanes) -> the bool mask of that lane, shared: laned pushes only read it.
_LANE_MASKS: dict = {}


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
    # The next push decides whether the trajectory stores lanes (see `split_lanes`).
    _lanes_pending: bool = field(default=False, init=False, repr=False)
    # Whether the traces store ``truncated``; else a push's ``truncated`` is the controller's.
    _stores_truncated: bool = field(default=False, init=False, repr=False)
    # The lane one env's pushes go to (see `use_lane`); None: a push carries every lane.
    _lane: object = field(default=None, init=False, repr=False)
    # A push takes a detour: the first push (see `_lanes_pending`) or one env's values for
    # `_lane`. One flag, so that the common push pays one check for both.
    _detour: bool = field(default=False, init=False, repr=False)
    # (container, {names: specs}): how `_into_lane` gives one env's values a lane axis.
    _lane_axis_specs: tuple = field(default=(None, None), init=False, repr=False)

    def __post_init__(self):
        c = self.container
        # Containers that track episodes themselves (an EpisodesBuffer, or lanes) are kept as
        # they are: their `push_function(keys)(row)` returns the transitions inserted.
        if not isinstance(c, EpisodesBuffer) and not (
                hasattr(c, "push_function") and hasattr(c, "is_sampleable_at")):
            self.container = c = EpisodesBuffer(c)
        if self.sampler is None:
            self.sampler = DummySampler()
        if self.controller is None:
            self.controller = InsertSampleRatioController()
        for name, needs in (("sampler", "sample"), ("controller", "on_sample")):
            if not hasattr(getattr(self, name), needs):
                raise TypeError(f"Trajectory {name}= needs a {needs}() method, got "
                                f"{type(getattr(self, name)).__name__}")
        self._stores_truncated = "truncated" in c.keys()
        # Vector envs: split into lanes now when told (n_lanes=) or given lanes, else at the
        # first push when it carries one state per sub-env.
        if isinstance(c, LanedEpisodesBuffer):
            if self.n_lanes not in (None, c.n_lanes):
                raise ValueError(f"n_lanes={self.n_lanes} but the container has {c.n_lanes} lanes")
            self.n_lanes = c.n_lanes
        elif self.n_lanes is not None:
            split_lanes(self, self.n_lanes)
        else:
            self._lanes_pending = "state" in c.keys() and not len(np.asarray(c.step_numbers))
        self._sync_detour()

    def _sync_detour(self) -> None:
        self._detour = self._lanes_pending or self._lane is not None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_lane_axis_specs", None)  # a cache, rebuilt on use
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lane_axis_specs = (None, None)
        self._sync_detour()  # a copy saved before the flag existed takes its detours too

    def push(self, **step) -> None:
        """Push one step, an episode's first state or ``next_action`` (see `EpisodesBuffer`);
        a full step counts one insert with the controller (``on_insert(1, step)``).

        ``truncated=True`` with a step says a time limit ended the episode there: the
        controller sees it (an `EpisodeSampleRatioController` counts the episode as finished),
        the transition stays bootstrapped (``terminal`` is what it is), and nothing is stored
        unless the traces have a ``truncated`` trace.

        A laned trajectory (see `split_lanes`) takes one value per lane, with optional
        ``episode_start=``, ``lanes=`` and ``restart=`` (see `LanedEpisodesBuffer.push`), and
        counts one insert per lane that got a step. After ``use_lane(k)`` it takes one env's
        values and writes lane ``k`` alone (see `use_lane`)."""
        self.push_row(step)

    def push_row(self, step: dict) -> None:
        """``push(**step)`` for a ``step`` already in a dict, which is not changed or kept."""
        if self._detour:
            if self._lane is None:  # the first push: one state per sub-env makes lanes
                self._push_first(step)
                return
            step = self._into_lane(step)
            if step is None:
                return
        row = step
        if "truncated" in step and not self._stores_truncated:  # the controller's alone
            row = {k: v for k, v in step.items() if k != "truncated"}
        container = self.container
        n = container.push_function(tuple(row))(row)
        if n:
            self.controller.on_insert(n, step if self.n_lanes is None else container.inserted(step))

    def push_function(self, keys: tuple):
        """``push(step)``: `push_row` for steps of exactly the names ``keys`` (in that order),
        the container's function for them looked up once, not per push. It follows the
        trajectory (a first push making lanes, `use_lane`, a new container) as `push_row` does.

        Example:
            >>> from trajectories import CircularArraySARTSTraces
            >>> t = Trajectory(CircularArraySARTSTraces(capacity=10))
            >>> t.push(state=0)
            >>> push_step = t.push_function(("state", "action", "reward", "terminal"))
            >>> for s in (1, 2):
            ...     push_step({"state": s, "action": 1, "reward": 1.0, "terminal": s == 2})
            >>> t["state"].tolist(), t["next_state"].tolist(), t.controller.n_inserted
            ([0, 1], [1, 2], 2)
        """
        keys, found = tuple(keys), [None, None]  # the container, its function for ``keys``
        names_truncated = "truncated" in keys

        def push_step(step: dict) -> None:
            if self._detour or (names_truncated and not self._stores_truncated):
                return self.push_row(step)
            container = self.container
            if found[0] is not container:
                found[:] = container, container.push_function(keys)
            n = found[1](step)
            if n:
                self.controller.on_insert(
                    n, step if self.n_lanes is None else container.inserted(step))

        return push_step

    def push_values_function(self, keys: tuple):
        """``push(*values)``: `push_function` for the values of ``keys`` given in that order,
        without a dict. The common step (a running episode of an `EpisodesBuffer` of rings, or
        a vector step into lane-major rings, ``episode_start`` allowed as the last name) is one
        function (`trajectories._step_push`, `trajectories.lanes.ring_step`); anything else
        goes through `push_function` with the same values.

        Example:
            >>> from trajectories import CircularArraySARTSTraces
            >>> t = Trajectory(CircularArraySARTSTraces(capacity=10))
            >>> t.push(state=0)
            >>> push_step = t.push_values_function(("state", "action", "reward", "terminal"))
            >>> push_step(1, 1, 1.0, False); push_step(2, 0, 0.5, True)
            >>> t["next_state"].tolist(), t["reward"].tolist(), t.controller.n_inserted
            ([1, 2], [1.0, 0.5], 2)
        """
        keys = tuple(keys)
        general = self.push_function(keys)
        fused = compile_step_push(self, keys, general) or ring_step_push(self, keys, general)
        return fused if fused is not None else values_push(keys, general)

    def _push_first(self, step: dict) -> None:
        """The first push: one state per sub-env splits the trajectory into lanes. A push that
        raises leaves the trajectory as it was (no lanes), still waiting for its first push."""
        container = self.container
        n = lanes_of_first_push(container, step)
        self._lanes_pending = self._detour = False
        try:
            if n is not None:
                split_lanes(self, n)
                self.container.inferred_from = np.shape(first_leaf(step["state"]))
            self.push(**step)
        except Exception as laned_error:
            # A failed push changes nothing, lanes included: the trajectory waits again.
            self.container, self.n_lanes, self._lanes_pending = container, None, True
            self._detour = True
            if n is None or not isinstance(laned_error, (TypeError, ValueError)):
                raise
            # The lanes were a guess: say what is wrong with the push taken as one env's step
            # (a state of the wrong shape or dtype for its trace, most likely).
            self._lanes_pending = self._detour = False
            try:
                self.push(**step)
            except (TypeError, ValueError) as single_error:
                self._lanes_pending = self._detour = True
                raise single_error from laned_error
            # it fitted one env after all

    def extend(self, lane: int | None = None, *, new_episode: bool = True, **columns) -> int:
        """Insert many steps at once (see `EpisodesBuffer.extend`; into one ``lane`` of a laned
        trajectory); the controller counts the ``T`` transitions in one
        ``on_insert(T, columns)`` call. Returns ``T``.

        ``truncated`` (one flag per step) says which steps a time limit ended, as with `push`:
        the controller sees it, nothing is stored unless the traces have a ``truncated``
        trace."""
        stored = split_truncated(columns, self.container.keys())
        if self.n_lanes is None:
            if lane is not None:
                raise TypeError(f"extend(lane={lane!r}, ...) needs a trajectory with lanes "
                                f"(see split_lanes); this one stores a single env")
            n = self.container.extend(new_episode=new_episode, **stored)
            self._lanes_pending = False  # it holds one env's steps now
            self._sync_detour()
        else:
            if lane is None:
                raise TypeError(f"extend(lane, ...) of a trajectory with {self.n_lanes} lanes "
                                f"needs the lane to insert into")
            n = self.container.extend(lane, new_episode=new_episode, **stored)
        if n:
            self.controller.on_insert(n, columns)
        return n

    @property
    def lane(self) -> int | None:
        """The lane one env's pushes go to (see `use_lane`); None: a push carries every lane."""
        return self._lane

    def use_lane(self, lane: int | None) -> None:
        """Make ``push`` take one env's values (no lane axis) and write them into ``lane`` of
        this laned trajectory alone, until ``use_lane(None)`` (or another lane).

        For producers that take turns on one laned trajectory, each acting in one env: the
        players of a game played by one agent (one lane each, so that no sample mixes their
        turns). Their code pushes as for a single env; whoever runs them points the trajectory
        at the acting one's lane. A push into a lane follows that lane's episodes as a vector
        env's sub-env does: a first state starts a new episode there (a first state left alone
        before it, a step never taken, is dropped: ``restart=True``), a step is that lane's
        step, and a ``next_action`` completion of a lane with no step in its episode has
        nothing to complete and is dropped.

        Example:
            >>> from trajectories import CircularArraySARTSTraces
            >>> t = split_lanes(Trajectory(CircularArraySARTSTraces(capacity=8)), 2)
            >>> for lane, first in ((0, 10), (1, 20)):
            ...     t.use_lane(lane)
            ...     t.push(state=first)
            ...     t.push(state=first + 1, action=0, reward=1.0, terminal=False)
            >>> t.container.lane_lengths(), t["state"].tolist(), t["next_state"].tolist()
            ([1, 1], [10, 20], [11, 21])
        """
        if lane is not None:
            if not isinstance(self.container, LanedEpisodesBuffer):
                raise TypeError(f"use_lane({lane!r}) needs a trajectory with lanes (see "
                                "split_lanes); this one stores a single env")
            lane = self.container._lane(lane)
        self._lane = lane
        self._sync_detour()

    def _into_lane(self, step: dict) -> dict | None:
        """One env's ``step`` as a laned push into ``_lane`` (``None``: nothing to push)."""
        lane, n = self._lane, self.n_lanes
        lanes = _LANE_MASKS.get((lane, n))
        if lanes is None:
            lanes = np.arange(n) == lane
            lanes.flags.writeable = False
            lanes = _LANE_MASKS.setdefault((lane, n), lanes)
        if n == 1:  # a view with a lane axis: ~0.3 us
            row = {name: np.asarray(value)[np.newaxis] for name, value in step.items()}
        else:  # arrays of the traces' dtypes (or broadcast views) with every lane's value
            specs = self._lane_axis_specs
            if specs[0] is not self.container:  # the specs of this container's traces
                specs = self._lane_axis_specs = (self.container, {})
            row = lane_axis_values(self.container, specs[1], step)
        if "action" in step:
            row["lanes"] = lanes
        elif "next_action" in step:
            if not self.container.running_lanes()[lane]:
                return None
            row["lanes"] = lanes
        else:
            row["lanes"], row["restart"] = lanes, True
        return row

    def clear(self, *, keep_running_episodes: bool = False) -> None:
        """Remove every stored row; the controller's counts stay.

        With ``keep_running_episodes=True`` every episode still running (in every lane of a
        laned trajectory) keeps its newest state as the first state of what comes next: the
        next step continues the episode from it, and a push that starts a new episode there
        (``episode_start``, or a partial push) replaces it. In SARTSA layouts the row still
        waiting for its next action stays too, to be completed and sampled after the clear.
        That is how an on-policy learner starts a fresh rollout while the env's episodes go on
        (see ``docs/trajectories.md``)."""
        self.container.clear(keep_running_episodes=keep_running_episodes)

    def __iter__(self):
        # An empty container never consumes a sample; a count-free would_sample goes first.
        would = getattr(self.controller, "would_sample", None)
        while (would is None or would()) and len(self.container) > 0 \
                and self.controller.on_sample():
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


def split_lanes(target, n_lanes: int):
    """Store ``n_lanes`` lanes (one per sub-env of a vector env): a `Trajectory` becomes laned,
    traces become laned storage.

    Given empty traces (or an empty `EpisodesBuffer`), returns a `LanedEpisodesBuffer` over
    their layout that suits them: lane-major rings (`RingLanes`) for plain ring layouts with one
    state multiplex, else one `EpisodesBuffer` per lane (`PerLaneEpisodes`); the total capacity
    is split over the lanes.

    Given an empty `Trajectory`, its container becomes that storage and ``trajectory.push``
    takes one value per lane, with optional ``episode_start=`` and ``lanes=`` (see
    `LanedEpisodesBuffer.push`); the controller counts one insert per lane that got a step.
    ``trajectory.extend(lane, ...)`` bulk-inserts into one lane. Asking again for the same
    number of lanes does nothing. Returns the trajectory.

    Example:
        >>> import numpy as np
        >>> from trajectories import CircularArraySARTSTraces
        >>> t = split_lanes(Trajectory(CircularArraySARTSTraces(capacity=100)), 2)
        >>> t.push(state=np.array([0, 10]))
        >>> t.push(state=np.array([1, 11]), action=np.array([0, 0]), reward=np.zeros(2),
        ...        terminal=np.array([False, False]))
        >>> len(t), t.controller.n_inserted, t.container.n_lanes
        (2, 2, 2)
        >>> type(split_lanes(CircularArraySARTSTraces(capacity=100), 2)).__name__
        'RingLanes'
    """
    if not isinstance(target, Trajectory):
        return lane_storage(target, n_lanes)
    container = target.container
    if isinstance(container, LanedEpisodesBuffer):
        if container.n_lanes != n_lanes:
            raise ValueError(f"the trajectory already stores {container.n_lanes} lanes, got "
                             f"n_lanes={n_lanes}; use one trajectory per vector env")
        return target
    if len(np.asarray(container.step_numbers)):
        raise ValueError(f"split_lanes needs an empty trajectory, this one holds "
                         f"{len(container)} rows; split it before the first push")
    laned = lane_storage(container, n_lanes)
    target.container, target.n_lanes, target._lanes_pending = laned, laned.n_lanes, False
    target._sync_detour()
    return target
