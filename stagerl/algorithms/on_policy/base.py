"""On-policy learning: rollout -> postprocess -> update -> clear, shared by the on-policy family.

An :class:`OnPolicy` policy acts with an :class:`~stagerl.algorithms.on_policy.networks.ActorCritic`
and records, with every step, the log-probability of its action and the value estimate of its
state (extra traces of the trajectory that :func:`rollout_trajectory` builds). When the
trajectory's controller says a rollout is complete, the rollout is read into a time-major grid,
``postprocess`` adds advantages or returns, and ``update`` learns from the flat batch of its
transitions; then the trajectory is cleared and the sub-envs' episodes go on. A new algorithm is
a ``loss`` (and, when the default GAE does not fit, a ``postprocess``); see
``docs/algorithms/on_policy.md``.

The rollout's layout, its bootstrapping and the estimators: :mod:`.rollout`; what the loop's
stages do for an on-policy policy (plan, record, learn) and ``compute_actions``: :mod:`.stages`;
what Ray workers need of it (its weights, A3C's gradients): :mod:`.workers`; the settings every
on-policy algorithm has (``OnPolicyConfig``) and the model they build: :mod:`.config`.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import gymnasium
import numpy as np
import torch

from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.extractors import convolution_layout, input_dtypes
from stagerl.algorithms.on_policy.baselines import Baseline, ValueNetworkBaseline
from stagerl.algorithms.on_policy.config import ACTIVATIONS, OnPolicyConfig, build_model_for
from stagerl.algorithms.on_policy.networks import ActorCritic, RunningMeanStd
from stagerl.algorithms.on_policy.rmsprop_step import rmsprop_step
from stagerl.algorithms.on_policy.rollout import add_gae, carried_steps, read_rollout, rows_selector
from stagerl.algorithms.torch_state import move_fused_adam_steps
from stagerl.core.env import VectorEnv
from stagerl.core.policy import Policy, as_rng
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from stagerl.utils.networks import clip_grad_norm
from trajectories.nested import is_nested, tree_map

__all__ = ["OnPolicyConfig", "OnPolicy", "ACTIVATIONS", "build_model_for"]

#: Each model's parameters, listed once (``model.parameters()`` walks every module, a good share
#: of a small network's gradient step): ``gradient_step`` checks that their gradients are views.
_PARAMETERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ---- the policy ---------------------------------------------------------------------------------
class OnPolicy(Policy):
    """Base of on-policy learners: subclasses define ``loss`` (and optionally ``postprocess``
    and ``update``); acting, recording and the rollout cycle are shared.

    * ``plan`` samples from the actor (argmax or the clipped mean while ``deterministic``,
      drawing nothing from ``rng``) and keeps the step's log-probability and value, which the
      Agent records with the step (one pending step per lane: a game's players played by one
      policy each keep theirs, ``env.lane``). A ``masked`` policy samples among
      ``env.legal_actions_mask`` (a categorical of the legal actions), and the trajectory
      stores the mask of every state, which the loss reads back; a policy that is not
      ``masked`` refuses an env with masks (``validate``).
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
        normalize_rewards: divide rewards by the running standard deviation of the discounted
            return (see :class:`OnPolicyConfig`).
        baseline: what advantages are measured against (a :class:`.baselines.Baseline`;
            default the critic, :class:`.baselines.ValueNetworkBaseline`); another replaces the
            recorded values and the bootstrap values with its own.
    """

    def __init__(self, model: ActorCritic, optimiser: Any, gamma: float = 0.99,
                 gae_lambda: float = 1.0, max_grad_norm: float | None = None,
                 normalize_states: bool = False, rng: Any = None,
                 normalize_rewards: bool = False, baseline: Baseline | None = None):
        self.model, self.optimiser = model, optimiser
        self.gamma, self.gae_lambda, self.max_grad_norm = gamma, gae_lambda, max_grad_norm
        self.rng = as_rng(rng)
        space = getattr(model, "observation_space", None)
        if normalize_states and space is not None and not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f"normalize_states normalises Box observations, got {space}; leave "
                            "it False for Dict, Tuple and discrete observations")
        shape = tuple(space.shape) if isinstance(space, gymnasium.spaces.Box) else \
            (model.n_inputs,)
        self.state_rms = RunningMeanStd(shape) if normalize_states else None
        # Rewards divided by the running standard deviation of the discounted return (SB3's
        # VecNormalize): the statistics follow every step; a rollout learns with those at its
        # end.
        self.reward_rms = RunningMeanStd(()) if normalize_rewards else None
        self.running_returns: np.ndarray | None = None  # per lane, for reward_rms
        self.device = next(model.parameters()).device
        self.env_steps = 0  # transitions learned from (schedules read it)
        self.n_updates = 0
        self.stats: dict[str, float] = {}  # the last update's figures (losses, KL...)
        self.baseline = ValueNetworkBaseline() if baseline is None else baseline
        if not isinstance(self.baseline, Baseline):
            raise TypeError(f"baseline must be a stagerl Baseline (make_baseline(name)), got "
                            f"{type(self.baseline).__name__}")
        if space is not None:
            self.baseline.check_observations(space, type(self).__name__)
        # Each lane's time step within its running episode at the next rollout's start.
        self.lane_steps: np.ndarray | None = None
        self.masked = False  # act among env.legal_actions_mask (set by an algorithm that learns so)
        # lane -> (action, stored action, log_prob, value, state) of the lane's last plan
        self._steps: dict[int, tuple] = {}
        self.action_space = None  # one env's, bound at the first plan (compute_actions clips)

    # -- acting ------------------------------------------------------------------------------------
    def states_tensor(self, states: Any) -> Any:
        """Observations as tensors on the policy's device, in the dtype the network reads
        (:func:`input_dtypes`): float32 (normalised if asked), or for an extractor ``uint8``
        pixels as they are (it scales them) and discrete observations as int64 (it one-hots
        them); a dict or tuple of observations leaf by leaf."""
        dtypes = self.__dict__.get("_input_dtypes")
        if dtypes is None:
            space = getattr(self.model, "observation_space", None)
            dtypes = torch.float32 if space is None else \
                input_dtypes(space, self.model.extractor is not None)
            self.__dict__["_input_dtypes"] = dtypes
        if is_nested(states):
            return tree_map(self._leaf_tensor, states, dtypes)
        if self.state_rms is not None:
            states = self.state_rms.normalize(states)
        return self._leaf_tensor(states, dtypes)

    def _leaf_tensor(self, x: Any, dtype: Any) -> torch.Tensor:
        return torch.as_tensor(x, dtype=dtype, device=self.device)

    def sample(self, states: Any, action_space: Any, mask: Any = None) -> tuple:
        """For a batch of observations: the actions for the env (Gaussian ones clipped to the
        Box), the actions to store (unclipped), their log-probabilities and the values. While
        ``deterministic``: the most likely actions (the clipped mean), and nothing is drawn
        from ``rng``. ``mask`` (bool, one row per observation; Discrete action spaces only):
        actions among the legal ones."""
        return self.draw(*self.act_outputs(states), action_space, mask)

    def act_outputs(self, states: Any, actor: bool = True) -> tuple:
        """The model's ``act_outputs`` for a batch of raw observations: on the CPU, an MLP's
        through its numpy pass (``numpy_act_outputs``: no torch call overhead), else torch's.
        ``actor=False``: the values are what is needed (numpy's pass leaves the actor out)."""
        if self.device.type == "cpu" and not is_nested(states) \
                and hasattr(self.model, "numpy_act_outputs") and self.model.extractor is None:
            x = self.state_rms.normalize(states) if self.state_rms is not None else states
            outputs = self.model.numpy_act_outputs(np.asarray(x, dtype=np.float32), actor)
            if outputs is not None:
                return outputs
        return self.model.act_outputs(self.states_tensor(states))

    def draw(self, out: np.ndarray, log_std: Any, value: np.ndarray, action_space: Any,
             mask: Any = None) -> tuple:
        """:meth:`sample` from the actor's output ``out`` (logits or means), ``log_std`` (None
        but for a Gaussian) and the values (numpy), by the model's action distribution."""
        dist = self.model.dist
        if self.deterministic:
            return dist.mode(out, action_space, mask), None, None, value
        env_action, stored, log_prob = dist.sample(out, log_std, self.rng, action_space, mask)
        return env_action, stored, log_prob, value

    def record_rewards(self, env: Any) -> None:
        """Follow the discounted return of every lane for reward normalisation (called with
        every recorded step; a no-op without it)."""
        rms = self.reward_rms
        if rms is None:
            return
        reward = np.atleast_1d(np.asarray(env.reward, dtype=np.float64))
        if isinstance(env, VectorEnv):
            stepped = np.asarray(env.stepped, dtype=bool)
            done = np.asarray(env.is_terminated | env.is_truncated, dtype=bool)
        else:
            stepped = None  # one env: it stepped
            done = np.atleast_1d(bool(env.is_terminated or env.is_truncated))
        if self.running_returns is None or self.running_returns.shape != reward.shape:
            self.running_returns = np.zeros(reward.shape)
        returns = self.running_returns * self.gamma + reward
        if stepped is not None and not stepped.all():  # a lane that did not step keeps its own
            returns = np.where(stepped, returns, self.running_returns)
            rms.update(returns[stepped])
        else:
            rms.update(returns)
        self.running_returns = np.where(done, 0.0, returns)

    def reward_scale(self) -> float:
        """What rewards are divided by: the return's standard deviation (1 without
        normalisation)."""
        if self.reward_rms is None:
            return 1.0
        return float(np.sqrt(self.reward_rms.var + self.reward_rms.epsilon))

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
        model_params = _PARAMETERS.get(self.model)
        if model_params is None:
            model_params = _PARAMETERS[self.model] = list(self.model.parameters())
        if any(p.grad is None for p in model_params):
            self.model.relink()  # someone set gradients to None: make them views again
        # optimiser.zero_grad(set_to_none=False) without its per-call bookkeeping: the flat
        # gradients (no graph of their own) zeroed in one call.
        grads = [p.grad for p in params if p.grad is not None]
        if grads:
            torch._foreach_zero_(grads)
        loss.backward()
        if self.max_grad_norm is not None and self.max_grad_norm < math.inf:  # inf: never clip
            clip_grad_norm(params, self.max_grad_norm)
        # optimiser.step(), its kernels called directly (fused Adam; A2C's foreach RMSprop)
        (rmsprop_step if type(optimiser) is torch.optim.RMSprop else adam_step)(optimiser)

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
        if self.reward_rms is not None:  # clipped to +-10 standard deviations, as SB3
            rollout["reward"] = np.clip(rollout["reward"] / self.reward_scale(), -10.0,
                                        10.0).astype(np.float32)
        if not self.baseline.recorded:  # the values were the critic's: the baseline's instead
            valid = rollout["valid"]
            rollout["value"][valid] = self.state_values(
                tree_map(lambda v: v[valid], rollout["state"]), rollout["step"][valid])
        self.lane_steps = carried_steps(rollout, self.lane_steps)
        rollout = self.postprocess(rollout)
        batch = self.batch_of(rollout)
        self.env_steps += int(rollout["valid"].sum())
        return batch, rollout

    def batch_of(self, rollout: dict) -> dict:
        """What ``update`` learns from: the flat batch of the rollout's selected transitions
        (torch tensors on the policy's device, observations normalised; a baseline other than
        the critic also gets the raw observations)."""
        rows = self.select(rollout)
        selected = rows_selector(rows)
        # On the CPU the tensors share the arrays' memory either way; from_numpy is the cheaper.
        tensor = torch.from_numpy if self.device.type == "cpu" else \
            lambda array: torch.as_tensor(array, device=self.device)
        batch = {name: tensor(selected(value)) for name, value in rollout.items()
                 if not is_nested(value) and value.shape[:2] == rows.shape
                 and name not in ("state", "next_state")}
        batch["state"] = convolution_layout(  # once here, not at every minibatch's pass
            self.model.extractors(), self.states_tensor(tree_map(selected, rollout["state"])))
        if "next_state" in rollout:  # for a policy that reads_next_state (raw, leaf by leaf)
            batch["next_state"] = tree_map(
                lambda v: torch.as_tensor(selected(v), device=self.device), rollout["next_state"])
        if not self.baseline.recorded:  # the baseline learns from the raw observations
            batch["raw_state"] = tree_map(lambda v: torch.as_tensor(selected(v)), rollout["state"])
        return batch

    def bootstrap_values(self, container: Any, rows: np.ndarray,
                         steps: np.ndarray) -> np.ndarray:
        """The baseline's values (the critic's by default) of the next states of ``rows``, at
        the episode time steps ``steps`` (where a chain ends without a terminal step: a
        truncation, or the rollout's end)."""
        return self.state_values(container.take("next_state", rows), steps)

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
        if self.reward_rms is not None:
            rms = self.reward_rms
            state["reward_rms"] = {"mean": rms.mean, "var": rms.var, "count": rms.count,
                                   "running_returns": self.running_returns}
        return state

    def validate(self, env: Any) -> None:
        if not self.masked and (hasattr(type(env), "legal_actions_mask")
                                or hasattr(env, "legal_actions_mask")):
            raise TypeError(
                f"{type(self).__name__} acts without legal-action masks, but {env!r} has them "
                "(legal_actions_mask): it would choose illegal actions; PPO acts and learns "
                "with masks (make_ppo_agent on this env)")

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
        if self.reward_rms is not None:
            rms = state["reward_rms"]
            self.reward_rms.mean, self.reward_rms.var = np.array(rms["mean"]), np.array(rms["var"])
            self.reward_rms.count = float(rms["count"])
            returns = rms["running_returns"]
            self.running_returns = None if returns is None else np.array(returns)
