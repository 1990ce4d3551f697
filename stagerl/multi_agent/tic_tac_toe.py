"""TicTacToe: a turn-based game in pure Python, move for move PettingZoo's ``tictactoe_v3``."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from stagerl.multi_agent.env import MultiAgentEnv
from stagerl.multi_agent.styles import SEQUENTIAL

__all__ = ["TicTacToe"]

_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_LINES_THROUGH = tuple(tuple(line for line in _LINES if square in line) for square in range(9))


class TicTacToe(MultiAgentEnv):
    """Tic-tac-toe for ``player_1`` (moves first) and ``player_2``; needs no pygame.

    As PettingZoo's ``classic.tictactoe_v3`` (so runs on either are comparable): action ``i``
    marks square ``i``; a player's observation is ``(3, 3, 2)`` int8, plane 0 its own marks and
    plane 1 the opponent's, square ``i`` at ``[i // 3, i % 3]``; its legal-action mask holds the
    empty squares on its turn and nothing off it. Three in a line: +1 to the winner, -1 to the
    loser, both terminated; a full board: a draw, 0 each. An illegal action raises (the run
    loop refuses it first, naming the player).

    Example:
        >>> game = TicTacToe()
        >>> game.reset()
        >>> for square in (0, 3, 1, 4, 2):   # player_1 fills the first line
        ...     game.act(square)
        >>> game.is_terminated, game.reward_of("player_1"), game.reward_of("player_2")
        (True, 1.0, -1.0)
    """

    players = ("player_1", "player_2")
    dynamic_style = SEQUENTIAL
    has_legal_actions_mask = True

    def __init__(self) -> None:
        self.squares = [0] * 9  # 0 empty, 1 player_1's mark, 2 player_2's
        self.turn = 0  # index of the player to move
        self.winner: int | None = None
        self.done = False
        # Each player's observation, kept up to date move by move: [k] is player k's.
        self._views = np.zeros((2, 3, 3, 2), dtype=np.int8)
        self._free = np.ones(9, dtype=bool)
        self._action_space = gymnasium.spaces.Discrete(9)
        self._state_space = gymnasium.spaces.Box(0, 1, shape=(3, 3, 2), dtype=np.int8)
        self.open_ledger()

    def reset(self) -> None:
        self.squares = [0] * 9
        self.turn = 0
        self.winner = None
        self.done = False
        self._views[:] = 0
        self._free[:] = True
        self.open_ledger()

    @property
    def current_player(self) -> str:
        return self.players[self.turn]

    def act(self, action: Any) -> None:
        if self.done:
            raise RuntimeError("TicTacToe: the game is over; reset() starts a new one")
        square = int(action) if isinstance(action, (int, np.integer)) else -1
        if not 0 <= square < 9 or self.squares[square] or isinstance(action, bool):
            raise ValueError(f"TicTacToe: {action!r} is not a legal move for "
                             f"{self.current_player} (empty squares: {self._empty()})")
        mover = self.turn
        self.begin_act((self.players[mover],))
        self.squares[square] = mover + 1
        self._free[square] = False
        row, column = divmod(square, 3)
        self._views[mover, row, column, 0] = self._views[1 - mover, row, column, 1] = 1
        if self._wins(mover + 1, square):
            self.winner, self.done = mover, True
            self.credit(self.players[mover], 1.0)
            self.credit(self.players[1 - mover], -1.0)
        elif 0 not in self.squares:
            self.done = True
        self.turn = 1 - mover

    def _wins(self, mark: int, square: int) -> bool:
        s = self.squares
        return any(s[a] == mark and s[b] == mark and s[c] == mark
                   for a, b, c in _LINES_THROUGH[square])

    def _empty(self) -> list[int]:
        return [i for i, mark in enumerate(self.squares) if not mark]

    def state_of(self, player: Any) -> np.ndarray:
        return self._views[self.players.index(player)].copy()

    def legal_actions_mask_of(self, player: Any) -> np.ndarray:
        if not self.done and player == self.players[self.turn]:
            return self._free.copy()
        return np.zeros(9, dtype=bool)

    def action_space_of(self, player: Any) -> gymnasium.spaces.Discrete:
        return self._action_space

    def state_space_of(self, player: Any) -> gymnasium.spaces.Box:
        return self._state_space

    @property
    def is_terminated(self) -> bool:
        return self.done
