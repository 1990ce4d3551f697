"""How the players of a game move, and the loop that runs them (dispatched on by the run loop).

``SEQUENTIAL`` (turn-based, PettingZoo's AEC API): one player, ``env.current_player``, moves
per ``act``. ``SIMULTANEOUS`` (PettingZoo's Parallel API): every live player moves in each
``act``, which takes a dict ``{player: action}``.

``stagerl.Experiment`` runs an env whose ``dynamic_style`` has a
``run_stages(experiment, start_at)`` with that loop instead of its own
(``docs/multi_agent.md`` writes both loops out), and ``stagerl.evaluate`` evaluates it with the
style's ``evaluate`` (each player's returns).
"""

from __future__ import annotations

from typing import Any

from stagerl.multi_agent.loops import run_sequential, run_simultaneous

__all__ = ["DynamicStyle", "Sequential", "Simultaneous", "SEQUENTIAL", "SIMULTANEOUS"]


class DynamicStyle:
    """Base class of the dynamic styles; use the instances ``SEQUENTIAL`` and ``SIMULTANEOUS``.

    Example:
        >>> from stagerl.multi_agent import SEQUENTIAL, TicTacToe
        >>> TicTacToe.dynamic_style is SEQUENTIAL, SEQUENTIAL.simultaneous
        (True, False)
    """

    simultaneous: bool = False
    _name = ""

    def run_stages(self, experiment: Any, start_at: Any = None) -> None:
        raise NotImplementedError

    def evaluate(self, policy: Any, game: Any, episodes: int,
                 max_episode_steps: int | None = None) -> dict:
        """``rl.evaluate`` of a game: each player's returns (see
        :func:`stagerl.multi_agent.evaluation.evaluate_players`)."""
        from stagerl.multi_agent.evaluation import evaluate_players

        return evaluate_players(policy, game, episodes, max_episode_steps)

    def __reduce__(self) -> str:
        return self._name  # the module's singleton: pickles and copies are the same object

    def __repr__(self) -> str:
        return self._name


class Sequential(DynamicStyle):
    """One player moves per act (turn-based games)."""

    _name = "SEQUENTIAL"

    def run_stages(self, experiment: Any, start_at: Any = None) -> None:
        run_sequential(experiment, start_at)


class Simultaneous(DynamicStyle):
    """Every live player moves in each act (``act`` takes ``{player: action}``)."""

    simultaneous = True
    _name = "SIMULTANEOUS"

    def run_stages(self, experiment: Any, start_at: Any = None) -> None:
        run_simultaneous(experiment, start_at)


SEQUENTIAL = Sequential()
SIMULTANEOUS = Simultaneous()
