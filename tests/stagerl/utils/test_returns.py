import numpy as np
import pytest
import torch

from stagerl.utils import discount_rewards, generalized_advantage_estimation


def test_discount_rewards_exact():
    assert discount_rewards([1.0, 2.0, 3.0], 0.5).tolist() == [1.0 + 0.5 * 2.0 + 0.25 * 3.0,
                                                               2.0 + 0.5 * 3.0, 3.0]
    assert discount_rewards([1.0, 2.0, 3.0], 1.0, init=10.0).tolist() == [16.0, 15.0, 13.0]


def test_discount_rewards_terminal_in_the_middle_cuts_the_sum():
    returns = discount_rewards(np.array([1.0, 1.0, 1.0, 1.0]), 0.5,
                               terminal=np.array([False, True, False, False]), init=8.0)
    # episode 1: [1 + 0.5 * 1, 1]; episode 2 bootstraps from init: [1 + 0.5 * 5, 1 + 0.5 * 8]
    assert returns.tolist() == [1.5, 1.0, 3.5, 5.0]


def test_discount_rewards_two_dimensional_per_env():
    rewards_TN = np.array([[1.0, 0.0], [1.0, 2.0], [1.0, 4.0]])
    terminal_TN = np.array([[False, False], [False, True], [False, False]])
    returns = discount_rewards(rewards_TN, 0.5, terminal=terminal_TN, init=np.array([2.0, 8.0]))
    assert returns.tolist() == [[2.0, 1.0], [2.0, 2.0], [2.0, 8.0]]


def test_discount_rewards_keeps_float32_and_supports_torch():
    assert discount_rewards(np.ones(3, dtype=np.float32), 0.9).dtype == np.float32
    assert discount_rewards(np.array([1, 2]), 1.0).tolist() == [3.0, 2.0]
    returns = discount_rewards(torch.tensor([1.0, 1.0]), 0.5, terminal=torch.tensor([True, False]))
    assert isinstance(returns, torch.Tensor) and returns.tolist() == [1.0, 1.0]


def test_gae_exact():
    rewards = np.array([1.0, 0.0, 2.0])
    values = np.array([0.5, 1.0, -1.0, 3.0])
    advantages = generalized_advantage_estimation(rewards, values, 0.9, 0.8)
    # deltas 1.4, -1.9, 5.7 (r + 0.9 V' - V); advantages from the back with 0.9 * 0.8 = 0.72:
    # 5.7, -1.9 + 0.72 * 5.7 = 2.204, 1.4 + 0.72 * 2.204 = 2.98688
    assert advantages == pytest.approx([2.98688, 2.204, 5.7])


def test_gae_terminal_in_the_middle_zeroes_bootstrap_and_accumulation():
    rewards = np.array([1.0, 1.0, 1.0])
    values = np.array([2.0, 4.0, 6.0, 8.0])
    advantages = generalized_advantage_estimation(rewards, values, 0.5, 0.5,
                                                  terminal=[False, True, False])
    a2 = 1.0 + 0.5 * 8.0 - 6.0                     # -1
    a1 = 1.0 - 4.0                                 # terminal: no bootstrap, no accumulation
    a0 = (1.0 + 0.5 * 4.0 - 2.0) + 0.25 * a1       # 1 - 0.75
    assert advantages.tolist() == [a0, a1, a2]


def test_gae_with_lambda_one_is_discounted_return_minus_value():
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=6), rng.normal(size=7)
    terminal = np.array([0, 0, 1, 0, 0, 0], dtype=bool)
    advantages = generalized_advantage_estimation(rewards, values, 0.9, 1.0, terminal=terminal)
    returns = discount_rewards(rewards, 0.9, terminal=terminal, init=values[-1])
    assert advantages == pytest.approx(returns - values[:-1])


def test_gae_two_dimensional_matches_per_env_columns_and_torch():
    rng = np.random.default_rng(1)
    rewards_TN, values_TN = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    terminal_TN = rng.random((5, 3)) < 0.3
    batched = generalized_advantage_estimation(rewards_TN, values_TN, 0.99, 0.95, terminal_TN)
    for n in range(3):
        column = generalized_advantage_estimation(rewards_TN[:, n], values_TN[:, n], 0.99, 0.95,
                                                  terminal_TN[:, n])
        assert batched[:, n] == pytest.approx(column)
    tensor = generalized_advantage_estimation(torch.tensor(rewards_TN), torch.tensor(values_TN),
                                              0.99, 0.95, torch.tensor(terminal_TN))
    assert isinstance(tensor, torch.Tensor)
    assert tensor.numpy() == pytest.approx(batched)


def test_mismatched_lengths_raise_naming_them():
    with pytest.raises(ValueError, match=r"rewards has shape \(3,\).*values of shape \(3,\)"):
        generalized_advantage_estimation([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], 0.9, 0.9)
    with pytest.raises(ValueError, match="terminal"):
        discount_rewards([1.0, 1.0], 0.9, terminal=[True])
    with pytest.raises(ValueError, match="terminal"):
        generalized_advantage_estimation([1.0], [0.0, 0.0], 0.9, 0.9, terminal=[True, False])
    with pytest.raises(ValueError, match="init"):
        discount_rewards(np.ones((2, 3)), 0.9, init=np.zeros(2))
    with pytest.raises(ValueError, match="gamma"):
        discount_rewards([1.0], 1.5)
    with pytest.raises(ValueError, match="lam"):
        generalized_advantage_estimation([1.0], [0.0, 0.0], 0.9, -0.1)
