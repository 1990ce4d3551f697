"""Argument checks shared by the trajectories package and stagerl (one copy of each rule).

Example:
    >>> require_positive_int("BatchSampler", "batch_size", 0)
    Traceback (most recent call last):
    ...
    ValueError: BatchSampler: batch_size must be positive, got batch_size=0
    >>> as_rng(3).integers(10) == as_rng(3).integers(10)
    np.True_
"""

from __future__ import annotations

import numpy as np

__all__ = ["require_positive_int", "as_rng"]


def require_positive_int(owner: str | None, name: str, value) -> int:
    """``value`` as an ``int`` if it is a positive integer (not a bool); else ``TypeError`` (not
    an integer) or ``ValueError`` (zero or negative), naming ``owner``, ``name`` and the value."""
    prefix = f"{owner}: " if owner else ""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{prefix}{name} must be an int, got {name}={value!r} of type "
                        f"{type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{prefix}{name} must be positive, got {name}={value}")
    return int(value)


def as_rng(rng) -> np.random.Generator:
    """An ``np.random.Generator`` from an int seed, a generator (used as is, shared) or ``None``
    (fresh entropy); anything else raises ``TypeError``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be an int seed, an np.random.Generator or None, got {rng!r} of "
                    f"type {type(rng).__name__}")
