"""Fixed opponents for games: a move kept for a whole episode, a move that beats the other
player's last one (rock-paper-scissors), and a policy drawn per episode from several (RLlib's
rock-paper-scissors heuristics and its per-episode ``policy_mapping_fn``).

Each owns a seeded rng. They plan from a player's view, and draw what they need at each
episode's start (``PreEpisode``, which the loops and :class:`~stagerl.multi_agent.Versus` tell
them), so the same seed plays the same games.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, plan, push
from stagerl.core.policy import Policy, as_rng
from stagerl.core.stages import PreEpisodeStage

__all__ = ["AlwaysSameMove", "BeatLastMove", "MixedPerEpisode"]


class AlwaysSameMove(Policy):
    """Draws a move uniformly from the action space at each episode's start and plays it all
    episode (RLlib's ``AlwaysSameHeuristic``). In a game with masks it plays its move while it
    is legal, else a legal move drawn uniformly.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import AlwaysSameMove, MultiAgentPolicy, RockPaperScissors
        >>> policy = MultiAgentPolicy({"player_0": rl.RandomPolicy(rng=0),
        ...                            "player_1": AlwaysSameMove(rng=1)})
        >>> game = RockPaperScissors(max_cycles=4)
        >>> _ = rl.run(policy, game, rl.StopAfterNEpisodes(1, progress=False))
        >>> game.state_of("player_0") == policy.policies["player_1"].move
        True
    """

    def __init__(self, rng: Any = None) -> None:
        self.rng = as_rng(rng)
        self.move: int | None = None

    def start(self, env: Any) -> None:
        space = env.action_space
        self.move = int(space.start) + int(self.rng.integers(int(space.n)))

    def __repr__(self) -> str:
        return "AlwaysSameMove()"


class BeatLastMove(Policy):
    """Plays the move that beats the other player's last move (rock-paper-scissors: its
    observation, an int or its one-hot under ``FlattenStates``; RLlib's
    ``BeatLastHeuristic``), a uniformly drawn move before the other has moved.

    Example:
        >>> import numpy as np, stagerl as rl
        >>> from stagerl.multi_agent import BeatLastMove, RockPaperScissors, view_of
        >>> game = RockPaperScissors(); game.reset()
        >>> game.act({"player_0": 0, "player_1": 1})            # player_0 played rock
        >>> rl.plan(BeatLastMove(rng=0), view_of(game, "player_1"))   # paper beats rock
        1
    """

    def __init__(self, rng: Any = None) -> None:
        self.rng = as_rng(rng)

    def __repr__(self) -> str:
        return "BeatLastMove()"


class MixedPerEpisode(Policy):
    """One of ``policies``, drawn uniformly at each episode's start, plays the episode (RLlib's
    ``policy_mapping_fn`` drawing an opponent per episode). The drawn one is told the episode's
    start; ``current`` is its index.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.multi_agent import AlwaysSameMove, BeatLastMove, MixedPerEpisode
        >>> mixed = MixedPerEpisode([AlwaysSameMove(rng=1), BeatLastMove(rng=2)], rng=0)
        >>> mixed
        MixedPerEpisode([AlwaysSameMove(), BeatLastMove()])
    """

    def __init__(self, policies: Sequence[Policy], rng: Any = None) -> None:
        policies = list(policies)
        if not policies or not all(isinstance(p, Policy) for p in policies):
            raise TypeError(f"MixedPerEpisode needs a non-empty list of stagerl policies, got "
                            f"{policies!r}")
        self.policies = policies
        self.rng = as_rng(rng)
        self.current = 0

    def __repr__(self) -> str:
        return f"MixedPerEpisode({self.policies!r})"


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_always_same_start(policy: AlwaysSameMove, stage: PreEpisodeStage, env):
    policy.start(env)


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_always_same(policy: AlwaysSameMove, env):
    if policy.move is None:  # never told an episode started
        policy.start(env)
    mask = getattr(env, "legal_actions_mask", None)
    if mask is None or mask[policy.move - int(env.action_space.start)]:
        return policy.move
    legal = np.flatnonzero(mask)
    return int(env.action_space.start) + int(legal[policy.rng.integers(legal.size)])


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_beat_last(policy: BeatLastMove, env):
    state = np.asarray(env.state)
    last = int(np.argmax(state)) if state.ndim else int(state)
    if last >= 3:  # no move yet
        return int(policy.rng.integers(3))
    return (last + 1) % 3


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_mixed_start(policy: MixedPerEpisode, stage: PreEpisodeStage, env):
    policy.current = int(policy.rng.integers(len(policy.policies)))
    push(policy.policies[policy.current], stage, env)


@plan.dispatch(precedence=DEFAULT_PRECEDENCE)
def _plan_mixed(policy: MixedPerEpisode, env):
    return plan(policy.policies[policy.current], env)
