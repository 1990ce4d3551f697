"""A3C: A2C with asynchronous gradients (Mnih et al. 2016), on Ray workers.

Each worker acts ``n_steps`` steps of its sub-envs with its copy of the policy, computes the
gradient of A2C's loss on that rollout (GAE, value loss, entropy bonus) with the weights it
holds, and sends it; the learner applies each gradient as it arrives (one RMSprop or Adam step,
its norm clipped to ``max_grad_norm``) and sends the new weights to that worker only, with its
next request (RLlib's A3C plan: ``AsyncGradients``, then ``ApplyGradients``; see
:func:`stagerl.distributed.plans.a3c_plan`).

A gradient is *stale* by the versions the weights moved on between the request it was computed
for and its application: the other workers' gradients applied meanwhile (``W - 1`` with ``W``
workers that all take as long, more while one is slower). ``stale_gradients`` says what
happens to it:

* ``"drop"``: applied as it is while its staleness is at most ``gradient_staleness``, dropped
  (its env steps counted, nothing learned) beyond;
* ``"scale"``: applied times ``1 / (1 + staleness)``, none dropped.

In one process (no workers) nothing is asynchronous and A3C learns as A2C does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stagerl.algorithms._checks import check_choice, check_ints
from stagerl.algorithms.on_policy.a2c import A2CConfig, A2CPolicy
from stagerl.algorithms.on_policy.base import build_model_for
from stagerl.algorithms.on_policy.rollout import rollout_trajectory
from stagerl.policies.agent import Agent

__all__ = ["A3CConfig", "A3CPolicy", "make_a3c_agent"]


@dataclass
class A3CConfig(A2CConfig):
    """A3C's hyper-parameters: A2C's (:class:`~stagerl.algorithms.on_policy.a2c.A2CConfig`)
    and the rule for stale gradients.

    Attributes:
        stale_gradients: ``"drop"`` (gradients staler than ``gradient_staleness`` are dropped)
            or ``"scale"`` (each applied times ``1 / (1 + staleness)``).
        gradient_staleness: the staleness, in weight versions, a gradient may have and still
            be applied (``"drop"``).
    """

    stale_gradients: str = "drop"
    gradient_staleness: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self, "stale_gradients", ("drop", "scale"))
        check_ints(self, "gradient_staleness", low=0)


class A3CPolicy(A2CPolicy):
    """A3C (see the module docstring): an A2C policy whose runs on Ray workers use the
    asynchronous-gradient plan. Build one with :func:`make_a3c_agent`.

    Example:
        >>> A3CPolicy.execution_plan
        'a3c'
    """

    #: the plan stagerl.distributed.Learner runs for it
    execution_plan = "a3c"


def make_a3c_agent(env: Any, config: A3CConfig | None = None, seed: int = 0,
                   device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with A3C (A2C in one process; asynchronous gradients on Ray
    workers); the settings are checked by :class:`A3CConfig`, the env's spaces here.
    ``features_extractor``: a factory of the observation space in place of the built-in
    ``config`` names."""
    config = A3CConfig() if config is None else config
    if not isinstance(config, A3CConfig):
        raise TypeError(f"make_a3c_agent needs an A3CConfig, got {type(config).__name__}")
    model = build_model_for(env, "make_a3c_agent", config, seed, device, features_extractor)
    return Agent(A3CPolicy(model, config, rng=seed), rollout_trajectory(env, config.n_steps))
