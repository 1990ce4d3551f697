"""`Versus`: one seat of a game against fixed opponents, as an ordinary single-agent env.

Evaluating a player against an opponent is a single-agent task: the other players' moves are
part of the env. ``Versus(game, opponents, seats)`` is that env: its state, reward, flags and
legal-action mask are the seated player's, and ``act`` plays the seat's move, then the
opponents' moves (each ``plan(opponent, its view)``) until the seat is to move again or the game
is over; in a simultaneous game the opponents move with the seat. So the reward of a step is
everything the seat received since it last moved, as in the multi-agent loops (the
reward-credit rule of ``docs/multi_agent.md``), and an episode's return is the seat's result.

Any single-agent policy plays it (``rl.evaluate(agent, Versus(...))``); a
:class:`~stagerl.multi_agent.MultiAgentPolicy` plays each seat with the policy it maps that
seat to, so a trained multi-agent policy is evaluated against other opponents than it trained
with (the named experiments' evaluation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan, push
from stagerl.core.env import Env
from stagerl.core.policy import Policy
from stagerl.core.stages import PreEpisodeStage
from stagerl.multi_agent.policy import MultiAgentPolicy
from stagerl.multi_agent.views import view_of

__all__ = ["Versus", "MaskedVersus"]

_PRE_EPISODE = PreEpisodeStage()


class Versus(Env):
    """``game`` played as ``seats`` against ``opponents``; a single-agent env.

    Args:
        game: a multi-agent game (``stagerl.multi_agent.MultiAgentEnv``).
        opponents: ``{player: policy}``: a policy for every player that is not the seat (with
            several seats, for every player but each one). The same policy may play several
            players. Opponents are told each episode's start (``PreEpisode``, with the view
            of the first player they play) and asked to ``plan``; they learn nothing.
        seats: the player this env is played as, or a tuple of players taken in turn, one per
            episode (``seats[k % len(seats)]`` in the ``k``-th episode from 0): an evaluation
            in both seats of a two-player game alternates them.

    ``seat`` is the player of the current episode. In a game with legal-action masks the env is
    a :class:`MaskedVersus` (``legal_actions_mask``: the seat's). An opponent's illegal move is
    refused by the game; the seat's too.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import TicTacToe, Versus
        >>> env = Versus(TicTacToe(), {"player_1": rl.RandomPolicy(rng=0)}, seats="player_2")
        >>> env.reset(); int(env.state[..., 1].sum())   # player_1 has moved
        1
        >>> returns = rl.evaluate(rl.RandomPolicy(rng=1), env, episodes=200)
        >>> -0.5 < sum(returns) / len(returns) < 0.0     # random as the second player: about -0.3
        True
    """

    def __new__(cls, game: Any = None, *args: Any, **kwargs: Any) -> Versus:
        if cls is Versus and bool(getattr(game, "has_legal_actions_mask", False)):
            cls = MaskedVersus
        return super().__new__(cls)

    def __init__(self, game: Any, opponents: Mapping, seats: Any) -> None:
        players = tuple(getattr(game, "players", ()) or ())
        if not players or getattr(game, "dynamic_style", None) is None:
            raise TypeError(f"Versus plays a multi-agent game (with players and a dynamic "
                            f"style), got {type(game).__name__}")
        seats = (seats,) if not isinstance(seats, (tuple, list)) else tuple(seats)
        if not seats or any(seat not in players for seat in seats):
            raise ValueError(f"Versus: seats must be players of {type(game).__name__} "
                             f"({list(players)}), got {list(seats)}")
        if not isinstance(opponents, Mapping):
            raise TypeError(f"Versus: opponents must be a dict {{player: policy}}, got "
                            f"{opponents!r}")
        for player, opponent in opponents.items():
            if player not in players:
                raise ValueError(f"Versus: opponents has {player!r}, which is not a player of "
                                 f"{type(game).__name__} ({list(players)})")
            if not isinstance(opponent, Policy):
                raise TypeError(f"Versus: the opponent of {player!r} must be a stagerl.Policy, "
                                f"got {opponent!r}")
        for seat in seats:
            missing = [p for p in players if p != seat and p not in opponents]
            if missing:
                raise ValueError(f"Versus: with {seat!r} seated, {missing} need an opponent; "
                                 f"give opponents a policy for each")
        self.game, self.opponents, self.seats = game, dict(opponents), seats
        self.seat = seats[0]
        self.episodes = 0  # episodes started: the next one's seat is seats[episodes % n]
        self.views = {p: view_of(game, p) for p in players}
        self.last_action: Any = None

    # ---- the seat's side ----------------------------------------------------------------

    @property
    def state(self) -> Any:
        return self.game.state_of(self.seat)

    @property
    def reward(self) -> float:
        return self.game.reward_of(self.seat)

    @property
    def is_terminated(self) -> bool:
        return self.game.is_terminated_for(self.seat)

    @property
    def is_truncated(self) -> bool:
        return self.game.is_truncated_for(self.seat)

    @property
    def action_space(self) -> Any:
        return self.game.action_space_of(self.seat)

    @property
    def state_space(self) -> Any:
        return self.game.state_space_of(self.seat)

    # ---- moves --------------------------------------------------------------------------------

    def reset(self) -> None:
        self.seat = self.seats[self.episodes % len(self.seats)]
        self.episodes += 1
        self.game.reset()
        told: set[int] = set()
        for player in self.game.players:
            opponent = self.opponents.get(player)
            if player != self.seat and opponent is not None and id(opponent) not in told:
                told.add(id(opponent))
                push(opponent, _PRE_EPISODE, self.views[player])
        self._opponents_move()

    def act(self, action: Any) -> None:
        game = self.game
        if game.dynamic_style.simultaneous:
            moves = {p: action if p == self.seat else self._opponent_move(p)
                     for p in game.acting_players}
            game.act(moves)
        else:
            if game.current_player != self.seat:
                raise RuntimeError(f"Versus: {game.current_player!r} is to move, not the seat "
                                   f"{self.seat!r}; the episode is over (reset() starts a new "
                                   "one)")
            game.act(action)
            self._opponents_move()
        self.last_action = action

    def validate_seats(self, policy: MultiAgentPolicy) -> None:
        """Let the policy ``policy`` maps each seat to validate this env (a
        ``MultiAgentPolicy`` playing it calls this); an error names the seat."""
        for seat in self.seats:
            member = policy.policy_of(seat, self.game)
            try:
                member.validate(self)
            except (TypeError, ValueError) as error:
                kind = TypeError if isinstance(error, TypeError) else ValueError
                raise kind(f"seat {seat!r} of {self!r} cannot be played by "
                           f"{type(member).__name__}: {error}") from error

    def _opponents_move(self) -> None:
        game, seat = self.game, self.seat
        if game.dynamic_style.simultaneous:
            return  # they move with the seat
        while not (game.is_terminated or game.is_truncated or game.is_terminated_for(seat)
                   or game.is_truncated_for(seat)) and game.current_player != seat:
            game.act(self._opponent_move(game.current_player))

    def _opponent_move(self, player: Any) -> Any:
        return plan(self.opponents[player], self.views[player])

    def __repr__(self) -> str:
        seats = self.seats[0] if len(self.seats) == 1 else self.seats
        return f"{type(self).__name__}({self.game!r}, seats={seats!r})"


class MaskedVersus(Versus):
    """A :class:`Versus` of a game with legal-action masks: ``legal_actions_mask`` is the
    seat's."""

    @property
    def legal_actions_mask(self) -> np.ndarray:
        return self.game.legal_actions_mask_of(self.seat)


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_multi_agent_versus(policy: MultiAgentPolicy, env: Versus):
    # The policy the multi-agent policy maps the seat to plays it. Not a forwarding method
    # (resolved once per run): the seat may change from one episode to the next.
    return plan(policy.policy_of(env.seat, env.game), env)
