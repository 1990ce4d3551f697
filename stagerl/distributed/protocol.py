"""What the learner and its rollout workers exchange about a policy: four generic functions.

A worker acts with a copy of the learner's policy. After each update the learner sends it
``get_weights(policy)`` (one ``ray.put`` per version); the worker loads them with
``set_weights(policy, weights, env_steps, env)``, where ``env_steps`` is the number of env
steps all workers took so far (schedules such as a falling exploration rate follow it). The
learner's own policy hears that count too, through ``set_env_steps(policy, env_steps)``, since
it never acts itself. ``on_policy(policy)`` says whether the policy may only learn from batches
acted with its current weights.

The defaults: ``get_weights`` is ``policy.state_dict()`` and ``set_weights`` its
``load_state_dict`` (tabular Q policies send their table only); ``set_env_steps`` does
nothing; ``on_policy`` is False. A policy whose ``state_dict`` carries rng states, optimiser
moments or counters that workers must not share (every worker would then draw the same random
numbers) defines its own methods, as :mod:`stagerl.distributed.adapters` does for the DQN
family and the on-policy algorithms::

    @stagerl.distributed.get_weights.dispatch
    def get_weights(policy: MyPolicy):
        return {"model": policy.model.state_dict()}
"""

from __future__ import annotations

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, dispatch
from stagerl.core.policy import Policy
from stagerl.policies.q_based import QBasedPolicy

__all__ = ["get_weights", "set_weights", "set_env_steps", "on_policy"]


@dispatch.abstract
def get_weights(*args):
    """``get_weights(policy) -> dict``: what a worker's copy of ``policy`` needs to act as the
    learner's policy would now (plain tensors, arrays and numbers). Extend with
    ``@stagerl.distributed.get_weights.dispatch``."""


@dispatch.abstract
def set_weights(*args):
    """``set_weights(policy, weights, env_steps, env)``: a worker's copy of the policy takes
    ``weights`` (from :func:`get_weights`); ``env_steps`` is the number of env steps all
    workers took so far, ``env`` the worker's env. Extend with
    ``@stagerl.distributed.set_weights.dispatch``."""


@dispatch.abstract
def set_env_steps(*args):
    """``set_env_steps(policy, env_steps)``: the learner's policy hears how many env steps the
    workers took in all (it acts in none of them). Extend with
    ``@stagerl.distributed.set_env_steps.dispatch``."""


@dispatch.abstract
def on_policy(*args):
    """``on_policy(policy) -> bool``: True when the policy learns only from batches acted with
    its current weights (stale batches are dropped). Extend with
    ``@stagerl.distributed.on_policy.dispatch``."""


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_default(policy: Policy):
    return policy.state_dict()


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_default(policy: Policy, weights, env_steps, env):
    policy.load_state_dict(weights)


@set_env_steps.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_env_steps_default(policy: Policy, env_steps):
    pass


@on_policy.dispatch(precedence=DEFAULT_PRECEDENCE)
def _on_policy_default(policy: Policy):
    return False


# ---- tabular Q: the table; each worker keeps its own explorer (counters and rng) -------------


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_q_based(policy: QBasedPolicy):
    return {"table": policy.learner.state_dict()["table"]}


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_q_based(policy: QBasedPolicy, weights, env_steps, env):
    policy.learner.load_state_dict({"table": weights["table"]})
