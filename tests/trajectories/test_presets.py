import numpy as np
import pytest

from trajectories.presets import (
    CircularArraySARTSATraces,
    CircularArraySARTSTraces,
    CircularArraySLARTTraces,
    ElasticArraySARTSATraces,
    ElasticArraySARTSTraces,
)


def test_sarts_layout_and_capacities():
    t = CircularArraySARTSTraces(capacity=3, state=(np.float32, (2,)))
    assert t.keys() == ("state", "next_state", "action", "reward", "terminal")
    assert t.slots == (("state", "next_state"), ("action",), ("reward",), ("terminal",))
    assert t.capacity == 3
    assert [b.capacity for b in t._bufs] == [4, 3, 3, 3]
    assert [b.dtype for b in t._bufs] == [np.float32, np.int64, np.float32, np.bool_]
    assert t._bufs[0].frame_shape == (2,)
    assert isinstance(t, CircularArraySARTSTraces)


def test_sarts_rows_after_wrap():
    t = CircularArraySARTSTraces(capacity=3)
    t.push(state=0)
    for s in range(1, 6):
        t.push(state=s, action=10 + s, reward=float(s), terminal=s == 5)
    assert len(t) == 3
    assert t["state"].tolist() == [2, 3, 4]
    assert t["next_state"].tolist() == [3, 4, 5]
    assert t["action"].tolist() == [13, 14, 15]
    assert t["reward"].tolist() == [3.0, 4.0, 5.0]
    assert t["terminal"].tolist() == [False, False, True]


def test_sartsa_and_slart_layouts():
    t = CircularArraySARTSATraces(capacity=5)
    assert t.slots == (("state", "next_state"), ("action", "next_action"), ("reward",),
                       ("terminal",))
    # capacity complete rows plus the one waiting for its next action
    assert [b.capacity for b in t._bufs] == [7, 6, 6, 6] and t.capacity == 5
    s = CircularArraySLARTTraces(capacity=2, legal_actions_mask=(np.bool_, (3,)))
    assert s.keys() == ("state", "next_state", "legal_actions_mask", "next_legal_actions_mask",
                        "action", "next_action", "reward", "terminal")
    assert [b.capacity for b in s._bufs] == [4, 4, 3, 3, 3] and s.capacity == 2
    assert s._bufs[1].frame_shape == (3,)


def test_elastic_layouts_are_unbounded():
    t = ElasticArraySARTSTraces(state=(np.float32, (4,)))
    assert t.capacity == float("inf") and t.keys()[0] == "state"
    t.push(state=np.zeros(4))
    for i in range(1000):
        t.push(state=np.full(4, i), action=i, reward=1.0, terminal=False)
    assert len(t) == 1000 and t["action"][-1] == 999
    assert ElasticArraySARTSATraces().keys() == ("state", "next_state", "action",
                                                 "next_action", "reward", "terminal")


@pytest.mark.parametrize("kwargs, err", [
    (dict(capacity=0), ValueError),
    (dict(capacity=-1), ValueError),
    (dict(capacity="10"), TypeError),
    (dict(capacity=3, state=np.float32), TypeError),
    (dict(capacity=3, state=("not a dtype", ())), TypeError),
])
def test_bad_preset_arguments(kwargs, err):
    with pytest.raises(err):
        CircularArraySARTSTraces(**kwargs)


def test_empty_copy_keeps_preset_type():
    t = CircularArraySARTSTraces(capacity=3, state=(np.float32, (4,)))
    c = t.empty_copy(capacity=7)
    assert isinstance(c, CircularArraySARTSTraces)
    assert c.capacity == 7 and [b.capacity for b in c._bufs] == [8, 7, 7, 7]
