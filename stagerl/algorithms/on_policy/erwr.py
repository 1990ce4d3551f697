"""ERWR: episodic reward-weighted regression (Kober & Peters 2009), as rllab's ``ERWR``.

Every ``episodes_per_update`` finished episodes, VPG's advantages are turned into positive
weights and the policy is fitted to its own actions by weighted maximum likelihood (an EM
step: the actions that did better than the others are made more likely)::

    A_t = G_t - b(s_t, t)                       Monte-Carlo returns against the baseline
    A_t = (A_t - mean A) / std A                (normalize_advantage, rllab's center_adv)
    w_t = A_t - min A + 1e-8                    (rllab's positive_adv: shifted to be positive)
    policy: max_opt_iter L-BFGS iterations on -mean(w_t * log pi(a_t|s_t))
    baseline: refitted to the returns (default rllab's linear feature baseline)

So it is VPG with another loss and optimiser: whole episodes, the time steps and baselines of
:mod:`stagerl.algorithms.on_policy.vpg`, the weights of :func:`erwr_weights`. Each update's
L-BFGS starts afresh (rllab's scipy L-BFGS), nothing carried over from the last batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from stagerl.algorithms._checks import check_ints
from stagerl.algorithms.on_policy.base import build_model_for
from stagerl.algorithms.on_policy.networks import ActorCritic
from stagerl.algorithms.on_policy.vpg import VPGConfig, VPGPolicy, episodes_trajectory
from stagerl.policies.agent import Agent

__all__ = ["ERWRConfig", "ERWRPolicy", "erwr_weights", "weighted_log_likelihood_loss",
           "LBFGS", "lbfgs_minimise", "make_erwr_agent"]


@dataclass
class ERWRConfig(VPGConfig):
    """ERWR's hyper-parameters (rllab's defaults where it has them), with VPG's
    (:class:`~stagerl.algorithms.on_policy.vpg.VPGConfig`: whole episodes, the baseline).

    Attributes:
        learning_rate: L-BFGS's step size (its line search scales it).
        max_opt_iter: L-BFGS iterations per update (rllab's ``max_opt_itr``).
        normalize_advantage: centre and scale the advantages before they are shifted to be
            positive (rllab's ``center_adv``).
        baseline: what the returns are measured against (default ``"linear"``, rllab's linear
            feature baseline; ``"network"`` or ``"zero"``).
    """

    learning_rate: float = 1.0
    max_opt_iter: int = 20
    baseline: str = "linear"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "max_opt_iter")


def erwr_weights(advantage: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """ERWR's weights of advantages: centred and scaled (population std, as numpy's), then
    shifted so that the smallest is ``1e-8`` (rllab's ``center_advantages`` and
    ``shift_advantages_to_positive``).

    Example:
        >>> erwr_weights(torch.tensor([1.0, 3.0]), normalize=False).tolist()
        [9.99999993922529e-09, 2.0]
    """
    if normalize and len(advantage) > 1:
        advantage = (advantage - advantage.mean()) / (advantage.std(unbiased=False) + 1e-8)
    return advantage - advantage.min() + 1e-8


def weighted_log_likelihood_loss(model: ActorCritic, batch: dict,
                                 weights: torch.Tensor) -> torch.Tensor:
    """``-mean(w * log pi(a|s))``: the weighted maximum-likelihood fit of the policy to its own
    actions (the M-step of reward-weighted regression and of REPS)."""
    log_prob, _ = model.log_prob_entropy(batch["state"], batch["action"], entropy=False)
    return -(weights * log_prob).mean()


class LBFGS(torch.optim.LBFGS):
    """torch's L-BFGS with the strong-Wolfe line search (ERWR's and REPS's policy fit), the
    same object after a copy, a pickle or a checkpoint's round trip as before it.

    torch's ``Optimizer.__setstate__`` (which copying, unpickling and loading a checkpoint
    call) adds ``differentiable`` to the defaults, which L-BFGS's ``__init__`` leaves out: a
    fresh one has it here too, so that a resumed run's state is the uninterrupted one's. And
    torch keeps an optimiser's ``defaults``, ``state`` and ``param_groups`` only, while
    L-BFGS's ``step`` reads two more attributes: a rebuilt one gets them back at once.

    Args:
        params: the parameters it fits (one flat tensor, see ``ActorCritic.flat_parameters``).
        lr: the step size (the line search scales it).
        max_iter: iterations per ``step``.

    Example:
        >>> import copy
        >>> optimiser = LBFGS([torch.zeros(3, requires_grad=True)], lr=1.0, max_iter=5)
        >>> copy.deepcopy(optimiser).__getstate__()["defaults"] == optimiser.defaults
        True
    """

    def __init__(self, params: Any, lr: float, max_iter: int):
        super().__init__(params, lr=lr, max_iter=max_iter, line_search_fn="strong_wolfe")
        self.defaults.setdefault("differentiable", False)  # as __setstate__ leaves it

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        _relink_lbfgs(self)


def _relink_lbfgs(optimiser: torch.optim.LBFGS) -> None:
    """Give an L-BFGS rebuilt from its pickled state the two attributes its ``step`` reads and
    its ``__init__`` sets (its parameters, flat, and their count, computed again)."""
    optimiser._params = [p for group in optimiser.param_groups for p in group["params"]]
    optimiser._numel_cache = None


def lbfgs_minimise(optimiser: torch.optim.LBFGS, loss_of: Any) -> float:
    """Minimise ``loss_of()`` with ``optimiser`` (an L-BFGS over flat parameters, its state
    emptied first: each problem starts afresh); returns the loss it ends at."""
    optimiser.state.clear()
    if not hasattr(optimiser, "_params"):  # a plain torch L-BFGS copied or loaded
        _relink_lbfgs(optimiser)
    params = optimiser._params

    def closure() -> torch.Tensor:
        for p in params:
            p.grad.zero_()  # in place: the model's gradients are views into these
        loss = loss_of()
        loss.backward()
        return loss

    optimiser.step(closure)
    with torch.no_grad():
        return float(loss_of())


class ERWRPolicy(VPGPolicy):
    """ERWR (see the module docstring). Build one with :func:`make_erwr_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.on_policy.erwr import ERWRConfig, make_erwr_agent
        >>> env = rl.GymEnv("CartPole-v1", seed=0)
        >>> agent = make_erwr_agent(env, ERWRConfig(episodes_per_update=2), device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNEpisodes(4, progress=False))
        >>> agent.policy.n_updates, type(agent.policy.baseline).__name__
        (2, 'LinearFeatureBaseline')
    """

    def __init__(self, model: ActorCritic, config: ERWRConfig, rng: Any = None):
        super().__init__(model, config, rng)
        # The actor by L-BFGS (emptied before each update), the critic (network baseline) by
        # VPG's Adam steps.
        self.optimiser = LBFGS([model.flat_parameters()[0]], config.learning_rate,
                               config.max_opt_iter)

    def update(self, batch: dict) -> None:
        weights = erwr_weights(batch["advantage"], self.config.normalize_advantage)
        with torch.no_grad():
            before = float(weighted_log_likelihood_loss(self.model, batch, weights))
        after = lbfgs_minimise(self.optimiser,
                               lambda: weighted_log_likelihood_loss(self.model, batch, weights))
        self.optimiser.state.clear()  # nothing of this problem is kept for the next
        self.stats = {"policy_loss_before": before, "policy_loss": after,
                      "mean_weight": float(weights.mean()),
                      "episode_steps": float(len(weights))}
        self.baseline.fit(self, batch)


def make_erwr_agent(env: Any, config: ERWRConfig | None = None, seed: int = 0,
                    device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with ERWR in ``env`` (a ``GymEnv`` or ``GymVectorEnv``); the
    settings are checked by :class:`ERWRConfig`, the env's spaces here (the linear baseline
    reads Box observations only). ``features_extractor``: a factory of the observation space
    in place of the built-in ``config`` names."""
    config = ERWRConfig() if config is None else config
    who = "make_erwr_agent"
    if not isinstance(config, ERWRConfig):
        raise TypeError(f"{who} needs an ERWRConfig, got {type(config).__name__}")
    model = build_model_for(env, who, config, seed, device, features_extractor)
    trajectory = episodes_trajectory(env, config.episodes_per_update, config.max_episode_steps)
    return Agent(ERWRPolicy(model, config, rng=seed), trajectory)
