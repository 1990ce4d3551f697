"""PPO: proximal policy optimisation with the clipped surrogate objective (Schulman et al. 2017).

Every ``n_steps`` steps of each sub-env, ``n_epochs`` passes over the rollout in minibatches of
``batch_size``, each a gradient step on::

    ratio = pi(a|s) / pi_old(a|s)                 (pi_old: the policy that acted)
    policy_loss = -mean(min(ratio * A, clip(ratio, 1 - clip_range, 1 + clip_range) * A))
    value_loss = mean((V(s) - return)^2)          (V clipped around V_old with clip_range_vf)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
           (+ kl_coef * mean(KL(pi_old || pi)))   with the adaptive KL penalty

with GAE advantages ``A`` (normalised per minibatch), categorical or diagonal-Gaussian policies,
learning-rate and clip-range schedules, gradient-norm clipping and optional observation
normalisation, as Stable-Baselines3's PPO. In an env with legal-action masks (a game's player)
the categorical is restricted to the legal actions, when acting and in the loss (the mask each
action was drawn under is stored with it), as sb3-contrib's MaskablePPO.

The adaptive KL penalty is RLlib's (``kl_coeff``, ``kl_target`` and its ``update_kl`` after each
train step), with or without clipping (``clip_range=inf``: the penalty alone, the PPO paper's
second variant). After each update the mean KL from the acting policy over the rollout is
measured and the coefficient adapted (:func:`adapt_kl_coef`)::

    KL > 2 * kl_target:    kl_coef *= 1.5
    KL < kl_target / 2:    kl_coef *= 0.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from stagerl.algorithms._checks import check_choice, check_ints, check_numbers
from stagerl.algorithms.on_policy.base import OnPolicy, OnPolicyConfig, build_model_for
from stagerl.algorithms.on_policy.networks import ActorCritic, check_spaces
from stagerl.algorithms.on_policy.rollout import check_rollout_size, rollout_trajectory, rows_of
from stagerl.algorithms.schedules import SCHEDULES, scheduled
from stagerl.policies.agent import Agent

__all__ = ["PPOConfig", "PPOPolicy", "ppo_loss", "ppo_diagnostics", "scheduled",
           "adapt_kl_coef", "make_ppo_agent"]


@dataclass
class PPOConfig(OnPolicyConfig):
    """PPO's hyper-parameters (defaults: Stable-Baselines3's), with those of
    :class:`~stagerl.algorithms.on_policy.base.OnPolicyConfig` (``learning_rate``, ``gamma``,
    ``net_arch``, ...).

    Attributes:
        n_steps: steps of each sub-env per rollout.
        batch_size: transitions per minibatch.
        n_epochs: passes over each rollout.
        learning_rate_schedule, clip_range_schedule: ``"constant"``, or ``"linear"`` (RL-Zoo's
            ``lin_<value>``): falling to 0 over ``total_steps`` env steps (the run's length).
        clip_range: the ratio is clipped to ``[1 - clip_range, 1 + clip_range]`` (inf: never
            clipped).
        clip_range_vf: the value is clipped to ``clip_range_vf`` around the value that acted
            (``None`` or inf: never clipped).
        gae_lambda: GAE's lambda.
        normalize_advantage: normalise the advantages per minibatch.
        ent_coef: the entropy bonus's weight.
        vf_coef: the value loss's weight.
        max_grad_norm: clip the gradient norm to this (inf: never clip).
        target_kl: stop an update's epochs early once the approximate KL passes 1.5 times this
            (``None`` or inf: never stop early).
        total_steps: the run's length in env steps, over which the schedules fall (``None``:
            they stay at their start; named experiments set it to ``steps``).
        kl_coef: the KL penalty's initial coefficient (RLlib's ``kl_coeff``; 0: no penalty);
            it adapts after each update towards ``kl_target``.
        kl_target: the KL per update the penalty's coefficient adapts towards: times 1.5 when
            the measured KL passes twice this, times 0.5 below half of it (RLlib's
            ``update_kl``; inf: the coefficient stays fixed).

    Example:
        >>> PPOConfig(gamma=1.5)
        Traceback (most recent call last):
        ...
        ValueError: PPOConfig: gamma must be in [0, 1], got gamma=1.5
    """

    n_steps: int = 2048
    batch_size: int = 64
    n_epochs: int = 10
    learning_rate_schedule: str = "constant"
    clip_range: float = 0.2
    clip_range_schedule: str = "constant"
    clip_range_vf: float | None = None
    gae_lambda: float = 0.95
    normalize_advantage: bool = True
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    total_steps: int | None = None
    kl_coef: float = 0.0
    kl_target: float = 0.01

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "n_steps", "batch_size", "n_epochs", "total_steps")
        check_choice(self, "learning_rate_schedule", SCHEDULES)
        check_choice(self, "clip_range_schedule", SCHEDULES)
        check_numbers(self, "clip_range", "clip_range_vf", above=0, inf="never clipped")
        check_numbers(self, "gae_lambda", at_least=0, at_most=1)
        check_numbers(self, "ent_coef", "vf_coef", at_least=0)
        check_numbers(self, "max_grad_norm", above=0, inf="never clip")
        check_numbers(self, "target_kl", above=0, inf="never stop early")
        check_numbers(self, "kl_coef", at_least=0)
        check_numbers(self, "kl_target", above=0, inf="the coefficient stays fixed")


def adapt_kl_coef(kl_coef: float, kl: float, kl_target: float) -> float:
    """The KL penalty's next coefficient after an update that moved the policy by ``kl``
    (RLlib's ``update_kl``): 1.5 times larger above ``2 * kl_target``, half below
    ``kl_target / 2``, the same in between (and for an infinite ``kl_target``).

    Example:
        >>> [adapt_kl_coef(0.2, kl, 0.01) for kl in (0.03, 0.01, 0.004)]
        [0.30000000000000004, 0.2, 0.1]
    """
    if kl_target == math.inf:
        return kl_coef
    if kl > 2.0 * kl_target:
        return kl_coef * 1.5
    if kl < 0.5 * kl_target:
        return kl_coef * 0.5
    return kl_coef


def ppo_loss(model: ActorCritic, batch: dict, clip_range: float, clip_range_vf: float | None,
             ent_coef: float, vf_coef: float, normalize_advantage: bool, kl_coef: float = 0.0,
             old: tuple | None = None) -> tuple:
    """PPO's clipped loss on a minibatch, and its parts (for logging). With ``kl_coef > 0``
    the loss adds ``kl_coef * mean(KL(old || pi))``, ``old`` the acting policy's distribution
    on the minibatch (``model.distribution`` before the update)."""
    log_prob, entropy, values = model.evaluate(batch["state"], batch["action"], ent_coef > 0,
                                               batch.get("legal_actions_mask"))
    advantage = batch["advantage"]
    if normalize_advantage and len(advantage) > 1:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    ratio = torch.exp(log_prob - batch["log_prob"])
    clipped = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    policy_loss = -torch.min(advantage * ratio, advantage * clipped).mean()
    if clip_range_vf is not None:
        old_values = batch["value"]
        values = old_values + torch.clamp(values - old_values, -clip_range_vf, clip_range_vf)
    value_loss = F.mse_loss(values, batch["return"])
    loss = policy_loss + vf_coef * value_loss
    if ent_coef > 0:  # skipped at 0: the entropy's share of the backward pass costs time
        loss = loss - ent_coef * entropy.mean()
    parts = {"policy_loss": policy_loss, "value_loss": value_loss}
    if kl_coef > 0:
        parts["kl_penalty"] = model.kl_from(old, batch["state"]).mean()
        loss = loss + kl_coef * parts["kl_penalty"]
    return loss, parts


@torch.no_grad()
def ppo_diagnostics(model: ActorCritic, batch: dict, clip_range: float) -> dict:
    """The entropy, the approximate KL from the acting policy and the fraction of clipped
    ratios on ``batch`` (computed once per update, outside the gradient steps)."""
    log_prob, entropy = model.log_prob_entropy(batch["state"], batch["action"],
                                               mask=batch.get("legal_actions_mask"))
    log_ratio = log_prob - batch["log_prob"]
    ratio = torch.exp(log_ratio)
    return {"entropy": entropy.mean(), "approx_kl": ((ratio - 1.0) - log_ratio).mean(),
            "clip_fraction": ((ratio - 1.0).abs() > clip_range).float().mean()}


class PPOPolicy(OnPolicy):
    """PPO (see the module docstring): the default GAE postprocessor and ``n_epochs`` of
    minibatch steps on :func:`ppo_loss` per rollout. Build one with :func:`make_ppo_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import PPOConfig, make_ppo_agent
        >>> from stagerl.algorithms.on_policy import make_vector_env
        >>> env = make_vector_env("CartPole-v1", num_envs=4, seed=0)
        >>> config = PPOConfig(n_steps=16, batch_size=32, n_epochs=2)
        >>> agent = make_ppo_agent(env, config, seed=0, device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(128, progress=False))
        >>> agent.policy.n_updates, sorted(agent.policy.stats)[:2]
        (2, ['approx_kl', 'clip_fraction'])
    """

    def __init__(self, model: ActorCritic, config: PPOConfig, rng: Any = None):
        optimiser = torch.optim.Adam(model.flat_parameters(), lr=config.learning_rate,
                                     eps=1e-5, fused=True)
        super().__init__(model, optimiser, config.gamma, config.gae_lambda, config.max_grad_norm,
                         config.normalize_states, rng, config.normalize_rewards)
        self.config = config
        self.kl_coef = config.kl_coef  # the KL penalty's coefficient now (it adapts)

    def progress_remaining(self) -> float:
        """1 at the start of the run, 0 at ``total_steps`` env steps (1 without them)."""
        steps = self.config.total_steps
        return 1.0 - self.env_steps / steps if steps else 1.0

    def update(self, batch: dict) -> None:
        c = self.config
        progress = self.progress_remaining()
        for group in self.optimiser.param_groups:
            group["lr"] = scheduled(c.learning_rate, c.learning_rate_schedule, progress)
        clip_range = scheduled(c.clip_range, c.clip_range_schedule, progress)
        n = len(batch["advantage"])
        normalize = c.normalize_advantage
        if n <= c.batch_size and normalize and n > 1:  # one minibatch: normalise it once
            advantage = batch["advantage"]
            batch = {**batch, "advantage": (advantage - advantage.mean()) / (advantage.std()
                                                                            + 1e-8)}
            normalize = False
        kl_coef, old, old_log_std = self.kl_coef, None, None
        if kl_coef > 0:  # the acting policy's distribution, per row (minibatches index it)
            with torch.no_grad():
                old = tuple(t.detach() for t in self.model.distribution(batch["state"]))
            batch = {**batch, "old_distribution": old[0]}
            old_log_std = old[1] if len(old) > 1 else None
        for _ in range(c.n_epochs):
            # The whole rollout as one minibatch needs no shuffling: the loss is a mean.
            order = torch.as_tensor(self.rng.permutation(n), device=self.device) \
                if n > c.batch_size else None
            for start in range(0, n, c.batch_size):
                minibatch = batch if order is None else \
                    rows_of(batch, order[start:start + c.batch_size])
                if old is not None:
                    old = (minibatch["old_distribution"],) if old_log_std is None else \
                        (minibatch["old_distribution"], old_log_std)
                loss, parts = ppo_loss(self.model, minibatch, clip_range, c.clip_range_vf,
                                       c.ent_coef, c.vf_coef, normalize, kl_coef, old)
                self.gradient_step(self.optimiser, loss)
            if c.target_kl is not None:
                kl = ppo_diagnostics(self.model, batch, clip_range)["approx_kl"]
                if kl > 1.5 * c.target_kl:
                    break
        parts.update(ppo_diagnostics(self.model, batch, clip_range))
        if kl_coef > 0:  # the update's KL from the acting policy, and the next coefficient
            whole = (batch["old_distribution"],) if old_log_std is None else \
                (batch["old_distribution"], old_log_std)
            with torch.no_grad():
                parts["kl"] = self.model.kl_from(whole, batch["state"]).mean()
        self.stats = {name: value.item() for name, value in parts.items()}
        if kl_coef > 0:
            self.stats["kl_coef"] = kl_coef  # the coefficient this update used
            self.kl_coef = adapt_kl_coef(kl_coef, self.stats["kl"], c.kl_target)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "kl_coef": self.kl_coef}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.kl_coef = float(state.get("kl_coef", self.config.kl_coef))


def make_ppo_agent(env: Any, config: PPOConfig | None = None, seed: int = 0,
                   device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with PPO in ``env`` (a ``GymEnv`` or ``GymVectorEnv``).

    ``features_extractor``: a factory of the observation space (see
    :mod:`stagerl.algorithms.extractors`) in place of the built-in ``config`` names.

    In an env with legal-action masks (a player's view of a game such as ``TicTacToe``) the
    agent is *masked*: it draws among the legal actions, and learns under the masks it drew with
    (masks are for a ``Discrete`` action space: with another, a ``TypeError``).

    Raises ``ValueError`` when a rollout (``n_steps`` times the number of sub-envs) is smaller
    than ``batch_size`` (the settings themselves are checked by :class:`PPOConfig`);
    ``TypeError`` for an env whose spaces PPO cannot act in.
    """
    config = PPOConfig() if config is None else config
    who = "make_ppo_agent"
    if not isinstance(config, PPOConfig):
        raise TypeError(f"{who} needs a PPOConfig, got {type(config).__name__}")
    _, _, n_envs = check_spaces(env, who)
    check_rollout_size(who, config.n_steps, n_envs, config.batch_size)
    model = build_model_for(env, who, config, seed, device, features_extractor)
    policy = PPOPolicy(model, config, rng=seed)
    trajectory = rollout_trajectory(env, config.n_steps)  # refuses masks of non-Discrete actions
    policy.masked = "legal_actions_mask" in trajectory.keys()  # acts as it learns: masked
    return Agent(policy, trajectory)
