"""Masked random against masked random over 3,000 tic-tac-toe games: never an illegal move, and
each player's results where uniform random play puts them."""

from __future__ import annotations

from functools import cache

import numpy as np

import stagerl as rl
from stagerl.multi_agent import MultiAgentHook, MultiAgentPolicy, TicTacToe, WinDrawLoss

_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


@cache
def _outcomes(board: tuple = (0,) * 9, mark: int = 1) -> np.ndarray:
    """Probabilities of (first player wins, draw, second wins) under uniform random play."""
    empty = [i for i, m in enumerate(board) if m == 0]
    total = np.zeros(3)
    for square in empty:
        after = board[:square] + (mark,) + board[square + 1:]
        if any(all(after[i] == mark for i in line) for line in _LINES):
            total[0 if mark == 1 else 2] += 1
        elif 0 not in after:
            total[1] += 1
        else:
            total += _outcomes(after, 3 - mark)
    return total / len(empty)


def test_uniform_random_play_is_won_by_the_first_player_58_5_percent_of_games():
    win, draw, loss = _outcomes()
    assert (round(win, 4), round(draw, 4), round(loss, 4)) == (0.5849, 0.127, 0.2881)
    assert round(win - loss, 4) == 0.2968  # the first player's expected reward per game


def test_masked_random_against_masked_random_over_3000_games():
    game = TicTacToe()
    policy = MultiAgentPolicy({p: rl.RandomPolicy(rng=10 + i) for i, p in enumerate(game.players)})
    hook = MultiAgentHook({p: rl.TotalRewardPerEpisode() + WinDrawLoss() for p in game.players})
    # an illegal move would raise (the loop checks every action against the player's mask)
    rl.run(policy, game, rl.StopAfterNEpisodes(3000, progress=False), hook)
    first, second = np.asarray(hook["player_1"][0].rewards), np.asarray(hook["player_2"][0].rewards)
    assert len(first) == len(second) == 3000
    assert (first + second == 0).all()  # every game: +1/-1 or a draw, credited to both
    assert abs(first.mean() - 0.27) <= 0.04  # PettingZoo measured +0.274
    win, draw, loss = _outcomes()
    assert abs(first.mean() - (win - loss)) <= 0.04  # 2.5 standard errors of 3,000 games
    rates = hook["player_1"][1].rates()
    for measured, expected in ((rates["win"], win), (rates["draw"], draw), (rates["loss"], loss)):
        assert abs(measured - expected) <= 0.025  # about 2.8 standard errors
    assert hook["player_2"][1].rates()["win"] == rates["loss"]
