"""Recurrent PPO: PPO with an LSTM or GRU actor-critic, trained on sequences that start from
the state stored with their first step.

Acting, per act of a vector env (one lane per sub-env)::

    lane k:  state in h  ->  RNN(observation, h) -> action, log_prob, value, state out h'
             stored with the step: observation, action, reward, ..., log_prob, value, h

A lane starts again from the initial state (zeros) where its episode starts. Learning, every
``n_steps`` steps of each sub-env: the rollout gets GAE advantages (bootstrapped where an
episode was cut, with the critic's value of the true next state after the stored state's step),
then each lane's steps are cut into sequences at episode starts and every ``max_seq_len``
steps (RLlib's ``max_seq_len``); ``n_epochs`` passes over the sequences in minibatches of
about ``batch_size`` steps, each a gradient step on PPO's clipped loss over the real steps
(``mask``)::

    out, V = RNN unrolled over each sequence from its initial_state (no reset inside: none
             crosses an episode start)
    ratio = exp(log_prob(out, a) - log_prob_collected)        == 1 at the first step
    loss = -mean(min(ratio A, clip(ratio) A)) + vf_coef mean((V - return)^2) - ent_coef H

Because the state each sequence starts from is the one that went into its first step at
collection time, the first gradient step sees exactly the collection's log-probabilities
(tested: |ratio - 1| < 1e-5 at every step, episode boundaries included).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from torch.nn import functional as F

from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.on_policy.base import OnPolicy
from stagerl.algorithms.on_policy.networks import RunningMeanStd, check_spaces
from stagerl.algorithms.on_policy.ppo import scheduled
from stagerl.algorithms.on_policy.recurrent_config import RecurrentPPOConfig
from stagerl.algorithms.on_policy.recurrent_networks import RecurrentActorCritic
from stagerl.algorithms.on_policy.rollout import check_rollout_size, rollout_trajectory
from stagerl.core.actions import _compute_actions, acting_as, as_batch, checked_state, one_or_batch
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan, push
from stagerl.core.env import VectorEnv
from stagerl.core.fallbacks import refuse_observations
from stagerl.core.stages import PostActStage
from stagerl.policies.agent import Agent, record_step
from stagerl.policies.recurrent import RecurrentPolicy, plan_recurrent
from stagerl.utils.devices import resolve_device
from stagerl.utils.networks import clip_grad_norm
from stagerl.utils.numpy_rnn import weights_changed
from trajectories import STATE_TRACE, chop_into_sequences

__all__ = ["RecurrentPPOConfig", "RecurrentPPOPolicy", "recurrent_ppo_loss",
           "make_recurrent_ppo_agent"]


def recurrent_ppo_loss(model: RecurrentActorCritic, batch: dict, clip_range: float,
                       clip_range_vf: float | None, ent_coef: float, vf_coef: float,
                       normalize_advantage: bool) -> tuple:
    """PPO's clipped loss on a minibatch of sequences (``(S, T, ...)`` tensors, ``mask`` on
    the real steps), unrolled from each sequence's ``initial_state``; and its parts."""
    out, values, _ = model.unroll(batch["state"], batch["initial_state"])
    mask = batch["mask"]
    log_prob, entropy = model.log_prob_entropy(out[mask], batch["action"][mask], ent_coef > 0)
    advantage = batch["advantage"][mask]
    if normalize_advantage and len(advantage) > 1:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    ratio = torch.exp(log_prob - batch["log_prob"][mask])
    clipped = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    policy_loss = -torch.min(advantage * ratio, advantage * clipped).mean()
    values = values[mask]
    if clip_range_vf is not None:
        old = batch["value"][mask]
        values = old + torch.clamp(values - old, -clip_range_vf, clip_range_vf)
    value_loss = F.mse_loss(values, batch["return"][mask])
    loss = policy_loss + vf_coef * value_loss
    if ent_coef > 0:
        loss = loss - ent_coef * entropy.mean()
    return loss, {"policy_loss": policy_loss, "value_loss": value_loss}


class RecurrentPPOPolicy(OnPolicy, RecurrentPolicy):
    """Recurrent PPO (see the module docstring). Build one with
    :func:`make_recurrent_ppo_agent`.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.algorithms import RecurrentPPOConfig, make_recurrent_ppo_agent
        >>> from stagerl.algorithms.on_policy import make_vector_env
        >>> env = make_vector_env("CartPole-v1", num_envs=4, seed=0)
        >>> config = RecurrentPPOConfig(n_steps=16, batch_size=32, n_epochs=2,
        ...                             rnn_hidden_size=8)
        >>> agent = make_recurrent_ppo_agent(env, config, seed=0, device="cpu")
        >>> _ = rl.run(agent, env, rl.StopAfterNSteps(128, progress=False))
        >>> agent.policy.n_updates, agent.policy.memory.values.shape
        (2, (4, 4, 8))
    """

    def __init__(self, model: RecurrentActorCritic, config: RecurrentPPOConfig,
                 action_space: Any, rng: Any = None, observation_size: int | None = None):
        # Fused: one kernel steps every tensor (torch's default steps them one by one on the
        # CPU). Acting reads what it writes: numpy views of the weights on the CPU, else copies
        # taken again after each step (weights_changed).
        device = next(model.parameters()).device
        optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate, eps=1e-5,
                                     fused=device.type in ("cpu", "cuda"))
        super().__init__(model, optimiser, config.gamma, config.gae_lambda,
                         config.max_grad_norm, config.normalize_states, rng,
                         config.normalize_rewards)
        self.config = config
        self.action_space = action_space
        # The previous action's size when it is an input (0: it is not), kept in the lane's
        # state as one more row after the RNNs' (see rnn_prev_action).
        self.prev_action_size = (int(action_space.n) if model.discrete else
                                 int(action_space.shape[0])) if config.rnn_prev_action else 0
        self.observation_size = model.n_inputs - self.prev_action_size \
            if observation_size is None else int(observation_size)
        if self.state_rms is not None:  # of the observations (not the previous actions)
            self.state_rms = RunningMeanStd((self.observation_size,))
        k, hidden = model.recurrent_state_shape
        self.recurrent_state_shape = (k + 1, hidden) if self.prev_action_size else (k, hidden)

    def progress_remaining(self) -> float:
        """1 at the start of the run, 0 at ``total_steps`` env steps (1 without them)."""
        steps = self.config.total_steps
        return 1.0 - self.env_steps / steps if steps else 1.0

    def gradient_step(self, optimiser: Any, loss: torch.Tensor) -> None:
        """Zero the gradients, backward, clip the gradient norm (if ``max_grad_norm``), step."""
        params = [p for group in optimiser.param_groups for p in group["params"]]
        for p in params:  # optimiser.zero_grad(set_to_none=True) without its bookkeeping
            p.grad = None
        loss.backward()
        if self.max_grad_norm is not None and self.max_grad_norm < float("inf"):
            clip_grad_norm(params, self.max_grad_norm)  # torch's clip_grad_norm_, to the bit
        adam_step(optimiser)  # optimiser.step(), its fused kernel called directly
        weights_changed(params)

    # -- learning ----------------------------------------------------------------------------
    def batch_of(self, rollout: dict) -> dict:
        """The rollout's steps as sequences (see :func:`trajectories.chop_into_sequences`):
        each lane's steps in time order, cut where an episode starts (after a chain end) and
        every ``max_seq_len`` steps, each from the state stored with its first step (the
        initial state where that step starts an episode); torch tensors on the policy's
        device."""
        valid, chain_end = rollout["valid"], rollout["chain_end"]
        lane, t = np.nonzero(valid.T)  # lane by lane, each in time order
        starts = (t == 0) | chain_end[np.maximum(t - 1, 0), lane]
        columns = {name: rollout[name][t, lane]
                   for name in ("action", "log_prob", "value", "advantage", "return")}
        stored = rollout[STATE_TRACE][t, lane]
        columns["state"] = self.inputs(rollout["state"][t, lane], stored)
        seqs = chop_into_sequences(np.cumsum(starts), columns, self.config.max_seq_len,
                                   state=stored)
        # A sequence whose first step starts an episode inside the rollout starts from the
        # initial state, as acting must have: a reset off by a step would show as ratios
        # away from 1. (A lane's first step in the rollout may continue an episode: its
        # stored state is taken as it is.)
        episode_start = starts & (t > 0)
        from_start = episode_start[seqs["rows"][:, 0]]
        seqs["initial_state"][from_start] = self.initial_state(int(from_start.sum()))
        seqs["initial_state"] = seqs["initial_state"][:, :self.model.recurrent_state_shape[0]]
        return {name: torch.as_tensor(seqs[name], device=self.device)
                for name in (*columns, "mask", "seq_lens", "initial_state")}

    def update(self, seqs: dict) -> None:
        c = self.config
        progress = self.progress_remaining()
        for group in self.optimiser.param_groups:
            group["lr"] = scheduled(c.learning_rate, c.learning_rate_schedule, progress)
        clip_range = scheduled(c.clip_range, c.clip_range_schedule, progress)
        for _ in range(c.n_epochs):
            for minibatch in self.minibatches(seqs):
                loss, parts = recurrent_ppo_loss(self.model, minibatch, clip_range,
                                                 c.clip_range_vf, c.ent_coef, c.vf_coef,
                                                 c.normalize_advantage)
                self.gradient_step(self.optimiser, loss)
            if c.target_kl is not None:
                if self.diagnostics(seqs, clip_range)["approx_kl"] > 1.5 * c.target_kl:
                    break
        parts.update(self.diagnostics(seqs, clip_range))
        self.stats = {name: value.item() for name, value in parts.items()}

    def minibatches(self, seqs: dict):
        """One epoch's minibatches: the sequences shuffled and split into groups of about
        ``batch_size`` steps, each cut to its longest sequence."""
        seq_lens = seqs["seq_lens"].cpu().numpy()
        n_minibatches = max(1, round(int(seq_lens.sum()) / self.config.batch_size))
        order = self.rng.permutation(len(seq_lens))
        for group in np.array_split(order, min(n_minibatches, len(seq_lens))):
            width = int(seq_lens[group].max())  # no position past the longest sequence
            index = torch.as_tensor(group, device=self.device)
            yield {name: value[index][:, :width] if value.dim() > 1 and name != "initial_state"
                   else value[index] for name, value in seqs.items()}

    @torch.no_grad()
    def diagnostics(self, seqs: dict, clip_range: float) -> dict:
        """The entropy, the approximate KL from the acting policy and the fraction of clipped
        ratios over every step of the rollout."""
        out, _, _ = self.model.unroll(seqs["state"], seqs["initial_state"])
        mask = seqs["mask"]
        log_prob, entropy = self.model.log_prob_entropy(out[mask], seqs["action"][mask])
        log_ratio = log_prob - seqs["log_prob"][mask]
        ratio = torch.exp(log_ratio)
        return {"entropy": entropy.mean(), "approx_kl": ((ratio - 1.0) - log_ratio).mean(),
                "clip_fraction": ((ratio - 1.0).abs() > clip_range).float().mean()}

    def inputs(self, observations: np.ndarray, states: np.ndarray) -> np.ndarray:
        """The network's inputs for raw observations and the lanes' states that go with them:
        the normalised observations (and the previous action kept in the state)."""
        x = self.state_rms.normalize(observations) if self.state_rms is not None else \
            np.asarray(observations, np.float32)
        if not self.prev_action_size:
            return x
        k = self.model.recurrent_state_shape[0]
        return np.concatenate([x, states[..., k, :self.prev_action_size]], axis=-1)

    def with_prev_actions(self, rnn_states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The lanes' states after acting: the RNNs' states and, when it is an input, the
        action just taken (one-hot for discrete actions)."""
        if not self.prev_action_size:
            return rnn_states
        out = np.zeros((len(rnn_states), *self.recurrent_state_shape), dtype=np.float32)
        out[:, :-1] = rnn_states
        actions = np.asarray(actions)
        out[:, -1, :self.prev_action_size] = np.eye(self.prev_action_size)[actions] \
            if self.model.discrete else actions.reshape(len(actions), -1)
        return out

    def bootstrap_values(self, container: Any, rows: np.ndarray,
                         steps: np.ndarray) -> np.ndarray:
        """``V(next state)`` after the stored state's step: the RNN unrolled over the row's
        state and its next state from the state stored with the row."""
        stored = container.take(STATE_TRACE, rows)
        after = self.with_prev_actions(stored[:, :self.model.recurrent_state_shape[0]],
                                       container.take("action", rows))
        x = np.stack([self.inputs(container.take("state", rows), stored),
                      self.inputs(container.take("next_state", rows), after)], axis=1)
        k = self.model.recurrent_state_shape[0]
        with torch.no_grad():
            _, values, _ = self.model.unroll(torch.as_tensor(x, device=self.device),
                                             torch.as_tensor(stored[:, :k], device=self.device))
        return values[:, 1].cpu().numpy()


@_compute_actions.dispatch(precedence=DEFAULT_PRECEDENCE)
def _compute_actions_recurrent_ppo(policy: RecurrentPPOPolicy, observations, state,
                                   deterministic):
    model, name = policy.model, "RecurrentPPOPolicy"
    batch, single = as_batch(observations, (policy.observation_size,), name)
    state = checked_state(name, state, policy.recurrent_state_shape, len(batch), single,
                          policy.initial_state)
    k = model.recurrent_state_shape[0]
    out, log_std, value, rnn_state = model.act_outputs(policy.inputs(batch, state), state[:, :k])
    with acting_as(policy, deterministic):
        actions, stored, log_prob, value = policy.draw(out, log_std, value, policy.action_space)
    new_state = policy.with_prev_actions(rnn_state, actions if stored is None else stored)
    extra = {"value": value}
    if log_prob is not None:
        extra["log_prob"] = log_prob
        if not model.discrete:  # what the log-probability is of: the draw before clipping
            extra["unclipped_action"] = stored
    return one_or_batch(actions, new_state, extra, single)


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_recurrent_ppo(policy: RecurrentPPOPolicy, env):
    # As every recurrent policy plans (one of its two bases would be ambiguous with the other).
    return plan_recurrent(policy, env)


def _record_recurrent_ppo_step(agent: Any, env: Any, action: Any) -> None:
    # The lane's own last plan gives the step's log-probability, value and state (another
    # player of a game may have planned since); a Gaussian's unclipped draw is stored.
    policy = agent.policy
    policy.record_rewards(env)  # the discounted returns normalize_rewards divides by
    unclipped = policy.memory.extra.get("unclipped_action")
    if unclipped is not None:
        drawn = unclipped[policy.lanes_of(env)]
        action = drawn if isinstance(env, VectorEnv) else drawn[0]
    record_step(agent, env, action)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_recurrent_ppo_step(agent: Agent[RecurrentPPOPolicy, object], stage: PostActStage,
                             env, action):
    _record_recurrent_ppo_step(agent, env, action)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_recurrent_ppo_vector_step(agent: Agent[RecurrentPPOPolicy, object],
                                    stage: PostActStage, env: VectorEnv, action):
    _record_recurrent_ppo_step(agent, env, action)  # as specific as OnPolicy's vector method


refuse_observations(RecurrentPPOPolicy)


def make_recurrent_ppo_agent(env: Any, config: RecurrentPPOConfig | None = None, seed: int = 0,
                             device: Any = "auto") -> Agent:
    """An Agent that learns with recurrent PPO in ``env`` (a ``GymEnv`` or ``GymVectorEnv``;
    a vector env with SAME_STEP autoreset, ``make_vector_env``, steps every sub-env in every
    act). Its trajectory stores the state that went into each step (``recurrent_state``).

    Raises ``ValueError`` when a rollout is smaller than ``batch_size``, ``TypeError`` for an
    env whose spaces it cannot act in.
    """
    config = RecurrentPPOConfig() if config is None else config
    who = "make_recurrent_ppo_agent"
    if not isinstance(config, RecurrentPPOConfig):
        raise TypeError(f"{who} needs a RecurrentPPOConfig, got {type(config).__name__}")
    state_space, action_space, n_envs = check_spaces(env, who)
    if not isinstance(state_space, gymnasium.spaces.Box) or len(state_space.shape) != 1:
        raise TypeError(f"{who} reads flat Box observations, got {state_space}; flatten them "
                        "with gymnasium's FlattenObservation wrapper")
    if not isinstance(action_space, (gymnasium.spaces.Discrete, gymnasium.spaces.Box)):
        raise TypeError(f"{who} acts in Discrete or float Box action spaces, got "
                        f"{action_space}")
    if config.features_extractor not in ("auto", "mlp"):
        raise ValueError(f"{who}: the recurrent actor-critic reads the observations with its "
                         f"own encoder (net_arch), got features_extractor="
                         f"{config.features_extractor!r}; leave it 'auto'")
    check_rollout_size(who, config.n_steps, n_envs, config.batch_size)
    prev = 0
    if config.rnn_prev_action:
        prev = int(action_space.n) if isinstance(action_space, gymnasium.spaces.Discrete) \
            else int(action_space.shape[0])
        if prev > config.rnn_hidden_size:
            raise ValueError(f"{who}: rnn_prev_action keeps the previous action in a row of "
                             f"the state, which has rnn_hidden_size={config.rnn_hidden_size} "
                             f"entries, fewer than the action's {prev}; raise rnn_hidden_size")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = RecurrentActorCritic(
            state_space.shape[0] + prev, action_space, config.rnn, config.rnn_hidden_size,
            config.shared_rnn, config.net_arch, config.actor_net_arch, config.critic_net_arch,
            config.log_std_init, config.ortho_init)
    model = model.to(resolve_device(device))
    policy = RecurrentPPOPolicy(model, config, action_space, rng=seed,
                                observation_size=state_space.shape[0])
    trajectory = rollout_trajectory(env, config.n_steps, extra={
        STATE_TRACE: (np.float32, policy.recurrent_state_shape)})
    return Agent(policy, trajectory)
