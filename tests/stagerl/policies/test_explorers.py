import math

import numpy as np
import pytest
import torch

import stagerl as rl


def constant_epsilon(epsilon, **kwargs):
    # warmup 0 and decay 0: epsilon_stable from step 1 on.
    return rl.EpsilonGreedyExplorer(epsilon, **kwargs)


# --- EpsilonGreedyExplorer: the schedule ---------------------------------------------------------


def test_linear_schedule_at_given_steps():
    explorer = rl.EpsilonGreedyExplorer(0.1, epsilon_init=1.0, warmup_steps=10, decay_steps=20)
    expected = {1: 1.0, 10: 1.0, 11: 0.1 + 19 / 20 * 0.9, 20: 0.1 + 10 / 20 * 0.9,
                29: 0.1 + 1 / 20 * 0.9, 30: 0.1, 1000: 0.1}
    for step, epsilon in expected.items():
        assert explorer.epsilon_at(step) == pytest.approx(epsilon, abs=1e-15)
        explorer.step = step
        assert explorer.epsilon == pytest.approx(epsilon, abs=1e-15)


def test_linear_schedule_without_decay_jumps_after_warmup():
    explorer = rl.EpsilonGreedyExplorer(0.05, epsilon_init=0.8, warmup_steps=3)
    assert [explorer.epsilon_at(s) for s in (1, 2, 3, 4, 5)] == [0.8, 0.8, 0.8, 0.05, 0.05]
    assert rl.EpsilonGreedyExplorer(0.3).epsilon == 0.3


def test_exp_schedule_at_given_steps():
    explorer = rl.EpsilonGreedyExplorer(0.1, kind="exp", epsilon_init=1.0, warmup_steps=5,
                                        decay_steps=10)
    assert explorer.epsilon_at(1) == 1.0
    assert explorer.epsilon_at(5) == 1.0
    assert explorer.epsilon_at(6) == pytest.approx(0.1 + 0.9 * math.exp(-0.1))
    assert explorer.epsilon_at(15) == pytest.approx(0.1 + 0.9 * math.exp(-1.0))
    assert explorer.epsilon_at(25) == pytest.approx(0.1 + 0.9 * math.exp(-2.0))


@pytest.mark.parametrize("kwargs", [
    {"kind": "exp"},
    {"kind": "exp", "decay_steps": 0},
    {"kind": "exp", "decay_steps": -3},
    {"kind": "cosine", "decay_steps": 10},
    {"epsilon_init": 1.5},
    {"warmup_steps": -1},
])
def test_bad_construction_raises_value_error(kwargs):
    with pytest.raises(ValueError):
        rl.EpsilonGreedyExplorer(0.1, **kwargs)


def test_plan_reads_epsilon_then_advances_step_and_prob_never_does():
    explorer = rl.EpsilonGreedyExplorer(0.0, epsilon_init=1.0, warmup_steps=1, rng=0)
    assert explorer.step == 1 and explorer.epsilon == 1.0
    explorer.prob([0.0, 1.0])
    _ = explorer.epsilon
    assert explorer.step == 1
    explorer.plan([0.0, 1.0])           # planned with epsilon 1.0 (step 1)
    assert explorer.step == 2 and explorer.epsilon == 0.0
    assert [explorer.plan([0.0, 1.0]) for _ in range(20)] == [1] * 20
    assert explorer.step == 22


def test_plan_explores_exactly_when_rng_random_is_below_epsilon():
    explorer = constant_epsilon(0.5, rng=np.random.default_rng(3))
    replay = np.random.default_rng(3)
    values = np.array([0.0, 0.0, 9.0, 0.0])
    for _ in range(200):
        expected = int(replay.integers(4)) if replay.random() < 0.5 else 2
        assert explorer.plan(values) == expected


def test_plan_explores_uniformly_over_legal_actions_only():
    explorer = constant_epsilon(1.0, rng=0)
    mask = np.array([True, False, True, False, True])
    counts = np.bincount([explorer.plan(np.zeros(5), mask) for _ in range(6000)], minlength=5)
    assert counts[1] == counts[3] == 0
    assert np.allclose(counts[[0, 2, 4]] / 6000, 1 / 3, atol=0.03)


def test_greedy_takes_first_argmax_without_break_ties():
    explorer = constant_epsilon(0.0, break_ties=False, rng=0)
    assert {explorer.plan([1.0, 5.0, 5.0, 2.0]) for _ in range(50)} == {1}
    assert explorer.plan([1.0, 5.0, 5.0, 2.0], mask=[True, False, True, True]) == 2


def test_greedy_breaks_ties_uniformly_among_maxima():
    explorer = constant_epsilon(0.0, break_ties=True, rng=0)
    actions = [explorer.plan([1.0, 5.0, 5.0, 2.0, 5.0]) for _ in range(3000)]
    counts = np.bincount(actions, minlength=5)
    assert counts[0] == counts[3] == 0
    assert np.allclose(counts[[1, 2, 4]] / 3000, 1 / 3, atol=0.04)
    masked = {explorer.plan([1.0, 5.0, 5.0, 2.0, 5.0], mask=[1, 0, 1, 1, 1]) for _ in range(100)}
    assert masked == {2, 4}


def test_ties_are_broken_at_random_by_default():
    assert rl.EpsilonGreedyExplorer(0.1).break_ties is True
    explorer = constant_epsilon(0.0, rng=0)
    assert {explorer.plan([0.0, 0.0]) for _ in range(50)} == {0, 1}


def test_prob_vectors_exact():
    explorer = constant_epsilon(0.2, break_ties=False)
    e = 0.2 / 3
    assert explorer.prob([1.0, 3.0, 2.0]) == pytest.approx([e, e + 0.8, e])
    assert explorer.prob([3.0, 1.0, 3.0]) == pytest.approx([e + 0.8, e, e])
    assert explorer.prob([1.0, 3.0, 2.0], mask=[True, False, True]) == pytest.approx([0.1, 0, 0.9])
    ties = constant_epsilon(0.2, break_ties=True)
    assert ties.prob([3.0, 1.0, 3.0]) == pytest.approx([e + 0.4, e, e + 0.4])
    assert ties.prob([3.0, 3.0, 3.0], mask=[False, True, True]) == pytest.approx([0, 0.5, 0.5])
    three = constant_epsilon(0.3, break_ties=True).prob([1.0, 5.0, 5.0, 5.0])
    assert three.tolist() == [0.3 / 4] + [0.3 / 4 + 0.7 / 3] * 3
    p = ties.prob([2.0, 7.0, 7.0, 1.0], mask=[True, True, True, False])
    assert p[3] == 0.0 and p.sum() == pytest.approx(1.0)


def test_prob_uses_epsilon_at_current_step():
    explorer = rl.EpsilonGreedyExplorer(0.0, epsilon_init=1.0, decay_steps=4, step=3)
    # linear: 0 + (0 + 4 - 3) / 4 * 1.0 = 0.25
    assert explorer.prob([0.0, 1.0]) == pytest.approx([0.125, 0.875])


def test_seeded_explorers_reproduce():
    values = np.array([0.1, 0.3, 0.2, 0.3])
    a = rl.EpsilonGreedyExplorer(0.3, break_ties=True, rng=7)
    b = rl.EpsilonGreedyExplorer(0.3, break_ties=True, rng=np.random.default_rng(7))
    assert [a.plan(values) for _ in range(100)] == [b.plan(values) for _ in range(100)]


def test_batched_plan_and_prob():
    values_BA = np.array([[1.0, 2.0, 0.0], [5.0, 1.0, 1.0], [0.0, 0.0, 3.0], [2.0, 2.0, 9.0]])
    mask_BA = np.array([[1, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 0]], dtype=bool)
    greedy = constant_epsilon(0.0, break_ties=False, rng=0)
    actions = greedy.plan(values_BA, mask_BA)
    assert isinstance(actions, np.ndarray) and actions.dtype.kind == "i"
    assert actions.tolist() == [1, 1, 2, 0]
    assert greedy.step == 2                     # one batched plan is one plan
    assert greedy.plan(values_BA).tolist() == [1, 0, 2, 2]

    explorer = constant_epsilon(1.0, rng=0)
    drawn = np.stack([explorer.plan(values_BA, mask_BA) for _ in range(500)])
    assert not (drawn[:, 1] == 0).any() and not (drawn[:, 3] == 2).any()
    assert set(drawn[:, 0]) == {0, 1, 2}

    ties = constant_epsilon(0.3, break_ties=True)
    p_BA = ties.prob(values_BA, mask_BA)
    assert p_BA.shape == (4, 3)
    for row in range(4):
        assert p_BA[row] == pytest.approx(ties.prob(values_BA[row], mask_BA[row]))
    assert p_BA[3] == pytest.approx([0.15 + 0.35, 0.15 + 0.35, 0.0])


def test_accepts_torch_tensors_and_lists():
    explorer = constant_epsilon(0.0)
    assert explorer.plan(torch.tensor([0.0, 2.0, 1.0])) == 1
    assert explorer.plan(torch.tensor([[0.0, 2.0], [3.0, 1.0]])).tolist() == [1, 0]
    assert explorer.plan([0, 4, 1], mask=torch.tensor([True, False, True])) == 2


def test_bad_masks_raise():
    explorer = constant_epsilon(0.5, rng=0)
    with pytest.raises(ValueError, match="no legal action"):
        explorer.plan([1.0, 2.0], mask=[False, False])
    with pytest.raises(ValueError, match="shape"):
        explorer.plan([1.0, 2.0], mask=[True, False, True])


def test_state_dict_round_trip_continues_identically():
    a = rl.EpsilonGreedyExplorer(0.1, decay_steps=50, rng=1)
    for _ in range(10):
        a.plan([0.0, 1.0, 0.5])
    b = rl.EpsilonGreedyExplorer(0.1, decay_steps=50, rng=99)
    b.load_state_dict(a.state_dict())
    assert b.step == 11
    values = [0.0, 1.0, 0.5]
    assert [a.plan(values) for _ in range(30)] == [b.plan(values) for _ in range(30)]


# --- the other explorers -------------------------------------------------------------------------


def test_greedy_explorer():
    explorer = rl.GreedyExplorer()
    assert explorer.plan([1.0, 4.0, 4.0]) == 1
    assert explorer.plan([1.0, 4.0, 4.0], mask=[True, False, True]) == 2
    assert explorer.plan(np.array([[1.0, 4.0], [7.0, 4.0]])).tolist() == [1, 0]
    assert explorer.prob([1.0, 4.0, 4.0]).tolist() == [0.0, 1.0, 0.0]
    assert explorer.prob([1.0, 4.0, 4.0], mask=[True, False, True]).tolist() == [0.0, 0.0, 1.0]


def test_ucb_tries_every_legal_action_first_then_follows_the_bound():
    explorer = rl.UCBExplorer(4, c=2.0, rng=0)
    mask = [True, True, False, True]
    first = [explorer.plan([0.0, 0.0, 100.0, 0.0], mask) for _ in range(3)]
    assert sorted(first) == [0, 1, 3]
    assert explorer.counts.tolist() == [1, 1, 0, 1] and explorer.step == 4

    explorer.counts[:] = [10, 2, 0, 5]
    explorer.step = 18
    values = np.array([1.0, 0.0, 50.0, 0.5])
    bound = values + 2.0 * np.sqrt(math.log(18) / np.array([10, 2, 1, 5]))
    bound[2] = -np.inf                             # illegal
    expected = int(np.argmax(bound))
    assert explorer.prob(values, mask).tolist() == np.eye(4)[expected].tolist()
    assert explorer.plan(values, mask) == expected
    assert explorer.counts[expected] == {0: 11, 1: 3, 3: 6}[expected] and explorer.step == 19


def test_ucb_batched_and_validation():
    explorer = rl.UCBExplorer(2, rng=0)
    actions = explorer.plan(np.zeros((2, 2)))
    assert sorted(actions.tolist()) == [0, 1] and explorer.step == 3
    with pytest.raises(ValueError):
        rl.UCBExplorer(0)
    with pytest.raises(ValueError, match="n_actions=2"):
        explorer.plan([0.0, 1.0, 2.0])


def test_weighted_explorer():
    explorer = rl.WeightedExplorer(rng=0)
    assert explorer.prob([1.0, 3.0, 0.0, 4.0]).tolist() == [0.125, 0.375, 0.0, 0.5]
    assert explorer.prob([1.0, 3.0, 0.0, 4.0], mask=[1, 1, 1, 0]).tolist() == [0.25, 0.75, 0, 0]
    counts = np.bincount([explorer.plan([1.0, 3.0, 0.0, 4.0]) for _ in range(8000)], minlength=4)
    assert counts[2] == 0
    assert np.allclose(counts / 8000, [0.125, 0.375, 0.0, 0.5], atol=0.02)
    masked = {explorer.plan([1.0, 3.0, 0.0, 4.0], mask=[1, 0, 1, 1]) for _ in range(300)}
    assert masked == {0, 3}
    batch = explorer.plan(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert batch.tolist() == [1, 0]
    with pytest.raises(ValueError, match="non-negative"):
        explorer.plan([1.0, -0.5])
    with pytest.raises(ValueError, match="positive total"):
        explorer.plan([0.0, 2.0], mask=[True, False])


def test_weighted_softmax_explorer():
    explorer = rl.WeightedSoftmaxExplorer(rng=0)
    values = np.array([0.0, 1.0, 2.0])
    softmax = np.exp(values) / np.exp(values).sum()
    assert explorer.prob(values) == pytest.approx(softmax)
    assert explorer.prob(values, mask=[True, False, True]) == pytest.approx(
        [1 / (1 + math.e**2), 0.0, math.e**2 / (1 + math.e**2)])
    counts = np.bincount([explorer.plan(values) for _ in range(8000)], minlength=3)
    assert np.allclose(counts / 8000, softmax, atol=0.02)
    assert {explorer.plan(values, mask=[True, False, True]) for _ in range(300)} == {0, 2}
    assert explorer.prob(np.zeros((2, 4))).shape == (2, 4)


def test_gumbel_softmax_explorer_samples_the_softmax():
    explorer = rl.GumbelSoftmaxExplorer(rng=0)
    values = np.array([0.0, 1.0, 2.0])
    softmax = np.exp(values) / np.exp(values).sum()
    assert explorer.prob(values) == pytest.approx(softmax)
    counts = np.bincount([explorer.plan(values) for _ in range(8000)], minlength=3)
    assert np.allclose(counts / 8000, softmax, atol=0.02)
    assert {explorer.plan(values, mask=[False, True, True]) for _ in range(300)} == {1, 2}
    batch = explorer.plan(np.array([[0.0, 50.0], [50.0, 0.0]]))
    assert batch.tolist() == [1, 0]
