"""Explorers that sample an action from weights derived from the action values: in proportion
to the values, from their softmax, or by the Gumbel-max trick (see :mod:`stagerl.policies.explorers`
for the shapes and masks every explorer takes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stagerl.core.policy import as_rng
from stagerl.policies.explorer_base import Explorer, as_array, as_mask, masked, sample, softmax

__all__ = ["WeightedExplorer", "WeightedSoftmaxExplorer", "GumbelSoftmaxExplorer"]


@dataclass(eq=False)
class WeightedExplorer(Explorer):
    """Samples an action with probability proportional to its (non-negative) value.

    Example:
        >>> import stagerl as rl
        >>> explorer = rl.WeightedExplorer(rng=0)
        >>> explorer.prob([1.0, 3.0, 0.0]).tolist()
        [0.25, 0.75, 0.0]
        >>> explorer.plan([1.0, 3.0, 0.0], mask=[True, False, True])
        0
    """

    rng: Any = None

    def __post_init__(self) -> None:
        self.rng = as_rng(self.rng)

    def _weights(self, values: Any, mask: Any) -> np.ndarray:
        values = as_array(values)
        if (values < 0).any():
            raise ValueError(
                f"WeightedExplorer needs non-negative values (weights), got {values.tolist()}"
            )
        weights = values if mask is None else np.where(as_mask(mask, values), values, 0.0)
        if not (weights.sum(axis=-1) > 0).all():
            raise ValueError(
                f"WeightedExplorer needs a positive total weight over the legal actions, got "
                f"{weights.tolist()}"
            )
        return weights

    def plan(self, values: Any, mask: Any = None) -> Any:
        return sample(self._weights(values, mask), self.rng)

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        weights = self._weights(values, mask).astype(np.float64)
        return weights / weights.sum(axis=-1, keepdims=True)


@dataclass(eq=False)
class WeightedSoftmaxExplorer(Explorer):
    """Samples an action from ``softmax(values)`` over the legal actions.

    Example:
        >>> import stagerl as rl
        >>> explorer = rl.WeightedSoftmaxExplorer(rng=0)
        >>> explorer.prob([0.0, 0.0, 5.0], mask=[True, True, False]).tolist()
        [0.5, 0.5, 0.0]
    """

    rng: Any = None

    def __post_init__(self) -> None:
        self.rng = as_rng(self.rng)

    def plan(self, values: Any, mask: Any = None) -> Any:
        return sample(self.prob(values, mask), self.rng)

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        values = as_array(values)
        return softmax(values, None if mask is None else as_mask(mask, values))


@dataclass(eq=False)
class GumbelSoftmaxExplorer(Explorer):
    """Samples from ``softmax(values)`` by the Gumbel-max trick: ``argmax(values + Gumbel noise)``.

    Example:
        >>> import stagerl as rl
        >>> explorer = rl.GumbelSoftmaxExplorer(rng=0)
        >>> explorer.plan([0.0, 9.0, 1.0], mask=[True, False, True]) in (0, 2)
        True
        >>> explorer.prob([0.0, 0.0]).tolist()
        [0.5, 0.5]
    """

    rng: Any = None

    def __post_init__(self) -> None:
        self.rng = as_rng(self.rng)

    def plan(self, values: Any, mask: Any = None) -> Any:
        values = as_array(values)
        mask = None if mask is None else as_mask(mask, values)
        perturbed = masked(values + self.rng.gumbel(size=values.shape), mask)
        if values.ndim == 1:
            return int(np.argmax(perturbed))
        return np.argmax(perturbed, axis=-1)

    def prob(self, values: Any, mask: Any = None) -> np.ndarray:
        values = as_array(values)
        return softmax(values, None if mask is None else as_mask(mask, values))
