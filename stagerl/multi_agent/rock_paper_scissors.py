"""RockPaperScissors: a simultaneous game in pure Python, as PettingZoo's ``rps_v2`` (parallel)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from stagerl.multi_agent.env import MultiAgentEnv
from stagerl.multi_agent.styles import SIMULTANEOUS

__all__ = ["RockPaperScissors"]

ROCK, PAPER, SCISSORS, NONE = 0, 1, 2, 3


class RockPaperScissors(MultiAgentEnv):
    """``player_0`` and ``player_1`` both move each cycle; ``max_cycles`` cycles make a match.

    Actions: 0 rock, 1 paper, 2 scissors (``act`` takes ``{player: action}``). A player's
    observation is the opponent's last move (3 before the first). The winner of a cycle gets
    +1, the loser -1, a tie 0 each. The match is never terminated: after ``max_cycles`` it is
    truncated (a time limit: learning bootstraps from the last observation). As PettingZoo's
    ``classic.rps_v2`` with three actions, whose default ``max_cycles`` is 15.

    Args:
        max_cycles: the cycles of a match (a positive int).

    Example:
        >>> game = RockPaperScissors(max_cycles=2)
        >>> game.reset()
        >>> game.act({"player_0": 0, "player_1": 2})        # rock beats scissors
        >>> game.reward_of("player_0"), game.state_of("player_1"), game.is_truncated
        (1.0, 0, False)
        >>> game.act({"player_0": 0, "player_1": 1}); game.is_truncated, game.is_terminated
        (True, False)
    """

    players = ("player_0", "player_1")
    dynamic_style = SIMULTANEOUS

    def __init__(self, max_cycles: int = 15) -> None:
        if isinstance(max_cycles, bool) or not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"RockPaperScissors: max_cycles must be a positive int, got "
                             f"max_cycles={max_cycles!r}")
        self.max_cycles = max_cycles
        self.cycle = 0
        self.last_moves = {p: NONE for p in self.players}
        self._action_space = gymnasium.spaces.Discrete(3)
        self._state_space = gymnasium.spaces.Discrete(4)
        self.open_ledger()

    def reset(self) -> None:
        self.cycle = 0
        self.last_moves = {p: NONE for p in self.players}
        self.open_ledger()

    def act(self, action: Any) -> None:
        if self.is_truncated:
            raise RuntimeError("RockPaperScissors: the match is over; reset() starts a new one")
        if not isinstance(action, dict) or set(action) != set(self.players):
            raise ValueError(f"RockPaperScissors.act takes {{player: action}} for "
                             f"{list(self.players)}, got {action!r}")
        a, b = (action[p] for p in self.players)
        for player, move in action.items():
            if isinstance(move, bool) or not isinstance(move, (int, np.integer)) \
                    or move not in (ROCK, PAPER, SCISSORS):
                raise ValueError(f"RockPaperScissors: {player}'s move must be 0 (rock), 1 "
                                 f"(paper) or 2 (scissors), got {move!r}")
        self.begin_act(self.players)
        if a != b:
            first_wins = (a - b) % 3 == 1
            self.credit(self.players[0], 1.0 if first_wins else -1.0)
            self.credit(self.players[1], -1.0 if first_wins else 1.0)
        self.last_moves = {self.players[0]: int(a), self.players[1]: int(b)}
        self.cycle += 1

    def state_of(self, player: Any) -> int:
        other = self.players[1 - self.players.index(player)]
        return self.last_moves[other]

    def action_space_of(self, player: Any) -> gymnasium.spaces.Discrete:
        return self._action_space

    def state_space_of(self, player: Any) -> gymnasium.spaces.Discrete:
        return self._state_space

    @property
    def is_terminated(self) -> bool:
        return False

    @property
    def is_truncated(self) -> bool:
        return self.cycle >= self.max_cycles

    def __repr__(self) -> str:
        return f"RockPaperScissors(max_cycles={self.max_cycles})"
