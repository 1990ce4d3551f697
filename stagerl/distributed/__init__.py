"""Scale-out on Ray: rollout workers running the ordinary loop, feeding a central trajectory.

``import stagerl.distributed`` needs neither Ray nor torch; the names below load on first use,
and only the Ray-backed ones (``WorkerPool``, ``Learner`` with a pool, ``learner_for``,
``train``, ``connect``) need Ray, raising ``ImportError`` with the install command without it.
See ``docs/distributed.md``.

* :class:`RolloutWorker`: the stagerl loop with a CPU copy of the policy, handing over
  :class:`RolloutBatch` es of episode :class:`Fragment` s (plain Python, no Ray needed).
* :class:`WorkerPool`: rollout workers as Ray actors; dead ones are replaced.
* :class:`Learner`: bulk-inserts the batches into the central agent's trajectory, learns as its
  controller allows, broadcasts new weights once per version.
* :func:`learner_for` and :func:`train`: the same for a named experiment.
* :func:`get_weights`, :func:`set_weights`, :func:`set_env_steps`, :func:`on_policy`: what a
  policy type exchanges with its workers (generic functions to extend).
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
    "learner_for",
    "train",
    "connect",
    "require_ray",
    "worker_seed",
    "get_weights",
    "set_weights",
    "set_env_steps",
    "on_policy",
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
    "WorkerLanes": "experiment",
    "learner_for": "experiment",
    "train": "experiment",
    "get_weights": "protocol",
    "set_weights": "protocol",
    "set_env_steps": "protocol",
    "on_policy": "protocol",
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
