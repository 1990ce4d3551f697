"""`EpisodesBuffer`: traces plus per-state episode bookkeeping, so no sample crosses episodes.

Entry ``i`` of the metadata belongs to stored state ``i`` and describes row ``i`` (the
transition leaving that state)::

    push state=0, 2 steps, state=3 (new episode), 1 step:

    states            0  1  2 | 3  4           (| = episode boundary)
    row i             0->1  1->2  2->3  3->4   (row 2 is padding: 2 is a last state)
    sampleable_inds   1  1  0   1  0
    step_numbers      1  2  3   1  2
    episodes_lengths  2  2  2   1  1

The kinds of push (an episode's first state, a step, a ``next_action`` completion) and which
may come when are the rules of `trajectories._episode_rules`; ``docs/trajectories.md`` explains
them with the metadata.

Writes go only through the traces' push, pad and append (wrappers hook those), after every rule
was checked; the metadata update cannot fail, so a push that raises leaves traces and metadata
exactly as they were. The metadata follows the states' ring: when a push drops the oldest state
(the lockstep of `Traces`), it drops its oldest entry.

Samplers use ``is_sampleable_at(idx)``, ``step_number_at(idx)``, ``episode_length_at(idx)``,
``rows_ahead_at(idx)``, ``rows_behind_at(idx)`` (idx: int64 row indices), ``n_sampleable``
(O(1)) and ``sampleable_indices()`` (O(n)).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from trajectories._episode_bulk import extend as extend_episodes
from trajectories._episode_meta import EpisodeMeta
from trajectories._episode_rules import (
    COMPLETED,
    COMPLETION,
    EMPTY,
    FULL,
    KEPT,
    PARTIAL,
    STARTED,
    STEP_PHASES_FROM,
    STEPPING,
    EpisodeRules,
    classify_push,
)
from trajectories.traces import Traces, frame_capacity, write_function_of

__all__ = ["EpisodesBuffer"]

_NO_ROWS = np.zeros(0, dtype=np.int64)


class EpisodesBuffer:
    """Wraps traces and tracks which rows are complete transitions inside one episode.

    Args:
        traces: empty traces (a preset, a `Traces`, or a wrapper of one).

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=10))
        >>> eb.push(state=0)
        >>> for s in (1, 2):
        ...     eb.push(state=s, action=1, reward=0.0, terminal=s == 2)
        >>> eb.push(state=3)                       # a new episode
        >>> eb.push(state=4, action=0, reward=1.0, terminal=True)
        >>> eb.sampleable_inds.astype(int).tolist(), eb.step_numbers.tolist()
        ([1, 1, 0, 1, 0], [1, 2, 3, 1, 2])
        >>> eb.episodes_lengths.tolist()
        [2, 2, 2, 1, 1]
        >>> len(eb), int(eb[3]["next_state"])
        (4, 4)
    """

    def __init__(self, traces):
        if isinstance(traces, EpisodesBuffer):
            raise TypeError("EpisodesBuffer got an EpisodesBuffer; pass its traces instead")
        for attr in ("keys", "slots", "capacity", "push", "pad", "append", "take", "pop"):
            if not hasattr(traces, attr):
                raise TypeError(f"EpisodesBuffer needs traces (a Traces or preset), got "
                                f"{type(traces).__name__} without {attr!r}")
        if len(traces) != 0 or (isinstance(traces, Traces) and any(len(b) for b in traces._bufs)):
            raise ValueError(f"EpisodesBuffer needs empty traces, got {len(traces)} rows; "
                             f"pass traces.empty_copy() or clear them first")
        self.traces = traces
        slots = tuple(tuple(s) for s in traces.slots)
        self._slots = slots
        self._slot_of = {name: i for i, s in enumerate(slots) for name in s}
        self._completion = next((s[1] for s in slots if len(s) == 2 and s[1] == "next_action"),
                                None)
        self._multiplexed = any(len(s) == 2 for s in slots)
        self._rules = EpisodeRules(self._multiplexed, self._completion)
        # Slots a partial push may name: the state-like multiplexes (not the action one).
        self._state_like = {i for i, s in enumerate(slots)
                            if len(s) == 2 and s[1] != self._completion}
        if not self._multiplexed:
            self._state_like = set(range(len(slots)))
        self._meta = EpisodeMeta(self._entries_capacity())
        self._phase = EMPTY
        # Which entry a full step marks sampleable (places before the end; 0: none), from the
        # episode's second step on / before it. See _push.
        self._back_late, self._back_early = (1, 1) if self._completion is None else (2, 0)
        self._push_functions = {}  # tuple(row keys) -> push(row), see push_function

    def _entries_capacity(self):
        """One metadata entry per stored state: the capacity of the states' ring (of the rows
        without a state multiplex)."""
        cap = self.traces.capacity
        if not self._multiplexed or not math.isfinite(cap):
            return cap
        states = next(s for s in self._slots if len(s) == 2)[0]
        found = frame_capacity(self.traces, states)
        return found if found is not None else cap + 1 + (self._completion is not None)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_push_functions"] = {}  # compiled code does not pickle: rebuilt on first use
        return state

    # -- push -----------------------------------------------------------------------------------
    def push_function(self, keys: tuple):
        """``push(row) -> transitions inserted (1 or 0)`` for rows of exactly these names.

        Built once per key set and kept here (the one cache between `Trajectory.push` and the
        numpy write): the kind of push the names make (`classify_push`) bound to the traces'
        ``write(row)`` for those names (`Traces.write_function`). Unknown or clashing names
        raise here, before anything is written."""
        fn = self._push_functions.get(keys)
        if fn is None:
            fn = self._new_push_function(keys)
        return fn

    def _new_push_function(self, keys: tuple):
        kind = classify_push(keys, self._slot_of, self._slots, self._state_like, self._completion)
        write = write_function_of(self.traces, keys)
        pad = write_function_of(self.traces, keys, pad=True) if kind == PARTIAL else None
        fn = partial(self._push, kind, write, pad)
        if kind == FULL:
            fn = self._step_function(write, fn)
        if len(self._push_functions) < 64:  # a layout sees a handful of key sets
            self._push_functions[keys] = fn
        return fn

    def push(self, **row) -> None:
        """Push one step (full), an episode's first state (partial) or ``next_action``."""
        self.push_function(tuple(row))(row)

    def _step_function(self, write, general):
        """``push(row)`` of a full step: the common case (a step in a running episode) here,
        one call, anything else through ``general`` (`_push`, every rule)."""
        meta = self._meta  # made once, in __init__: never replaced

        def push_step(row: dict) -> int:
            if self._phase < STEP_PHASES_FROM:
                return general(row)
            evict = write(row)  # raises before writing anything
            # The previous row is complete now; with next_action, the row before it (its next
            # action just arrived), which exists from the episode's second step on.
            step = meta.step
            meta.append(step + 1, self._back_late if step >= 2 else self._back_early, evict)
            self._phase = STEPPING
            return 1

        return push_step

    def _push(self, kind: int, write, pad, row: dict) -> int:
        # Every rule, for any traces (a full step in a running episode is `_step_function`'s).
        meta, phase = self._meta, self._phase
        if not self._rules.allowed[kind][phase]:
            raise self._rules.refusal(kind, phase)
        if kind == FULL:              # first push of a layout without multiplex
            meta.append(1, 0, write(row))
            self._phase = STEPPING
            return 1
        if kind == COMPLETION:
            self._complete(write(row))
            return 0
        self._start_episode(write, pad, row)
        return 0

    def _start_episode(self, write, pad, row: dict) -> None:
        """Push an episode's first state (``row``: the state-like values): into an empty
        buffer, in place of a kept state (see `clear`), or after the previous episode's last
        state, padding the row between them."""
        phase = self._phase
        if phase == KEPT:  # the buffer holds the kept state alone: no ring can overflow
            write(row)     # raises before writing anything
            self.traces.popleft()
            self._meta.clear()
            evict = False
        elif phase == EMPTY:
            evict = write(row)
        else:
            evict = pad(row)
            self._finish_episode()
        self._meta.append(1, 0, evict)
        self._phase = STARTED

    def extend(self, *, new_episode: bool = True, **columns) -> int:
        """Insert many steps at once; returns the number of transitions inserted.

        With ``new_episode=True`` (the default) the state-like columns (``state``, and
        ``legal_actions_mask`` in SLART layouts) carry ``T + 1`` rows, the episode's first state
        then the ``T`` next states, and the other columns ``T`` rows: the same as
        ``push(state=s[0])`` followed by ``T`` full pushes. With ``new_episode=False`` every
        column has ``T`` rows and the steps continue the current episode. In layouts with
        ``next_action``, ``next_action=a`` (one frame) completes the episode afterwards.
        Bookkeeping is exactly that of the equivalent single pushes; everything is validated
        before anything is written (see `trajectories._episode_bulk`).
        """
        return extend_episodes(self, new_episode, columns)

    def _complete(self, evict) -> None:
        """A ``next_action`` was pushed: the row before the newest state is complete. A full
        action ring dropped the oldest row everywhere (``evict``): the oldest entry goes too."""
        meta = self._meta
        if evict:
            meta.drop_first()
        meta.mark(2, True)
        self._phase = COMPLETED

    def _finish_episode(self) -> None:
        meta = self._meta
        step = meta.step
        meta.fill_lens(min(step, meta.n), step - 1)
        meta.mark(1, False)  # the boundary row (last state -> next first state)

    # -- read -----------------------------------------------------------------------------------
    def keys(self) -> tuple:
        return tuple(self.traces.keys())

    @property
    def slots(self) -> tuple:
        return self._slots

    @property
    def capacity(self):
        return self.traces.capacity

    def __len__(self) -> int:
        return len(self.traces)

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            n = len(self.traces)
            i = key + n if -n <= key < 0 else key
            if not 0 <= i < n or not self._meta.samp[self._meta.phys(i)]:
                raise IndexError(f"row {key} is not sampleable (an episode's last state, an "
                                 f"incomplete step or out of range for {n} rows)")
            return self.traces[i]
        return self.traces[key]

    def __iter__(self):
        for i in self.sampleable_indices():
            yield self.traces[int(i)]

    def take(self, name: str, idx: np.ndarray) -> np.ndarray:
        return self.traces.take(name, idx)

    def is_sampleable_at(self, idx: np.ndarray) -> np.ndarray:
        return self._meta.samp[self._meta.phys(idx)]

    def step_number_at(self, idx: np.ndarray) -> np.ndarray:
        return self._meta.steps[self._meta.phys(idx)]

    def episode_length_at(self, idx: np.ndarray) -> np.ndarray:
        meta = self._meta
        step = meta.step
        current = idx >= meta.n - min(step, meta.n)  # the episode still being collected
        return np.where(current, step - 1, meta.lens[meta.phys(idx)])

    def rows_ahead_at(self, idx: np.ndarray) -> np.ndarray:
        """For each row: how many rows from it on (itself included) are stored, complete
        transitions of its episode; how far an n-step return may follow it."""
        return np.minimum(self.episode_length_at(idx) - self.step_number_at(idx) + 1,
                          len(self.traces) - idx)

    def rows_behind_at(self, idx: np.ndarray) -> np.ndarray:
        """For each row: how many stored states of its episode end at its state (itself
        included); how many frames a stack ending there may take."""
        return np.minimum(self.step_number_at(idx), idx + 1)

    @property
    def n_sampleable(self) -> int:
        return self._meta.n_samp

    def sampleable_indices(self) -> np.ndarray:
        return np.flatnonzero(self._meta.logical(self._meta.samp))

    @property
    def sampleable_inds(self) -> np.ndarray:
        return self._meta.logical(self._meta.samp)

    @property
    def step_numbers(self) -> np.ndarray:
        return self._meta.logical(self._meta.steps)

    @property
    def episodes_lengths(self) -> np.ndarray:
        meta = self._meta
        out = meta.logical(meta.lens)
        step = meta.step
        if meta.n:
            out[meta.n - min(step, meta.n):] = step - 1
        return out

    def set_priority(self, keys, values) -> None:
        if not hasattr(self.traces, "set_priority"):
            raise TypeError(f"set_priority needs prioritized traces (CircularPrioritizedTraces), "
                            f"got {type(self.traces).__name__}")
        self.traces.set_priority(keys, values)

    # -- remove ---------------------------------------------------------------------------------
    def pop(self):
        """Remove the newest state and the row leading to it; return that row (the values it
        has, see `Traces.pop`).

        Popping an episode's first state goes back to the previous episode, whose completion
        (``next_action``) goes with the row; popping after a completion leaves the episode
        completed one state earlier (the action taken there completes it)."""
        meta = self._meta
        if meta.n == 0:
            raise IndexError("pop from an empty EpisodesBuffer")
        was_first_state = self._phase == STARTED
        row = self.traces.pop()
        meta.drop_last()
        if meta.n == 0:
            self._phase = EMPTY
            return row
        meta.mark(1, False)  # the new newest state has no row after it yet
        step = meta.step
        if was_first_state:
            self._phase = STEPPING if step > 1 else STARTED
        elif self._phase == STEPPING and step == 1:
            self._phase = STARTED
        if self._completion is not None and self._phase != COMPLETED and step >= 2:
            meta.mark(2, False)  # its next action is gone
        return row

    def popleft(self):
        """Remove the oldest state and its row; return that row (the values it has)."""
        if self._meta.n == 0:
            raise IndexError("popleft from an empty EpisodesBuffer")
        row = self.traces.popleft()
        self._meta.drop_first()
        if self._meta.n == 0:
            self._phase = EMPTY
        return row

    def clear(self, keep_running_episodes: bool = False) -> None:
        """Remove every row.

        With ``keep_running_episodes=True`` a running episode (one with a first state that was
        not completed) keeps its newest state as the first state of what comes next: a step
        continues the episode from it, a partial push (a new episode) replaces it. In layouts
        with ``next_action`` the episode's last row, still waiting for its next action, stays
        too, so that it is completed and read once, after the clear. An on-policy learner
        clears this way after each rollout while the env's episodes go on.
        """
        meta = self._meta
        if keep_running_episodes and self._multiplexed and self._phase >= STEP_PHASES_FROM:
            waiting = self._completion is not None and self._phase == STEPPING
            while meta.n > 1 + waiting:
                self.popleft()  # through the traces' own popleft: wrappers follow
            meta.clear()
            meta.append(1, 0)  # the kept state: step 1 (a new start for this buffer)
            if waiting:
                meta.append(2, 0)  # and the state its waiting row leads to
            self._phase = STEPPING if waiting else KEPT
            return
        self.traces.clear()
        meta.clear()
        self._phase = EMPTY

    def __repr__(self) -> str:
        return (f"EpisodesBuffer({self.traces!r}, n_sampleable={self.n_sampleable})")
