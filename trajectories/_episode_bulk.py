"""`EpisodesBuffer.extend`: many steps in one call, with the bookkeeping of single pushes.

A function over the buffer (its traces, metadata and phase), kept apart from the per-step path
of `trajectories.episodes`; the buffer's ``extend`` method calls it.
"""

from __future__ import annotations

import numpy as np

from trajectories._casting import TraceKeyError, coerce_frame, coerce_frames
from trajectories._episode_rules import (
    COMPLETION,
    FULL,
    PARTIAL,
    STARTED,
    STEPPING,
    classify_push,
)
from trajectories.nested import NestedFrames, first_leaf, is_nested, leading_length
from trajectories.traces import write_function_of

__all__ = ["extend"]

_NO_ROWS = np.zeros(0, dtype=np.int64)


def extend(buffer, new_episode: bool, columns: dict) -> int:
    """Insert the steps in ``columns`` into the `EpisodesBuffer` ``buffer`` (see
    `EpisodesBuffer.extend` for the columns); returns the number of transitions inserted.

    Checks every rule and value before anything is written, then writes the first state (a new
    episode), the steps in one append, and the completion, as the equivalent pushes would."""
    completion = buffer._completion
    nxt = columns.pop(completion, None) if completion else None
    keys = tuple(columns)
    if not keys or classify_push(keys, buffer._slot_of, buffer._slots, buffer._state_like,
                                 completion) != FULL:
        raise TraceKeyError(f"extend needs every trace {[s[0] for s in buffer._slots]}, "
                            f"got {list(keys)}")
    if new_episode and not buffer._multiplexed:
        raise ValueError("layouts without a multiplexed state have no episode start; "
                         "use extend(new_episode=False, ...)")
    state_like = {n for n in keys if buffer._slot_of[n] in buffer._state_like} \
        if new_episode else set()
    lengths = {n: leading_length(v) for n, v in columns.items()}
    plain = [n for n in keys if n not in state_like]
    T = lengths[plain[0]] if plain else lengths[keys[0]] - 1
    for n, k in lengths.items():
        want = T + 1 if n in state_like else T
        if k != want or T < 0:
            rule = ("the state-like columns carry T + 1 rows (first state, then T next "
                    "states), the others T" if new_episode else "every column carries T rows")
            raise ValueError(f"extend: column {n!r} has {k if k >= 0 else 'no'} rows, "
                             f"expected {want}: {rule}")
    # Check the rules as the equivalent pushes would, before writing anything.
    rules, phase = buffer._rules, buffer._phase
    if new_episode and not rules.allowed[PARTIAL][phase]:
        raise rules.refusal(PARTIAL, phase)
    if T and not new_episode and not rules.allowed[FULL][phase]:
        raise rules.refusal(FULL, phase)
    if nxt is not None and T == 0 and (new_episode or phase != STEPPING):
        raise rules.refusal(COMPLETION, STARTED if new_episode else phase)
    traces = buffer.traces
    cols = {n: _prepared(traces, n, v) for n, v in columns.items()}
    if nxt is not None:
        ref = traces.take(completion, _NO_ROWS)
        if ref.dtype != object:
            nxt = coerce_frame(nxt, ref.dtype, ref.shape[1:], completion)
    # Write: the first state, the steps in one append, then the completion.
    if new_episode:
        first = {n: _nested_buffer(traces, n).frame_of(cols[n], 0)
                 if isinstance(cols[n], NestedFrames) else cols[n][0] for n in state_like}
        cols = {n: cols[n][1:] if n in state_like else c for n, c in cols.items()}
        first_keys = tuple(first)
        buffer._start_episode(write_function_of(traces, first_keys),
                              write_function_of(traces, first_keys, pad=True), first)
    if T:
        traces.append(**cols)
        _steps_appended(buffer, T)
    if nxt is not None:
        buffer._complete(write_function_of(traces, (completion,))({completion: nxt}))
    return T


def _prepared(traces, name, values):
    ref = traces.take(name, _NO_ROWS)
    if is_nested(ref):  # one array per leaf, checked by the nested buffer itself
        return _nested_buffer(traces, name)._prepare(values)
    if first_leaf(ref).dtype == object:  # a column whose dtype the first value will fix
        return np.asarray(values)
    return coerce_frames(values, ref.dtype, ref.shape[1:], name)


def _nested_buffer(traces, name):
    while not hasattr(traces, "_where"):  # through wrappers, which keep .traces
        traces = traces.traces
    return traces._where[name][1]


def _steps_appended(buffer, T: int) -> None:
    """The entries of ``T`` steps appended to the running episode (T > 0), as ``T`` full
    pushes would leave them."""
    # Within the running episode, the entry with step s is sampleable iff s <= th.
    meta = buffer._meta
    k = meta.step
    K = k + T
    th = K - 1 if buffer._completion is None else K - 2
    for back in (2, 1):  # old entries whose flag may change: steps k-1 and k
        s = k - back + 1
        if s >= 1:
            meta.mark(back, bool(s <= th))
    steps = np.arange(k + 1, K + 1, dtype=np.int32)
    meta.extend(steps, steps <= th)
    buffer._phase = STEPPING

