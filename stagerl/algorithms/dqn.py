"""DQN and its extensions as one Policy subtype: target network, double, dueling, n-step,
prioritized replay, distributional (C51) and Rainbow, their combination.

The pieces, in the order a step meets them:

* ``plan``: ε-greedy over the network's action values (a numpy copy of a small MLP's weights
  acts in ~8 us instead of torch's ~35 us per call; no forward at all when ε explores).
* The Agent records the step in the trajectory (``terminal = env.is_terminated``: a truncated
  episode's last transition stays bootstrapped).
* ``optimise`` at PostAct: the target network follows the online one every
  ``target_update_interval`` env steps; then, whenever the trajectory's controller allows (every
  ``train_freq`` transitions once learning has started), one *burst* of ``gradient_steps``
  gradient steps, each :func:`dqn_update`: the TD target, the loss and the step.

Hyper-parameters carry Stable-Baselines3's names and meaning (``docs/algorithms/dqn.md`` maps
them to the papers). Build an agent with :func:`make_dqn_agent`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import gymnasium
import numpy as np
import torch
import torch.nn.functional as F

import stagerl as rl
from stagerl.algorithms.dqn_config import DQNConfig, check_spaces
from stagerl.algorithms.dqn_networks import (
    FrameStack,
    NumpyQNetwork,
    ObservationEncoder,
    QNetwork,
    mlp_body,
)
from stagerl.algorithms.dqn_replay import Burst, as_tensors, make_dqn_trajectory, write_priorities
from stagerl.algorithms.torch_state import denormals_flushed, move_fused_adam_steps
from stagerl.utils.devices import resolve_device

__all__ = ["DQNConfig", "DQNPolicy", "make_dqn_agent", "dqn_update", "project_distribution",
           "learn_burst", "make_q_network"]


class DQNPolicy(rl.Policy):
    """ε-greedy acting on a Q-network that learns from replayed bursts of batches.

    Build it with :func:`make_dqn_agent`, which validates the env and the settings and pairs the
    policy with its trajectory. ``policy.network`` is the online :class:`QNetwork`,
    ``policy.target`` its target copy (``None`` without a target network), ``policy.q`` the
    :class:`~stagerl.TargetNetwork` (or :class:`~stagerl.Approximator`) holding them and the
    Adam optimiser, ``policy.explorer`` the ε schedule (an ``EpsilonGreedyExplorer`` stepped
    once per act), ``policy.env_steps`` the env steps acted so far.

    Args:
        network: the online Q-network.
        config: the hyper-parameters (``total_timesteps`` must be set).
        action_start: the first action's label (a ``Discrete(n, start)`` space).
        num_envs: sub-envs acting at once (ε falls per env step, the explorer steps per act).
        rng: an int seed or ``np.random.Generator`` for exploration.
        device: where the networks learn (``"cpu"``, ``"cuda"``, ``"auto"``).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
        >>> config = DQNConfig(total_timesteps=600, learning_starts=200, train_freq=100,
        ...                    gradient_steps=5, net_arch=(16,))
        >>> agent = make_dqn_agent(rl.GymEnv("CartPole-v1", seed=0), config, seed=0)
        >>> _ = rl.run(agent, rl.GymEnv("CartPole-v1", seed=0),
        ...            rl.StopAfterNSteps(600, progress=False))
        >>> adam = agent.policy.q.optimiser.state_dict()["state"][0]
        >>> agent.policy.env_steps, int(adam["step"])   # 4 bursts of 5 gradient steps
        (600, 20)
    """

    def __init__(self, network: QNetwork, config: DQNConfig, action_start: int = 0,
                 num_envs: int = 1, rng: Any = None, device: Any = "cpu"):
        if config.total_timesteps is None:
            raise ValueError(
                "DQNConfig.total_timesteps is None; set it to the run's length in env steps "
                "(exploration_fraction and the beta0 annealing are fractions of it)")
        self.config = config
        self.n_actions = network.n_actions
        self.action_start = int(action_start)
        self.device = resolve_device(device)
        fused = self.device.type in ("cpu", "cuda")  # one kernel for Adam's whole step
        optimiser = torch.optim.Adam(network.parameters(), lr=config.learning_rate,
                                     eps=config.adam_eps, fused=fused)
        online = rl.Approximator(network, optimiser)  # clipped by dqn_update, see there
        self._parameters = list(network.parameters())  # resolved once: clipped every step
        self.loss: torch.Tensor | None = None
        # The target is updated on env steps (below), never by TargetNetwork's own counter.
        self.q = (rl.TargetNetwork(online, sync_freq=2**62, rho=1.0 - config.tau)
                  if config.target_network else online)
        decay = math.ceil(config.exploration_fraction * config.total_timesteps / num_envs)
        # Float action values essentially never tie: the first maximum saves a draw per act.
        self.explorer = rl.EpsilonGreedyExplorer(
            config.exploration_final_eps, epsilon_init=config.exploration_initial_eps,
            decay_steps=decay, break_ties=False, rng=rng)
        self.env_steps = 0
        self.target_updates = 0  # env_steps // target_update_interval at the last update
        self.changed_since_sync = False  # a gradient step since the last target update
        self.acting_network = NumpyQNetwork.of(network)  # None: act through torch
        self._acting_stale = False
        self._frames = {False: FrameStack(config.stack_size), True: FrameStack(config.stack_size)}
        self.to(self.device)

    @property
    def network(self) -> QNetwork:
        """The online Q-network."""
        return self.q.model

    @property
    def target(self) -> QNetwork | None:
        """The target Q-network (``None`` without one)."""
        return self.q.target if isinstance(self.q, rl.TargetNetwork) else None

    @property
    def beta(self) -> float:
        """The importance-weight exponent now: ``beta0`` annealed linearly to 1."""
        c = self.config
        return c.beta0 + (1.0 - c.beta0) * min(1.0, self.env_steps / c.total_timesteps)

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
        x = torch.as_tensor(np.asarray(state), device=self.device)
        with torch.no_grad():
            values = self.network.q_values(x[None] if single else x).cpu().numpy()
        return values[0] if single else values

    def epsilon(self) -> float:
        """ε for this act (1 before ``learning_starts``, as SB3); advances the explorer."""
        explorer = self.explorer
        epsilon = explorer.epsilon_at(explorer.step)
        explorer.step += 1
        return 1.0 if self.env_steps < self.config.learning_starts else epsilon

    def stacked(self, states: np.ndarray, starts: Any) -> np.ndarray:
        """The last ``stack_size`` frames of each sub-env (``states`` has a sub-env axis)."""
        return self._frames[bool(self.deterministic)].observe(states, starts)

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
        changed = {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)
                   if getattr(self.config, f.name) != f.default}
        settings = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"DQNPolicy({settings}, device={str(self.device)!r})"


# ---- acting ----------------------------------------------------------------------------------


@rl.plan.dispatch(precedence=-1)
def _plan_dqn(policy: DQNPolicy, env):
    state = env.state
    if policy.config.stack_size > 1:
        state = policy.stacked(np.asarray(state)[None], None)[0]
    if policy.deterministic:  # evaluation: greedy, nothing drawn, no step counted
        return policy.action_start + int(np.argmax(policy.q_values(state)))
    epsilon = policy.epsilon()
    policy.env_steps += 1
    rng = policy.explorer.rng
    if rng.random() < epsilon:  # the draws of EpsilonGreedyExplorer.plan, without a forward
        return policy.action_start + int(rng.integers(policy.n_actions))
    return policy.action_start + int(np.argmax(policy.q_values(state)))


@rl.plan.dispatch(precedence=-1)
def _plan_dqn_vector(policy: DQNPolicy, env: rl.VectorEnv):
    state = env.state
    if policy.config.stack_size > 1:
        state = policy.stacked(state, env.episode_start)
    if policy.deterministic:
        return policy.action_start + np.argmax(policy.q_values(state, single=False), axis=1)
    epsilon = policy.epsilon()
    policy.env_steps += env.num_envs
    rng, n = policy.explorer.rng, env.num_envs
    explores = rng.random(n) < epsilon  # one forward pass for every sub-env, unless all explore
    random_actions = rng.integers(policy.n_actions, size=n)
    if explores.all():
        return policy.action_start + random_actions
    greedy = np.argmax(policy.q_values(state, single=False), axis=1)
    return policy.action_start + np.where(explores, random_actions, greedy)


@rl.optimise.dispatch(precedence=-1)
def _start_episode(policy: DQNPolicy, stage: rl.PreEpisodeStage, *trajectory):
    # Inside an Agent the loop calls optimise(policy, stage, trajectory), alone (evaluation)
    # optimise(policy, stage): either way a new episode's frames start afresh.
    policy._frames[bool(policy.deterministic)].start()


# ---- learning --------------------------------------------------------------------------------


@rl.optimise.dispatch(precedence=-1)
def _optimise_dqn(policy: DQNPolicy, stage: rl.PostActStage, trajectory):
    policy.update_target_if_due()
    for burst in trajectory:  # the controller allows one burst per train_freq transitions
        with denormals_flushed(policy.device):
            learn_burst(policy, burst, trajectory)
        if rl.is_logging_scalars():  # once a burst, for the loggers the experiment has
            rl.log_scalar("losses/td_loss", policy.loss)
            explorer = policy.explorer
            rl.log_scalar("charts/epsilon", explorer.epsilon_at(explorer.step))


def learn_burst(policy: DQNPolicy, burst: Burst, trajectory: Any) -> None:
    """The gradient steps of one burst; prioritized replay writes its priorities back."""
    config = policy.config
    if burst.rows is None:  # prioritized: each batch drawn after the last one's priorities
        for batch in burst:
            tensors = as_tensors(batch, policy.device, policy.action_start, policy.beta)
            errors = dqn_update(policy, tensors)
            write_priorities(trajectory, batch["key"], errors.cpu().numpy(), config.alpha,
                             config.prioritized_eps)
        policy._acting_stale = True
        return
    rows = as_tensors(burst.rows, policy.device, policy.action_start)  # one transfer a field
    batches = Burst(burst.n_batches, burst.batch_size, rows)
    n, size = burst.n_batches, burst.batch_size
    targets, next_outputs = [None] * n, [None] * n
    # The target network changes only between env steps, never inside a burst: one pass over
    # the whole burst gives every batch's TD targets (with double DQN, the target network's
    # values; the online network, which changes each step, picks the actions batch by batch).
    if policy.target is not None:
        # On the CPU in parts of ~1,000 rows: one 8,192-row pass, whose activations outgrow
        # the caches, measured ~30% slower.
        parts = _parts(rows, size) if policy.device.type == "cpu" else [rows]
        if config.double:
            with torch.no_grad():
                next_outputs = torch.cat([policy.target(p["next_state"]) for p in parts])
            next_outputs = next_outputs.split(size)
        else:
            targets = torch.cat([td_target(policy, part) for part in parts]).split(size)
    for batch, target, next_output in zip(batches, targets, next_outputs, strict=True):
        dqn_update(policy, batch, td_target(policy, batch, next_output) if target is None
                   else target)
    policy._acting_stale = True  # the numpy copy of the weights is refreshed at the next act


def _parts(rows: dict, batch_size: int, about: int = 1024) -> list[dict]:
    size = batch_size * max(1, about // batch_size)
    total = rows["reward"].shape[0]
    return [{name: v[i:i + size] for name, v in rows.items()} for i in range(0, total, size)]


@torch.no_grad()
def td_target(policy: DQNPolicy, batch: dict, next_output: torch.Tensor | None = None):
    """The TD target of each row: ``r + gamma^n (1 - terminal) Q_target(s', a')`` with
    ``a' = argmax Q_target(s', .)`` (double DQN: ``argmax Q_online(s', .)``); for C51 the
    distribution of that return projected onto the support.

    ``batch`` holds tensors on the policy's device: ``reward`` (n-step sums), ``next_state``,
    ``terminal`` (a float), and ``discount`` (``gamma ** n`` per row) when n-step.
    ``next_output`` is the target network's output at ``next_state`` when already computed.
    """
    config, online = policy.config, policy.network
    target = policy.target if policy.target is not None else online
    next_state, reward = batch["next_state"], batch["reward"]
    # Terminated: nothing beyond. Truncated by a time limit: terminal is False, so bootstrapped.
    bootstrap = batch.get("discount", config.gamma) * (1.0 - batch["terminal"])
    if next_output is None:
        next_output = target(next_state)
    if config.double:  # the online network picks the next action, the target network rates it
        next_action = online.q_values(next_state).argmax(dim=1, keepdim=True)
    else:
        next_action = online.values_of(next_output).argmax(dim=1, keepdim=True)
    if online.distributional:
        next_logits = next_output.gather(1, next_action[..., None].expand(-1, -1, online.n_atoms))
        return project_distribution(next_logits.squeeze(1).softmax(dim=-1), reward, bootstrap,
                                    online.support)
    return reward + bootstrap * next_output.gather(1, next_action).squeeze(1)


def dqn_update(policy: DQNPolicy, batch: dict, target: torch.Tensor | None = None):
    """One gradient step on a batch of transitions: the TD target, the loss, the step.

    ``batch`` as for :func:`td_target`, plus ``state``, ``action`` (indices) and, for
    prioritized replay, ``weight`` (importance weights). ``target`` is the batch's TD target
    when already computed. Returns the per-row errors of a weighted (prioritized) batch
    (``|TD error|``, or the cross-entropy for C51), else ``None``.
    """
    if target is None:
        target = td_target(policy, batch)
    output, action = policy.network(batch["state"]), batch["action"][:, None]
    if policy.network.distributional:  # cross-entropy to the projected target distribution
        index = action[..., None].expand(-1, -1, policy.network.n_atoms)
        log_probs = output.gather(1, index).squeeze(1).log_softmax(dim=-1)
        losses = -(target * log_probs).sum(dim=-1)
    else:
        q = output.gather(1, action).squeeze(1)
        huber = policy.config.loss == "huber"
        losses = F.smooth_l1_loss(q, target, reduction="none") if huber else (q - target) ** 2
    weight = batch.get("weight")
    loss = losses.mean() if weight is None else (weight * losses).mean()
    parameters = policy._parameters
    for p in parameters:  # zero_grad(set_to_none=True), without the optimiser's profiling hooks
        p.grad = None
    loss.backward()
    if policy.config.max_grad_norm is not None:
        clip_grad_norm(parameters, policy.config.max_grad_norm)
    policy.q.optimiser.step()
    policy.changed_since_sync = True
    policy.loss = loss.detach()  # for logging; reading it waits for the device
    if weight is None:
        return None
    return (losses if policy.network.distributional else q - target).detach().abs()


def clip_grad_norm(parameters: list, max_norm: float) -> None:
    """``torch.nn.utils.clip_grad_norm_`` in its foreach form, without its per-call checks:
    scale every gradient by ``min(1, max_norm / (total norm + 1e-6))``."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))


def project_distribution(next_probs: torch.Tensor, reward: torch.Tensor,
                         bootstrap: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """C51's target: the distribution of ``reward + bootstrap * Z'`` projected onto
    ``support`` (mass of each shifted atom split between its two neighbours).

    Example:
        >>> import torch
        >>> target = project_distribution(torch.tensor([[0.2, 0.3, 0.5]]), torch.tensor([0.5]),
        ...                               torch.tensor([0.5]), torch.tensor([-1.0, 0.0, 1.0]))
        >>> [round(p, 6) for p in target[0].tolist()]   # atoms -1, 0, 1 land on 0, 0.5, 1
        [0.0, 0.35, 0.65]
    """
    v_min, v_max, n_atoms = support[0], support[-1], support.shape[0]
    shifted = (reward[:, None] + bootstrap[:, None] * support[None, :]).clamp(v_min, v_max)
    position = (shifted - v_min) / ((v_max - v_min) / (n_atoms - 1))
    lower, upper = position.floor(), position.ceil()
    projected = torch.zeros_like(next_probs)
    # An atom landing exactly on a support point (lower == upper) keeps all its mass there.
    projected.scatter_add_(1, lower.long(), next_probs * (upper - position + (lower == upper)))
    projected.scatter_add_(1, upper.long(), next_probs * (position - lower))
    return projected




# ---- building an agent -----------------------------------------------------------------------


def make_dqn_agent(env: Any, config: DQNConfig, seed: int = 0, device: Any = "auto",
                   body: torch.nn.Module | None = None) -> rl.Agent:
    """A DQN agent for ``env`` (single or vector): the policy and its trajectory.

    Everything is checked here, before anything runs: the settings, the env's spaces (a
    ``Discrete`` action space; ``Box``, ``Discrete`` or ``MultiBinary`` observations), the
    combination of both and the device. The same ``seed`` gives the same network, exploration
    and replay draws.

    Args:
        env: the env the agent will act in (its spaces are read, it is not stepped).
        config: the hyper-parameters; ``total_timesteps`` must be set.
        seed: seeds the network's initialisation, ε-greedy and the replay sampler.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA where available).
        body: a torch module from encoded observations ``(batch, *obs_shape)`` (or stacks
            ``(batch, stack_size, *frame)``) to features ``(batch, n)``, e.g. a CNN for images;
            default: an MLP of ``config.net_arch`` over the flattened input.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
        >>> env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
        >>> agent = make_dqn_agent(env, DQNConfig(total_timesteps=400, learning_starts=100,
        ...                                       net_arch=(16,), double=True), device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(400, progress=False))
        >>> agent.policy.env_steps, agent.trajectory.controller.n_sampled > 0
        (400, True)
        >>> pendulum = rl.GymEnv("Pendulum-v1")
        >>> make_dqn_agent(pendulum, DQNConfig(total_timesteps=1))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: DQN chooses among discrete actions, but the env's action space is continuous: ...
    """
    if not isinstance(config, DQNConfig):
        raise TypeError(f"make_dqn_agent needs a DQNConfig, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got seed={seed!r}")
    if body is not None and not isinstance(body, torch.nn.Module):
        raise TypeError(f"body must be a torch.nn.Module, got {type(body).__name__}")
    action_space, state_space, num_envs = check_spaces(env, config)
    device = resolve_device(device)
    if config.total_timesteps is None:
        raise ValueError(
            "DQNConfig.total_timesteps is None; set it to the run's length in env steps "
            "(exploration_fraction and the beta0 annealing are fractions of it)")
    explore_seed, replay_seed = np.random.SeedSequence(int(seed)).spawn(2)
    with torch.random.fork_rng(devices=[]):  # the same seed, the same network; global rng kept
        torch.manual_seed(int(seed))
        network = make_q_network(state_space, int(action_space.n), config, body)
    policy = DQNPolicy(network, config, int(action_space.start), num_envs,
                       np.random.default_rng(explore_seed), device)
    state = state_spec(state_space)
    trajectory = make_dqn_trajectory(
        state, config.steps_per_burst, config.batch_size, config.buffer_size, config.train_freq,
        config.learning_starts, config.n_step, config.gamma, config.stack_size,
        config.prioritized, np.random.default_rng(replay_seed))
    return rl.Agent(policy, trajectory)


def state_spec(space: Any) -> tuple[Any, tuple[int, ...]]:
    """The ``(dtype, shape)`` a state trace stores observations of ``space`` in: Discrete as
    int64 indices, float Boxes as float32, other arrays in their own dtype."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return np.int64, ()
    dtype = np.float32 if np.dtype(space.dtype).kind == "f" else np.dtype(space.dtype)
    return dtype, tuple(space.shape)


def make_q_network(space: Any, n_actions: int, config: DQNConfig,
                   body: torch.nn.Module | None = None) -> QNetwork:
    """The Q-network the settings ask for, on the CPU (its initialisation uses torch's rng)."""
    encoder = ObservationEncoder.for_space(space)
    frame = (int(space.n),) if isinstance(space, gymnasium.spaces.Discrete) else space.shape
    shape = frame if config.stack_size == 1 else (config.stack_size, *frame)
    if body is None:
        body = mlp_body(int(np.prod(shape)), config.net_arch)
    with torch.no_grad():
        dummy = torch.zeros((1, *shape))
        features = body(dummy)
    if features.dim() != 2:
        raise ValueError(f"body must return (batch, features), got shape {tuple(features.shape)} "
                         f"for an input of shape {tuple(dummy.shape)}")
    return QNetwork(body, features.shape[1], n_actions, encoder, config.dueling,
                    config.n_atoms if config.distributional else 1, config.v_min, config.v_max)
