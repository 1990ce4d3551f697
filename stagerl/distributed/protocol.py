"""What the learner and its rollout workers exchange about a policy: generic functions.

A worker acts with a copy of the learner's policy. After each update the learner sends it
``get_weights(policy)`` (one ``ray.put`` per version); the worker loads them with
``set_weights(policy, weights, env_steps, env)``, where ``env_steps`` is the number of env
steps all workers took so far. The learner's own policy hears that count through
``set_env_steps(policy, env_steps)``, and ``on_policy(policy)`` says whether the policy may only
learn from batches acted with its current weights.

The functions are defined with the policies (:mod:`stagerl.policies.weights`), and each policy
type answers them where it is defined: stagerl's algorithm families beside their policies, a
user's policy beside its class. This package imports no algorithm, and what a policy sends
never depends on what else was imported. A policy without methods of its own sends its
``state_dict()`` without random-number-generator states (see :mod:`stagerl.policies.weights`)::

    @stagerl.distributed.get_weights.dispatch
    def get_weights(policy: MyPolicy):
        return {"model": policy.model.state_dict()}

Four more serve the execution plans' finer steps (:mod:`stagerl.distributed.operators`;
defined in :mod:`stagerl.policies.training_steps`); a policy without them trains with the plans
that do not need them:

* ``learn_on_batch(policy, sample, trajectory)``: learn from one sample the trajectory gave
  (``Replay`` then ``TrainOneStep``; DQN: one burst of gradient steps);
* ``update_target(policy)``: let a target network follow on its schedule
  (``UpdateTargetNetwork``; default: nothing);
* ``compute_gradients(policy, trajectory)`` on a worker: the gradients of the loss on the
  rollout the trajectory holds (``AsyncGradients``; the on-policy family's one-step losses);
* ``apply_gradients(policy, gradients, scale)`` on the learner: one optimiser step with them,
  times ``scale`` (``ApplyGradients``).
"""

from __future__ import annotations

from stagerl.policies.training_steps import (
    apply_gradients,
    compute_gradients,
    defines,
    learn_on_batch,
    update_target,
)
from stagerl.policies.weights import get_weights, on_policy, set_env_steps, set_weights

__all__ = ["get_weights", "set_weights", "set_env_steps", "on_policy", "learn_on_batch",
           "update_target", "compute_gradients", "apply_gradients", "defines"]
