import numpy as np
import pytest
import torch

import stagerl as rl


def q_learner(method="SARS", gamma=0.5, lr=0.5, n_states=8, **kwargs):
    return rl.TDLearner(rl.TabularQApproximator(n_states, 2), method=method, gamma=gamma, lr=lr,
                        **kwargs)


def batch(**columns):
    return {name: np.asarray(value) for name, value in columns.items()}


def one(state, action, reward, terminal, next_state, **more):
    return batch(state=[state], action=[action], reward=[reward], terminal=[terminal],
                 next_state=[next_state], **{k: [v] for k, v in more.items()})


def test_q_learning_update_by_hand():
    learner = q_learner()
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update(one(1, 0, 1.0, False, 2))
    assert learner.approximator.table[1, 0] == 0.0 + 0.5 * (1.0 + 0.5 * 4.0 - 0.0)   # 1.5
    learner.update(one(1, 0, 1.0, False, 2))
    assert learner.approximator.table[1, 0] == 1.5 + 0.5 * (1.0 + 0.5 * 4.0 - 1.5)   # 2.25


def test_terminal_zeroes_the_bootstrap():
    learner = q_learner()
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update(one(1, 1, -1.0, True, 2))
    assert learner.approximator.table[1, 1] == 0.5 * -1.0


def test_truncated_step_is_not_terminal_and_bootstraps():
    learner = q_learner(gamma=1.0, lr=1.0)
    learner.approximator.table[2] = [3.0, 1.0]
    learner.update(one(1, 0, 0.0, False, 2))
    assert learner.approximator.table[1, 0] == 3.0


def test_rows_are_applied_one_after_another():
    learner = q_learner()
    # the same (s, a) twice: the second row sees the first update (np.add.at would give 1.0)
    learner.update(batch(state=[0, 0], action=[0, 0], reward=[1.0, 1.0],
                         terminal=[True, True], next_state=[1, 1]))
    assert learner.approximator.table[0, 0] == 0.75
    # row 2 bootstraps from the state row 1 just updated
    learner.update(batch(state=[3, 4], action=[1, 1], reward=[1.0, 0.0],
                         terminal=[True, False], next_state=[0, 3]))
    assert learner.approximator.table[3, 1] == 0.5
    assert learner.approximator.table[4, 1] == 0.5 * (0.5 * 0.5)


def test_sarsa_uses_the_next_action():
    learner = q_learner("SARSA")
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update(one(1, 0, 1.0, False, 2, next_action=1))
    assert learner.approximator.table[1, 0] == 0.5 * (1.0 + 0.5 * 2.0)
    learner.update(one(1, 1, 1.0, True, 2, next_action=0))
    assert learner.approximator.table[1, 1] == 0.5


def test_sarsa_without_next_action_raises_naming_it():
    with pytest.raises(ValueError, match="next_action"):
        q_learner("SARSA").update(one(1, 0, 1.0, False, 2))


def test_expected_sarsa_takes_the_expectation_under_the_explorer():
    explorer = rl.EpsilonGreedyExplorer(0.2)
    learner = q_learner("ExpectedSARSA", explorer=explorer)
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update(one(1, 0, 1.0, False, 2))
    expectation = 0.9 * 4.0 + 0.1 * 2.0
    assert learner.approximator.table[1, 0] == pytest.approx(0.5 * (1.0 + 0.5 * expectation))
    assert explorer.step == 1                          # prob never advances the explorer


def test_expected_sarsa_needs_an_explorer_or_a_policy_to_provide_one():
    learner = q_learner("ExpectedSARSA")
    with pytest.raises(ValueError, match="explorer"):
        learner.update(one(1, 0, 1.0, False, 2))
    explorer = rl.GreedyExplorer()
    rl.QBasedPolicy(learner, explorer)
    assert learner.explorer is explorer
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update(one(1, 0, 1.0, False, 2))           # greedy expectation: Q-learning
    assert learner.approximator.table[1, 0] == 1.5


def test_next_legal_actions_mask_restricts_the_max():
    learner = q_learner()
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update(one(1, 0, 1.0, False, 2, next_legal_actions_mask=[False, True]))
    assert learner.approximator.table[1, 0] == 0.5 * (1.0 + 0.5 * 2.0)


def test_v_learner_is_td0():
    learner = rl.TDLearner(rl.TabularVApproximator(3), gamma=0.5, lr=0.5)
    learner.approximator.table[2] = 4.0
    learner.update(one(1, 0, 1.0, False, 2))
    assert learner.approximator.table[1] == 0.5 * (1.0 + 0.5 * 4.0)
    assert learner.values(1) == 1.5
    with pytest.raises(ValueError, match="TabularVApproximator"):
        rl.TDLearner(rl.TabularVApproximator(3), method="SARSA")


def test_values_one_row_or_rows():
    learner = q_learner()
    learner.approximator.table[3] = [1.0, 2.0]
    assert learner.values(3).tolist() == [1.0, 2.0]
    assert learner.values(np.array([3, 0])).tolist() == [[1.0, 2.0], [0.0, 0.0]]


def test_torch_batches_lists_of_batches_and_empty_batches():
    learner = q_learner(gamma=1.0, lr=1.0)
    learner.update({"state": torch.tensor([0]), "action": torch.tensor([1]),
                    "reward": torch.tensor([2.0]), "terminal": torch.tensor([True]),
                    "next_state": torch.tensor([1])})
    assert learner.approximator.table[0, 1] == 2.0
    learner.update([one(1, 0, 1.0, True, 2), one(1, 1, 3.0, True, 2)])
    assert learner.approximator.table[1].tolist() == [1.0, 3.0]
    before = learner.approximator.table.copy()
    learner.update(batch(state=np.zeros(0, np.int64), action=np.zeros(0, np.int64),
                         reward=np.zeros(0), terminal=np.zeros(0, bool),
                         next_state=np.zeros(0, np.int64)))
    assert np.array_equal(before, learner.approximator.table)


def test_validation():
    with pytest.raises(ValueError, match="method"):
        q_learner("QLambda")
    with pytest.raises(TypeError):
        rl.TDLearner(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="gamma"):
        q_learner(gamma=1.5)
    with pytest.raises(ValueError, match="lr"):
        q_learner(lr=0.0)
    with pytest.raises(TypeError, match="integer"):
        q_learner().update(one(1.5, 0, 1.0, False, 2))


def test_state_dict_round_trip():
    learner = q_learner()
    learner.update(one(1, 0, 1.0, True, 2))
    other = q_learner()
    other.load_state_dict(learner.state_dict())
    assert np.array_equal(other.approximator.table, learner.approximator.table)


def two_episodes(trajectory):
    """Episode 1: 0 -> 1 -> 2 (terminal, reward 1); episode 2 starts at 5: 5 -> 6."""
    trajectory.push(state=0)
    trajectory.push(state=1, action=1, reward=0.0, terminal=False)
    trajectory.push(state=2, action=1, reward=1.0, terminal=True)
    trajectory.push(state=5)                      # pads the boundary row (2, action 0) -> 5
    trajectory.push(state=6, action=1, reward=0.0, terminal=False)


def test_the_container_itself_is_learned_row_by_row_without_padding_rows():
    trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=10))
    two_episodes(trajectory)
    container = trajectory.container
    assert container.sampleable_inds.tolist() == [True, True, False, True, False]
    learner = q_learner(gamma=1.0, lr=1.0)
    learner.approximator.table[5] = [10.0, 10.0]  # a padding row used would set Q[2, 0] = 10
    learner.approximator.table[1] = [0.0, 4.0]
    learner.approximator.table[6] = [3.0, 0.0]
    learner.update(container)
    table = learner.approximator.table
    assert table[2, 0] == 0.0                     # the boundary row never updates Q
    assert table[0, 1] == 4.0                     # row 0 first: max Q[1] before row 1 runs
    assert table[1, 1] == 1.0                     # row 1: terminal, reward 1
    assert table[5, 1] == 3.0                     # episode 2: 0 + 1.0 * max Q[6]
    again = q_learner(gamma=1.0, lr=1.0)
    again.approximator.table[[1, 5, 6]] = [[0.0, 4.0], [10.0, 10.0], [3.0, 0.0]]
    again.update(trajectory)                      # a Trajectory stands for its container
    assert np.array_equal(again.approximator.table, table)


def test_dummy_sampler_hands_the_container_and_batch_sampler_hands_rows():
    trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=10))
    two_episodes(trajectory)
    learner = q_learner(gamma=1.0, lr=1.0)
    learner.approximator.table[5] = [10.0, 10.0]
    for batch in trajectory:                      # DummySampler: the container
        learner.update(batch)
    assert learner.approximator.table[2, 0] == 0.0

    sampled = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=10),
                            rl.BatchSampler(64, rng=0), rl.InsertSampleRatioController())
    two_episodes(sampled)
    learner = q_learner(gamma=1.0, lr=0.5)
    learner.approximator.table[5] = [10.0, 10.0]
    for batch in sampled:
        learner.update(batch)
    assert learner.approximator.table[2, 0] == 0.0


def test_sarsa_learns_from_a_sartsa_container():
    trajectory = rl.Trajectory(rl.CircularArraySARTSATraces(capacity=10))
    trajectory.push(state=0)
    trajectory.push(state=1, action=1, reward=0.0, terminal=False)
    trajectory.push(state=2, action=0, reward=1.0, terminal=True)
    trajectory.push(next_action=1)                # the action planned at the final state
    learner = q_learner("SARSA", gamma=1.0, lr=1.0)
    learner.approximator.table[1] = [5.0, 7.0]
    learner.update(trajectory.container)
    table = learner.approximator.table
    assert table[0, 1] == 5.0                     # row 0 first: Q[1, next_action=0] = 5
    assert table[1, 0] == 1.0                     # row 1: terminal, reward 1
