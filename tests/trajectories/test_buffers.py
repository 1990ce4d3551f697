import numpy as np
import pytest

from trajectories.buffers import CircularArrayBuffer, ElasticArrayBuffer

BUFFERS = [lambda **kw: CircularArrayBuffer(100, **kw), lambda **kw: ElasticArrayBuffer(**kw)]


def test_ring_wraps_and_keeps_newest_in_logical_order():
    b = CircularArrayBuffer(3, dtype=np.int64)
    assert len(b) == 0 and not b.isfull and b.capacity == 3
    for x in range(5):
        b.push(x)
    assert np.asarray(b).tolist() == [2, 3, 4]
    assert b.isfull and len(b) == 3
    assert [b[0], b[1], b[2], b[-1], b[-3]] == [2, 3, 4, 4, 2]
    assert b[1:].tolist() == [3, 4]
    assert b[::-1].tolist() == [4, 3, 2]


def test_out_of_range_index_raises_also_when_empty():
    b = CircularArrayBuffer(3)
    with pytest.raises(IndexError):
        b[0]
    b.push(1.0)
    for i in (1, -2, 5):
        with pytest.raises(IndexError):
            b[i]
    with pytest.raises(IndexError):
        b[np.array([0, 1])]


def test_integer_array_index_keeps_its_shape():
    b = CircularArrayBuffer(4, shape=(2,), dtype=np.int64)
    for x in range(6):
        b.push([x, 10 * x])
    out = b[np.array([[0, -1], [1, 2]])]
    assert out.shape == (2, 2, 2)
    assert out.tolist() == [[[2, 20], [5, 50]], [[3, 30], [4, 40]]]
    assert b.take(np.array([3, 0])).tolist() == [[5, 50], [2, 20]]


def test_scalar_broadcasts_over_the_frame_and_wrong_shape_raises():
    b = CircularArrayBuffer(2, shape=(3,))
    b.push(7)
    assert np.asarray(b).tolist() == [[7, 7, 7]]
    for bad in ([1, 2], np.zeros((1,)), np.zeros((3, 1))):
        with pytest.raises(ValueError, match="shape"):
            b.push(bad)
    assert len(b) == 1


def test_pushed_arrays_are_copied_in():
    b = CircularArrayBuffer(2, shape=(2,))
    x = np.array([1.0, 2.0], dtype=np.float32)
    b.push(x)
    x[0] = 99
    assert b[0].tolist() == [1.0, 2.0]
    frame = b[0]
    frame[1] = 42
    assert b[0].tolist() == [1.0, 2.0]


def test_append_wraps_and_keeps_last_capacity_frames():
    b = CircularArrayBuffer(4, dtype=np.int64)
    b.append([0, 1, 2])
    b.append([3, 4, 5])
    assert np.asarray(b).tolist() == [2, 3, 4, 5]
    b.append(np.arange(10, 20))
    assert np.asarray(b).tolist() == [16, 17, 18, 19]
    b.append(np.zeros(0, dtype=np.int64))
    assert np.asarray(b).tolist() == [16, 17, 18, 19]


def test_pop_popleft_clear():
    b = CircularArrayBuffer(3, dtype=np.int64)
    for x in range(5):
        b.push(x)
    assert b.pop() == 4 and b.popleft() == 2
    assert np.asarray(b).tolist() == [3]
    b.push(9)
    b.push(10)
    assert np.asarray(b).tolist() == [3, 9, 10]
    b.clear()
    assert len(b) == 0
    with pytest.raises(IndexError):
        b.pop()
    with pytest.raises(IndexError):
        b.popleft()


def test_pop_returns_a_copy_of_a_frame():
    b = CircularArrayBuffer(2, shape=(2,), dtype=np.int64)
    b.push([1, 2])
    b.push([3, 4])
    assert b.pop().tolist() == [3, 4]
    assert b.popleft().tolist() == [1, 2]


@pytest.mark.parametrize("make", BUFFERS)
@pytest.mark.parametrize("bad", ["a", "1.5", 1.5, float("nan"), 2**70, 1j, [1, "x"]])
def test_values_an_int_trace_cannot_store_raise_and_write_nothing(make, bad):
    b = make(dtype=np.int64)
    b.push(1)
    with pytest.raises((TypeError, ValueError)):
        b.push(bad)
    assert np.asarray(b).tolist() == [1]


@pytest.mark.parametrize("bad", [float("nan"), 2, 0.5, "True"])
def test_bool_trace_refuses_non_booleans(bad):
    b = CircularArrayBuffer(2, dtype=np.bool_)
    with pytest.raises((TypeError, ValueError)):
        b.push(bad)
    b.push(1.0)
    b.push(np.int64(0))
    assert np.asarray(b).tolist() == [True, False]


def test_float_trace_accepts_numbers_refuses_strings():
    b = CircularArrayBuffer(3)
    b.push(1)
    b.push(np.float64(2.5))
    b.push(True)
    assert np.asarray(b).tolist() == [1.0, 2.5, 1.0]
    for bad in ("abc", "1.0", b"1"):
        with pytest.raises((TypeError, ValueError)):
            b.push(bad)


def test_append_is_validated_before_writing():
    b = CircularArrayBuffer(3, dtype=np.int64)
    b.append([1, 2, 3])
    with pytest.raises((TypeError, ValueError)):
        b.append([4, 5.5])
    with pytest.raises(ValueError):
        b.append([[4, 5]])
    assert np.asarray(b).tolist() == [1, 2, 3]


def test_failed_push_into_full_ring_leaves_oldest_frame():
    b = CircularArrayBuffer(2, dtype=np.int64)
    b.push(1)
    b.push(2)
    with pytest.raises((TypeError, ValueError)):
        b.push(float("nan"))
    assert np.asarray(b).tolist() == [1, 2]


@pytest.mark.parametrize("capacity, err", [(0, ValueError), (-3, ValueError),
                                           (2.0, TypeError), (True, TypeError)])
def test_bad_capacity(capacity, err):
    with pytest.raises(err, match="capacity"):
        CircularArrayBuffer(capacity)


def test_capacity_message_names_value_and_fix():
    with pytest.raises(ValueError, match=r"capacity must be positive, got capacity=0"):
        CircularArrayBuffer(0)


def test_elastic_grows_and_pops():
    b = ElasticArrayBuffer(dtype=np.int64)
    for x in range(100):
        b.push(x)
    for _ in range(60):
        b.popleft()
    b.append(np.arange(100, 150))
    assert np.asarray(b).tolist() == list(range(60, 150))
    assert b[-1] == 149 and b[0] == 60
    assert b.pop() == 149 and len(b) == 89
    assert b.capacity == float("inf") and not b.isfull


def test_elastic_without_dtype_takes_it_from_first_value():
    b = ElasticArrayBuffer(shape=None, dtype=None)
    b.push(np.array([1.5, 2.5], dtype=np.float32))
    assert b.dtype == np.float32 and b.frame_shape == (2,)
    b2 = ElasticArrayBuffer(shape=None, dtype=None)
    b2.append([1, 2, 3])
    assert b2.dtype == np.int64 and b2.frame_shape == ()


def test_empty_copy_keeps_layout():
    b = CircularArrayBuffer(5, shape=(2,), dtype=np.int16)
    b.push(1)
    c = b.empty_copy()
    assert (len(c), c.capacity, c.frame_shape, c.dtype) == (0, 5, (2,), np.int16)
    assert b.empty_copy(capacity=9).capacity == 9
