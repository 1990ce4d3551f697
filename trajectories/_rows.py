"""Drawing row indices for the samplers: uniform by rejection, or proportional to priority.

Uniform draws use rejection: draw among all rows and redraw the few that are not sampleable
(episode boundaries, a SARTSA row still waiting for its next action, rows a stack cannot fill).
That is uniform over the sampleable rows and costs O(batch) instead of an O(capacity) scan of the
sampleable mask per batch. When few rows are admissible (under ``_MIN_ACCEPTANCE`` of them, or
when ``_MAX_ROUNDS`` rounds of rejection did not fill the batch), the admissible rows are listed
once (O(capacity)) and the rest of the batch is drawn among them, which keeps the draw uniform.
"""

from __future__ import annotations

import numpy as np

_MIN_ACCEPTANCE = 0.25
_MAX_ROUNDS = 8
_NO_ROWS = np.zeros(0, dtype=np.int64)


def _uniform_indices(rng, n: int, size: int) -> np.ndarray:
    """``size`` indices uniform over ``range(n)``.

    ``Generator.integers`` spends about 4 us of set-up per call, more than drawing a few hundred
    values; scaling ``rng.random`` doubles is twice as fast for a batch and uniform to within a
    relative 2**-53 per index."""
    idx = (rng.random(size) * n).astype(np.int64)
    return np.minimum(idx, n - 1, out=idx)  # u * n can round up to n when u is near 1


def _layer(container, cls):
    """The first object of type ``cls`` down the ``.traces`` chain (EpisodesBuffer, wrappers)."""
    while container is not None:
        if isinstance(container, cls):
            return container
        container = getattr(container, "traces", None)
    return None


def _episodic(container) -> bool:
    return hasattr(container, "is_sampleable_at")


class _Rows:
    """Draws logical row indices of a container, uniformly or by priority, never a row that
    ``accept`` refuses (nor, in an EpisodesBuffer, a non-sampleable row)."""

    def __init__(self, who: str, rng):
        self.who = who
        self.rng = rng

    def _empty(self):
        return ValueError(f"{self.who} cannot sample an empty trajectory")

    def _none_ok(self):
        return ValueError(f"{self.who} found no sampleable row in the trajectory "
                          "(every stored row is an episode boundary or still incomplete)")

    @staticmethod
    def _ok(container, accept):
        """The admissibility test of rows (``None`` when every row is admissible)."""
        if not _episodic(container):
            return accept
        if accept is None:
            return container.is_sampleable_at
        return lambda idx: container.is_sampleable_at(idx) & accept(idx)

    def uniform(self, container, batch_size: int, accept=None) -> np.ndarray:
        rng, n = self.rng, len(container)
        if n == 0:
            raise self._empty()
        ok = self._ok(container, accept)
        if ok is None:
            return _uniform_indices(rng, n, batch_size)
        share = 1.0
        if ok is not accept:
            n_ok = container.n_sampleable
            if n_ok == 0:
                raise self._none_ok()
            share = n_ok / n if n_ok < n else 1.0
        idx = _NO_ROWS
        if share >= _MIN_ACCEPTANCE:
            # One generator call with a few extra draws almost always suffices; the accepted
            # draws are independent and uniform over the admissible rows.
            m = int(batch_size / share * 1.05) + 8
            for _ in range(_MAX_ROUNDS):
                more = _uniform_indices(rng, n, m)
                more = more[ok(more)]
                idx = more if not idx.size else np.concatenate([idx, more])
                if idx.size >= batch_size:
                    return idx[:batch_size]
        return np.concatenate([idx, self._listed(ok, n, batch_size - idx.size)])

    def _listed(self, ok, n: int, size: int) -> np.ndarray:
        """``size`` rows uniform over the admissible rows, listed once (the fallback)."""
        candidates = np.flatnonzero(ok(np.arange(n)))
        if candidates.size == 0:
            raise self._none_ok()
        return candidates[self.rng.integers(candidates.size, size=size)]

    def prioritized(self, container, tree, batch_size: int, accept=None):
        """Stratified over the tree's total; rows refused are redrawn proportionally."""
        rng, n = self.rng, len(container)
        if n == 0:
            raise self._empty()
        total = tree.total
        if not total > 0:
            raise ValueError(f"{self.who} cannot sample: every stored priority is 0")
        ok = self._ok(container, accept)
        idx, _ = tree.sample(batch_size, rng)
        good = idx < n if ok is None else (idx < n) & ok(np.minimum(idx, n - 1))
        for _ in range(_MAX_ROUNDS):
            bad = np.flatnonzero(~good)
            if not bad.size:
                return idx
            redraw, _ = tree.get_batch(rng.random(bad.size) * total)
            idx[bad] = redraw
            good[bad] = redraw < n if ok is None else (redraw < n) & ok(np.minimum(redraw, n - 1))
        bad = np.flatnonzero(~good)
        if not bad.size:
            return idx
        p = np.asarray(tree)[:n]
        if ok is not None:
            p = p * ok(np.arange(n))
        positive = np.flatnonzero(p)
        if not positive.size:
            raise self._none_ok()
        c = np.cumsum(p)  # u * total may round up to total: clip to the last admissible row
        drawn = np.searchsorted(c, rng.random(bad.size) * c[-1], side="right")
        idx[bad] = np.minimum(drawn, positive[-1])
        return idx
