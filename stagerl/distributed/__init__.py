"""Scale-out on Ray: rollout workers running the ordinary loop, feeding a central trajectory.

``import stagerl.distributed`` needs neither Ray nor torch; the names below load on first use,
and only the Ray-backed ones (``WorkerPool``, ``Learner`` with a pool, ``connect``) need Ray,
raising ``ImportError`` with the install command without it. Named experiments on Ray workers
are one layer up: ``stagerl.experiments.learner_for`` and ``stagerl.experiments.train(name,
ray_workers=N)``. See ``docs/distributed.md``.

* :class:`RolloutWorker`: the stagerl loop with a CPU copy of the policy, handing over
  :class:`RolloutBatch` es of episode :class:`Fragment` s (plain Python, no Ray needed).
* :class:`WorkerPool`: rollout workers as Ray actors; dead ones are replaced.
* :class:`Learner`: runs an execution plan over the workers: bulk-inserts the batches into the
  central agent's trajectory, learns as its controller allows, broadcasts new weights once per
  version.
* Execution plans (RLlib's): the operators :func:`ParallelRollouts` (bulk-synchronous or
  asynchronous), :class:`ConcatBatches`, :class:`StoreToReplayBuffer`, :func:`Replay`,
  :class:`TrainOneStep`, :class:`UpdateTargetNetwork`, :func:`AsyncGradients`,
  :class:`ApplyGradients`, :func:`Concurrently` and :func:`StandardMetricsReporting`, composed
  into :func:`replay_plan` (DQN), :func:`on_policy_plan` (PPO and the policy-gradient methods)
  and :func:`a3c_plan`.
* :class:`WorkerLanes`: the env the central agent is built for (one lane per worker sub-env).
* :class:`EpisodeReplay`: tells the central side's hooks the workers' episodes as they end.
* :func:`get_weights`, :func:`set_weights`, :func:`set_env_steps`, :func:`on_policy` (and, for
  the plans' finer steps, :func:`learn_on_batch`, :func:`update_target`,
  :func:`compute_gradients`, :func:`apply_gradients`): what a policy type exchanges with its
  workers (generic functions to extend).
"""

from __future__ import annotations

import importlib

__all__ = [
    "RolloutWorker",
    "RolloutWorkerError",
    "RolloutBatch",
    "Fragment",
    "RecordOnly",
    "WorkerPool",
    "Learner",
    "WorkerLanes",
    "EpisodeReplay",
    "connect",
    "require_ray",
    "worker_seed",
    "get_weights",
    "set_weights",
    "set_env_steps",
    "on_policy",
    "learn_on_batch",
    "update_target",
    "compute_gradients",
    "apply_gradients",
    "ParallelRollouts",
    "AsyncGradients",
    "Replay",
    "ConcatBatches",
    "StoreToReplayBuffer",
    "TrainOneStep",
    "UpdateTargetNetwork",
    "ApplyGradients",
    "Concurrently",
    "StandardMetricsReporting",
    "PlanIterator",
    "Operator",
    "NOT_READY",
    "Batches",
    "ReplaySample",
    "Gradients",
    "TrainResult",
    "replay_plan",
    "stream_plan",
    "on_policy_plan",
    "a3c_plan",
    "default_plan",
]

_WHERE = {
    "RolloutWorker": "worker",
    "RolloutWorkerError": "worker",
    "worker_seed": "worker",
    "RolloutBatch": "batches",
    "Fragment": "batches",
    "RecordOnly": "batches",
    "WorkerPool": "pool",
    "connect": "pool",
    "require_ray": "pool",
    "Learner": "learner",
    "WorkerLanes": "lanes",
    "EpisodeReplay": "replay",
    "get_weights": "protocol",
    "set_weights": "protocol",
    "set_env_steps": "protocol",
    "on_policy": "protocol",
    "learn_on_batch": "protocol",
    "update_target": "protocol",
    "compute_gradients": "protocol",
    "apply_gradients": "protocol",
    **dict.fromkeys(("ParallelRollouts", "AsyncGradients", "Replay", "ConcatBatches",
                     "StoreToReplayBuffer", "TrainOneStep", "UpdateTargetNetwork",
                     "ApplyGradients"), "operators"),
    **dict.fromkeys(("Concurrently", "StandardMetricsReporting", "PlanIterator", "Operator",
                     "NOT_READY", "Batches", "ReplaySample", "Gradients", "TrainResult"),
                    "plan"),
    **dict.fromkeys(("replay_plan", "stream_plan", "on_policy_plan", "a3c_plan",
                     "default_plan"), "plans"),
}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'stagerl.distributed' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"stagerl.distributed.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
