"""The action distributions of every kind of action space (categorical, MultiDiscrete,
MultiBinary, diagonal Gaussian) that the on-policy algorithms act with and learn by, and the
diagonal-Gaussian helpers of ``stagerl.utils.gaussian`` (re-exported here).

A categorical also acts and learns under a legal-action mask (a game's player: illegal actions
have probability 0, no share of the entropy and no gradient); masks are for ``Discrete`` action
spaces only, and the other distributions refuse them.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from stagerl.utils.action_distribution import (
    MASKED_LOGIT,
    ActionDistribution,
    refuse_mask,
)
from stagerl.utils.action_distribution import inverse_cdf as _inverse_cdf
from stagerl.utils.action_distribution import numpy_log_softmax as _numpy_log_softmax
from stagerl.utils.gaussian import (
    LOG_SQRT_2PI,
    diag_gaussian_entropy,
    diag_gaussian_log_prob,
    diag_gaussian_sample,
    gaussian_log_prob,
    squashed_diag_gaussian_log_prob,
)

__all__ = [
    "gaussian_log_prob",
    "diag_gaussian_log_prob",
    "diag_gaussian_entropy",
    "diag_gaussian_sample",
    "squashed_diag_gaussian_log_prob",
    "ActionDistribution",
    "Categorical",
    "MultiCategorical",
    "Bernoulli",
    "DiagGaussian",
    "action_distribution",
    "MASKED_LOGIT",
    "masked_categorical_log_prob_entropy",
]

_LOG_SQRT_2PI = LOG_SQRT_2PI


class Categorical(ActionDistribution):
    """``Discrete(n)``: a categorical distribution over ``n`` logits. Under a legal-action
    ``mask`` (bool, one row per state; torch for the losses, numpy to act) it is the
    categorical of the legal actions: an illegal action gets the logit :data:`MASKED_LOGIT`
    (probability 0, no share of the entropy, no gradient) and is never drawn nor the mode.

    Example:
        >>> import torch
        >>> dist = Categorical(3)
        >>> params = (torch.zeros(2, 3),)
        >>> [round(v, 4) for v in dist.log_prob(params, torch.tensor([0, 2])).tolist()]
        [-1.0986, -1.0986]
        >>> mask = torch.tensor([[True, True, False], [True, False, False]])
        >>> [round(v, 4) for v in dist.log_prob(params, torch.tensor([0, 0]), mask).tolist()]
        [-0.6931, 0.0]
    """

    def __init__(self, n: int):
        self.n_outputs = int(n)

    def _log_probs(self, logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if mask is not None:
            logits = torch.where(mask, logits, MASKED_LOGIT)
        return F.log_softmax(logits, dim=-1)

    def log_prob(self, params: tuple, actions: torch.Tensor,
                 mask: torch.Tensor | None = None) -> torch.Tensor:
        log_probs = self._log_probs(params[0], mask)
        return log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def log_prob_entropy(self, params: tuple, actions: torch.Tensor, entropy: bool = True,
                         mask: torch.Tensor | None = None) -> tuple:
        """Both at once: one ``log_softmax`` (the on-policy losses' hot path)."""
        log_probs = self._log_probs(params[0], mask)
        log_prob = log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        return log_prob, self._entropy(log_probs, mask) if entropy else None

    def entropy(self, params: tuple, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self._entropy(self._log_probs(params[0], mask), mask)

    @staticmethod
    def _entropy(log_probs: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        terms = log_probs.exp() * log_probs
        if mask is not None:  # an illegal action's 0 * MASKED_LOGIT is 0; exactly, here
            terms = torch.where(mask, terms, 0.0)
        return -terms.sum(-1)

    def kl(self, old: tuple, new: tuple) -> torch.Tensor:
        old_log_probs, log_probs = F.log_softmax(old[0], -1), F.log_softmax(new[0], -1)
        return (old_log_probs.exp() * (old_log_probs - log_probs)).sum(-1)

    def sample(self, out, log_std, rng, space, mask=None) -> tuple:
        last = None
        if mask is not None:  # illegal actions: probability 0 (exp(-inf)), never drawn
            mask = np.asarray(mask, dtype=bool)
            out = np.where(mask, out, -np.inf)
            last = out.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)
        log_probs = _numpy_log_softmax(out)
        # Inverse-CDF sampling: one draw per env.
        action = _inverse_cdf(log_probs, rng.random((len(out), 1)), last)
        log_prob = log_probs[np.arange(len(out)), action].astype(np.float32)
        return action, action, log_prob

    def mode(self, out, space, mask=None) -> np.ndarray:
        if mask is not None:
            out = np.where(np.asarray(mask, dtype=bool), out, -np.inf)
        return out.argmax(axis=1)


def masked_categorical_log_prob_entropy(
    logits: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor | None = None,
    entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The log-probability of ``actions`` ``(B,)`` under the categorical of ``logits`` ``(B, n)``
    restricted to the legal actions of ``mask`` (bool ``(B, n)``; ``None``: all legal), and its
    entropy ``(B,)`` (``None`` with ``entropy=False``): :meth:`Categorical.log_prob_entropy`.

    Example:
        >>> import torch
        >>> from stagerl.utils.distributions import masked_categorical_log_prob_entropy
        >>> logits, mask = torch.zeros(1, 4), torch.tensor([[True, True, False, False]])
        >>> log_prob, entropy = masked_categorical_log_prob_entropy(logits, torch.tensor([1]),
        ...                                                         mask)
        >>> round(log_prob.exp().item(), 4), round(entropy.item(), 4)   # 1/2 each, log 2
        (0.5, 0.6931)
    """
    return Categorical(logits.shape[-1]).log_prob_entropy((logits,), actions, entropy, mask)


class MultiCategorical(ActionDistribution):
    """``MultiDiscrete(nvec)``: one independent categorical per dimension, ``sum(nvec)`` logits;
    log-probabilities and entropies add up over the dimensions.

    Example:
        >>> import torch
        >>> dist = MultiCategorical([2, 3])
        >>> params = (torch.zeros(1, 5),)
        >>> round(dist.log_prob(params, torch.tensor([[1, 2]])).item(), 4)   # log(1/2 * 1/3)
        -1.7918
    """

    def __init__(self, nvec):
        self.nvec = tuple(int(n) for n in np.asarray(nvec).reshape(-1))
        self.shape = tuple(np.shape(nvec))
        self.n_outputs = sum(self.nvec)
        self.action_shape = self.shape

    def _split(self, logits: torch.Tensor) -> tuple:
        return torch.split(logits, self.nvec, dim=-1)

    def _per_dim(self, params, actions):
        actions = actions.long().reshape(actions.shape[0], -1)
        return [F.log_softmax(logits, -1).gather(-1, actions[:, i:i + 1]).squeeze(-1)
                for i, logits in enumerate(self._split(params[0]))]

    def log_prob(self, params: tuple, actions: torch.Tensor) -> torch.Tensor:
        return torch.stack(self._per_dim(params, actions), dim=-1).sum(-1)

    def entropy(self, params: tuple) -> torch.Tensor:
        parts = []
        for logits in self._split(params[0]):
            log_probs = F.log_softmax(logits, -1)
            parts.append(-(log_probs.exp() * log_probs).sum(-1))
        return torch.stack(parts, dim=-1).sum(-1)

    def kl(self, old: tuple, new: tuple) -> torch.Tensor:
        parts = []
        for a, b in zip(self._split(old[0]), self._split(new[0]), strict=True):
            old_log_probs, log_probs = F.log_softmax(a, -1), F.log_softmax(b, -1)
            parts.append((old_log_probs.exp() * (old_log_probs - log_probs)).sum(-1))
        return torch.stack(parts, dim=-1).sum(-1)

    def sample(self, out, log_std, rng, space, mask=None) -> tuple:
        refuse_mask(self, mask)
        n = len(out)
        u = rng.random((n, len(self.nvec)))
        actions, log_prob, start = [], np.zeros(n, dtype=np.float32), 0
        for i, k in enumerate(self.nvec):
            log_probs = _numpy_log_softmax(out[:, start:start + k])
            action = _inverse_cdf(log_probs, u[:, i:i + 1])
            log_prob += log_probs[np.arange(n), action].astype(np.float32)
            actions.append(action)
            start += k
        action = np.stack(actions, axis=1).reshape((n, *self.shape))
        return action, action, log_prob

    def mode(self, out, space, mask=None) -> np.ndarray:
        refuse_mask(self, mask)
        parts, start = [], 0
        for k in self.nvec:
            parts.append(out[:, start:start + k].argmax(axis=1))
            start += k
        return np.stack(parts, axis=1).reshape((len(out), *self.shape))


class Bernoulli(ActionDistribution):
    """``MultiBinary(shape)``: one independent Bernoulli per entry, one logit each.

    Example:
        >>> import torch
        >>> dist = Bernoulli((2,))
        >>> round(dist.log_prob((torch.zeros(1, 2),), torch.tensor([[1, 0]])).item(), 4)
        -1.3863
    """

    action_dtype = np.int8  # what gymnasium's MultiBinary holds

    def __init__(self, shape):
        self.shape = tuple(int(d) for d in np.atleast_1d(shape))
        self.n_outputs = int(np.prod(self.shape))
        self.action_shape = self.shape

    def log_prob(self, params: tuple, actions: torch.Tensor) -> torch.Tensor:
        logits = params[0]
        a = actions.reshape(actions.shape[0], -1).to(logits.dtype)
        # log sigmoid(l) for 1, log sigmoid(-l) for 0
        return -(a * F.softplus(-logits) + (1.0 - a) * F.softplus(logits)).sum(-1)

    def entropy(self, params: tuple) -> torch.Tensor:
        logits = params[0]
        p = torch.sigmoid(logits)
        return (p * F.softplus(-logits) + (1.0 - p) * F.softplus(logits)).sum(-1)

    def kl(self, old: tuple, new: tuple) -> torch.Tensor:
        p = torch.sigmoid(old[0])
        log_p, log_1p = -F.softplus(-old[0]), -F.softplus(old[0])
        log_q, log_1q = -F.softplus(-new[0]), -F.softplus(new[0])
        return (p * (log_p - log_q) + (1.0 - p) * (log_1p - log_1q)).sum(-1)

    def sample(self, out, log_std, rng, space, mask=None) -> tuple:
        refuse_mask(self, mask)
        n = len(out)
        p = 1.0 / (1.0 + np.exp(-out))
        action = (rng.random(out.shape) < p)
        # log p for 1, log(1 - p) for 0, stably: -softplus(-l) and -softplus(l)
        signed = np.where(action, -out, out)
        log_prob = -np.logaddexp(0.0, signed).sum(axis=1).astype(np.float32)
        action = action.astype(np.int8).reshape((n, *self.shape))
        return action, action, log_prob

    def mode(self, out, space, mask=None) -> np.ndarray:
        refuse_mask(self, mask)
        return (out > 0).astype(np.int8).reshape((len(out), *self.shape))


class DiagGaussian(ActionDistribution):
    """``Box`` actions: a diagonal Gaussian whose mean is the head's output and whose log
    standard deviation ``log_std`` is a learned vector, the same in every state; actions go to
    the env clipped to the Box, and are stored unclipped.

    Example:
        >>> import torch
        >>> dist = DiagGaussian((2,))
        >>> params = dist.params(torch.zeros(1, 2), torch.zeros(2))
        >>> round(dist.entropy(params).item(), 4)      # 2 * 1.4189
        2.8379
    """

    action_dtype = np.float32

    def __init__(self, shape):
        self.shape = tuple(int(d) for d in shape)
        self.n_outputs = int(np.prod(self.shape))
        self.action_shape = self.shape

    def params(self, out: torch.Tensor, log_std: torch.Tensor | None) -> tuple:
        return out, log_std

    def log_prob(self, params: tuple, actions: torch.Tensor) -> torch.Tensor:
        mean, log_std = params
        z = (actions.reshape(mean.shape) - mean) * torch.exp(-log_std)
        return (-0.5 * z * z - log_std - _LOG_SQRT_2PI).sum(-1)

    def log_prob_entropy(self, params: tuple, actions: torch.Tensor, entropy: bool = True,
                         mask: torch.Tensor | None = None) -> tuple:
        """Both at once (the entropy depends on ``log_std`` alone: one scalar)."""
        refuse_mask(self, mask)
        log_std = params[1]
        return self.log_prob(params, actions), \
            (log_std + 0.5 + _LOG_SQRT_2PI).sum() if entropy else None

    def entropy(self, params: tuple) -> torch.Tensor:
        return diag_gaussian_entropy(params[1])

    def kl(self, old: tuple, new: tuple) -> torch.Tensor:
        (old_mean, old_log_std), (mean, log_std) = old, new
        var_ratio = torch.exp(2.0 * (old_log_std - log_std))
        mahalanobis = ((old_mean - mean) * torch.exp(-log_std)) ** 2
        return (0.5 * (var_ratio + mahalanobis - 1.0) - (old_log_std - log_std)).sum(-1)

    def sample(self, out, log_std, rng, space, mask=None) -> tuple:
        refuse_mask(self, mask)
        noise = rng.standard_normal(out.shape).astype(np.float32)
        action = out + np.exp(log_std) * noise
        log_prob = (-0.5 * noise**2 - log_std - _LOG_SQRT_2PI).sum(axis=1)
        n = len(out)
        action = action.reshape((n, *self.shape))
        return np.clip(action, space.low, space.high), action, log_prob

    def mode(self, out, space, mask=None) -> np.ndarray:
        refuse_mask(self, mask)
        return np.clip(out.reshape((len(out), *self.shape)), space.low, space.high)


def action_distribution(space, who: str = "this policy") -> ActionDistribution:
    """The :class:`ActionDistribution` of a gymnasium action space: ``Discrete`` ->
    :class:`Categorical`, ``MultiDiscrete`` -> :class:`MultiCategorical`, ``MultiBinary`` ->
    :class:`Bernoulli`, a float ``Box`` -> :class:`DiagGaussian`; anything else raises a
    ``TypeError`` naming ``who``, the space and the wrapper that fixes it.

    Example:
        >>> import gymnasium
        >>> type(action_distribution(gymnasium.spaces.MultiDiscrete([3, 2]))).__name__
        'MultiCategorical'
    """
    import gymnasium

    spaces = gymnasium.spaces
    if isinstance(space, spaces.Discrete):
        if int(space.start) != 0:
            raise TypeError(f"{who} acts in Discrete spaces starting at 0, got {space}; shift "
                            "the actions with a gymnasium ActionWrapper")
        return Categorical(int(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        if np.any(np.asarray(space.start) != 0):
            raise TypeError(f"{who} acts in MultiDiscrete spaces starting at 0, got {space}; "
                            "shift the actions with a gymnasium ActionWrapper")
        return MultiCategorical(space.nvec)
    if isinstance(space, spaces.MultiBinary):
        return Bernoulli(space.shape)
    if isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating):
        return DiagGaussian(space.shape)
    raise TypeError(
        f"{who} acts in Discrete, MultiDiscrete, MultiBinary or float Box action spaces, got "
        f"{space}; map the actions onto one of them with a gymnasium ActionWrapper (a Tuple of "
        "Discrete spaces as one MultiDiscrete, a Dict of Boxes as one Box)")
