"""Utilities: discounted returns, GAE and diagonal-Gaussian helpers."""

from stagerl.utils.distributions import (
    diag_gaussian_entropy,
    diag_gaussian_log_prob,
    diag_gaussian_sample,
    gaussian_log_prob,
    squashed_diag_gaussian_log_prob,
)
from stagerl.utils.returns import discount_rewards, generalized_advantage_estimation

__all__ = [
    "discount_rewards",
    "generalized_advantage_estimation",
    "gaussian_log_prob",
    "diag_gaussian_log_prob",
    "diag_gaussian_entropy",
    "diag_gaussian_sample",
    "squashed_diag_gaussian_log_prob",
]
