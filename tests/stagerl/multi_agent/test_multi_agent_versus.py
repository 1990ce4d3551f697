"""Versus (one seat of a game against fixed opponents), evaluating a game's players, the
opponents of the experiments, FlattenStates and scored players."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from multi_agent_scripted import Scripted, sarts_agent

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.multi_agent import (
    AlwaysSameMove,
    BeatLastMove,
    FlattenStates,
    MaskedVersus,
    MixedPerEpisode,
    MultiAgentHook,
    MultiAgentPolicy,
    RockPaperScissors,
    TicTacToe,
    Versus,
    view_of,
)

# ---- Versus ----------------------------------------------------------------------------------


def test_a_seat_gets_every_reward_since_its_last_move_the_opponents_winning_move_included():
    env = Versus(TicTacToe(), {"player_1": Scripted([0, 1, 2])}, seats="player_2")
    assert isinstance(env, MaskedVersus)
    env.reset()  # player_1 has played 0
    assert env.state[0, 0].tolist() == [0, 1] and env.legal_actions_mask.sum() == 8
    env.act(3)  # player_1 answers with 1
    assert env.reward == 0.0 and not env.is_terminated
    env.act(4)  # player_1 completes 0-1-2: the seat's move lost the game
    assert env.reward == -1.0 and env.is_terminated
    assert not env.legal_actions_mask.any()


def test_seats_taken_in_turn_one_per_episode():
    random = rl.RandomPolicy(rng=0)
    env = Versus(TicTacToe(), {"player_1": random, "player_2": random},
                 seats=("player_1", "player_2"))
    seats = []
    for _ in range(4):
        env.reset()
        seats.append(env.seat)
        own, other = env.state[..., 0].sum(), env.state[..., 1].sum()
        assert (own, other) == ((0, 0) if env.seat == "player_1" else (0, 1))
    assert seats == ["player_1", "player_2", "player_1", "player_2"]


def test_in_a_simultaneous_game_the_opponents_move_with_the_seat():
    env = Versus(RockPaperScissors(max_cycles=3), {"player_1": Scripted([2, 2, 0])},
                 seats="player_0")
    assert not isinstance(env, MaskedVersus)
    env.reset()
    rewards = []
    for move in (0, 1, 0):  # rock v scissors, paper v scissors, rock v rock
        env.act(move)
        rewards.append(env.reward)
    assert rewards == [1.0, -1.0, 0.0] and env.is_truncated and not env.is_terminated
    assert env.state == 0  # the opponent's last move


def test_a_multi_agent_policy_plays_each_seat_with_the_policy_of_that_seat():
    first, second = Scripted([4, 0, 8]), Scripted([8, 5])
    policy = MultiAgentPolicy({"a": first, "b": second}, {"player_1": "a", "player_2": "b"})
    env = Versus(TicTacToe(), {"player_1": Scripted([0, 1, 2]), "player_2": Scripted([6, 7])},
                 seats=("player_1", "player_2"))
    hook = rl.run(policy, env, rl.StopAfterNEpisodes(2, progress=False), rl.TotalRewardPerEpisode())
    assert first.moves == [] and second.moves == []  # each played in its own seat
    assert hook.rewards == [1.0, -1.0]  # 4-0-8 wins as player_1; 0-1-2 beats it as player_2
    assert policy.game is None  # nothing was bound


@pytest.mark.parametrize("bad, error, match", [
    (dict(seats="player_3"), ValueError, "seats must be players"),
    (dict(opponents={}), ValueError, r"\['player_1'\] need an opponent"),
    (dict(opponents={"player_9": rl.RandomPolicy()}), ValueError, "not a player"),
    (dict(opponents={"player_1": "random"}), TypeError, "must be a stagerl.Policy"),
    (dict(opponents=[rl.RandomPolicy()]), TypeError, "dict"),
])
def test_versus_refuses_seats_and_opponents_that_do_not_fit_the_game(bad, error, match):
    arguments = {"opponents": {"player_1": rl.RandomPolicy()}, "seats": "player_2", **bad}
    with pytest.raises(error, match=match):
        Versus(TicTacToe(), **arguments)
    with pytest.raises(TypeError, match="multi-agent game"):
        Versus(rl.RandomWalk1D(), {}, seats="player_1")


# ---- evaluating a game's players ----------------------------------------------------------------


def _masked_dqn(game, player, seed=0):
    config = DQNConfig(total_steps=500, learning_starts=50, train_freq=4, net_arch=(8,),
                       buffer_size=200)
    return make_dqn_agent(view_of(game, player), config, seed=seed, device="cpu")


def test_evaluate_gives_each_players_returns_and_leaves_the_policies_as_they_were():
    game = TicTacToe()
    learner = _masked_dqn(game, "player_2")
    policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=1), "player_2": learner})
    rl.run(policy, game, rl.StopAfterNSteps(300, progress=False))
    rows, steps = len(learner.trajectory), learner.policy.env_steps
    returns = rl.evaluate(policy, TicTacToe(), episodes=30)
    assert sorted(returns) == ["player_1", "player_2"] and len(returns["player_2"]) == 30
    assert all(a == -b for a, b in zip(returns["player_1"], returns["player_2"], strict=True))
    assert len(learner.trajectory) == rows and learner.policy.env_steps == steps
    assert "deterministic" not in vars(learner.policy) and policy.game is game


def test_a_multi_agent_policy_set_deterministic_sets_its_policies_and_gives_them_back():
    inner = rl.RandomPolicy(rng=0)
    inner.deterministic = False
    agent = sarts_agent([0])
    policy = MultiAgentPolicy({"player_1": inner, "player_2": agent})
    with rl.deterministic(policy):
        assert inner.deterministic and agent.policy.deterministic and policy.deterministic
    assert "deterministic" in vars(inner) and inner.deterministic is False
    assert "deterministic" not in vars(agent.policy) and not policy.deterministic


def test_an_evaluation_in_the_middle_of_a_game_leaves_the_training_run_as_it_was():
    def trained(evaluate_every):
        game = TicTacToe()
        learner = _masked_dqn(game, "player_2", seed=3)
        policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=4), "player_2": learner})
        hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() for p in game.players})
        if evaluate_every:
            versus = Versus(TicTacToe(), {"player_1": rl.RandomPolicy(rng=5)}, "player_2")
            hook = hook + rl.logging.Evaluate(evaluate_every, 3, versus)
        rl.run(policy, game, rl.StopAfterNSteps(400, progress=False), hook)
        return learner, hook

    plain, _ = trained(None)
    evaluated, hook = trained(37)  # mid-game, often
    assert len(hook[1].returns) == 10
    for name in plain.trajectory.keys():
        np.testing.assert_array_equal(plain.trajectory.container[name],
                                      evaluated.trajectory.container[name])
    for a, b in zip(plain.policy.network.parameters(), evaluated.policy.network.parameters(),
                    strict=True):
        assert torch.equal(a, b)


def test_evaluating_a_game_needs_a_multi_agent_policy():
    with pytest.raises(TypeError, match="needs a stagerl.multi_agent.MultiAgentPolicy"):
        rl.evaluate(rl.RandomPolicy(rng=0), TicTacToe(), episodes=1)


# ---- the opponents --------------------------------------------------------------------------


def test_always_same_move_keeps_a_move_per_episode_drawn_anew_each_episode():
    opponent = AlwaysSameMove(rng=0)
    env = Versus(RockPaperScissors(max_cycles=5), {"player_1": opponent}, seats="player_0")
    moves = []
    for _ in range(12):
        env.reset()
        episode = []
        while not env.is_truncated:
            env.act(0)
            episode.append(env.state)
        assert len(set(episode)) == 1
        moves.append(episode[0])
    assert set(moves) == {0, 1, 2}


def test_beat_last_move_beats_the_other_players_last_move_in_either_observation():
    for game in (RockPaperScissors(max_cycles=9), FlattenStates(RockPaperScissors(max_cycles=9))):
        env = Versus(game, {"player_1": BeatLastMove(rng=0)}, seats="player_0")
        env.reset()
        mine = [0, 1, 2, 2, 0, 1, 1, 0]
        theirs = []
        for move in mine:
            env.act(move)
            theirs.append(game.unwrapped.last_moves["player_1"])
        assert theirs[1:] == [(m + 1) % 3 for m in mine[:-1]]


def test_mixed_per_episode_draws_one_policy_per_episode_and_a_seed_repeats_the_draws():
    def drawn(seed):
        mixed = MixedPerEpisode([Scripted([0] * 100), Scripted([1] * 100)], rng=seed)
        env = Versus(RockPaperScissors(max_cycles=3), {"player_1": mixed}, seats="player_0")
        firsts = []
        for _ in range(20):
            env.reset()
            env.act(2)
            firsts.append(env.state)
            env.act(2)
            assert env.state == firsts[-1]  # the same policy all episode
        return firsts

    assert drawn(0) == drawn(0) and set(drawn(0)) == {0, 1}


# ---- FlattenStates and scored players ----------------------------------------------------------


def test_flatten_states_gives_flat_floats_and_changes_nothing_else():
    plain, flat = TicTacToe(), FlattenStates(TicTacToe())
    for game in (plain, flat):
        game.reset()
        for square in (4, 0, 8, 2):
            game.act(square)
    for player in plain.players:
        np.testing.assert_array_equal(flat.state_of(player),
                                      plain.state_of(player).reshape(-1).astype(np.float32))
        assert flat.state_space_of(player).contains(flat.state_of(player))
        np.testing.assert_array_equal(flat.legal_actions_mask_of(player),
                                      plain.legal_actions_mask_of(player))
    assert flat.current_player == plain.current_player and flat.unwrapped is flat.game
    rps = FlattenStates(RockPaperScissors())
    rps.reset()
    rps.act({"player_0": 2, "player_1": 0})
    assert rps.state_of("player_1").tolist() == [0.0, 0.0, 1.0, 0.0]
    assert rps.reward_of("player_1") == 1.0 and rps.episode_return_of("player_0") == -1.0
    with pytest.raises(TypeError, match="MultiAgentEnv"):
        FlattenStates(rl.RandomWalk1D())


def test_a_scored_game_reports_those_players_rewards_to_game_level_hooks():
    policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i) for i, p in enumerate(TicTacToe.players)})
    game = FlattenStates(TicTacToe()).score("player_2")
    hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() for p in game.players})
    totals = rl.run(policy, game, rl.StopAfterNEpisodes(40, progress=False),
                    rl.TotalRewardPerEpisode() + hook)
    assert totals[0].rewards == totals[1]["player_2"].rewards
    assert any(totals[0].rewards)
    with pytest.raises(ValueError, match="not players"):
        TicTacToe().score("player_3")
    assert TicTacToe().score("player_1").score().scored_players is None


def test_a_seat_whose_policy_refuses_the_env_is_named_before_anything_runs():
    from stagerl.algorithms.on_policy import A2CConfig, make_a2c_agent

    game = FlattenStates(TicTacToe())
    a2c = make_a2c_agent(view_of(game, "player_2"), A2CConfig(n_steps=8), seed=0, device="cpu")
    policy = MultiAgentPolicy({"player_1": rl.RandomPolicy(rng=0), "player_2": a2c})
    versus = Versus(FlattenStates(TicTacToe()), {"player_1": rl.RandomPolicy(rng=1)}, "player_2")
    with pytest.raises(TypeError, match="seat 'player_2' .* cannot be played by .*A2CPolicy "
                                        "acts without legal-action masks"):
        rl.evaluate(policy, versus, episodes=1)
    assert versus.episodes == 0
