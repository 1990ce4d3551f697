"""On-policy learning: rollout -> postprocess -> update -> clear, shared by VPG, A2C, PPO, TRPO.

An :class:`OnPolicy` policy acts with an
:class:`~stagerl.algorithms.on_policy.networks.ActorCritic`
and records, with every step, the log-probability of its action and the value estimate of its
state (extra traces of the trajectory that :func:`rollout_trajectory` builds). When the
trajectory's controller says a rollout is complete, the rollout is read into a time-major grid,
``postprocess`` adds advantages or returns, and ``update`` learns from the flat batch of its
transitions; then the trajectory is cleared and the sub-envs' episodes go on. A new algorithm is
a ``loss`` (and, when the default GAE does not fit, a ``postprocess``); see
``docs/algorithms/on_policy.md``.

The rollout's layout, how an episode cut by a time limit or by the rollout's end is
bootstrapped, and the estimators are in :mod:`stagerl.algorithms.on_policy.rollout`.

:class:`OnPolicyConfig` holds the settings the four algorithms share; on Ray workers an on-policy
policy sends its actor-critic (and observation statistics) only (the weights functions at the
end).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from stagerl.algorithms._checks import Settings, check_net_arch, check_numbers
from stagerl.algorithms.on_policy.baselines import Baseline, ValueNetworkBaseline
from stagerl.algorithms.on_policy.networks import LOG_SQRT_2PI, ActorCritic, RunningMeanStd
from stagerl.algorithms.on_policy.rollout import add_gae, carried_steps, read_rollout
from stagerl.algorithms.torch_state import move_fused_adam_steps
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.policy import Policy, as_rng
from stagerl.core.stages import PostActStage
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from stagerl.policies.agent import Agent, record_step
from stagerl.policies.training_steps import apply_gradients, compute_gradients
from stagerl.policies.weights import get_weights, on_policy, set_weights, weights_on_cpu

__all__ = ["OnPolicyConfig", "OnPolicy"]


@dataclass
class OnPolicyConfig(Settings):
    """The settings every on-policy algorithm has (each algorithm's config adds its own).

    Attributes:
        learning_rate: the optimiser's step size.
        gamma: the discount.
        normalize_states: normalise observations by their running mean and standard deviation.
        net_arch: hidden sizes of the actor's and of the critic's MLP (no shared layers).
        log_std_init: the initial log standard deviation of a Gaussian policy (Box actions).
        ortho_init: orthogonal initialisation, as Stable-Baselines3 and CleanRL.
    """

    learning_rate: float = 3e-4
    gamma: float = 0.99
    normalize_states: bool = False
    net_arch: tuple[int, ...] = (64, 64)
    log_std_init: float = 0.0
    ortho_init: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_numbers(self, "learning_rate", above=0)
        check_numbers(self, "gamma", at_least=0, at_most=1)
        check_numbers(self, "log_std_init")
        check_net_arch(self)


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
        max_grad_norm: clip the gradient norm before a step (``None`` or inf: no clip).
        normalize_states: normalise observations by their running mean and std, updated after
            each rollout's update (a rollout is acted and learned with the same statistics).
        rng: seed or ``np.random.Generator`` for actions and minibatches.
        baseline: what advantages are measured against (a
            :class:`~stagerl.algorithms.on_policy.baselines.Baseline`; default the critic,
            :class:`~stagerl.algorithms.on_policy.baselines.ValueNetworkBaseline`). Another
            baseline replaces the recorded values and the bootstrap values with its own.
    """

    def __init__(self, model: ActorCritic, optimiser: Any, gamma: float = 0.99,
                 gae_lambda: float = 1.0, max_grad_norm: float | None = None,
                 normalize_states: bool = False, rng: Any = None,
                 baseline: Baseline | None = None):
        self.model, self.optimiser = model, optimiser
        self.gamma, self.gae_lambda, self.max_grad_norm = gamma, gae_lambda, max_grad_norm
        self.rng = as_rng(rng)
        n_inputs = model.actor[0].in_features
        self.state_rms = RunningMeanStd((n_inputs,)) if normalize_states else None
        self.device = next(model.parameters()).device
        self.env_steps = 0  # transitions learned from (schedules read it)
        self.n_updates = 0
        self.stats: dict[str, float] = {}  # the last update's figures (losses, KL...)
        self.baseline = ValueNetworkBaseline() if baseline is None else baseline
        if not isinstance(self.baseline, Baseline):
            raise TypeError(f"baseline must be a stagerl Baseline (make_baseline(name)), got "
                            f"{type(self.baseline).__name__}")
        # Each lane's time step within its running episode at the next rollout's start.
        self.lane_steps: np.ndarray | None = None
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

    def state_values(self, states: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The baseline's values of raw observations at episode time steps ``steps``."""
        return self.baseline.values(self, states, steps)

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
        if self.max_grad_norm is not None and self.max_grad_norm < math.inf:  # inf: never clip
            nn.utils.clip_grad_norm_(params, self.max_grad_norm, foreach=True)
        optimiser.step()

    def select(self, rollout: dict) -> np.ndarray:
        """The ``(T, n_lanes)`` mask of the rollout rows to learn from (default: all)."""
        return rollout["valid"]

    def learn(self, container: Any) -> None:
        """Learn from one complete rollout held by ``container``."""
        batch, rollout = self.read_batch(container)
        self.update(batch)
        self.n_updates += 1
        self.log_stats()
        if self.state_rms is not None:
            self.state_rms.update(rollout["state"][rollout["valid"]])

    def read_batch(self, container: Any) -> tuple:
        """The flat batch of transitions to learn from in the rollout ``container`` holds
        (torch tensors; see :meth:`learn`) and the rollout itself; counts its env steps and
        carries each lane's episode step over to the next rollout."""
        lanes = getattr(container, "n_lanes", None) or 1
        if self.lane_steps is None or len(self.lane_steps) != lanes:
            self.lane_steps = np.zeros(lanes, dtype=np.int64)
        rollout = read_rollout(container, self, self.lane_steps)
        if not self.baseline.recorded:  # the values were the critic's: the baseline's instead
            valid = rollout["valid"]
            rollout["value"][valid] = self.state_values(rollout["state"][valid],
                                                        rollout["step"][valid])
        self.lane_steps = carried_steps(rollout, self.lane_steps)
        rollout = self.postprocess(rollout)
        rows = self.select(rollout)
        batch = {name: torch.as_tensor(np.ascontiguousarray(value[rows]), device=self.device)
                 for name, value in rollout.items()
                 if value.shape[:2] == rows.shape and name != "state"}
        batch["state"] = self.states_tensor(rollout["state"][rows])
        if not self.baseline.recorded:  # the baseline learns from the raw observations
            batch["raw_state"] = torch.as_tensor(rollout["state"][rows])
        self.env_steps += int(rollout["valid"].sum())
        return batch, rollout

    def log_stats(self) -> None:
        """Report the last update's figures (``losses/<name>``) and the learning rate."""
        if is_logging_scalars():  # once a rollout, for the loggers the experiment has
            for name, value in self.stats.items():
                log_scalar(f"losses/{name}", value)
            log_scalar("charts/learning_rate", self.optimiser.param_groups[0]["lr"])

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
                 "n_updates": self.n_updates,
                 "lane_steps": None if self.lane_steps is None else self.lane_steps.copy()}
        coefficients = getattr(self.baseline, "coefficients", None)
        if coefficients is not None:
            state["baseline"] = {"coefficients": coefficients.copy()}
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
        steps = state.get("lane_steps")
        self.lane_steps = None if steps is None else np.array(steps, dtype=np.int64)
        if "baseline" in state and hasattr(self.baseline, "coefficients"):
            self.baseline.coefficients = np.array(state["baseline"]["coefficients"])
        if self.state_rms is not None:
            rms = state["state_rms"]
            self.state_rms.mean, self.state_rms.var = np.array(rms["mean"]), np.array(rms["var"])
            self.state_rms.count = float(rms["count"])


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_on_policy(policy: OnPolicy, env):
    vector = isinstance(env, VectorEnv)  # a batch of states, or one
    state = env.state
    env_action, stored, log_prob, value = policy.sample(
        state if vector else np.asarray(state)[None], env.single_action_space)
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


# ---- weights for rollout workers (stagerl.distributed) ------------------------------------


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_on_policy(policy: OnPolicy):
    weights = {"model": weights_on_cpu(policy.model.state_dict())}
    rms = policy.state_rms
    if rms is not None:
        weights["state_rms"] = {"mean": rms.mean.copy(), "var": rms.var.copy(),
                                "count": float(rms.count)}
    return weights


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_on_policy(policy: OnPolicy, weights, env_steps, env):
    with torch.no_grad():
        policy.model.load_state_dict(weights["model"])
    rms = weights.get("state_rms")
    if rms is not None and policy.state_rms is not None:
        policy.state_rms.mean, policy.state_rms.var = rms["mean"].copy(), rms["var"].copy()
        policy.state_rms.count = rms["count"]
    policy.env_steps = int(env_steps)


@on_policy.dispatch(precedence=DEFAULT_PRECEDENCE)
def _on_policy_on_policy(policy: OnPolicy):
    return True


# ---- asynchronous gradients (A3C's plan on Ray workers) -----------------------------------


@compute_gradients.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_gradients_on_policy(policy: OnPolicy, trajectory):
    if type(policy).update is not OnPolicy.update or policy.state_rms is not None:
        raise TypeError(
            f"{type(policy).__name__} cannot send gradients to a learner: asynchronous "
            f"gradients need an update that is one gradient step on loss(batch) (A2C, or an "
            f"OnPolicy that defines loss only) and no observation normalisation "
            f"(normalize_states=False), got {type(policy).__name__} with its own update or "
            f"normalised observations")
    batch, _ = policy.read_batch(trajectory.container)
    params = [p for group in policy.optimiser.param_groups for p in group["params"]]
    if any(p.grad is None for p in policy.model.parameters()):
        policy.model.relink()
    for p in params:
        p.grad.zero_()  # in place: the model's gradients are views into these
    policy.loss(batch).backward()
    with torch.no_grad():
        checksum = float(sum(p.double().sum() for p in params))
    return {"gradients": [p.grad.detach().cpu().numpy().copy() for p in params],
            "stats": dict(policy.stats), "env_steps": int(len(batch["action"])),
            "weights_checksum": checksum}


@apply_gradients.dispatch(precedence=DEFAULT_PRECEDENCE)
def _apply_gradients_on_policy(policy: OnPolicy, gradients, scale):
    params = [p for group in policy.optimiser.param_groups for p in group["params"]]
    if len(params) != len(gradients["gradients"]):
        raise ValueError(f"{len(gradients['gradients'])} gradients for the {len(params)} "
                         f"parameter tensors of {type(policy).__name__}'s optimiser")
    with torch.no_grad():
        for p, g in zip(params, gradients["gradients"], strict=True):
            p.grad.copy_(torch.from_numpy(np.require(g, requirements="W")).to(p.device))
        if policy.max_grad_norm is not None and policy.max_grad_norm < math.inf:
            nn.utils.clip_grad_norm_(params, policy.max_grad_norm, foreach=True)
        if scale != 1.0:
            torch._foreach_mul_([p.grad for p in params], float(scale))
    policy.optimiser.step()
    policy.env_steps += int(gradients["env_steps"])
    policy.n_updates += 1
    policy.stats = dict(gradients["stats"])
    policy.log_stats()
