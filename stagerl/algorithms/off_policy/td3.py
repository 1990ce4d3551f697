"""TD3 (twin delayed DDPG) for continuous actions, and DDPG as one of its settings.

TD3 learns a deterministic actor ``mu(s)`` in ``[-1, 1]`` and critics ``Q_i(s, a)`` with three
fixes of DDPG's overestimation: the target takes the minimum of twin critics (clipped double Q),
smooths the target action with clipped noise (target policy smoothing), and the actor and the
target networks move every ``policy_delay`` critic steps (delayed updates). DDPG is the same
update with one critic, no smoothing and no delay: ``TD3Config.ddpg()``.

The pieces, in the order a step meets them:

* ``plan``: ``mu(s)`` plus Gaussian exploration noise (``action_noise``, in unit actions),
  clipped to ``[-1, 1]`` and rescaled to the action space's bounds; uniform random actions for
  the first ``learning_starts`` env steps; ``mu(s)`` and no draw while ``policy.deterministic``.
* The Agent records the step (``terminal = env.is_terminated``: a time limit's last transition
  stays bootstrapped).
* ``optimise`` at PostAct: whenever the trajectory's controller allows, :func:`td3_update` on
  each batch.

Hyper-parameters carry Stable-Baselines3's names and defaults; ``docs/algorithms/sac_td3.md``
explains the choices. Build an agent with :func:`make_td3_agent`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from stagerl.algorithms._checks import check_ints, check_numbers
from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.off_policy.base import ContinuousPolicy, ReplayConfig, make_continuous_agent
from stagerl.algorithms.off_policy.networks import Critics, InplaceReLU, frozen, polyak_update
from stagerl.algorithms.off_policy.replay import learn_from_replay
from stagerl.algorithms.onednn import with_onednn_linears
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise
from stagerl.core.stages import PostActStage
from stagerl.policies.agent import Agent
from stagerl.utils.networks import mlp

__all__ = ["TD3Config", "TD3Policy", "td3_update", "make_td3_agent"]


@dataclass
class TD3Config(ReplayConfig):
    """Hyper-parameters of TD3 (Stable-Baselines3's names and defaults; DDPG:
    :meth:`TD3Config.ddpg`): those of :class:`~stagerl.algorithms.off_policy.base.ReplayConfig`
    (``n_critics``: 1 for DDPG), and the ones below. Noise scales are in unit actions
    (``[-1, 1]``, before rescaling to the action space's bounds).

    Attributes:
        policy_delay: critic steps per actor step (and per target update).
        target_policy_noise: standard deviation of the noise added to the target action.
        target_noise_clip: that noise is clipped to ``[-target_noise_clip, target_noise_clip]``.
        action_noise: standard deviation of the Gaussian exploration noise (SB3's
            ``NormalActionNoise`` sigma, RL-Zoo's ``noise_std``); 0 explores not at all.

    Example:
        >>> TD3Config().net_arch, TD3Config.ddpg().n_critics
        ((400, 300), 1)
        >>> TD3Config(policy_delay=0)
        Traceback (most recent call last):
        ...
        ValueError: TD3Config: policy_delay must be an int >= 1, got policy_delay=0
    """

    learning_rate: float = 1e-3
    net_arch: tuple[int, ...] = (400, 300)
    policy_delay: int = 2
    target_policy_noise: float = 0.2
    target_noise_clip: float = 0.5
    action_noise: float = 0.1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "policy_delay")
        check_numbers(self, "target_policy_noise", "target_noise_clip", "action_noise",
                      at_least=0)

    @classmethod
    def ddpg(cls, **overrides: Any) -> TD3Config:
        """DDPG's setting: one critic, no target smoothing, the actor stepped with the critic
        (SB3's DDPG); ``overrides`` change any other field.

        Example:
            >>> config = TD3Config.ddpg(gamma=0.98)
            >>> config.n_critics, config.policy_delay, config.target_policy_noise, config.gamma
            (1, 1, 0.0, 0.98)
        """
        settings = {"n_critics": 1, "policy_delay": 1, "target_policy_noise": 0.0,
                    "target_noise_clip": 0.0, **overrides}
        return cls(**settings)


class TD3Policy(ContinuousPolicy):
    """TD3's deterministic actor, critics, their target copies and one Adam over both.

    Build it with :func:`make_td3_agent`. ``policy.actor`` maps states to unit actions
    (``tanh`` output), ``policy.critic`` holds the
    :class:`~stagerl.algorithms.off_policy.networks.Critics`, ``policy.actor_target`` /
    ``policy.critic_target`` their Polyak-averaged copies, ``policy.env_steps`` the env steps
    acted, ``policy.n_updates`` the critic steps taken and ``policy.last_update`` the last
    update's losses and targets (detached tensors). Acting, device moves and the saved state
    are :class:`~stagerl.algorithms.off_policy.base.ContinuousPolicy`'s.

    Args:
        state_space, action_space: the single env's spaces (a flat ``Box`` each, actions
            bounded).
        config: the hyper-parameters.
        seed: seeds the networks' initialisation, the exploration noise and warm-up actions
            (numpy) and the target smoothing noise (a ``torch.Generator`` on the device).
        device: where the networks live (``"cpu"``, ``"cuda"``, ``"auto"``).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import TD3Config, make_td3_agent
        >>> env = rl.GymEnv("Pendulum-v1", seed=0)
        >>> agent = make_td3_agent(env, TD3Config(learning_starts=50, net_arch=(16,)), seed=0)
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(60, progress=False))
        >>> agent.policy.n_updates, agent.policy.optimiser.state_dict()["state"][0]["step"]
        (10, tensor(5.))
    """

    algorithm, maker, config_class = "TD3", "make_td3_agent", TD3Config
    saved_modules = ("actor", "critic", "actor_target", "critic_target")

    def __init__(self, state_space: Any, action_space: gymnasium.spaces.Box,
                 config: TD3Config | None = None, seed: int = 0, device: Any = "cpu",
                 features_extractor: Any = None):
        config = TD3Config() if config is None else config
        super().__init__(state_space, action_space, config, seed, device, features_extractor)
        action_dim = int(action_space.shape[0])
        with torch.random.fork_rng(devices=[]):  # the same networks for a seed, on any device
            torch.manual_seed(self.network_seed)
            factory = self.extractor_factory(state_space, features_extractor)
            extractor, state_dim = self.make_extractor(factory, state_space)
            body = [] if extractor is None else [extractor]
            self.actor = nn.Sequential(
                *body, mlp(state_dim, config.net_arch, action_dim, activation=InplaceReLU),
                nn.Tanh())
            critic_extractor = extractor if config.share_features_extractor else \
                self.make_extractor(factory, state_space)[0]
            self.critic = Critics(state_dim, action_dim, config.net_arch, config.n_critics,
                                  critic_extractor)
        with_onednn_linears(self.actor)  # the same layers, their large products on oneDNN
        with_onednn_linears(self.critic)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.to(self.device)
        # One Adam for both: one fused kernel per step. Each loss reaches only its own
        # parameters, and the actor's (without a gradient between its delayed steps) are skipped.
        parameters = {id(p): p for p in [*self.actor.parameters(), *self.critic.parameters()]}
        self.optimiser = torch.optim.Adam(  # a shared extractor's parameters once
            list(parameters.values()), lr=config.learning_rate,
            fused=self.device.type in ("cpu", "cuda"))

    def unit_actions(self, states: np.ndarray) -> np.ndarray:
        """``mu(s)`` in ``[-1, 1]`` for a batch of states (no noise)."""
        with torch.no_grad():
            return self.actor(self.states_tensor(states)).cpu().numpy()

    def explore(self, states: np.ndarray) -> np.ndarray:
        """``mu(s)`` plus Gaussian noise of std ``action_noise`` (numpy), clipped to
        ``[-1, 1]``."""
        unit = self.unit_actions(states)
        if self.config.action_noise > 0:
            noise = self.rng.normal(0.0, self.config.action_noise, unit.shape)
            unit = np.clip(unit + noise, -1.0, 1.0)
        return unit


# ---- learning --------------------------------------------------------------------------------


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_td3(policy: TD3Policy, stage: PostActStage, trajectory):
    learn_from_replay(policy, trajectory, td3_update)


def td3_update(policy: TD3Policy, batch: dict[str, torch.Tensor]) -> None:
    """One critic step of TD3 on a batch, with the actor's step and the targets' Polyak step
    every ``policy_delay``-th time.

    ``batch`` holds tensors on the policy's device: ``state``, ``action`` (as the env received
    it), ``reward``, ``next_state``, ``terminal`` (bool). On a delayed step the actor and the
    critics take their step together, each on its own loss, from the parameters they had before
    it (SB3 steps the critics before computing the actor's loss).
    """
    config = policy.config
    state, next_state, reward = batch["state"], batch["next_state"], batch["reward"]
    action = policy.scale.to_unit(batch["action"])  # the critics read unit actions
    # Terminated: nothing beyond. Truncated by a time limit: terminal is False, so bootstrapped.
    not_terminal = ~batch["terminal"]
    policy.n_updates += 1

    # Target: r + gamma * min_i Q'_i(s', clip(mu'(s') + clip(noise, -c, c), -1, 1))
    with torch.no_grad():
        next_action = policy.actor_target(next_state)
        if config.target_policy_noise > 0 and config.target_noise_clip > 0:  # smoothing
            noise = torch.randn(next_action.shape, generator=policy.generator,
                                device=next_action.device) * config.target_policy_noise
            noise = noise.clamp(-config.target_noise_clip, config.target_noise_clip)
            next_action = (next_action + noise).clamp(-1.0, 1.0)
        next_q = policy.critic_target(next_state, next_action).min(dim=0).values
        target_q = reward + config.gamma * not_terminal * next_q

    # Critics: each regresses on the target (SB3's sum of the critics' mean squared errors)
    q = policy.critic(state, action)  # (n_critics, batch)
    loss = critic_loss = (q - target_q).pow(2).mean(dim=1).sum()
    policy.last_update = {"target_q": target_q, "critic_loss": critic_loss.detach()}

    # Actor, every policy_delay-th step: -Q_1(s, mu(s)); the frozen critic passes the gradient
    # on to the action without taking one itself.
    delayed = policy.n_updates % config.policy_delay == 0
    if delayed:
        with frozen(policy.critic):
            actor_loss = -policy.critic.first(state, policy.actor(state)).mean()
        loss = loss + actor_loss
        policy.last_update["actor_loss"] = actor_loss.detach()

    policy.optimiser.zero_grad(set_to_none=True)
    loss.backward()  # each term reaches only its own parameters
    adam_step(policy.optimiser)  # the actor's parameters without a gradient are left alone
    if delayed:
        polyak_update(policy.critic_target, policy.critic, config.tau)
        polyak_update(policy.actor_target, policy.actor, config.tau)


# ---- building --------------------------------------------------------------------------------


def make_td3_agent(env: Any, config: TD3Config | None = None, seed: int = 0,
                   device: Any = "auto", features_extractor: Any = None) -> Agent:
    """An ``Agent`` with a :class:`TD3Policy` for ``env`` (single or vector) and its replay
    trajectory; the env and the settings are checked first. DDPG:
    ``make_td3_agent(env, TD3Config.ddpg())``. ``features_extractor``: a factory of the
    observation space in place of the built-in ``config`` names.

    Raises ``TypeError`` for a discrete action space (use DQN or PPO) and ``ValueError`` for an
    unbounded ``Box`` and for ``device="cuda"`` on a machine without CUDA.

    Example:
        >>> import stagerl as rl
        >>> agent = make_td3_agent(rl.GymEnv("Pendulum-v1"), TD3Config.ddpg(net_arch=(16,)),
        ...                        device="cpu")
        >>> agent.policy.critic(torch.zeros(2, 3), torch.zeros(2, 1)).shape   # one critic
        torch.Size([1, 2])
    """
    config = TD3Config() if config is None else config
    return make_continuous_agent(TD3Policy, env, config, seed, device, features_extractor)
