"""What an on-policy learner answers to :mod:`stagerl.distributed`: the weights its rollout
workers act with (``get_weights``, ``set_weights``; ``on_policy`` is True), and for A3C's plan
the gradients a worker computes on its own rollout (``compute_gradients``) and the learner
applies (``apply_gradients``). Registered when :mod:`stagerl.algorithms.on_policy` is imported.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from stagerl.algorithms.on_policy.base import OnPolicy
from stagerl.core.dispatch import DEFAULT_PRECEDENCE
from stagerl.policies.training_steps import apply_gradients, compute_gradients
from stagerl.policies.weights import get_weights, on_policy, set_weights, weights_on_cpu

__all__: list[str] = []


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
