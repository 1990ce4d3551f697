"""A2C: advantage actor-critic with GAE on vector envs (synchronous A3C, as Stable-Baselines3).

Every ``n_steps`` steps of each sub-env, one gradient step on the whole rollout::

    advantage = GAE(gamma, gae_lambda)          (bootstrapped at truncations and the rollout's end)
    loss = -mean(advantage * log pi(a|s)) + vf_coef * mean((V(s) - return)^2) - ent_coef * entropy
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from stagerl.algorithms._checks import check_ints, check_numbers
from stagerl.algorithms.on_policy.base import OnPolicy, OnPolicyConfig, build_model_for
from stagerl.algorithms.on_policy.networks import ActorCritic
from stagerl.algorithms.on_policy.rollout import rollout_trajectory
from stagerl.policies.agent import Agent

__all__ = ["A2CConfig", "A2CPolicy", "a2c_loss", "make_a2c_agent"]


@dataclass
class A2CConfig(OnPolicyConfig):
    """A2C's hyper-parameters (defaults: Stable-Baselines3's), with those of
    :class:`~stagerl.algorithms.on_policy.base.OnPolicyConfig` (``gamma``, ``net_arch``, ...).

    Attributes:
        n_steps: steps of each sub-env per rollout (one gradient step per rollout).
        gae_lambda: GAE's lambda (1: the plain n-step advantage).
        ent_coef: the entropy bonus's weight.
        vf_coef: the value loss's weight.
        max_grad_norm: clip the gradient norm to this (inf: never clip).
        normalize_advantage: normalise the advantages of each rollout.
        use_rms_prop: RMSprop (alpha 0.99, eps ``rms_prop_eps``) instead of Adam.
        rms_prop_eps: RMSprop's epsilon.
    """

    learning_rate: float = 7e-4
    n_steps: int = 5
    gae_lambda: float = 1.0
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    normalize_advantage: bool = False
    use_rms_prop: bool = True
    rms_prop_eps: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "n_steps")
        check_numbers(self, "gae_lambda", at_least=0, at_most=1)
        check_numbers(self, "ent_coef", "vf_coef", at_least=0)
        check_numbers(self, "max_grad_norm", above=0, inf="never clip")
        check_numbers(self, "rms_prop_eps", above=0)


def a2c_loss(model: ActorCritic, batch: dict, ent_coef: float, vf_coef: float,
             normalize_advantage: bool) -> tuple:
    """A2C's loss on a batch of transitions, and its parts (detached) for logging."""
    log_prob, entropy, values = model.evaluate(batch["state"], batch["action"])
    advantage = batch["advantage"]
    if normalize_advantage and len(advantage) > 1:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    policy_loss = -(advantage * log_prob).mean()
    value_loss = F.mse_loss(values, batch["return"])
    loss = policy_loss + vf_coef * value_loss
    if ent_coef > 0:  # at 0 the entropy stays out of the graph: no share of the backward pass
        loss = loss - ent_coef * entropy.mean()
    return loss, {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy.mean()}


class A2CPolicy(OnPolicy):
    """A2C (see the module docstring): the default GAE postprocessor and one step of
    :func:`a2c_loss` per rollout. Build one with :func:`make_a2c_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import make_a2c_agent
        >>> from stagerl.algorithms.on_policy import make_vector_env
        >>> env = make_vector_env("CartPole-v1", num_envs=4, seed=0)
        >>> agent = make_a2c_agent(env, seed=0, device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(200, progress=False))
        >>> agent.policy.n_updates          # one per 5 acts of the 4 sub-envs
        10
    """

    def __init__(self, model: ActorCritic, config: A2CConfig, rng: Any = None):
        params = model.flat_parameters()
        if config.use_rms_prop:
            optimiser = torch.optim.RMSprop(params, lr=config.learning_rate, alpha=0.99,
                                            eps=config.rms_prop_eps, foreach=True)
        else:
            optimiser = torch.optim.Adam(params, lr=config.learning_rate, fused=True)
        super().__init__(model, optimiser, config.gamma, config.gae_lambda, config.max_grad_norm,
                         config.normalize_states, rng, config.normalize_rewards)
        self.config = config

    def loss(self, batch: dict) -> torch.Tensor:
        c = self.config
        loss, parts = a2c_loss(self.model, batch, c.ent_coef, c.vf_coef, c.normalize_advantage)
        self.stats = {name: value.item() for name, value in parts.items()}
        return loss


def make_a2c_agent(env: Any, config: A2CConfig | None = None, seed: int = 0,
                   device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with A2C in ``env`` (a ``GymEnv`` or ``GymVectorEnv``); the
    settings are checked by :class:`A2CConfig`, the env's spaces here. ``features_extractor``:
    a factory of the observation space in place of the built-in ``config`` names."""
    config = A2CConfig() if config is None else config
    if not isinstance(config, A2CConfig):
        raise TypeError(f"make_a2c_agent needs an A2CConfig, got {type(config).__name__}")
    model = build_model_for(env, "make_a2c_agent", config, seed, device, features_extractor)
    return Agent(A2CPolicy(model, config, rng=seed), rollout_trajectory(env, config.n_steps))
