"""Baselines: what an on-policy learner subtracts from its returns, chosen by name.

rllab's ``BatchPolopt`` computes advantages with the baseline given on its command line and
refits the baseline after each iteration. stagerl's on-policy learners do the same
(``baseline=`` in VPG's and TRPO's settings, ``baseline=linear`` on the command line):

* ``"zero"`` (:class:`ZeroBaseline`): no baseline; the advantage is the return itself.
* ``"network"`` (:class:`ValueNetworkBaseline`): the actor-critic's value network, fitted by the
  algorithm's own critic steps (VPG's full-batch steps, TRPO's minibatch epochs).
* ``"linear"`` (:class:`LinearFeatureBaseline`): rllab's linear feature baseline, a linear
  function of the observation (clipped to [-10, 10]), its square, the time step within the
  episode ``t / 100`` and its square and cube, and a constant, refitted each update by
  ridge-regularised least squares on the update's returns.

A baseline gives values for observations at their episode's time steps (``values``) and learns
from a batch (``fit``). Advantages are computed with the values it had *before* the batch
(rllab's order: predict, compute advantages, then fit), so a step's own return never leaks into
its baseline.

Example:
    >>> import numpy as np
    >>> baseline = make_baseline("linear")
    >>> states = np.array([[0.0], [1.0], [2.0], [3.0]]); steps = np.arange(4)
    >>> baseline.fit(None, {"raw_state": states, "step": steps, "return": 2 * states[:, 0] + 1})
    >>> baseline.values(None, np.array([[4.0]]), np.array([4])).round(3).tolist()
    [9.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BASELINES", "Baseline", "ZeroBaseline", "ValueNetworkBaseline",
           "LinearFeatureBaseline", "make_baseline", "linear_features",
           "check_baseline_settings"]

#: The baselines by the names settings and the command line use.
BASELINES = ("zero", "network", "linear")


class Baseline:
    """What a baseline does (see the module docstring); subclass it for another one.

    ``values(policy, states, steps)`` gives the baseline's values (float32, one per row) of
    raw observations ``states`` at episode time steps ``steps``; ``fit(policy, batch)`` learns
    from an update's batch (``raw_state``, ``step`` and ``return`` as numpy arrays, and the
    policy's own tensors). ``policy`` is the on-policy learner it serves.
    """

    name = "baseline"
    #: True when the values the policy recorded while acting (its critic's) are the baseline's.
    recorded = False

    def values(self, policy: Any, states: np.ndarray, steps: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, policy: Any, batch: dict) -> None:
        raise NotImplementedError

    def check_observations(self, space: Any, who: str) -> None:
        """Raise a ``TypeError`` naming ``who`` when the baseline cannot read observations of
        ``space`` (a gymnasium space); every space is fine by default."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ZeroBaseline(Baseline):
    """No baseline: every value is 0, so the advantage is the return (nothing is fitted).

    Example:
        >>> ZeroBaseline().values(None, np.ones((2, 3)), np.zeros(2)).tolist()
        [0.0, 0.0]
    """

    name = "zero"

    def values(self, policy: Any, states: Any, steps: np.ndarray) -> np.ndarray:
        return np.zeros(len(steps), dtype=np.float32)  # states may be a dict of arrays

    def fit(self, policy: Any, batch: dict) -> None:
        pass


class ValueNetworkBaseline(Baseline):
    """The policy's learned value network (its critic), fitted by the algorithm's own critic
    steps (``policy.fit_critic(batch)``). The values recorded while acting are its values.

    Example:
        >>> ValueNetworkBaseline().recorded
        True
    """

    name = "network"
    recorded = True

    def values(self, policy: Any, states: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The critic's values, by the pass the policy acts with (``policy.act_outputs``: an
        MLP's numpy pass on the CPU, else torch's): the pass the recorded values came from."""
        return policy.act_outputs(states, actor=False)[2]

    def fit(self, policy: Any, batch: dict) -> None:
        policy.fit_critic(batch)


def linear_features(states: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """rllab's features of observations at episode time steps: ``[o, o^2, t, t^2, t^3, 1]``
    with ``o`` the flat observation clipped to [-10, 10] and ``t = step / 100`` (float64).

    Example:
        >>> linear_features(np.array([[20.0, -1.0]]), np.array([50])).tolist()
        [[10.0, -1.0, 100.0, 1.0, 0.5, 0.25, 0.125, 1.0]]
    """
    o = np.clip(np.asarray(states, dtype=np.float64).reshape(len(states), -1), -10.0, 10.0)
    t = np.asarray(steps, dtype=np.float64).reshape(-1, 1) / 100.0
    return np.concatenate([o, o * o, t, t * t, t * t * t, np.ones_like(t)], axis=1)


class LinearFeatureBaseline(Baseline):
    """rllab's linear feature baseline: values ``linear_features(s, t) @ coefficients``, the
    coefficients refitted each update by ridge-regularised least squares on its returns::

        coefficients = argmin |F c - returns|^2 + reg_coeff |c|^2
                     = lstsq(F^T F + reg_coeff I, F^T returns)

    where the solve gives NaN, ``reg_coeff`` grows tenfold (up to five times), as rllab's.
    Before its first fit every value is 0.

    Args:
        reg_coeff: the ridge regularisation (rllab's default 1e-5).

    Example:
        >>> baseline = LinearFeatureBaseline()
        >>> baseline.values(None, np.ones((1, 2)), np.zeros(1)).tolist()  # not fitted yet
        [0.0]
    """

    name = "linear"

    def __init__(self, reg_coeff: float = 1e-5):
        self.reg_coeff = float(reg_coeff)
        self.coefficients: np.ndarray | None = None

    def values(self, policy: Any, states: np.ndarray, steps: np.ndarray) -> np.ndarray:
        if self.coefficients is None:
            return np.zeros(len(states), dtype=np.float32)
        return (linear_features(states, steps) @ self.coefficients).astype(np.float32)

    def check_observations(self, space: Any, who: str) -> None:
        """Its features are those of flat vectors: only ``Box`` observations."""
        import gymnasium

        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f"{who}: the linear baseline's features are those of Box "
                            f"observations (a vector or array, flattened), got {space}; use "
                            "baseline='network' (or 'zero') for Dict, Tuple and discrete "
                            "observations")

    def fit(self, policy: Any, batch: dict) -> None:
        features = linear_features(batch["raw_state"], batch["step"])
        returns = np.asarray(batch["return"], dtype=np.float64)
        gram, target = features.T @ features, features.T @ returns
        reg = self.reg_coeff
        for _ in range(5):
            coefficients = np.linalg.lstsq(gram + reg * np.identity(len(gram)), target,
                                           rcond=None)[0]
            if not np.isnan(coefficients).any():
                self.coefficients = coefficients
                return
            reg *= 10.0

    def __repr__(self) -> str:
        return f"LinearFeatureBaseline(reg_coeff={self.reg_coeff!r})"


_CLASSES = {"zero": ZeroBaseline, "network": ValueNetworkBaseline,
            "linear": LinearFeatureBaseline}


def make_baseline(name: str, reg_coeff: float = 1e-5) -> Baseline:
    """The baseline called ``name`` (one of :data:`BASELINES`); ``reg_coeff`` is the linear
    baseline's regularisation. Any other name is a ``ValueError`` naming the choices.

    Example:
        >>> make_baseline("value")
        Traceback (most recent call last):
        ...
        ValueError: baseline must be 'zero' or 'network' or 'linear', got baseline='value'
    """
    cls = _CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        choices = " or ".join(repr(n) for n in BASELINES)
        raise ValueError(f"baseline must be {choices}, got baseline={name!r}")
    return cls(reg_coeff) if cls is LinearFeatureBaseline else cls()


def check_baseline_settings(settings: Any) -> None:
    """Check a config's ``baseline`` (one of :data:`BASELINES`) and ``baseline_reg_coeff``
    (finite, >= 0): the two settings of every algorithm that takes a baseline by name."""
    from stagerl.algorithms._checks import check_choice, check_numbers

    check_choice(settings, "baseline", BASELINES)
    check_numbers(settings, "baseline_reg_coeff", at_least=0)
