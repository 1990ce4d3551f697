"""Tabular approximators: a numpy table of action values (Q) or state values (V)."""

from __future__ import annotations

from typing import Any

import numpy as np

from trajectories.checks import require_positive_int

__all__ = ["TabularQApproximator", "TabularVApproximator"]


def _load_table(owner: Any, state: dict[str, Any]) -> None:
    table = np.asarray(state["table"], dtype=np.float64)
    if table.shape != owner.table.shape:
        raise ValueError(
            f"{type(owner).__name__} has a table of shape {owner.table.shape}, got a state_dict "
            f"table of shape {table.shape}"
        )
    owner.table[...] = table


class TabularQApproximator:
    """Action values in a table: ``table[state, action]``, shape ``(n_states, n_actions)``.

    ``approximator(state)`` (or ``values(state)``) is the row of action values at an integer
    state (a copy); an array of states gives one row per state, ``(batch, n_actions)``.
    ``approximator(state, action)`` is one value.

    Example:
        >>> import stagerl as rl
        >>> q = rl.TabularQApproximator(n_states=3, n_actions=2, init=0.5)
        >>> q.table[1, 0] = 2.0
        >>> q(1).tolist(), q(1, 0), q.values([0, 1]).shape
        ([2.0, 0.5], 2.0, (2, 2))
    """

    def __init__(self, n_states: int, n_actions: int, init: float = 0.0):
        self.n_states = require_positive_int(type(self).__name__, "n_states", n_states)
        self.n_actions = require_positive_int(type(self).__name__, "n_actions", n_actions)
        self.table = np.full((self.n_states, self.n_actions), float(init), dtype=np.float64)

    def values(self, state: Any) -> np.ndarray:
        """The action values at ``state`` (one row), or one row per state of an array."""
        return self.table[state].copy()

    def __call__(self, state: Any, action: Any = None) -> Any:
        if action is None:
            return self.table[state].copy()
        value = self.table[state, action]
        return float(value) if np.ndim(value) == 0 else value.copy()

    def state_dict(self) -> dict[str, Any]:
        return {"table": self.table.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        _load_table(self, state)

    def __repr__(self) -> str:
        return f"TabularQApproximator(n_states={self.n_states}, n_actions={self.n_actions})"


class TabularVApproximator:
    """State values in a table: ``table[state]``, shape ``(n_states,)``.

    ``approximator(state)`` (or ``values(state)``) is the value at an integer state, or one
    value per state of an array.

    Example:
        >>> import stagerl as rl
        >>> v = rl.TabularVApproximator(n_states=4)
        >>> v.table[2] = 1.5
        >>> v(2), v.values([1, 2]).tolist()
        (1.5, [0.0, 1.5])
    """

    def __init__(self, n_states: int, init: float = 0.0):
        self.n_states = require_positive_int(type(self).__name__, "n_states", n_states)
        self.table = np.full(self.n_states, float(init), dtype=np.float64)

    def values(self, state: Any) -> Any:
        """The value at ``state``, or one value per state of an array."""
        value = self.table[state]
        return float(value) if np.ndim(value) == 0 else value.copy()

    __call__ = values

    def state_dict(self) -> dict[str, Any]:
        return {"table": self.table.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        _load_table(self, state)

    def __repr__(self) -> str:
        return f"TabularVApproximator(n_states={self.n_states})"
