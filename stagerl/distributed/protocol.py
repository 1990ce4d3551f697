"""What the learner and its rollout workers exchange about a policy: four generic functions.

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
"""

from __future__ import annotations

from stagerl.policies.weights import get_weights, on_policy, set_env_steps, set_weights

__all__ = ["get_weights", "set_weights", "set_env_steps", "on_policy"]
