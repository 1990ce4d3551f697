"""The Explorer base class and the array helpers the explorers share.

Action values arrive as one row ``(n_actions,)`` or a batch ``(batch, n_actions)``, as numpy
arrays, lists or torch tensors; masks are ``True`` where an action is legal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Explorer"]


def as_array(values: Any) -> np.ndarray:
    if type(values) is np.ndarray:
        return values
    if hasattr(values, "detach"):  # a torch tensor, possibly on an accelerator
        return values.detach().cpu().numpy()
    return np.asarray(values)


def as_mask(mask: Any, values: np.ndarray) -> np.ndarray:
    if type(mask) is not np.ndarray or mask.dtype != np.bool_:
        mask = as_array(mask).astype(bool)
    if mask.shape != values.shape:
        raise ValueError(
            f"mask must have the shape of values {values.shape}, got mask of shape {mask.shape}"
        )
    if not (mask.any() if mask.ndim == 1 else mask.any(axis=-1).all()):
        raise ValueError("mask has a row with no legal action; at least one must be True")
    return mask


def masked(values: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    return values if mask is None else np.where(mask, values, -np.inf)


def greedy_mass(values: np.ndarray, break_ties: bool, mass: float = 1.0) -> np.ndarray:
    """Per row, ``mass`` on the greedy choice: on the first maximum, or split evenly over all
    maxima with ``break_ties`` (``mass / k`` each, computed as written, so it matches a formula
    a user writes by hand to the last bit)."""
    if break_ties:
        is_max = values == values.max(axis=-1, keepdims=True)
        return mass * is_max / is_max.sum(axis=-1, keepdims=True)
    weights = np.zeros(values.shape)
    np.put_along_axis(weights, np.argmax(values, axis=-1)[..., None], mass, axis=-1)
    return weights


def uniform_among(candidates_BA: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row, a uniformly drawn column among those where ``candidates_BA`` is True."""
    scores_BA = np.where(candidates_BA, rng.random(candidates_BA.shape), -1.0)
    return np.argmax(scores_BA, axis=-1)


def sample(p: np.ndarray, rng: np.random.Generator) -> Any:
    """Draw an index per row from (unnormalised, non-negative) weights ``p``.

    Inverse-CDF sampling: the first index whose cumulative weight exceeds ``u * total``, which is
    never an index of weight 0. Rounding can put ``u * total`` at the very top, so the result is
    clipped to the last index of positive weight.
    """
    cumulative = np.cumsum(p, axis=-1)
    if p.ndim == 1:
        index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
        return index if index < p.shape[0] else int(np.flatnonzero(p > 0)[-1])
    u = rng.random((p.shape[0], 1)) * cumulative[:, -1:]
    index = (cumulative <= u).sum(axis=-1)
    last_positive = p.shape[-1] - 1 - np.argmax(p[:, ::-1] > 0, axis=-1)
    return np.minimum(index, last_positive)


def softmax(values: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    logits = masked(values.astype(np.float64, copy=False), mask)
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


class Explorer:
    """Base class of explorers: ``plan(values, mask=None)`` and ``prob(values, mask=None)``.

    Example:
        >>> import stagerl as rl
        >>> rl.GreedyExplorer().plan([0.1, 0.7, 0.2])
        1
    """

    def plan(self, values: Any, mask: Any = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement plan(values, mask=None)")

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement prob(values, mask=None)")

    def state_dict(self) -> dict[str, Any]:
        """The explorer's counters and rng state (plain values)."""
        rng = getattr(self, "rng", None)
        return {} if rng is None else {"rng": rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        if "rng" in state:
            self.rng.bit_generator.state = state["rng"]
