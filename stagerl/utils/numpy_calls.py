"""numpy's own kernels called without the Python layers around them, for the per-act paths.

A call such as ``np.clip(a, low, high)`` or ``a.var(axis=0)`` passes through one or two Python
functions before it reaches the ufunc that does the work: about a microsecond each, which an
on-policy act pays several times over (its observation normalisation, its action's clip, the
reward statistics). These are the same ufunc calls with the same arguments, so the same values
bit for bit (a test holds each to its numpy original on the same inputs).

Example:
    >>> import numpy as np
    >>> clip(np.array([-3.0, 0.5, 3.0]), -1.0, 1.0).tolist()
    [-1.0, 0.5, 1.0]
    >>> [v.tolist() for v in mean_var(np.array([[1.0, 2.0], [3.0, 2.0]]))]
    [[2.0, 2.0], [1.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

try:  # the ufunc that np.clip reaches through fromnumeric's and ndarray's Python layers
    from numpy._core.umath import clip
except ImportError:  # numpy 1
    from numpy.core.umath import clip  # type: ignore[no-redef]

__all__ = ["clip", "cumsum", "mean_var"]

_sum = np.add.reduce
#: ``np.cumsum(a, axis)``: numpy's cumulative sum is the add ufunc's accumulate.
cumsum = np.add.accumulate
_divide = np.true_divide


def mean_var(x: np.ndarray) -> tuple:
    """``(x.mean(axis=0), x.var(axis=0))`` of a float array with at least one row: numpy's own
    reductions and divisions in its order (``numpy/_core/_methods.py``), without its checks.

    Example:
        >>> import numpy as np
        >>> mean, var = mean_var(np.array([1.0, 2.0, 4.0]))
        >>> round(float(mean), 4), round(float(var), 4)
        (2.3333, 1.5556)
    """
    count = np.intp(x.shape[0])
    mean = _sum(x, 0)
    if type(mean) is np.ndarray:
        mean = _divide(mean, count, out=mean, casting="unsafe", subok=False)
    else:
        mean = mean.dtype.type(mean / count)
    row_mean = _sum(x, 0, None, None, True)
    row_mean = _divide(row_mean, count, out=row_mean, casting="unsafe", subok=False)
    deviations = np.subtract(x, row_mean)  # never 0-d: row_mean keeps x's dimensions
    deviations = np.square(deviations, out=deviations)
    var = _sum(deviations, 0)
    if type(var) is np.ndarray:
        var = _divide(var, count, out=var, casting="unsafe", subok=False)
    else:
        var = var.dtype.type(var / count)
    return mean, var
