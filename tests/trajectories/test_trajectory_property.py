"""Random pushes, episode starts, completions and bulk extends against a list-based model."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectories import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
    Trajectory,
)

EMPTY, STARTED, STEPPING, COMPLETED = range(4)


class Model:
    """Everything ever pushed, in plain lists indexed by state, and how many of the oldest
    states (with their rows) the rings dropped. The rings: states ``capacity + 1`` frames,
    plain traces ``capacity`` (SARTS); states ``capacity + 2``, actions, rewards and terminals
    ``capacity + 1`` (SARTSA). A push that overflows a multiplexed ring drops the oldest row of
    every column."""

    def __init__(self, capacity, sartsa):
        self.capacity, self.sartsa = capacity, sartsa
        self.states, self.eps, self.steps = [], [], []
        self.actions, self.rewards, self.terminals = [], [], []
        self.phase, self.inserted, self.counter = EMPTY, 0, 0
        self.first = 0  # states (and rows) dropped by the rings

    def _kept(self, column):
        return len(column) - self.first

    def _overflows(self, states=False, actions=False):
        if self.capacity is None:
            return False
        cap_s = self.capacity + (2 if self.sartsa else 1)
        return (states and self._kept(self.states) == cap_s) or \
            (actions and self.sartsa and self._kept(self.actions) == self.capacity + 1)

    # rule checks, as the design states them
    def can_start(self):
        return self.phase != STARTED and not (self.sartsa and self.phase == STEPPING)

    def can_step(self):
        return self.phase in (STARTED, STEPPING)

    def start(self, s):
        evict = self._overflows(states=True)
        if self.phase != EMPTY:  # a new episode: pad the plain traces (a multiplex needs none)
            if not self.sartsa:
                self.actions.append(0)
            self.rewards.append(0.0)
            self.terminals.append(False)
        self.states.append(s)
        self.eps.append(self.eps[-1] + 1 if self.eps else 0)
        self.steps.append(1)
        self.phase = STARTED
        self.first += evict

    def step(self, s, a, r, d):
        evict = self._overflows(states=True, actions=True)
        self.states.append(s)
        self.eps.append(self.eps[-1])
        self.steps.append(self.steps[-1] + 1)
        self.actions.append(a)
        self.rewards.append(r)
        self.terminals.append(d)
        self.phase = STEPPING
        self.inserted += 1
        self.first += evict

    def complete(self, a):
        evict = self._overflows(actions=True)
        self.actions.append(a)
        self.phase = COMPLETED
        self.first += evict

    def expected(self):
        n, first = len(self.states), self.first
        cols = {"state": self.states[first:n - 1], "next_state": self.states[first + 1:n],
                "reward": self.rewards[first:], "terminal": self.terminals[first:]}
        if self.sartsa:
            kept = self.actions[first:]
            cols["action"] = kept[:-1]
            cols["next_action"] = kept[1:]
        else:
            cols["action"] = self.actions[first:]
        last_step = {}
        for e, k in zip(self.eps, self.steps, strict=True):
            last_step[e] = k
        samp = [int(i + 1 < n and self.eps[i] == self.eps[i + 1]
                    and (not self.sartsa or i + 1 < len(self.actions))) for i in range(first, n)]
        meta = (samp, self.steps[first:], [last_step[e] - 1 for e in self.eps[first:]])
        return cols, meta

    def complete_rows(self):
        """Rows (boundaries included) whose every value is known: what ``len`` counts."""
        n = len(self.states) - self.first
        return max(0, n - 1 - (self.sartsa and self.phase != COMPLETED))


def observed(t):
    eb = t.container
    cols = {k: eb[k].tolist() for k in eb.keys()}
    meta = (eb.sampleable_inds.astype(int).tolist(), eb.step_numbers.tolist(),
            eb.episodes_lengths.tolist())
    return cols, meta


def check(t, model):
    cols, meta = model.expected()
    got_cols, got_meta = observed(t)
    assert got_cols == cols
    assert got_meta == meta
    eb = t.container
    assert eb.n_sampleable == sum(meta[0])
    assert len(t) == min(len(c) for c in cols.values()) == model.complete_rows()
    if model.capacity is not None and model.first:  # the rings are full: capacity rows held
        assert len(t) == model.capacity
    idx = np.arange(len(t), dtype=np.int64)
    assert eb.is_sampleable_at(idx).astype(int).tolist() == meta[0][:len(t)]
    assert eb.step_number_at(idx).tolist() == meta[1][:len(t)]
    assert eb.episode_length_at(idx).tolist() == meta[2][:len(t)]
    for i in eb.sampleable_indices():
        row = eb[int(i)]
        assert {k: row[k].item() for k in row} == {k: cols[k][i] for k in cols}
    assert t.controller.n_inserted == model.inserted


ops = st.lists(st.one_of(
    st.tuples(st.just("start")),
    st.tuples(st.just("step"), st.integers(0, 3), st.integers(-2, 2), st.booleans()),
    st.tuples(st.just("complete"), st.integers(0, 3)),
    st.tuples(st.just("extend"), st.booleans(), st.integers(0, 5), st.booleans()),
), max_size=40)


@pytest.mark.parametrize("sartsa", [False, True])
@settings(max_examples=150, deadline=None)
@given(capacity=st.one_of(st.none(), st.integers(1, 6)), ops=ops, seed=st.integers(0, 2**16))
def test_trajectory_matches_list_model(sartsa, capacity, ops, seed):
    if capacity is None:
        traces = ElasticArraySARTSATraces() if sartsa else ElasticArraySARTSTraces()
    else:
        traces = (CircularArraySARTSATraces if sartsa else CircularArraySARTSTraces)(capacity)
    t = Trajectory(traces)
    model = Model(capacity, sartsa)
    rng = np.random.default_rng(seed)

    def new_state():
        model.counter += 1
        return model.counter

    for op in ops:
        before = observed(t)
        if op[0] == "start":
            s = new_state()
            if model.can_start():
                t.push(state=s)
                model.start(s)
            else:
                with pytest.raises(ValueError):
                    t.push(state=s)
        elif op[0] == "step":
            _, a, r, d = op
            s = new_state()
            if model.can_step():
                t.push(state=s, action=a, reward=float(r), terminal=d)
                model.step(s, a, float(r), d)
            else:
                with pytest.raises(ValueError):
                    t.push(state=s, action=a, reward=float(r), terminal=d)
        elif op[0] == "complete":
            if not sartsa:
                continue
            if model.phase == STEPPING:
                t.push(next_action=op[1])
                model.complete(op[1])
            else:
                with pytest.raises(ValueError):
                    t.push(next_action=op[1])
        else:
            _, new_episode, T, complete = op
            complete = complete and sartsa
            states = [new_state() for _ in range(T + new_episode)]
            acts = rng.integers(0, 4, size=T).tolist()
            rews = rng.integers(-2, 3, size=T).astype(float).tolist()
            dones = rng.random(T) < 0.3
            cols = dict(state=states, action=acts, reward=rews, terminal=dones)
            if complete:
                cols["next_action"] = 7
            legal = (model.can_start() if new_episode else (model.can_step() or T == 0)) and \
                not (complete and T == 0 and (new_episode or model.phase != STEPPING))
            if not legal:
                with pytest.raises(ValueError):
                    t.extend(new_episode=new_episode, **cols)
            else:
                assert t.extend(new_episode=new_episode, **cols) == T
                if new_episode:
                    model.start(states[0])
                for k in range(T):
                    model.step(states[k + new_episode], acts[k], rews[k], bool(dones[k]))
                if complete:
                    model.complete(7)
        if model.states or before != observed(t):
            check(t, model)


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 5), lengths=st.lists(st.integers(0, 7), min_size=1, max_size=6))
def test_extend_equals_single_pushes(capacity, lengths):
    a = Trajectory(CircularArraySARTSATraces(capacity))
    b = Trajectory(CircularArraySARTSATraces(capacity))
    s = 0
    for T in lengths:
        states = list(range(s, s + T + 1))
        s += T + 1
        acts, rews, dones = list(range(T)), [float(x) for x in range(T)], [False] * T
        a.push(state=states[0])
        for k in range(T):
            a.push(state=states[k + 1], action=acts[k], reward=rews[k], terminal=dones[k])
        if T:
            a.push(next_action=9)
        b.extend(state=states, action=acts, reward=rews, terminal=dones,
                 **({"next_action": 9} if T else {}))
        if not T:  # an episode without a step cannot be followed by a new one
            break
    assert observed(a) == observed(b)
    assert a.controller.n_inserted == b.controller.n_inserted
    assert a.container.n_sampleable == b.container.n_sampleable
