"""What every action distribution answers (:class:`ActionDistribution`), and the numpy pieces
the distributions of :mod:`stagerl.utils.distributions` share: a log-softmax, an inverse-CDF
draw, and the logit of an illegal action."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["ActionDistribution", "refuse_mask", "MASKED_LOGIT"]


# ---- action distributions: one class per kind of action space ------------------------------
#
# A policy network's head gives the parameters of a distribution over actions; what those
# parameters are, and how an action's log-probability, the entropy and the KL divergence follow
# from them, depends on the action space alone. These classes hold that, once: the on-policy
# algorithms (VPG, A2C, PPO, TRPO) use them in their losses (torch) and to act (numpy, no
# graph: one env step is cheaper than a torch call). ``params`` is always a tuple of tensors:
# ``(logits,)`` for the discrete kinds, ``(mean, log_std)`` for the Gaussian.


class ActionDistribution:
    """The distribution of actions in one gymnasium action space, given a head's output.

    Attributes:
        n_outputs: the size of the head's output (logits, or the Gaussian's mean).
        action_shape: the shape of one stored action.
        action_dtype: the numpy dtype actions are stored in.
    """

    n_outputs: int = 0
    action_shape: tuple = ()
    action_dtype: type = np.int64

    def params(self, out: torch.Tensor, log_std: torch.Tensor | None) -> tuple:
        """The parameters from the head's output (and the learned ``log_std``, Gaussian)."""
        return (out,)

    def log_prob(self, params: tuple, actions: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def entropy(self, params: tuple) -> torch.Tensor:
        raise NotImplementedError

    def log_prob_entropy(self, params: tuple, actions: torch.Tensor, entropy: bool = True,
                         mask: torch.Tensor | None = None) -> tuple:
        """The log-probabilities of ``actions`` and the entropy (``None`` with
        ``entropy=False``); ``mask``: the legal actions (:class:`Categorical` only)."""
        refuse_mask(self, mask)
        return self.log_prob(params, actions), self.entropy(params) if entropy else None

    def kl(self, old: tuple, new: tuple) -> torch.Tensor:
        """``KL(old || new)`` per state."""
        raise NotImplementedError

    def sample(self, out: np.ndarray, log_std: np.ndarray | None, rng: np.random.Generator,
               space, mask: np.ndarray | None = None) -> tuple:
        """For a batch of head outputs: the actions for the env, the actions to store and their
        log-probabilities (numpy); ``mask``: the legal actions (:class:`Categorical` only)."""
        raise NotImplementedError

    def mode(self, out: np.ndarray, space, mask: np.ndarray | None = None) -> np.ndarray:
        """The most likely actions (evaluation), numpy; ``mask`` as in :meth:`sample`."""
        raise NotImplementedError


def refuse_mask(dist: ActionDistribution, mask) -> None:
    """``TypeError`` when a legal-action mask reaches a distribution other than a categorical:
    masks are for ``Discrete`` action spaces."""
    if mask is not None:
        raise TypeError(
            f"legal-action masks are for Discrete action spaces (a categorical), but this "
            f"policy's actions follow a {type(dist).__name__}; give the env a Discrete action "
            "space, or drop its legal_actions_mask")


# The reductions are the ufuncs' own (``np.maximum.reduce`` is what ``ndarray.max`` calls after
# a Python layer of its own, a microsecond a call on the acting path): the same values.


def numpy_log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - np.maximum.reduce(z, axis=-1, keepdims=True)
    return z - np.log(np.add.reduce(np.exp(z), axis=-1, keepdims=True))


def inverse_cdf(log_probs: np.ndarray, u: np.ndarray, last: Any = None) -> np.ndarray:
    """One categorical draw per row of ``log_probs`` (last axis: the choices) from the
    uniforms ``u`` (shape: the rows, with a last axis of 1); ``last``: the highest choice a
    row may draw (its last legal action; default the last choice), where a ``u`` above the
    rounded cumulative sum lands."""
    cdf = np.cumsum(np.exp(log_probs), axis=-1)
    return np.minimum(np.add.reduce(cdf < u, axis=-1),
                      log_probs.shape[-1] - 1 if last is None else last)


#: The logit an illegal action gets: finite, so that no ``0 * -inf`` makes a NaN, and low enough
#: that its probability is exactly 0 in float32 (as sb3-contrib's MaskableCategorical).
MASKED_LOGIT = -1e8
