"""VPG: REINFORCE with a baseline, from whole episodes (rllab's VPG).

Every ``episodes_per_update`` finished episodes (ended by termination or a time limit)::

    G_t = r_t + gamma * G_{t+1}           Monte-Carlo returns (a time limit bootstraps b(final))
    A_t = G_t - b(s_t, t)                 (normalised; b: the baseline before this update)
    policy: one step on -mean(log pi(a_t|s_t) * A_t)
    baseline: refitted to the returns G_t

The baseline ``b`` is chosen by name (``baseline=``, see
:mod:`stagerl.algorithms.on_policy.baselines`): the value network (``value_epochs`` steps on
``mean((V(s_t) - G_t)^2)``), rllab's linear feature baseline, or none (``"zero"``).

On a vector env the sub-envs' episodes end at different steps: an update learns from every
episode that ended since the last one, and the steps of the episodes still running are dropped
(so every step learned from was taken by the policy being improved); those episodes go on, and
their remaining steps, whose returns are still exact, are learned from once they end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from stagerl.algorithms._checks import check_ints, check_numbers
from stagerl.algorithms.on_policy.base import OnPolicy, OnPolicyConfig, build_model_for
from stagerl.algorithms.on_policy.baselines import check_baseline_settings, make_baseline
from stagerl.algorithms.on_policy.networks import ActorCritic, check_spaces
from stagerl.algorithms.on_policy.rollout import add_discounted_returns, rollout_trajectory
from stagerl.policies.agent import Agent
from trajectories import EpisodeSampleRatioController

__all__ = ["VPGConfig", "VPGPolicy", "vpg_loss", "make_vpg_agent", "ended_episodes",
           "episodes_trajectory"]


@dataclass
class VPGConfig(OnPolicyConfig):
    """VPG's hyper-parameters, with those of
    :class:`~stagerl.algorithms.on_policy.base.OnPolicyConfig` (``learning_rate`` is the
    policy's Adam step size).

    Attributes:
        episodes_per_update: finished episodes per update.
        value_learning_rate: the value baseline's Adam step size.
        value_epochs: full-batch steps of the baseline per update.
        normalize_advantage: normalise the advantages of each update.
        max_episode_steps: an episode's longest length (the env's time limit): it sizes the
            trajectory, which holds every step between two updates.
        baseline: what the returns are measured against: ``"network"`` (the learned value
            network), ``"linear"`` (rllab's linear feature baseline, refitted each update) or
            ``"zero"`` (none).
        baseline_reg_coeff: the linear baseline's ridge regularisation.
    """

    learning_rate: float = 1e-2
    episodes_per_update: int = 16
    value_learning_rate: float = 1e-2
    value_epochs: int = 5
    normalize_advantage: bool = True
    max_episode_steps: int = 500
    baseline: str = "network"
    baseline_reg_coeff: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "episodes_per_update", "value_epochs", "max_episode_steps")
        check_numbers(self, "value_learning_rate", above=0)
        check_baseline_settings(self)


def vpg_loss(model: ActorCritic, batch: dict) -> torch.Tensor:
    """The policy-gradient loss ``-mean(log pi(a|s) * A)``."""
    log_prob, _ = model.log_prob_entropy(batch["state"], batch["action"], entropy=False)
    return -(log_prob * batch["advantage"]).mean()


class VPGPolicy(OnPolicy):
    """VPG (see the module docstring). Build one with :func:`make_vpg_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import VPGConfig, make_vpg_agent
        >>> env = rl.GymEnv("CartPole-v1", seed=0)
        >>> agent = make_vpg_agent(env, VPGConfig(episodes_per_update=2), device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNEpisodes(4, progress=False))
        >>> agent.policy.n_updates
        2
    """

    def __init__(self, model: ActorCritic, config: VPGConfig, rng: Any = None):
        actor, critic = model.flat_parameters()
        optimiser = torch.optim.Adam([actor], lr=config.learning_rate, fused=True)
        super().__init__(model, optimiser, config.gamma, 1.0, None, config.normalize_states, rng,
                         config.normalize_rewards,
                         make_baseline(config.baseline, config.baseline_reg_coeff))
        self.value_optimiser = torch.optim.Adam([critic], lr=config.value_learning_rate,
                                                fused=True)
        self.config = config

    def postprocess(self, rollout: dict) -> dict:
        rollout = add_discounted_returns(rollout, self.gamma)
        rollout["advantage"] = rollout["return"] - rollout["value"]
        return rollout

    def select(self, rollout: dict) -> np.ndarray:
        """The steps of the episodes that ended (each lane up to its last episode end)."""
        return ended_episodes(rollout)

    def update(self, batch: dict) -> None:
        advantage = batch["advantage"]
        if self.config.normalize_advantage and len(advantage) > 1:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        policy_loss = vpg_loss(self.model, {**batch, "advantage": advantage})
        self.gradient_step(self.optimiser, policy_loss)
        self.stats = {"policy_loss": policy_loss.item(), "episode_steps": float(len(advantage))}
        self.baseline.fit(self, batch)

    def fit_critic(self, batch: dict) -> None:
        """The value network's ``value_epochs`` full-batch steps on the returns."""
        for _ in range(self.config.value_epochs):
            value_loss = F.mse_loss(self.model.value(batch["state"]), batch["return"])
            self.gradient_step(self.value_optimiser, value_loss)
        self.stats["value_loss"] = value_loss.item()


def ended_episodes(rollout: dict) -> np.ndarray:
    """The ``(T, n_lanes)`` mask of the steps of the episodes that ended in ``rollout`` (each
    lane up to its last terminal or truncated step): what whole-episode learners learn from."""
    ended = (rollout["terminal"] | rollout["truncated"]) & rollout["valid"]
    steps = np.arange(len(ended))[:, None]
    last_end = np.where(ended, steps, -1).max(axis=0)
    return rollout["valid"] & (steps <= last_end)


def episodes_trajectory(env: Any, episodes: int, max_episode_steps: int) -> Any:
    """The trajectory of a whole-episode learner: an update every ``episodes`` finished
    episodes, lanes large enough for every step between two updates."""
    _, _, n_envs = check_spaces(env, "episodes_trajectory")
    # Within max_episode_steps acts every sub-env ends an episode, so an update comes within
    # ceil(episodes / n_envs) * max_episode_steps acts; each act adds at most two rows a lane.
    lane_capacity = 2 * math.ceil(episodes / n_envs) * max_episode_steps + 1
    controller = EpisodeSampleRatioController(ratio=1 / episodes, threshold=episodes)
    return rollout_trajectory(env, 1, controller, lane_capacity)


def make_vpg_agent(env: Any, config: VPGConfig | None = None, seed: int = 0,
                   device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An Agent that learns with VPG in ``env`` (a ``GymEnv`` or ``GymVectorEnv``); the
    settings are checked by :class:`VPGConfig`, the env's spaces here. ``features_extractor``:
    a factory of the observation space in place of the built-in ``config`` names (a shared
    one moves with the policy's step)."""
    config = VPGConfig() if config is None else config
    who = "make_vpg_agent"
    if not isinstance(config, VPGConfig):
        raise TypeError(f"{who} needs a VPGConfig, got {type(config).__name__}")
    model = build_model_for(env, who, config, seed, device, features_extractor)
    trajectory = episodes_trajectory(env, config.episodes_per_update, config.max_episode_steps)
    return Agent(VPGPolicy(model, config, rng=seed), trajectory)
