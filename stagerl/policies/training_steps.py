"""The steps of execution plans that a policy type answers (generic functions), beside what it
sends to its workers (:mod:`stagerl.policies.weights`). They live here, below the algorithm
families, so that each family defines its methods beside its policies; the plans
(:mod:`stagerl.distributed.operators`) call them:

* ``learn_on_batch(policy, sample, trajectory)``: learn from one sample the trajectory gave
  (``Replay`` then ``TrainOneStep``; DQN: one burst of gradient steps);
* ``update_target(policy)``: let a target network follow on its schedule
  (``UpdateTargetNetwork``; default: nothing);
* ``compute_gradients(policy, trajectory)`` on a worker: the gradients of the loss on the
  rollout the trajectory holds (``AsyncGradients``; the on-policy family's one-step losses);
* ``apply_gradients(policy, gradients, scale)`` on the learner: one optimiser step with them,
  times ``scale`` (``ApplyGradients``).

A policy without them trains with the plans that do not need them.
"""

from __future__ import annotations

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, dispatch
from stagerl.core.policy import Policy

__all__ = ["learn_on_batch", "update_target", "compute_gradients", "apply_gradients",
           "defines"]


@dispatch.abstract
def learn_on_batch(*args):
    """``learn_on_batch(policy, sample, trajectory)``: learn from one sample of ``trajectory``
    (what iterating it gave). Extend with ``@stagerl.distributed.learn_on_batch.dispatch``."""


@dispatch.abstract
def update_target(*args):
    """``update_target(policy)``: let the policy's target network follow, as its own schedule
    says. Extend with ``@stagerl.distributed.update_target.dispatch``."""


@dispatch.abstract
def compute_gradients(*args):
    """``compute_gradients(policy, trajectory) -> dict``: on a worker, the gradients of the
    policy's loss on the rollout ``trajectory`` holds (``"gradients"``: arrays, ``"stats"``,
    ``"weights_checksum"``: the sum of the weights they were computed with). Extend with
    ``@stagerl.distributed.compute_gradients.dispatch``."""


@dispatch.abstract
def apply_gradients(*args):
    """``apply_gradients(policy, gradients, scale)``: on the learner, one optimiser step with
    ``gradients`` (from :func:`compute_gradients`) times ``scale``. Extend with
    ``@stagerl.distributed.apply_gradients.dispatch``."""


def _unsupported(what: str, policy: Policy, operator: str) -> TypeError:
    return TypeError(f"{type(policy).__name__} has no {what}, which {operator} needs; define it "
                     f"with @stagerl.distributed.{what}.dispatch or train with a plan that does "
                     f"not use {operator} (the default plan of the policy)")


@learn_on_batch.dispatch(precedence=DEFAULT_PRECEDENCE)
def _learn_on_batch_default(policy: Policy, sample, trajectory):
    raise _unsupported("learn_on_batch", policy, "Replay followed by TrainOneStep")


@update_target.dispatch(precedence=DEFAULT_PRECEDENCE)
def _update_target_default(policy: Policy):
    pass  # no target network


@compute_gradients.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_gradients_default(policy: Policy, trajectory):
    raise _unsupported("compute_gradients", policy, "AsyncGradients")


@apply_gradients.dispatch(precedence=DEFAULT_PRECEDENCE)
def _apply_gradients_default(policy: Policy, gradients, scale):
    raise _unsupported("apply_gradients", policy, "ApplyGradients")


def defines(function: object, policy: Policy) -> bool:
    """Whether ``function`` (one of the generic functions above) has a method of its own for
    ``policy``'s type, beyond the default for every policy.

    Example:
        >>> import stagerl as rl
        >>> defines(learn_on_batch, rl.RandomPolicy())
        False
    """
    return any(m.signature.types and m.signature.types[0] is not Policy
               and isinstance(policy, m.signature.types[0]) for m in function.methods)
