"""A recurrent DQN (DRQN with R2D2's stored-state replay and burn-in).

Acting: ε-greedy over ``Q(observation, h)``, where ``h`` is the lane's memory, which goes on
from step to step and starts again (zeros) where the lane's episode starts; the state that went
into each step is stored with it (``recurrent_state``).

Learning, whenever the controller allows (``gradient_steps`` per ``train_freq`` env steps once
``learning_starts`` steps were taken): a batch of replayed windows
(:class:`trajectories.SequenceSampler`: ``sequence_length`` steps of one episode, starting every
``period`` steps, zero-padded at the episode's end), each unrolled from the state stored with
its first step (zero at an episode start)::

    positions     0 .. burn_in-1 | burn_in .. L-1            | L
    observation   s_0 ..         | s_b ..  s_{L-1}           | s'_{last}  (next state)
    online RNN    warm-up, no    | Q(s_t, a_t)  (loss here, on real steps only)
                  gradient       |
    target RNN    unrolled over everything from the same stored state: max_a Q'(s_{t+1}, a)
    target_t = r_t + gamma (1 - terminal_t) Q'(s_{t+1}, argmax_a Q(s_{t+1}, a))   (double)

A truncated episode's last step stays bootstrapped (``terminal`` is the env's termination).
The target network follows the online one every ``target_update_interval`` env steps.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import gymnasium
import numpy as np
import torch
from torch.nn import functional as F

from stagerl.algorithms._checks import changed_settings, check_int, single_spaces
from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn.recurrent_config import DRQNConfig
from stagerl.algorithms.dqn.recurrent_network import DRQNNetwork
from stagerl.algorithms.torch_state import move_fused_adam_steps
from stagerl.core.actions import _compute_actions, as_batch, checked_state, one_or_batch
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan
from stagerl.core.env import VectorEnv
from stagerl.core.fallbacks import refuse_observations
from stagerl.core.stages import PostActStage
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from stagerl.policies.agent import Agent
from stagerl.policies.explorers import EpsilonGreedyExplorer
from stagerl.policies.recurrent import RecurrentPolicy, plan_recurrent
from stagerl.utils.devices import resolve_device
from stagerl.utils.networks import clip_grad_norm
from stagerl.utils.numpy_rnn import weights_changed
from trajectories import (
    STATE_TRACE,
    CircularArraySARTSTraces,
    InsertSampleRatioController,
    SequenceSampler,
    Trajectory,
)

__all__ = ["DRQNConfig", "DRQNNetwork", "DRQNPolicy", "drqn_update", "make_drqn_agent"]


class DRQNPolicy(RecurrentPolicy):
    """ε-greedy acting with memory, and learning from replayed windows (module docstring).

    Build it with :func:`make_drqn_agent`. ``network`` and ``target`` are the online and target
    :class:`DRQNNetwork`, ``explorer`` the ε schedule (stepped once per act), ``env_steps`` the
    env steps acted, ``loss`` the last gradient step's loss.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import DRQNConfig, make_drqn_agent
        >>> env = rl.GymEnv("CartPole-v1", seed=0)
        >>> config = DRQNConfig(total_steps=300, learning_starts=100, sequence_length=4,
        ...                     burn_in=1, batch_size=4, rnn_hidden_size=8, net_arch=(8,))
        >>> agent = make_drqn_agent(env, config, seed=0, device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
        >>> agent.policy.env_steps, agent.policy.n_updates   # one at step 100, then every 4th
        (300, 51)
    """

    def __init__(self, network: DRQNNetwork, config: DRQNConfig, action_start: int = 0,
                 num_envs: int = 1, rng: Any = None, device: Any = "cpu"):
        if config.total_steps is None:
            raise ValueError("DRQNConfig.total_steps is None; set it to the run's length in env "
                             "steps (exploration_fraction is a fraction of it)")
        self.config = config
        self.device = resolve_device(device)
        self.network = network
        self.target = copy.deepcopy(network)
        self.target.requires_grad_(False)
        # Fused: one kernel steps every tensor. Acting reads what it writes: numpy views of the
        # weights on the CPU, else copies taken again after each step (weights_changed).
        self.optimiser = torch.optim.Adam(network.parameters(), lr=config.learning_rate,
                                          eps=config.adam_eps,
                                          fused=self.device.type in ("cpu", "cuda"))
        self.action_start = int(action_start)
        self.recurrent_state_shape = network.recurrent_state_shape
        decay = math.ceil(config.exploration_fraction * config.total_steps / num_envs)
        self.explorer = EpsilonGreedyExplorer(
            config.exploration_final_eps, epsilon_init=config.exploration_initial_eps,
            decay_steps=decay, break_ties=False, rng=rng)
        self.env_steps = 0
        self.n_updates = 0
        self.target_updates = 0  # env_steps // target_update_interval at the last update
        self.loss: torch.Tensor | None = None
        self.windows_stored = False  # the replay holds a window to learn from
        self.to(self.device)

    def to(self, device: Any) -> DRQNPolicy:
        device = resolve_device(device)
        super().to(device)
        move_fused_adam_steps(self.optimiser, device)
        self.device = device
        return self

    def update_target_if_due(self) -> None:
        due = self.env_steps // self.config.target_update_interval
        if due > self.target_updates:
            tau = self.config.tau
            with torch.no_grad():
                for target, online in zip(self.target.parameters(), self.network.parameters(),
                                          strict=True):
                    target.mul_(1.0 - tau).add_(online, alpha=tau)
        self.target_updates = due

    def state_dict(self) -> dict[str, Any]:
        return {"network": self.network.state_dict(), "target": self.target.state_dict(),
                "optimiser": self.optimiser.state_dict(), "explorer": self.explorer.state_dict(),
                "env_steps": self.env_steps, "n_updates": self.n_updates,
                "target_updates": self.target_updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state["network"])
        self.target.load_state_dict(state["target"])
        self.optimiser.load_state_dict(state["optimiser"])
        self.explorer.load_state_dict(state["explorer"])
        self.env_steps, self.n_updates = int(state["env_steps"]), int(state["n_updates"])
        self.target_updates = int(state["target_updates"])

    def __repr__(self) -> str:
        settings = changed_settings(self.config)
        return f"DRQNPolicy({settings + ', ' if settings else ''}device={str(self.device)!r})"


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_drqn(policy: DRQNPolicy, observations, state, deterministic):
    network = policy.network
    batch, single = as_batch(observations, (network.n_inputs,), "DRQNPolicy")
    state = checked_state("DRQNPolicy", state, network.recurrent_state_shape, len(batch), single,
                          policy.initial_state)
    values, new_state = network.step(np.asarray(batch, np.float32), state)
    if deterministic:
        actions = values.argmax(axis=1)
    else:  # ε-greedy (uniform before learning starts); the explorer steps, no env step counts
        epsilon = 1.0 if policy.env_steps < policy.config.learning_starts else None
        actions = policy.explorer.draw(network.n_actions, lambda: values, len(batch), epsilon)
    return one_or_batch(policy.action_start + np.asarray(actions), new_state,
                        {"q_values": values}, single)


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_drqn(policy: DRQNPolicy, env):
    actions = plan_recurrent(policy, env)
    if not policy.deterministic:  # evaluation counts no step
        policy.env_steps += env.num_envs if isinstance(env, VectorEnv) else 1
    return actions


refuse_observations(DRQNPolicy)


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_drqn(policy: DRQNPolicy, stage: PostActStage, trajectory):
    policy.update_target_if_due()
    if not policy.windows_stored:  # learning may start before a whole window was played
        policy.windows_stored = trajectory.sampler.can_sample(trajectory.container)
        if not policy.windows_stored:
            return
    for batch in trajectory:  # the controller allows gradient_steps per train_freq steps
        drqn_update(policy, batch)
        if is_logging_scalars():
            log_scalar("losses/td_loss", policy.loss)
            log_scalar("charts/epsilon", policy.explorer.epsilon_at(policy.explorer.step))


def drqn_update(policy: DRQNPolicy, batch: dict) -> None:
    """One gradient step on a batch of windows (torch tensors, ``(B, L, ...)``; see the module
    docstring for the math)."""
    c, online, target = policy.config, policy.network, policy.target
    state, mask, seq_lens = batch["state"].float(), batch["mask"], batch["seq_lens"]
    h0, b = batch["initial_state"], c.burn_in
    rows = torch.arange(len(seq_lens), device=state.device)
    # The window's observations, then the next state of its last real step.
    x = torch.cat([state, torch.zeros_like(state[:, :1])], dim=1)
    x[rows, seq_lens] = batch["next_state"].float()[rows, seq_lens - 1]
    with torch.no_grad():
        h = online.unroll(x[:, :b], h0)[1] if b else h0
        q_next_target = target.unroll(x, h0)[0][:, b + 1:]
    q = online.unroll(x[:, b:], h)[0]  # positions b .. L: the steps' and the last next state's
    action = (batch["action"][:, b:] - policy.action_start).long().unsqueeze(-1)
    q_taken = q[:, :-1].gather(-1, action).squeeze(-1)
    if c.double:
        best = q[:, 1:].detach().argmax(dim=-1, keepdim=True)
    else:
        best = q_next_target.argmax(dim=-1, keepdim=True)
    next_value = q_next_target.gather(-1, best).squeeze(-1)
    bootstrap = c.gamma * (1.0 - batch["terminal"][:, b:].float())
    td_target = batch["reward"][:, b:].float() + bootstrap * next_value
    real = mask[:, b:]
    if c.loss == "huber":
        loss = F.smooth_l1_loss(q_taken[real], td_target[real])
    else:
        loss = F.mse_loss(q_taken[real], td_target[real])
    params = [p for group in policy.optimiser.param_groups for p in group["params"]]
    for p in params:  # optimiser.zero_grad(set_to_none=True) without its per-call bookkeeping
        p.grad = None
    loss.backward()
    if c.max_grad_norm is not None and c.max_grad_norm < math.inf:
        clip_grad_norm(params, c.max_grad_norm)  # torch's clip_grad_norm_, to the bit
    adam_step(policy.optimiser)  # optimiser.step(), its fused kernel called directly
    weights_changed(params)
    policy.n_updates += 1
    policy.loss = loss.detach()


def make_drqn_agent(env: Any, config: DRQNConfig, seed: int = 0, device: Any = "auto") -> Agent:
    """A recurrent DQN agent for ``env`` (single or vector; flat ``Box`` observations and
    ``Discrete`` actions): the policy and its replay trajectory of windows, seeded from one
    seed. Everything is checked before anything runs."""
    who = "make_drqn_agent"
    if not isinstance(config, DRQNConfig):
        raise TypeError(f"{who} needs a DRQNConfig, got {type(config).__name__}")
    seed = check_int(who, "seed", seed, low=0)
    state_space, action_space, num_envs = single_spaces(env, who)
    if not isinstance(action_space, gymnasium.spaces.Discrete):
        raise TypeError(f"{who}: the recurrent DQN chooses among discrete actions, got the "
                        f"action space {action_space}; use recurrent PPO for continuous ones")
    if not isinstance(state_space, gymnasium.spaces.Box) or len(state_space.shape) != 1:
        raise TypeError(f"{who} needs flat Box observations, got {state_space}; flatten them "
                        "with gymnasium.wrappers.FlattenObservation")
    if config.total_steps is None:
        raise ValueError("DRQNConfig.total_steps is None; set it to the run's length in env "
                         "steps")
    per_lane = math.ceil(config.buffer_size / num_envs)
    if per_lane < 2 * config.sequence_length:
        raise ValueError(f"{who}: buffer_size={config.buffer_size} leaves {per_lane} steps per "
                         f"sub-env, fewer than two windows of sequence_length="
                         f"{config.sequence_length}; raise buffer_size")
    explore_seed, replay_seed = np.random.SeedSequence(seed).spawn(2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        network = DRQNNetwork(state_space.shape[0], int(action_space.n), config.net_arch,
                              config.rnn, config.rnn_hidden_size, config.head_net_arch)
    device = resolve_device(device)
    policy = DRQNPolicy(network, config, int(action_space.start), num_envs,
                        np.random.default_rng(explore_seed), device)
    traces = CircularArraySARTSTraces(config.buffer_size, state=(np.float32, state_space.shape),
                                      extra={STATE_TRACE: (np.float32,
                                                           network.recurrent_state_shape)})
    sampler = SequenceSampler(config.sequence_length, config.batch_size, config.burn_in,
                              config.period, config.pad,
                              names=("state", "next_state", "action", "reward", "terminal"),
                              rng=np.random.default_rng(replay_seed), device=device)
    controller = InsertSampleRatioController(
        ratio=config.gradient_steps / config.train_freq,
        threshold=max(config.learning_starts, 1))
    return Agent(policy, Trajectory(traces, sampler, controller,
                                    n_lanes=num_envs if isinstance(env, VectorEnv) else None))
