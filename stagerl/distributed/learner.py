"""`Learner`: runs an execution plan over rollout workers, learning in one central Agent.

The central Agent's trajectory has one lane per sub-env of every worker. What the workers
deliver flows through the learner's *plan* (:mod:`stagerl.distributed.plans`: a few operators
of :mod:`stagerl.distributed.operators` over lazy iterators): each batch is bulk-inserted
(``trajectory.extend(lane, ...)``), so its transitions reach the trajectory's controller, which
allows as many learning samples as its insert/sample ratio says: the controller is the rate
limiter. Learning is the policy's own ``optimise(policy, PostActStage(), trajectory)`` (or, by
sample, ``learn_on_batch``), as the loop calls it after a step in one process. Whenever the
weights changed, they are a new version; they are put into Ray's object store once
(``get_weights``, one ``ray.put``) the first time a request needs them, and every worker still
acting with an older version gets them with its next request.

The plans by default (the policy's, :func:`~stagerl.distributed.plans.default_plan`):

* off-policy (DQN): asynchronous rollouts. Each worker has up to ``in_flight`` requests
  pending, and its batches go in in the order it acted them: only the oldest pending request of
  each worker is waited for (a later batch of a worker that arrived first would cut the
  episodes they share into pieces). Of the ready ones the oldest goes in first. Staleness, the
  versions the weights moved on between a batch's request and its insert, is bounded by
  ``max_staleness``: when a pending request would pass it, the learner waits for the oldest one
  before it inserts anything else.
* on-policy: bulk-synchronous rounds. Every worker acts one batch with the current version; the
  batches are inserted in worker order and learned from together; a batch of another version
  would be dropped.
* A3C (A2C's settings with asynchronous gradients): the workers send gradients, the learner
  applies them (stale ones by a rule, see :class:`~stagerl.distributed.operators.
  ApplyGradients`).

A worker whose actor dies is replaced (the new actor gets the current weights with its first
request) and asked again; its lost request was never inserted, and every inserted batch is
counted once (its ``(worker, incarnation, sequence)`` key is checked).
"""

from __future__ import annotations

import time
from typing import Any

from stagerl.distributed.batches import RolloutBatch
from stagerl.distributed.figures import LearnerFigures
from stagerl.distributed.plan import NOT_READY, PlanIterator, StandardMetricsReporting
from stagerl.distributed.plans import default_plan
from stagerl.distributed.protocol import (
    apply_gradients,
    get_weights,
    learn_on_batch,
    on_policy,
    set_env_steps,
    update_target,
)
from stagerl.policies.agent import Agent
from trajectories import Trajectory, split_lanes
from trajectories.lanes import PerLaneEpisodes

__all__ = ["Learner"]


class Learner(LearnerFigures):
    """The central agent fed by a :class:`~stagerl.distributed.pool.WorkerPool` through an
    execution plan.

    Args:
        agent: the central Agent (on any device), its trajectory empty. The learner keeps its
            policy, sampler and controller and stores ``pool.workers * lanes_per_worker``
            lanes, one ``EpisodesBuffer`` each (``learner.agent`` is the agent it trains).
        pool: the rollout workers.
        lanes_per_worker: sub-envs of each worker's env (default: read from a laned
            trajectory, else 1).
        steps_per_batch: env steps a worker acts per request. Default: off-policy, the
            transitions that allow one learning sample (``1 / controller.ratio``); on-policy,
            the controller's ``threshold`` split over the workers (one rollout per round).
        in_flight: requests pending per worker (default 2 off-policy, so a worker acts while
            its last batch is learned from; on-policy rounds and gradients always use 1).
        callback: ``callback(learner, batch)`` after each inserted batch (or applied gradient)
            (logging, tests).
        max_staleness: off-policy, the most versions a batch's weights may be behind the
            current ones when it goes in (default ``2 * in_flight * workers``; at least
            ``in_flight * workers - 1``, the requests that can be pending at once).
        plan: ``plan(learner) -> PlanIterator``, the plan's last iterator (default: the
            policy's, :func:`~stagerl.distributed.plans.default_plan`). It is built here, so a
            plan that feeds an operator the wrong kind of item or never trains is refused
            before anything runs.
    """

    def __init__(self, agent: Any, pool: Any, lanes_per_worker: int | None = None,
                 steps_per_batch: int | None = None, in_flight: int | None = None,
                 callback: Any = None, max_staleness: int | None = None, plan: Any = None):
        if not isinstance(agent, Agent) or not isinstance(agent.trajectory, Trajectory):
            raise TypeError(f"Learner needs a stagerl.Agent with a Trajectory, got "
                            f"{type(agent).__name__}")
        self.agent, self.pool, self.callback = agent, pool, callback
        trajectory = agent.trajectory
        laned = getattr(trajectory.container, "n_lanes", None)
        if lanes_per_worker is None:
            lanes_per_worker = laned // pool.workers if laned else 1
        self.lanes_per_worker = int(lanes_per_worker)
        n_lanes = pool.workers * self.lanes_per_worker
        if laned is not None and laned != n_lanes:
            raise ValueError(
                f"the central trajectory has {laned} lanes, but {pool.workers} workers of "
                f"{self.lanes_per_worker} sub-envs need {n_lanes}: build the central agent for "
                f"stagerl.distributed.WorkerLanes(env, workers={pool.workers})")
        if not isinstance(trajectory.container, PerLaneEpisodes):
            # One EpisodesBuffer per lane: its bulk insert appends whole columns (~1 us a step
            # measured here; the lane-major rings insert step by step, ~100 us a step).
            if len(trajectory.container):
                raise ValueError(f"the central trajectory must start empty, it holds "
                                 f"{len(trajectory.container)} rows")
            trajectory = Trajectory(PerLaneEpisodes(trajectory.container, n_lanes),
                                    trajectory.sampler, trajectory.controller)
            self.agent = agent = Agent(agent.policy, trajectory)
        self.trajectory = trajectory
        split_lanes(trajectory, n_lanes)
        self.on_policy = bool(on_policy(agent.policy))
        plan = default_plan(agent.policy) if plan is None else plan
        if not callable(plan):
            raise TypeError(f"plan must be a function of the learner returning the plan's last "
                            f"iterator, got {plan!r}")
        self.steps_per_batch = self._batch_steps(steps_per_batch)
        self.in_flight = 1 if self.on_policy else int(in_flight or 2)
        if self.in_flight < 1:
            raise ValueError(f"in_flight must be >= 1, got in_flight={in_flight!r}")
        self.max_staleness = self._staleness_bound(max_staleness)
        self.version = 0
        self._changed = False  # the weights changed since the version was last counted
        self.env_steps = 0  # inserted (or trained on, for gradients)
        self.collected = 0  # delivered by the workers (the run's progress)
        self.target = 0  # the env steps the current train() call runs to
        self.blocking = True  # False while Concurrently(mode="async") polls
        self._start_figures(pool.workers)
        self._seen: set = set()
        self._lane_episode: dict = {}  # lane -> (episode id, its steps inserted so far)
        self._known = [-1] * pool.workers  # the weights version each worker has (or was sent)
        # pending reference -> (worker, steps asked, weights version), in the order asked
        self._asked: dict = {}
        self._weights = (None, -1)  # (reference, version)
        self._last_slot = 0  # the worker whose batch was received last
        self._ready = False
        last = plan(self)
        if not isinstance(last, PlanIterator):
            raise TypeError(f"plan {getattr(plan, '__name__', plan)!r} must return the plan's "
                            f"last iterator (a PlanIterator), got {type(last).__name__}")
        self.plan = StandardMetricsReporting(last, self)

    def _batch_steps(self, steps: int | None) -> int:
        controller = self.trajectory.controller
        if steps is None:
            if self.on_policy and getattr(controller, "threshold", 0):
                steps = -(-int(controller.threshold) // self.pool.workers)
            elif not self.on_policy and getattr(controller, "ratio", 0):
                steps = max(1, round(1 / float(controller.ratio)))
            else:
                raise ValueError("cannot tell the steps of a batch from the trajectory's "
                                 f"controller ({type(controller).__name__}); pass "
                                 "steps_per_batch=")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps_per_batch must be an int >= 1, got {steps!r}")
        return steps

    def _staleness_bound(self, bound: int | None) -> int:
        least = self.in_flight * self.pool.workers - 1
        if bound is None:
            return 2 * self.in_flight * self.pool.workers
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < least:
            raise ValueError(
                f"max_staleness must be an int >= {least} for {self.pool.workers} workers with "
                f"in_flight={self.in_flight} (as many requests can be pending at once), got "
                f"max_staleness={bound!r}; use fewer workers or a smaller in_flight for "
                f"fresher batches")
        return bound

    # ---- the run --------------------------------------------------------------------------------

    def train(self, steps: int) -> dict:
        """Run the plan until the workers delivered ``steps`` more env steps and everything
        asked for is in (on-policy: whole rounds, so up to a round more); returns
        :meth:`figures`. The workers stay up for another call; ``close()`` ends them."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got steps={steps!r}")
        if not self._ready:  # the workers' start (imports, envs, agents) is not training
            start = time.perf_counter()
            self.pool.wait_ready()
            self._ready = True
            self.seconds["starting"] = time.perf_counter() - start
        start = time.perf_counter()
        self.target = max(self.target, self.collected) + steps
        try:
            for item in self.plan:
                if item is NOT_READY and not self._asked and self.collected >= self.target:
                    break
        finally:
            self._wall += time.perf_counter() - start
        return self.figures()

    # ---- the workers: requests, weights, results (the sources' primitives) ----------------------

    def current_version(self) -> int:
        """The weights' version now (counting a change not yet sent as a new one)."""
        if self._changed:
            self.version += 1
            self._changed = False
        return self.version

    def request(self, slot: int, steps: int | None = None, gradients: bool = False) -> None:
        """Ask worker ``slot`` for a batch (of ``steps``, default ``steps_per_batch``) acted
        with the current weights, sent along if it does not have them."""
        steps = self.steps_per_batch if steps is None else steps
        version = self.current_version()
        weights = None
        if self._known[slot] != version:
            weights = self._weights_ref()
            self._known[slot] = version
        ref = self.pool.submit(slot, steps, weights, self.env_steps, version,
                               **({"gradients": True} if gradients else {}))
        self._asked[ref] = (slot, steps, version)

    def top_up(self, gradients: bool = False) -> None:
        """Give every worker ``in_flight`` requests pending, asking for no more than the run
        still needs."""
        pending = [0] * self.pool.workers
        asked = 0
        for slot, steps, _ in self._asked.values():
            pending[slot] += 1
            asked += steps
        last = self._last_slot  # the worker that delivered last is asked first, as it waits
        for slot in [last, *(s for s in range(self.pool.workers) if s != last)]:
            while pending[slot] < self.in_flight:
                steps = min(self.steps_per_batch, self.target - self.collected - asked)
                if steps <= 0:
                    return
                self.request(slot, steps, gradients)
                pending[slot] += 1
                asked += steps

    def _weights_ref(self) -> Any:
        ref, version = self._weights
        if version != self.version:
            start = time.perf_counter()
            ref = self.pool.ray.put(get_weights(self.agent.policy))  # once per version
            self._weights = (ref, self.version)
            self.broadcasts += 1
            self.seconds["broadcasting"] += time.perf_counter() - start
        return ref

    def has_pending(self) -> bool:
        return bool(self._asked)

    def wait_one(self) -> Any:
        """A ready pending request (waiting for one if none is)."""
        return self._wait(list(self._asked))[0]

    def wait_any(self) -> None:
        self._wait(list(self._asked))

    def next_in_order(self) -> Any:
        """The pending request to deliver next: the oldest ready one among each worker's oldest
        (so every worker's batches go in in its order), or the oldest of all when waiting for
        another could let a pending request pass ``max_staleness``; ``None`` when not
        ``blocking`` and none is ready.

        Inserting a batch moves the version on by at most one (the weights' changes between
        two deliveries count once), so a request ``i``-th in line goes in at most ``version -
        its version + i`` versions behind if the oldest go first; while that stays below the
        bound for every request, any worker's oldest may go next.
        """
        asked = self._asked
        version, bound = self.current_version(), self.max_staleness
        heads: dict = {}
        for i, (ref, (slot, _, acted)) in enumerate(asked.items()):
            if version - acted + i >= bound:
                oldest = next(iter(asked))
                if not self.blocking and not self.pool.wait([oldest], timeout=0):
                    return None
                self._staleness["oldest_first"] += 1
                self._wait([oldest])
                return oldest
            heads.setdefault(slot, ref)
        if self.blocking:
            ready = set(self._wait(list(heads.values())))
        else:
            ready = set(self.pool.wait(list(heads.values()), timeout=0))
            if not ready:
                return None
        return next(ref for ref in asked if ref in ready)  # the oldest of the ready ones

    def _wait(self, refs: list) -> list:
        """The references among ``refs`` that are ready (waiting for one if none is)."""
        start = time.perf_counter()
        ready = self.pool.wait(refs)
        self.seconds["waiting"] += time.perf_counter() - start
        return ready

    def receive(self, ref: Any) -> RolloutBatch | None:
        """The batch of a ready request; ``None`` if its worker died (it was replaced)."""
        start = time.perf_counter()
        slot = self.pool.slot_of(ref)
        incarnation = self.pool.incarnations[slot]
        self._asked.pop(ref, None)
        self._last_slot = slot
        batch = self.pool.result(ref)
        if batch is None and self.pool.incarnations[slot] != incarnation:
            self._known[slot] = -1  # a new actor: it needs the weights
        self.seconds["receiving"] += time.perf_counter() - start
        if batch is not None:
            if batch.key in self._seen:
                raise RuntimeError(f"batch {batch.key} arrived twice")  # never: one get per ref
            self._seen.add(batch.key)
        return batch

    # ---- inserting and learning (the operators' primitives) -------------------------------------

    def insert(self, batches: list) -> None:
        """Insert ``batches`` (from the workers, in order) into the central trajectory: one
        ``extend`` per episode fragment, into its worker's lane. Batches acted by older weights
        are dropped by an on-policy learner."""
        start = time.perf_counter()
        version = self.current_version()
        for batch in batches:
            if self.on_policy and batch.version != version:
                self.dropped += 1  # acted by older weights: not this policy's data
                self.collected -= batch.env_steps
                continue
            for fragment in batch.fragments:
                self._insert_fragment(batch.worker, fragment)
            self._count(batch, version - batch.version)
        set_env_steps(self.agent.policy, self.env_steps)
        self.seconds["inserting"] += time.perf_counter() - start

    def _count(self, batch: RolloutBatch, staleness: int) -> None:
        self._staleness["max"] = max(self._staleness["max"], staleness)
        self._staleness["sum"] += staleness
        self.env_steps += batch.env_steps
        self.batches += 1
        self.worker_steps[batch.worker] += batch.env_steps
        self.worker_seconds[batch.worker] += batch.seconds
        self.episodes.extend(batch.episodes)
        if self.callback is not None:
            self.callback(self, batch)

    def _insert_fragment(self, worker: int, fragment: Any) -> None:
        lane = worker * self.lanes_per_worker + fragment.lane
        columns = fragment.columns
        running = self.trajectory.container.running_lanes()[lane]
        joins = running and self._lane_episode.get(lane) == (fragment.episode_id,
                                                             fragment.first_step)
        if joins:  # the rest of the episode the lane holds: its first state is stored already
            columns = {**columns, "state": columns["state"][1:]}
        self.trajectory.extend(lane, new_episode=not joins, **columns)
        self._lane_episode[lane] = (fragment.episode_id, fragment.first_step + fragment.n_steps)

    def learn(self) -> bool:
        """``optimise(policy, PostActStage(), trajectory)``, as the loop calls it after a step;
        True (and the weights a new version) when the controller allowed a sample."""
        from stagerl.core.dispatch import optimise
        from stagerl.core.stages import PostActStage

        start = time.perf_counter()
        trajectory = self.trajectory
        sampled = getattr(trajectory.controller, "n_sampled", None)
        optimise(self.agent.policy, PostActStage(), trajectory)
        changed = sampled is None or trajectory.controller.n_sampled != sampled
        self._changed |= changed
        self.seconds["learning"] += time.perf_counter() - start
        return changed

    def learn_on_batch(self, sample: Any) -> None:
        """Learn from one sample of the trajectory (``learn_on_batch``); the weights change."""
        start = time.perf_counter()
        learn_on_batch(self.agent.policy, sample, self.trajectory)
        self._changed = True
        self.seconds["learning"] += time.perf_counter() - start

    def update_target(self) -> None:
        update_target(self.agent.policy)

    def apply(self, item: Any, scale: float, staleness: int) -> None:
        """Apply a worker's gradients (times ``scale``) to the central policy."""
        start = time.perf_counter()
        apply_gradients(self.agent.policy, item.gradients, scale)
        self._changed = True
        self.seconds["learning"] += time.perf_counter() - start
        self._gradient_figures(staleness, applied=True)
        self._count(item.batch, staleness)
        set_env_steps(self.agent.policy, self.env_steps)

    def gradient_dropped(self, item: Any, staleness: int) -> None:
        """A gradient too stale to apply: its steps count, it changes nothing."""
        self._gradient_figures(staleness, applied=False)
        self._count(item.batch, staleness)

    def close(self) -> None:
        """End the workers (their actors are killed)."""
        self.pool.shutdown()

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
