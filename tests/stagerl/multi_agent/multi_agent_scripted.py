"""Test-only policies and envs of the multi-agent tests: scripted moves, identifiable states."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

import stagerl as rl
from stagerl.multi_agent import SEQUENTIAL, MultiAgentEnv


class Scripted(rl.Policy):
    """Plays ``moves`` in order; with a dict, each player's own list (one policy, many players)."""

    def __init__(self, moves: Any) -> None:
        self.moves = {k: list(v) for k, v in moves.items()} if isinstance(moves, dict) \
            else list(moves)

    def __repr__(self) -> str:
        return f"Scripted({self.moves!r})"


@rl.plan.dispatch
def plan(policy: Scripted, env: rl.Env):
    moves = policy.moves[env.player] if isinstance(policy.moves, dict) else policy.moves
    return moves.pop(0)


def sarts_agent(moves: Any, capacity: int = 64, state=(np.int8, (3, 3, 2)), **kwargs) -> rl.Agent:
    traces = rl.CircularArraySARTSTraces(capacity=capacity, state=state, **kwargs)
    return rl.Agent(Scripted(moves), rl.Trajectory(traces))


def lane_rows(agent: rl.Agent, lane: int = 0) -> dict:
    """The stored rows of one lane (every trace, and whether each row is sampleable)."""
    container = agent.trajectory.container
    rows, lanes = np.arange(len(container)), container.lane_of(np.arange(len(container)))[0]
    mine = rows[lanes == lane]
    out = {name: container[name][mine] for name in container.keys()}
    out["sampleable"] = np.asarray(container.sampleable_inds)[mine]
    return out


def board(own: tuple = (), other: tuple = ()) -> np.ndarray:
    """A tic-tac-toe observation: plane 0 the viewer's marks, plane 1 the opponent's."""
    planes = np.zeros((3, 3, 2), dtype=np.int8)
    for plane, squares in ((0, own), (1, other)):
        for square in squares:
            planes[square // 3, square % 3, plane] = 1
    return planes


class Relay(MultiAgentEnv):
    """Two players, ``plies`` moves in turn. The mover of ply ``t`` (1, 2, ...) gets ``t`` and the
    other player ``100 * t``: most of a player's reward comes from the other's move. A player's
    state is ``[plies so far, its index]``; the game terminates after the last ply."""

    players = ("a", "b")
    dynamic_style = SEQUENTIAL

    def __init__(self, plies: int = 4) -> None:
        self.plies, self.t = plies, 0
        self.open_ledger()

    def reset(self) -> None:
        self.t = 0
        self.open_ledger()

    @property
    def current_player(self) -> str:
        return self.players[self.t % 2]

    def act(self, action: Any) -> None:
        mover = self.current_player
        self.begin_act((mover,))
        self.t += 1
        self.credit(mover, float(self.t))
        self.credit(self.players[self.t % 2], 100.0 * self.t)

    def state_of(self, player: Any) -> np.ndarray:
        return np.array([self.t, self.players.index(player)], dtype=np.int64)

    def action_space_of(self, player: Any) -> Any:
        return gymnasium.spaces.Discrete(2)

    def state_space_of(self, player: Any) -> Any:
        return gymnasium.spaces.Box(0, 100, (2,), np.int64)

    @property
    def is_terminated(self) -> bool:
        return self.t >= self.plies


class Elimination(MultiAgentEnv):
    """Three players in turn; a player who plays action 1 is out (terminated, reward -1) and the
    others play on; the game ends when one player is left (it gets +1 at that moment)."""

    players = ("x", "y", "z")
    dynamic_style = SEQUENTIAL

    def __init__(self) -> None:
        self.out: list = []
        self.turn = 0
        self.t = 0
        self.open_ledger()

    def reset(self) -> None:
        self.out, self.turn, self.t = [], 0, 0
        self.open_ledger()

    @property
    def current_player(self) -> str:
        return self.players[self.turn]

    def act(self, action: Any) -> None:
        mover = self.current_player
        self.begin_act((mover,))
        self.t += 1
        if action == 1:
            self.out.append(mover)
            self.credit(mover, -1.0)
            left = [p for p in self.players if p not in self.out]
            if len(left) == 1:
                self.credit(left[0], 1.0)
        if not self.is_terminated:
            self.turn = (self.turn + 1) % 3
            while self.players[self.turn] in self.out:
                self.turn = (self.turn + 1) % 3

    def state_of(self, player: Any) -> np.ndarray:
        return np.array([self.t, self.players.index(player)], dtype=np.int64)

    def action_space_of(self, player: Any) -> Any:
        return gymnasium.spaces.Discrete(2)

    def state_space_of(self, player: Any) -> Any:
        return gymnasium.spaces.Box(0, 100, (2,), np.int64)

    @property
    def is_terminated(self) -> bool:
        return len(self.out) >= 2

    def is_terminated_for(self, player: Any) -> bool:
        return player in self.out or self.is_terminated
