"""`LanedEpisodesBuffer`: the episodes of each lane (sub-env) apart, seen as one container.

A vector env steps ``n`` sub-envs at once. Storing their steps interleaved in one buffer would
pair states of two sub-envs in one transition; instead every lane keeps its own episodes, with
the bookkeeping of an `EpisodesBuffer`, and the lanes are presented to samplers as
one container whose rows are the lanes' rows one lane after the other (a *global* row index)::

    lane 0 rows  a0 a1 a2        lane 1 rows  b0 b1         lane 2 rows  c0 c1 c2 c3
    global row    0  1  2                      3  4                       5  6  7  8

Samplers only draw sampleable rows and follow a row forward (n-step returns) or back (stacked
frames) only as far as ``rows_ahead_at`` and ``rows_behind_at`` allow: within its episode and
its lane (a lane's first stored row may have any step number once its ring wrapped), and never
onto a SARTSA row still waiting for its next action.

The total capacity is split evenly: each lane holds ``ceil(capacity / n_lanes)`` rows, as
SB3's ``buffer_size`` covers all envs.

Two storages share this interface: lane-major rings for plain ring layouts with one state
multiplex (`trajectories.lanes.rings.RingLanes`: one numpy write per trace for all lanes), and
one `EpisodesBuffer` per lane for any other layout (`trajectories.lanes.per_lane.PerLaneEpisodes`).
`trajectories.split_lanes(traces, n)` builds the one that suits the traces (see
`trajectories.lanes.lane_storage`). See ``docs/trajectories.md`` (Lanes).

A push reaches a storage through `LanedEpisodesBuffer.push_function` (one function per set of
pushed names, kept here): the storage's ``_push_row`` bound to the `KeySet` of those names, which
reads the lane controls (``episode_start``, ``lanes``, ``restart``) off the row when it has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from trajectories._casting import coerce_frames, declare_hint
from trajectories._episode_rules import EpisodeRules, classify_push
from trajectories.checks import require_positive_int
from trajectories.episodes import EpisodesBuffer
from trajectories.nested import is_nested, tree_map
from trajectories.normalization import NormalizedTraces
from trajectories.prioritized import CircularPrioritizedTraces

__all__ = ["LanedEpisodesBuffer", "KeySet", "lane_controls", "NO_CONTROLS"]

_NO_ROWS = np.zeros(0, dtype=np.int64)
#: The dtype `_frame` gives a nested trace (a dict or tuple of leaves): its frame is the tree
#: of its leaves' ``(dtype, frame, exact dtypes)``.
NESTED = "nested"
# Names a laned push may carry besides the traces: they say which lanes get what.
_CONTROLS = frozenset(("episode_start", "lanes", "restart"))


def lane_controls(row: dict) -> tuple:
    """``(episode_start, lanes, restart)`` of a laned push (see `LanedEpisodesBuffer.push`)."""
    return row.get("episode_start"), row.get("lanes"), row.get("restart", False)


NO_CONTROLS = (None, None, False)  # a push that names no lane control: every lane, a step


class KeySet:
    """What a laned storage knows about one set of pushed names: the trace names, the kind of
    push they make, whether lane controls come with them, and (once every dtype is known) the
    ``(name, exact dtypes, shape)`` of each value that needs no conversion."""

    __slots__ = ("names", "kind", "controls", "cast_plan")

    def __init__(self, names: tuple, kind: int, controls: bool):
        self.names, self.kind, self.controls, self.cast_plan = names, kind, controls, None


def _lane_traces(traces, capacity):
    """An empty copy of ``traces`` for one lane; normalisers are shared by all lanes, so that
    every lane's batches are normalised by the statistics of everything pushed."""
    if isinstance(traces, NormalizedTraces):
        inner = traces.traces.empty_copy(capacity)
        once = {}
        for name, norm in traces.normalizers.items():
            once.setdefault(id(norm), (name, norm))
        return NormalizedTraces(inner, **dict(once.values()))
    return traces.empty_copy(capacity)


def _as_mask(value, n: int, what: str) -> np.ndarray:
    """A bool mask over the lanes from a mask or from lane indices."""
    if type(value) is np.ndarray and value.dtype == np.bool_ and value.shape == (n,):
        return value  # the common case, checked first: it comes with every vector step
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        if arr.shape != (n,):
            raise ValueError(f"{what} must be a bool array of shape ({n},) (one entry per "
                             f"lane), got shape {arr.shape}")
        return arr
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"{what} must be a bool mask or an array of lane indices, got {value!r}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{what} names lanes out of range for {n} lanes: {arr.tolist()}")
    mask = np.zeros(n, dtype=bool)
    mask[arr] = True
    return mask


class LanedEpisodesBuffer:
    """Per-lane episode storage for vector envs, presented as one container with global rows.

    ``push`` takes one value per lane (a leading lane axis). Lanes flagged in
    ``episode_start`` get a partial push of the state-like values (a new episode starts there);
    the other lanes a full push (a step). ``lanes`` restricts a push to some lanes. Each lane
    follows the rules of `EpisodesBuffer`, and a push that breaks them in any lane, or a value
    of the wrong shape or dtype, raises before any lane is written.

    Build one with ``split_lanes(traces, n_lanes)``, which picks the storage that suits the
    traces; this class is the interface both storages share and is never built itself.

    Samplers see the container interface of `EpisodesBuffer` over global rows (``len``,
    ``[name]``, ``take``, ``is_sampleable_at``, ``step_number_at``, ``episode_length_at``,
    ``rows_ahead_at``, ``rows_behind_at`` (both within the row's lane), ``n_sampleable``,
    ``sampleable_indices()``, and ``sampleable_inds``, ``step_numbers``, ``episodes_lengths``
    with one entry per row), plus ``episode_rows()`` (the sampleable rows of each episode, lane
    by lane). Per lane: ``extend(lane, ...)``, ``pop(lane)``, ``popleft(lane)``,
    ``lane_lengths()``, ``lane_of(rows)``, ``open_lanes()`` (a first state and no step yet),
    ``running_lanes()`` (steps, not completed); ``clear(keep_running_episodes=False)`` empties
    every lane (keeping, if asked, each running episode's newest state; see
    `EpisodesBuffer.clear`). Prioritized
    traces are refused (one key space over the lanes is not built yet).

    Args:
        traces: empty traces that describe one lane's layout and the *total* capacity (each
            lane gets ``empty_copy(ceil(capacity / n_lanes))``).
        n_lanes: the number of lanes (sub-envs).

    Example:
        >>> import numpy as np
        >>> from trajectories import CircularArraySARTSTraces, split_lanes
        >>> lb = split_lanes(CircularArraySARTSTraces(capacity=8), 2)
        >>> lb.push(state=np.array([10, 20]))                      # both lanes start
        >>> lb.push(state=np.array([11, 21]), action=np.array([0, 1]),
        ...         reward=np.array([1.0, 2.0]), terminal=np.array([True, False]))
        >>> lb.push(state=np.array([30, 22]), action=np.array([0, 1]),   # lane 0 restarts
        ...         reward=np.array([0.0, 2.0]), terminal=np.array([False, False]),
        ...         episode_start=np.array([True, False]))
        >>> lb.push(state=np.array([31, 23]), action=np.array([1, 1]),
        ...         reward=np.array([1.0, 2.0]), terminal=np.array([False, False]))
        >>> len(lb), lb.lane_lengths(), lb["state"].tolist(), lb["next_state"].tolist()
        (6, [3, 3], [10, 11, 30, 20, 21, 22], [11, 30, 31, 21, 22, 23])
        >>> lb.sampleable_inds.astype(int).tolist()     # row 1 pairs two episodes of lane 0
        [1, 0, 1, 1, 1, 1]
    """

    def __init__(self, traces=None, n_lanes=None):
        raise TypeError("LanedEpisodesBuffer is the interface of laned storages; build one with "
                        "trajectories.split_lanes(traces, n_lanes), which picks the storage that "
                        "suits the traces")

    def _checked(self, traces, n_lanes):
        """Check the arguments, set ``n_lanes`` and ``traces``; returns the layout traces."""
        n_lanes = require_positive_int(None, "n_lanes", n_lanes)
        if isinstance(traces, (EpisodesBuffer, LanedEpisodesBuffer)):
            if len(traces):
                raise ValueError(f"LanedEpisodesBuffer needs empty traces, got "
                                 f"{len(traces)} rows")
            traces = traces.traces
        if not all(hasattr(traces, a) for a in ("keys", "slots", "capacity", "take")):
            raise TypeError(f"LanedEpisodesBuffer needs traces (a Traces or preset), got "
                            f"{type(traces).__name__}")
        if len(traces):
            raise ValueError(f"LanedEpisodesBuffer needs empty traces, got {len(traces)} rows; "
                             f"pass traces.empty_copy()")
        if _has_layer(traces, CircularPrioritizedTraces):
            raise TypeError("prioritized traces are not supported across lanes (vector envs) "
                            "yet: their sum tree would need one global key space; use a "
                            "single env, or uniform sampling with the vector env")
        self.n_lanes = int(n_lanes)
        self.traces = traces  # the layout (empty): wrappers are found on it, data in the lanes
        self.last_full = None  # lanes the last push gave a step (None: every lane)
        self.inferred_from = None  # the state shape the lanes were guessed from, if they were
        self._push_functions: dict[tuple, object] = {}  # tuple(row keys) -> push(row)
        self._version = 0  # bumped by every write: lane lengths, hence global rows, moved
        return traces

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_push_functions"] = {}  # rebuilt on first use
        return state

    def _init_layout(self, slots, keys) -> None:
        self._slots = tuple(tuple(slot) for slot in slots)
        self._keys = tuple(keys)
        self._slot_of = {name: i for i, slot in enumerate(self._slots) for name in slot}
        self._completion = next((s[1] for s in self._slots if len(s) == 2
                                 and s[1] == "next_action"), None)
        self._multiplexed = any(len(s) == 2 for s in self._slots)
        # What a partial push (an episode's first state) names: the state-like multiplexes.
        self._state_like = {i for i, s in enumerate(self._slots) if len(s) == 2
                            and s[1] != self._completion} if self._multiplexed \
            else set(range(len(self._slots)))
        self._state_like_names = {n for i in self._state_like for n in self._slots[i]}
        self._rules = EpisodeRules(self._multiplexed, self._completion)

    def keys(self) -> tuple:
        return self._keys

    @property
    def slots(self) -> tuple:
        return self._slots

    def lane_of(self, idx):
        """``(lane, local_row)`` arrays for global row indices ``idx``."""
        idx = np.asarray(idx, dtype=np.int64)
        off = self._offsets()
        # Empty lanes share their offset with the next lane; `side="right"` skips them. The row
        # just past the end belongs to the last lane (its newest state, for a state multiplex).
        lane = np.minimum(np.searchsorted(off, idx, side="right") - 1, self.n_lanes - 1)
        return lane, idx - off[lane]

    def _classify(self, keys: tuple) -> int:
        return classify_push(keys, self._slot_of, self._slots, self._state_like, self._completion)

    # -- push -----------------------------------------------------------------------------------
    def push_function(self, keys: tuple):
        """``push(row) -> transitions inserted`` for rows of exactly these names (trace names,
        plus the lane controls ``episode_start``, ``lanes``, ``restart``; see `push`). Built
        once per key set and kept here; unknown names raise here, before anything is written."""
        fn = self._push_functions.get(keys)
        if fn is None:
            names = tuple(k for k in keys if k not in _CONTROLS)
            key_set = KeySet(names, self._classify(names), len(names) != len(keys))
            fn = partial(self._push_row, key_set)
            if len(self._push_functions) < 64:
                self._push_functions[keys] = fn
        return fn

    def _push_row(self, key_set: KeySet, row: dict) -> int:
        """Push ``row`` (the names of ``key_set``, and the lane controls if it has them; see
        `lane_controls`); returns the number of lanes that got a full step."""
        raise NotImplementedError  # each storage writes its own way

    def inserted(self, step: dict):
        """The values of ``step`` (a push's names and values) for the lanes the push gave a
        step: what a controller's ``on_insert`` reads (most controllers only count)."""
        full = self.last_full
        return step if full is None else _StepsOnly(step, full)

    def _frame(self, name: str) -> tuple:
        """``(dtype, frame shape, dtypes stored exactly)`` of a trace."""
        return self._frames[name]

    def _cast(self, key_set: KeySet, row: dict) -> dict:
        """Every value as a ``(n_lanes, *frame)`` array the trace stores exactly, or raise."""
        plan = key_set.cast_plan
        if plan is not None:  # the common case: arrays numpy's assignment stores exactly
            out = {}
            for name, exact, shape in plan:
                value = row[name]
                if type(value) is not np.ndarray or value.dtype not in exact \
                        or value.shape != shape:
                    return self._cast_slow(key_set, row)
                out[name] = value
            return out
        return self._cast_slow(key_set, row)

    def _cast_slow(self, key_set: KeySet, row: dict) -> dict:
        n, out = self.n_lanes, {}
        specs = [(name, *self._frame(name)) for name in key_set.names]
        if all(dtype is not None and not isinstance(dtype, str) for _, dtype, _, _ in specs):
            key_set.cast_plan = tuple((name, exact, (n, *frame))
                                      for name, _, frame, exact in specs)
        for name, dtype, frame, exact in specs:
            value = row[name]
            if isinstance(dtype, str):  # NESTED (compared by value: a loaded copy's string)
                out[name] = self._cast_nested(name, frame, value)
                continue
            arr = np.asarray(value)
            if dtype is None:  # an elastic trace whose dtype its first value fixes
                if arr.shape[:1] != (n,):
                    raise ValueError(f"trace {name!r} takes one frame per lane, i.e. an array "
                                     f"with a leading axis of {n}, got shape {arr.shape}")
                out[name] = arr
                continue
            if type(value) is np.ndarray and value.dtype in exact \
                    and value.shape == (n, *frame):
                out[name] = value
                continue
            if arr.shape[:1] != (n,) or arr.shape[1:] != frame:
                hint = ""
                if self.inferred_from is not None:
                    hint = (f"; the first push (a state of shape {self.inferred_from}) was "
                            f"taken as {n} sub-envs of a vector env: if it was one env's state, "
                            f"give the state trace that frame shape, e.g. "
                            f"state=(np.float32, {self.inferred_from})")
                if not hint and arr.shape[:1] == (n,):
                    hint = declare_hint(name, arr[0])
                raise ValueError(f"trace {name!r} takes one frame of shape {frame} ({dtype}) "
                                 f"per lane, i.e. an array of shape {(n, *frame)}, got shape "
                                 f"{arr.shape}{hint}")
            out[name] = coerce_frames(arr, dtype, frame, name)
        return out

    def _cast_nested(self, name: str, specs, value):
        """A nested value (a dict or tuple, one ``(n_lanes, *frame)`` array per leaf) cast leaf
        by leaf, or raise naming the leaf."""
        n = self.n_lanes

        def cast(spec, leaf, where):
            if isinstance(spec, dict):
                if not isinstance(leaf, dict) or set(leaf) != set(spec):
                    got = sorted(leaf) if isinstance(leaf, dict) else type(leaf).__name__
                    raise ValueError(f"trace {where!r} takes a dict with the keys "
                                     f"{list(spec)} per lane, got {got}")
                return {k: cast(spec[k], leaf[k], f"{where}.{k}") for k in spec}
            if isinstance(spec, tuple) and not isinstance(spec[0], np.dtype):
                if not isinstance(leaf, (tuple, list)) or len(leaf) != len(spec):
                    raise ValueError(f"trace {where!r} takes a tuple of {len(spec)} values "
                                     f"per lane, got {type(leaf).__name__}")
                return tuple(cast(s, v, f"{where}.{i}") for i, (s, v) in
                             enumerate(zip(spec, leaf, strict=True)))
            dtype, frame, exact = spec
            if type(leaf) is np.ndarray and leaf.dtype in exact and leaf.shape == (n, *frame):
                return leaf
            arr = np.asarray(leaf)
            if arr.shape != (n, *frame):
                raise ValueError(f"trace {where!r} takes one frame of shape {frame} ({dtype}) "
                                 f"per lane, i.e. an array of shape {(n, *frame)}, got shape "
                                 f"{arr.shape}")
            return coerce_frames(arr, dtype, frame, where)

        return cast(specs, value, name)

    def push(self, *, episode_start=None, lanes=None, restart=False, **row) -> None:
        """Push one value per lane (``push_function(keys)(row)`` returns how many lanes got a
        full step).

        Args:
            episode_start: lanes (bool mask or indices) where a new episode starts: they get
                only the state-like values (``state``, ``legal_actions_mask``).
            lanes: the lanes that get anything (default: all); values still carry every lane.
            restart: a new episode may follow an episode that has no step yet (its lone first
                state, e.g. a sub-env reset just before a run stopped, is then never sampled:
                one EpisodesBuffer per lane drops it, lane-major rings keep it as an episode
                without steps). Otherwise that raises, as in `EpisodesBuffer`.
            **row: trace name -> array with a leading lane axis (one frame per lane).

        Everything is checked (names, shapes, dtypes, each lane's episode rules) before any
        lane is written.
        """
        if episode_start is not None or lanes is not None or restart:
            row = {**row, "episode_start": episode_start, "lanes": lanes, "restart": restart}
        self.push_function(tuple(row))(row)

    def _lane(self, lane) -> int:
        if isinstance(lane, bool) or not isinstance(lane, (int, np.integer)):
            raise TypeError(f"lane must be an int, got lane={lane!r}")
        if not 0 <= lane < self.n_lanes:
            raise IndexError(f"lane {lane} out of range for {self.n_lanes} lanes")
        return int(lane)

    def set_priority(self, keys, values) -> None:
        raise TypeError("set_priority needs prioritized traces, which lanes do not support")

    def __repr__(self) -> str:
        return (f"LanedEpisodesBuffer({self.traces!r}, n_lanes={self.n_lanes}, "
                f"lane_lengths={self.lane_lengths()})")


class _StepsOnly(Mapping):
    """The pushed values of the lanes that took a step, selected when a controller reads them
    (most controllers only count); the lane controls are left out."""

    __slots__ = ("step", "full")

    def __init__(self, step, full):
        self.step, self.full = step, full

    def __getitem__(self, name):
        if name in _CONTROLS:
            raise KeyError(name)
        value = self.step[name]
        if is_nested(value):
            return tree_map(lambda leaf: np.asarray(leaf)[self.full], value)
        return np.asarray(value)[self.full]

    def __iter__(self):
        return (k for k in self.step if k not in _CONTROLS)

    def __len__(self):
        return sum(1 for _ in self)


def _has_layer(traces, cls) -> bool:
    while traces is not None:
        if isinstance(traces, cls):
            return True
        traces = getattr(traces, "traces", None)
    return False
