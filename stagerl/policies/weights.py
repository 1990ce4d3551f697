"""What a policy sends to copies of itself that act elsewhere (Ray rollout workers): four generic
functions, extended by each policy type where it is defined.

A worker acts with a copy of the learner's policy. After each update the learner sends it
``get_weights(policy)``; the worker loads them with ``set_weights(policy, weights, env_steps,
env)``, where ``env_steps`` is the number of env steps all workers took so far (schedules such
as a falling exploration rate follow it). The learner's own policy hears that count through
``set_env_steps(policy, env_steps)``, since it never acts itself. ``on_policy(policy)`` says
whether the policy may only learn from batches acted with its current weights.

**The rule, for every policy.** A policy's type answers these four functions; methods are
registered beside the class, so they load with it, and the answer never depends on what else
was imported. Without methods of its own a policy travels by the defaults:

* ``get_weights``: its ``state_dict()`` without random-number-generator states (every entry,
  at any depth of nested dicts, named ``rng`` or ``generator``, or holding a numpy bit
  generator's state): every worker keeps drawing from its own generators;
* ``set_weights``: ``load_state_dict`` of the worker's own ``state_dict()`` with the weights
  written over it (so the worker's generators stay its own);
* ``set_env_steps`` does nothing; ``on_policy`` is False.

stagerl's algorithm families send less (the network they act with, not the optimiser's moments
or a target network) and define their methods beside their policies, as a user's policy may::

    @stagerl.distributed.get_weights.dispatch
    def get_weights(policy: MyPolicy):
        return {"model": policy.model.state_dict()}

``stagerl.distributed.get_weights`` (and the three others) are these functions.
"""

from __future__ import annotations

from typing import Any

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, dispatch
from stagerl.core.policy import Policy
from stagerl.policies.q_based import QBasedPolicy

__all__ = ["get_weights", "set_weights", "set_env_steps", "on_policy", "without_rng",
           "weights_on_cpu"]

#: Entries of a state_dict that hold random-number-generator states, by name.
RNG_KEYS = ("rng", "generator")


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


def _is_rng_state(value: Any) -> bool:
    return isinstance(value, dict) and "bit_generator" in value


def without_rng(state: dict) -> dict:
    """``state`` (a state_dict) without its random-number-generator states: entries named
    ``rng`` or ``generator`` and numpy bit-generator states, at any depth of nested dicts.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> without_rng({"table": [1.0], "explorer": {"step": 3, "rng": rng.bit_generator.state},
        ...              "noise": rng.bit_generator.state})
        {'table': [1.0], 'explorer': {'step': 3}}
    """
    return {key: without_rng(value) if isinstance(value, dict) else value
            for key, value in state.items()
            if key not in RNG_KEYS and not _is_rng_state(value)}


def _written_over(own: dict, weights: dict) -> dict:
    merged = dict(own)
    for key, value in weights.items():
        old = merged.get(key)
        merged[key] = (_written_over(old, value) if isinstance(old, dict)
                       and isinstance(value, dict) else value)
    return merged


def weights_on_cpu(state: dict) -> dict:
    """A module's ``state_dict`` as detached CPU copies (what a worker on another machine can
    load whatever device the learner uses)."""
    return {name: value.detach().to("cpu", copy=True) for name, value in state.items()}


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_default(policy: Policy):
    return without_rng(policy.state_dict())


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_default(policy: Policy, weights, env_steps, env):
    policy.load_state_dict(_written_over(policy.state_dict(), weights))


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
