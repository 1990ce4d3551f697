"""Utilities: discounted returns, GAE and diagonal-Gaussian helpers.

The torch-based helpers are imported on first use, so that importing stagerl (and starting the
``stagerl`` command) does not pay for importing torch.
"""

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

_DISTRIBUTIONS = {
    "gaussian_log_prob",
    "diag_gaussian_log_prob",
    "diag_gaussian_entropy",
    "diag_gaussian_sample",
    "squashed_diag_gaussian_log_prob",
}


def __getattr__(name: str):
    if name in _DISTRIBUTIONS:
        from stagerl.utils import distributions

        return getattr(distributions, name)
    raise AttributeError(f"module 'stagerl.utils' has no attribute {name!r}")
