"""The Learner as it was before execution plans (its flows fixed in two methods, ``_stream``
and ``_rounds``), kept as the baseline of ``benchmarks/scaling.py``'s rate comparison: the
plan-based ``stagerl.distributed.Learner`` against this one, side by side.

`Learner`: keeps rollout workers busy and learns from their batches in one central Agent.

The central Agent's trajectory has one lane per sub-env of every worker. Each batch is
bulk-inserted (``trajectory.extend(lane, ...)``), so its transitions reach the trajectory's
controller, which then allows as many learning samples as its insert/sample ratio says: the
controller is the rate limiter. Learning is the policy's own
``optimise(policy, PostActStage(), trajectory)``, called after each insert, exactly as the loop
calls it after a step in one process. Whenever it learned, the weights are a new version; they
are put into Ray's object store once (``get_weights``, one ``ray.put``) the first time a request
needs them, and every worker still acting with an older version gets them with its next request.

Two schedules:

* off-policy (``on_policy(policy)`` False, e.g. DQN): asynchronous. Each worker has up to
  ``in_flight`` requests pending, and its batches go in in the order it acted them: only the
  oldest pending request of each worker is waited for (a later batch of a worker that arrived
  first would cut the episodes they share into pieces). Of the ready ones the oldest goes in
  first, and its worker is asked for the next batch. Staleness, the versions the weights moved
  on between a batch's request and its insert, is bounded by ``max_staleness``: when a pending
  request would pass it, the learner waits for the oldest one before it inserts anything else.
* on-policy (PPO and the other policy-gradient methods): synchronous rounds. Every worker acts
  one batch with the current version; the batches are inserted in worker order and learned from
  together; a batch of another version would be dropped (it cannot be, unless a worker's reply
  outlives its round).

A worker whose actor dies is replaced (the new actor gets the current weights with its first
request) and asked again; its lost request was never inserted, and every inserted batch is
counted once (its ``(worker, incarnation, sequence)`` key is checked).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from stagerl.core.dispatch import optimise
from stagerl.core.stages import PostActStage
from stagerl.distributed.batches import RolloutBatch
from stagerl.distributed.protocol import get_weights, on_policy, set_env_steps
from stagerl.policies.agent import Agent
from trajectories import Trajectory, split_lanes
from trajectories.lanes import PerLaneEpisodes

__all__ = ["LearnerBeforePlans"]

_POST_ACT = PostActStage()


class LearnerBeforePlans:
    """The central agent fed by a :class:`~stagerl.distributed.pool.WorkerPool`.

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
            its last batch is learned from; on-policy rounds always use 1).
        callback: ``callback(learner, batch)`` after each inserted batch (logging, tests).
        max_staleness: off-policy, the most versions a batch's weights may be behind the
            current ones when it goes in (default ``2 * in_flight * workers``; at least
            ``in_flight * workers - 1``, the requests that can be pending at once).
            On-policy batches are always acted by the current weights.
    """

    def __init__(self, agent: Any, pool: Any, lanes_per_worker: int | None = None,
                 steps_per_batch: int | None = None, in_flight: int | None = None,
                 callback: Any = None, max_staleness: int | None = None):
        if not isinstance(agent, Agent) or not isinstance(agent.trajectory, Trajectory):
            raise TypeError(f"Learner needs a stagerl.Agent with a Trajectory, got "
                            f"{type(agent).__name__}")

        self.agent, self.pool, self.callback = agent, pool, callback
        self.trajectory = trajectory = agent.trajectory
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
        self.steps_per_batch = self._batch_steps(steps_per_batch)
        self.in_flight = 1 if self.on_policy else int(in_flight or 2)
        if self.in_flight < 1:
            raise ValueError(f"in_flight must be >= 1, got in_flight={in_flight!r}")
        self.max_staleness = self._staleness_bound(max_staleness)
        self.version = 0
        self.env_steps = 0
        self.batches = 0
        self.dropped = 0
        self.broadcasts = 0
        self.episodes: list = []  # (return, length) of the workers' finished episodes
        self.seconds = {"waiting": 0.0, "receiving": 0.0, "inserting": 0.0, "learning": 0.0,
                        "broadcasting": 0.0}
        workers = pool.workers
        self.worker_steps = [0] * workers
        self.worker_seconds = [0.0] * workers
        self._seen: set = set()
        self._lane_episode: dict = {}  # lane -> (episode id, its steps inserted so far)
        self._known = [-1] * workers  # the weights version each worker has (or was sent)
        # pending reference -> (worker, steps asked, weights version), in the order asked
        self._asked: dict = {}
        # Staleness of the inserted batches (the versions their weights were behind): the
        # largest, the sum, and how often the oldest request went first to keep the bound.
        self._staleness = {"max": 0, "sum": 0, "oldest_first": 0}
        self._weights = (None, -1)  # (reference, version)
        self._wall = 0.0
        self._ready = False

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
        """Learn from ``steps`` env steps of the workers (on-policy: whole rounds, so up to a
        round more); returns :meth:`figures`. The workers stay up for another call; ``close()``
        ends them."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got steps={steps!r}")
        if not self._ready:  # the workers' start (imports, envs, agents) is not training
            start = time.perf_counter()
            self.pool.wait_ready()
            self._ready = True
            self.seconds["starting"] = time.perf_counter() - start
        start = time.perf_counter()
        target = self.env_steps + steps
        try:
            if self.on_policy:
                self._rounds(target)
            else:
                self._stream(target)
        finally:
            self._wall += time.perf_counter() - start
        return self.figures()

    def _stream(self, target: int) -> None:
        for slot in range(self.pool.workers):
            for _ in range(self.in_flight):
                self._request(slot, target)
        while self._asked:
            ref = self._next_in_order()
            slot = self.pool.slot_of(ref)
            batch = self._result(ref)
            if batch is not None:
                self.insert([batch])
                self.learn()
            self._request(slot, target)

    def _rounds(self, target: int) -> None:
        workers = self.pool.workers
        while self.env_steps < target:
            batches: list = [None] * workers
            for slot in range(workers):
                self._request(slot, None)
            while self._asked:
                ref = self._wait(list(self._asked))[0]
                slot = self.pool.slot_of(ref)
                batch = self._result(ref)
                if batch is None:  # its worker died: ask the replacement
                    self._request(slot, None)
                else:
                    batches[slot] = batch
            self.insert(batches)
            self.learn()

    def _request(self, slot: int, target: int | None) -> None:
        steps = self.steps_per_batch
        if target is not None:  # stream: ask only for what the run still needs
            asked = sum(steps for _, steps, _ in self._asked.values())
            steps = min(steps, target - self.env_steps - asked)
            if steps <= 0:
                return
        weights = None
        if self._known[slot] != self.version:
            weights = self._weights_ref()
            self._known[slot] = self.version
        ref = self.pool.submit(slot, steps, weights, self.env_steps, self.version)
        self._asked[ref] = (slot, steps, self.version)

    def _weights_ref(self) -> Any:
        ref, version = self._weights
        if version != self.version:
            start = time.perf_counter()
            ref = self.pool.ray.put(get_weights(self.agent.policy))  # once per version
            self._weights = (ref, self.version)
            self.broadcasts += 1
            self.seconds["broadcasting"] += time.perf_counter() - start
        return ref

    def _next_in_order(self) -> Any:
        """The pending request to insert next: the oldest ready one among each worker's oldest
        (so every worker's batches go in in its order), or the oldest of all when waiting for
        another could let a pending request pass ``max_staleness``.

        Inserting a batch moves the version on by at most one, so a request ``i``-th in line
        goes in at most ``version - its version + i`` versions behind if the oldest go first;
        while that stays below the bound for every request, any worker's oldest may go next.
        """
        asked = self._asked
        version, bound = self.version, self.max_staleness
        heads: dict = {}
        for i, (ref, (slot, _, acted)) in enumerate(asked.items()):
            if version - acted + i >= bound:
                oldest = next(iter(asked))
                self._staleness["oldest_first"] += 1
                self._wait([oldest])
                return oldest
            heads.setdefault(slot, ref)
        ready = set(self._wait(list(heads.values())))
        return next(ref for ref in asked if ref in ready)  # the oldest of the ready ones

    def _wait(self, refs: list) -> list:
        """The references among ``refs`` that are ready (waiting for one if none is)."""
        start = time.perf_counter()
        ready = self.pool.wait(refs)
        self.seconds["waiting"] += time.perf_counter() - start
        return ready

    def _result(self, ref: Any) -> RolloutBatch | None:
        start = time.perf_counter()
        slot = self.pool.slot_of(ref)
        incarnation = self.pool.incarnations[slot]
        self._asked.pop(ref, None)
        batch = self.pool.result(ref)
        if batch is None and self.pool.incarnations[slot] != incarnation:
            self._known[slot] = -1  # a new actor: it needs the weights
        self.seconds["receiving"] += time.perf_counter() - start
        return batch

    # ---- inserting and learning ---------------------------------------------------------------

    def insert(self, batches: list) -> None:
        """Insert ``batches`` (from the workers, in order) into the central trajectory: one
        ``extend`` per episode fragment, into its worker's lane. Batches acted by older weights
        are dropped by an on-policy learner."""
        start = time.perf_counter()
        for batch in batches:
            if batch.key in self._seen:
                raise RuntimeError(f"batch {batch.key} arrived twice")  # never: one get per ref
            self._seen.add(batch.key)
            if self.on_policy and batch.version != self.version:
                self.dropped += 1  # acted by older weights: not this policy's data
                continue
            for fragment in batch.fragments:
                self._insert_fragment(batch.worker, fragment)
            staleness = self._staleness
            staleness["max"] = max(staleness["max"], self.version - batch.version)
            staleness["sum"] += self.version - batch.version
            self.env_steps += batch.env_steps
            self.batches += 1
            self.worker_steps[batch.worker] += batch.env_steps
            self.worker_seconds[batch.worker] += batch.seconds
            self.episodes.extend(batch.episodes)
            if self.callback is not None:
                self.callback(self, batch)
        self.seconds["inserting"] += time.perf_counter() - start

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

    def learn(self) -> None:
        """``optimise(policy, PostActStage(), trajectory)``, as the loop calls it after a step;
        the weights become a new version when the controller allowed a sample."""
        start = time.perf_counter()
        policy, trajectory = self.agent.policy, self.trajectory
        set_env_steps(policy, self.env_steps)
        sampled = getattr(trajectory.controller, "n_sampled", None)
        optimise(policy, _POST_ACT, trajectory)
        if sampled is None or trajectory.controller.n_sampled != sampled:
            self.version += 1  # the weights changed
        self.seconds["learning"] += time.perf_counter() - start

    # ---- figures and the end --------------------------------------------------------------------

    def figures(self) -> dict:
        """The run's figures so far (what ``summary.json`` records under ``workers``)."""
        wall = self._wall
        per_worker = []
        for slot in range(self.pool.workers):
            steps, seconds = self.worker_steps[slot], self.worker_seconds[slot]
            per_worker.append({"worker": slot, "env_steps": steps,
                               "acting_seconds": seconds,
                               "steps_per_second": steps / seconds if seconds > 0 else 0.0,
                               "incarnations": self.pool.incarnations[slot] + 1})
        returns = [r for r, _ in self.episodes]
        staleness = self._staleness
        return {
            "workers": self.pool.workers,
            "env_steps": self.env_steps,
            "wall_seconds": wall,
            "steps_per_second": self.env_steps / wall if wall > 0 else 0.0,
            "steps_per_batch": self.steps_per_batch,
            "batches": self.batches,
            "dropped_batches": self.dropped,
            "replaced_workers": self.pool.replaced,
            "versions": self.version,
            "weight_broadcasts": self.broadcasts,
            "staleness": {"max": staleness["max"],
                          "mean": staleness["sum"] / self.batches if self.batches else 0.0,
                          "bound": 0 if self.on_policy else self.max_staleness,
                          "oldest_first": staleness["oldest_first"]},
            "episodes": len(self.episodes),
            "last_returns_mean": float(np.mean(returns[-20:])) if returns else None,
            "seconds": dict(self.seconds),
            "per_worker": per_worker,
        }

    def close(self) -> None:
        """End the workers (their actors are killed)."""
        self.pool.shutdown()

    def __enter__(self) -> LearnerBeforePlans:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
