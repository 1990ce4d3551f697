"""Soft Actor-Critic (SAC) for continuous actions: twin critics with Polyak-averaged targets, a
tanh-squashed Gaussian policy and an automatically tuned entropy coefficient.

The pieces, in the order a step meets them:

* ``plan``: a sample of the squashed Gaussian at the current state(s), rescaled to the
  action space's bounds (uniform random actions for the first ``learning_starts`` env steps;
  ``tanh(mean)`` and no draw at all while ``policy.deterministic``).
* The Agent records the step (``terminal = env.is_terminated``: a time limit's last transition
  stays bootstrapped).
* ``optimise`` at PostAct: whenever the trajectory's controller allows (one sample of
  ``gradient_steps`` batches every ``train_freq`` transitions once learning has started),
  :func:`sac_update` on each batch: the soft target, the three losses, one optimiser step,
  the targets' Polyak step.

Hyper-parameters carry Stable-Baselines3's names and defaults; ``docs/algorithms/sac_td3.md``
explains the choices. Build an agent with :func:`make_sac_agent`.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from stagerl.algorithms._checks import settings_name
from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.off_policy.base import ContinuousPolicy, ReplayConfig, make_continuous_agent
from stagerl.algorithms.off_policy.networks import Critics, InplaceReLU, frozen, polyak_update
from stagerl.algorithms.off_policy.replay import learn_from_replay
from stagerl.algorithms.onednn import with_onednn_linears
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise
from stagerl.core.stages import PostActStage
from stagerl.policies.agent import Agent
from stagerl.utils.distributions import diag_gaussian_sample, squashed_diag_gaussian_log_prob
from stagerl.utils.networks import mlp

__all__ = ["SACConfig", "SACPolicy", "SquashedGaussianActor", "sac_update", "make_sac_agent"]


@dataclass
class SACConfig(ReplayConfig):
    """Hyper-parameters of SAC (Stable-Baselines3's names and defaults): those of
    :class:`~stagerl.algorithms.off_policy.base.ReplayConfig` (``learning_rate`` is the step
    size of the actor, the critics and the entropy coefficient), and:

    Attributes:
        ent_coef: ``"auto"`` learns the entropy coefficient from 1.0, ``"auto_0.1"`` from 0.1;
            a positive number (or a numeric string) fixes it.
        target_entropy: the entropy the learned coefficient aims at; ``"auto"`` is
            ``-dim(action space)``; or a number (or a numeric string).

    Example:
        >>> SACConfig(learning_rate=1e-3).batch_size
        256
        >>> SACConfig(ent_coef="often")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: SACConfig: ent_coef must be "auto", ... got ent_coef='often'
    """

    ent_coef: str | float = "auto"
    target_entropy: str | float = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.entropy_coefficient()  # raises for a malformed ent_coef
        self.target_entropy_value(1)  # raises for a malformed target_entropy

    def target_entropy_value(self, action_dim: int) -> float:
        """The target entropy for actions of ``action_dim`` dimensions."""
        if self.target_entropy == "auto":
            return -float(action_dim)
        try:
            value = math.nan if isinstance(self.target_entropy, bool) else float(
                self.target_entropy)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(f'{settings_name(self)}: target_entropy must be "auto" or a finite '
                             f"number, got target_entropy={self.target_entropy!r}")
        return value

    def entropy_coefficient(self) -> tuple[float, bool]:
        """The initial entropy coefficient and whether it is learned."""
        value = self.ent_coef
        learned = isinstance(value, str) and (value == "auto" or value.startswith("auto_"))
        text = ("1.0" if value == "auto" else value[len("auto_"):]) if learned else value
        try:
            initial = math.nan if isinstance(text, bool) else float(text)
        except (TypeError, ValueError):
            initial = math.nan
        if not (initial > 0 and math.isfinite(initial)):
            raise ValueError(f'{settings_name(self)}: ent_coef must be "auto", "auto_<initial '
                             f'value>" or a finite positive number, got ent_coef={value!r}')
        return initial, learned


class SquashedGaussianActor(nn.Module):
    """``a = tanh(u)``, ``u ~ N(mean(s), diag(exp(log_std(s))**2))``: an MLP gives the mean and
    the log standard deviation (clipped to ``[-20, 2]``, as SB3) of every action dimension.

    Example:
        >>> import torch
        >>> actor = SquashedGaussianActor(3, 1, (16,))
        >>> action, log_prob = actor.sample(torch.zeros(4, 3), torch.Generator().manual_seed(0))
        >>> action.shape, log_prob.shape, bool(action.abs().max() < 1)
        (torch.Size([4, 1]), torch.Size([4]), True)
    """

    LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0

    def __init__(self, state_dim: int, action_dim: int, net_arch: tuple[int, ...],
                 extractor: nn.Module | None = None):
        super().__init__()
        net = mlp(state_dim, net_arch, 2 * action_dim, activation=InplaceReLU)
        # With an extractor, state_dim is its number of features and it reads the states first.
        self.net = net if extractor is None else nn.Sequential(extractor, net)

    def forward(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(state).chunk(2, dim=-1)
        return mean, log_std.clamp(self.LOG_STD_MIN, self.LOG_STD_MAX)

    def sample(self, state: torch.Tensor, generator: torch.Generator | None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparametrised action in ``(-1, 1)`` and its log-probability (the Gaussian's,
        corrected for the squashing)."""
        mean, log_std = self(state)
        pre_tanh = diag_gaussian_sample(mean, log_std, generator)
        return torch.tanh(pre_tanh), squashed_diag_gaussian_log_prob(mean, log_std, pre_tanh)


class SACPolicy(ContinuousPolicy):
    """SAC's actor, critics, entropy coefficient and their optimiser.

    Build it with :func:`make_sac_agent`, which checks the env and pairs the policy with its
    replay trajectory. ``policy.actor`` is the :class:`SquashedGaussianActor`,
    ``policy.critic`` / ``policy.critic_target`` the
    :class:`~stagerl.algorithms.off_policy.networks.Critics`
    and their Polyak-averaged copy, ``policy.log_ent_coef`` the log of the entropy coefficient,
    ``policy.optimiser`` one Adam over all of them, ``policy.env_steps`` the env steps acted,
    ``policy.n_updates`` the gradient steps taken and ``policy.last_update`` the last update's
    losses, entropy coefficient and targets (detached tensors: keeping them does not wait for
    the device). Acting, device moves and the saved state are
    :class:`~stagerl.algorithms.off_policy.base.ContinuousPolicy`'s.

    Args:
        state_space, action_space: the single env's spaces (a flat ``Box`` each, actions
            bounded).
        config: the hyper-parameters.
        seed: seeds the networks' initialisation, the warm-up actions (numpy) and the action
            noise (a ``torch.Generator`` on the device).
        device: where the networks live (``"cpu"``, ``"cuda"``, ``"auto"``).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import SACConfig, make_sac_agent
        >>> env = rl.GymEnv("Pendulum-v1", seed=0)
        >>> agent = make_sac_agent(env, SACConfig(learning_starts=50, net_arch=(16,)), seed=0)
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(60, progress=False))
        >>> agent.policy.env_steps, agent.policy.n_updates     # updates after step 51 on
        (60, 10)
    """

    algorithm, maker, config_class = "SAC", "make_sac_agent", SACConfig

    def __init__(self, state_space: Any, action_space: gymnasium.spaces.Box,
                 config: SACConfig | None = None, seed: int = 0, device: Any = "cpu",
                 features_extractor: Any = None):
        config = SACConfig() if config is None else config
        super().__init__(state_space, action_space, config, seed, device, features_extractor)
        action_dim = int(action_space.shape[0])
        with torch.random.fork_rng(devices=[]):  # the same networks for a seed, on any device
            torch.manual_seed(self.network_seed)
            factory = self.extractor_factory(state_space, features_extractor)
            extractor, state_dim = self.make_extractor(factory, state_space)
            self.actor = SquashedGaussianActor(state_dim, action_dim, config.net_arch, extractor)
            critic_extractor = extractor if config.share_features_extractor else \
                self.make_extractor(factory, state_space)[0]
            self.critic = Critics(state_dim, action_dim, config.net_arch, config.n_critics,
                                  critic_extractor)
        with_onednn_linears(self.actor)  # the same layers, their large products on oneDNN
        with_onednn_linears(self.critic)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        initial, learned = config.entropy_coefficient()
        self.learns_ent_coef = learned
        self.log_ent_coef = nn.Parameter(torch.tensor(math.log(initial)), requires_grad=learned)
        self.target_entropy = config.target_entropy_value(action_dim)
        parameters = list({id(p): p for p in [*self.actor.parameters(),
                                               *self.critic.parameters()]}.values())
        if learned:
            parameters.append(self.log_ent_coef)
        self.to(self.device)
        # One Adam for everything: one fused kernel per step (each loss reaches only its own
        # parameters, so this is three optimisers' steps at once).
        self.optimiser = torch.optim.Adam(parameters, lr=config.learning_rate,
                                          fused=self.device.type in ("cpu", "cuda"))

    @property
    def ent_coef(self) -> float:
        """The entropy coefficient now (reads the device)."""
        return float(self.log_ent_coef.detach().exp())

    def unit_actions(self, states: np.ndarray) -> np.ndarray:
        """Actions in ``[-1, 1]`` for a batch of states: sampled, or ``tanh(mean)`` while
        ``deterministic`` (nothing drawn)."""
        with torch.no_grad():
            mean, log_std = self.actor(self.states_tensor(states))
            if self.deterministic:
                return torch.tanh(mean).cpu().numpy()
            return torch.tanh(diag_gaussian_sample(mean, log_std, self.generator)).cpu().numpy()

    def explore(self, states: np.ndarray) -> np.ndarray:
        """A sample of the squashed Gaussian: SAC explores by its own stochastic policy."""
        return self.unit_actions(states)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "log_ent_coef": self.log_ent_coef.detach().clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        with torch.no_grad():
            self.log_ent_coef.copy_(state["log_ent_coef"])


# ---- learning --------------------------------------------------------------------------------


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_sac(policy: SACPolicy, stage: PostActStage, trajectory):
    learn_from_replay(policy, trajectory, sac_update)


def sac_update(policy: SACPolicy, batch: dict[str, torch.Tensor]) -> None:
    """One gradient step of SAC on a batch: the soft target, the three losses, one step.

    ``batch`` holds tensors on the policy's device: ``state``, ``action`` (as the env received
    it), ``reward``, ``next_state``, ``terminal`` (bool). The critics, the actor and the entropy
    coefficient take their step together, each on its own loss, from the parameters they had
    before it (the simultaneous update of the original SAC implementation; SB3 steps the critics
    before computing the actor's loss).
    """
    state, next_state, reward = batch["state"], batch["next_state"], batch["reward"]
    action = policy.scale.to_unit(batch["action"])  # the critics read unit actions
    # Terminated: nothing beyond. Truncated by a time limit: terminal is False, so bootstrapped.
    not_terminal = ~batch["terminal"]
    ent_coef = policy.log_ent_coef.detach().exp()

    # Soft target: r + gamma * (min_i Q'_i(s', a') - ent_coef * log pi(a'|s')),  a' ~ pi(.|s')
    with torch.no_grad():
        next_action, next_log_prob = policy.actor.sample(next_state, policy.generator)
        next_q = policy.critic_target(next_state, next_action).min(dim=0).values
        target_q = reward + policy.config.gamma * not_terminal * (next_q - ent_coef * next_log_prob)

    # Critics: each regresses on the target (SB3's 0.5 * sum of the critics' mean squared errors)
    q = policy.critic(state, action)  # (n_critics, batch)
    critic_loss = 0.5 * (q - target_q).pow(2).mean(dim=1).sum()

    # Actor: ent_coef * log pi(a|s) - min_i Q_i(s, a), a ~ pi(.|s) reparametrised; the frozen
    # critics pass the gradient on to the action without taking one themselves.
    new_action, log_prob = policy.actor.sample(state, policy.generator)
    with frozen(policy.critic):
        q_new = policy.critic(state, new_action).min(dim=0).values
    actor_loss = (ent_coef * log_prob - q_new).mean()

    loss = critic_loss + actor_loss
    policy.last_update = {"target_q": target_q, "critic_loss": critic_loss.detach(),
                          "actor_loss": actor_loss.detach(), "ent_coef": ent_coef}
    if policy.learns_ent_coef:
        # Entropy coefficient: grows while the policy's entropy (-log pi) is below the target.
        ent_coef_loss = -(policy.log_ent_coef * (log_prob.detach() + policy.target_entropy)).mean()
        loss = loss + ent_coef_loss
        policy.last_update["ent_coef_loss"] = ent_coef_loss.detach()

    policy.optimiser.zero_grad(set_to_none=True)
    loss.backward()  # each term reaches only its own parameters
    adam_step(policy.optimiser)  # optimiser.step(), its fused kernel called directly
    polyak_update(policy.critic_target, policy.critic, policy.config.tau)
    policy.n_updates += 1


# ---- building --------------------------------------------------------------------------------


def make_sac_agent(env: Any, config: SACConfig | None = None, seed: int = 0,
                   device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An ``Agent`` with a :class:`SACPolicy` for ``env`` (single or vector) and its replay
    trajectory; the env and the settings are checked first. ``features_extractor``: a factory
    of the observation space (see :mod:`stagerl.algorithms.extractors`) in place of the
    built-in ``config`` names.

    Raises ``TypeError`` for a discrete action space (use DQN or PPO) and ``ValueError`` for an
    unbounded ``Box`` and for ``device="cuda"`` on a machine without CUDA.

    Example:
        >>> import stagerl as rl
        >>> agent = make_sac_agent(rl.GymEnv("Pendulum-v1"), SACConfig(net_arch=(16,)),
        ...                        device="cpu")
        >>> type(agent.policy).__name__, agent.trajectory.controller.threshold
        ('SACPolicy', 101)
    """
    config = SACConfig() if config is None else config
    return make_continuous_agent(SACPolicy, env, config, seed, device, features_extractor)
