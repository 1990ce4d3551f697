"""Controllers decide when a trajectory may hand out a batch: a fixed insert/sample ratio.

An *insert* is a transition: a full push counts 1, a bulk insert its transitions; an episode's
first state (partial push) and a ``next_action`` completion count 0 and do not call
``on_insert``. ``threshold`` and ``ratio`` are in transitions, like SB3's ``learning_starts``
and ``train_freq``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["InsertSampleRatioController", "EpisodeSampleRatioController"]


def _check(owner, ratio, threshold):
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: ratio must be a number, got ratio={ratio!r}")
    if not ratio > 0:
        raise ValueError(f"{owner}: ratio must be positive, got ratio={ratio}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)):
        raise TypeError(f"{owner}: threshold must be an int, got threshold={threshold!r}")
    if threshold < 0:
        raise ValueError(f"{owner}: threshold must be >= 0, got threshold={threshold}")


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"on_insert counts transitions, an int; got n={n!r}")
    if n < 0:
        raise ValueError(f"on_insert counts transitions, got n={n}; pass n >= 0")
    return int(n)


@dataclass
class InsertSampleRatioController:
    """Allow one sample per ``1 / ratio`` inserted transitions once ``threshold`` are in.

    ``on_sample()`` is true (and counts a sample) iff ``n_inserted >= threshold`` and
    ``n_sampled <= (n_inserted - threshold) * ratio``; after N >= threshold transitions,
    ``floor((N - threshold) * ratio) + 1`` samples have been allowed.

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
        if self.n_inserted >= self.threshold and \
                self.n_sampled <= (self.n_inserted - self.threshold) * self.ratio:
            self.n_sampled += 1
            return True
        return False


@dataclass
class EpisodeSampleRatioController:
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
        if self.n_episodes >= self.threshold and \
                self.n_sampled <= (self.n_episodes - self.threshold) * self.ratio:
            self.n_sampled += 1
            return True
        return False
