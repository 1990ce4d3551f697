"""Diagonal-Gaussian helpers for continuous-action policies, and a masked categorical, in torch.

Every constant is a Python float, so the helpers work on any device and inside any graph without
a host-to-device copy; the standard deviation is parametrised by its logarithm (``log_std``), the
usual output of a policy network. Shapes broadcast as in torch; the last axis is the action axis.
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
    "MASKED_LOGIT",
    "masked_categorical_log_prob_entropy",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
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
    return -0.5 * z * z - log_std - _LOG_SQRT_2PI


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
    return (log_std + (0.5 + _LOG_SQRT_2PI)).sum(-1)


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
    shape = torch.broadcast_shapes(mean.shape, log_std.shape)
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


#: The logit an illegal action gets: finite, so that no ``0 * -inf`` makes a NaN, and low enough
#: that its probability is exactly 0 in float32 (as sb3-contrib's MaskableCategorical).
MASKED_LOGIT = -1e8


def masked_categorical_log_prob_entropy(
    logits: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor | None = None,
    entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The log-probability of ``actions`` ``(B,)`` under the categorical of ``logits`` ``(B, n)``
    restricted to the legal actions of ``mask`` (bool ``(B, n)``; ``None``: all legal), and its
    entropy ``(B,)`` (``None`` with ``entropy=False``). Illegal actions get the logit
    :data:`MASKED_LOGIT`: probability 0, no share of the entropy, no gradient.

    Example:
        >>> import torch
        >>> from stagerl.utils.distributions import masked_categorical_log_prob_entropy
        >>> logits, mask = torch.zeros(1, 4), torch.tensor([[True, True, False, False]])
        >>> log_prob, entropy = masked_categorical_log_prob_entropy(logits, torch.tensor([1]),
        ...                                                         mask)
        >>> round(log_prob.exp().item(), 4), round(entropy.item(), 4)   # 1/2 each, log 2
        (0.5, 0.6931)
    """
    if mask is not None:
        logits = torch.where(mask, logits, MASKED_LOGIT)
    log_probs = F.log_softmax(logits, dim=-1)
    log_prob = log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    if not entropy:
        return log_prob, None
    terms = log_probs.exp() * log_probs
    if mask is not None:
        terms = torch.where(mask, terms, 0.0)
    return log_prob, -terms.sum(-1)
