"""The order in which a Learner inserts its workers' batches, without Ray: a scripted pool runs
plain RolloutWorkers in this process and decides when each request is ready, and hands ready
requests back newest first (``ray.wait`` promises no order). Each worker's batches must still go
in in the order it acted them, whole episodes must reach the hooks as the workers ended them, and
no batch may go in more than ``max_staleness`` versions behind the current weights."""

from __future__ import annotations

import re
from collections import Counter

import pytest

import stagerl as rl
from stagerl.core.episodes import EpisodeHook
from stagerl.distributed import EpisodeReplay, Learner, RecordOnly, RolloutWorker


class ScriptedPool:
    """A WorkerPool stand-in: requests are acted at once, in each worker's order, and become
    ready at the tick ``ready_at(slot, sequence, tick)`` says (a tick passes per wait)."""

    def __init__(self, workers: int, ready_at):
        self.workers, self.ready_at = workers, ready_at
        self.actors = [RolloutWorker(walk_env, walk_agent, worker=slot, seed=0)
                       for slot in range(workers)]
        self.incarnations, self.replaced, self.ray = [0] * workers, 0, self
        self.tick, self.sequences = 0, [0] * workers
        self._pending: dict = {}  # ref -> (slot, batch, ready tick)
        self._refs = 0

    def put(self, weights):  # the walk's random policy keeps its own (no weights to send)
        return None

    def wait_ready(self):
        pass

    def submit(self, slot, steps, weights=None, env_steps=0, version=0):
        batch = self.actors[slot].sample(steps, weights, env_steps, version)
        ready = self.ready_at(slot, self.sequences[slot], self.tick)
        self.sequences[slot] += 1
        self._refs += 1
        self._pending[self._refs] = (slot, batch, ready)
        return self._refs

    def slot_of(self, ref):
        return self._pending[ref][0]

    def pending(self):
        return list(self._pending)

    def wait(self, refs=None, timeout=None):
        refs = self.pending() if refs is None else list(refs)
        self.tick += 1
        if not any(self._pending[r][2] <= self.tick for r in refs):
            self.tick = min(self._pending[r][2] for r in refs)
        return sorted((r for r in refs if self._pending[r][2] <= self.tick), reverse=True)

    def result(self, ref):
        return self._pending.pop(ref)[1]

    def shutdown(self):
        for actor in self.actors:
            actor.close()


def walk_env(seed):
    return rl.RandomWalk1D()


def walk_agent(env, seed):
    return rl.Agent(rl.RandomPolicy(rng=seed),
                    rl.Trajectory(rl.CircularArraySARTSTraces(capacity=200)))


def central_agent():
    # RecordOnly has no sample count: every update is a new version of the weights.
    return rl.Agent(rl.RandomPolicy(rng=0),
                    rl.Trajectory(rl.CircularArraySARTSTraces(capacity=10_000),
                                  controller=RecordOnly()))


class Returns(EpisodeHook):
    def __init__(self):
        super().__init__()
        self.episodes = []

    def on_episode(self, episode, policy, env):
        self.episodes.append((float(episode.total_reward), int(episode.length),
                              bool(episode.terminated or episode.truncated)))


def run(pool, steps, **options):
    """Train ``steps``; returns (learner, inserted (worker, sequence, staleness) records,
    the worker-side finished episodes, the episodes the hooks were told)."""
    inserted, finished, hook = [], [], Returns()
    replay = None

    def callback(learner, batch):
        inserted.append((batch.worker, batch.sequence, learner.version - batch.version))
        finished.extend(batch.episodes)
        replay(learner, batch)

    learner = Learner(central_agent(), pool, steps_per_batch=5, callback=callback, **options)
    replay = EpisodeReplay(hook, learner.agent)
    with learner:
        learner.train(steps)
    return learner, inserted, finished, hook.episodes


def in_worker_order(inserted, workers):
    return all([s for w, s, _ in inserted if w == slot] ==
               list(range(sum(1 for w, _, _ in inserted if w == slot)))
               for slot in range(workers))


def test_a_workers_later_batch_ready_first_still_goes_in_after_its_earlier_one():
    # Worker 0's first batch is ready long after its second (and after worker 1's batches),
    # and ready requests come back newest first.
    def ready_at(slot, sequence, tick):
        return tick + (40 if (slot, sequence) == (0, 0) else 1)

    learner, inserted, finished, told = run(ScriptedPool(2, ready_at), 200)
    assert learner.env_steps == 200 and len(inserted) == 40
    assert in_worker_order(inserted, 2)
    assert [w for w, s, _ in inserted[:3]] != [0, 0, 0]  # worker 1 went on meanwhile
    # Every episode the hooks heard of ended in a worker, with that worker's return and length.
    ended = Counter((r, n) for r, n, done in told if done)
    assert ended == Counter(finished) and sum(ended.values()) >= 10
    assert max(n for _, n in ended) > 10  # episodes that spanned several batches of 5 steps
    assert sum(1 for *_, done in told if not done) == 0  # none cut before the end


def test_a_slow_worker_holds_the_others_back_only_as_far_as_max_staleness():
    def ready_at(slot, sequence, tick):  # worker 0 takes 25 ticks a batch, worker 1 one
        return tick + (25 if slot == 0 else 1)

    free, inserted, *_ = run(ScriptedPool(2, ready_at), 300, max_staleness=10**6)
    assert max(s for *_, s in inserted) > 8  # unbounded, worker 0's batches go in stale
    assert free.figures()["staleness"]["oldest_first"] == 0

    learner, inserted, finished, told = run(ScriptedPool(2, ready_at), 300)
    figures = learner.figures()
    assert learner.max_staleness == 8  # 2 * in_flight * workers
    assert max(s for *_, s in inserted) == figures["staleness"]["max"] <= 8
    assert figures["staleness"]["oldest_first"] > 0 and figures["staleness"]["bound"] == 8
    assert figures["staleness"]["mean"] == pytest.approx(
        sum(s for *_, s in inserted) / len(inserted))
    assert in_worker_order(inserted, 2)
    assert Counter((r, n) for r, n, done in told if done) == Counter(finished)


def test_the_smallest_bound_inserts_every_request_in_the_order_it_was_asked():
    def ready_at(slot, sequence, tick):  # worker 1 is always ready first
        return tick + (3 if slot == 0 else 1)

    learner, inserted, *_ = run(ScriptedPool(2, ready_at), 100, max_staleness=3)
    assert max(s for *_, s in inserted) <= 3
    assert in_worker_order(inserted, 2)


@pytest.mark.parametrize("bound", [2, 0, -1, 2.5, True, "8"])
def test_a_staleness_bound_below_the_requests_in_flight_is_refused(bound):
    pool = ScriptedPool(2, lambda slot, sequence, tick: tick + 1)
    message = ("max_staleness must be an int >= 3 for 2 workers with in_flight=2 .*got "
               + re.escape(f"max_staleness={bound!r}"))
    with pytest.raises(ValueError, match=message):
        Learner(central_agent(), pool, steps_per_batch=5, max_staleness=bound)
    pool.shutdown()
