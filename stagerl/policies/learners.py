"""TDLearner: temporal-difference learning of a tabular value function."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from stagerl.policies.tabular import TabularQApproximator, TabularVApproximator

__all__ = ["TDLearner"]

_METHODS = ("SARS", "SARSA", "ExpectedSARSA")
_NEEDS = {
    "SARS": ("state", "action", "reward", "terminal", "next_state"),
    "SARSA": ("state", "action", "reward", "terminal", "next_state", "next_action"),
    "ExpectedSARSA": ("state", "action", "reward", "terminal", "next_state"),
}
_NEXT_MASK = "next_legal_actions_mask"


def _as_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor from a sampler given a device
        x = x.detach().cpu().numpy()
    return np.atleast_1d(np.asarray(x))


def _as_indices(x: np.ndarray, name: str) -> list[int]:
    if x.dtype.kind not in "iu":
        as_int = x.astype(np.int64)
        if not np.array_equal(as_int, x):
            raise TypeError(f"a tabular learner needs integer {name}s, got {x.dtype} values")
        x = as_int
    return x.tolist()


def _sampleable_rows(container: Any) -> np.ndarray:
    """The container's sampleable rows, oldest first (every row of bare traces)."""
    indices = getattr(container, "sampleable_indices", None)
    if callable(indices):
        return np.asarray(indices(), dtype=np.int64)
    flags = getattr(container, "sampleable_inds", None)
    if flags is not None:
        return np.flatnonzero(np.asarray(flags, dtype=bool)[: len(container)])
    return np.arange(len(container))


def _columns(batch: Any, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The named columns of a batch mapping, or of a container's sampleable rows (``None``
    when it has none)."""
    if isinstance(batch, Mapping):
        missing = [name for name in names if name not in batch]
        if missing:
            raise KeyError(missing)
        columns = {name: _as_numpy(batch[name]) for name in names}
        if _NEXT_MASK in batch:
            columns[_NEXT_MASK] = _as_numpy(batch[_NEXT_MASK]).astype(bool)
        return columns
    container = getattr(batch, "container", batch)  # a Trajectory: its EpisodesBuffer
    keys = container.keys()
    missing = [name for name in names if name not in keys]
    if missing:
        raise KeyError(missing)
    rows = _sampleable_rows(container)
    if rows.size == 0:
        return None
    wanted = names + ((_NEXT_MASK,) if _NEXT_MASK in keys else ())
    return {name: np.asarray(container.take(name, rows)) for name in wanted}


class TDLearner:
    """Temporal-difference learning of a tabular Q (or V) function.

    Methods, for a transition ``(s, a, r, terminal, s')`` (``Q += lr * (target - Q[s, a])``):

    * ``"SARS"`` (Q-learning): ``target = r + gamma * (1 - terminal) * max_a' Q[s', a']``
      (the max over legal actions when the batch has ``next_legal_actions_mask``; 0 for a
      next state with no legal action);
    * ``"SARSA"``: ``target = r + gamma * (1 - terminal) * Q[s', a']`` with ``a'`` the batch's
      ``next_action`` (a ``CircularArraySARTSATraces`` trajectory records it);
    * ``"ExpectedSARSA"``: ``target = r + gamma * (1 - terminal) * sum_a' pi(a'|s') Q[s', a']``
      where ``pi = explorer.prob(Q[s'])`` is the behaviour policy's distribution at its current
      exploration step. Pass ``explorer=``, or let :class:`QBasedPolicy` hand the learner its own.

    With a :class:`TabularVApproximator`, ``"SARS"`` is TD(0) prediction:
    ``V[s] += lr * (r + gamma * (1 - terminal) * V[s'] - V[s])``.

    :meth:`update` learns from one batch: a mapping of columns (what ``BatchSampler`` returns), a
    list of them (``MultiBatchSampler``), or the container itself (``DummySampler``), whose
    sampleable rows are used in order, so padding rows at episode boundaries never are. The rows
    of a batch are applied one after another: a row sees the updates of the rows before it.

    Example:
        >>> import stagerl as rl
        >>> learner = rl.TDLearner(rl.TabularQApproximator(3, 2), gamma=0.5, lr=0.5)
        >>> learner.approximator.table[2] = [4.0, 2.0]
        >>> learner.update({"state": [1], "action": [0], "reward": [1.0], "terminal": [False],
        ...                 "next_state": [2]})
        >>> learner.values(1).tolist()        # 0 + 0.5 * (1 + 0.5 * 4 - 0)
        [1.5, 0.0]
    """

    def __init__(self, approximator: Any, method: str = "SARS", gamma: float = 1.0,
                 lr: float = 0.01, explorer: Any = None):
        if not isinstance(approximator, (TabularQApproximator, TabularVApproximator)):
            raise TypeError(
                "TDLearner needs a TabularQApproximator or TabularVApproximator, got "
                f"{type(approximator).__name__}"
            )
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got method={method!r}")
        if isinstance(approximator, TabularVApproximator) and method != "SARS":
            raise ValueError(
                f'a TabularVApproximator learns state values with method="SARS" (TD(0)), got '
                f"method={method!r}; use a TabularQApproximator for {method}"
            )
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got gamma={gamma!r}")
        if not lr > 0.0:
            raise ValueError(f"lr must be positive, got lr={lr!r}")
        self.approximator = approximator
        self.method = method
        self.gamma = float(gamma)
        self.lr = float(lr)
        self.explorer = explorer

    def values(self, state: Any) -> Any:
        """The action values at ``state`` (one row), or one row per state of an array."""
        return self.approximator.values(state)

    def update(self, batch: Any) -> None:
        """Learn from one batch, row after row (see the class docstring for what a batch is)."""
        if isinstance(batch, (list, tuple)):
            for each in batch:
                self.update(each)
            return
        if self.method == "ExpectedSARSA" and self.explorer is None:
            raise ValueError(
                'TDLearner(method="ExpectedSARSA") needs the explorer whose expectation it takes: '
                "pass TDLearner(..., explorer=...) or wrap it in QBasedPolicy(learner, explorer)"
            )
        names = _NEEDS[self.method]
        try:
            columns = _columns(batch, names)
        except KeyError as missing:
            raise ValueError(
                f'TDLearner(method="{self.method}") needs the traces {list(names)}; the batch '
                f"lacks {missing.args[0]}"
                + ("; record it with CircularArraySARTSATraces" if self.method == "SARSA" else "")
            ) from None
        if columns is None:
            return
        states = _as_indices(columns["state"], "state")
        if len(states) == 0:
            return
        next_states = _as_indices(columns["next_state"], "next_state")
        rewards = columns["reward"].astype(np.float64).tolist()
        continues = (1.0 - columns["terminal"].astype(np.float64)).tolist()
        if isinstance(self.approximator, TabularVApproximator):
            self._update_v(states, rewards, continues, next_states)
            return
        actions = _as_indices(columns["action"], "action")
        masks = columns.get(_NEXT_MASK)
        next_actions = (
            _as_indices(columns["next_action"], "next_action") if self.method == "SARSA" else None
        )
        table, lr, gamma = self.approximator.table, self.lr, self.gamma
        for i, (s, a, r, c, s2) in enumerate(
            zip(states, actions, rewards, continues, next_states, strict=True)
        ):
            if c == 0.0:
                bootstrap = 0.0  # terminal: nothing past it (and no lookup of an absorbing row)
            elif next_actions is not None:
                bootstrap = table[s2, next_actions[i]]
            elif self.method == "SARS":
                row = table[s2] if masks is None else table[s2][masks[i]]
                bootstrap = row.max() if row.size else 0.0  # no legal next action: worth 0
            else:
                row = table[s2]
                mask = None if masks is None else masks[i]
                bootstrap = 0.0 if mask is not None and not mask.any() else \
                    float(np.dot(self.explorer.prob(row, mask), row))
            q = table[s, a]
            table[s, a] = q + lr * (r + gamma * c * bootstrap - q)

    def _update_v(self, states: list[int], rewards: list[float], continues: list[float],
                  next_states: list[int]) -> None:
        table, lr, gamma = self.approximator.table, self.lr, self.gamma
        for s, r, c, s2 in zip(states, rewards, continues, next_states, strict=True):
            bootstrap = table[s2] if c != 0.0 else 0.0
            v = table[s]
            table[s] = v + lr * (r + gamma * c * bootstrap - v)

    def state_dict(self) -> dict[str, Any]:
        return self.approximator.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.approximator.load_state_dict(state)

    def __repr__(self) -> str:
        return (
            f"TDLearner({self.approximator!r}, method={self.method!r}, gamma={self.gamma}, "
            f"lr={self.lr})"
        )
