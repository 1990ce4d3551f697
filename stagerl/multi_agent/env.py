"""`MultiAgentEnv`: the interface of a game of several players, and its reward ledger.

A multi-agent env has ``players`` (fixed for the env), a ``dynamic_style`` that says how they
move and which loop runs them (:data:`~stagerl.multi_agent.styles.SEQUENTIAL`: one player a
turn, ``current_player``; :data:`~stagerl.multi_agent.styles.SIMULTANEOUS`: every live player at
once, ``act`` takes a dict), and per player: an observation, a reward, a legal-action mask,
termination and truncation flags and spaces.

The reward a player is given is the reward **accumulated since that player last acted**: every
reward any move gave it since the start of its own last act (that act's own reward included),
as PettingZoo's ``last()`` reports it. That is the reward of the transition that act began, so
the loop can complete the transition when the player is next asked to move, or when the episode
ends. Subclasses keep that ledger with three calls: :meth:`MultiAgentEnv.open_ledger` in
``reset``, :meth:`MultiAgentEnv.begin_act` at the start of ``act`` and
:meth:`MultiAgentEnv.credit` for every reward (see ``docs/multi_agent.md``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MultiAgentEnv"]


class MultiAgentEnv:
    """Base class of multi-agent environments (games).

    Subclasses set ``players`` and ``dynamic_style`` and implement :meth:`reset`, :meth:`act`,
    :meth:`state_of`, :meth:`action_space_of`, :meth:`state_space_of`, ``is_terminated`` (or
    :meth:`is_terminated_for`), and ``current_player`` (sequential games). Games with
    legal-action masks set ``has_legal_actions_mask = True`` and implement
    :meth:`legal_actions_mask_of`. Rewards go through the ledger (:meth:`credit`), which gives
    :meth:`reward_of`, :meth:`episode_return_of` and ``reward``.

    * ``is_terminated`` / ``is_truncated``: the episode is over because every player reached a
      terminal state / because a limit cut it (the loop resets on either).
    * ``is_terminated_for(player)`` / ``is_truncated_for(player)``: the same for one player; by
      default the episode's flags. A player done before the others takes no more turns.
    * ``acting_players``: who moves in the next ``act`` (sequential: the current player;
      simultaneous: every player not done).
    * ``reward``: the sum over the *scored* players of what the last act gave them, so
      game-level hooks such as ``TotalRewardPerEpisode`` or ``CSVLogger`` work unchanged.
      Every player is scored unless :meth:`score` names some: the sum is then a team reward in
      a cooperative game and 0 in a zero-sum one; ``game.score("player_2")`` makes it
      ``player_2``'s reward, so a learning curve of the game is that player's. Per-player
      figures come from :meth:`reward_of`.

    Example:
        >>> from stagerl.multi_agent import TicTacToe
        >>> game = TicTacToe()
        >>> game.reset(); game.current_player
        'player_1'
        >>> game.act(4); game.current_player, game.legal_actions_mask_of("player_2").sum()
        ('player_2', np.int64(8))
        >>> game.state_of("player_2")[1, 1].tolist()     # the opponent's mark, in plane 1
        [0, 1]
    """

    #: The players, in a fixed order (PettingZoo's ``possible_agents``).
    players: tuple = ()
    #: How the players move: ``SEQUENTIAL`` or ``SIMULTANEOUS`` (stagerl.multi_agent.styles).
    dynamic_style: Any = None
    #: Whether :meth:`legal_actions_mask_of` gives masks (a bool array, one entry per action).
    has_legal_actions_mask: bool = False
    #: The last action (a dict of actions in a simultaneous game); set by the loop after ``act``.
    last_action: Any = None
    #: The players whose rewards ``reward`` sums (``None``: every player); see :meth:`score`.
    scored_players: tuple | None = None

    # ---- what subclasses implement -------------------------------------------------------

    def reset(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def act(self, action: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement act(action)")

    @property
    def current_player(self) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} must implement current_player (sequential games)")

    def state_of(self, player: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement state_of(player)")

    def legal_actions_mask_of(self, player: Any) -> Any:
        """The player's legal actions now (bool array), or ``None`` without masks. Off its turn
        in a sequential game a player has no legal action (PettingZoo's convention)."""
        return None

    def action_space_of(self, player: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement action_space_of(player)")

    def state_space_of(self, player: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement state_space_of(player)")

    @property
    def is_terminated(self) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement is_terminated")

    @property
    def is_truncated(self) -> bool:
        return False

    def is_terminated_for(self, player: Any) -> bool:
        return self.is_terminated

    def is_truncated_for(self, player: Any) -> bool:
        return self.is_truncated

    @property
    def unwrapped(self) -> MultiAgentEnv:
        """The game itself, under any wrappers (``stagerl.multi_agent.FlattenStates``)."""
        return self

    def score(self, *players: Any) -> MultiAgentEnv:
        """Make ``reward`` the sum of these players' rewards (none named: every player's);
        returns the game. Game-level hooks then report these players' results: the
        ``return`` of ``CSVLogger``, a learning curve, the best checkpoint's score.

        Example:
            >>> from stagerl.multi_agent import TicTacToe
            >>> game = TicTacToe().score("player_2")
            >>> game.reset()
            >>> for square in (0, 3, 1, 4, 2):   # player_1 wins
            ...     game.act(square)
            >>> game.reward
            -1.0
        """
        unknown = [p for p in players if p not in self.players]
        if unknown:
            raise ValueError(f"{type(self).__name__}.score: {unknown} are not players "
                             f"(players {list(self.players)})")
        self.scored_players = tuple(players) if players else None
        return self

    @property
    def acting_players(self) -> tuple:
        if self.dynamic_style is not None and self.dynamic_style.simultaneous:
            return tuple(p for p in self.players
                         if not (self.is_terminated_for(p) or self.is_truncated_for(p)))
        return (self.current_player,)

    # ---- the reward ledger -----------------------------------------------------------------

    def open_ledger(self) -> None:
        """Call in ``reset``: every player's rewards back to zero."""
        self._since_acted = dict.fromkeys(self.players, 0.0)
        self._returns = dict.fromkeys(self.players, 0.0)
        self._last_act_total = 0.0

    def begin_act(self, players: Any) -> None:
        """Call at the start of ``act`` with the players who move in it: their rewards since
        they last acted start again from zero (the previous ones are in their last transition)."""
        since = self._since_acted
        for player in players:
            since[player] = 0.0
        self._last_act_total = 0.0

    def credit(self, player: Any, reward: float) -> None:
        """Give ``player`` a reward (call during ``act``, for every reward of every player)."""
        self._since_acted[player] += reward
        self._returns[player] += reward
        scored = self.scored_players
        if scored is None or player in scored:
            self._last_act_total += reward

    def reward_of(self, player: Any) -> float:
        """The rewards ``player`` received since the start of its last act (that act's own
        included); before its first act, those since the reset."""
        return self.__dict__.get("_since_acted", {}).get(player, 0.0)

    def episode_return_of(self, player: Any) -> float:
        """Every reward ``player`` received in this episode so far."""
        return self.__dict__.get("_returns", {}).get(player, 0.0)

    @property
    def reward(self) -> float:
        return self.__dict__.get("_last_act_total", 0.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
