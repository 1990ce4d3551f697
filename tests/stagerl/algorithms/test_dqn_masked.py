"""DQN with legal-action masks: it acts among the legal actions (exploring too), stores every
state's mask, and its TD target maxes over the legal next actions; a next state with no legal
action is worth 0."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, DQNPolicy, make_dqn_agent, td_target
from stagerl.algorithms.dqn.networks import QNetwork
from stagerl.algorithms.dqn.replay import BurstSampler, as_tensors, make_dqn_trajectory
from stagerl.multi_agent import GameWrapper, MultiAgentPolicy, TicTacToe, view_of

CPU = torch.device("cpu")


def tiny_policy(weight, **settings):
    """Q(s) = weight @ s on a 1-d state, three actions (C51: one row per action and atom)."""
    config = DQNConfig(total_steps=1_000, gamma=0.5, learning_rate=0.1, **settings)
    n_atoms = config.n_atoms if config.distributional else 1
    network = QNetwork(nn.Flatten(), 1, 3, n_atoms=n_atoms, v_min=config.v_min,
                       v_max=config.v_max)
    with torch.no_grad():
        network.advantage.weight.copy_(torch.tensor(weight))
        network.advantage.bias.zero_()
    return DQNPolicy(network, config, device="cpu", masked=True)


def batch(next_masks, terminal=None):
    n = len(next_masks)
    rows = dict(state=np.ones((n, 1), np.float32), action=np.zeros(n, np.int64),
                reward=np.ones(n, np.float32), next_state=np.full((n, 1), 2.0, np.float32),
                terminal=np.zeros(n, bool) if terminal is None else np.array(terminal),
                next_legal_actions_mask=np.array(next_masks, bool))
    return as_tensors(rows, CPU)


# Q(s) = [s, 3s, 2s]: at s' = 2 the values are [2, 6, 4]; the best, action 1, is illegal below.
WEIGHT = [[1.0], [3.0], [2.0]]


def test_the_target_maxes_over_the_legal_next_actions_only():
    policy = tiny_policy(WEIGHT)
    targets = td_target(policy, batch([[True, False, True], [True, True, True],
                                       [True, False, False]]))
    assert targets.tolist() == [3.0, 4.0, 2.0]  # 1 + 0.5 * {4, 6, 2}


@pytest.mark.parametrize("terminal", [False, True])
def test_a_next_state_with_no_legal_action_is_worth_zero(terminal):
    policy = tiny_policy(WEIGHT)
    targets = td_target(policy, batch([[False, False, False], [False, True, False]],
                                      terminal=[terminal, False]))
    assert targets.tolist() == [1.0, 4.0]  # the reward alone; 1 + 0.5 * 6
    assert torch.isfinite(targets).all()


def test_double_dqn_picks_the_best_legal_action_of_the_online_network():
    policy = tiny_policy(WEIGHT, double=True)
    with torch.no_grad():  # target Q(2) = [20, 2, 8]: rates the online choice
        policy.target.advantage.weight.copy_(torch.tensor([[10.0], [1.0], [4.0]]))
    targets = td_target(policy, batch([[True, False, True], [False, False, False]]))
    assert targets.tolist() == [5.0, 1.0]  # online picks action 2 (4 > 2): 1 + 0.5 * 8


def test_c51_takes_the_legal_actions_distribution_and_none_without_a_legal_action():
    weight = torch.zeros(3 * 51, 1)
    policy = tiny_policy(weight.tolist(), distributional=True)
    support = policy.network.support
    with torch.no_grad():  # action k puts its mass on the atom nearest 2k (times s' = 2: 4k)
        bias = torch.full((3, 51), -30.0)
        for k in range(3):
            bias[k, int(torch.argmin((support - 4.0 * k).abs()))] = 30.0
        policy.network.advantage.bias.copy_(bias.reshape(-1))
        policy.target.advantage.bias.copy_(bias.reshape(-1))
    probs = td_target(policy, batch([[True, True, False], [False, False, False]]))
    mean = (probs * support).sum(dim=1)
    assert mean.tolist() == pytest.approx([1.0 + 0.5 * 4.0, 1.0], abs=1e-3)


def test_masked_epsilon_greedy_explores_and_exploits_among_legal_actions_only():
    explorer = rl.EpsilonGreedyExplorer(0.5, epsilon_init=0.5, rng=0)
    mask = np.array([False, True, False, True])
    values = np.array([9.0, 1.0, 9.0, 2.0])
    drawn = [explorer.draw(4, lambda: values, mask=mask) for _ in range(400)]
    assert set(drawn) == {1, 3} and drawn.count(3) > drawn.count(1)
    rows = np.array([mask, ~mask])
    batch_drawn = np.array([explorer.draw(4, lambda: np.stack([values, values]), 2, mask=rows)
                            for _ in range(200)])
    assert set(batch_drawn[:, 0]) == {1, 3} and set(batch_drawn[:, 1]) == {0, 2}
    with pytest.raises(ValueError, match="no legal action"):
        explorer.draw(4, lambda: values, mask=np.zeros(4, bool))


def test_a_masked_draw_of_one_row_is_the_masked_plan():
    a, b = (rl.EpsilonGreedyExplorer(0.3, epsilon_init=0.3, rng=7) for _ in range(2))
    values, mask = np.array([0.0, 5.0, 5.0, 1.0]), np.array([True, False, True, True])
    assert [a.draw(4, lambda: values, mask=mask) for _ in range(50)] == \
        [b.plan(values, mask) for _ in range(50)]


def _learner_against_random(seed=0, steps=2_000, **settings):
    game = TicTacToe()
    config = DQNConfig(total_steps=steps, learning_starts=100, train_freq=4, net_arch=(16,),
                       buffer_size=1_000, **settings)
    agent = make_dqn_agent(view_of(game, "player_2"), config, seed=seed, device="cpu")
    return game, agent, MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=seed + 1),
                                          "player_2": agent})


def test_a_masked_dqn_player_stores_masks_and_never_plays_an_illegal_move():
    game, agent, policy = _learner_against_random(n_step=3)
    assert agent.policy.masked
    assert "next_legal_actions_mask" in agent.trajectory.keys()
    rl.run(policy, game, rl.StopAfterNSteps(2_000, progress=False))  # illegal moves raise
    container = agent.trajectory.container
    rows = container.sampleable_indices()
    states, masks = container.take("state", rows), container.take("legal_actions_mask", rows)
    empty = (states[..., 0] + states[..., 1]).reshape(len(rows), 9) == 0
    np.testing.assert_array_equal(masks, empty)  # the mask is the empty squares of its state
    actions = container.take("action", rows)
    assert masks[np.arange(len(rows)), actions].all()  # every stored move was legal
    next_masks = container.take("next_legal_actions_mask", rows)
    terminal = container.take("terminal", rows)
    assert not next_masks[terminal].any() and next_masks[~terminal].any(axis=1).all()
    assert agent.trajectory.controller.n_sampled > 0


def test_greedy_evaluation_of_a_masked_dqn_plays_legal_moves():
    game, agent, _ = _learner_against_random()
    with torch.no_grad():  # the illegal square 4 looks best
        agent.policy.network.advantage.bias[4] = 100.0
    agent.policy._acting_stale = True
    player = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=3), "player_2": agent})
    returns = rl.evaluate(player, game, episodes=20)  # an illegal move would raise
    assert len(returns["player_2"]) == 20


def test_a_masked_burst_carries_the_mask_of_the_row_its_next_state_comes_from():
    trajectory = make_dqn_trajectory((np.int64, ()), 1, 64, 50, 1, 0, n_step=2, gamma=0.5,
                                     rng=0, legal_actions_mask=(np.bool_, (3,)))
    assert isinstance(trajectory.sampler, BurstSampler)
    trajectory.push(state=0, legal_actions_mask=[True, False, False])
    for s in range(1, 8):
        trajectory.push(state=s, legal_actions_mask=np.arange(3) == s % 3, action=0,
                        reward=1.0, terminal=s == 7)
    rows = next(iter(trajectory)).rows
    expected = np.arange(3)[None, :] == (rows["next_state"] % 3)[:, None]
    np.testing.assert_array_equal(rows["next_legal_actions_mask"], expected)


@pytest.mark.parametrize("method", ["SARS", "ExpectedSARSA"])
def test_tabular_q_learning_gives_a_next_state_without_legal_actions_the_same_value_0(method):
    learner = rl.TDLearner(rl.TabularQApproximator(3, 2), method, gamma=0.5, lr=0.5,
                           explorer=rl.EpsilonGreedyExplorer(0.1))
    learner.approximator.table[2] = [4.0, 2.0]
    learner.update({"state": [1, 1], "action": [0, 1], "reward": [1.0, 1.0],
                    "terminal": [False, False], "next_state": [2, 2],
                    "next_legal_actions_mask": np.array([[False, False], [False, True]])})
    assert learner.values(1).tolist() == [0.5, 1.0]  # 0.5 * (1 + 0); 0.5 * (1 + 0.5 * 2)


class CutAfterPlies(GameWrapper):
    """Tic-tac-toe cut by a time limit after ``plies`` moves (truncated, not terminated)."""

    def __init__(self, game, plies):
        super().__init__(game)
        self.plies, self.moves = plies, 0

    def reset(self):
        self.game.reset()
        self.moves = 0

    def act(self, action):
        self.game.act(action)
        self.moves += 1

    @property
    def is_truncated(self):
        return self.moves >= self.plies and not self.game.is_terminated


def test_a_row_cut_by_a_time_limit_while_the_other_player_is_to_move_is_worth_its_reward():
    game = CutAfterPlies(TicTacToe(), plies=3)
    config = DQNConfig(total_steps=100, learning_starts=1_000, net_arch=(8,), buffer_size=50)
    learner = make_dqn_agent(view_of(game, "player_1"), config, seed=0, device="cpu")
    rl.run(MultiAgentPolicy({"player_1": learner, "player_2": rl.RandomPolicy(rng=0)}), game,
           rl.StopAfterNEpisodes(1, progress=False))
    rows = learner.trajectory.container
    assert rows["terminal"].tolist() == [False, False]  # truncated: bootstrapped
    last_mask = rows["next_legal_actions_mask"][-1]
    assert not last_mask.any()  # seen while player_2 was to move
    batch = {name: rows[name] for name in ("state", "next_state", "action", "reward",
                                           "terminal", "next_legal_actions_mask")}
    targets = td_target(learner.policy, as_tensors(batch, CPU))
    assert targets[-1].item() == rows["reward"][-1] == 0.0  # not bootstrapped: worth 0
    batch["next_legal_actions_mask"] = np.ones_like(batch["next_legal_actions_mask"])
    assert td_target(learner.policy, as_tensors(batch, CPU))[-1].item() != 0.0  # else it would


def _empty_squares(boards):
    return (boards[..., 0] + boards[..., 1]).reshape(len(boards), 9) == 0


@pytest.mark.parametrize("n_step", [1, 3])
def test_self_play_samples_of_both_lanes_after_ring_wraps_carry_their_next_states_masks(n_step):
    game = TicTacToe()
    # exploring only (no update before learning_starts): the replay, not the learning
    config = DQNConfig(total_steps=2_000, learning_starts=5_000, net_arch=(8,), buffer_size=100,
                       n_step=n_step, gamma=0.5)
    shared = make_dqn_agent(view_of(game, "player_1"), config, seed=3, device="cpu")
    rl.run(MultiAgentPolicy({"player_1": shared, "player_2": shared}), game,
           rl.StopAfterNSteps(2_000, progress=False))  # each lane's 50 slots wrap ~20 times
    trajectory = shared.trajectory
    assert trajectory.container.n_lanes == 2
    assert trajectory.controller.n_inserted > 15 * config.buffer_size
    for _ in range(10):
        rows = trajectory.sampler.sample(trajectory.container).rows
        state, following = rows["state"], rows["next_state"]
        assert len(state) == config.batch_size
        # one player's boards: the other's marks never fewer, one player's turn at both ends
        to_move = _other_marks(state) - _own_marks(state)
        alive = ~rows["terminal"].astype(bool)
        assert ((_other_marks(following) - _own_marks(following))[alive] == to_move[alive]).all()
        np.testing.assert_array_equal(rows["next_legal_actions_mask"][alive],
                                      _empty_squares(following[alive]))
        assert not rows["next_legal_actions_mask"][~alive].any()  # a final board: none legal
        assert _empty_squares(state)[np.arange(len(state)), rows["action"]].all()


def _own_marks(boards):
    return boards[..., 0].reshape(len(boards), -1).sum(axis=1)


def _other_marks(boards):
    return boards[..., 1].reshape(len(boards), -1).sum(axis=1)
