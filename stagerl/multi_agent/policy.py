"""`MultiAgentPolicy`: players mapped to policies (RL.jl's MultiAgentPolicy, RLlib's policies and
policy_mapping_fn).

Each player of a game is played by a policy: a dict keyed by player, or a dict of policies keyed
by id plus a mapping from player to id (a function, as RLlib's ``policy_mapping_fn``, or a
dict). The same object under several players is one policy playing all of them: an Agent there
shares its parameters between them (self-play) and keeps one lane per player in its trajectory
(:mod:`stagerl.multi_agent.lanes`). A policy without a trajectory (``RandomPolicy``, a frozen
copy's inner policy) acts and never learns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan, push
from stagerl.core.policy import Policy
from stagerl.core.stages import PostExperimentStage, PreExperimentStage
from stagerl.multi_agent.lanes import give_player_lanes
from stagerl.multi_agent.views import view_of
from stagerl.policies.agent import Agent

__all__ = ["MultiAgentPolicy", "Turns"]


@dataclass
class Turns:
    """A sequential game's moves still waiting for their transition, and who moved this episode.

    ``pending`` maps a player to the action of its last move, whose transition completes at its
    next turn or at the episode's end; ``started`` holds the players who moved this episode, in
    the order of their first move. Kept on the policy, so that a run saved mid-game carries it.
    """

    pending: dict = field(default_factory=dict)
    started: dict = field(default_factory=dict)

    def clear(self) -> None:
        self.pending.clear()
        self.started.clear()


class MultiAgentPolicy(Policy):
    """Players mapped to policies.

    Args:
        policies: a dict of policies. Keyed by player when ``policy_mapping`` is ``None``;
            else keyed by any id (RLlib's policy ids).
        policy_mapping: ``None``, a function ``player -> policy id`` or a dict ``{player: policy
            id}``. It is resolved when a run starts (once per player, against the game's
            players); a function must be picklable (defined at module level) for the policy to
            pickle.

    ``policy[player]`` is the player's policy once bound to a game (``bind``, which every run
    does); ``policy.players`` the game's players. A mismatch (a player without a policy, a
    policy keyed by a name the game does not have, a mapping to an unknown id) is a
    ``ValueError`` naming the player and the fix, before anything runs.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import MultiAgentPolicy, TicTacToe
        >>> learner, opponent = rl.RandomPolicy(rng=0), rl.RandomPolicy(rng=1)
        >>> policy = MultiAgentPolicy({"learner": learner, "opponent": opponent},
        ...                           {"player_1": "opponent", "player_2": "learner"})
        >>> hook = rl.run(policy, TicTacToe(), rl.StopAfterNEpisodes(3, progress=False),
        ...               rl.StepsPerEpisode())
        >>> policy["player_2"] is learner, len(hook.steps)
        (True, 3)
    """

    def __init__(self, policies: Mapping, policy_mapping: Callable | Mapping | None = None):
        if not isinstance(policies, Mapping) or not policies:
            raise TypeError(f"MultiAgentPolicy needs a non-empty dict of policies (keyed by "
                            f"player, or by id with policy_mapping=), got {policies!r}")
        for key, policy in policies.items():
            if not isinstance(policy, Policy):
                raise TypeError(f"MultiAgentPolicy: the policy for {key!r} must be a "
                                f"stagerl.Policy, got {policy!r} of type {type(policy).__name__}")
        if policy_mapping is not None and not (callable(policy_mapping)
                                               or isinstance(policy_mapping, Mapping)):
            raise TypeError(f"policy_mapping must be None, a function player -> policy id or a "
                            f"dict {{player: policy id}}, got {policy_mapping!r}")
        self.policies = dict(policies)
        self.policy_mapping = policy_mapping
        self.turns = Turns()
        self._unbind()

    def _unbind(self) -> None:
        self.game: Any = None
        self.players: tuple = ()
        self.player_policies: dict = {}
        self.views: dict = {}
        self.lanes: dict = {}  # player -> ((trajectory, lane),) to point at before its calls

    def __getitem__(self, player: Any) -> Policy:
        if self.game is None and self.policy_mapping is None:
            return self.policies[player]
        try:
            return self.player_policies[player]
        except KeyError:
            raise KeyError(f"{player!r} is not a player of the game this policy is bound to "
                           f"(players {list(self.players)})") from None

    # ---- binding to a game -------------------------------------------------------------------

    def bind(self, game: Any) -> None:
        """Resolve the mapping against ``game.players``, make each player's view and give every
        Agent one lane per player it plays for. Nothing changes if a check fails."""
        players = _players_of(game)
        player_policies = {p: self.policies[self._policy_id(p, players, game)] for p in players}
        views = self.views if game is self.game and self.players == players else \
            {p: view_of(game, p) for p in players}
        agents: dict[int, list] = {}
        for player in players:
            if isinstance(player_policies[player], Agent):
                agents.setdefault(id(player_policies[player]), []).append(player)
        lanes: dict = {p: () for p in players}
        for group in agents.values():
            trajectory = give_player_lanes(player_policies[group[0]], tuple(group), game)
            for lane, player in enumerate(group):
                lanes[player] = ((trajectory, lane),)
                views[player].lane = lane
        self.game, self.players, self.player_policies = game, players, player_policies
        self.views, self.lanes = views, lanes

    def _policy_id(self, player: Any, players: tuple, game: Any) -> Any:
        mapping, name = self.policy_mapping, type(game).__name__
        if mapping is None:
            if set(self.policies) != set(players):
                missing = [p for p in players if p not in self.policies]
                unknown = [k for k in self.policies if k not in players]
                raise ValueError(
                    f"MultiAgentPolicy's policies are keyed by {list(self.policies)}, but {name} "
                    f"has the players {list(players)} (no policy for {missing}, no player "
                    f"{unknown}); key the dict by the game's players, or map players to these "
                    f"policies with policy_mapping=")
            return player
        if isinstance(mapping, Mapping):
            if player not in mapping:
                raise ValueError(f"policy_mapping has no entry for player {player!r} of {name} "
                                 f"(players {list(players)}); map every player to one of "
                                 f"{list(self.policies)}")
            policy_id = mapping[player]
        else:
            policy_id = mapping(player)
        if policy_id not in self.policies:
            raise ValueError(f"policy_mapping maps player {player!r} to {policy_id!r}, which is "
                             f"not one of the policies {list(self.policies)}; return one of "
                             f"those ids, or add a policy under {policy_id!r}")
        return policy_id

    def policy_of(self, player: Any, game: Any) -> Policy:
        """The policy that plays ``player`` of ``game`` (the mapping resolved; nothing is
        bound, so a run of this policy on another game is left as it is)."""
        players = _players_of(game)
        if player not in players:
            raise ValueError(f"{player!r} is not a player of {type(game).__name__} (players "
                             f"{list(players)})")
        return self.policies[self._policy_id(player, players, game)]

    def validate(self, env: Any) -> None:
        """Bind to ``env`` (see :meth:`bind`) and let every player's policy validate that
        player's view; an error names the player. An env that one seat of a game plays (a
        :class:`~stagerl.multi_agent.Versus`) validates the policies of its seats itself
        (``env.validate_seats(policy)``), and nothing is bound."""
        validate_seats = getattr(env, "validate_seats", None)
        if validate_seats is not None:
            validate_seats(self)
            return
        self.bind(env)
        for player in self.players:
            try:
                self.player_policies[player].validate(self.views[player])
            except (TypeError, ValueError) as error:
                kind = TypeError if isinstance(error, TypeError) else ValueError
                raise kind(f"player {player!r} of {type(env).__name__} cannot be played by "
                           f"{type(self.player_policies[player]).__name__}: {error}") from error

    def distinct_policies(self) -> list[tuple[Any, Policy]]:
        """``(first player, policy)`` for each policy object once, in the players' order."""
        seen: dict[int, tuple] = {}
        for player in self.players:
            seen.setdefault(id(self.player_policies[player]),
                            (player, self.player_policies[player]))
        return list(seen.values())

    # ---- evaluation ------------------------------------------------------------------------

    @property
    def deterministic(self) -> bool:
        """Whether every policy acts deterministically (``rl.deterministic`` and
        ``rl.evaluate`` set it): setting it sets each policy's (an Agent's inner policy's);
        deleting it gives each its own setting back."""
        return self.__dict__.get("_deterministic", False)

    @deterministic.setter
    def deterministic(self, value: bool) -> None:
        saved = self.__dict__.setdefault("_saved_deterministic", [])
        if not saved:
            saved.extend((inner, inner.__dict__.get("deterministic"))
                         for inner in _acting_policies(self.policies))
        for inner, _ in saved:
            inner.deterministic = value
        self.__dict__["_deterministic"] = bool(value)

    @deterministic.deleter
    def deterministic(self) -> None:
        for inner, before in self.__dict__.pop("_saved_deterministic", []):
            if before is None:
                inner.__dict__.pop("deterministic", None)
            else:
                inner.deterministic = before
        self.__dict__.pop("_deterministic", None)

    # ---- learnable state and copies --------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {key: policy.state_dict() for key, policy in self.policies.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        unknown = [key for key in state if key not in self.policies]
        if unknown:
            raise ValueError(f"MultiAgentPolicy has no policies {unknown} (it has "
                             f"{list(self.policies)})")
        for key, value in state.items():
            self.policies[key].load_state_dict(value)

    def __getstate__(self) -> dict:
        # The binding (views of the game, the players' lanes) is made again by the next run.
        state = dict(self.__dict__)
        state.update(game=None, players=(), player_policies={}, views={}, lanes={})
        state.pop("_saved_deterministic", None)  # an evaluation in progress is not copied
        state.pop("_deterministic", None)
        return state

    def __repr__(self) -> str:
        mapping = "" if self.policy_mapping is None else f", {self.policy_mapping!r}"
        return f"MultiAgentPolicy({self.policies!r}{mapping})"


def _acting_policies(policies: dict) -> list:
    """The policy that acts for each of ``policies`` (an Agent's inner one), each once."""
    from stagerl.core.evaluate import acting_policy

    found: dict[int, Any] = {}
    for member in policies.values():
        inner = acting_policy(member)
        found.setdefault(id(inner), inner)
    return list(found.values())


def _players_of(game: Any) -> tuple:
    players = tuple(getattr(game, "players", ()) or ())
    if not players:
        raise TypeError(f"a MultiAgentPolicy plays a multi-agent game (with players), got "
                        f"{type(game).__name__}; wrap a PettingZoo env in "
                        "stagerl.multi_agent.PettingZooEnv or PettingZooParallelEnv")
    if len(set(players)) != len(players):
        raise ValueError(f"{type(game).__name__} names a player twice: {list(players)}")
    return players


# ---- dispatched methods ----------------------------------------------------------------------


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_multi_agent(policy: MultiAgentPolicy, env):
    # For users and evaluation code; the loops call each player's plan themselves.
    if env is not policy.game:
        policy.bind(env)
    if env.dynamic_style.simultaneous:
        return {p: plan(policy.player_policies[p], policy.views[p]) for p in env.acting_players}
    player = env.current_player
    return plan(policy.player_policies[player], policy.views[player])


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_multi_agent_experiment(policy: MultiAgentPolicy,
                                 stage: PreExperimentStage | PostExperimentStage, env):
    # Each policy once, with the view of the first player it plays for.
    if env is not policy.game:
        return  # never bound to this game (its run failed before starting): nothing to tell
    for player, member in policy.distinct_policies():
        push(member, stage, policy.views[player])
