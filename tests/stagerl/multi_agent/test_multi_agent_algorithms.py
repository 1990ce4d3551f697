"""DQN and PPO as players: masked acting and learning, one pending step per player for a PPO
playing several players, and a game that mixes them (each learns from its own rows only)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.algorithms.on_policy import A2CConfig, PPOConfig, make_a2c_agent, make_ppo_agent
from stagerl.multi_agent import (
    FlattenStates,
    MultiAgentPolicy,
    RockPaperScissors,
    TicTacToe,
    view_of,
)


def _ppo(game, player, seed=0, **settings):
    config = PPOConfig(**{"n_steps": 64, "batch_size": 32, "n_epochs": 2, **settings})
    return make_ppo_agent(view_of(game, player), config, seed=seed, device="cpu")


def _dqn(game, player, seed=0, steps=3_000):
    config = DQNConfig(total_steps=steps, learning_starts=100, train_freq=4, net_arch=(16,),
                       buffer_size=2_000, target_update_interval=200)
    return make_dqn_agent(view_of(game, player), config, seed=seed, device="cpu")


def _rows(agent, lane=None):
    container = agent.trajectory.container
    rows = container.sampleable_indices()
    if lane is not None:
        rows = rows[container.lane_of(rows)[0] == lane]
    return {name: container.take(name, rows) for name in container.keys()}


def _marks(flat_states):
    planes = flat_states.reshape(len(flat_states), 3, 3, 2)
    return planes[..., 0].sum(axis=(1, 2)), planes[..., 1].sum(axis=(1, 2))


def test_masked_ppo_stores_the_mask_it_drew_under_and_the_loss_gives_its_log_prob():
    game = FlattenStates(TicTacToe())
    learner = _ppo(game, "player_2", n_steps=10_000)  # no update: the acting weights stay
    policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=1), "player_2": learner})
    rl.run(policy, game, rl.StopAfterNSteps(600, progress=False))  # illegal moves raise
    assert learner.policy.masked and learner.policy.n_updates == 0
    rows = _rows(learner)
    own, other = _marks(rows["state"])
    empty = rows["state"].reshape(-1, 9, 2).sum(axis=2) == 0
    np.testing.assert_array_equal(rows["legal_actions_mask"], empty)
    assert rows["legal_actions_mask"][np.arange(len(own)), rows["action"]].all()
    log_prob, _ = learner.policy.model.log_prob_entropy(
        torch.as_tensor(rows["state"]), torch.as_tensor(rows["action"]),
        mask=torch.as_tensor(rows["legal_actions_mask"]))
    np.testing.assert_allclose(log_prob.detach().numpy(), rows["log_prob"], rtol=1e-5,
                               atol=1e-6)
    assert (rows["log_prob"] > np.log(1 / 9) - 0.5).all()  # near uniform over <= 9 legal squares


def test_a_ppo_playing_both_players_records_each_players_own_log_probs():
    game = FlattenStates(TicTacToe())
    shared = _ppo(game, "player_1", n_steps=10_000)
    rl.run(MultiAgentPolicy({"player_1": shared, "player_2": shared}), game,
           rl.StopAfterNSteps(400, progress=False))
    model = shared.policy.model
    for lane, other_offset in enumerate((0, 1)):
        rows = _rows(shared, lane)
        own, other = _marks(rows["state"])
        np.testing.assert_array_equal(other - own, other_offset)  # X moves at equal counts
        log_prob, _ = model.log_prob_entropy(torch.as_tensor(rows["state"]),
                                             torch.as_tensor(rows["action"]),
                                             mask=torch.as_tensor(rows["legal_actions_mask"]))
        np.testing.assert_allclose(log_prob.detach().numpy(), rows["log_prob"], rtol=1e-5,
                                   atol=1e-6)
        values = model.value(torch.as_tensor(rows["state"])).detach().numpy()
        np.testing.assert_allclose(values, rows["value"], rtol=1e-5, atol=1e-6)
    assert sorted(shared.policy._steps) == [0, 1]


def test_ppo_learns_from_rollouts_of_a_players_lane():
    game = FlattenStates(TicTacToe())
    learner = _ppo(game, "player_2", n_steps=128, batch_size=64)
    before = [p.detach().clone() for p in learner.policy.model.parameters()]
    policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=2), "player_2": learner})
    rl.run(policy, game, rl.StopAfterNSteps(1_200, progress=False))
    assert learner.policy.n_updates >= 3
    assert learner.policy.env_steps == 128 * learner.policy.n_updates  # the player's moves only
    changed = [not torch.equal(a, b) for a, b in zip(before, learner.policy.model.parameters(),
                                                     strict=True)]
    assert all(changed)


def test_a_game_of_ppo_against_dqn_runs_and_each_learns_from_its_own_rows_only():
    game = FlattenStates(TicTacToe())
    ppo, dqn = _ppo(game, "player_1", n_steps=128), _dqn(game, "player_2")
    ppo_before = [p.detach().clone() for p in ppo.policy.model.parameters()]
    dqn_before = [p.detach().clone() for p in dqn.policy.network.parameters()]
    rl.run(MultiAgentPolicy({"player_1": ppo, "player_2": dqn}), game,
           rl.StopAfterNSteps(2_000, progress=False))
    own, other = _marks(_rows(ppo)["state"])
    assert (own == other).all()  # player_1 moves when both have as many marks
    own, other = _marks(_rows(dqn)["state"])
    assert (other == own + 1).all()  # player_2 moves one mark behind
    assert ppo.policy.n_updates > 0 and dqn.trajectory.controller.n_sampled > 0
    assert any(not torch.equal(a, b) for a, b in zip(ppo_before, ppo.policy.model.parameters(),
                                                     strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(dqn_before, dqn.policy.network.parameters(),
                                                     strict=True))
    ppo_moves, dqn_moves = ppo.policy.env_steps, dqn.policy.env_steps
    assert dqn_moves + ppo.trajectory.controller.n_inserted >= 1_900  # every move is someone's
    assert ppo_moves % 128 == 0


def test_ppo_and_dqn_in_a_simultaneous_game():
    game = FlattenStates(RockPaperScissors(max_cycles=5))
    ppo, dqn = _ppo(game, "player_0", n_steps=50), _dqn(game, "player_1", steps=500)
    assert not ppo.policy.masked and not dqn.policy.masked
    rl.run(MultiAgentPolicy({"player_0": ppo, "player_1": dqn}), game,
           rl.StopAfterNSteps(500, progress=False))
    assert ppo.policy.n_updates == 10 and dqn.policy.env_steps == 500
    rows = _rows(dqn)
    assert rows["state"].shape[1] == 4 and rows["terminal"].sum() == 0  # truncated, bootstrapped


def test_an_on_policy_algorithm_without_masks_refuses_a_masked_game_naming_the_player():
    game = FlattenStates(TicTacToe())
    a2c = make_a2c_agent(view_of(game, "player_2"), A2CConfig(n_steps=8), seed=0, device="cpu")
    policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=0), "player_2": a2c})
    with pytest.raises(TypeError) as error:
        rl.run(policy, game, rl.StopAfterNSteps(10, progress=False))
    message = str(error.value)
    assert "player 'player_2'" in message and "A2CPolicy" in message
    assert "legal-action masks" in message and "PPO" in message
    assert len(a2c.trajectory) == 0


def test_a_ppo_playing_both_players_learns_from_rollouts_over_both_lanes():
    game = FlattenStates(TicTacToe())
    shared = _ppo(game, "player_1", n_steps=64, batch_size=32)
    seen = []
    learn = shared.policy.learn

    def learn_and_look(container):
        seen.append(container.lane_lengths())
        learn(container)

    shared.policy.learn = learn_and_look
    rl.run(MultiAgentPolicy({"player_1": shared, "player_2": shared}), game,
           rl.StopAfterNSteps(800, progress=False))
    assert shared.policy.n_updates == len(seen) == 800 // 64
    assert shared.policy.env_steps == 64 * shared.policy.n_updates  # the moves of both players
    assert all(a > 0 and b > 0 for a, b in seen)  # every rollout holds both players' moves


def test_masked_ppo_and_dqn_read_the_board_unflattened_through_their_extractors():
    game = TicTacToe()  # int8 boards (3, 3, 2): the built-in extractors read them as they are
    ppo = make_ppo_agent(view_of(game, "player_2"),
                         PPOConfig(n_steps=64, batch_size=32, n_epochs=2), seed=0, device="cpu")
    dqn = _dqn(game, "player_1", steps=1_500)
    assert ppo.policy.masked and dqn.policy.masked and ppo.policy.model.extractor is not None
    rl.run(MultiAgentPolicy({"player_1": dqn, "player_2": ppo}), game,
           rl.StopAfterNSteps(1_500, progress=False))  # an illegal move would raise
    assert ppo.policy.n_updates > 0 and dqn.trajectory.controller.n_sampled > 0
    for agent in (ppo, dqn):
        rows = _rows(agent)
        assert rows["state"].shape[1:] == (3, 3, 2) and rows["state"].dtype == np.int8
        np.testing.assert_array_equal(rows["legal_actions_mask"],
                                      rows["state"].reshape(-1, 9, 2).sum(axis=2) == 0)
        assert rows["legal_actions_mask"][np.arange(len(rows["action"])), rows["action"]].all()


def test_masks_of_an_action_space_other_than_discrete_are_refused():
    class MaskedPendulum(rl.GymEnv):
        @property
        def legal_actions_mask(self):
            return np.ones(1, dtype=bool)

    with pytest.raises(TypeError, match="legal-action masks.*Discrete action space only"):
        make_ppo_agent(MaskedPendulum("Pendulum-v1"), PPOConfig(n_steps=64, batch_size=32),
                       device="cpu")
    with pytest.raises(TypeError, match="discrete actions"):
        make_dqn_agent(MaskedPendulum("Pendulum-v1"), DQNConfig(total_steps=10), device="cpu")
