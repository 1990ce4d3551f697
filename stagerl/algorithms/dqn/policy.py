"""DQN and its extensions as one Policy subtype: target network, double, dueling, n-step,
prioritized replay, distributional (C51) and Rainbow, their combination.

The pieces, in the order a step meets them:

* ``plan``: ε-greedy over the network's action values (a numpy copy of a small MLP's weights
  acts in ~8 us instead of torch's ~35 us per call; no forward at all when ε explores); in an
  env with legal-action masks (``masked``), among the legal actions only, exploring as well.
* The Agent records the step in the trajectory (``terminal = env.is_terminated``: a truncated
  episode's last transition stays bootstrapped).
* ``optimise`` at PostAct: the target network follows the online one every
  ``target_update_interval`` env steps; then, whenever the trajectory's controller allows (every
  ``train_freq`` transitions once learning has started), one *burst* of ``gradient_steps``
  gradient steps, each :func:`dqn_update`: the TD target, the loss and the step.

Hyper-parameters carry Stable-Baselines3's names and meaning (``docs/algorithms/dqn.md`` maps
them to the papers). Build an agent with :func:`~stagerl.algorithms.dqn.agent.make_dqn_agent`;
the learning is in :mod:`stagerl.algorithms.dqn.update`.

On Ray workers (``stagerl.distributed``) a DQN policy sends its online network only, and a
worker's ε follows the env steps of all workers (the weights functions at the end).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from stagerl.algorithms._checks import changed_settings
from stagerl.algorithms.dqn.config import DQNConfig
from stagerl.algorithms.dqn.networks import NumpyQNetwork, QNetwork
from stagerl.algorithms.schedules import scheduled
from stagerl.algorithms.torch_state import move_fused_adam_steps
from stagerl.core.actions import _compute_actions, as_batch, one_or_batch
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan
from stagerl.core.env import VectorEnv
from stagerl.core.fallbacks import refuse_observations
from stagerl.core.policy import Policy
from stagerl.core.stages import PreEpisodeStage
from stagerl.envs.frame_stack import FrameStacker
from stagerl.policies.approximators import Approximator, TargetNetwork
from stagerl.policies.explorers import EpsilonGreedyExplorer
from stagerl.policies.weights import get_weights, set_env_steps, set_weights, weights_on_cpu
from stagerl.utils.devices import resolve_device
from trajectories.nested import tree_map

__all__ = ["DQNPolicy", "TOTAL_STEPS_MISSING"]

TOTAL_STEPS_MISSING = ("DQNConfig.total_steps is None; set it to the run's length in env steps "
                       "(exploration_fraction and the beta0 annealing are fractions of it)")


class DQNPolicy(Policy):
    """ε-greedy acting on a Q-network that learns from replayed bursts of batches.

    Build it with :func:`~stagerl.algorithms.dqn.agent.make_dqn_agent`, which validates the env
    and the settings and pairs the policy with its trajectory. ``policy.network`` is the online
    :class:`QNetwork`, ``policy.target`` its target copy (``None`` without a target network),
    ``policy.q`` the :class:`~stagerl.TargetNetwork` (or :class:`~stagerl.Approximator`) holding
    them and the Adam optimiser, ``policy.explorer`` the ε schedule and its rng (an
    ``EpsilonGreedyExplorer``, stepped once per act, which draws every ε-greedy action),
    ``policy.env_steps`` the env steps acted so far.

    Args:
        network: the online Q-network.
        config: the hyper-parameters (``total_steps`` must be set).
        action_start: the first action's label (a ``Discrete(n, start)`` space).
        num_envs: sub-envs acting at once (ε falls per env step, the explorer steps per act).
        rng: an int seed or ``np.random.Generator`` for exploration.
        device: where the networks learn (``"cpu"``, ``"cuda"``, ``"auto"``).
        masked: act among ``env.legal_actions_mask`` (a game's player, an env with masks);
            ``make_dqn_agent`` sets it when the env has masks, and gives the trajectory a
            ``legal_actions_mask`` trace, so the TD target maxes over the legal next actions.
        observation_shape: one observation's shape (``compute_actions`` needs it to tell one
            observation from a batch; ``make_dqn_agent`` gives it).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
        >>> config = DQNConfig(total_steps=600, learning_starts=200, train_freq=100,
        ...                    gradient_steps=5, net_arch=(16,))
        >>> agent = make_dqn_agent(rl.GymEnv("CartPole-v1", seed=0), config, seed=0)
        >>> _ = rl.run(agent, rl.GymEnv("CartPole-v1", seed=0),
        ...            rl.StopAfterNSteps(600, progress=False))
        >>> adam = agent.policy.q.optimiser.state_dict()["state"][0]
        >>> agent.policy.env_steps, int(adam["step"])   # 4 bursts of 5 gradient steps
        (600, 20)
    """

    def __init__(self, network: QNetwork, config: DQNConfig, action_start: int = 0,
                 num_envs: int = 1, rng: Any = None, device: Any = "cpu", masked: bool = False,
                 observation_shape: tuple | None = None):
        if config.total_steps is None:
            raise ValueError(TOTAL_STEPS_MISSING)
        self.config = config
        self.masked = bool(masked)
        self.n_actions = network.n_actions
        self.action_start = int(action_start)
        # One observation's shape, for compute_actions (None: not known).
        self.observation_shape = None if observation_shape is None else tuple(observation_shape)
        self.device = resolve_device(device)
        fused = self.device.type in ("cpu", "cuda")  # one kernel for Adam's whole step
        optimiser = torch.optim.Adam(network.parameters(), lr=config.learning_rate,
                                     eps=config.adam_eps, fused=fused)
        online = Approximator(network, optimiser)  # clipped by dqn_update, see there
        self._parameters = list(network.parameters())  # resolved once: clipped every step
        self.loss: torch.Tensor | None = None
        # The target is updated on env steps (below), never by TargetNetwork's own counter.
        self.q = (TargetNetwork(online, sync_freq=2**62, rho=1.0 - config.tau)
                  if config.target_network else online)
        decay = math.ceil(config.exploration_fraction * config.total_steps / num_envs)
        # Float action values essentially never tie: the first maximum saves a draw per act.
        self.explorer = EpsilonGreedyExplorer(
            config.exploration_final_eps, epsilon_init=config.exploration_initial_eps,
            decay_steps=decay, break_ties=False, rng=rng)
        self.env_steps = 0
        self.target_updates = 0  # env_steps // target_update_interval at the last update
        self.changed_since_sync = False  # a gradient step since the last target update
        self.acting_network = NumpyQNetwork.of(network)  # None: act through torch
        self._acting_stale = False
        # The stacks acted on (training, evaluation): the sampler's windows of the same frames.
        self._frames = {False: FrameStacker(config.stack_size),
                        True: FrameStacker(config.stack_size)}
        self.to(self.device)

    @property
    def network(self) -> QNetwork:
        """The online Q-network."""
        return self.q.model

    @property
    def target(self) -> QNetwork | None:
        """The target Q-network (``None`` without one)."""
        return self.q.target if isinstance(self.q, TargetNetwork) else None

    @property
    def beta(self) -> float:
        """The importance-weight exponent now: ``beta0`` annealed linearly to 1."""
        c = self.config
        return c.beta0 + (1.0 - c.beta0) * min(1.0, self.env_steps / c.total_steps)

    @property
    def learning_rate(self) -> float:
        """Adam's step size for the next burst: ``learning_rate`` under its schedule (it
        follows ``env_steps``, which checkpoints keep, so a resumed run steps alike)."""
        c = self.config
        return scheduled(c.learning_rate, c.learning_rate_schedule,
                         1.0 - self.env_steps / c.total_steps)

    def to(self, device: Any) -> DQNPolicy:
        device = resolve_device(device)
        self.q.to(device)  # the online and target networks and Adam's moments
        move_fused_adam_steps(self.q.optimiser, device)
        self.device = device
        self._acting_stale = True
        return self

    def q_values(self, state: Any, single: bool = True) -> np.ndarray:
        """Action values (numpy) of one observation, or of a batch with ``single=False``."""
        if self.acting_network is not None:
            if self._acting_stale:
                self.acting_network.refresh()
                self._acting_stale = False
            return self.acting_network.q_values(state, single)
        x = tree_map(lambda leaf: torch.as_tensor(np.asarray(leaf), device=self.device), state)
        if single:
            x = tree_map(lambda leaf: leaf[None], x)
        with torch.no_grad():
            values = self.network.q_values(x).cpu().numpy()
        return values[0] if single else values

    def act(self, state: Any, n: int | None = None, mask: Any = None) -> Any:
        """ε-greedy actions (one, or ``n`` for the rows of a vector env's ``state``): uniform
        before ``learning_starts`` (as SB3), then ε from the explorer's schedule, which steps
        once per act; the network's values are computed only when some action is greedy.
        ``mask``: the legal actions (per row for ``n``); both choices keep to them."""
        epsilon = 1.0 if self.env_steps < self.config.learning_starts else None
        self.env_steps += 1 if n is None else n
        action = self.explorer.draw(self.n_actions, lambda: self.q_values(state, n is None), n,
                                    epsilon, mask)
        return self.action_start + action

    def greedy(self, state: Any, n: int | None = None, mask: Any = None) -> Any:
        """The greedy actions (evaluation), among the legal ones of ``mask`` when given:
        nothing drawn, no step counted."""
        values = self.q_values(state, single=n is None)
        if mask is not None:
            values = np.where(mask, values, -np.inf)
        if n is None:
            return self.action_start + int(np.argmax(values))
        return self.action_start + np.argmax(values, axis=1)

    def stacked(self, env: Any) -> np.ndarray:
        """The last ``stack_size`` frames of the env (of each sub-env): what the policy acts on,
        the stacks the replay sampler gives for the same rows."""
        return self._frames[bool(self.deterministic)].observe(env)

    def update_target_if_due(self) -> None:
        due = self.env_steps // self.config.target_update_interval
        if due > self.target_updates and self.target is not None and (
                self.changed_since_sync or self.config.tau < 1.0):  # no copy of the same weights
            self.q.sync()  # tau = 1: a copy; tau < 1: target <- (1 - tau) target + tau online
            self.changed_since_sync = False
        self.target_updates = due

    def state_dict(self) -> dict[str, Any]:
        return {"q": self.q.state_dict(), "explorer": self.explorer.state_dict(),
                "env_steps": self.env_steps, "target_updates": self.target_updates,
                "changed_since_sync": self.changed_since_sync}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.q.load_state_dict(state["q"])
        self.explorer.load_state_dict(state["explorer"])
        self.env_steps = int(state["env_steps"])
        self.target_updates = int(state["target_updates"])
        self.changed_since_sync = bool(state["changed_since_sync"])
        self._acting_stale = True
        for frames in self._frames.values():
            frames.start()

    def __repr__(self) -> str:
        settings = changed_settings(self.config)
        return f"DQNPolicy({settings + ', ' if settings else ''}device={str(self.device)!r})"


# ---- acting ----------------------------------------------------------------------------------


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_dqn(policy: DQNPolicy, env):
    state = env.state
    if policy.config.stack_size > 1:
        state = policy.stacked(env)
    mask = env.legal_actions_mask if policy.masked else None
    if policy.deterministic:  # evaluation: greedy, nothing drawn, no step counted
        return policy.greedy(state, mask=mask)
    return policy.act(state, mask=mask)


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_dqn_vector(policy: DQNPolicy, env: VectorEnv):
    state = env.state  # one row per sub-env: one forward pass for all, unless all explore
    if policy.config.stack_size > 1:
        state = policy.stacked(env)
    mask = env.legal_actions_mask if policy.masked else None
    if policy.deterministic:
        return policy.greedy(state, env.num_envs, mask)
    return policy.act(state, env.num_envs, mask)


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _start_episode(policy: DQNPolicy, stage: PreEpisodeStage, *trajectory):
    # Inside an Agent the loop calls optimise(policy, stage, trajectory), alone (evaluation)
    # optimise(policy, stage): either way a new episode's frames start afresh.
    policy._frames[bool(policy.deterministic)].start()


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_dqn(policy: DQNPolicy, observations, state, deterministic):
    # Stacked frames are the policy's memory here: the state is each observation's stack of
    # the last stack_size frames (None: an episode's first frame fills it).
    if policy.observation_shape is None:
        raise ValueError("this DQNPolicy was built without observation_shape, so one "
                         "observation cannot be told from a batch; build it with "
                         "make_dqn_agent(env, ...) or DQNPolicy(..., observation_shape=...)")
    batch, single = as_batch(observations, policy.observation_shape, "DQNPolicy")
    k = policy.config.stack_size
    if k > 1:
        batch = _next_stacks(batch, state, k, single)
        state = batch
    elif state is not None:
        raise ValueError("DQNPolicy keeps no state between steps without stacked frames "
                         "(stack_size=1); call compute_actions without state")
    values = policy.q_values(batch, single=False)
    if deterministic:
        actions = np.argmax(values, axis=1)
    else:  # ε-greedy as plan acts (uniform before learning starts), counting no env step
        epsilon = 1.0 if policy.env_steps < policy.config.learning_starts else None
        actions = policy.explorer.draw(policy.n_actions, lambda: values, len(batch), epsilon)
    return one_or_batch(policy.action_start + np.asarray(actions), state, {"q_values": values},
                        single)


def _next_stacks(frames: np.ndarray, stacks: Any, k: int, single: bool) -> np.ndarray:
    """Each observation's stack of its last ``k`` frames: the previous stacks shifted by one
    frame, or the frame repeated where there is none yet."""
    if stacks is None:
        return np.repeat(frames[:, None], k, axis=1)
    stacks = np.asarray(stacks)
    if single and stacks.shape == (k, *frames.shape[1:]):
        stacks = stacks[None]
    if stacks.shape != (len(frames), k, *frames.shape[1:]):
        raise ValueError(f"DQNPolicy: the state (the stacks of the last {k} frames) has shape "
                         f"{stacks.shape}, expected {(len(frames), k, *frames.shape[1:])}; pass "
                         "the state compute_actions returned, or None at an episode's start")
    return np.concatenate([stacks[:, 1:], frames[:, None].astype(stacks.dtype)], axis=1)


refuse_observations(DQNPolicy)


# ---- weights for rollout workers (stagerl.distributed) ------------------------------------


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_dqn(policy: DQNPolicy):
    return {"network": weights_on_cpu(policy.network.state_dict())}


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_dqn(policy: DQNPolicy, weights, env_steps, env):
    policy.network.load_state_dict(weights["network"])
    policy._acting_stale = True  # the numpy acting copy is refreshed at the next act
    # One act of a vector env is num_envs env steps and one explorer step, as in one process.
    policy.env_steps = int(env_steps)
    policy.explorer.step = int(env_steps) // env.num_envs + 1


@set_env_steps.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_env_steps_dqn(policy: DQNPolicy, env_steps):
    policy.env_steps = int(env_steps)  # the target network's updates and beta follow it
