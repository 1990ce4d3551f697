"""On-policy learning: rollout -> postprocess -> update -> clear, shared by VPG, A2C, PPO, TRPO.

An :class:`OnPolicy` policy acts with an :class:`~stagerl.algorithms.actor_critic.ActorCritic`
and records, with every step, the log-probability of its action and the value estimate of its
state (extra traces of the trajectory that :func:`rollout_trajectory` builds). When the
trajectory's controller says a rollout is complete, the rollout is read into a time-major grid,
``postprocess`` adds advantages or returns, and ``update`` learns from the flat batch of its
transitions; then the trajectory is cleared and the sub-envs' episodes go on. A new algorithm is
a ``loss`` (and, when the default GAE does not fit, a ``postprocess``); see
``docs/algorithms/on_policy.md``.

The rollout grid, ``(T, n_lanes)`` (one column per sub-env, time down the rows)::

    lane 0:  s0 a0 r0 | s1 a1 r1 | s2 a2 r2 (terminal)  | s0' a0' r0'     <- rollout's end
    lane 1:  s0 a0 r0 | s1 a1 r1 (truncated)            | s0' a0' r0' | s1' a1' r1'
              chain_end: False       True, bootstrap V(final observation)    True, V(next_state)

``chain_end`` is True where the next row does not continue the same episode: a terminal step
(nothing bootstrapped), a truncated step or the lane's last step of the rollout (both
bootstrapped: ``bootstrap_value`` holds the critic's value of the true next state there).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import nn

from stagerl.algorithms.actor_critic import (
    LOG_SQRT_2PI,
    ActorCritic,
    RunningMeanStd,
    build_model,
    spaces_of,
)
from stagerl.algorithms.torch_state import move_fused_adam_steps
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.policy import Policy, as_rng
from stagerl.core.stages import PostActStage
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from stagerl.policies.agent import Agent, record_step
from stagerl.utils.returns import discount_rewards, generalized_advantage_estimation
from trajectories import (
    CircularArrayBuffer,
    CircularArraySARTSTraces,
    InsertSampleRatioController,
    Traces,
    Trajectory,
)

__all__ = ["ActorCritic", "OnPolicy", "RunningMeanStd", "rollout_trajectory", "read_rollout",
           "add_gae", "add_discounted_returns", "spaces_of", "scheduled", "check_config",
           "build_model", "make_vector_env"]

# ---- the policy ---------------------------------------------------------------------------------
class OnPolicy(Policy):
    """Base of on-policy learners: subclasses define ``loss`` (and optionally ``postprocess``
    and ``update``); acting, recording and the rollout cycle are shared.

    * ``plan`` samples from the actor (argmax or the clipped mean while ``deterministic``,
      drawing nothing from ``rng``) and keeps the step's log-probability and value, which the
      Agent records with the step.
    * ``postprocess(rollout)`` adds fields to the ``(T, n_lanes)`` rollout (see the module
      docstring); the default adds GAE ``advantage`` and ``return`` (``gamma``, ``gae_lambda``).
    * ``update(batch)`` learns from the flat batch of the rollout's transitions (torch tensors);
      the default takes one step of ``optimiser`` on ``loss(batch)``.

    Args:
        model: the :class:`ActorCritic`.
        optimiser: over the parameters that ``update`` steps.
        gamma, gae_lambda: discount and GAE lambda of the default ``postprocess``.
        max_grad_norm: clip the gradient norm before a step (``None``: no clip).
        normalize_states: normalise observations by their running mean and std, updated after
            each rollout's update (a rollout is acted and learned with the same statistics).
        rng: seed or ``np.random.Generator`` for actions and minibatches.
    """

    def __init__(self, model: ActorCritic, optimiser: Any, gamma: float = 0.99,
                 gae_lambda: float = 1.0, max_grad_norm: float | None = None,
                 normalize_states: bool = False, rng: Any = None):
        self.model, self.optimiser = model, optimiser
        self.gamma, self.gae_lambda, self.max_grad_norm = gamma, gae_lambda, max_grad_norm
        self.rng = as_rng(rng)
        n_inputs = model.actor[0].in_features
        self.state_rms = RunningMeanStd((n_inputs,)) if normalize_states else None
        self.device = next(model.parameters()).device
        self.env_steps = 0  # transitions learned from (schedules read it)
        self.n_updates = 0
        self.stats: dict[str, float] = {}  # the last update's figures (losses, KL...)
        self._step = None  # (stored action, log_prob, value, state) of the last plan

    # -- acting ------------------------------------------------------------------------------------
    def states_tensor(self, states: np.ndarray) -> torch.Tensor:
        """Observations as a float32 tensor on the policy's device (normalised if asked)."""
        x = self.state_rms.normalize(states) if self.state_rms is not None else states
        return torch.as_tensor(x, dtype=torch.float32, device=self.device)

    def sample(self, states: np.ndarray, action_space: Any) -> tuple:
        """For a batch of observations: the actions for the env (Gaussian ones clipped to the
        Box), the actions to store (unclipped), their log-probabilities and the values. While
        ``deterministic``: the argmax or the clipped mean, and nothing is drawn from ``rng``."""
        out, log_std, value = self.model.act_outputs(self.states_tensor(states))
        if self.model.discrete:
            if self.deterministic:
                return out.argmax(axis=1), None, None, value
            z = out - out.max(axis=1, keepdims=True)
            log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            cdf = np.cumsum(np.exp(log_probs), axis=1)  # inverse-CDF sampling: one draw per env
            action = np.minimum((cdf < self.rng.random((len(z), 1))).sum(axis=1), z.shape[1] - 1)
            log_prob = log_probs[np.arange(len(z)), action].astype(np.float32)
            return action, action, log_prob, value
        if self.deterministic:
            return np.clip(out, action_space.low, action_space.high), None, None, value
        noise = self.rng.standard_normal(out.shape).astype(np.float32)
        action = out + np.exp(log_std) * noise
        log_prob = (-0.5 * noise**2 - log_std - LOG_SQRT_2PI).sum(axis=1)
        return np.clip(action, action_space.low, action_space.high), action, log_prob, value

    # -- learning ----------------------------------------------------------------------------------
    def postprocess(self, rollout: dict) -> dict:
        """Add ``advantage`` and ``return`` (GAE); override for other estimators."""
        return add_gae(rollout, self.gamma, self.gae_lambda)

    def loss(self, batch: dict) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define loss(batch) (or update)")

    def update(self, batch: dict) -> None:
        """One gradient step on ``loss(batch)``."""
        self.gradient_step(self.optimiser, self.loss(batch))

    def gradient_step(self, optimiser: Any, loss: torch.Tensor) -> None:
        """Zero the gradients (in place: they are views, see ``ActorCritic.flat_parameters``),
        backward, clip the gradient norm (if ``max_grad_norm``), step."""
        params = optimiser.param_groups[0]["params"] if len(optimiser.param_groups) == 1 else \
            [p for group in optimiser.param_groups for p in group["params"]]
        if any(p.grad is None for p in self.model.parameters()):
            self.model.relink()  # someone set gradients to None: make them views again
        optimiser.zero_grad(set_to_none=False)
        loss.backward()
        if self.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(params, self.max_grad_norm, foreach=True)
        optimiser.step()

    def select(self, rollout: dict) -> np.ndarray:
        """The ``(T, n_lanes)`` mask of the rollout rows to learn from (default: all)."""
        return rollout["valid"]

    def learn(self, container: Any) -> None:
        """Learn from one complete rollout held by ``container``."""
        rollout = read_rollout(container, self)
        rollout = self.postprocess(rollout)
        rows = self.select(rollout)
        batch = {name: torch.as_tensor(np.ascontiguousarray(value[rows]), device=self.device)
                 for name, value in rollout.items()
                 if value.shape[:2] == rows.shape and name != "state"}
        batch["state"] = self.states_tensor(rollout["state"][rows])
        self.env_steps += int(rollout["valid"].sum())
        self.update(batch)
        self.n_updates += 1
        if is_logging_scalars():  # once a rollout, for the loggers the experiment has
            for name, value in self.stats.items():
                log_scalar(f"losses/{name}", value)
            log_scalar("charts/learning_rate", self.optimiser.param_groups[0]["lr"])
        if self.state_rms is not None:
            self.state_rms.update(rollout["state"][rollout["valid"]])

    # -- devices and state ------------------------------------------------------------------
    def to(self, device: Any) -> OnPolicy:
        super().to(device)
        self.device = torch.device(device)
        for optimiser in self.optimisers().values():
            move_fused_adam_steps(optimiser, self.device)
        return self

    def optimisers(self) -> dict[str, Any]:
        return {name: value for name, value in vars(self).items()
                if isinstance(value, torch.optim.Optimizer)}

    def state_dict(self) -> dict[str, Any]:
        state = {"model": self.model.state_dict(), "env_steps": self.env_steps,
                 "n_updates": self.n_updates}
        state.update({name: opt.state_dict() for name, opt in self.optimisers().items()})
        if self.state_rms is not None:
            rms = self.state_rms
            state["state_rms"] = {"mean": rms.mean, "var": rms.var, "count": rms.count}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        for name, opt in self.optimisers().items():
            opt.load_state_dict(state[name])
        self.env_steps, self.n_updates = int(state["env_steps"]), int(state["n_updates"])
        if self.state_rms is not None:
            rms = state["state_rms"]
            self.state_rms.mean, self.state_rms.var = np.array(rms["mean"]), np.array(rms["var"])
            self.state_rms.count = float(rms["count"])


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_on_policy(policy: OnPolicy, env):
    vector = isinstance(env, VectorEnv)
    state = env.state
    space = env.single_action_space if vector else env.action_space
    env_action, stored, log_prob, value = policy.sample(
        state if vector else np.asarray(state)[None], space)
    if not vector:
        env_action = int(env_action[0]) if policy.model.discrete else env_action[0]
    if not policy.deterministic:  # recorded with the step (PostAct)
        policy._step = (env_action, stored, log_prob, value, state)
    return env_action


def _record_on_policy_step(agent: Any, env: Any, action: Any) -> None:
    policy = agent.policy
    planned, stored, log_prob, value, state = policy._step or (None,) * 5
    if action is not planned:
        raise RuntimeError(
            f"{type(policy).__name__} records the log-probability and value of the action its "
            f"last plan returned, but the step took another action ({action!r}); act with the "
            "action plan(agent, env) returns, or record the step with stagerl.record_step")
    if not isinstance(env, VectorEnv):
        stored, log_prob, value = stored[0], log_prob[0], value[0]
    record_step(agent, env, stored, log_prob=log_prob, value=value, truncated=env.is_truncated)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_on_policy_step(agent: Agent[OnPolicy, object], stage: PostActStage, env, action):
    _record_on_policy_step(agent, env, action)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_on_policy_vector_step(agent: Agent[OnPolicy, object], stage: PostActStage,
                                env: VectorEnv, action):
    _record_on_policy_step(agent, env, action)  # as specific as the Agent's vector method


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_on_policy(policy: OnPolicy, stage: PostActStage, trajectory):
    for container in trajectory:  # the controller allows one sample per complete rollout
        policy.learn(container)
        # The next rollout starts at each sub-env's current state; episodes go on.
        trajectory.clear(keep_running_episodes=True)


# ---- rollouts -----------------------------------------------------------------------------------
def rollout_trajectory(env: Any, n_steps: int, controller: Any = None,
                       lane_capacity: int | None = None) -> Trajectory:
    """The trajectory of an on-policy agent: SARTS traces plus ``log_prob``, ``value`` and
    ``truncated``, one lane per sub-env, whose controller allows one sample per rollout of
    ``n_steps`` transitions per sub-env (or ``controller``'s rule).

    Each episode end adds a boundary row to its lane (its last state, then the next episode's
    first state), so a lane holds ``2 * n_steps + 1`` rows by default (``lane_capacity``).

    Example:
        >>> import stagerl as rl
        >>> trajectory = rollout_trajectory(rl.GymVectorEnv("CartPole-v1", num_envs=4), 32)
        >>> trajectory.keys()[-3:], trajectory.controller.threshold
        (('log_prob', 'value', 'truncated'), 128)
    """
    state_space, action_space = spaces_of(env, "rollout_trajectory")
    vector = isinstance(env, VectorEnv)
    n_envs = env.num_envs if vector else 1
    capacity = (lane_capacity or 2 * n_steps + 1) * n_envs
    if isinstance(action_space, gymnasium.spaces.Discrete):
        action = (np.int64, ())
    else:
        action = (np.float32, action_space.shape)
    traces = CircularArraySARTSTraces(capacity, state=(np.float32, state_space.shape),
                                      action=action) + Traces(
        log_prob=CircularArrayBuffer(capacity, (), np.float32),
        value=CircularArrayBuffer(capacity, (), np.float32),
        truncated=CircularArrayBuffer(capacity, (), np.bool_))
    if controller is None:
        batch = n_steps * n_envs
        controller = InsertSampleRatioController(ratio=1 / batch, threshold=batch)
    return Trajectory(traces, controller=controller, n_lanes=n_envs if vector else None)


def read_rollout(container: Any, policy: OnPolicy) -> dict:
    """The rollout in ``container`` as ``(T, n_lanes, ...)`` numpy arrays, time-major per lane.

    Fields: the traces (``state``, ``action``, ``reward``, ``terminal``, ``truncated``,
    ``log_prob``, ``value``), ``valid`` (False on padding, where a lane has fewer than ``T``
    steps), ``chain_end`` (the next row does not continue the episode) and ``bootstrap_value``
    (the critic's value of the next state where a chain ends without a terminal step: a
    truncated episode's true final observation, or the state after the rollout's last step).
    """
    n = len(container)
    rows = np.arange(n)
    ok = np.asarray(container.is_sampleable_at(rows), dtype=bool)
    laned = hasattr(container, "lane_of")
    lanes = container.lane_of(rows)[0] if laned else np.zeros(n, dtype=np.int64)
    n_lanes = container.n_lanes if laned else 1
    held = container.lane_lengths() if laned else [n]
    if max(held) >= container.capacity // n_lanes:
        raise RuntimeError(f"a rollout filled a lane's ring ({max(held)} rows): its oldest steps "
                           "may be lost; give rollout_trajectory a larger lane_capacity")
    idx = np.flatnonzero(ok)  # the transitions, lane by lane, each lane in time order
    after = np.minimum(idx + 1, n - 1)
    continues = (idx + 1 < n) & ok[after] & (lanes[after] == lanes[idx])
    lane = lanes[idx]
    counts = np.bincount(lane, minlength=n_lanes)
    t = np.arange(len(idx)) - (np.cumsum(counts) - counts)[lane]

    def grid(values: np.ndarray, fill: Any = 0) -> np.ndarray:
        out = np.full((int(counts.max()), n_lanes, *values.shape[1:]), fill, dtype=values.dtype)
        out[t, lane] = values
        return out

    names = ("state", "action", "reward", "terminal", "truncated", "log_prob", "value")
    columns = {name: container.take(name, idx) for name in names}
    bootstrap = np.zeros(len(idx), dtype=np.float32)
    ends = ~continues & ~columns["terminal"]
    if ends.any():
        next_states = policy.states_tensor(container.take("next_state", idx[ends]))
        with torch.no_grad():
            bootstrap[ends] = policy.model.value(next_states).cpu().numpy()
    rollout = {name: grid(values) for name, values in columns.items()}
    rollout["bootstrap_value"] = grid(bootstrap)
    rollout["chain_end"] = grid(~continues, fill=True)
    rollout["valid"] = grid(np.ones(len(idx), dtype=bool), fill=False)
    return rollout


def add_gae(rollout: dict, gamma: float, lam: float) -> dict:
    """Add GAE(gamma, lambda) ``advantage`` and ``return = advantage + value`` to ``rollout``.

    The bootstrap value is folded into the reward of the step where a chain ends, which is then
    marked terminal, so ``generalized_advantage_estimation`` never reads past it.
    """
    rewards = rollout["reward"] + gamma * rollout["bootstrap_value"]
    values = np.concatenate([rollout["value"], np.zeros_like(rollout["value"][:1])])
    advantage = generalized_advantage_estimation(rewards, values, gamma, lam,
                                                 terminal=rollout["chain_end"])
    rollout["advantage"] = advantage.astype(np.float32)
    rollout["return"] = (advantage + rollout["value"]).astype(np.float32)
    return rollout


def add_discounted_returns(rollout: dict, gamma: float) -> dict:
    """Add the discounted ``return`` of every step (Monte-Carlo, bootstrapped where a chain
    ends without a terminal step)."""
    rewards = rollout["reward"] + gamma * rollout["bootstrap_value"]
    returns = discount_rewards(rewards, gamma, terminal=rollout["chain_end"])
    rollout["return"] = returns.astype(np.float32)
    return rollout


def scheduled(value: float, schedule: str, progress_remaining: float) -> float:
    """``value`` under a schedule: ``"constant"``, or ``"linear"`` (down to 0 at the end, as
    RL-Zoo's ``lin_<value>``); ``progress_remaining`` goes from 1 to 0 over the run."""
    return value * max(progress_remaining, 0.0) if schedule == "linear" else value


def check_config(config: Any, who: str, positive: tuple = (), unit: tuple = (),
                 schedules: tuple = (), nonnegative: tuple = ()) -> None:
    """Refuse a hyper-parameter out of range, naming it: ``positive`` ints or floats above 0,
    ``unit`` in [0, 1], ``nonnegative`` at least 0 (or None), ``schedules`` in constant/linear."""
    for name in positive + unit + nonnegative:
        value = getattr(config, name)
        if value is None and name in nonnegative:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{who}: {name} must be a number, got {name}={value!r}")
        wrong = (name in positive and not value > 0) or (name in unit and not 0 <= value <= 1) \
            or (name in nonnegative and value < 0)
        if wrong:
            rule = "positive" if name in positive else "in [0, 1]" if name in unit else ">= 0"
            raise ValueError(f"{who}: {name} must be {rule}, got {name}={value!r}")
    for name in schedules:
        if getattr(config, name) not in ("constant", "linear"):
            raise ValueError(f"{who}: {name} must be 'constant' or 'linear', got "
                             f"{name}={getattr(config, name)!r}")


def make_vector_env(env_id: str, num_envs: int, seed: int) -> Any:
    """``num_envs`` sub-envs of ``env_id`` (sync) resetting in the step that ends an episode
    (gymnasium's SAME_STEP autoreset): every act is a step of every sub-env, as in
    Stable-Baselines3, and the truncated episode's final observation comes with its step."""
    from stagerl.envs.vector import GymVectorEnv

    return GymVectorEnv(env_id, num_envs=num_envs, seed=seed, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
