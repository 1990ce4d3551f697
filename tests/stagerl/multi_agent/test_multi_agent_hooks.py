"""Per-player hooks and logs: TotalRewardPerEpisode and WinDrawLoss per player, a row per game
with a return column per player, game-level hooks beside them."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from multi_agent_scripted import Relay, Scripted

import stagerl as rl
from stagerl.logging import CSVLogger
from stagerl.multi_agent import (
    MultiAgentCSVLogger,
    MultiAgentHook,
    MultiAgentPolicy,
    RockPaperScissors,
    TicTacToe,
    WinDrawLoss,
)


def _scripted_games(games):
    """Scripted tic-tac-toe games, one after the other: [(player_1 moves, player_2 moves)]."""
    first = [m for moves, _ in games for m in moves]
    second = [m for _, moves in games for m in moves]
    return MultiAgentPolicy({"player_1": Scripted(first), "player_2": Scripted(second)})


GAMES = [([0, 1, 2], [3, 4]),             # player_1 wins
         ([0, 1, 8], [3, 4, 5]),          # player_2 wins
         ([0, 6, 1, 5, 8], [3, 4, 2, 7])]  # a draw


def test_win_draw_loss_and_total_reward_per_player():
    hook = MultiAgentHook({p: WinDrawLoss() + rl.TotalRewardPerEpisode() + rl.StepsPerEpisode()
                           for p in TicTacToe.players})
    rl.run(_scripted_games(GAMES), TicTacToe(), rl.StopAfterNEpisodes(3, progress=False), hook)
    first, second = hook["player_1"], hook["player_2"]
    assert (first[0].wins, first[0].draws, first[0].losses) == (1, 1, 1)
    assert first[1].rewards == [1.0, -1.0, 0.0] and second[1].rewards == [-1.0, 1.0, 0.0]
    assert first[2].steps == [3, 3, 5] and second[2].steps == [2, 3, 4]  # each player's moves
    assert first[0].rates() == pytest.approx({"win": 1 / 3, "draw": 1 / 3, "loss": 1 / 3})


def test_games_cut_by_the_stop_have_no_result():
    hook = MultiAgentHook({p: WinDrawLoss() for p in TicTacToe.players})
    rl.run(_scripted_games(GAMES), TicTacToe(), rl.StopAfterNSteps(7, progress=False), hook)
    assert hook["player_1"].games == 1 and hook["player_2"].losses == 1


def test_the_multi_agent_csv_logger_writes_a_return_column_per_player(tmp_path):
    hook = MultiAgentCSVLogger(tmp_path) + rl.StepsPerEpisode()
    rl.run(_scripted_games(GAMES), TicTacToe(), rl.StopAfterNEpisodes(3, progress=False), hook)
    with (tmp_path / "episodes.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [r["return_player_1"] for r in rows] == ["1.0", "-1.0", "0.0"]
    assert [r["return_player_2"] for r in rows] == ["-1.0", "1.0", "0.0"]
    assert [r["return"] for r in rows] == ["0.0"] * 3  # zero-sum: the sum over players
    assert [int(r["length"]) for r in rows] == [5, 6, 9] == hook[1].steps  # acts per game
    assert [int(r["env_step"]) for r in rows] == [5, 11, 20]
    assert [r["terminated"] for r in rows] == ["1"] * 3


def test_the_player_column_holds_rewards_received_before_a_players_first_move(tmp_path):
    policy = MultiAgentPolicy({"a": Scripted([0, 0]), "b": Scripted([0, 0])})
    rl.run(policy, Relay(plies=4), rl.StopAfterNEpisodes(1, progress=False),
           MultiAgentCSVLogger(tmp_path))
    (row,) = csv.DictReader((tmp_path / "episodes.csv").open())
    assert (row["return_a"], row["return_b"]) == ("604.0", "406.0")
    assert row["return"] == "1010.0"


def test_a_plain_csv_logger_logs_the_game_level_columns(tmp_path):
    policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i)
                               for i, p in enumerate(RockPaperScissors.players)})
    rl.run(policy, RockPaperScissors(max_cycles=5), rl.StopAfterNEpisodes(4, progress=False),
           CSVLogger(tmp_path))
    rows = list(csv.DictReader((tmp_path / "episodes.csv").open()))
    assert [(r["length"], r["truncated"], r["return"]) for r in rows] == [("5", "1", "0.0")] * 4


def test_the_multi_agent_csv_logger_refuses_a_single_agent_env(tmp_path):
    with pytest.raises(TypeError, match="multi-agent loggers log games"):
        rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=MultiAgentCSVLogger(tmp_path))


def test_game_level_hooks_see_every_act_and_per_player_hooks_only_their_moves():
    game_steps, per_player = rl.StepsPerEpisode(), MultiAgentHook(
        {p: rl.StepsPerEpisode() for p in TicTacToe.players})
    policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=i)
                               for i, p in enumerate(TicTacToe.players)})
    rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(20, progress=False),
           game_steps + per_player)
    total = np.add(per_player["player_1"].steps, per_player["player_2"].steps)
    assert total.tolist() == game_steps.steps
