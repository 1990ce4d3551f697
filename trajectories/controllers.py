"""Controllers decide when a trajectory may hand out a batch: a fixed insert/sample ratio.

An *insert* is a transition: a full push counts 1, a bulk insert its transitions; an episode's
first state (partial push) and a ``next_action`` completion count 0 and do not call
``on_insert``. ``threshold`` and ``ratio`` are in transitions, like SB3's ``learning_starts``
and ``train_freq``.

Counting is exact: a float ratio is taken as the simplest fraction that the float stands for
(the one with the smallest denominator among the numbers that round to it: ``0.29`` is 29/100,
``1 / 3`` is 1/3), and the comparison is made in integers. So ``ratio=0.29`` after 100 inserts
allows ``floor(100 * 29 / 100) + 1 = 30`` batches, whatever ``100 * 0.29`` rounds to in floating
point.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["InsertSampleRatioController", "EpisodeSampleRatioController"]


def _check(owner, ratio, threshold):
    if isinstance(ratio, bool) or not isinstance(ratio, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"{owner}: ratio must be a number, got ratio={ratio!r}")
    if not (ratio > 0 and np.isfinite(float(ratio))):
        raise ValueError(f"{owner}: ratio must be positive and finite, got ratio={ratio}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)):
        raise TypeError(f"{owner}: threshold must be an int, got threshold={threshold!r}")
    if threshold < 0:
        raise ValueError(f"{owner}: threshold must be >= 0, got threshold={threshold}")


def _simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The fraction with the smallest denominator in ``[lo, hi]`` (``0 < lo <= hi``), by
    continued fractions."""
    a = math.floor(lo)
    if a == lo or a + 1 <= hi:
        return Fraction(a if a == lo else a + 1)
    return a + 1 / _simplest_between(1 / (hi - a), 1 / (lo - a))


def exact_ratio(ratio) -> tuple[int, int]:
    """``(numerator, denominator)`` of ``ratio``: for a float, the simplest fraction among the
    numbers that round to it (``0.29`` -> 29/100, ``1 / 3`` -> 1/3; a decimal of up to about 7
    significant digits is always its own simplest fraction); an int or a Fraction as it is."""
    if isinstance(ratio, (float, np.floating)):
        x = np.asarray(ratio)  # a float32 keeps its own spacing
        exact = Fraction(float(x))
        lo = (exact + Fraction(float(np.nextafter(x, -np.inf)))) / 2
        hi = (exact + Fraction(float(np.nextafter(x, np.inf)))) / 2
        ratio = _simplest_between(lo, hi)
    else:
        ratio = Fraction(ratio)
    return ratio.numerator, ratio.denominator


class _Ratio:
    """The exact count shared by both controllers: one sample per ``1 / ratio`` counted units
    once ``threshold`` are in, compared in integers."""

    def _ratio_terms(self) -> tuple[int, int]:
        # Recomputed only when ``ratio`` was set to another object since (cheap identity test).
        cached = self.__dict__.get("_exact")
        if cached is None or cached[0] is not self.ratio:
            cached = self.__dict__["_exact"] = (self.ratio, *exact_ratio(self.ratio))
        return cached[1], cached[2]

    def _allows(self, counted: int) -> bool:
        """``n_sampled <= (counted - threshold) * ratio``, exactly; counts a sample if so."""
        if self._would_allow(counted):
            self.n_sampled += 1
            return True
        return False

    def _own_rule(self, cls: type) -> bool:
        """Whether ``on_sample`` is ``cls``'s own: not overridden by a subclass, not replaced on
        the instance."""
        return type(self).on_sample is cls.on_sample and "on_sample" not in self.__dict__

    def _would_allow(self, counted: int) -> bool:
        """Whether ``_allows(counted)`` is true, counting nothing."""
        if counted < self.threshold:
            return False
        p, q = self._ratio_terms()
        return self.n_sampled * q <= (counted - self.threshold) * p


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"on_insert counts transitions, an int; got n={n!r}")
    if n < 0:
        raise ValueError(f"on_insert counts transitions, got n={n}; pass n >= 0")
    return int(n)


@dataclass
class InsertSampleRatioController(_Ratio):
    """Allow one sample per ``1 / ratio`` inserted transitions once ``threshold`` are in.

    ``on_sample()`` is true (and counts a sample) iff ``n_inserted >= threshold`` and
    ``n_sampled <= (n_inserted - threshold) * ratio``; after N >= threshold transitions,
    ``floor((N - threshold) * ratio) + 1`` samples have been allowed, counted exactly (see the
    module).

    Example:
        >>> c = InsertSampleRatioController(ratio=0.5, threshold=2)
        >>> c.on_insert(5)
        >>> [c.on_sample() for _ in range(3)]
        [True, True, False]
    """

    ratio: float = 1.0
    threshold: int = 1
    n_inserted: int = 0
    n_sampled: int = 0

    def __post_init__(self):
        _check("InsertSampleRatioController", self.ratio, self.threshold)

    def on_insert(self, n: int, data=None) -> None:
        if type(n) is not int:
            n = _count(n)
        elif n < 0:
            _count(n)
        self.n_inserted += n

    def on_sample(self) -> bool:
        return self._allows(self.n_inserted)

    def would_sample(self) -> bool:
        """Whether ``on_sample()`` would be true now; counts nothing. Where ``on_sample`` was
        overridden or replaced, True: that ``on_sample`` decides."""
        if not self._own_rule(InsertSampleRatioController):
            return True
        return self._would_allow(self.n_inserted)


@dataclass
class EpisodeSampleRatioController(_Ratio):
    """`InsertSampleRatioController` on finished episodes: steps inserted with ``terminal`` or
    ``truncated`` set (a time limit ends an episode too; see `Trajectory.push`).

    Example:
        >>> c = EpisodeSampleRatioController(ratio=1.0, threshold=1)
        >>> c.on_insert(1, {"terminal": False}); c.on_sample()
        False
        >>> c.on_insert(3, {"terminal": [False, True, True]}); c.n_episodes
        2
        >>> [c.on_sample() for _ in range(3)]
        [True, True, False]
    """

    ratio: float = 1.0
    threshold: int = 1
    n_episodes: int = 0
    n_sampled: int = 0

    def __post_init__(self):
        _check("EpisodeSampleRatioController", self.ratio, self.threshold)

    def on_insert(self, n: int, data=None) -> None:
        _count(n)
        if data is None:
            return
        ended = np.asarray(data["terminal"], dtype=bool) if "terminal" in data else False
        if "truncated" in data:
            ended = ended | np.asarray(data["truncated"], dtype=bool)
        self.n_episodes += int(np.count_nonzero(ended))

    def on_sample(self) -> bool:
        return self._allows(self.n_episodes)

    def would_sample(self) -> bool:
        """Whether ``on_sample()`` would be true now; counts nothing. Where ``on_sample`` was
        overridden or replaced, True: that ``on_sample`` decides."""
        if not self._own_rule(EpisodeSampleRatioController):
            return True
        return self._would_allow(self.n_episodes)
