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
import dataclasses
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from stagerl.algorithms.continuous import (
    BoxScale,
    Critics,
    InplaceReLU,
    check_continuous_env,
    check_int,
    check_net_arch,
    check_number,
    denormals_flushed,
    frozen,
    generator_on,
    make_replay_trajectory,
    polyak_update,
)
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan
from stagerl.core.policy import Policy
from stagerl.core.stages import PostActStage
from stagerl.policies.agent import Agent
from stagerl.utils.devices import resolve_device
from stagerl.utils.networks import mlp

__all__ = ["TD3Config", "TD3Policy", "td3_update", "make_td3_agent"]


@dataclass
class TD3Config:
    """Hyper-parameters of TD3 (Stable-Baselines3's names and defaults; DDPG:
    :meth:`TD3Config.ddpg`).

    Steps are env steps (transitions; a vector env takes ``num_envs`` per act). Noise scales are
    in unit actions (``[-1, 1]``, before rescaling to the action space's bounds).

    Attributes:
        learning_rate: Adam's step size for the actor and the critics.
        buffer_size: transitions the replay ring holds (split over a vector env's sub-envs).
        learning_starts: env steps of uniformly random actions before learning starts.
        batch_size: transitions per gradient step.
        tau: the Polyak coefficient of the target networks' updates.
        gamma: the discount.
        train_freq: env steps between updates.
        gradient_steps: gradient steps per update.
        policy_delay: critic steps per actor step (and per target update).
        target_policy_noise: standard deviation of the noise added to the target action.
        target_noise_clip: that noise is clipped to ``[-target_noise_clip, target_noise_clip]``.
        action_noise: standard deviation of the Gaussian exploration noise (SB3's
            ``NormalActionNoise`` sigma, RL-Zoo's ``noise_std``); 0 explores not at all.
        net_arch: hidden sizes of the actor's and each critic's MLP.
        n_critics: critics whose minimum bootstraps the target (1 for DDPG).

    Example:
        >>> TD3Config().net_arch, TD3Config.ddpg().n_critics
        ((400, 300), 1)
        >>> TD3Config(policy_delay=0)
        Traceback (most recent call last):
        ...
        ValueError: TD3Config: policy_delay must be >= 1, got policy_delay=0
    """

    learning_rate: float = 1e-3
    buffer_size: int = 1_000_000
    learning_starts: int = 100
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    policy_delay: int = 2
    target_policy_noise: float = 0.2
    target_noise_clip: float = 0.5
    action_noise: float = 0.1
    net_arch: tuple[int, ...] = (400, 300)
    n_critics: int = 2

    def __post_init__(self) -> None:
        owner = "TD3Config"
        for name in ("buffer_size", "batch_size", "train_freq", "gradient_steps",
                     "policy_delay", "n_critics"):
            check_int(owner, name, getattr(self, name), 1)
        check_int(owner, "learning_starts", self.learning_starts, 0)
        check_number(owner, "learning_rate", self.learning_rate, 0.0, low_open=True)
        check_number(owner, "tau", self.tau, 0.0, 1.0, low_open=True)
        check_number(owner, "gamma", self.gamma, 0.0, 1.0)
        for name in ("target_policy_noise", "target_noise_clip", "action_noise"):
            check_number(owner, name, getattr(self, name), 0.0)
        self.net_arch = check_net_arch(owner, self.net_arch)

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


class TD3Policy(Policy):
    """TD3's deterministic actor, critics, their target copies and one Adam over both.

    Build it with :func:`make_td3_agent`. ``policy.actor`` maps states to unit actions
    (``tanh`` output), ``policy.critic`` holds the
    :class:`~stagerl.algorithms.continuous.Critics`, ``policy.actor_target`` /
    ``policy.critic_target`` their Polyak-averaged copies, ``policy.env_steps`` the env steps
    acted, ``policy.n_updates`` the critic steps taken and ``policy.last_update`` the last
    update's losses and targets (detached tensors).

    Args:
        state_space, action_space: the single env's spaces (a flat ``Box`` each, actions
            bounded).
        config: the hyper-parameters.
        seed: seeds the networks' initialisation, the exploration noise and warm-up actions
            (numpy) and the target smoothing noise (a ``torch.Generator`` on the device).
        device: where the networks live (``"cpu"``, ``"cuda"``, ``"auto"``).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.td3 import TD3Config, make_td3_agent
        >>> env = rl.GymEnv("Pendulum-v1", seed=0)
        >>> agent = make_td3_agent(env, TD3Config(learning_starts=50, net_arch=(16,)), seed=0)
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(60, progress=False))
        >>> agent.policy.n_updates, agent.policy.optimiser.state_dict()["state"][0]["step"]
        (10, tensor(5.))
    """

    def __init__(self, state_space: gymnasium.spaces.Box, action_space: gymnasium.spaces.Box,
                 config: TD3Config | None = None, seed: int = 0, device: Any = "cpu"):
        self.config = config = TD3Config() if config is None else config
        self.device = resolve_device(device)
        init_seed, numpy_seed, torch_seed = np.random.SeedSequence(seed).generate_state(3)
        state_dim, action_dim = int(state_space.shape[0]), int(action_space.shape[0])
        with torch.random.fork_rng(devices=[]):  # the same networks for a seed, on any device
            torch.manual_seed(int(init_seed))
            self.actor = nn.Sequential(
                mlp(state_dim, config.net_arch, action_dim, activation=InplaceReLU), nn.Tanh())
            self.critic = Critics(state_dim, action_dim, config.net_arch, config.n_critics)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.scale = BoxScale(action_space)
        self._centre = np.asarray((action_space.high + action_space.low) / 2, np.float32)
        self._half_range = np.asarray((action_space.high - action_space.low) / 2, np.float32)
        self.state_shape, self.action_shape = tuple(state_space.shape), tuple(action_space.shape)
        self.to(self.device)
        # One Adam for both: one fused kernel per step. Each loss reaches only its own
        # parameters, and the actor's (without a gradient between its delayed steps) are skipped.
        self.optimiser = torch.optim.Adam(
            [*self.actor.parameters(), *self.critic.parameters()], lr=config.learning_rate,
            fused=self.device.type in ("cpu", "cuda"))
        self.rng = np.random.default_rng(int(numpy_seed))
        self.generator = generator_on(self.device, int(torch_seed))
        self.env_steps = 0
        self.n_updates = 0
        self.last_update: dict[str, torch.Tensor] = {}

    def unit_actions(self, states: np.ndarray) -> np.ndarray:
        """``mu(s)`` in ``[-1, 1]`` for a batch of states (no noise)."""
        with torch.no_grad():
            x = torch.as_tensor(states, dtype=torch.float32, device=self.device)
            return self.actor(x).cpu().numpy()

    def to_env(self, unit_actions: np.ndarray) -> np.ndarray:
        """Unit actions rescaled to the action space's bounds."""
        return self._centre + self._half_range * unit_actions

    def to(self, device: Any) -> TD3Policy:
        device = resolve_device(device)
        super().to(device)  # networks, buffers, Adam's moments
        optimiser = getattr(self, "optimiser", None)
        if optimiser is not None and optimiser.defaults.get("fused"):
            for state in optimiser.state.values():  # fused Adam keeps its step beside the weights
                if isinstance(state.get("step"), torch.Tensor):
                    state["step"] = state["step"].to(device)
        generator = getattr(self, "generator", None)
        if generator is not None and generator.device != device:
            seed = torch.randint(2**62, (), generator=generator, device=generator.device)
            self.generator = generator_on(device, int(seed))
        self.device = device
        return self

    def validate(self, env: Any) -> None:
        action_space, state_space = check_continuous_env(env, "TD3")
        if tuple(action_space.shape) != self.action_shape or \
                tuple(state_space.shape) != self.state_shape:
            raise ValueError(
                f"this TD3 policy acts on states {self.state_shape} with actions "
                f"{self.action_shape}, the env has {state_space.shape} and {action_space.shape}; "
                "build the policy for this env with make_td3_agent(env, ...)")

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "actor_target": self.actor_target.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            "optimiser": self.optimiser.state_dict(),
            "env_steps": self.env_steps,
            "n_updates": self.n_updates,
            "rng": self.rng.bit_generator.state,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in ("actor", "critic", "actor_target", "critic_target", "optimiser"):
            getattr(self, name).load_state_dict(state[name])
        self.env_steps = int(state["env_steps"])
        self.n_updates = int(state["n_updates"])
        self.rng.bit_generator.state = state["rng"]
        self.generator.set_state(state["generator"])

    def __repr__(self) -> str:
        changed = {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)
                   if getattr(self.config, f.name) != f.default}
        settings = "".join(f"{k}={v!r}, " for k, v in changed.items())
        return f"TD3Policy({settings}device={str(self.device)!r})"


# ---- acting ----------------------------------------------------------------------------------


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_td3(policy: TD3Policy, env):
    # One row per sub-env on a vector env, one state otherwise: one forward pass either way.
    states = np.asarray(env.state, dtype=np.float32)
    single = states.ndim == 1
    if single:
        states = states[None]
    if policy.deterministic:  # evaluation: mu(s), nothing drawn, no step counted
        unit = policy.unit_actions(states)
    else:
        shape = (len(states), *policy.action_shape)
        if policy.env_steps < policy.config.learning_starts:  # warm-up, as SB3: uniform
            unit = policy.rng.uniform(-1.0, 1.0, shape)
        else:
            unit = policy.unit_actions(states)
            if policy.config.action_noise > 0:
                noise = policy.rng.normal(0.0, policy.config.action_noise, shape)
                unit = np.clip(unit + noise, -1.0, 1.0)
        policy.env_steps += len(states)
    actions = policy.to_env(unit).astype(np.float32, copy=False)
    return actions[0] if single else actions


# ---- learning --------------------------------------------------------------------------------


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_td3(policy: TD3Policy, stage: PostActStage, trajectory):
    for batches in trajectory:  # the controller allows gradient_steps batches per train_freq
        with denormals_flushed(policy.device):
            for batch in batches:
                td3_update(policy, {k: torch.as_tensor(v, device=policy.device)
                                    for k, v in batch.items()})


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
    policy.optimiser.step()  # the actor's parameters without a gradient are left alone
    if delayed:
        polyak_update(policy.critic_target, policy.critic, config.tau)
        polyak_update(policy.actor_target, policy.actor, config.tau)


# ---- building --------------------------------------------------------------------------------


def make_td3_agent(env: Any, config: TD3Config | None = None, seed: int = 0,
                   device: Any = "auto") -> Agent:
    """An ``Agent`` with a :class:`TD3Policy` for ``env`` (single or vector) and its replay
    trajectory; the env and the settings are checked first. DDPG:
    ``make_td3_agent(env, TD3Config.ddpg())``.

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
    if not isinstance(config, TD3Config):
        raise TypeError(f"make_td3_agent needs a TD3Config, got {type(config).__name__}")
    check_int("make_td3_agent", "seed", seed, 0)
    action_space, state_space = check_continuous_env(env, "TD3")
    device = resolve_device(device)
    policy_seed, sampler_seed = np.random.SeedSequence(seed).generate_state(2)
    policy = TD3Policy(state_space, action_space, config, int(policy_seed), device)
    trajectory = make_replay_trajectory(
        state_space, action_space, config.buffer_size, config.batch_size, config.learning_starts,
        config.train_freq, config.gradient_steps, rng=int(sampler_seed), device=device)
    return Agent(policy, trajectory)
