import numpy as np
import pytest

import stagerl as rl


def test_q_table_shape_init_and_lookups():
    q = rl.TabularQApproximator(n_states=4, n_actions=3, init=0.5)
    assert q.table.shape == (4, 3) and q.table.dtype == np.float64
    assert (q.table == 0.5).all()
    q.table[2] = [1.0, 2.0, 3.0]
    assert q(2).tolist() == [1.0, 2.0, 3.0]
    assert q.values(2).tolist() == [1.0, 2.0, 3.0]
    assert q(2, 1) == 2.0
    assert q.values(np.array([2, 0])).tolist() == [[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]
    assert q(np.int64(2)).tolist() == [1.0, 2.0, 3.0]
    assert q(np.array(2)).tolist() == [1.0, 2.0, 3.0]


def test_q_values_are_a_copy():
    q = rl.TabularQApproximator(2, 2)
    row = q(0)
    row[0] = 9.0
    assert q.table[0, 0] == 0.0


def test_v_table():
    v = rl.TabularVApproximator(n_states=3, init=-1.0)
    assert v.table.shape == (3,) and (v.table == -1.0).all()
    v.table[1] = 4.0
    assert v(1) == 4.0 and v.values(1) == 4.0
    assert v([0, 1]).tolist() == [-1.0, 4.0]


@pytest.mark.parametrize("make, error", [
    (lambda: rl.TabularQApproximator(0, 2), ValueError),
    (lambda: rl.TabularQApproximator(3, -1), ValueError),
    (lambda: rl.TabularQApproximator(3.0, 2), TypeError),
    (lambda: rl.TabularVApproximator(0), ValueError),
])
def test_validation(make, error):
    with pytest.raises(error):
        make()


def test_state_dict_round_trip_and_shape_check():
    q = rl.TabularQApproximator(3, 2)
    q.table[1, 1] = 7.0
    other = rl.TabularQApproximator(3, 2)
    other.load_state_dict(q.state_dict())
    assert other.table[1, 1] == 7.0
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        rl.TabularQApproximator(4, 2).load_state_dict(q.state_dict())
    v = rl.TabularVApproximator(2)
    v.load_state_dict({"table": np.array([1.0, 2.0])})
    assert v.table.tolist() == [1.0, 2.0]
