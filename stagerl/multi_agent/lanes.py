"""One lane per player in an Agent's trajectory, and the players' legal-action masks stored.

An Agent that plays for several players (self-play) shares its policy's parameters between them,
but its experience must not interleave their turns: an n-step return or a sequence cut from one
buffer would chain player 1's move onto player 2's. So the trajectory of every Agent under a
:class:`~stagerl.multi_agent.MultiAgentPolicy` is split into one lane per player it plays for
(``trajectories.split_lanes``; one lane when it plays for one player), and its ``push`` is
replaced by a :class:`PlayerLanes`, which the loop points at the acting player before every call
into that player's Agent. The Agent's own methods (and any algorithm's specialisations of them)
push single-env values as usual; :class:`PlayerLanes` writes them into the player's lane, and

* adds the player's ``legal_actions_mask`` to every push of a state when the trajectory has
  that trace and the push has none (so ``next_legal_actions_mask`` holds the mask of the next
  state: what a masked max over next actions needs);
* starts every episode with ``restart=True``: a player whose run stopped after its first move of
  an episode left a first state without a step, which is then never sampled;
* drops a ``next_action`` completion for a player with no step in its episode (nothing to
  complete).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trajectories import LanedEpisodesBuffer, Trajectory, split_lanes

__all__ = ["PlayerLanes", "install_player_lanes"]


class PlayerLanes:
    """``trajectory.push`` of an Agent under a MultiAgentPolicy (see the module docstring).

    ``lane`` and ``view`` are the acting player's lane and view, set by the loop.
    """

    __slots__ = ("laned_push", "container", "n_lanes", "lane_masks", "lane", "view", "adds_mask")

    def __init__(self, trajectory: Any, n_lanes: int, adds_mask: bool) -> None:
        # The class's own push: a trajectory installed again (a copy, a second run) must not
        # wrap the recorder it already carries.
        self.laned_push = type(trajectory).push.__get__(trajectory)
        self.container = trajectory.container
        self.n_lanes = n_lanes
        self.lane_masks = [np.arange(n_lanes) == lane for lane in range(n_lanes)]
        self.lane = 0
        self.view: Any = None
        self.adds_mask = adds_mask

    def __call__(self, **step: Any) -> None:
        if self.adds_mask and "state" in step and "legal_actions_mask" not in step:
            step["legal_actions_mask"] = self.view.legal_actions_mask
        n, lanes = self.n_lanes, self.lane_masks[self.lane]
        # Laned pushes carry every lane; only the acting player's lane is written.
        row = {name: _spread(value, n) for name, value in step.items()}
        if "action" in step:
            self.laned_push(**row, lanes=lanes)
        elif "next_action" in step:
            if self.container.running_lanes()[self.lane]:
                self.laned_push(**row, lanes=lanes)
        else:
            self.laned_push(**row, lanes=lanes, restart=True)


def _spread(value: Any, n: int) -> np.ndarray:
    value = np.asarray(value)
    if n == 1:  # a view with a lane axis: ~0.3 us, where broadcast_to costs ~2.5 us
        return value[np.newaxis]
    return np.broadcast_to(value, (n, *value.shape))


def install_player_lanes(agent: Any, players: tuple, game: Any) -> PlayerLanes:
    """Split ``agent``'s trajectory into one lane per player of ``players`` (in that order) and
    install its :class:`PlayerLanes`; a trajectory that already has that many lanes keeps its
    data. Raises, naming the players and the fix, before changing anything, when that cannot be
    done."""
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
    keys = trajectory.keys()
    masked = bool(getattr(game, "has_legal_actions_mask", False))
    if "legal_actions_mask" in keys and not masked:
        raise ValueError(f"the trajectory of {who}'s Agent stores legal_actions_mask, but "
                         f"{type(game).__name__} has no legal-action masks; use a layout "
                         "without that trace (e.g. CircularArraySARTSTraces)")
    try:
        split_lanes(trajectory, n)  # on lanes already there: installs their own push again
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"the Agent of {who} cannot keep one lane per player: {error}") from error
    recorder = PlayerLanes(trajectory, n, "legal_actions_mask" in keys)
    trajectory.push = recorder
    return recorder


def _who(players: tuple) -> str:
    return " and ".join(repr(p) for p in players)
