"""How the DQN family learns: at PostAct the target network follows the online one every
``target_update_interval`` env steps; then, whenever the trajectory's controller allows (every
``train_freq`` transitions once learning has started), one *burst* of ``gradient_steps``
gradient steps, each :func:`dqn_update`: the TD target (:func:`td_target`), the loss and the
step. A burst's TD targets are computed together where the target network allows it (see
:func:`learn_burst`); prioritized replay writes each batch's priorities back before the next
batch is drawn.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn.policy import DQNPolicy
from stagerl.algorithms.dqn.replay import Burst, as_tensors, write_priorities
from stagerl.algorithms.torch_state import denormals_flushed
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, optimise
from stagerl.core.stages import PostActStage
from stagerl.logging.scalars import is_logging_scalars, log_scalar
from stagerl.policies.training_steps import learn_on_batch, update_target
from stagerl.utils.networks import clip_grad_norm
from trajectories.nested import tree_map

__all__ = ["learn_burst", "td_target", "dqn_update", "clip_grad_norm", "project_distribution"]


@optimise.dispatch(precedence=DEFAULT_PRECEDENCE)
def _optimise_dqn(policy: DQNPolicy, stage: PostActStage, trajectory):
    policy.update_target_if_due()
    for burst in trajectory:  # the controller allows one burst per train_freq transitions
        _learn_on_burst(policy, burst, trajectory)


# The same two steps for execution plans on Ray workers (UpdateTargetNetwork; Replay, then
# TrainOneStep): see stagerl.distributed.plans.
@update_target.dispatch(precedence=DEFAULT_PRECEDENCE)
def _update_target_dqn(policy: DQNPolicy):
    policy.update_target_if_due()


@learn_on_batch.dispatch(precedence=DEFAULT_PRECEDENCE)
def _learn_on_burst(policy: DQNPolicy, burst, trajectory):
    with denormals_flushed(policy.device):
        learn_burst(policy, burst, trajectory)
    if is_logging_scalars():  # once a burst, for the loggers the experiment has
        log_scalar("losses/td_loss", policy.loss)
        explorer = policy.explorer
        log_scalar("charts/epsilon", explorer.epsilon_at(explorer.step))


def learn_burst(policy: DQNPolicy, burst: Burst, trajectory: Any) -> None:
    """The gradient steps of one burst; prioritized replay writes its priorities back."""
    config = policy.config
    for group in policy.q.optimiser.param_groups:  # the step size of this burst (its schedule)
        group["lr"] = policy.learning_rate
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
                next_outputs = _joined([policy.target(p["next_state"]) for p in parts])
            next_outputs = next_outputs.split(size)
        else:
            targets = _joined([td_target(policy, part) for part in parts]).split(size)
    for batch, target, next_output in zip(batches, targets, next_outputs, strict=True):
        dqn_update(policy, batch, td_target(policy, batch, next_output) if target is None
                   else target)
    policy._acting_stale = True  # the numpy copy of the weights is refreshed at the next act


def _parts(rows: dict, batch_size: int, about: int = 1024) -> list[dict]:
    size = batch_size * max(1, about // batch_size)
    total = rows["reward"].shape[0]
    if total <= size:  # one part: the rows themselves
        return [rows]
    return [{name: tree_map(lambda c: c[i:i + size], v)  # noqa: B023
             for name, v in rows.items()} for i in range(0, total, size)]


def _joined(outputs: list[torch.Tensor]) -> torch.Tensor:
    return outputs[0] if len(outputs) == 1 else torch.cat(outputs)  # one part: no copy


@torch.no_grad()
def td_target(policy: DQNPolicy, batch: dict, next_output: torch.Tensor | None = None):
    """The TD target of each row: ``r + gamma^n (1 - terminal) Q_target(s', a')`` with
    ``a' = argmax Q_target(s', .)`` (double DQN: ``argmax Q_online(s', .)``); for C51 the
    distribution of that return projected onto the support.

    ``batch`` holds tensors on the policy's device: ``reward`` (n-step sums), ``next_state``,
    ``terminal`` (a float), and ``discount`` (``gamma ** n`` per row) when n-step.
    ``next_output`` is the target network's output at ``next_state`` when already computed.

    With ``next_legal_actions_mask`` (bool, one per action; a masked DQN's batches have it)
    ``a'`` is the best *legal* action. A next state with no legal action (a game's last board,
    or one seen while another player was to move, cut by a time limit) is worth 0: such a row
    is not bootstrapped, whatever its ``terminal``.
    """
    config, online = policy.config, policy.network
    target = policy.target if policy.target is not None else online
    next_state, reward = batch["next_state"], batch["reward"]
    # Terminated: nothing beyond. Truncated by a time limit: terminal is False, so bootstrapped.
    bootstrap = batch.get("discount", config.gamma) * (1.0 - batch["terminal"])
    if next_output is None:
        next_output = target(next_state)
    legal = batch.get("next_legal_actions_mask")
    if config.double:  # the online network picks the next action, the target network rates it
        choice = online.q_values(next_state)
    else:
        choice = online.values_of(next_output)
    if legal is not None:
        choice = choice.masked_fill(~legal, -math.inf)
        bootstrap = bootstrap * legal.any(dim=1)  # no legal next action: worth 0
    next_action = choice.argmax(dim=1, keepdim=True)
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
    max_norm = policy.config.max_grad_norm
    if max_norm is not None and max_norm < math.inf:  # None or inf: never clip
        clip_grad_norm(parameters, max_norm)
    adam_step(policy.q.optimiser)  # optimiser.step(), its Python skipped where that is equal
    policy.changed_since_sync = True
    policy.loss = loss.detach()  # for logging; reading it waits for the device
    if weight is None:
        return None
    return (losses if policy.network.distributional else q - target).detach().abs()


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
