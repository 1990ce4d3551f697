import numpy as np
import pytest

from trajectories import CircularArraySARTSTraces
from trajectories.buffers import CircularArrayBuffer, ElasticArrayBuffer
from trajectories.nested import NestedBuffer
from trajectories.trace import Trace
from trajectories.traces import MultiplexTraces, Traces


def test_traces_rows_columns_and_partial_push():
    t = Traces(a=CircularArrayBuffer(3, dtype=np.int64), b=[])
    assert len(t) == 0 and t.keys() == ("a", "b") and t.slots == (("a",), ("b",))
    t.push(a=1)
    assert len(t) == 0  # the shortest column
    t.push(a=2, b=0.5)
    t.push(a=3, b=1.5)
    assert len(t) == 2
    assert t["a"].tolist() == [1, 2, 3]
    assert t["b"].tolist() == [0.5, 1.5]
    assert t[0] == {"a": 1, "b": 0.5}
    assert t[-1] == {"a": 2, "b": 1.5}
    rows = t[0:2]
    assert rows["a"].tolist() == [1, 2] and rows["b"].tolist() == [0.5, 1.5]
    idx = t[np.array([[1], [0]])]
    assert idx["a"].shape == (2, 1) and idx["a"].tolist() == [[2], [1]]
    with pytest.raises(IndexError):
        t[2]
    with pytest.raises(KeyError):
        t["c"]


def test_empty_list_takes_dtype_from_first_push():
    t = Traces(x=[])
    t.push(x=np.array([1, 2], dtype=np.int32))
    assert t["x"].dtype == np.int32 and t["x"].shape == (1, 2)


def test_column_is_a_copy():
    t = Traces(a=CircularArrayBuffer(2, dtype=np.int64))
    t.push(a=1)
    col = t["a"]
    col[0] = 5
    assert t["a"].tolist() == [1]


def test_capacity_is_smallest_row_capacity():
    t = Traces(a=CircularArrayBuffer(3), b=CircularArrayBuffer(5))
    assert t.capacity == 3
    m = MultiplexTraces("s", "s2", CircularArrayBuffer(4))
    assert m.capacity == 3
    assert Traces(a=[]).capacity == float("inf")


def test_multiplex_views():
    m = MultiplexTraces("state", "next_state", CircularArrayBuffer(4, dtype=np.int64))
    assert len(m) == 0 and m.keys() == ("state", "next_state")
    m.push(state=0)
    assert len(m) == 0 and m["state"].tolist() == [] and m["next_state"].tolist() == []
    m.push(next_state=1)  # either name pushes onto the shared buffer
    for s in (2, 3, 4, 5):
        m.push(state=s)
    # buffer holds 2 3 4 5 (capacity 4)
    assert m["state"].tolist() == [2, 3, 4]
    assert m["next_state"].tolist() == [3, 4, 5]
    assert len(m) == 3
    assert m[1] == {"state": 3, "next_state": 4}
    assert m.take("next_state", np.array([0, 2])).tolist() == [3, 5]
    assert m.take("state", np.array([0, 2])).tolist() == [2, 4]


def test_both_names_of_a_multiplex_raise_before_writing():
    t = MultiplexTraces("s", "s2", [1, 2]) + Traces(a=[5])
    with pytest.raises(ValueError, match="both"):
        t.push(s=3, s2=4, a=1)
    assert t["s"].tolist() == [1] and t["a"].tolist() == [5]


def test_unknown_key_raises_before_writing():
    t = Traces(a=[1], b=[2])
    with pytest.raises((KeyError, ValueError)) as e:
        t.push(a=1, c=2)
    assert "'c'" in str(e.value)
    assert t["a"].tolist() == [1]


def test_bad_value_in_one_column_writes_no_column():
    t = Traces(a=CircularArrayBuffer(2, dtype=np.int64), b=CircularArrayBuffer(2))
    t.push(a=1, b=1.0)
    t.push(a=2, b=2.0)
    with pytest.raises((TypeError, ValueError)):
        t.push(a=3, b="x")
    with pytest.raises((TypeError, ValueError)):
        t.push(b=3.0, a=float("nan"))
    assert t["a"].tolist() == [1, 2] and t["b"].tolist() == [1.0, 2.0]
    with pytest.raises((TypeError, ValueError)):
        t.append(a=[3, 4], b=[1.0, "y"])
    assert t["a"].tolist() == [1, 2] and t["b"].tolist() == [1.0, 2.0]


def test_composition_is_flat_and_rejects_duplicate_names():
    t = MultiplexTraces("s", "s2", []) + Traces(a=[], r=[]) + MultiplexTraces("x", "x2", [])
    assert t.keys() == ("s", "s2", "a", "r", "x", "x2")
    assert t.slots == (("s", "s2"), ("a",), ("r",), ("x", "x2"))
    assert type(t) is Traces
    with pytest.raises(ValueError, match="unique"):
        Traces(a=[]) + Traces(a=[])


def test_append_many_rows():
    t = MultiplexTraces("s", "s2", CircularArrayBuffer(4, dtype=np.int64)) + Traces(
        a=CircularArrayBuffer(3, dtype=np.int64))
    t.append(s=[0, 1, 2], a=[10, 11])
    assert t["s"].tolist() == [0, 1] and t["s2"].tolist() == [1, 2] and t["a"].tolist() == [10, 11]
    t.append(s=[3, 4, 5], a=[12, 13, 14])
    # leader (s) overflowed by 2: every slot dropped its 2 oldest frames
    assert t["s"].tolist() == [2, 3, 4] and t["a"].tolist() == [12, 13, 14]


def test_pad_pushes_zero_rows_into_plain_slots_not_named():
    t = MultiplexTraces("s", "s2", [0]) + Traces(a=[7], b=[1.5])
    t.pad(s=1)
    assert t["s2"].tolist() == [1]
    assert t["a"].tolist() == [7, 0] and t["b"].tolist() == [1.5, 0.0]
    t.pad(s=2, b=3.0)
    assert t["a"].tolist() == [7, 0, 0] and t["b"].tolist() == [1.5, 0.0, 3.0]


def test_leader_overflow_drops_a_row_everywhere():
    # A slot that is not full (the action multiplex of SARTSA mid-episode) still drops its
    # oldest frame when the states overflow, so rows stay aligned.
    t = MultiplexTraces("s", "s2", CircularArrayBuffer(3, dtype=np.int64)) + MultiplexTraces(
        "a", "a2", CircularArrayBuffer(3, dtype=np.int64))
    t.push(s=0)
    t.push(s=1, a=10)
    t.push(s=2, a=11)
    t.push(s=3, a=12)  # states overflow: 0 and 10 go
    assert t["s"].tolist() == [1, 2] and t["a"].tolist() == [11]
    assert np.asarray(t._bufs[1]).tolist() == [11, 12]


def test_pop_popleft_clear_act_on_all_columns():
    t = MultiplexTraces("s", "s2", CircularArrayBuffer(4, dtype=np.int64)) + Traces(
        a=CircularArrayBuffer(3, dtype=np.int64))
    t.append(s=[0, 1, 2, 3], a=[10, 11, 12])
    assert t.pop() == {"s": 2, "s2": 3, "a": 12}
    assert t["s"].tolist() == [0, 1] and t["a"].tolist() == [10, 11]
    assert t.popleft() == {"s": 0, "s2": 1, "a": 10}
    assert t["s"].tolist() == [1] and t["s2"].tolist() == [2] and t["a"].tolist() == [11]
    t.clear()
    assert len(t) == 0
    with pytest.raises(IndexError):
        t.pop()


def test_empty_copy_same_layout_new_capacity():
    t = MultiplexTraces("s", "s2", CircularArrayBuffer(5, (2,), np.float32)) + Traces(
        a=CircularArrayBuffer(4, dtype=np.int8), e=ElasticArrayBuffer(dtype=np.int16))
    t.push(s=1)
    c = t.empty_copy()
    assert c.keys() == t.keys() and len(c) == 0 and c.capacity == 4
    c2 = t.empty_copy(capacity=10)
    assert c2.capacity == 10
    assert c2._bufs[0].capacity == 11 and c2._bufs[0].frame_shape == (2,)
    assert c2._bufs[1].dtype == np.int8 and c2._bufs[2].dtype == np.int16
    with pytest.raises(ValueError, match="capacity"):
        t.empty_copy(capacity=0)


def test_trace_wraps_a_buffer():
    t = Trace(CircularArrayBuffer(2, dtype=np.int64))
    t.push(1)
    t.append([2, 3])
    assert np.asarray(t).tolist() == [2, 3] and t.capacity == 2 and len(t) == 2
    assert t.pop() == 3 and t.popleft() == 2
    tr = Traces(x=Trace([1, 2]))
    assert tr["x"].tolist() == [1, 2]
    with pytest.raises(TypeError):
        Traces(x=5)


def test_iteration_yields_rows():
    t = Traces(a=[1, 2], b=[3, 4])
    assert list(t) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]


def sartsa_rows(t):
    return [(r["state"], r["action"], r["reward"], r["next_state"], r["next_action"]) for r in t]


@pytest.mark.parametrize("order", ["key by key", "round robin"])
def test_raw_sartsa_traces_fed_partial_pushes_hold_capacity_complete_rows(order):
    from trajectories import CircularArraySARTSATraces

    t = CircularArraySARTSATraces(3)
    pushes = {"state": [10, 20, 30, 40, 50], "action": [1, 2, 3, 4], "reward": [1.0, 2.0, 3.0],
              "terminal": [False, False, True]}
    if order == "key by key":
        sequence = [(k, v) for k, values in pushes.items() for v in values]
    else:
        sequence = [(k, values[i]) for i in range(5) for k, values in pushes.items()
                    if i < len(values)]
    for name, value in sequence:
        t.push(**{name: value})
    assert len(t) == 3 and t.capacity == 3
    assert sartsa_rows(t) == [(10, 1, 1.0, 20, 2), (20, 2, 2.0, 30, 3), (30, 3, 3.0, 40, 4)]


def test_any_multiplex_overflow_drops_the_oldest_row_of_every_column():
    from trajectories import CircularArraySARTSATraces

    t = CircularArraySARTSATraces(1)  # states 3 frames, actions, rewards, terminals 2
    t.push(state=0)
    t.push(state=1, action=10, reward=1.0, terminal=False)
    t.push(state=2, action=11, reward=2.0, terminal=True)
    assert sartsa_rows(t) == [(0, 10, 1.0, 1, 11)]
    t.push(action=12)  # the action ring overflows: row 0 goes from every column
    assert sartsa_rows(t) == [(1, 11, 2.0, 2, 12)]
    assert [len(b) for b in t._bufs] == [2, 2, 1, 1]
    # two more steps, in bulk, as two pushes would: the full action ring drops a row each time
    t.append(state=[3, 4], action=[13, 14], reward=[3.0, 4.0], terminal=[False, False])
    assert [len(b) for b in t._bufs] == [2, 2, 1, 1]
    assert sartsa_rows(t) == [(3, 13, 4.0, 4, 14)]


def general_length(traces) -> int:
    """The rows of ``traces`` by definition: the fewest of any column, a multiplexed column's
    frames less one (its last state waits for its step)."""
    return max(0, min((len(buffer) - mux for buffer, mux
                       in zip(traces._bufs, traces._mux, strict=True)), default=0))


def test_the_length_is_the_general_fewest_rows_through_pushes_pops_and_ring_wrap():
    nested = {"frame": (np.uint8, (2,)), "position": (np.float32, (1,))}
    layouts = [
        lambda: Traces(a=CircularArrayBuffer(3), b=[]),
        lambda: MultiplexTraces("s", "s2", CircularArrayBuffer(4)) + Traces(
            a=CircularArrayBuffer(3), r=ElasticArrayBuffer((), np.float32)),
        lambda: MultiplexTraces("s", "s2", CircularArrayBuffer(5))
        + MultiplexTraces("x", "x2", CircularArrayBuffer(5)) + Traces(a=CircularArrayBuffer(4)),
        lambda: CircularArraySARTSTraces(capacity=3, state=nested),
        lambda: Traces(),
    ]
    rng = np.random.default_rng(0)
    for make in layouts:
        traces = make()
        assert len(traces) == general_length(traces) == 0
        names = traces.keys()
        for _ in range(300):  # partial and full pushes, pops from both ends, clears
            op = rng.integers(8)
            if names and op < 5:
                keys = [k for k in names if rng.random() < 0.7] or list(names)
                row = {}
                for key in keys:
                    buffer = traces._where[key][1]
                    if isinstance(buffer, NestedBuffer):
                        row[key] = {"frame": np.zeros(2, np.uint8),
                                    "position": np.zeros(1, np.float32)}
                    else:
                        row[key] = float(rng.integers(9))
                try:
                    traces.push(**row)
                except (ValueError, KeyError):
                    pass  # a push the layout refuses changes nothing
            elif op == 5 and len(traces):
                traces.pop()
            elif op == 6 and len(traces):
                traces.popleft()
            elif op == 7 and rng.random() < 0.1:
                traces.clear()
            assert len(traces) == general_length(traces), traces
