"""The generated step and first-state pushes (`trajectories._step_push`) against the general
push of a `Trajectory` (`Trajectory.push_row`), on the same layouts and inputs: steps, new episodes,
SARTSA completions, ring wrap-around (lockstep evictions included), clears that keep the running
episode, bad values, both controllers; and a laned trajectory, which takes the general path."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trajectories import (
    BatchSampler,
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    Trajectory,
    split_lanes,
)
from trajectories.controllers import EpisodeSampleRatioController, InsertSampleRatioController

STEP = ("state", "action", "reward", "terminal")
LAYOUTS = {
    "sarts": lambda c: CircularArraySARTSTraces(capacity=c, state=(np.float32, (2,))),
    "sartsa": lambda c: CircularArraySARTSATraces(capacity=c),
}
CONTROLLERS = {"insert": InsertSampleRatioController, "episode": EpisodeSampleRatioController}
OPS = st.lists(st.one_of(
    st.tuples(st.just("start")), st.tuples(st.just("step"), st.booleans()),
    st.tuples(st.just("complete")), st.tuples(st.just("bad")), st.tuples(st.just("keep")),
), min_size=1, max_size=60)


def snapshot(t):
    eb = t.container
    meta = eb._meta
    bufs = [np.asarray(b).tolist() for b in eb.traces._bufs]
    return (bufs, meta.logical(meta.samp).tolist(), meta.logical(meta.steps).tolist(),
            eb.episodes_lengths.tolist(), meta.n_samp, meta.step, eb._phase,
            vars(t.controller))


def play(t, layout, ops, push_step, push_start=None):
    """Apply ``ops``, steps through ``push_step(values)`` and new episodes through
    ``push_start(state)`` (default: ``t.push(state=...)``); a snapshot (or the error's type)
    after each."""
    push_start = push_start or (lambda state: t.push(state=state))
    out = []
    for i, op in enumerate(ops, start=1):
        state = [i, -i] if layout == "sarts" else i
        try:
            if op[0] == "start":
                push_start(state)
            elif op[0] == "step":
                push_step(state, i % 3, float(i), op[1])
            elif op[0] == "complete":
                if layout == "sarts":
                    continue
                t.push(next_action=i % 3)
            elif op[0] == "bad":  # a value no trace takes: nothing may change
                push_step(state, 0.5, 1.0, False)
            else:
                t.clear(keep_running_episodes=True)
            out.append(snapshot(t))
        except (ValueError, TypeError, IndexError) as e:
            out.append((type(e).__name__, snapshot(t)))
    return out


@pytest.mark.parametrize("controller", CONTROLLERS)
@pytest.mark.parametrize("layout", LAYOUTS)
@settings(max_examples=120, deadline=None)
@given(capacity=st.integers(1, 5), ops=OPS)
@example(capacity=2, ops=[("start",), *[("step", False)] * 5, ("step", True), ("start",),
                          ("bad",), ("step", False), ("keep",), ("step", False)])
@example(capacity=1, ops=[("start",), *[("step", False)] * 4, ("complete",), ("start",),
                          ("step", False), ("step", True), ("complete",)])
def test_generated_step_push_and_general_push_agree(layout, controller, capacity, ops):
    def trajectory():
        return Trajectory(LAYOUTS[layout](capacity), BatchSampler(2, rng=0),
                          CONTROLLERS[controller]())

    fast, general = trajectory(), trajectory()
    fast.push(state=[0, 0] if layout == "sarts" else 0)  # the first push decides the lanes
    general.push(state=[0, 0] if layout == "sarts" else 0)
    push_values = fast.push_values_function(STEP)
    push_start = fast.push_values_function(("state",))
    # the generated functions, not the dict fallback
    assert push_values.__name__ == push_start.__name__ == "push"
    played = play(fast, layout, ops, push_values, push_start)
    assert play(general, layout, ops,
                lambda *values: general.push_row(dict(zip(STEP, values, strict=True)))) == played


def test_a_step_of_a_new_container_or_a_lane_takes_the_general_path():
    t = Trajectory(CircularArraySARTSTraces(capacity=4))
    t.push(state=0)
    push_values = t.push_values_function(STEP)
    push_values(1, 1, 1.0, False)
    split = split_lanes(Trajectory(CircularArraySARTSTraces(capacity=4)), 1)
    t.container = split.container  # another container: the generated function must not write
    t.n_lanes = 1                  # the old one
    t.use_lane(0)
    t.push(state=10)
    push_values(11, 0, 2.0, True)
    assert t["state"].tolist() == [10] and t["next_state"].tolist() == [11]
    assert t.controller.n_inserted == 2


def test_push_values_function_falls_back_for_traces_it_does_not_generate():
    from trajectories import ElasticArraySARTSTraces

    t = Trajectory(ElasticArraySARTSTraces())
    t.push(state=0)
    push_values = t.push_values_function(STEP)
    assert push_values.__name__ == "<lambda>"
    push_values(1, 1, 1.0, True)
    assert t["next_state"].tolist() == [1] and t.controller.n_inserted == 1


def test_a_controller_whose_on_insert_was_replaced_is_called():
    t = Trajectory(CircularArraySARTSTraces(capacity=4))
    seen = []
    t.controller.on_insert = lambda n, data=None: seen.append((n, dict(data)))
    t.push(state=0)
    t.push_values_function(STEP)(1, 1, 1.0, False)
    assert seen == [(1, {"state": 1, "action": 1, "reward": 1.0, "terminal": False})]
