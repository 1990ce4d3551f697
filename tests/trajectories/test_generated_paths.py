"""The generated ring pushes (`trajectories._fastpush`) against the general path
(`Traces._write`), on the same layouts and inputs, through an EpisodesBuffer: steps, new
episodes, completions, ring wrap-around (lockstep evictions included), pops, clears that keep
the running episode's state, and bad values."""

from functools import partial

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import trajectories.traces as traces_module
from trajectories import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    EpisodesBuffer,
)

LAYOUTS = {
    "sarts": lambda c: CircularArraySARTSTraces(capacity=c, state=(np.float32, (2,))),
    "sartsa": lambda c: CircularArraySARTSATraces(capacity=c),
    "slart": lambda c: CircularArraySLARTTraces(capacity=c, legal_actions_mask=(np.bool_, (2,))),
}

OPS = st.lists(st.one_of(
    st.tuples(st.just("start")), st.tuples(st.just("step"), st.booleans()),
    st.tuples(st.just("complete")), st.tuples(st.just("pop")), st.tuples(st.just("popleft")),
    st.tuples(st.just("bad")), st.tuples(st.just("keep")),
), min_size=1, max_size=60)


def snapshot(eb):
    bufs = [np.asarray(b).tolist() for b in eb.traces._bufs]
    meta = eb._meta
    return (bufs, meta.logical(meta.samp).tolist(), meta.logical(meta.steps).tolist(),
            eb.episodes_lengths.tolist(), meta.n_samp, meta.step, eb._phase)


def play(eb, layout, ops):
    """Apply ``ops``; record a snapshot (or the error's type) after each."""
    out, t = [], 0
    for op in ops:
        t += 1
        state = [t, -t] if layout == "sarts" else t
        extra = {"legal_actions_mask": [True, t % 2 == 0]} if layout == "slart" else {}
        try:
            if op[0] == "start":
                eb.push(state=state, **extra)
            elif op[0] == "step":
                eb.push(state=state, action=t % 3, reward=float(t), terminal=op[1], **extra)
            elif op[0] == "complete":
                if layout == "sarts":
                    continue
                eb.push(next_action=t % 3)
            elif op[0] == "bad":  # a value no trace takes: nothing may change
                eb.push(state=state, action=0.5, reward=1.0, terminal=False, **extra)
            elif op[0] == "keep":
                eb.clear(keep_running_episodes=True)
            else:
                getattr(eb, op[0])()
            out.append(snapshot(eb))
        except (ValueError, TypeError, IndexError) as e:
            out.append((type(e).__name__, snapshot(eb)))
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@settings(max_examples=150, deadline=None)
@given(capacity=st.integers(1, 5), ops=OPS)
@example(capacity=3, ops=[("start",), ("step", False), ("popleft",), ("step", False),
                          ("step", True), ("complete",), ("popleft",), ("popleft",), ("start",),
                          ("step", False), ("pop",), ("step", False), ("bad",)])
@example(capacity=1, ops=[("start",), *[("step", False)] * 4, ("complete",), ("start",),
                          ("step", False), ("step", False)])
@example(capacity=2, ops=[("start",), *[("step", False)] * 3, ("keep",), ("bad",),
                          ("step", False), ("keep",), ("start",), ("step", True), ("keep",),
                          ("complete",), ("pop",), ("start",)])
def test_generated_and_general_paths_agree(layout, capacity, ops):
    generated = EpisodesBuffer(LAYOUTS[layout](capacity))
    played = play(generated, layout, ops)
    original = traces_module.compile_push
    traces_module.compile_push = lambda *args: None  # the rings through Traces._write
    try:
        general = EpisodesBuffer(LAYOUTS[layout](capacity))
        assert play(general, layout, ops) == played
    finally:
        traces_module.compile_push = original
    for plans, generated_plans in ((general.traces._plans, generated.traces._plans),
                                   (general.traces._pad_plans, generated.traces._pad_plans)):
        assert all(isinstance(fn, partial) for fn in plans.values())
        assert not any(isinstance(fn, partial) for fn in generated_plans.values())
