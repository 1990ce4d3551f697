import numpy as np
import pytest

from trajectories.sumtree import SumTree


def filled(ps, capacity=None):
    tree = SumTree(capacity or len(ps))
    for p in ps:
        tree.push(p)
    return tree


def test_push_len_total_and_logical_order():
    tree = filled([1.0, 2.0, 3.0], capacity=5)
    assert len(tree) == 3 and tree.capacity == 5 and not tree.isfull
    assert tree.total == 6.0
    assert np.asarray(tree).tolist() == [1.0, 2.0, 3.0]


def test_push_into_full_tree_overwrites_oldest():
    tree = filled([1.0, 2.0, 3.0])
    tree.push(10.0)
    tree.push(20.0)
    assert np.asarray(tree).tolist() == [3.0, 10.0, 20.0]
    assert tree.total == 33.0
    assert tree.get(0.0) == (0, 3.0)
    assert tree.get(3.0) == (1, 10.0)
    assert tree.get(13.0) == (2, 20.0)


def test_get_intervals_are_left_closed_right_open():
    tree = filled([1.0, 2.0, 3.0, 4.0])
    # cumulative sums: 1, 3, 6, 10
    assert tree.get(0.0) == (0, 1.0)
    assert tree.get(0.999) == (0, 1.0)
    assert tree.get(1.0) == (1, 2.0)
    assert tree.get(2.999) == (1, 2.0)
    assert tree.get(3.0) == (2, 3.0)
    assert tree.get(6.0) == (3, 4.0)
    assert tree.get(np.nextafter(10.0, 0)) == (3, 4.0)


def test_never_returns_a_zero_priority_leaf_at_the_edges():
    tree = filled([0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0], capacity=9)
    total = tree.total
    for v in (0.0, 1e-300, 1.0, np.nextafter(1.0, 0), np.nextafter(total, 0), total):
        index, priority = tree.get(v)
        assert priority > 0 and index in (2, 4)
    idx, ps = tree.get_batch(np.linspace(0, total, 101))
    assert set(idx.tolist()) == {2, 4} and (ps > 0).all()


def test_round_off_never_reaches_a_zero_leaf():
    rng = np.random.default_rng(0)
    ps = rng.random(1000) * (rng.random(1000) < 0.3) * 10.0 ** rng.integers(-8, 8, 1000)
    tree = filled(ps, capacity=1000)
    edges = [0.0, np.nextafter(tree.total, 0), tree.total]
    vs = np.concatenate([edges, rng.random(5000) * tree.total])
    idx, got = tree.get_batch(vs)
    assert (got > 0).all() and (ps[idx] == got).all()


def test_setitem_scalar_array_and_negative_index():
    tree = filled([1.0, 1.0, 1.0, 1.0])
    tree[1] = 5.0
    tree[-1] = 0.0
    assert np.asarray(tree).tolist() == [1.0, 5.0, 1.0, 0.0]
    tree[np.array([0, 2])] = np.array([3.0, 4.0])
    assert np.asarray(tree).tolist() == [3.0, 5.0, 4.0, 0.0]
    assert tree.total == 12.0
    assert tree[1] == 5.0


def test_append_wraps_and_keeps_last_capacity():
    tree = filled([1.0, 2.0], capacity=4)
    tree.append([3.0, 4.0, 5.0])
    assert np.asarray(tree).tolist() == [2.0, 3.0, 4.0, 5.0]
    assert tree.total == 14.0
    tree.append(np.arange(10, dtype=float))
    assert np.asarray(tree).tolist() == [6.0, 7.0, 8.0, 9.0]
    assert tree.total == 30.0
    assert tree.get(0.0) == (0, 6.0)


def test_pop_popleft_and_clear():
    tree = filled([1.0, 2.0, 3.0])
    assert tree.pop() == 3.0
    assert tree.popleft() == 1.0
    assert np.asarray(tree).tolist() == [2.0] and tree.total == 2.0
    tree.push(7.0)
    tree.push(8.0)
    assert np.asarray(tree).tolist() == [2.0, 7.0, 8.0]
    tree.clear()
    assert len(tree) == 0 and tree.total == 0.0
    with pytest.raises(IndexError):
        tree.pop()
    with pytest.raises(IndexError):
        tree.popleft()


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_priorities_raise_before_writing(bad):
    tree = filled([1.0, 2.0])
    with pytest.raises(ValueError):
        tree.push(bad)
    with pytest.raises(ValueError):
        tree[0] = bad
    with pytest.raises(ValueError):
        tree.append([1.0, bad])
    assert np.asarray(tree).tolist() == [1.0, 2.0] and len(tree) == 2


def test_bad_construction_and_lookups():
    with pytest.raises(ValueError, match="capacity=0"):
        SumTree(0)
    with pytest.raises(TypeError):
        SumTree(2.5)
    tree = SumTree(3)
    with pytest.raises(ValueError):
        tree.get(0.0)  # empty: total is 0
    tree.push(1.0)
    with pytest.raises(ValueError):
        tree.get(-0.1)
    with pytest.raises(ValueError):
        tree.get(1.5)
    with pytest.raises(IndexError):
        tree[1] = 1.0


def test_stratified_sampling_is_proportional_to_priority():
    ps = np.array([1.0, 0.0, 2.0, 3.0, 4.0, 0.0, 10.0])
    tree = filled(ps, capacity=9)
    rng = np.random.default_rng(42)
    counts = np.zeros(len(ps))
    for _ in range(400):
        idx, got = tree.sample(64, rng)
        assert (got > 0).all()
        np.add.at(counts, idx, 1)
    expected = ps / ps.sum() * counts.sum()
    assert counts[1] == 0 and counts[5] == 0
    nz = expected > 0
    chi2 = (((counts - expected) ** 2)[nz] / expected[nz]).sum()
    assert chi2 < 20.5  # 5 degrees of freedom, p ~ 0.001


def test_scalar_get_is_proportional_too():
    tree = filled([1.0, 3.0])
    rng = np.random.default_rng(1)
    hits = [tree.get(v)[0] for v in rng.random(4000) * tree.total]
    assert abs(np.mean(hits) - 0.75) < 0.03


def test_get_matches_logical_cumulative_sums_after_wrapping():
    rng = np.random.default_rng(3)
    for capacity in (1, 2, 5, 8, 13):
        tree = SumTree(capacity)
        for _ in range(3 * capacity + 1):
            tree.push(float(rng.integers(0, 4)))
            ps = np.asarray(tree)
            if ps.sum() == 0:
                continue
            c = np.cumsum(ps)
            vs = rng.random(20) * tree.total
            expected = np.searchsorted(c, vs, side="right")
            assert [tree.get(v)[0] for v in vs] == expected.tolist()
            assert tree.get_batch(vs)[0].tolist() == expected.tolist()


def test_every_inner_node_is_exactly_the_sum_of_its_children_after_batched_writes():
    # the batched write's sums (one gather of both children a level) against the plain
    # recomputation tree[k] = tree[2k] + tree[2k + 1] of the whole tree, bit for bit
    rng = np.random.default_rng(0)
    tree = SumTree(100)
    tree.append(rng.random(130))  # wrapped: the oldest 30 overwritten
    for _ in range(20):
        idx = rng.integers(-100, 100, rng.integers(1, 40))  # repeats and negatives included
        tree[idx] = rng.random(idx.size) * 10.0 ** rng.integers(-8, 8)
        sums = tree._tree
        inner = np.arange(1, tree._n_leaves)
        np.testing.assert_array_equal(sums[inner], sums[2 * inner] + sums[2 * inner + 1])
