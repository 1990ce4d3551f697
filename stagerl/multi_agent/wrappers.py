"""Games seen through a change: :class:`GameWrapper`, and :class:`FlattenStates`, which gives
every player flat float observations (what the on-policy networks take)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from stagerl.multi_agent.env import MultiAgentEnv

__all__ = ["GameWrapper", "FlattenStates"]


class GameWrapper(MultiAgentEnv):
    """A game (``game``) seen through a change: every member a subclass does not redefine is
    the wrapped game's, rewards and flags included; ``unwrapped`` is the game under all the
    wrappers. Subclasses override what they change (``state_of`` and ``state_space_of`` for
    observations)."""

    def __init__(self, game: Any) -> None:
        if not isinstance(game, MultiAgentEnv):
            raise TypeError(f"{type(self).__name__} wraps a stagerl.multi_agent.MultiAgentEnv, "
                            f"got {type(game).__name__}")
        self.game = game

    @property
    def players(self) -> tuple:
        return self.game.players

    @property
    def dynamic_style(self) -> Any:
        return self.game.dynamic_style

    @property
    def has_legal_actions_mask(self) -> bool:
        return self.game.has_legal_actions_mask

    @property
    def unwrapped(self) -> MultiAgentEnv:
        return self.game.unwrapped

    @property
    def scored_players(self) -> tuple | None:
        return self.game.scored_players

    def score(self, *players: Any) -> GameWrapper:
        self.game.score(*players)
        return self

    def reset(self) -> None:
        self.game.reset()

    def act(self, action: Any) -> None:
        self.game.act(action)

    @property
    def current_player(self) -> Any:
        return self.game.current_player

    @property
    def acting_players(self) -> tuple:
        return self.game.acting_players

    def state_of(self, player: Any) -> Any:
        return self.game.state_of(player)

    def state_space_of(self, player: Any) -> Any:
        return self.game.state_space_of(player)

    def action_space_of(self, player: Any) -> Any:
        return self.game.action_space_of(player)

    def legal_actions_mask_of(self, player: Any) -> Any:
        return self.game.legal_actions_mask_of(player)

    @property
    def is_terminated(self) -> bool:
        return self.game.is_terminated

    @property
    def is_truncated(self) -> bool:
        return self.game.is_truncated

    def is_terminated_for(self, player: Any) -> bool:
        return self.game.is_terminated_for(player)

    def is_truncated_for(self, player: Any) -> bool:
        return self.game.is_truncated_for(player)

    def reward_of(self, player: Any) -> float:
        return self.game.reward_of(player)

    def episode_return_of(self, player: Any) -> float:
        return self.game.episode_return_of(player)

    @property
    def reward(self) -> float:
        return self.game.reward

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.game!r})"


class FlattenStates(GameWrapper):
    """Every player's observation as a flat float32 vector, as gymnasium's
    ``FlattenObservation`` makes it: a ``Box`` flattened, a ``Discrete(n)`` one-hot (``n``
    entries). The on-policy algorithms (PPO) take flat ``Box`` observations only.

    Example:
        >>> from stagerl.multi_agent import FlattenStates, RockPaperScissors, TicTacToe
        >>> game = FlattenStates(RockPaperScissors())
        >>> game.reset(); game.state_of("player_0").tolist()       # no move yet: 3 of 0..3
        [0.0, 0.0, 0.0, 1.0]
        >>> FlattenStates(TicTacToe()).state_space_of("player_1").shape
        (18,)
    """

    def __init__(self, game: Any) -> None:
        super().__init__(game)
        self._spaces: dict = {}  # player -> (its space, the flat Box)

    def _flat(self, player: Any) -> tuple:
        found = self._spaces.get(player)
        if found is None:
            space = self.game.state_space_of(player)
            if isinstance(space, gymnasium.spaces.Discrete):
                flat = gymnasium.spaces.Box(0.0, 1.0, (int(space.n),), np.float32)
            elif isinstance(space, gymnasium.spaces.Box):
                flat = gymnasium.spaces.Box(space.low.reshape(-1).astype(np.float32),
                                            space.high.reshape(-1).astype(np.float32),
                                            dtype=np.float32)
            else:
                raise TypeError(f"FlattenStates flattens Box and Discrete observations; "
                                f"{player!r} of {type(self.game).__name__} has {space}")
            found = self._spaces[player] = (space, flat)
        return found

    def state_space_of(self, player: Any) -> gymnasium.spaces.Box:
        return self._flat(player)[1]

    def state_of(self, player: Any) -> np.ndarray:
        space, flat = self._flat(player)
        state = self.game.state_of(player)
        if isinstance(space, gymnasium.spaces.Discrete):
            out = np.zeros(flat.shape, np.float32)
            out[int(state) - int(space.start)] = 1.0
            return out
        return np.asarray(state, dtype=np.float32).reshape(-1)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_spaces"] = {}  # made again from the game's spaces on first use
        return state
