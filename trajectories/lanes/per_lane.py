"""`PerLaneEpisodes`: lanes stored as one `EpisodesBuffer` each, for any layout.

`split_lanes(traces, n)` builds one when the layout does not suit the lane-major rings
of `trajectories.lanes.rings` (SARTSA and SLART layouts, normalised or elastic traces). Each lane
is an `EpisodesBuffer` over ``traces.empty_copy(ceil(capacity / n))``, which alone knows where
its episode stands; a push checks every lane's episode rules and casts every value first, then
pushes lane by lane.
"""

from __future__ import annotations

import math

import numpy as np

from trajectories._casting import TraceKeyError, fast_tables
from trajectories._episode_meta import episode_row_lists
from trajectories._episode_rules import EMPTY, FULL, KEPT, PARTIAL, STARTED, STEPPING
from trajectories.episodes import EpisodesBuffer
from trajectories.lanes.base import (
    _NO_ROWS,
    NESTED,
    NO_CONTROLS,
    LanedEpisodesBuffer,
    _as_mask,
    _lane_traces,
    lane_controls,
)
from trajectories.nested import first_leaf, is_nested, tree_map

__all__ = ["PerLaneEpisodes"]


class PerLaneEpisodes(LanedEpisodesBuffer):
    """`LanedEpisodesBuffer` keeping one `EpisodesBuffer` per lane (any layout).

    Example:
        >>> import numpy as np
        >>> from trajectories import CircularArraySARTSATraces, split_lanes
        >>> lb = split_lanes(CircularArraySARTSATraces(capacity=10), 2)
        >>> type(lb).__name__
        'PerLaneEpisodes'
        >>> lb.push(state=np.array([0, 10]))
        >>> lb.push(state=np.array([1, 11]), action=np.array([1, 2]), reward=np.ones(2),
        ...         terminal=np.array([True, False]))
        >>> lb.push(next_action=np.array([0, 0]), lanes=np.array([True, False]))
        >>> lb["next_action"].tolist(), lb.running_lanes().tolist()
        ([0], [False, True])
    """

    def __init__(self, traces, n_lanes: int):
        traces = self._checked(traces, n_lanes)
        cap = traces.capacity
        lane_cap = math.ceil(cap / n_lanes) if math.isfinite(cap) else None
        self._lanes = tuple(EpisodesBuffer(_lane_traces(traces, lane_cap))
                            for _ in range(self.n_lanes))
        first = self._lanes[0]
        self._init_layout(first.slots, first.keys())
        self._frames = {}
        self._located = None  # (idx, its copy, version, order, per-lane rows): the last batch

    def __getstate__(self):
        state = super().__getstate__()
        state["_located"] = None  # a cache of the last batch's lanes
        state.pop("_offsets_at", None)  # and of the lanes' offsets
        return state

    @property
    def capacity(self):
        return sum(lane.capacity for lane in self._lanes)

    def __len__(self) -> int:
        return sum(len(lane) for lane in self._lanes)

    def lane_lengths(self) -> list:
        """Rows held by each lane."""
        return [len(lane) for lane in self._lanes]

    def _offsets(self) -> np.ndarray:
        cached = self.__dict__.get("_offsets_at")  # absent in a buffer unpickled from older state
        if cached is None or cached[0] != self._version:  # lane lengths change only with writes
            total, off = 0, [0]
            for lane in self._lanes:
                total += len(lane)
                off.append(total)
            offsets = np.array(off, dtype=np.int64)
            offsets.flags.writeable = False
            cached = self._offsets_at = (self._version, offsets)
        return cached[1]

    def _locate(self, idx: np.ndarray):
        # Samplers ask for several traces at the same rows: locate them once per index array
        # (the copy guards against an index array changed in place between two calls).
        hit = self._located
        if hit is not None and hit[0] is idx and hit[2] == self._version \
                and hit[1].shape == idx.shape and (hit[1] == idx).all():
            return hit[3], hit[4]
        flat = np.asarray(idx, dtype=np.int64).ravel()
        lane, local = self.lane_of(flat)
        order = lane.argsort(kind="stable")
        bounds = lane[order].searchsorted(np.arange(self.n_lanes + 1))
        parts = [(i, local[order[a:b]]) for i, (a, b) in
                 enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)) if b > a]
        self._located = (idx, idx.copy(), self._version, order, parts)
        return order, parts

    def _gather(self, idx, read) -> np.ndarray:
        idx = np.asarray(idx)
        if self.n_lanes == 1:  # global rows are the lane's rows: nothing to locate
            rows = np.asarray(idx, dtype=np.int64).ravel()
            if not rows.size or rows.min() >= 0:  # (a negative row: refused as below)
                return _shaped(read(self._lanes[0], rows), idx.shape)
        return self._gather_located(idx, read)

    def _gather_located(self, idx: np.ndarray, read) -> np.ndarray:
        """`_gather` for any number of lanes: the rows located lane by lane."""
        order, parts = self._locate(idx)
        if len(parts) == 1:
            lane, rows = parts[0]
            return _shaped(read(self._lanes[lane], rows), idx.shape)
        chunks = [read(self._lanes[lane], rows) for lane, rows in parts]
        if not chunks:  # no rows asked for: an empty result of the right dtype and frame
            chunks = [read(self._lanes[0], _NO_ROWS)]

        def ordered(*leaves):
            sorted_ = np.concatenate(leaves)
            out = np.empty_like(sorted_)
            out[order] = sorted_
            return out.reshape(idx.shape + out.shape[1:])

        return tree_map(ordered, chunks[0], *chunks[1:])

    def take(self, name: str, idx) -> np.ndarray:
        """Column ``name`` at global rows ``idx`` (any shape; the result keeps it)."""
        return self._gather(idx, lambda lane, rows: lane.take(name, rows))

    def is_sampleable_at(self, idx) -> np.ndarray:
        return self._gather(idx, lambda lane, rows: lane.is_sampleable_at(rows))

    def step_number_at(self, idx) -> np.ndarray:
        return self._gather(idx, lambda lane, rows: lane.step_number_at(rows))

    def episode_length_at(self, idx) -> np.ndarray:
        return self._gather(idx, lambda lane, rows: lane.episode_length_at(rows))

    def rows_ahead_at(self, idx) -> np.ndarray:
        return self._gather(idx, lambda lane, rows: lane.rows_ahead_at(rows))

    def rows_behind_at(self, idx) -> np.ndarray:
        return self._gather(idx, lambda lane, rows: lane.rows_behind_at(rows))

    @property
    def n_sampleable(self) -> int:
        return sum(lane.n_sampleable for lane in self._lanes)

    def sampleable_indices(self) -> np.ndarray:
        off = self._offsets()
        return np.concatenate([lane.sampleable_indices() + o
                               for lane, o in zip(self._lanes, off, strict=False)])

    def _per_row(self, attr: str) -> np.ndarray:
        # EpisodesBuffer keeps one entry per stored *state*; rows are one fewer in layouts with
        # a state multiplex (the newest state leads nowhere yet). Cut to rows so that global
        # rows and entries line up.
        return np.concatenate([getattr(lane, attr)[:len(lane)] for lane in self._lanes])

    @property
    def sampleable_inds(self) -> np.ndarray:
        """Per global row: a complete transition inside one episode of one lane."""
        return self._per_row("sampleable_inds")

    @property
    def step_numbers(self) -> np.ndarray:
        return self._per_row("step_numbers")

    @property
    def episodes_lengths(self) -> np.ndarray:
        return self._per_row("episodes_lengths")

    def episode_rows(self) -> list:
        """Global sampleable rows of every stored episode: lane by lane, oldest first."""
        out = []
        for lane, o in zip(self._lanes, self._offsets(), strict=False):
            out += episode_row_lists(lane.step_numbers, lane.sampleable_inds, int(o))
        return out

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self._keys:
                raise TraceKeyError(f"no trace named {key!r}; the traces are {self._keys}")
            # Each lane's stored (raw) column, cut to its rows: a SARTSA lane's columns can
            # hold the row still waiting for its next action.
            columns = [lane[key] for lane in self._lanes]
            return tree_map(lambda *cols: np.concatenate(
                [c[:len(lane)] for c, lane in zip(cols, self._lanes, strict=True)]),
                columns[0], *columns[1:])
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            n = len(self)
            i = key + n if -n <= key < 0 else key
            if not 0 <= i < n:
                raise IndexError(f"row {key} out of range for {n} rows")
            lane, local = self.lane_of(i)
            return self._lanes[int(lane)][int(local)]
        raise TypeError(f"index a LanedEpisodesBuffer with a trace name or a row, got {key!r}")

    def __iter__(self):
        for lane in self._lanes:
            yield from lane

    def _frame(self, name: str) -> tuple:
        """``(dtype, frame shape, dtypes stored exactly)`` of a trace; ``(None,)*3`` while an
        elastic trace has seen no value in any lane (the first value fixes them for all)."""
        spec = self._frames.get(name)
        if spec is None:
            ref = next((r for r in (lane.take(name, _NO_ROWS) for lane in self._lanes)
                        if first_leaf(r).dtype != object), None)
            if ref is None:
                return None, None, None
            if is_nested(ref):  # a dict or tuple of leaves: the tree of their specs
                leaves = tree_map(lambda r: (r.dtype, r.shape[1:], fast_tables(r.dtype)[1]),
                                  ref)
                spec = self._frames[name] = (NESTED, leaves, None)
            else:
                spec = self._frames[name] = (ref.dtype, ref.shape[1:],
                                             fast_tables(ref.dtype)[1])
        return spec

    def _push_row(self, key_set, row: dict) -> int:
        episode_start, lanes, restart = lane_controls(row) if key_set.controls else NO_CONTROLS
        n = self.n_lanes
        keys, kind = key_set.names, key_set.kind
        chosen = None if lanes is None else _as_mask(lanes, n, "lanes")
        starts = None if episode_start is None else _as_mask(episode_start, n, "episode_start")
        if starts is not None and not starts.any():
            starts = None
        cast = self._cast(key_set, row)
        state_row = None
        if starts is not None and kind == FULL:
            state_row = {k: v for k, v in cast.items() if k in self._state_like_names}
        elif starts is not None and kind != PARTIAL:
            raise ValueError("episode_start applies to full pushes (a step in some lanes, a new "
                             "episode in the others) or partial pushes")
        # Check every lane's episode rules before writing anything.
        allowed, plan = self._rules.allowed, []
        for i in range(n):
            if chosen is not None and not chosen[i]:
                continue
            k = PARTIAL if starts is not None and starts[i] else kind
            phase = self._lanes[i]._phase
            if restart and k == PARTIAL and phase == STARTED:
                phase = EMPTY  # its lone first state goes (see below)
            if not allowed[k][phase]:
                raise self._rules.refusal(k, self._lanes[i]._phase, lane=i)
            plan.append((i, k))
        if restart:  # the lone first states of lanes that start again go
            for i, k in plan:
                if k == PARTIAL and self._lanes[i]._phase == STARTED:
                    self._drop_lone_first_state(i)
        self._version += 1
        # Which lanes got a step (None: all of them), for a controller that reads the data.
        if kind == FULL and starts is None and chosen is None:
            self.last_full = None
        else:
            self.last_full = np.zeros(n, dtype=bool)
            self.last_full[[i for i, k in plan if k == FULL]] = True
        inserted, lanes_ = 0, self._lanes
        state_keys = None if state_row is None else tuple(state_row)
        for i, k in plan:
            src, src_keys = (state_row, state_keys) if k == PARTIAL and state_row is not None \
                else (cast, keys)
            inserted += lanes_[i].push_function(src_keys)(
                {name: v[i] if type(v) is np.ndarray else _lane_value(v, i)
                 for name, v in src.items()})
        return inserted

    def _drop_lone_first_state(self, i: int) -> None:
        """Pop lane ``i``'s first state that has no step (and any such before it). With
        ``next_action`` the pop also took the previous episode's completion (the boundary row's
        action): it goes back, so that a new episode may start."""
        lane = self._lanes[i]
        while lane._phase == STARTED:
            row = lane.pop()
            if self._completion is not None and lane._phase == STEPPING and "action" in row:
                lane.push(**{self._completion: row["action"]})

    def extend(self, lane: int, *, new_episode: bool = True, **columns) -> int:
        """Bulk-insert steps into one lane (see `EpisodesBuffer.extend`); returns their count."""
        lane = self._lane(lane)
        n = self._lanes[lane].extend(new_episode=new_episode, **columns)  # raises before writing
        self._version += 1
        return n

    def open_lanes(self) -> np.ndarray:
        """Lanes whose newest episode has a first state and no step yet (also a kept one)."""
        return np.array([lane._phase in (KEPT, STARTED) for lane in self._lanes], dtype=bool)

    def running_lanes(self) -> np.ndarray:
        """Lanes whose last episode has steps and is not completed (SARTSA: awaiting its
        ``next_action``)."""
        return np.array([lane._phase == STEPPING for lane in self._lanes], dtype=bool)

    def pop(self, lane: int):
        """Remove the newest state of ``lane`` (see `EpisodesBuffer.pop`)."""
        lane = self._lane(lane)
        row = self._lanes[lane].pop()
        self._version += 1
        return row

    def popleft(self, lane: int):
        """Remove the oldest state of ``lane`` (see `EpisodesBuffer.popleft`)."""
        lane = self._lane(lane)
        row = self._lanes[lane].popleft()
        self._version += 1
        return row

    def clear(self, keep_running_episodes: bool = False) -> None:
        """Empty every lane (see `EpisodesBuffer.clear`)."""
        for lane in self._lanes:
            lane.clear(keep_running_episodes)
        self._version += 1


def _shaped(out, shape: tuple):
    """``out`` (rows first) with its rows in ``shape``; a nested read: every leaf alike."""
    if is_nested(out):
        return tree_map(lambda leaf: leaf.reshape(shape + leaf.shape[1:]), out)
    return out.reshape(shape + out.shape[1:])


def _lane_value(value, i: int):
    """Lane ``i``'s value of a laned push's value (a nested one: of every leaf)."""
    if is_nested(value):
        return tree_map(lambda leaf: leaf[i], value)
    return value[i]
