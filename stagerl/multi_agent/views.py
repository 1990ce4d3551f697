"""`PlayerView`: one player's side of a game, seen as an ordinary single-agent `Env`.

A player's policy, its Agent and its hooks are given the player's view, never the game: there
``env.state`` is the player's observation, ``env.reward`` the reward accumulated since it last
acted, ``env.is_terminated`` / ``env.is_truncated`` its own flags, and, in games with masks,
``env.legal_actions_mask`` its legal actions. So every single-agent policy, Agent layout and
hook works for a player unchanged (``RandomPolicy`` draws only legal actions from the mask).
"""

from __future__ import annotations

from typing import Any

from stagerl.core.env import Env

__all__ = ["PlayerView", "MaskedPlayerView", "view_of"]


class PlayerView(Env):
    """``game`` as ``player`` sees it (read-only: the loop acts on the game, not on a view).

    ``last_action`` is the player's own last action; ``lane`` the player's lane in the
    trajectory of the Agent that plays it (0 unless that Agent plays several players), for
    per-lane state such as a recurrent policy's memory. Build one with :func:`view_of`, which
    picks :class:`MaskedPlayerView` for games with legal-action masks.

    Example:
        >>> from stagerl.multi_agent import TicTacToe, view_of
        >>> game = TicTacToe(); game.reset()
        >>> view = view_of(game, "player_2")
        >>> view.state.shape, view.reward, view.is_terminated, view.action_space
        ((3, 3, 2), 0.0, False, Discrete(9))
    """

    def __init__(self, game: Any, player: Any) -> None:
        self.game = game
        self.player = player
        self.lane = 0
        self._last_state: Any = None  # the last state read: the state its next move is made at

    @property
    def state(self) -> Any:
        # Kept: if a run stops between this player's move and its next turn, its episode ends
        # at the state that move was chosen at (see frozen()).
        state = self._last_state = self.game.state_of(self.player)
        return state

    @property
    def reward(self) -> float:
        return self.game.reward_of(self.player)

    @property
    def is_terminated(self) -> bool:
        return self.game.is_terminated_for(self.player)

    @property
    def is_truncated(self) -> bool:
        return self.game.is_truncated_for(self.player)

    @property
    def action_space(self) -> Any:
        return self.game.action_space_of(self.player)

    @property
    def state_space(self) -> Any:
        return self.game.state_space_of(self.player)

    @property
    def dynamic_style(self) -> Any:
        return self.game.dynamic_style

    def reset(self) -> None:
        raise TypeError(f"{self!r} is one player's view of a game: reset the game "
                        f"({type(self.game).__name__}) instead")

    def act(self, action: Any) -> None:
        raise TypeError(f"{self!r} is one player's view of a game: the run loop acts on the "
                        f"game; a policy returns its action from plan(policy, env)")

    def frozen(self) -> PlayerView:
        """A copy whose ``state`` stays the last state read here (the live one if none was):
        what a player's PostEpisode sees when the run stopped while it waited for its turn."""
        frozen = (_FrozenMaskedView if isinstance(self, MaskedPlayerView) else _FrozenView)(
            self.game, self.player)
        frozen.last_action, frozen.lane = self.last_action, self.lane
        last = self._last_state
        frozen._last_state = self.game.state_of(self.player) if last is None else last
        return frozen

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_last_state"] = None
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.game).__name__}, {self.player!r})"


class MaskedPlayerView(PlayerView):
    """A :class:`PlayerView` of a game with legal-action masks: ``legal_actions_mask`` is the
    player's (a bool array, one entry per action; all False off its turn)."""

    @property
    def legal_actions_mask(self) -> Any:
        return self.game.legal_actions_mask_of(self.player)


class _FrozenView(PlayerView):
    @property
    def state(self) -> Any:
        return self._last_state


class _FrozenMaskedView(MaskedPlayerView):
    @property
    def state(self) -> Any:
        return self._last_state


def view_of(game: Any, player: Any) -> PlayerView:
    """``player``'s view of ``game`` (a :class:`MaskedPlayerView` if the game has masks)."""
    masked = bool(getattr(game, "has_legal_actions_mask", False))
    return (MaskedPlayerView if masked else PlayerView)(game, player)
