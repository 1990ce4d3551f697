"""One lane per player in an Agent's trajectory.

An Agent that plays for several players (self-play) shares its policy's parameters between them,
but its experience must not interleave their turns: an n-step return or a sequence cut from one
buffer would chain player 1's move onto player 2's. So the trajectory of every Agent under a
:class:`~stagerl.multi_agent.MultiAgentPolicy` is split into one lane per player it plays for
(``trajectories.split_lanes``; one lane when it plays for one player), and the loop points it
at the acting player's lane (``trajectory.use_lane(lane)``) before every call into that
player's Agent. The Agent's own methods (and any algorithm's specialisations of them) push one
env's values as usual; the trajectory writes them into the player's lane, following that lane's
episodes as a vector env's sub-env (see ``Trajectory.use_lane``): every episode of a player
starts afresh (a player whose run stopped after its first move of an episode left a first state
without a step, which is then never sampled), and a ``next_action`` completion for a player with
no step in its episode is dropped (nothing to complete). The Agent fills the trajectory's
``legal_actions_mask`` trace from the player's view, so ``next_legal_actions_mask`` holds the
mask of the player's next state: what a masked max over next actions needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trajectories import LanedEpisodesBuffer, Trajectory, split_lanes

__all__ = ["give_player_lanes"]


def give_player_lanes(agent: Any, players: tuple, game: Any) -> Trajectory:
    """Split ``agent``'s trajectory into one lane per player of ``players`` (in that order) and
    return it; a trajectory that already has that many lanes keeps its data. Raises, naming the
    players and the fix, before changing anything, when that cannot be done."""
    trajectory = agent.trajectory
    who = _who(players)
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"the Agent of {who} records into a {type(trajectory).__name__}; a "
                        "player's Agent needs a stagerl.Trajectory (one lane per player)")
    n = len(players)
    container = trajectory.container
    if isinstance(container, LanedEpisodesBuffer):
        if container.n_lanes != n:
            raise ValueError(f"the Agent of {who} has a trajectory of {container.n_lanes} lanes; "
                             f"it needs {n} (one per player it plays for): give it a new "
                             f"trajectory")
    elif len(np.asarray(container.step_numbers)):
        raise ValueError(f"the Agent of {who} has a trajectory that already holds "
                         f"{len(container)} rows of a single-agent run; a player's Agent keeps "
                         f"one lane per player: give it a new (empty) trajectory")
    masked = bool(getattr(game, "has_legal_actions_mask", False))
    if "legal_actions_mask" in trajectory.keys() and not masked:
        raise ValueError(f"the trajectory of {who}'s Agent stores legal_actions_mask, but "
                         f"{type(game).__name__} has no legal-action masks; use a layout "
                         "without that trace (e.g. CircularArraySARTSTraces)")
    try:
        split_lanes(trajectory, n)
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"the Agent of {who} cannot keep one lane per player: {error}") from error
    return trajectory


def _who(players: tuple) -> str:
    return " and ".join(repr(p) for p in players)
