"""TRPO (Schulman et al. 2015) and NPG (Kakade 2001): natural-gradient steps in a KL trust region.

Every ``n_steps`` steps of each sub-env, one policy step on the surrogate objective
``L(theta) = mean(pi_theta(a|s) / pi_old(a|s) * A)`` (GAE advantages, normalised)::

    g = grad L                                  (at theta_old)
    x = F^-1 g                                  conjugate gradient, F x by Fisher-vector products
    step = sqrt(2 * target_kl / x.F x) * x      the largest step of quadratic KL <= target_kl
    TRPO: backtrack (step *= shrinking factor) until KL(pi_old || pi) <= target_kl and L improves
    NPG (line_search=False): take the step as it is

then the baseline is refitted: ``n_critic_updates`` epochs of minibatch steps on the value loss
``(V(s) - return)^2``, as rllab's TRPO/NPG and sb3-contrib's TRPO; or, with ``baseline="linear"``,
rllab's linear feature baseline by least squares on the returns (``"zero"``: no baseline; see
:mod:`stagerl.algorithms.on_policy.baselines`). The advantages come from the baseline's values
before the refit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from stagerl.algorithms._checks import check_ints, check_numbers
from stagerl.algorithms.on_policy.base import OnPolicy, OnPolicyConfig, build_model_for
from stagerl.algorithms.on_policy.baselines import check_baseline_settings, make_baseline
from stagerl.algorithms.on_policy.networks import ActorCritic, check_spaces
from stagerl.algorithms.on_policy.rollout import check_rollout_size, rollout_trajectory, rows_of
from stagerl.policies.agent import Agent

__all__ = ["TRPOConfig", "TRPOPolicy", "conjugate_gradient", "make_trpo_agent"]


@dataclass
class TRPOConfig(OnPolicyConfig):
    """TRPO's hyper-parameters (defaults: sb3-contrib's), with those of
    :class:`~stagerl.algorithms.on_policy.base.OnPolicyConfig`. ``line_search=False`` is NPG.

    Attributes:
        learning_rate: the critic's Adam step size (the actor moves by the natural gradient).
        n_steps: steps of each sub-env per rollout.
        batch_size: the critic's minibatch size.
        gae_lambda: GAE's lambda.
        n_critic_updates: the critic's epochs per rollout.
        target_kl: the trust region: the largest KL from the acting policy a step may take.
        cg_max_steps: conjugate-gradient iterations.
        cg_damping: added to the Fisher matrix's diagonal (``F + cg_damping I``).
        line_search: backtrack until the KL bound holds and the objective improves (TRPO), or
            take the natural-gradient step as it is (NPG).
        line_search_shrinking_factor: the step's factor per backtracking try.
        line_search_max_iter: backtracking tries.
        normalize_advantage: normalise the advantages of each rollout.
        baseline: what the advantages are measured against: ``"network"`` (the critic),
            ``"linear"`` (rllab's linear feature baseline, refitted each rollout) or
            ``"zero"`` (none).
        baseline_reg_coeff: the linear baseline's ridge regularisation.
    """

    learning_rate: float = 1e-3
    n_steps: int = 2048
    batch_size: int = 128
    gae_lambda: float = 0.95
    n_critic_updates: int = 10
    target_kl: float = 0.01
    cg_max_steps: int = 15
    cg_damping: float = 0.1
    line_search: bool = True
    line_search_shrinking_factor: float = 0.8
    line_search_max_iter: int = 10
    normalize_advantage: bool = True
    baseline: str = "network"
    baseline_reg_coeff: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_baseline_settings(self)
        check_ints(self, "n_steps", "batch_size", "n_critic_updates", "cg_max_steps",
                   "line_search_max_iter")
        check_numbers(self, "gae_lambda", at_least=0, at_most=1)
        check_numbers(self, "target_kl", above=0)
        check_numbers(self, "cg_damping", at_least=0)
        check_numbers(self, "line_search_shrinking_factor", above=0, below=1)


def conjugate_gradient(matrix_vector: Callable, b: torch.Tensor, max_steps: int,
                       tolerance: float = 1e-10) -> torch.Tensor:
    """Approximately solve ``A x = b`` for a symmetric positive-definite ``A`` given as
    ``matrix_vector(v) = A v``, in at most ``max_steps`` iterations.

    Example:
        >>> import torch
        >>> A = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
        >>> conjugate_gradient(lambda v: A @ v, torch.tensor([1.0, 2.0]), 10).tolist()
        [0.09090909361839294, 0.6363636255264282]
    """
    x = torch.zeros_like(b)
    residual, direction = b.clone(), b.clone()
    residual_norm = residual @ residual
    for _ in range(max_steps):
        a_direction = matrix_vector(direction)
        alpha = residual_norm / (direction @ a_direction)
        x += alpha * direction
        residual -= alpha * a_direction
        new_norm = residual @ residual
        if new_norm < tolerance:
            break
        direction = residual + (new_norm / residual_norm) * direction
        residual_norm = new_norm
    return x


def surrogate_objective(model: ActorCritic, batch: dict, advantage: torch.Tensor) -> torch.Tensor:
    """``mean(pi(a|s) / pi_old(a|s) * A)``: the policy improvement TRPO maximises."""
    log_prob, _ = model.log_prob_entropy(batch["state"], batch["action"], entropy=False)
    return (torch.exp(log_prob - batch["log_prob"]) * advantage).mean()


class TRPOPolicy(OnPolicy):
    """TRPO, or NPG without line search (see the module docstring). Build one with
    :func:`make_trpo_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import TRPOConfig, make_trpo_agent
        >>> from stagerl.algorithms.on_policy import make_vector_env
        >>> env = make_vector_env("CartPole-v1", num_envs=2, seed=0)
        >>> agent = make_trpo_agent(env, TRPOConfig(n_steps=64, batch_size=64), device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(128, progress=False))
        >>> agent.policy.stats["kl"] <= 0.01
        True
    """

    def __init__(self, model: ActorCritic, config: TRPOConfig, rng: Any = None):
        # Only the critic has an optimiser: the actor moves by the natural-gradient step.
        optimiser = torch.optim.Adam(model.flat_parameters()[1:], lr=config.learning_rate,
                                     fused=True)
        super().__init__(model, optimiser, config.gamma, config.gae_lambda, None,
                         config.normalize_states, rng, config.normalize_rewards,
                         make_baseline(config.baseline, config.baseline_reg_coeff))
        self.config = config

    def update(self, batch: dict) -> None:
        self.policy_step(batch)
        self.baseline.fit(self, batch)

    def fit_critic(self, batch: dict) -> None:
        """The critic's ``n_critic_updates`` epochs of minibatch steps on the returns."""
        c = self.config
        n = len(batch["return"])
        for _ in range(c.n_critic_updates):
            order = torch.as_tensor(self.rng.permutation(n), device=self.device) \
                if n > c.batch_size else None
            for start in range(0, n, c.batch_size):
                rows = order[start:start + c.batch_size] if order is not None else slice(None)
                values = self.model.value(rows_of({"state": batch["state"]}, rows)["state"])
                self.gradient_step(self.optimiser, F.mse_loss(values, batch["return"][rows]))

    def policy_step(self, batch: dict) -> None:
        """One trust-region step of the actor (see the module docstring)."""
        c = self.config
        params, _ = self.model.parameter_groups()
        flat = self.model.flat_parameters()[0]  # every actor parameter is a view into it
        states, advantage = batch["state"], batch["advantage"]
        if c.normalize_advantage and len(advantage) > 1:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        with torch.no_grad():
            old = tuple(t.detach() for t in self.model.distribution(states))
        objective = surrogate_objective(self.model, batch, advantage)
        gradient = torch.cat([g.reshape(-1) for g in torch.autograd.grad(objective, params)])
        kl = self.model.kl_from(old, states).mean()
        grad_kl = torch.cat([g.reshape(-1) for g in
                             torch.autograd.grad(kl, params, create_graph=True)])

        def fisher_vector_product(v: torch.Tensor) -> torch.Tensor:
            hv = torch.autograd.grad(grad_kl @ v, params, retain_graph=True)
            return torch.cat([h.reshape(-1) for h in hv]) + c.cg_damping * v

        direction = conjugate_gradient(fisher_vector_product, gradient, c.cg_max_steps)
        quadratic_kl = direction @ fisher_vector_product(direction)
        step = math.sqrt(2.0 * c.target_kl / max(float(quadratic_kl), 1e-12)) * direction
        start = flat.detach().clone()
        old_objective = objective.item()
        accepted, new_kl, new_objective = False, 0.0, old_objective
        with torch.no_grad():
            for _ in range(c.line_search_max_iter if c.line_search else 1):
                flat.data.copy_(start + step)
                new_kl = float(self.model.kl_from(old, states).mean())
                new_objective = float(surrogate_objective(self.model, batch, advantage))
                if not c.line_search or (new_kl <= c.target_kl and new_objective > old_objective):
                    accepted = True
                    break
                step *= c.line_search_shrinking_factor
            if not accepted:  # no step kept the KL bound and improved: stay where we were
                flat.data.copy_(start)
                new_kl, new_objective = 0.0, old_objective
        self.stats = {"kl": new_kl, "objective": new_objective, "accepted": float(accepted)}


def make_trpo_agent(env: Any, config: TRPOConfig | None = None, seed: int = 0,
                    device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with TRPO (or NPG: ``line_search=False``) in ``env``;
    ``features_extractor``: a factory of the observation space in place of the built-in
    ``config`` names (a shared one moves with the actor's trust-region step).

    Raises ``ValueError`` when a rollout (``n_steps`` times the number of sub-envs) is smaller
    than the critic's ``batch_size`` (the settings themselves are checked by
    :class:`TRPOConfig`).
    """
    config = TRPOConfig() if config is None else config
    who = "make_trpo_agent"
    if not isinstance(config, TRPOConfig):
        raise TypeError(f"{who} needs a TRPOConfig, got {type(config).__name__}")
    _, _, n_envs = check_spaces(env, who)
    check_rollout_size(who, config.n_steps, n_envs, config.batch_size)
    model = build_model_for(env, who, config, seed, device, features_extractor)
    return Agent(TRPOPolicy(model, config, rng=seed), rollout_trajectory(env, config.n_steps))
