"""One Agent for several players: shared parameters, one lane per player, never a sample that
chains two players' turns."""

from __future__ import annotations

import numpy as np
import pytest
from multi_agent_scripted import Scripted, lane_rows, sarts_agent

import stagerl as rl
from stagerl.multi_agent import MultiAgentPolicy, RockPaperScissors, TicTacToe


def test_a_shared_agent_keeps_each_players_rows_in_its_own_lane_exactly():
    shared = sarts_agent({"player_1": [0, 1, 2], "player_2": [3, 4]})
    policy = MultiAgentPolicy({"player_1": shared, "player_2": shared})
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(1, progress=False))
    assert shared.trajectory.container.n_lanes == 2
    apart = [sarts_agent([0, 1, 2]), sarts_agent([3, 4])]
    rl.run(MultiAgentPolicy({"player_1": apart[0], "player_2": apart[1]}), TicTacToe(),
           rl.StopAfterNEpisodes(1, progress=False))
    for lane, alone in enumerate(apart):
        got, expected = lane_rows(shared, lane), lane_rows(alone)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"lane {lane} {name}")
    assert lane_rows(shared, 0)["reward"].tolist() == [0.0, 0.0, 1.0]
    assert lane_rows(shared, 1)["reward"].tolist() == [0.0, -1.0]
    assert shared.trajectory.controller.n_inserted == 5


def test_a_policy_mapping_function_gives_the_same_lanes():
    shared = sarts_agent({"player_1": [0, 1, 2], "player_2": [3, 4]})
    policy = MultiAgentPolicy({"self": shared}, _everyone_self)
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(1, progress=False))
    assert policy["player_1"] is policy["player_2"] is shared
    assert lane_rows(shared, 1)["action"].tolist() == [3, 4]


def _everyone_self(player):
    return "self"


def _own_marks(states):
    return states[..., 0].reshape(len(states), -1).sum(axis=1)


def _other_marks(states):
    return states[..., 1].reshape(len(states), -1).sum(axis=1)


@pytest.mark.parametrize("n", [1, 3])
def test_n_step_samples_of_random_self_play_never_chain_two_players_turns(n):
    traces = rl.CircularArraySARTSTraces(capacity=600, state=(np.int8, (3, 3, 2)))
    sampler = rl.NStepBatchSampler(n, gamma=1.0, batch_size=512, rng=0)
    shared = rl.Agent(rl.RandomPolicy(rng=1), rl.Trajectory(traces, sampler))
    policy = MultiAgentPolicy({"player_1": shared, "player_2": shared})
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(200, progress=False))  # the ring wraps
    assert len(shared.trajectory) == 600
    for _ in range(5):
        batch = shared.trajectory.sample()
        state, following = batch["state"], batch["next_state"]
        # A player's board only gains marks, in both planes, between its own turns: a row
        # chaining player 1's board onto player 2's would swap the planes.
        assert (following >= state).all()
        own_moves = _own_marks(following) - _own_marks(state)
        assert ((own_moves >= 1) & (own_moves <= n)).all()
        # whose turn a state is: player 1 moves with as many marks as the other player,
        # player 2 with one fewer
        to_move = _other_marks(state) - _own_marks(state)
        assert set(to_move.tolist()) == {0, 1}
        alive = ~batch["terminal"]
        assert ((_other_marks(following) - _own_marks(following))[alive]
                == to_move[alive]).all()


def test_episode_samples_of_random_self_play_are_each_one_players_turns_in_order():
    traces = rl.CircularArraySARTSTraces(capacity=600, state=(np.int8, (3, 3, 2)))
    shared = rl.Agent(rl.RandomPolicy(rng=2), rl.Trajectory(traces, rl.EpisodesSampler()))
    policy = MultiAgentPolicy({"player_1": shared, "player_2": shared})
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(301, progress=False))  # the ring wraps
    assert len(shared.trajectory) == 600
    episodes = shared.trajectory.sample()
    # every stored transition in one episode (each lane's 300 slots: some 75 games' moves and
    # each game's last board)
    stored = int(np.asarray(shared.trajectory.container.sampleable_inds).sum())
    assert sum(len(e["action"]) for e in episodes) == stored and len(episodes) > 100
    seen = set()
    for episode in episodes:
        state, following = episode["state"], episode["next_state"]
        if not len(state):
            continue
        to_move = _other_marks(state) - _own_marks(state)  # 0: player 1's turns, 1: player 2's
        assert len(set(to_move.tolist())) == 1  # one player's turns only
        seen.add(int(to_move[0]))
        np.testing.assert_array_equal(following[:-1], state[1:])  # in order, none skipped
        assert not episode["terminal"][:-1].any()
        assert (_own_marks(following) - _own_marks(state) == 1).all()  # one own move per row
    assert seen == {0, 1}
    assert sum(bool(e["terminal"][-1]) for e in episodes if len(e["terminal"])) >= 100


def test_a_shared_agent_in_a_simultaneous_game_keeps_a_lane_per_player():
    shared = sarts_agent({"player_0": [0, 1, 2], "player_1": [2, 2, 2]}, state=(np.int64, ()))
    policy = MultiAgentPolicy({"player_0": shared, "player_1": shared})
    rl.run(policy, RockPaperScissors(max_cycles=3), rl.StopAfterNEpisodes(1, progress=False))
    assert lane_rows(shared, 0)["action"].tolist() == [0, 1, 2]
    assert lane_rows(shared, 1)["action"].tolist() == [2, 2, 2]
    assert lane_rows(shared, 0)["reward"].tolist() == [1.0, -1.0, 0.0]
    assert lane_rows(shared, 1)["next_state"].tolist() == [0, 1, 2]


def test_the_same_random_policy_for_both_players_never_plays_an_illegal_move():
    both = rl.RandomPolicy(rng=3)
    hook = rl.StepsPerEpisode()
    rl.run(MultiAgentPolicy({"player_1": both, "player_2": both}), TicTacToe(),
           rl.StopAfterNEpisodes(100, progress=False), hook)
    assert len(hook.steps) == 100 and all(5 <= n <= 9 for n in hook.steps)


def test_policies_without_trajectories_act_and_learn_nothing():
    learner = sarts_agent([0, 1, 2])
    fixed = Scripted([3, 4])
    rl.run(MultiAgentPolicy({"player_1": learner, "player_2": fixed}), TicTacToe(),
           rl.StopAfterNEpisodes(1, progress=False))
    assert lane_rows(learner)["reward"].tolist() == [0.0, 0.0, 1.0]
    assert fixed.moves == []


def test_each_players_view_names_its_lane_in_the_shared_agent():
    shared = sarts_agent({"player_1": [0, 1, 2], "player_2": [3, 4]})
    alone = sarts_agent([5])
    policy = MultiAgentPolicy({"player_1": shared, "player_2": shared})
    policy.bind(TicTacToe())
    assert [policy.views[p].lane for p in ("player_1", "player_2")] == [0, 1]
    policy = MultiAgentPolicy({"player_1": Scripted([0]), "player_2": alone})
    policy.bind(TicTacToe())
    assert policy.views["player_2"].lane == 0 and alone.trajectory.container.n_lanes == 1


def test_a_shared_agents_trajectory_is_pointed_at_lanes_never_patched():
    shared = sarts_agent({"player_1": [0, 1, 2], "player_2": [3, 4]})
    push_before = shared.trajectory.push
    rl.run(MultiAgentPolicy({"player_1": shared, "player_2": shared}), TicTacToe(),
           rl.StopAfterNEpisodes(1, progress=False))
    assert "push" not in vars(shared.trajectory)
    assert shared.trajectory.push.__func__ is push_before.__func__ is rl.Trajectory.push
    assert shared.trajectory.lane in (0, 1)  # the last player it recorded for
