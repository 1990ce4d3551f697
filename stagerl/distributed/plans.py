"""The execution plans stagerl's algorithms train with on Ray workers, a few lines each.

A :class:`~stagerl.distributed.Learner` runs the plan its policy asks for
(:func:`default_plan`), or the one it is given (``Learner(..., plan=my_plan)``, a function of
the learner returning the plan's last iterator)::

    def replay_plan(learner):                      # DQN and other off-policy learners
        store = (ParallelRollouts(learner, mode="async")
                 .for_each(StoreToReplayBuffer(learner))
                 .for_each(UpdateTargetNetwork(learner)))
        train = Replay(learner).for_each(TrainOneStep(learner))
        return Concurrently([store, train], mode="round_robin", output_indexes=[1],
                            round_robin_weights=[1, "*"])

After each stored batch the target network follows as its schedule says, then every sample the
controller allows is learned from: the order of the loop in one process (a step is recorded,
``optimise`` updates the target network, then learns), with the workers acting meanwhile.
"""

from __future__ import annotations

from typing import Any

from stagerl.distributed.operators import (
    ApplyGradients,
    AsyncGradients,
    ConcatBatches,
    ParallelRollouts,
    Replay,
    StoreToReplayBuffer,
    TrainOneStep,
    UpdateTargetNetwork,
)
from stagerl.distributed.plan import Concurrently, PlanIterator
from stagerl.distributed.protocol import defines, learn_on_batch, on_policy

__all__ = ["replay_plan", "stream_plan", "on_policy_plan", "a3c_plan", "default_plan", "PLANS"]


def replay_plan(learner: Any) -> PlanIterator:
    """Off-policy (DQN): store each worker's batches as they come (in its order), keep the
    target network on schedule, learn from every sample the controller allows."""
    store = (ParallelRollouts(learner, mode="async")
             .for_each(StoreToReplayBuffer(learner))
             .for_each(UpdateTargetNetwork(learner)))
    train = Replay(learner).for_each(TrainOneStep(learner))
    return Concurrently([store, train], mode="round_robin", output_indexes=[1],
                        round_robin_weights=[1, "*"])


def stream_plan(learner: Any) -> PlanIterator:
    """Off-policy, for a policy that learns by ``optimise`` only (no ``learn_on_batch``): each
    worker's batches as they come (in its order), each inserted and learned from as the
    controller allows."""
    return ParallelRollouts(learner, mode="async").for_each(TrainOneStep(learner))


def on_policy_plan(learner: Any) -> PlanIterator:
    """On-policy (PPO, A2C, VPG, TRPO, ERWR, REPS): bulk-synchronous rounds with the current
    weights, concatenated into one rollout, one training step on it."""
    return (ParallelRollouts(learner, mode="bulk_sync")
            .for_each(ConcatBatches(learner.steps_per_batch * learner.pool.workers))
            .for_each(TrainOneStep(learner)))


def a3c_plan(learner: Any) -> PlanIterator:
    """A3C: A2C's plan with asynchronous gradients. Each worker computes the gradients of the
    loss on its own rollout; the learner applies them as they arrive (stale ones by the rule
    of the policy's ``stale_gradients`` and ``gradient_staleness``, see
    :class:`~stagerl.distributed.operators.ApplyGradients`)."""
    config = getattr(learner.agent.policy, "config", None)
    return AsyncGradients(learner).for_each(ApplyGradients(
        learner, getattr(config, "gradient_staleness", None),
        getattr(config, "stale_gradients", "drop")))


#: The plans by the names a policy type may ask for (its class attribute ``execution_plan``).
PLANS = {"replay": replay_plan, "stream": stream_plan, "on_policy": on_policy_plan,
         "a3c": a3c_plan}


def default_plan(policy: Any) -> Any:
    """The plan a policy trains with on workers: the one its type names
    (``execution_plan = "a3c"``), else :func:`on_policy_plan` for on-policy learners,
    :func:`replay_plan` for those that learn from one sample at a time (``learn_on_batch``:
    DQN) and :func:`stream_plan` for the others."""
    named = getattr(type(policy), "execution_plan", None)
    if named is not None:
        if named not in PLANS:
            raise ValueError(f"{type(policy).__name__}.execution_plan must be one of "
                             f"{sorted(PLANS)}, got {named!r}")
        return PLANS[named]
    if on_policy(policy):
        return on_policy_plan
    return replay_plan if defines(learn_on_batch, policy) else stream_plan
