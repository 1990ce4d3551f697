"""Every trajectories component pickles and deep-copies, before and after pushes, and the copy
goes on exactly as the original: the same further pushes give the same columns, metadata,
controller counts and next batches of equally seeded samplers."""

import copy
import pickle

import numpy as np
import pytest

from trajectories import (
    BatchSampler,
    CircularArrayBuffer,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    CircularPrioritizedTraces,
    DummySampler,
    ElasticArrayBuffer,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
    EpisodeSampleRatioController,
    EpisodesBuffer,
    EpisodesSampler,
    InsertSampleRatioController,
    MetaSampler,
    MultiBatchSampler,
    NormalizedTraces,
    Normalizer,
    NStepBatchSampler,
    SumTree,
    Trajectory,
)
from trajectories.lanes.per_lane import PerLaneEpisodes
from trajectories.lanes.rings import RingLanes

COPIES = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "deepcopy": copy.deepcopy}

LAYOUTS = {
    "sarts": lambda: CircularArraySARTSTraces(capacity=7, state=(np.float32, (2,))),
    "sartsa": lambda: CircularArraySARTSATraces(capacity=5, state=(np.float32, (2,))),
    "slart": lambda: CircularArraySLARTTraces(capacity=5, state=(np.float32, (2,)),
                                              legal_actions_mask=(np.bool_, (3,))),
    "elastic sarts": lambda: ElasticArraySARTSTraces(state=(np.float32, (2,))),
    "elastic sartsa": lambda: ElasticArraySARTSATraces(state=(np.float32, (2,))),
    "prioritized": lambda: CircularPrioritizedTraces(
        CircularArraySARTSTraces(capacity=7, state=(np.float32, (2,)))),
    "normalized": lambda: NormalizedTraces(
        CircularArraySARTSTraces(capacity=7, state=(np.float32, (2,)))),
}


def completes(traces) -> bool:
    return "next_action" in traces.keys()


def state_value(t, lane=0):
    return np.array([t, lane], dtype=np.float32)


class Feeder:
    """Deterministic episodes of 4 steps, pushed one step per call into one env or n lanes
    (lane i's episodes are shifted by i steps), SARTSA episodes completed at their end."""

    def __init__(self, n_lanes=None, slart=False, sartsa=False):
        self.n_lanes, self.slart, self.sartsa, self.t = n_lanes, slart, sartsa, 0

    def _extra(self, lanes):
        if not self.slart:
            return {}
        mask = np.ones((3,), dtype=bool) if lanes is None else np.ones((lanes, 3), dtype=bool)
        return {"legal_actions_mask": mask}

    def push(self, trajectory, count):
        for _ in range(count):
            self._one(trajectory)

    def _one(self, trajectory):
        t = self.t
        self.t += 1
        if self.n_lanes is None:
            if t % 5 == 0:
                if t and self.sartsa:
                    trajectory.push(next_action=t % 3)
                trajectory.push(state=state_value(t), **self._extra(None))
                return
            trajectory.push(state=state_value(t), action=t % 3, reward=float(t),
                            terminal=t % 5 == 4, **self._extra(None))
            return
        n = self.n_lanes
        phase = (t + np.arange(n)) % 5
        states = np.stack([state_value(t, i) for i in range(n)])
        if t == 0:
            trajectory.push(state=states, **self._extra(n))
            return
        starts = phase == 0
        if self.sartsa and starts.any():
            trajectory.push(next_action=np.full(n, t % 3), lanes=starts)
        trajectory.push(state=states, action=np.full(n, t % 3), reward=np.full(n, float(t)),
                        terminal=phase == 4, episode_start=starts, **self._extra(n))


def container_state(c):
    out = {"keys": tuple(c.keys()), "len": len(c)}
    for name in c.keys():
        out[name] = np.asarray(c[name]).tolist()
    for attr in ("sampleable_inds", "step_numbers", "episodes_lengths"):
        out[attr] = np.asarray(getattr(c, attr)).tolist()
    out["n_sampleable"] = c.n_sampleable
    if hasattr(c, "lane_lengths"):
        out["lanes"] = (c.lane_lengths(), c.open_lanes().tolist(), c.running_lanes().tolist())
    return out


def batch_state(batch):
    if isinstance(batch, dict):
        return {k: batch_state(v) for k, v in batch.items()}
    if isinstance(batch, list):
        return [batch_state(b) for b in batch]
    return np.asarray(batch).tolist()


def trajectory_state(t):
    return {"container": container_state(t.container), "controller": vars(t.controller),
            "n_lanes": t.n_lanes, "type": type(t.container).__name__}


def next_batches(t):
    """The trajectory's own sampler (its rng state included), then freshly seeded ones."""
    out = [batch_state(t.sampler.sample(t.container))]
    if len(t.container) and t.container.n_sampleable:
        out.append(batch_state(NStepBatchSampler(2, 0.5, 16, stack_size=2, rng=3)
                               .sample(t.container)))
        out.append(batch_state(EpisodesSampler().sample(t.container)))
    return out


def trajectories_to_copy():
    """(name, make trajectory, feeder) for every layout, single env and lanes."""
    cases = []
    for name, make in LAYOUTS.items():
        sartsa = name in ("sartsa", "slart", "elastic sartsa")
        cases.append((name, lambda make=make: Trajectory(
            make(), BatchSampler(8, rng=0), InsertSampleRatioController(ratio=0.29, threshold=2)),
            lambda sartsa=sartsa, name=name: Feeder(None, slart=name == "slart", sartsa=sartsa)))
        if name in ("prioritized",):
            continue  # lanes refuse prioritized traces
        cases.append((f"{name} on 3 lanes", lambda make=make: Trajectory(
            make(), BatchSampler(8, rng=0), EpisodeSampleRatioController(), n_lanes=3),
            lambda sartsa=sartsa, name=name: Feeder(3, slart=name == "slart", sartsa=sartsa)))
    cases.append(("lanes from the first push", lambda: Trajectory(
        CircularArraySARTSTraces(capacity=7, state=(np.float32, (2,))), BatchSampler(8, rng=0)),
        lambda: Feeder(2)))
    return cases


CASES = trajectories_to_copy()


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("before", [0, 1, 13])
@pytest.mark.parametrize("name, make, feeder", CASES, ids=[c[0] for c in CASES])
def test_a_copied_trajectory_goes_on_exactly_as_the_original(name, make, feeder, before, how):
    original, feed = make(), feeder()
    feed.push(original, before)
    copied = COPIES[how](original)
    assert trajectory_state(copied) == trajectory_state(original)
    assert watching(copied) == watching(original)
    feed_copy = copy.deepcopy(feed)
    feed.push(original, 17)
    feed_copy.push(copied, 17)
    assert trajectory_state(copied) == trajectory_state(original)
    assert next_batches(copied) == next_batches(original)
    # iterating asks the controller (exact counts) and samples while it allows
    assert batch_state(list(copied)) == batch_state(list(original))


def watching(t):
    return type(vars(t).get("push")).__name__


def test_the_copy_of_a_trajectory_waiting_for_its_first_push_still_splits():
    t = Trajectory(CircularArraySARTSTraces(capacity=8))
    for how in COPIES.values():
        c = how(t)
        c.push(state=np.array([1, 2, 3]))
        assert c.n_lanes == 3 and t.n_lanes is None


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("storage", [RingLanes, PerLaneEpisodes])
def test_copied_lanes_keep_their_views_apart_from_the_original(storage, how):
    how = COPIES[how]
    lb = storage(CircularArraySARTSTraces(capacity=8), 2)
    lb.push(state=np.array([0, 10]))
    lb.push(state=np.array([1, 11]), action=np.zeros(2, dtype=np.int64), reward=np.ones(2),
            terminal=np.zeros(2, dtype=bool), lanes=np.array([True, False]))  # per-lane geometry
    c = how(lb)
    for box in (lb, c):  # uniform-geometry writes, then flat-index writes and reads
        for s in range(2, 9):
            box.push(state=np.array([s, 10 + s]), action=np.zeros(2, dtype=np.int64),
                     reward=np.full(2, float(s)), terminal=np.zeros(2, dtype=bool))
    assert container_state(c) == container_state(lb)
    idx = np.arange(len(lb))
    for name in lb.keys():
        np.testing.assert_array_equal(c.take(name, idx), lb.take(name, idx))
    c.push(state=np.array([100, 110]), action=np.zeros(2, dtype=np.int64), reward=np.ones(2),
           terminal=np.zeros(2, dtype=bool))
    assert container_state(c) != container_state(lb)  # no memory shared


@pytest.mark.parametrize("how", COPIES)
def test_components_copy_and_go_on_alike(how):
    how = COPIES[how]
    ring = CircularArrayBuffer(3, dtype=np.int64)
    elastic = ElasticArrayBuffer(shape=None, dtype=None)
    tree = SumTree(5)
    norm = Normalizer()
    for x in range(5):
        ring.push(x)
        elastic.push(float(x))
        tree.push(x + 1.0)
        norm.push(x)
    copies = [how(o) for o in (ring, elastic, tree, norm)]
    for o in (ring, elastic, tree, norm, *copies):
        o.push(7)
    for o, c in zip((ring, elastic, tree), copies[:3], strict=True):
        assert np.asarray(o).tolist() == np.asarray(c).tolist()
    assert tree.get(3.0) == copies[2].get(3.0) and tree.total == copies[2].total
    assert (norm.count, norm.mean.tolist()) == (copies[3].count, copies[3].mean.tolist())
    samplers = [BatchSampler(4, rng=1), NStepBatchSampler(3, 0.9, 4, rng=2),
                EpisodesSampler(names=("state",)), DummySampler(),
                MetaSampler(a=BatchSampler(2, rng=3)), MultiBatchSampler(BatchSampler(2, rng=4), 2)]
    eb = EpisodesBuffer(CircularArraySARTSTraces(capacity=10))
    eb.push(state=0)
    for s in range(1, 6):
        eb.push(state=s, action=1, reward=1.0, terminal=False)
    for sampler in samplers:
        sampler.sample(eb)  # used: rng moved, plans resolved
        c = how(sampler)
        got = c.sample(eb)
        if isinstance(sampler, DummySampler):
            assert got is eb
        else:
            assert batch_state(got) == batch_state(sampler.sample(eb))
    for controller in (InsertSampleRatioController(0.29, 0), EpisodeSampleRatioController()):
        controller.on_insert(100, {"terminal": np.ones(100, dtype=bool)})
        c = how(controller)
        assert [c.on_sample() for _ in range(40)] == [controller.on_sample() for _ in range(40)]
