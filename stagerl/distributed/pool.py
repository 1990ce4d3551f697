"""`WorkerPool`: rollout workers as Ray actors, checked before any starts, replaced when they die.

Everything a bad request can get wrong is refused before the first actor starts: factories that
do not pickle (the error names the worker, the factory and the cause), a Ray address that
cannot be reached, more workers than the cluster has CPUs for. A worker whose actor dies
(``ray.kill``, a lost node) is replaced by a new actor of the same slot with the next
incarnation number, so its episode ids never repeat the dead one's.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from stagerl.distributed.worker import RolloutWorker, RolloutWorkerError

__all__ = ["WorkerPool", "require_ray", "connect", "RAY_MISSING"]

RAY_MISSING = ("stagerl.distributed needs Ray for remote workers: pip install 'stagerl[ray]' "
               "(core ray only)")


def require_ray() -> Any:
    """The ``ray`` module, or ``ImportError`` saying how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(RAY_MISSING) from error
    return ray


def _reachable(address: str, timeout: float) -> None:
    """Refuse an address nothing answers at (Ray itself retries for minutes)."""
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"Ray address must be 'host:port', 'ray://host:port' or 'auto', got "
                         f"address={address!r}")
    try:
        with socket.create_connection((host or "localhost", int(port)), timeout=timeout):
            pass
    except OSError as error:
        raise ConnectionError(
            f"cannot reach the Ray cluster at address={address!r}: {error}; start one there "
            f"with `ray start --head`, or leave the address unset for a local Ray instance"
        ) from error


def connect(address: str | None = None, timeout: float = 5.0) -> Any:
    """Connect to the Ray cluster at ``address`` (``None``: the running one, else a new local
    instance without the dashboard); returns ``ray``. An address nothing answers at raises
    ``ConnectionError`` within ``timeout`` seconds (checked also when this process is already
    connected: the request names a cluster that is not there)."""
    ray = require_ray()
    if address not in (None, "auto", "local"):
        _reachable(address, timeout)
    if ray.is_initialized():
        return ray
    try:
        if address is None:
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    except ConnectionError as error:
        raise ConnectionError(f"cannot reach the Ray cluster at address={address!r}: "
                              f"{error}") from error
    return ray


def _check_pickles(ray: Any, workers: int, factories: dict) -> None:
    """Every factory must travel to every worker; find out here, before any actor starts."""
    for name, factory in factories.items():
        if factory is None:
            continue
        if not callable(factory):
            raise TypeError(f"rollout workers: {name} must be callable, got "
                            f"{type(factory).__name__}")
        try:
            ray.cloudpickle.dumps(factory)
        except Exception as error:
            raise TypeError(
                f"rollout workers 0..{workers - 1}: {name} ({factory!r}) cannot be sent to a "
                f"worker: pickling it raised {type(error).__name__}: {error}; build unpicklable "
                f"things (open files, locks, live envs) inside the factory instead of "
                f"capturing them") from error


class WorkerPool:
    """``workers`` :class:`RolloutWorker` s, each in a Ray actor.

    Args:
        make_env, make_agent, make_hook: the worker's factories (see :class:`RolloutWorker`).
        workers: the number of workers.
        seed: the run's seed (each worker's own follows from it, its slot and incarnation).
        address: the Ray cluster (``None``: the running one, else a local instance).
        cpus_per_worker: the CPUs Ray reserves for each worker actor.
        max_replacements: a slot whose actors die this many times in a row without
            delivering a batch, and once more, stops the run (a crash that always recurs).

    ``pool.submit(slot, ...)`` asks a worker for a batch and returns the Ray reference;
    ``pool.result(ref)`` gets it: the batch, or ``None`` when the worker's actor died (it is
    replaced, and the reference is forgotten), or a :class:`RolloutWorkerError` raised when
    the worker's env or policy raised, or when its actors died ``max_replacements + 1``
    times in a row without delivering a batch.
    """

    def __init__(self, make_env: Any, make_agent: Any, workers: int, seed: int = 0,
                 address: str | None = None, make_hook: Any = None,
                 cpus_per_worker: float = 1.0, max_replacements: int = 3):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an int >= 1, got workers={workers!r}")
        if not isinstance(cpus_per_worker, (int, float)) or cpus_per_worker < 0:
            raise ValueError(f"cpus_per_worker must be >= 0, got {cpus_per_worker!r}")
        ray = require_ray()
        _check_pickles(ray, workers, {"make_env": make_env, "make_agent": make_agent,
                                      "make_hook": make_hook})
        self.ray = connect(address)
        cpus = self.ray.cluster_resources().get("CPU", 0.0)
        if workers * cpus_per_worker > cpus:
            raise ValueError(
                f"{workers} workers of {cpus_per_worker} CPU each need {workers * cpus_per_worker}"
                f" CPUs, the Ray cluster has {cpus:g}; use fewer workers or a smaller "
                f"cpus_per_worker (0 lets workers share CPUs)")
        self.factories = (make_env, make_agent, make_hook)
        self.workers, self.seed = workers, seed
        self._actor_class = self.ray.remote(num_cpus=cpus_per_worker,
                                            max_restarts=0)(_RemoteWorker)
        self.actors: list = [None] * workers
        self.incarnations = [0] * workers
        self.replaced = 0
        self.max_replacements = int(max_replacements)  # in a row without a batch: then stop
        self._deaths = [0] * workers
        self._slot_of: dict = {}  # pending reference -> (slot, incarnation)
        for slot in range(workers):
            self._start(slot)

    def _start(self, slot: int) -> None:
        make_env, make_agent, make_hook = self.factories
        self.actors[slot] = self._actor_class.remote(
            make_env, make_agent, slot, self.seed, self.incarnations[slot], make_hook)

    def submit(self, slot: int, steps: int, weights: Any = None, env_steps: int = 0,
               version: int = 0, gradients: bool = False) -> Any:
        """Ask worker ``slot`` for ``steps`` env steps (and, with ``gradients``, the gradients
        of its policy's loss on them); ``weights`` (a Ray reference or ``None``) are loaded
        first."""
        ref = self.actors[slot].sample.remote(steps, weights, env_steps, version, gradients)
        self._slot_of[ref] = (slot, self.incarnations[slot])
        return ref

    def wait_ready(self) -> None:
        """Wait until every worker has built its env and agent (their first request would
        wait for it otherwise); a worker that could not start raises
        :class:`RolloutWorkerError`."""
        for slot, actor in enumerate(self.actors):
            try:
                self.ray.get(actor.ready.remote())
            except self.ray.exceptions.RayActorError as error:
                if not error.actor_init_failed:
                    raise
                raise RolloutWorkerError(
                    f"rollout worker {slot} could not start: {_first_line(error)}") from error

    def slot_of(self, ref: Any) -> int:
        return self._slot_of[ref][0]

    def pending(self) -> list:
        return list(self._slot_of)

    def wait(self, refs: list | None = None, timeout: float | None = None) -> list:
        """The references among ``refs`` (default: all pending) that are ready now, or else
        the first to become ready (none if ``timeout`` passes first). Their order says nothing:
        ``ray.wait`` hands ready references back in no particular order."""
        refs = list(self._slot_of) if refs is None else list(refs)
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        if not ready and timeout != 0:
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        return ready

    def result(self, ref: Any) -> Any:
        """The batch of ``ref``; ``None`` if its worker died (replaced here)."""
        slot, incarnation = self._slot_of.pop(ref)
        exceptions = self.ray.exceptions
        try:
            batch = self.ray.get(ref)
            self._deaths[slot] = 0
            return batch
        except exceptions.RayTaskError as error:  # the worker's env or policy raised
            cause = error.cause if isinstance(error.cause, BaseException) else error
            if isinstance(cause, RolloutWorkerError):  # its cause is the env's or policy's
                failure = RolloutWorkerError(str(cause))
                failure.worker_traceback = getattr(cause, "worker_traceback", None)
                raise failure from cause.__cause__
            raise RolloutWorkerError(f"rollout worker {slot} failed: "
                                     f"{type(cause).__name__}: {cause}") from cause
        except exceptions.RayActorError as error:
            if error.actor_init_failed:  # building the env or the agent raised: no retry
                raise RolloutWorkerError(
                    f"rollout worker {slot} could not start: {_first_line(error)}") from error
            if incarnation == self.incarnations[slot]:  # not replaced yet by another reference
                self._deaths[slot] += 1
                if self._deaths[slot] > self.max_replacements:
                    raise RolloutWorkerError(
                        f"rollout worker {slot} died {self._deaths[slot]} times in a row "
                        f"without delivering a batch: {_first_line(error)}") from error
                self.replace(slot)
            return None

    def replace(self, slot: int) -> None:
        """Start a new actor for ``slot`` (the next incarnation)."""
        old = self.actors[slot]
        self.incarnations[slot] += 1
        self.replaced += 1
        self._start(slot)
        try:
            self.ray.kill(old)
        except Exception:  # already gone
            pass

    def kill(self, slot: int) -> None:
        """Kill worker ``slot``'s actor (as a crash would); tests use it."""
        self.ray.kill(self.actors[slot], no_restart=True)

    def shutdown(self) -> None:
        """Kill every actor; pending references are dropped."""
        for actor in self.actors:
            if actor is not None:
                try:
                    self.ray.kill(actor)
                except Exception:
                    pass
        self.actors = [None] * self.workers
        self._slot_of.clear()


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    failing = [line for line in lines if "Error" in line and not line.startswith("File")]
    return failing[-1] if failing else (lines[0] if lines else type(error).__name__)


class _RemoteWorker:
    """The actor: a RolloutWorker built in the actor's process (torch, if used, on one thread)."""

    def __init__(self, make_env, make_agent, slot, seed, incarnation, make_hook):
        self.worker = RolloutWorker(make_env, make_agent, slot, seed, incarnation, make_hook)
        torch = sys.modules.get("torch")  # loaded by a torch policy only
        if torch is not None:
            torch.set_num_threads(1)  # several workers share the machine's cores

    def ready(self):
        return self.worker.n_lanes

    def sample(self, steps, weights, env_steps, version, gradients=False):
        return self.worker.sample(steps, weights, env_steps, version, gradients)
