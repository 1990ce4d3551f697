"""REPS: relative entropy policy search (Peters, Muelling & Altun 2010) in its contextual form.

Every ``episodes_per_update`` finished episodes, REPS looks for the reweighting ``q`` of the
batch's steps with the best returns whose relative entropy to the batch stays within
``epsilon``, while the states keep the feature averages they had (the reweighting judges the
actions, not where the episodes went), and fits the policy to it. That is the contextual REPS
of Kupcsik et al. (2013) (Deisenroth, Neumann & Peters, *A Survey on Policy Search for
Robotics*, 2013, section 2.4.2), each step a context: with ``G`` each step's discounted return
to go, ``phi(s, t)`` rllab's features of the state and its time step
(:func:`~stagerl.algorithms.on_policy.baselines.linear_features` without the constant) and
``f = phi - mean phi`` over the batch, the weights are ``q ~ exp(delta / eta)``,
``delta = G - f . v``, where ``(eta, v)`` minimise the dual::

    g(eta, v) = eta * epsilon + eta * log mean(exp(delta / eta))
                + l2_reg_dual * (eta^2 + 1 / eta^2)                        (eta > 0)
    policy: max_opt_iter L-BFGS iterations on -mean(q / mean q * log pi(a|s))
            (+ l2_reg_loss * the mean square of the actor's parameters)

``f . v`` is the state's value as the dual finds it (a baseline that makes the feature averages
hold). ``g`` is convex and bounded below by ``eta * epsilon + mean G`` (Jensen), so its minimum
exists; it is found by damped Newton steps (:func:`minimise_dual`) from the last update's
solution (rllab's warm start; ``eta = 15``, ``v = 0`` at first).

Why not rllab's per-step form, ``delta = r + V(s') - V(s)`` with ``V(s) = phi(s) . v``: on
episodes that end (CartPole's every reward is 1, its signal is termination) that dual has no
minimum. Its constant and time features can only balance with no weight on the terminal steps
and more than the batch has on early ones, so ``v`` runs off to infinity; rllab stops after 50
L-BFGS iterations wherever that is. A truncated episode's return bootstraps the value of its
final observation by rllab's linear feature baseline, refitted each update (``baseline``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch

from stagerl.algorithms._checks import check_ints, check_numbers
from stagerl.algorithms.on_policy.base import OnPolicy, OnPolicyConfig, build_model_for
from stagerl.algorithms.on_policy.baselines import LinearFeatureBaseline, linear_features
from stagerl.algorithms.on_policy.erwr import (
    LBFGS,
    lbfgs_minimise,
    weighted_log_likelihood_loss,
)
from stagerl.algorithms.on_policy.networks import ActorCritic
from stagerl.algorithms.on_policy.rollout import add_discounted_returns
from stagerl.algorithms.on_policy.vpg import ended_episodes, episodes_trajectory
from stagerl.policies.agent import Agent

__all__ = ["REPSConfig", "REPSPolicy", "reps_dual", "minimise_dual", "context_features",
           "reps_weights", "make_reps_agent", "dual_gradient_and_hessian"]


@dataclass
class REPSConfig(OnPolicyConfig):
    """REPS's hyper-parameters (rllab's defaults where it has them), with those of
    :class:`~stagerl.algorithms.on_policy.base.OnPolicyConfig`.

    Attributes:
        learning_rate: the policy's L-BFGS step size (its line search scales it).
        gamma: the discount of the returns to go.
        episodes_per_update: finished episodes per update.
        max_episode_steps: an episode's longest length (the env's time limit): it sizes the
            trajectory, which holds every step between two updates.
        epsilon: the bound on the relative entropy between the reweighted batch and the batch.
        l2_reg_dual: the dual's regularisation ``l2_reg_dual * (eta^2 + 1/eta^2)``.
        l2_reg_loss: the policy loss's regularisation (times the mean square of the actor's
            parameters).
        max_opt_iter: L-BFGS iterations of the policy per update (rllab's ``max_opt_itr``).
        dual_iter: Newton steps of the dual per update (at most).
    """

    learning_rate: float = 1.0
    episodes_per_update: int = 16
    max_episode_steps: int = 500
    epsilon: float = 0.5
    l2_reg_dual: float = 0.0
    l2_reg_loss: float = 0.0
    max_opt_iter: int = 50
    dual_iter: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "episodes_per_update", "max_episode_steps", "max_opt_iter",
                   "dual_iter")
        check_numbers(self, "epsilon", above=0)
        check_numbers(self, "l2_reg_dual", "l2_reg_loss", at_least=0)


def reps_dual(eta: torch.Tensor, v: torch.Tensor, returns: torch.Tensor,
              features: torch.Tensor, epsilon: float, l2_reg: float = 0.0) -> torch.Tensor:
    """REPS's dual ``g(eta, v)`` (see the module docstring) for ``delta = returns -
    features @ v`` (``features`` centred), computed stably (the largest ``delta / eta`` taken
    out of the exponentials). Differentiable in ``eta`` and ``v``.

    Example:
        >>> f64 = dict(dtype=torch.float64)
        >>> d = reps_dual(torch.tensor(1.0, **f64), torch.zeros(1, **f64),
        ...               torch.tensor([0.0, 1.0], **f64), torch.zeros(2, 1, **f64), 0.5)
        >>> round(float(d), 6)   # 0.5 + log((1 + e) / 2)
        1.120115
    """
    delta = returns - features @ v
    z = delta / eta
    top = z.max().detach()
    dual = eta * epsilon + eta * (torch.log(torch.exp(z - top).mean()) + top)
    if l2_reg > 0:
        dual = dual + l2_reg * (eta * eta + 1.0 / (eta * eta))
    return dual


def dual_gradient_and_hessian(dual_of: Any, x: torch.Tensor) -> tuple:
    """``dual_of``'s gradient and Hessian at ``x`` by autograd: one evaluation and one backward
    that keeps its graph, then one batched backward of the gradient for all rows at once
    (``is_grads_batched``: the rows of the identity, vectorised). That is the arithmetic of
    ``torch.autograd.functional.hessian`` (one backward per row) bit for bit, tested on the
    dual's problems, without its second evaluation and backward for the gradient alone (a
    Newton step needs both) and without a backward pass per row.

    Example:
        >>> g, h = dual_gradient_and_hessian(lambda x: (x ** 3).sum(),
        ...                                  torch.tensor([1.0, 2.0], dtype=torch.float64))
        >>> g.tolist(), h.tolist()
        ([3.0, 12.0], [[6.0, 0.0], [0.0, 12.0]])
    """
    point = x.detach().clone().requires_grad_(True)
    gradient = torch.autograd.grad(dual_of(point), point, create_graph=True)[0]
    rows = torch.eye(len(x), dtype=x.dtype)
    hessian = torch.autograd.grad(gradient, point, rows, is_grads_batched=True)[0]
    return gradient.detach(), hessian


def minimise_dual(returns: np.ndarray, features: np.ndarray, epsilon: float, l2_reg: float,
                  eta: float, v: np.ndarray, max_iter: int) -> tuple:
    """Minimise :func:`reps_dual` over ``(eta > 0, v)`` from ``(eta, v)`` by damped Newton
    steps (the dual is smooth and convex; its gradient and Hessian by autograd, float64:
    :func:`dual_gradient_and_hessian`),
    each step halved until it decreases the dual and keeps ``eta`` positive. Returns
    ``(eta, v, dual)``."""
    r = torch.as_tensor(returns, dtype=torch.float64)
    f = torch.as_tensor(features, dtype=torch.float64)

    def dual_of(x: torch.Tensor) -> torch.Tensor:
        return reps_dual(x[0], x[1:], r, f, epsilon, l2_reg)

    x = torch.as_tensor(np.concatenate([[eta], v]), dtype=torch.float64)
    value = float(dual_of(x))
    for _ in range(max_iter):
        gradient, hessian = dual_gradient_and_hessian(dual_of, x)
        damping = 1e-12 * (float(hessian.diagonal().abs().max()) or 1.0)
        while True:  # the least damping that makes the Newton system positive definite
            factor, info = torch.linalg.cholesky_ex(
                hessian + damping * torch.eye(len(x), dtype=torch.float64))
            if int(info) == 0:
                break
            damping *= 10.0
        direction = -torch.cholesky_solve(gradient[:, None], factor)[:, 0]
        slope = float(gradient @ direction)
        if -slope < 1e-12 * max(1.0, abs(value)):
            break  # converged
        step, moved = 1.0, False
        for _ in range(60):
            candidate = x + step * direction
            if float(candidate[0]) > 0:
                new = float(dual_of(candidate))
                if math.isfinite(new) and new <= value + 1e-4 * step * slope:
                    x, value, moved = candidate, new, True
                    break
            step *= 0.5
        if not moved:
            break
    return float(x[0]), x[1:].numpy().copy(), value


def context_features(states: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The contexts' features, centred: rllab's features of each state at its time step without
    the constant, minus their mean over the batch (float64).

    Example:
        >>> context_features(np.array([[1.0], [3.0]]), np.array([0, 100])).tolist()
        [[-1.0, -4.0, -0.5, -0.5, -0.5], [1.0, 4.0, 0.5, 0.5, 0.5]]
    """
    features = linear_features(states, steps)[:, :-1]
    return features - features.mean(axis=0)


def reps_weights(delta: np.ndarray, eta: float) -> np.ndarray:
    """``exp(delta / eta)`` scaled to mean 1 (the reweighting of the batch's steps).

    Example:
        >>> reps_weights(np.array([0.0, np.log(3.0)]), 1.0).tolist()
        [0.5, 1.5]
    """
    z = np.asarray(delta, dtype=np.float64) / eta
    w = np.exp(z - z.max())
    return w / w.mean()


class REPSPolicy(OnPolicy):
    """REPS (see the module docstring). Build one with :func:`make_reps_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.on_policy.reps import REPSConfig, make_reps_agent
        >>> env = rl.GymEnv("CartPole-v1", seed=0)
        >>> agent = make_reps_agent(env, REPSConfig(episodes_per_update=2), device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNEpisodes(4, progress=False))
        >>> agent.policy.n_updates, agent.policy.eta > 0
        (2, True)
    """

    def __init__(self, model: ActorCritic, config: REPSConfig, rng: Any = None):
        space = getattr(model, "observation_space", None)
        if space is not None and not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f"REPS's context features are those of Box observations (a vector "
                            f"or array, flattened), got {space}; learn from Dict, Tuple or "
                            "discrete observations with another algorithm (PPO, A2C, VPG)")
        optimiser = LBFGS([model.flat_parameters()[0]], config.learning_rate,
                          config.max_opt_iter)
        # The linear baseline bootstraps truncated episodes' returns (the critic is not used).
        super().__init__(model, optimiser, config.gamma, 1.0, None, config.normalize_states,
                         rng, config.normalize_rewards, baseline=LinearFeatureBaseline())
        self.config = config
        self.eta = 15.0  # the dual's solution, the next update's start (rllab's warm start)
        self.dual_v: np.ndarray | None = None

    def postprocess(self, rollout: dict) -> dict:
        return add_discounted_returns(rollout, self.gamma)

    def select(self, rollout: dict) -> np.ndarray:
        """The steps of the episodes that ended (as VPG: whole episodes)."""
        return ended_episodes(rollout)

    def solve_dual(self, returns: np.ndarray, features: np.ndarray) -> tuple:
        """Minimise the dual from the last solution; returns ``(eta, v, dual)``."""
        c = self.config
        if self.dual_v is None or len(self.dual_v) != features.shape[1]:
            self.dual_v = np.zeros(features.shape[1])
        eta, v, dual = minimise_dual(returns, features, c.epsilon, c.l2_reg_dual, self.eta,
                                     self.dual_v, c.dual_iter)
        self.eta, self.dual_v = eta, v
        return eta, v, dual

    def update(self, batch: dict) -> None:
        c = self.config
        returns = batch["return"].cpu().numpy().astype(np.float64)
        features = context_features(batch["raw_state"].cpu().numpy(),
                                    batch["step"].cpu().numpy())
        eta, v, dual = self.solve_dual(returns, features)
        weights = reps_weights(returns - features @ v, eta)
        w = torch.as_tensor(weights, dtype=torch.float32, device=self.device)
        actor = self.model.flat_parameters()[0]

        def loss() -> torch.Tensor:
            value = weighted_log_likelihood_loss(self.model, batch, w)
            if c.l2_reg_loss > 0:
                value = value + c.l2_reg_loss * (actor * actor).mean()
            return value

        with torch.no_grad():
            old = tuple(t.detach() for t in self.model.distribution(batch["state"]))
        policy_loss = lbfgs_minimise(self.optimiser, loss)
        self.optimiser.state.clear()  # nothing of this problem is kept for the next
        with torch.no_grad():
            kl = float(self.model.kl_from(old, batch["state"]).mean())
        q = weights / weights.sum()
        self.stats = {"dual": dual, "eta": eta, "policy_loss": policy_loss, "kl": kl,
                      "weights_kl": float((q * np.log(q * len(q) + 1e-300)).sum()),
                      "episode_steps": float(len(weights))}
        self.baseline.fit(self, batch)

    def fit_critic(self, batch: dict) -> None:
        pass  # REPS's values are its dual's and its baseline's (the critic is not used)

    def state_dict(self) -> dict[str, Any]:
        """The on-policy state and the dual's last solution (the next update starts there, so
        a resumed run goes on as the run that was never stopped)."""
        state = super().state_dict()
        state["dual"] = {"eta": self.eta,
                         "v": None if self.dual_v is None else self.dual_v.copy()}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        dual = state["dual"]
        self.eta = float(dual["eta"])
        self.dual_v = None if dual["v"] is None else np.array(dual["v"], dtype=np.float64)


def make_reps_agent(env: Any, config: REPSConfig | None = None, seed: int = 0,
                    device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with REPS in ``env`` (a ``GymEnv`` or ``GymVectorEnv``); the
    settings are checked by :class:`REPSConfig`, the env's spaces here (Box observations:
    the dual's context features are theirs). ``features_extractor``: a factory of the
    observation space in place of the built-in ``config`` names (the policy's body)."""
    config = REPSConfig() if config is None else config
    who = "make_reps_agent"
    if not isinstance(config, REPSConfig):
        raise TypeError(f"{who} needs a REPSConfig, got {type(config).__name__}")
    model = build_model_for(env, who, config, seed, device, features_extractor)
    trajectory = episodes_trajectory(env, config.episodes_per_update, config.max_episode_steps)
    return Agent(REPSPolicy(model, config, rng=seed), trajectory)
