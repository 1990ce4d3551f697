"""The weights that the DQN family and the on-policy algorithms send to their rollout workers.

Their ``state_dict`` is not what a worker needs: it carries the exploration rng (every worker
would then draw the same random actions), optimiser moments and a target network, which only
learning uses. A worker needs the network it acts with and, for DQN, the env steps taken by all
workers, from which its exploration rate and ``learning_starts`` follow as in one process.
Imported by the learner and the workers (it needs torch), not by ``import stagerl.distributed``.
"""

from __future__ import annotations

import torch

from stagerl.algorithms.dqn import DQNPolicy
from stagerl.algorithms.on_policy import OnPolicy
from stagerl.core.dispatch import DEFAULT_PRECEDENCE
from stagerl.core.env import VectorEnv
from stagerl.distributed.protocol import get_weights, on_policy, set_env_steps, set_weights

__all__: list[str] = []


def _cpu(state: dict) -> dict:
    return {name: value.detach().to("cpu", copy=True) for name, value in state.items()}


# ---- DQN: the online network; exploration follows the env steps of all workers ---------------


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_dqn(policy: DQNPolicy):
    return {"network": _cpu(policy.network.state_dict())}


@set_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_weights_dqn(policy: DQNPolicy, weights, env_steps, env):
    policy.network.load_state_dict(weights["network"])
    policy._acting_stale = True  # the numpy acting copy is refreshed at the next act
    # One act of a vector env is num_envs env steps and one explorer step, as in one process.
    num_envs = env.num_envs if isinstance(env, VectorEnv) else 1
    policy.env_steps = int(env_steps)
    policy.explorer.step = int(env_steps) // num_envs + 1


@set_env_steps.dispatch(precedence=DEFAULT_PRECEDENCE)
def _set_env_steps_dqn(policy: DQNPolicy, env_steps):
    policy.env_steps = int(env_steps)  # the target network's updates and beta follow it


# ---- on-policy: the actor-critic (and the observation statistics it acts with) ---------------


@get_weights.dispatch(precedence=DEFAULT_PRECEDENCE)
def _get_weights_on_policy(policy: OnPolicy):
    weights = {"model": _cpu(policy.model.state_dict())}
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
