"""Running statistics: :class:`RunningMeanStd`, the running mean and variance that the on-policy
algorithms normalise observations (and divide rewards) by."""

from __future__ import annotations

import numpy as np

from stagerl.utils.numpy_calls import clip, mean_var

__all__ = ["RunningMeanStd"]

_FLOATS = (np.float64, np.float32)  # float64 first: the returns


class RunningMeanStd:
    """Running mean and variance of observations (Chan et al.'s parallel update), for the
    observation normalisation option: ``clip((x - mean) / sqrt(var + eps), -10, 10)``.

    Example:
        >>> rms = RunningMeanStd((2,))
        >>> rms.update(np.array([[1.0, 2.0], [3.0, 2.0]]))
        >>> rms.mean.round(3).tolist(), rms.var.round(3).tolist()
        ([2.0, 2.0], [1.0, 0.0])
    """

    def __init__(self, shape: tuple, clip: float = 10.0, epsilon: float = 1e-8):
        self.mean, self.var = np.zeros(shape), np.ones(shape)
        self.count, self.clip, self.epsilon = 1e-4, clip, epsilon

    def update(self, x: np.ndarray) -> None:
        """Fold the rows of ``x`` in; no rows change nothing (their mean would be NaN)."""
        n = len(x)
        if n == 0:
            return
        if x.dtype in _FLOATS:
            if n == 1:  # one row (a step's return): its mean and variance
                mean = x[0]
                var = (mean - mean) * (mean - mean)  # 0 (NaN for an infinite or NaN entry)
            else:  # x.mean(axis=0), x.var(axis=0) without numpy's Python layers
                mean, var = mean_var(x)
        else:
            mean, var = x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = mean - self.mean
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / np.sqrt(self.var + self.epsilon)
        return clip(z, -self.clip, self.clip).astype(np.float32)  # np.clip's own ufunc
