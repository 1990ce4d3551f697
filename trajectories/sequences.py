"""Sequences for recurrent learners: replay windows and on-policy chunks.

A recurrent policy's memory goes into every step, so a learner replays *sequences* of steps,
each started from the memory that went into its first step. The memory is a trace of its own
(``recurrent_state`` by default): row ``i`` holds the state that went into step ``i``. Both
ways of cutting sequences stay inside one episode of one lane and never run past the newest
stored step (the ring's write position)::

    lane 0 steps (step numbers)   1  2  3  4  5  6 | 1  2  3 ...     (| : a new episode)
    replay windows, length 3,     [1  2  3]
    period 2                            [3  4  5]
                                              [5  6  .]   . = padding (mask 0), or dropped
                                                          [1  2  3] ...
    on-policy chunks, max 3       [1  2  3][4  5  6]       [1  2  3] ...

Every batch has, besides the traces as ``(sequences, T, ...)`` arrays (zero where padded):

* ``mask``: ``(S, T)`` bool, True on real steps;
* ``seq_lens``: ``(S,)`` the real steps of each sequence (``mask.sum(1)``);
* ``is_first``: ``(S, T)`` bool, True where a step starts its episode (only ever at position 0:
  no sequence crosses an episode start);
* ``initial_state``: ``(S, *state)`` the stored state of each sequence's first row.

:class:`SequenceSampler` draws replay windows (R2D2's stored-state replay: a length, a burn-in,
a period, zero-padding or dropping where an episode ends); :class:`RolloutChunker` cuts a whole
rollout into per-lane chunks at episode starts and at a maximum length (RLlib's
``max_seq_len``), and :func:`chop_into_sequences` does the cutting for any columns.
"""

from __future__ import annotations

import numpy as np

from trajectories._rows import _episodic, _Rows
from trajectories._window_starts import draw_listed, listed_window_starts
from trajectories.checks import as_rng, require_positive_int
from trajectories.samplers import _check_names, _device, _resolve_names, _to_device

__all__ = ["SequenceSampler", "RolloutChunker", "chop_into_sequences", "STATE_TRACE"]

#: The name of the trace that holds the recurrent state that went into each step.
STATE_TRACE = "recurrent_state"

_CONTROLS = ("mask", "seq_lens", "is_first", "initial_state")


def chop_into_sequences(episode_ids, columns: dict, max_seq_len: int, state=None,
                        is_first=None) -> dict:
    """Cut rows into sequences at every change of ``episode_ids`` and every ``max_seq_len``
    rows, and pad them to the longest one.

    Args:
        episode_ids: ``(N,)`` an id per row; the rows of one episode (of one lane) are
            consecutive and in time order, and a new id starts a new sequence.
        columns: name -> ``(N, ...)`` array; each comes back as ``(S, T, ...)``, zero-padded.
        max_seq_len: the most rows in a sequence.
        state: ``(N, *state)`` the stored state of each row (optional): ``initial_state`` is
            the state of each sequence's first row.
        is_first: ``(N,)`` bool, whether a row starts its episode (optional, for the
            ``is_first`` output; default: every first row of an id).

    Returns:
        the padded columns plus ``mask``, ``seq_lens``, ``is_first``, ``rows`` (``(S, T)``: the
        row each position came from, -1 where padded) and, with ``state``, ``initial_state``.

    Example:
        >>> out = chop_into_sequences(np.array([1, 1, 5, 5, 5, 5]),
        ...                           {"x": np.array([4, 4, 8, 8, 8, 8])}, max_seq_len=3,
        ...                           state=np.array([[4], [5], [4], [5], [5], [5]]))
        >>> out["seq_lens"].tolist(), out["x"].reshape(-1).tolist()
        ([2, 3, 1], [4, 4, 0, 8, 8, 8, 8, 0, 0])
        >>> out["initial_state"].reshape(-1).tolist(), out["rows"][2].tolist()
        ([4, 4, 5], [5, -1, -1])
    """
    max_seq_len = require_positive_int("chop_into_sequences", "max_seq_len", max_seq_len)
    ids = np.asarray(episode_ids)
    if ids.ndim != 1:
        raise ValueError(f"chop_into_sequences: episode_ids must have one id per row (shape "
                         f"(N,)), got shape {ids.shape}")
    n = len(ids)
    for name, value in columns.items():
        if len(value) != n:
            raise ValueError(f"chop_into_sequences: column {name!r} has {len(value)} rows, "
                             f"episode_ids {n}; give every column one row per id")
    if state is not None and len(state) != n:
        raise ValueError(f"chop_into_sequences: state has {len(state)} rows, episode_ids {n}")
    new_episode = np.ones(n, dtype=bool)
    new_episode[1:] = ids[1:] != ids[:-1]
    # Position of each row in its episode, then in its sequence.
    episode_start = np.maximum.accumulate(np.where(new_episode, np.arange(n), 0))
    in_episode = np.arange(n) - episode_start
    starts = in_episode % max_seq_len == 0
    seq = np.cumsum(starts) - 1
    t = in_episode % max_seq_len
    n_seqs = int(seq[-1]) + 1 if n else 0
    seq_lens = np.bincount(seq, minlength=n_seqs).astype(np.int64) if n else \
        np.zeros(0, np.int64)
    width = int(seq_lens.max()) if n else 0
    out = {}
    for name, value in columns.items():
        value = np.asarray(value)
        padded = np.zeros((n_seqs, width, *value.shape[1:]), dtype=value.dtype)
        padded[seq, t] = value
        out[name] = padded
    rows = np.full((n_seqs, width), -1, dtype=np.int64)
    rows[seq, t] = np.arange(n)
    first = np.zeros((n_seqs, width), dtype=bool)
    first[seq, t] = new_episode if is_first is None else np.asarray(is_first, dtype=bool)
    out.update(mask=rows >= 0, seq_lens=seq_lens, is_first=first, rows=rows)
    if state is not None:
        out["initial_state"] = np.asarray(state)[np.flatnonzero(starts)]
    return out


def _lane_and_gap_ids(container, rows: np.ndarray) -> np.ndarray:
    """An id per sampleable row (in ``rows``, increasing): a new id at every episode start,
    every change of lane and every gap (a padding row between two episodes)."""
    steps = container.step_number_at(rows)
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (rows[1:] != rows[:-1] + 1) | (steps[1:] == 1)
    if hasattr(container, "lane_of") and len(rows):
        lanes = container.lane_of(rows)[0]
        new[1:] |= lanes[1:] != lanes[:-1]
    return np.cumsum(new)


def _state_name(owner: str, container, state: str) -> None:
    if state not in container.keys():
        raise ValueError(
            f"{owner}: the trajectory has no {state!r} trace (the recurrent state that went "
            f"into each step), only {tuple(container.keys())}; add it to the traces, e.g. "
            f"extra={{{state!r}: (np.float32, state_shape)}} in the preset")


def _episodic_or_refuse(owner: str, container) -> None:
    if not _episodic(container):
        raise TypeError(f"{owner} needs a container that tracks episodes (a Trajectory, an "
                        f"EpisodesBuffer or lanes), got bare {type(container).__name__}; wrap "
                        "the traces in trajectories.Trajectory(traces)")


class RolloutChunker:
    """A whole rollout as sequences: every lane's steps in time order, cut at each episode
    start and every ``max_seq_len`` steps (RLlib's ``max_seq_len``), zero-padded to the
    longest chunk. Each chunk starts from the stored state of its first row.

    A sampler: ``Trajectory(traces, RolloutChunker(32), controller)`` hands an on-policy
    learner the chunks of each complete rollout. The batch also has ``rows`` (the container
    row of each position, -1 where padded).

    Args:
        max_seq_len: the most steps in a chunk.
        names: the traces to put in the batch (default: all).
        state: the trace of recurrent states (``initial_state`` comes from it).
        device: when given, the arrays are torch tensors there.

    Example:
        >>> from trajectories import CircularArraySARTSTraces, Trajectory
        >>> traces = CircularArraySARTSTraces(capacity=16, extra={"recurrent_state":
        ...                                                       (np.float32, (1,))})
        >>> t = Trajectory(traces)
        >>> t.push(state=0)
        >>> for s in range(1, 6):       # an episode of 5 steps
        ...     t.push(state=s, action=0, reward=1.0, terminal=s == 5,
        ...            recurrent_state=np.array([s - 1.0]))
        >>> chunks = RolloutChunker(2, names=("state",)).sample(t.container)
        >>> chunks["state"].tolist(), chunks["initial_state"].reshape(-1).tolist()
        ([[0, 1], [2, 3], [4, 0]], [0.0, 2.0, 4.0])
    """

    def __init__(self, max_seq_len: int, names=None, state: str = STATE_TRACE, device=None):
        self.max_seq_len = require_positive_int("RolloutChunker", "max_seq_len", max_seq_len)
        self.names = _check_names(names)
        self.state = state
        self.device = _device(device)

    def __repr__(self) -> str:
        return f"RolloutChunker(max_seq_len={self.max_seq_len}, names={self.names})"

    def sample(self, container) -> dict:
        who = repr(self)
        _episodic_or_refuse(who, container)
        _state_name(who, container, self.state)
        names = _resolve_names(who, container, self.names)
        rows = np.flatnonzero(container.is_sampleable_at(np.arange(len(container))))
        ids = _lane_and_gap_ids(container, rows)
        columns = {name: container.take(name, rows) for name in names}
        out = chop_into_sequences(ids, columns, self.max_seq_len,
                                  state=container.take(self.state, rows),
                                  is_first=container.step_number_at(rows) == 1)
        out["rows"] = np.where(out["rows"] >= 0, rows[np.maximum(out["rows"], 0)], -1)
        return out if self.device is None else _to_device(out, self.device)


class SequenceSampler:
    """Replay windows of ``sequence_length`` steps, each from the stored state of its first
    row (zero where that row starts an episode), as R2D2 replays them.

    Windows start at the steps ``1, 1 + period, 1 + 2 * period, ...`` of every episode (their
    step numbers, so a window stays the same window while the ring wraps) and never leave
    their episode, lane or the newest stored step. Where an episode (or what is stored of it)
    ends before a window does, the window is zero-padded (``pad=True``: ``mask`` is False
    there) or not drawn (``pad=False``). The first ``burn_in`` steps of a window only warm the
    memory up: a learner computes no loss on them, so a window is drawn only if it has a real
    step after them. Windows are drawn uniformly with replacement.

    Args:
        sequence_length: steps per window, burn-in included.
        batch_size: windows per batch.
        burn_in: steps at the start of a window that only warm the memory up
            (``0 <= burn_in < sequence_length``).
        period: steps between the starts of consecutive windows of an episode (default:
            ``sequence_length - burn_in``, R2D2's overlap of the burn-in).
        pad: zero-pad windows cut by an episode's end (True) or drop them (False).
        names: the traces to put in the batch (default: all).
        state: the trace of recurrent states.
        rng: an int seed or a ``np.random.Generator``.
        device: when given, the arrays are torch tensors there.

    Example:
        >>> from trajectories import CircularArraySARTSTraces, Trajectory
        >>> traces = CircularArraySARTSTraces(capacity=16, extra={"recurrent_state":
        ...                                                       (np.float32, (1,))})
        >>> t = Trajectory(traces)
        >>> t.push(state=0)
        >>> for s in range(1, 7):       # one episode of 6 steps: rewards 1..6
        ...     t.push(state=s, action=0, reward=float(s), terminal=s == 6,
        ...            recurrent_state=np.array([10.0 * s]))
        >>> sampler = SequenceSampler(3, batch_size=4, period=2)
        >>> [w["reward"].tolist() for w in sampler.windows(t.container)]
        [[1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [5.0, 6.0, 0.0]]
        >>> sampler.windows(t.container)[2]["mask"].tolist()
        [True, True, False]
        >>> [w["initial_state"].tolist() for w in sampler.windows(t.container)]
        [[0.0], [30.0], [50.0]]
        >>> len(SequenceSampler(3, batch_size=4, period=2, pad=False).windows(t.container))
        2
    """

    def __init__(self, sequence_length: int, batch_size: int = 32, burn_in: int = 0,
                 period: int | None = None, pad: bool = True, names=None,
                 state: str = STATE_TRACE, rng=None, device=None):
        who = "SequenceSampler"
        self.sequence_length = require_positive_int(who, "sequence_length", sequence_length)
        self.batch_size = require_positive_int(who, "batch_size", batch_size)
        if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)):
            raise TypeError(f"{who}: burn_in must be an int, got burn_in={burn_in!r}")
        if not 0 <= burn_in < self.sequence_length:
            raise ValueError(
                f"{who}: burn_in must be at least 0 and below sequence_length="
                f"{self.sequence_length} (a window needs a step to learn from after its "
                f"burn-in), got burn_in={burn_in}; lower burn_in or raise sequence_length")
        self.burn_in = int(burn_in)
        default_period = self.sequence_length - self.burn_in
        self.period = default_period if period is None else require_positive_int(
            who, "period", period)
        if not isinstance(pad, (bool, np.bool_)):
            raise TypeError(f"{who}: pad must be True (zero-pad windows cut by an episode's "
                            f"end) or False (drop them), got pad={pad!r}")
        self.pad = bool(pad)
        self.names = _check_names(names)
        self.state = state
        self.rng = as_rng(rng)
        self.device = _device(device)
        self._rows = _Rows(f"SequenceSampler(sequence_length={self.sequence_length}, "
                           f"batch_size={self.batch_size})", self.rng)

    def __repr__(self) -> str:
        return (f"SequenceSampler(sequence_length={self.sequence_length}, batch_size="
                f"{self.batch_size}, burn_in={self.burn_in}, period={self.period}, "
                f"pad={self.pad}, names={self.names})")

    def _needed(self) -> int:
        """The real steps a window must have to be drawn."""
        return self.sequence_length if not self.pad else self.burn_in + 1

    def _admissible(self, container):
        """Whether rows (sampleable ones) start a window that may be drawn."""
        period, needed = self.period, self._needed()

        def accept(idx):
            aligned = (container.step_number_at(idx) - 1) % period == 0
            return aligned & (container.rows_ahead_at(idx) >= needed)

        return accept

    def _check(self, container) -> tuple:
        who = repr(self)
        _episodic_or_refuse(who, container)
        _state_name(who, container, self.state)
        return _resolve_names(who, container, self.names)

    def can_sample(self, container) -> bool:
        """Whether ``container`` holds a window that may be drawn (an O(rows) scan)."""
        self._check(container)
        return bool(self._listed(container).any())

    def _admissible_listed(self, container):
        """:meth:`_admissible`, listed for every row at its second call: a window starts at one
        row in ``period``, so the draws by rejection take several rounds (then the rows are
        listed anyway); each row's answer is its own, so the listed ones are the same."""
        admissible, listed, calls = self._admissible(container), None, 0

        def accept(idx):
            nonlocal listed, calls
            calls += 1
            if calls == 1:
                return admissible(idx)
            if listed is None:
                listed = self._listed(container)
            return listed[idx]

        return accept

    def _listed(self, container) -> np.ndarray:
        """For every row: whether it starts a window that may be drawn (sampleable, too)."""
        listed = listed_window_starts(container, self.period, self._needed())
        if listed is None:
            rows = np.arange(len(container))
            listed = container.is_sampleable_at(rows) & self._admissible(container)(rows)
        return listed

    def sample(self, container) -> dict:
        names = self._check(container)
        listed = listed_window_starts(container, self.period, self._needed())
        if listed is not None:  # the same draws, each round tested by indexing the list
            starts = draw_listed(self._rows, container, self.batch_size, listed)
        else:
            starts = self._rows.uniform(container, self.batch_size,
                                        self._admissible_listed(container))
        batch = self._gather(container, starts, names)
        return batch if self.device is None else _to_device(batch, self.device)

    def windows(self, container) -> list:
        """Every window that may be drawn, oldest first (lane by lane), one mapping each
        (``(T, ...)`` arrays): what ``sample`` draws from."""
        names = self._check(container)
        batch = self._gather(container, np.flatnonzero(self._listed(container)), names)
        return [{name: value[i] for name, value in batch.items()}
                for i in range(len(batch["seq_lens"]))]

    def _gather(self, container, starts: np.ndarray, names: tuple) -> dict:
        length = self.sequence_length
        seq_lens = np.minimum(container.rows_ahead_at(starts), length).astype(np.int64)
        if not self.pad:
            seq_lens = np.full(len(starts), length, dtype=np.int64)
        offsets = np.arange(length)
        mask = offsets < seq_lens[:, None]
        # Padded positions read the window's first row and are zeroed after the gather.
        rows = np.where(mask, starts[:, None] + offsets, starts[:, None])
        batch = {}
        for name in names:
            value = container.take(name, rows)
            value[~mask] = 0
            batch[name] = value
        first = container.step_number_at(starts) == 1
        initial = container.take(self.state, starts)
        initial[first] = 0
        is_first = np.zeros((len(starts), length), dtype=bool)
        is_first[:, 0] = first
        batch.update(mask=mask, seq_lens=seq_lens, is_first=is_first, initial_state=initial)
        return batch
