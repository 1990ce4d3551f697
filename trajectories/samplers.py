"""Samplers: turn a container (an EpisodesBuffer, or bare traces) into batches.

A batch is a dict from trace name to a contiguous numpy array, or to a torch tensor on
``device`` when the sampler is given one. Rows are drawn among the *sampleable* rows only: those
that are complete transitions inside one episode (every row of bare traces).
"""

from __future__ import annotations

import numpy as np

from trajectories._episode_meta import episode_row_lists
from trajectories._rows import _episodic, _layer, _Rows
from trajectories.checks import as_rng, require_positive_int
from trajectories.nested import tree_map
from trajectories.prioritized import CircularPrioritizedTraces


def _check_names(names):
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a tuple of trace names, got names={names!r}")
    return tuple(names)


def _device(device):
    if device is None:
        return None
    import torch  # only samplers given a device need torch

    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', "
                         f"got device={device!r}") from e


def _to_device(batch: dict, device) -> dict:
    """Every array of ``batch`` (nested ones leaf by leaf) as a tensor on ``device``."""
    import torch

    def move(value):
        tensor = torch.from_numpy(np.ascontiguousarray(value))
        if device.type == "cuda":  # pinned host memory makes the copy asynchronous
            tensor = tensor.pin_memory().to(device, non_blocking=True)
        elif device.type != "cpu":
            tensor = tensor.to(device)
        return tensor

    return {name: tree_map(move, value) for name, value in batch.items()}


def _resolve_names(who, container, names):
    keys = tuple(container.keys())
    if names is None:
        return keys
    unknown = [n for n in names if n not in keys]
    if unknown:
        raise ValueError(f"{who}: unknown trace names {unknown}; available traces: {keys}")
    return names


class DummySampler:
    """Hands over the container itself (on-policy learners iterate it whole).

    Example:
        >>> DummySampler().sample([1, 2, 3])
        [1, 2, 3]
    """

    def sample(self, container):
        return container

    def __repr__(self) -> str:
        return "DummySampler()"


class BatchSampler:
    """Uniform sampling with replacement over the sampleable rows.

    On prioritised traces rows are drawn proportionally to their priority (stratified over the
    sum tree's total) and the batch also carries ``key`` and ``priority``.

    Args:
        batch_size: rows per batch.
        names: the traces to put in the batch (default: all).
        rng: an int seed or a ``np.random.Generator``.
        device: when given (``"cpu"``, ``"cuda"``...), batches are torch tensors there.

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(6), action=np.zeros(5, dtype=np.int64),
        ...               reward=np.arange(5, dtype=np.float32), terminal=np.zeros(5, dtype=bool))
        >>> batch = BatchSampler(4, names=("state", "next_state", "reward"), rng=0).sample(traces)
        >>> batch["next_state"].tolist() == (batch["state"] + 1).tolist()
        True
        >>> batch["reward"].shape
        (4,)
    """

    def __init__(self, batch_size: int, names=None, rng=None, device=None):
        self.batch_size = require_positive_int("BatchSampler", "batch_size", batch_size)
        self.names = _check_names(names)
        self.rng = as_rng(rng)
        self.device = _device(device)
        self._rows = _Rows(f"BatchSampler(batch_size={self.batch_size})", self.rng)
        self._plan = (None,)

    def __repr__(self) -> str:
        return f"BatchSampler(batch_size={self.batch_size}, names={self.names})"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_plan"] = (None,)  # the container it last sampled: resolved again on use
        return state

    def _plan_for(self, container):
        """The names to gather from this container and its prioritised layer, resolved once."""
        names = _resolve_names(self._rows.who, container, self.names)
        prioritized = _layer(container, CircularPrioritizedTraces)
        if prioritized is not None:
            names = names + tuple(n for n in ("key", "priority") if n not in names)
        self._plan = (container, names, prioritized)
        return self._plan

    def sample(self, container) -> dict:
        plan = self._plan
        if plan[0] is not container:
            plan = self._plan_for(container)
        _, names, prioritized = plan
        if prioritized is None:
            idx = self._rows.uniform(container, self.batch_size)
        else:
            idx = self._rows.prioritized(container, prioritized.priorities, self.batch_size)
        take = container.take
        batch = {name: take(name, idx) for name in names}
        return batch if self.device is None else _to_device(batch, self.device)


class MetaSampler:
    """Several samplers at once: a dict of batches, one per named sampler, for one controller
    sample (e.g. a policy batch and a value batch of different sizes).

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(4), action=np.zeros(3, dtype=np.int64),
        ...               reward=np.ones(3, dtype=np.float32), terminal=np.zeros(3, dtype=bool))
        >>> meta = MetaSampler(policy=BatchSampler(2, rng=0), value=BatchSampler(5, rng=1))
        >>> {k: len(b["state"]) for k, b in meta.sample(traces).items()}
        {'policy': 2, 'value': 5}
    """

    def __init__(self, **samplers):
        if not samplers:
            raise ValueError("MetaSampler needs at least one named sampler, e.g. "
                             "MetaSampler(policy=BatchSampler(32))")
        for name, s in samplers.items():
            if not hasattr(s, "sample"):
                raise TypeError(f"MetaSampler: {name}= must be a sampler, got {type(s).__name__}")
        self.samplers = samplers

    def __repr__(self) -> str:
        return f"MetaSampler({', '.join(f'{k}={v!r}' for k, v in self.samplers.items())})"

    def sample(self, container) -> dict:
        return {name: s.sample(container) for name, s in self.samplers.items()}


class MultiBatchSampler:
    """``n`` batches from one sampler for one controller sample (e.g. n gradient steps).

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(4), action=np.zeros(3, dtype=np.int64),
        ...               reward=np.ones(3, dtype=np.float32), terminal=np.zeros(3, dtype=bool))
        >>> batches = MultiBatchSampler(BatchSampler(2, rng=0), 3).sample(traces)
        >>> len(batches), len(batches[0]["reward"])
        (3, 2)
    """

    def __init__(self, sampler, n: int):
        if not hasattr(sampler, "sample"):
            raise TypeError(f"MultiBatchSampler needs a sampler, got {type(sampler).__name__}")
        self.sampler = sampler
        self.n = require_positive_int("MultiBatchSampler", "n", n)

    def __repr__(self) -> str:
        return f"MultiBatchSampler({self.sampler!r}, n={self.n})"

    def sample(self, container) -> list:
        return [self.sampler.sample(container) for _ in range(self.n)]


def _slots(container):
    slots = getattr(container, "slots", None)
    return slots if slots is not None else _slots(container.traces)


class NStepBatchSampler:
    """Batches of n-step transitions, cut at episode ends, optionally with stacked frames.

    For a sampled row ``i`` with ``ns = min(n, episode_length - step_number + 1)``:
    ``reward = r_i + gamma r_{i+1} + ... + gamma^(ns-1) r_{i+ns-1}``,
    ``terminal = terminal_{i+ns-1}``, ``next_state`` and every other right-hand multiplex name
    (``next_action``, ``next_legal_actions_mask``) at row ``i+ns-1``, every other trace at row
    ``i``. ``ns`` never reaches past the newest complete row of the episode (a SARTSA row still
    waiting for its next action) nor, with lanes, out of the row's lane: the container says how
    far each row may be followed (``rows_ahead_at``). With ``stack_size=k``, ``state`` and
    ``next_state`` come as ``(batch, k, *frame)`` windows ending at their row, and only rows
    with at least ``k`` stored states of their episode (``rows_behind_at``) are drawn. On bare
    traces (no episode bookkeeping) ``ns`` is cut at the first terminal and at the newest row.

    Args:
        n: the most steps summed.
        gamma: the discount, in [0, 1].
        batch_size: rows per batch.
        stack_size: frames per stacked state, or None for plain states.
        names: the traces to put in the batch (default: all).
        rng: an int seed or a ``np.random.Generator``.
        device: when given, batches are torch tensors there.

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(4), action=np.zeros(3, dtype=np.int64),
        ...               reward=np.ones(3, dtype=np.float32), terminal=np.zeros(3, dtype=bool))
        >>> batch = NStepBatchSampler(n=2, gamma=0.5, batch_size=64, rng=0).sample(traces)
        >>> sorted(set(zip(batch["state"].tolist(), batch["reward"].tolist(),
        ...                batch["next_state"].tolist())))
        [(0, 1.5, 2), (1, 1.5, 3), (2, 1.0, 3)]
    """

    def __init__(self, n: int, gamma: float, batch_size: int = 32, stack_size=None,
                 names=None, rng=None, device=None):
        self.n = require_positive_int("NStepBatchSampler", "n", n)
        self.batch_size = require_positive_int("NStepBatchSampler", "batch_size", batch_size)
        if stack_size is not None:
            stack_size = require_positive_int("NStepBatchSampler", "stack_size", stack_size)
        if not (isinstance(gamma, (int, float, np.floating)) and 0 <= gamma <= 1):
            raise ValueError(f"NStepBatchSampler: gamma must be in [0, 1], got gamma={gamma!r}")
        self.gamma, self.stack_size = float(gamma), stack_size
        self.names = _check_names(names)
        self.rng = as_rng(rng)
        self.device = _device(device)
        who = f"NStepBatchSampler(n={self.n}, batch_size={self.batch_size})"
        self._rows = _Rows(who, self.rng)

    def __repr__(self) -> str:
        return (f"NStepBatchSampler(n={self.n}, gamma={self.gamma}, batch_size={self.batch_size},"
                f" stack_size={self.stack_size}, names={self.names})")

    def _accept(self, container):
        k = self.stack_size
        if k is None or k == 1:
            return None
        if _episodic(container):
            return lambda idx: container.rows_behind_at(idx) >= k
        return lambda idx: idx >= k - 1

    def _n_steps(self, container, idx, n_rows):
        """ns per sampled row: n cut at the episode end and at the newest complete row."""
        if _episodic(container):
            return np.maximum(np.minimum(self.n, container.rows_ahead_at(idx)), 1)
        ns = np.minimum(self.n, n_rows - idx)
        if self.n > 1 and "terminal" in container.keys():
            ahead = np.arange(self.n)
            done = container.take("terminal", np.minimum(idx[:, None] + ahead, n_rows - 1))
            first_done = np.where(done.any(axis=1), done.argmax(axis=1) + 1, self.n)
            ns = np.minimum(ns, first_done)
        return ns

    def sample(self, container) -> dict:
        names = _resolve_names(self._rows.who, container, self.names)
        accept = self._accept(container)
        prioritized = _layer(container, CircularPrioritizedTraces)
        if prioritized is None:
            idx = self._rows.uniform(container, self.batch_size, accept)
        else:
            idx = self._rows.prioritized(container, prioritized.priorities, self.batch_size, accept)
            names = names + tuple(n for n in ("key", "priority") if n not in names)
        n_rows = len(container)
        ns = self._n_steps(container, idx, n_rows)
        last = idx + ns - 1
        right = {s[1] for s in _slots(container) if len(s) == 2} | {"terminal"}
        window = None if self.stack_size is None else np.arange(1 - self.stack_size, 1)
        stacked = () if window is None else ("state", "next_state")
        summed = "reward" if self.n > 1 else None
        take, out = container.take, {}
        # The names at the same rows one after another (``idx``, ``last``, the rewards' window,
        # the stacks): lanes locate the rows of the last index array read once.
        for name in sorted(names, key=lambda name: (name in stacked, name == summed,
                                                    name in right)):
            if name == "reward":
                out[name] = self._discounted(container, idx, ns, n_rows)
            elif name in stacked:
                end = idx if name == "state" else last
                out[name] = take(name, end[:, None] + window)
            else:
                out[name] = take(name, last if name in right else idx)
        batch = {name: out[name] for name in names}
        return batch if self.device is None else _to_device(batch, self.device)

    def _discounted(self, container, idx, ns, n_rows):
        if self.n == 1:
            return container.take("reward", idx)
        ahead = np.arange(self.n)
        r = container.take("reward", np.minimum(idx[:, None] + ahead, n_rows - 1))
        w = _discounts(self.n, self.gamma)[ns]  # gamma ** k for the k < ns summed, else 0
        total = np.add.reduce(r * w.reshape(w.shape + (1,) * (r.ndim - 2)), axis=1)
        return total.astype(r.dtype if r.dtype.kind == "f" else np.float32)


_DISCOUNTS: dict = {}  # (n, gamma) -> row ns: the weights of the n rewards ahead


def _discounts(n: int, gamma: float) -> np.ndarray:
    table = _DISCOUNTS.get((n, gamma))
    if table is None:
        ahead = np.arange(n)
        table = np.where(ahead < np.arange(n + 1)[:, None], gamma**ahead, 0.0)
        table.flags.writeable = False
        if len(_DISCOUNTS) < 64:  # a few samplers' settings
            _DISCOUNTS[(n, gamma)] = table
    return table


class EpisodesSampler:
    """All stored episodes, oldest first: a list with one ``{name: array}`` per episode.

    The first episode may be cut by the ring; the episode still being collected is included
    (with empty arrays when it has no transition yet). On bare traces episodes end after each
    ``terminal`` row. With lanes, the episodes come lane by lane.

    Args:
        names: the traces to put in each episode (default: all).
        device: when given (``"cpu"``, ``"cuda"``...), the arrays are torch tensors there.

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> traces = CircularArraySARTSTraces(capacity=10)
        >>> traces.append(state=np.arange(5), action=np.zeros(4, dtype=np.int64),
        ...               reward=np.ones(4, dtype=np.float32),
        ...               terminal=np.array([False, True, False, False]))
        >>> [ep["state"].tolist() for ep in EpisodesSampler(names=("state",)).sample(traces)]
        [[0, 1], [2, 3]]
    """

    def __init__(self, names=None, device=None):
        self.names = _check_names(names)
        self.device = _device(device)

    def __repr__(self) -> str:
        return f"EpisodesSampler(names={self.names})"

    def _episode_rows(self, container) -> list:
        if hasattr(container, "episode_rows"):  # containers of several lanes know their own
            return container.episode_rows()
        n_rows = len(container)
        if _episodic(container):
            return episode_row_lists(np.asarray(container.step_numbers),
                                     np.asarray(container.sampleable_inds, dtype=bool))
        if n_rows == 0:
            return []
        if "terminal" not in container.keys():
            return [np.arange(n_rows)]
        done = np.asarray(container.take("terminal", np.arange(n_rows))).reshape(n_rows, -1)
        ends = np.flatnonzero(done.any(axis=1)) + 1
        bounds = np.concatenate([[0], ends[ends < n_rows], [n_rows]])
        return [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def sample(self, container) -> list:
        names = _resolve_names(f"{self!r}", container, self.names)
        episodes = self._episode_rows(container)
        if not episodes:
            return []
        # one gather per name for all episodes, then contiguous views, one per episode
        rows = np.concatenate(episodes)
        cuts = np.cumsum([len(e) for e in episodes])[:-1]
        gathered = {name: container.take(name, rows) for name in names}
        if self.device is not None:
            gathered = _to_device(gathered, self.device)
            split = lambda value: list(value.tensor_split(cuts.tolist()))  # noqa: E731
        else:
            split = lambda value: np.split(value, cuts)  # noqa: E731
        columns = {name: tree_map(split, value) for name, value in gathered.items()}
        return [{name: _episode_part(columns[name], i) for name in names}
                for i in range(len(episodes))]


def _episode_part(column, i: int):
    """Episode ``i``'s part of a split column (of every leaf of a nested one)."""
    if isinstance(column, list):
        return column[i]
    if isinstance(column, dict):
        return {k: _episode_part(v, i) for k, v in column.items()}
    return tuple(_episode_part(v, i) for v in column)
