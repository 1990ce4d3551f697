"""Diagonal-Gaussian helpers for continuous-action policies, in torch.

Every constant is a Python float, so the helpers work on any device and inside any graph without
a host-to-device copy; the standard deviation is parametrised by its logarithm (``log_std``), the
usual output of a policy network. Shapes broadcast as in torch; the last axis is the action axis.
(``stagerl.utils.distributions`` re-exports them beside the action distributions.)
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

__all__ = [
    "gaussian_log_prob",
    "diag_gaussian_log_prob",
    "diag_gaussian_entropy",
    "diag_gaussian_sample",
    "squashed_diag_gaussian_log_prob",
    "LOG_SQRT_2PI",
]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def gaussian_log_prob(
    mean: torch.Tensor, log_std: torch.Tensor, x: torch.Tensor
) -> torch.Tensor:
    """Element-wise ``log N(x; mean, exp(log_std)**2)``.

    Example:
        >>> import torch
        >>> from stagerl.utils import gaussian_log_prob
        >>> zero = torch.tensor(0.0)
        >>> round(gaussian_log_prob(zero, zero, zero).item(), 4)    # -log(sqrt(2 pi))
        -0.9189
    """
    z = (x - mean) * torch.exp(-log_std)
    return -0.5 * z * z - log_std - LOG_SQRT_2PI


def diag_gaussian_log_prob(
    mean: torch.Tensor, log_std: torch.Tensor, x: torch.Tensor
) -> torch.Tensor:
    """``log N(x; mean, diag(exp(log_std)**2))``, summed over the last (action) axis.

    Example:
        >>> import torch
        >>> from stagerl.utils import diag_gaussian_log_prob
        >>> mean_BA, log_std_A = torch.zeros(5, 2), torch.zeros(2)
        >>> diag_gaussian_log_prob(mean_BA, log_std_A, torch.zeros(5, 2)).shape
        torch.Size([5])
    """
    return gaussian_log_prob(mean, log_std, x).sum(-1)


def diag_gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """The entropy of a diagonal Gaussian, summed over the last (action) axis.

    It depends on ``log_std`` alone; a ``(n_actions,)`` ``log_std`` gives one scalar for the batch.

    Example:
        >>> import torch
        >>> from stagerl.utils import diag_gaussian_entropy
        >>> round(diag_gaussian_entropy(torch.zeros(1)).item(), 4)
        1.4189
    """
    return (log_std + (0.5 + LOG_SQRT_2PI)).sum(-1)


def diag_gaussian_sample(
    mean: torch.Tensor, log_std: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """A reparametrised draw ``mean + exp(log_std) * noise``, the shape of ``mean`` broadcast
    with ``log_std``; ``generator`` (on the tensors' device) makes it reproducible.

    Example:
        >>> import torch
        >>> from stagerl.utils import diag_gaussian_sample
        >>> generator = torch.Generator().manual_seed(0)
        >>> diag_gaussian_sample(torch.zeros(3, 2), torch.zeros(2), generator).shape
        torch.Size([3, 2])
    """
    # The usual case (a policy's mean and log_std of one shape) skips broadcast_shapes, whose
    # Python cost (~13 us) was a visible share of a small network's SAC update.
    shape = mean.shape if mean.shape == log_std.shape else torch.broadcast_shapes(
        mean.shape, log_std.shape)
    noise = torch.randn(shape, generator=generator, device=mean.device, dtype=mean.dtype)
    return mean + torch.exp(log_std) * noise


def squashed_diag_gaussian_log_prob(
    mean: torch.Tensor, log_std: torch.Tensor, pre_tanh: torch.Tensor
) -> torch.Tensor:
    """The log-density of ``tanh(u)`` for ``u ~ N(mean, diag(exp(log_std)**2))`` (SAC's policy).

    Uses ``log(1 - tanh(u)**2) = 2 * (log 2 - u - softplus(-2 u))``, which stays finite where
    ``tanh(u)`` rounds to +-1 (SAC paper, appendix C; the same form as in Spinning Up).

    Example:
        >>> import torch
        >>> from stagerl.utils import squashed_diag_gaussian_log_prob
        >>> u = torch.tensor([[30.0]])
        >>> bool(torch.isfinite(squashed_diag_gaussian_log_prob(torch.zeros(1), torch.zeros(1), u)))
        True
    """
    log_det_jacobian = 2.0 * (_LOG_2 - pre_tanh - F.softplus(-2.0 * pre_tanh))
    return diag_gaussian_log_prob(mean, log_std, pre_tanh) - log_det_jacobian.sum(-1)
