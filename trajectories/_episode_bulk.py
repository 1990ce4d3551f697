"""`EpisodesBuffer.extend`: many steps in one call, with the bookkeeping of single pushes."""

from __future__ import annotations

import numpy as np

from trajectories._casting import TraceKeyError, coerce_frame, coerce_frames
from trajectories._episode_rules import COMPLETION, EMPTY, FULL, PARTIAL, STARTED, STEPPING

__all__: list[str] = []

_NO_ROWS = np.zeros(0, dtype=np.int64)


class _BulkInsert:
    """The bulk insert of `EpisodesBuffer` (a mixin over its traces and metadata)."""

    def extend(self, *, new_episode: bool = True, **columns) -> int:
        """Insert many steps at once; returns the number of transitions inserted.

        With ``new_episode=True`` (the default) the state-like columns (``state``, and
        ``legal_actions_mask`` in SLART layouts) carry ``T + 1`` rows, the episode's first state
        then the ``T`` next states, and the other columns ``T`` rows: the same as
        ``push(state=s[0])`` followed by ``T`` full pushes. With ``new_episode=False`` every
        column has ``T`` rows and the steps continue the current episode. In layouts with
        ``next_action``, ``next_action=a`` (one frame) completes the episode afterwards.
        Bookkeeping is exactly that of the equivalent single pushes; everything is validated
        before anything is written.
        """
        nxt = columns.pop(self._completion, None) if self._completion else None
        keys = tuple(columns)
        kind = self._classify(keys) if keys else None
        if kind != FULL:
            raise TraceKeyError(f"extend needs every trace {[s[0] for s in self._slots]}, "
                                f"got {list(keys)}")
        if new_episode and not self._multiplexed:
            raise ValueError("layouts without a multiplexed state have no episode start; "
                             "use extend(new_episode=False, ...)")
        state_like = {n for n in keys if self._slot_of[n] in self._state_like} \
            if new_episode else set()
        lengths = {n: len(v) if np.ndim(v) else -1 for n, v in columns.items()}
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
        rules, phase = self._rules, self._phase
        if new_episode and not rules.allowed[PARTIAL][phase]:
            raise rules.refusal(PARTIAL, phase)
        if T and not new_episode and not rules.allowed[FULL][phase]:
            raise rules.refusal(FULL, phase)
        if nxt is not None and T == 0 and (new_episode or phase != STEPPING):
            raise rules.refusal(COMPLETION, STARTED if new_episode else phase)
        cols = {n: self._prepare(n, v) for n, v in columns.items()}
        if nxt is not None:
            ref = self.traces.take(self._completion, _NO_ROWS)
            if ref.dtype != object:
                nxt = coerce_frame(nxt, ref.dtype, ref.shape[1:], self._completion)
        # Write: the first state, the steps in one append, then the completion.
        if new_episode:
            first = {n: cols[n][0] for n in state_like}
            cols = {n: cols[n][1:] if n in state_like else c for n, c in cols.items()}
            if phase == EMPTY:
                evict = self._tpush(first)
            else:
                evict = self._tpad(first)
                self._finish_episode()
            self._meta.append(1, 0, evict)
            self._phase = STARTED
        if T:
            self.traces.append(**cols)
            self._bulk_meta(T)
        if nxt is not None:
            self._complete(self._tpush({self._completion: nxt}))
        return T

    def _prepare(self, name, values):
        ref = self.traces.take(name, _NO_ROWS)
        if ref.dtype == object:  # a column whose dtype the first value will fix
            return np.asarray(values)
        return coerce_frames(values, ref.dtype, ref.shape[1:], name)

    def _bulk_meta(self, T: int) -> None:
        """The entries of ``T`` steps appended to the running episode (T > 0), as ``T`` full
        pushes would leave them."""
        # Within the running episode, the entry with step s is sampleable iff s <= th.
        meta = self._meta
        k = meta.step
        K = k + T
        th = K - 1 if self._completion is None else K - 2
        for back in (2, 1):  # old entries whose flag may change: steps k-1 and k
            s = k - back + 1
            if s >= 1:
                meta.mark(back, bool(s <= th))
        steps = np.arange(k + 1, K + 1, dtype=np.int32)
        meta.extend(steps, steps <= th)
        self._phase = STEPPING
