"""The sequential loop: every reward reaches the row of the player it belongs to, with the
episode's true flags, and the stages come in the documented order."""

from __future__ import annotations

import numpy as np
from multi_agent_scripted import Elimination, Relay, Scripted, board, lane_rows, sarts_agent

import stagerl as rl
from stagerl.multi_agent import MultiAgentHook, MultiAgentPolicy, TicTacToe


def _play(first_moves, second_moves, hook=None):
    first, second = sarts_agent(first_moves), sarts_agent(second_moves)
    policy = MultiAgentPolicy({"player_1": first, "player_2": second})
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(1, progress=False), hook)
    return lane_rows(first), lane_rows(second)


def test_first_player_wins_at_ply_5_and_the_loser_last_row_is_minus_one_and_terminal():
    # plies: p1 0, p2 3, p1 1, p2 4, p1 2 -> p1 holds the line 0-1-2
    p1, p2 = _play([0, 1, 2], [3, 4])
    assert len(p2["action"]) == 2 and len(p1["action"]) == 3
    assert p2["action"].tolist() == [3, 4]
    assert p2["reward"].tolist() == [0.0, -1.0]
    assert p2["terminal"].tolist() == [False, True]
    assert p1["action"].tolist() == [0, 1, 2]
    assert p1["reward"].tolist() == [0.0, 0.0, 1.0]
    assert p1["terminal"].tolist() == [False, False, True]
    assert p1["sampleable"].all() and p2["sampleable"].all()
    # Each row goes from the board the player moved at to the board at its next turn (or the
    # final board): never a board where the other player is to move.
    np.testing.assert_array_equal(p1["state"][0], board())
    np.testing.assert_array_equal(p1["next_state"][0], board(own=(0,), other=(3,)))
    np.testing.assert_array_equal(p1["next_state"][2], board(own=(0, 1, 2), other=(3, 4)))
    np.testing.assert_array_equal(p2["state"][0], board(own=(), other=(0,)))
    np.testing.assert_array_equal(p2["next_state"][0], board(own=(3,), other=(0, 1)))
    np.testing.assert_array_equal(p2["next_state"][1], board(own=(3, 4), other=(0, 1, 2)))


def test_second_player_wins_at_ply_6_the_mirror_case():
    # plies: p1 0, p2 3, p1 1, p2 4, p1 8, p2 5 -> p2 holds the line 3-4-5
    p1, p2 = _play([0, 1, 8], [3, 4, 5])
    assert p1["reward"].tolist() == [0.0, 0.0, -1.0]
    assert p1["terminal"].tolist() == [False, False, True]
    assert p2["reward"].tolist() == [0.0, 0.0, 1.0]
    assert p2["terminal"].tolist() == [False, False, True]
    np.testing.assert_array_equal(p1["next_state"][2], board(own=(0, 1, 8), other=(3, 4, 5)))


def test_a_draw_ends_every_row_at_zero_with_both_last_rows_terminal():
    # 0 X | 3 O | 6 X / 1 X | 4 O | 7 O / 2 O | 5 X | 8 X: no line
    p1, p2 = _play([0, 6, 1, 5, 8], [3, 4, 2, 7])
    assert p1["reward"].tolist() == [0.0] * 5 and p2["reward"].tolist() == [0.0] * 4
    assert p1["terminal"].tolist() == [False] * 4 + [True]
    assert p2["terminal"].tolist() == [False] * 3 + [True]


def test_a_reward_given_on_the_other_players_move_lands_on_the_right_row():
    # ply t gives the mover t and the other player 100 t
    a, b = sarts_agent([0, 0], state=(np.int64, (2,))), sarts_agent([1, 1], state=(np.int64, (2,)))
    hook = MultiAgentHook({"a": rl.TotalRewardPerEpisode(), "b": rl.TotalRewardPerEpisode()})
    game = Relay(plies=4)
    rl.run(MultiAgentPolicy({"a": a, "b": b}), game, rl.StopAfterNEpisodes(1, progress=False),
           hook)
    rows_a, rows_b = lane_rows(a), lane_rows(b)
    # a moved at plies 1 and 3: 1 + 200 (b's ply 2), then 3 + 400 (b's ply 4, the last)
    assert rows_a["reward"].tolist() == [201.0, 403.0]
    assert rows_a["state"][:, 0].tolist() == [0, 2]
    assert rows_a["next_state"][:, 0].tolist() == [2, 4]
    assert rows_a["terminal"].tolist() == [False, True]
    # b moved at plies 2 and 4: 2 + 300 (a's ply 3), then 4; the 100 of a's ply 1 came before
    # b's first move, so it belongs to no transition (it counts in b's episode return)
    assert rows_b["reward"].tolist() == [302.0, 4.0]
    assert rows_b["terminal"].tolist() == [False, True]
    assert hook["a"].rewards == [604.0] and hook["b"].rewards == [306.0]
    assert game.episode_return_of("b") == 406.0


def test_a_player_out_before_the_end_gets_its_last_row_when_it_is_out_and_no_more_turns():
    # x plays 0 then 1 (out at ply 4); y plays 0, 0, 1 (out at ply 6); z plays 0, 0 and wins
    x, y, z = (sarts_agent(m, state=(np.int64, (2,))) for m in ([0, 1], [0, 0, 1], [0, 0]))
    log: list = []
    hook = MultiAgentHook({p: _Log(log) for p in "xyz"})
    rl.run(MultiAgentPolicy({"x": x, "y": y, "z": z}), Elimination(),
           rl.StopAfterNEpisodes(1, progress=False), hook)
    # plies: x 0, y 0, z 0, x 1 (out), y 0, z 0, y 1 (out: z wins). x's move at ply 4 is
    # completed right then, terminal with its -1, and x is never asked to move again.
    assert log == [("x", 3, 0.0, False), ("x", 4, -1.0, True), ("y", 4, 0.0, False),
                   ("z", 5, 0.0, False), ("y", 6, 0.0, False), ("y", 7, -1.0, True),
                   ("z", 7, 1.0, True)]
    assert lane_rows(x)["terminal"].tolist() == [False, True]
    assert lane_rows(z)["reward"].tolist() == [0.0, 1.0]


class _Log(rl.Hook):
    def __init__(self, log: list) -> None:
        self.log = log


@rl.push.dispatch
def _log_post_act(hook: _Log, stage: rl.PostActStage, policy, env):
    hook.log.append((env.player, int(env.game.t), env.reward, env.is_terminated))


class _Order(rl.Hook):
    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name


@rl.push.dispatch
def _pre_episode(hook: _Order, stage: rl.PreEpisodeStage, policy, env):
    hook.log.append(f"PreEpisode:{hook.name}")


@rl.push.dispatch
def _pre_act(hook: _Order, stage: rl.PreActStage, policy, env):
    hook.log.append(f"PreAct:{hook.name}")


@rl.push.dispatch
def _post_act(hook: _Order, stage: rl.PostActStage, policy, env):
    hook.log.append(f"PostAct:{hook.name}")


@rl.push.dispatch
def _post_episode(hook: _Order, stage: rl.PostEpisodeStage, policy, env):
    hook.log.append(f"PostEpisode:{hook.name}")


def test_the_stages_come_in_the_documented_order():
    log: list = []
    policy = MultiAgentPolicy({"player_1": Scripted([0, 1, 2]), "player_2": Scripted([3, 4])})
    hook = MultiAgentHook({p: _Order(log, p[-1]) for p in TicTacToe.players}) + _Order(log, "g")
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(1, progress=False), hook)
    turn = ["PreAct:{p}", "PreAct:g", "PostAct:g"]

    def moves(p, first=False, completes=True):
        head = [f"PreEpisode:{p}"] if first else [f"PostAct:{p}"] if completes else []
        return head + [t.format(p=p) for t in turn]

    expected = (["PreEpisode:g"] + moves(1, first=True) + moves(2, first=True)
                + moves(1) + moves(2) + moves(1)
                + ["PostAct:1", "PostAct:2", "PostEpisode:1", "PostEpisode:2", "PostEpisode:g"])
    assert log == expected


def test_a_run_stopped_between_a_move_and_the_next_turn_leaves_that_move_unrecorded():
    first, second = sarts_agent([0, 1, 2]), sarts_agent([3, 4])
    policy = MultiAgentPolicy({"player_1": first, "player_2": second})
    rl.run(policy, TicTacToe(), rl.StopAfterNSteps(3, progress=False))
    # p1 moved at plies 1 and 3: only the first move has its next state (the board at ply 3)
    assert lane_rows(first)["action"].tolist() == [0]
    assert lane_rows(second)["action"].tolist() == []  # its first state, no step
    assert policy.turns.pending == {"player_1": 1, "player_2": 3}
    # The next run starts new episodes: the lone first state of p2 is never sampled.
    policy = MultiAgentPolicy({"player_1": first, "player_2": second})
    first.policy.moves[:] = [0, 1, 2]
    second.policy.moves[:] = [3, 4]
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(1, progress=False))
    assert lane_rows(second)["reward"][lane_rows(second)["sampleable"]].tolist() == [0.0, -1.0]
    assert lane_rows(first)["reward"][lane_rows(first)["sampleable"]].tolist() == [0.0, 0.0,
                                                                                   0.0, 1.0]


def test_a_sartsa_agent_cut_mid_game_completes_its_last_row_with_an_action_planned_where_it_moved():
    traces = rl.CircularArraySARTSATraces(capacity=16, state=(np.int8, (3, 3, 2)))
    seen = []

    class Remembering(Scripted):
        pass

    @rl.plan.dispatch
    def plan(policy: Remembering, env: rl.Env):
        seen.append(np.asarray(env.state).copy())
        return policy.moves.pop(0)

    agent = rl.Agent(Remembering([0, 1, 7, 8]), rl.Trajectory(traces))
    policy = MultiAgentPolicy({"player_1": agent, "player_2": Scripted([3, 4])})
    rl.run(policy, TicTacToe(), rl.StopAfterNSteps(3, progress=False))
    rows = lane_rows(agent)
    # p1's move at ply 3 waits for its next state; the row before it (ply 1 -> ply 3) is
    # completed with the action planned at the board p1 moved at in ply 3
    assert rows["action"].tolist() == [0] and rows["next_action"].tolist() == [7]
    np.testing.assert_array_equal(seen[-1], seen[-2])


def _masked_sarts(capacity=32):
    return (rl.MultiplexTraces("state", "next_state",
                               rl.CircularArrayBuffer(capacity + 1, (3, 3, 2), np.int8))
            + rl.MultiplexTraces("legal_actions_mask", "next_legal_actions_mask",
                                 rl.CircularArrayBuffer(capacity + 1, (9,), np.bool_))
            + rl.Traces(action=rl.CircularArrayBuffer(capacity, (), np.int64),
                        reward=rl.CircularArrayBuffer(capacity, (), np.float32),
                        terminal=rl.CircularArrayBuffer(capacity, (), np.bool_)))


def test_each_rows_legal_actions_and_those_at_its_next_state_are_stored():
    first = rl.Agent(Scripted([0, 1, 2]), rl.Trajectory(_masked_sarts()))
    second = rl.Agent(Scripted([3, 4]), rl.Trajectory(_masked_sarts()))
    rl.run(MultiAgentPolicy({"player_1": first, "player_2": second}), TicTacToe(),
           rl.StopAfterNEpisodes(1, progress=False))
    rows = lane_rows(second)
    free = lambda *taken: [i not in taken for i in range(9)]  # noqa: E731
    assert rows["legal_actions_mask"].tolist() == [free(0), free(0, 3, 1)]
    # the next state of the last row is the final board, seen off its turn: no legal action
    assert rows["next_legal_actions_mask"].tolist() == [free(0, 3, 1), [False] * 9]
    assert lane_rows(first)["next_legal_actions_mask"][0].tolist() == free(0, 3)


def test_the_slart_preset_built_from_a_players_view_stores_masks_and_next_actions():
    from stagerl.multi_agent import view_of

    traces = rl.CircularArraySLARTTraces(capacity=16, env=view_of(TicTacToe(), "player_2"))
    second = rl.Agent(Scripted([3, 4, 7]), rl.Trajectory(traces))  # 7: planned at the end
    rl.run(MultiAgentPolicy({"player_1": Scripted([0, 1, 2]), "player_2": second}), TicTacToe(),
           rl.StopAfterNEpisodes(1, progress=False))
    rows = lane_rows(second)
    assert rows["action"].tolist() == [3, 4] and rows["next_action"].tolist() == [4, 7]
    assert rows["legal_actions_mask"][0].tolist() == [i != 0 for i in range(9)]
    assert rows["reward"].tolist() == [0.0, -1.0] and rows["terminal"].tolist() == [False, True]
