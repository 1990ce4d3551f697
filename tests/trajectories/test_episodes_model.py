"""Random pushes, completions, pops and poplefts, on one buffer and on lanes, against a plain
list model of which transitions exist and which are sampleable. Every row a container reports,
iterates or samples must be a transition that was pushed, complete and inside one episode."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
    EpisodesBuffer,
    EpisodesSampler,
    NStepBatchSampler,
)
from trajectories.lanes.per_lane import PerLaneEpisodes
from trajectories.lanes.rings import RingLanes

EMPTY, COMPLETED, STARTED, STEPPING = range(4)


class Entry:
    """One stored state and what is known of the row leaving it."""

    def __init__(self, state, ep, step):
        self.state, self.ep, self.step = state, ep, step
        self.action = self.reward = self.terminal = None


class LaneModel:
    """The states of one buffer (or lane) in a list, with the rules of the episodes."""

    def __init__(self, sartsa):
        self.sartsa, self.entries, self.phase = sartsa, [], EMPTY
        self.ep_last_step = {}

    # -- the rules -------------------------------------------------------------------------------
    def allows(self, kind):
        if kind == "start":
            return self.phase != STARTED and not (self.sartsa and self.phase == STEPPING)
        if kind == "step":
            return self.phase in (STARTED, STEPPING)
        return self.sartsa and self.phase == STEPPING

    # -- pushes and removals ----------------------------------------------------------------------
    def start(self, s, ep):
        if self.entries:  # the boundary row: padding (and, with SARTSA, the completion)
            last = self.entries[-1]
            if not self.sartsa:
                last.action = 0
            last.reward, last.terminal = 0.0, False
        self.entries.append(Entry(s, ep, 1))
        self.ep_last_step[ep] = 1
        self.phase = STARTED

    def step(self, s, a, r, d):
        last = self.entries[-1]
        last.action, last.reward, last.terminal = a, r, d
        self.entries.append(Entry(s, last.ep, last.step + 1))
        self.ep_last_step[last.ep] = last.step + 1
        self.phase = STEPPING

    def complete(self, a):
        self.entries[-1].action = a
        self.phase = COMPLETED

    def pop(self):
        """Drop the newest state and the row leading to it (with SARTSA, the newest action
        frame: the completion if there is one, else the action of that row)."""
        removed = self.entries.pop()
        row = self.row_values(len(self.entries) - 1, extra=removed)
        if self.entries:
            last = self.entries[-1]
            last.reward = last.terminal = None
            if not self.sartsa or removed.action is None:
                last.action = None
            self.ep_last_step[last.ep] = last.step
            if self.phase == STARTED:
                self.phase = STEPPING if last.step > 1 else STARTED
            elif self.phase == STEPPING and last.step == 1:
                self.phase = STARTED
        else:
            self.phase = EMPTY
        return row

    def popleft(self):
        row = self.row_values(0) if len(self.entries) > 1 else {}
        self.entries.pop(0)
        if not self.entries:
            self.phase = EMPTY
        return row

    # -- what the container should show ----------------------------------------------------------
    def row_values(self, i, extra=None):
        """The known values of row ``i`` (``extra``: the entry after it, if it was removed)."""
        if i < 0:
            return {}
        e = self.entries[i]
        nxt = extra if extra is not None else self.entries[i + 1]
        out = {"state": e.state, "next_state": nxt.state}
        if e.action is not None:
            out["action"] = e.action
        if self.sartsa and nxt.action is not None:
            out["next_action"] = nxt.action
        if e.reward is not None:
            out["reward"], out["terminal"] = e.reward, e.terminal
        return out

    def complete_rows(self):
        n = len(self.entries)
        return sum(1 for i in range(n - 1) if self.entries[i].reward is not None and (
            not self.sartsa or self.entries[i + 1].action is not None))

    def sampleable(self, i):
        e, n = self.entries, len(self.entries)
        return i + 1 < n and e[i].ep == e[i + 1].ep and i < self.complete_rows()

    def transition(self, i):
        return tuple(sorted(self.row_values(i).items()))

    def meta(self):
        return ([self.sampleable(i) for i in range(len(self.entries))],
                [e.step for e in self.entries],
                [self.ep_last_step[e.ep] - 1 for e in self.entries])


def as_row(row):
    return tuple(sorted((k, np.asarray(v).item()) for k, v in row.items()))


def lane_states(container, lane):
    """How many states the container holds in ``lane`` (None: a single buffer)."""
    if lane is None:
        return len(container.step_numbers)
    if isinstance(container, RingLanes):
        return int(container._m[lane])
    return len(container._lanes[lane].step_numbers)


def check(container, models, lanes, pushed, capacity, popped):
    """The container against the models (trimmed to what the rings kept)."""
    per_lane = []
    for lane, model in enumerate(models):
        kept = lane_states(container, lane if lanes else None)
        assert kept <= len(model.entries)
        if capacity is not None and not popped:  # the rings keep what they promise
            rows = model.complete_rows()
            del model.entries[:len(model.entries) - kept]
            assert model.complete_rows() == min(capacity, rows)
        else:
            del model.entries[:len(model.entries) - kept]
        per_lane.append(model.complete_rows())
    meta = [m.meta() for m in models]
    if lanes:
        assert container.lane_lengths() == per_lane
        cut = [tuple(x[:n] for x in m) for m, n in zip(meta, per_lane, strict=True)]
        expected = tuple(sum((list(c[k]) for c in cut), []) for k in range(3))
    else:
        assert len(container) == per_lane[0]
        expected = meta[0]
    got = (container.sampleable_inds.astype(bool).tolist(), container.step_numbers.tolist(),
           container.episodes_lengths.tolist())
    assert got == tuple(expected)
    rows = [m.transition(i) for m in models for i in range(len(m.entries)) if m.sampleable(i)]
    assert container.n_sampleable == len(rows)
    assert [as_row(r) for r in container] == rows
    assert set(rows) <= pushed  # only transitions that were pushed, complete, in one episode
    if rows:
        names = tuple(container.keys())
        for sampler in (BatchSampler(64, rng=0), NStepBatchSampler(1, 1.0, 64, rng=1)):
            batch = sampler.sample(container)
            sampled = {tuple(sorted((k, batch[k][i].item()) for k in names)) for i in range(64)}
            assert sampled <= set(rows)
        episodes = EpisodesSampler().sample(container)
        listed = [tuple(sorted((k, e[k][i].item()) for k in names))
                  for e in episodes for i in range(len(e["state"]))]
        assert listed == rows


OPS = st.lists(st.one_of(
    st.tuples(st.just("start"), st.integers(0, 2)),
    st.tuples(st.just("step"), st.integers(0, 2), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("complete"), st.integers(0, 2), st.integers(0, 3)),
    st.tuples(st.just("pop"), st.integers(0, 2)),
    st.tuples(st.just("popleft"), st.integers(0, 2)),
), max_size=45)


def run(container, models, lanes, ops, capacity):
    n = len(models)
    counter, ep = 0, 0
    pushed = set()
    popped = False

    def lane_push(lane, **values):
        if not lanes:
            container.push(**values)
            return
        mask = np.zeros(n, dtype=bool)
        mask[lane] = True
        container.push(**{k: np.full(n, v) for k, v in values.items()}, lanes=mask)

    for op in ops:
        lane = op[1] % n
        model = models[lane]
        before = (container.step_numbers.tolist(), [as_row(r) for r in container])
        if op[0] in ("start", "step", "complete"):
            counter += 1
            kind = op[0]
            values = {"start": dict(state=counter),
                      "step": dict(state=counter, action=op[2] if kind == "step" else 0,
                                   reward=float(counter), terminal=op[-1]),
                      "complete": dict(next_action=op[-1])}[kind]
            if kind == "complete" and not model.sartsa:
                continue
            if not model.allows(kind):
                with pytest.raises(ValueError):
                    lane_push(lane, **values)
                assert before == (container.step_numbers.tolist(), [as_row(r) for r in container])
                continue
            lane_push(lane, **values)
            if kind == "start":
                ep += 1
                model.start(counter, ep)
            elif kind == "step":
                model.step(counter, op[2], float(counter), op[3])
            else:
                model.complete(op[-1])
        else:
            popped = True
            if not model.entries:
                with pytest.raises(IndexError):
                    (getattr(container, op[0])(lane) if lanes else getattr(container, op[0])())
                continue
            removed = getattr(container, op[0])(lane) if lanes else getattr(container, op[0])()
            want = getattr(model, op[0])()
            assert as_row(removed) == tuple(sorted(want.items()))
        for m in models:
            pushed.update(m.transition(i) for i in range(len(m.entries)) if m.sampleable(i))
        check(container, models, lanes, pushed, capacity, popped)


@pytest.mark.parametrize("sartsa", [False, True], ids=["sarts", "sartsa"])
@settings(max_examples=200, deadline=None)
@given(capacity=st.one_of(st.none(), st.integers(1, 5)), ops=OPS)
def test_one_buffer_matches_the_model(sartsa, capacity, ops):
    if capacity is None:
        traces = ElasticArraySARTSATraces() if sartsa else ElasticArraySARTSTraces()
    else:
        traces = (CircularArraySARTSATraces if sartsa else CircularArraySARTSTraces)(capacity)
    run(EpisodesBuffer(traces), [LaneModel(sartsa)], False, ops, capacity)


@pytest.mark.parametrize("storage, sartsa", [(RingLanes, False), (PerLaneEpisodes, False),
                                             (PerLaneEpisodes, True)],
                         ids=["rings", "per_lane", "per_lane-sartsa"])
@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 4), ops=OPS)
def test_lanes_match_the_model(storage, sartsa, capacity, ops):
    layout = CircularArraySARTSATraces if sartsa else CircularArraySARTSTraces
    container = storage(layout(capacity * 3), 3)  # capacity rows a lane
    run(container, [LaneModel(sartsa) for _ in range(3)], True, ops, capacity)
