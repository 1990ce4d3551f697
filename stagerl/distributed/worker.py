"""`RolloutWorker`: the ordinary stagerl loop, handing over a batch every so many steps.

A worker builds its env and a CPU copy of the policy (an Agent) from two picklable factories
and runs ``stagerl.run`` once, for its whole life, in a thread of its own: the same stages, the
same hooks, the Agent's own recording. Its stop condition is where batches are handed over:
once per step (after the PostAct hook) it counts the step, and when the batch asked for is
complete it reads the Agent's trajectory into fragments, empties it, hands the batch to the
caller and waits for the next request, loading the weights that come with it. So episodes go on
across batches, exactly as in one long run. The trajectory's controller is replaced by
:class:`~stagerl.distributed.batches.RecordOnly`: the worker records, the learner learns.

It is plain Python: :class:`~stagerl.distributed.pool.WorkerPool` runs it in Ray actors, and a
test or a notebook can call it directly.
"""

from __future__ import annotations

import pickle
import queue
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

from stagerl.core.env import VectorEnv
from stagerl.core.episodes import EpisodeHook
from stagerl.core.hooks import EmptyHook
from stagerl.core.hooks_base import Hook
from stagerl.core.run import run
from stagerl.distributed.batches import FragmentReader, RecordOnly, RolloutBatch
from stagerl.distributed.protocol import compute_gradients, set_weights
from stagerl.policies.agent import Agent
from trajectories import Trajectory

__all__ = ["RolloutWorker", "RolloutWorkerError", "WorkerTraceback", "worker_seed"]


class RolloutWorkerError(RuntimeError):
    """A rollout worker failed (its env or policy raised); the message names the worker and the
    cause, and the original exception is the ``__cause__``.

    From a worker in another process (a Ray actor) the error arrives with the original
    exception as its ``__cause__`` too, and that exception's own ``__cause__`` is a
    :class:`WorkerTraceback` holding the frames it was raised in there (a traceback cannot
    travel between processes, its text can), so a printed traceback shows them.
    ``worker_traceback`` is that text.

    Example:
        >>> import pickle
        >>> error = RolloutWorkerError("rollout worker 1 failed: ValueError: broke")
        >>> error.__cause__, error.worker_traceback = ValueError("broke"), "Traceback ..."
        >>> arrived = pickle.loads(pickle.dumps(error))
        >>> arrived.__cause__, arrived.__cause__.__cause__.text
        (ValueError('broke'), 'Traceback ...')
    """

    def __reduce__(self):
        return (_arrived, (type(self), self.args, _portable(self.__cause__),
                           dict(self.__dict__)))


class WorkerTraceback(Exception):
    """The traceback of an exception raised in a rollout worker's process, as text; printed
    with a traceback as the cause of that exception (``text`` is the traceback)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text.rstrip()}\n"""'


def _portable(error: BaseException | None) -> BaseException | None:
    """``error`` if it survives pickling, else a ``RuntimeError`` naming its type and message
    (an exception whose class the receiving process cannot rebuild)."""
    if error is None:
        return None
    ray = sys.modules.get("ray")  # Ray sends errors with cloudpickle (classes by value)
    dumps = ray.cloudpickle.dumps if ray is not None else pickle.dumps
    try:
        pickle.loads(dumps(error))
        return error
    except Exception:
        kind = type(error)
        return RuntimeError(f"{kind.__module__}.{kind.__qualname__}: {error}")


def _arrived(kind: type, args: tuple, cause: BaseException | None, state: dict):
    """A :class:`RolloutWorkerError` unpickled: its cause again, with the worker's frames."""
    error = kind(*args)
    error.__dict__.update(state)
    if cause is not None:
        text = state.get("worker_traceback")
        if text and cause.__cause__ is None:
            cause.__cause__ = WorkerTraceback(text)
        error.__cause__ = cause
    return error


def worker_seed(seed: int, worker: int, incarnation: int = 0) -> int:
    """The seed of worker ``worker``'s ``incarnation``-th actor: distinct for every pair.

    Example:
        >>> worker_seed(0, 0) != worker_seed(0, 1) != worker_seed(0, 0, incarnation=1)
        True
    """
    return int(np.random.SeedSequence([seed, worker, incarnation]).generate_state(1)[0] >> 1)


class _EpisodeReturns(EpisodeHook):
    """The return and length of every episode that ended (terminated or truncated)."""

    def __init__(self) -> None:
        super().__init__()
        self.finished: list = []

    def on_episode(self, episode, policy, env) -> None:
        if episode.terminated or episode.truncated:
            self.finished.append((float(episode.total_reward), int(episode.length)))


class _Handover:
    """The worker loop's stop condition: hands a batch over when it is complete."""

    def __init__(self, worker: RolloutWorker):
        self.worker = worker

    def check(self, policy: Any, env: Any) -> bool:
        worker = self.worker
        worker._acts += 1
        if worker._acts < worker._target:
            return False
        worker._replies.put(worker._ship())
        request = worker._requests.get()
        if request is None:  # closed: the loop ends and announces PostExperiment
            return True
        worker._take(request)
        return False


class RolloutWorker:
    """Runs ``make_agent(env, seed)`` in ``make_env(seed)`` and hands over rollout batches.

    Args:
        make_env: ``seed -> env`` (a stagerl env, single or vector).
        make_agent: ``(env, seed) -> Agent`` on the CPU; its trajectory records the steps
            (layouts with ``next_action`` are not supported).
        worker: the worker's slot (it names the worker in errors and episode ids).
        seed: the run's seed; the worker's own is ``worker_seed(seed, worker, incarnation)``.
        incarnation: 0, or how many actors of this slot were replaced before this one.
        make_hook: ``() -> Hook`` for hooks that run in the worker's loop (optional).

    Example:
        >>> import stagerl as rl
        >>> from stagerl.distributed import RolloutWorker
        >>> def make_env(seed):
        ...     return rl.RandomWalk1D()
        >>> def make_agent(env, seed):
        ...     return rl.Agent(rl.RandomPolicy(rng=seed),
        ...                     rl.Trajectory(rl.CircularArraySARTSTraces(capacity=100)))
        >>> worker = RolloutWorker(make_env, make_agent, worker=3)
        >>> batch = worker.sample(10)
        >>> batch.worker, batch.env_steps, sum(f.n_steps for f in batch.fragments)
        (3, 10, 10)
        >>> worker.close()
    """

    def __init__(self, make_env: Any, make_agent: Any, worker: int = 0, seed: int = 0,
                 incarnation: int = 0, make_hook: Any = None):
        self.worker, self.incarnation = int(worker), int(incarnation)
        self.seed = worker_seed(seed, self.worker, self.incarnation)
        self.env = make_env(self.seed)
        agent = make_agent(self.env, self.seed)
        self.agent = self._checked(agent)
        self.agent.trajectory.controller = RecordOnly()
        hook = make_hook() if make_hook is not None else EmptyHook()
        if not isinstance(hook, Hook):
            raise TypeError(f"rollout worker {self.worker}: make_hook must return a "
                            f"stagerl.Hook, got {type(hook).__name__}")
        self._episodes = _EpisodeReturns()
        self.hook = self._episodes + hook
        vector = isinstance(self.env, VectorEnv)
        self.n_lanes = int(self.env.num_envs) if vector else 1
        self.lane_capacity = self._lane_capacity()
        self._reader = FragmentReader(self.worker, self.incarnation, self.n_lanes)
        self._requests: queue.Queue = queue.Queue()
        self._replies: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._acts, self._target, self._sequence = 0, 0, 0
        self._gradients = False  # the current request asks for gradients
        self.version, self._started = -1, 0.0

    def _checked(self, agent: Any) -> Agent:
        who = f"rollout worker {self.worker}"
        if not isinstance(agent, Agent):
            raise TypeError(f"{who}: make_agent must return a stagerl.Agent (a policy and the "
                            f"trajectory that records its steps), got {type(agent).__name__}")
        if not isinstance(agent.trajectory, Trajectory):
            raise TypeError(f"{who}: the agent's trajectory must be a stagerl.Trajectory, got "
                            f"{type(agent.trajectory).__name__}")
        keys = agent.trajectory.container.keys()
        if "next_action" in keys or "state" not in keys or "next_state" not in keys:
            raise ValueError(f"{who}: rollout workers ship layouts with a state/next_state "
                             f"multiplex and no next_action (SARTS plus extra traces), got "
                             f"traces {list(keys)}")
        return agent

    def _lane_capacity(self) -> int:
        capacity = self.agent.trajectory.container.capacity
        return int(capacity) // self.n_lanes

    def acts_for(self, steps: int) -> int:
        """The acts of the worker's env that make ``steps`` env steps (a vector env takes
        ``num_envs`` per act)."""
        return max(1, -(-int(steps) // self.n_lanes))

    def sample(self, steps: int, weights: Any = None, env_steps: int = 0,
               version: int = 0, gradients: bool = False) -> RolloutBatch:
        """Act ``steps`` env steps (rounded up to whole acts of a vector env) and return them.

        ``weights`` (from ``get_weights`` on the learner, or None to keep the current ones)
        are loaded first with ``set_weights(policy, weights, env_steps, env)``; ``version``
        tags the batch (the weights the worker holds). With ``gradients`` the batch also
        carries ``compute_gradients(policy, trajectory)`` on its steps (A3C). Raises
        :class:`RolloutWorkerError` when the env or the policy raised (then and ever after: the
        worker's loop has ended).
        """
        if self._failure is not None:
            raise self._failure
        if self._thread is not None and not self._thread.is_alive():
            raise RuntimeError(f"rollout worker {self.worker} was closed; build a new one")
        acts = self.acts_for(steps)
        # Each act adds at most two states to a lane (a step, and a new episode's first state).
        if 2 * acts + 1 > self.lane_capacity:
            raise ValueError(
                f"rollout worker {self.worker}: a batch of {acts} acts needs lanes of "
                f"{2 * acts + 1} rows, the agent's trajectory holds {self.lane_capacity} per "
                f"lane; ask for fewer steps per batch or give the trajectory more capacity")
        request = (acts, weights, int(env_steps), int(version), bool(gradients))
        if self._thread is None:
            self._take(request)
            self._thread = threading.Thread(target=self._loop, daemon=True,
                                            name=f"rollout-worker-{self.worker}")
            self._thread.start()
        else:
            self._requests.put(request)
        reply = self._replies.get()
        if isinstance(reply, BaseException):
            self._failure = reply
            raise reply
        return reply

    def close(self) -> None:
        """End the worker's loop (PostExperiment is announced) and wait for it."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._requests.put(None)
            thread.join(timeout=10)

    # ---- inside the loop's thread -------------------------------------------------------------

    def _take(self, request: tuple) -> None:
        acts, weights, env_steps, version, self._gradients = request
        if weights is not None:
            set_weights(self.agent.policy, weights, env_steps, self.env)
        self.version = version
        self._acts, self._target = 0, acts
        self._started = time.perf_counter()

    def _ship(self) -> RolloutBatch:
        trajectory = self.agent.trajectory
        gradients = compute_gradients(self.agent.policy, trajectory) if self._gradients \
            else None
        fragments = self._reader.read(trajectory, self.env)
        trajectory.container.clear()
        self._reader.restart(trajectory, self.env)
        episodes, self._episodes.finished = self._episodes.finished, []
        batch = RolloutBatch(self.worker, self.incarnation, self._sequence, self.version,
                             fragments, sum(f.n_steps for f in fragments), episodes,
                             time.perf_counter() - self._started, gradients)
        self._sequence += 1
        return batch

    def _loop(self) -> None:
        try:
            run(self.agent, self.env, _Handover(self), self.hook)
        except BaseException as error:  # handed to the caller, who raises it
            where = "".join(traceback.format_exception_only(type(error), error)).strip()
            failure = RolloutWorkerError(
                f"rollout worker {self.worker} (incarnation {self.incarnation}) failed: {where}")
            failure.__cause__ = error
            failure.worker_traceback = "".join(traceback.format_exception(
                type(error), error, error.__traceback__))
            self._replies.put(failure)

    def __getstate__(self):
        raise TypeError("a RolloutWorker runs a loop in a thread and cannot be copied; copy its "
                        "agent (worker.agent) or build another worker from the same factories")

    def __repr__(self) -> str:
        return (f"RolloutWorker(worker={self.worker}, incarnation={self.incarnation}, "
                f"env={type(self.env).__name__}, agent={type(self.agent.policy).__name__})")
