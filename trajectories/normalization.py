"""Running normalisation of traces: stored data stays raw; what learning reads is normalised."""

from __future__ import annotations

from functools import partial

import numpy as np

from trajectories.traces import write_function_of
from trajectories.wrapped import WrappedTraces


class Normalizer:
    """An element-wise running mean and sample standard deviation (ddof=1).

    Statistics are merged batch by batch with Chan et al.'s parallel update, in float64.
    ``normalize(x)`` returns ``(x - mean) / (std + epsilon)``; before two values have been seen the
    std is taken as 1 (and the mean as 0 before any), so early batches pass through unscaled.
    ``epsilon`` (default 1e-8) only guards a constant element, whose std is 0.

    Args:
        epsilon: added to the std before dividing.

    Example:
        >>> norm = Normalizer()
        >>> norm.append(np.array([1.0, 2.0, 3.0]))
        >>> norm.count, float(norm.mean), float(norm.std)
        (3, 2.0, 1.0)
        >>> norm.normalize(np.array([2.0, 4.0], dtype=np.float32)).tolist()
        [0.0, 2.0]
    """

    def __init__(self, epsilon: float = 1e-8):
        if not (isinstance(epsilon, (int, float)) and epsilon >= 0):
            raise ValueError(f"epsilon must be a non-negative number, got epsilon={epsilon!r}")
        self.epsilon = float(epsilon)
        self.count = 0
        self._mean = None
        self._m2 = None

    def __repr__(self) -> str:
        return f"Normalizer(epsilon={self.epsilon}, count={self.count})"

    @property
    def frame_shape(self) -> tuple | None:
        """The shape of one value, known after the first update."""
        return None if self._mean is None else self._mean.shape

    @property
    def mean(self) -> np.ndarray:
        return np.zeros(()) if self._mean is None else self._mean.copy()

    @property
    def var(self) -> np.ndarray:
        if self.count < 2:
            return np.ones(() if self._mean is None else self._mean.shape)
        return self._m2 / (self.count - 1)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)

    def push(self, x) -> None:
        """Add one value (a frame): Welford's update, the per-step path."""
        x = np.asarray(x, dtype=np.float64)
        if self._mean is None:
            self._mean, self._m2, self.count = x.copy(), np.zeros_like(x), 1
            return
        if x.shape != self._mean.shape:
            x = np.broadcast_to(x, self._mean.shape)
        self.count += 1
        delta = x - self._mean
        self._mean = self._mean + delta / self.count
        self._m2 = self._m2 + delta * (x - self._mean)

    def append(self, xs) -> None:
        """Add many values stacked along the first axis."""
        xs = np.asarray(xs, dtype=np.float64)
        if xs.ndim == 0:
            raise ValueError("Normalizer.append needs values stacked along a first axis")
        if self._mean is not None and xs.shape[1:] != self._mean.shape:
            xs = np.broadcast_to(xs, (xs.shape[0],) + self._mean.shape)
        n = xs.shape[0]
        if n == 0:
            return
        mean_b = xs.mean(axis=0)
        m2_b = ((xs - mean_b) ** 2).sum(axis=0)
        if self._mean is None:
            self._mean, self._m2, self.count = mean_b, m2_b, n
            return
        total = self.count + n
        delta = mean_b - self._mean
        self._mean = self._mean + delta * (n / total)
        self._m2 = self._m2 + m2_b + delta**2 * (self.count * n / total)
        self.count = total

    def normalize(self, x) -> np.ndarray:
        """``(x - mean) / (std + epsilon)``, element-wise over a frame or a batch of frames.

        Floating inputs keep their dtype; other inputs come back as float32."""
        x = np.asarray(x)
        if self._mean is None:
            return x.astype(x.dtype if x.dtype.kind == "f" else np.float32)
        dtype = x.dtype if x.dtype.kind == "f" else np.float32
        out = ((x - self._mean) / (self.std + self.epsilon)).astype(dtype, copy=False)
        return out[()] if out.ndim == 0 else out  # a scalar in, a scalar out

    def reset(self) -> None:
        self.count, self._mean, self._m2 = 0, None, None


class NormalizedTraces(WrappedTraces):
    """Traces whose named columns are read normalised by running statistics.

    Every value pushed to a normalised name (``push``, ``append``, and the given values of
    ``pad``, never its zero padding) updates that name's :class:`Normalizer`; the two names of a
    multiplex (``state`` / ``next_state``) share one. Batches (``take``), ``t[i]`` and ``t[i:j]``
    come normalised with the statistics of the moment; ``t[name]`` is the stored, raw column, and
    stored data never changes. ``pop``/``clear`` leave the statistics alone: they summarise
    everything pushed so far.

    Args:
        traces: the traces to wrap.
        **normalizers: trace name -> ``Normalizer``. Without any, ``reward`` and ``state`` are
            normalised (the names that exist in ``traces``).

    Example:
        >>> from trajectories import CircularArraySARTSTraces
        >>> t = NormalizedTraces(CircularArraySARTSTraces(capacity=10), reward=Normalizer())
        >>> t.push(state=0)
        >>> for r in (1.0, 2.0, 3.0):
        ...     t.push(state=1, action=0, reward=r, terminal=False)
        >>> t["reward"].tolist(), float(t[2]["reward"])
        ([1.0, 2.0, 3.0], 1.0)
    """

    def __init__(self, traces, **normalizers):
        super().__init__(traces)
        keys = tuple(traces.keys())
        if not normalizers:
            normalizers = {k: Normalizer() for k in ("reward", "state") if k in keys}
        for name, norm in normalizers.items():
            if name not in keys:
                raise ValueError(f"unknown trace {name!r}; available traces: {keys}")
            if not isinstance(norm, Normalizer):
                raise TypeError(f"{name}= must be a Normalizer, got {type(norm).__name__}")
        # both names of a multiplex slot read one stored column, so they share one normaliser
        by_name = dict(normalizers)
        for slot in traces.slots:
            given = {id(normalizers[n]): normalizers[n] for n in slot if n in normalizers}
            if len(given) > 1:
                raise ValueError(f"{slot} share one stored column; give one Normalizer for them")
            for norm in given.values():
                by_name.update(dict.fromkeys(slot, norm))
        self.normalizers = by_name
        self._frame_shapes = {}

    def __getattr__(self, attr):
        # forward the rest of the public traces interface (set_priority of prioritised traces);
        # never private fast paths, which would write around the normalisers
        if attr.startswith("_") or attr == "traces":
            raise AttributeError(attr)
        return getattr(self.traces, attr)

    def __repr__(self) -> str:
        return f"NormalizedTraces({self.traces!r}, names={tuple(self.normalizers)})"

    # -- what stays as it is ----------------------------------------------------------------
    def keys(self):
        return self.traces.keys()

    def pop(self):
        return self._normalized(self.traces.pop())

    def popleft(self):
        return self._normalized(self.traces.popleft())

    def clear(self) -> None:
        self.traces.clear()

    def empty_copy(self, capacity=None):
        """The same layout, empty, with fresh normalisers of the same epsilon."""
        fresh, names = {}, {}
        for name, norm in self.normalizers.items():
            if id(norm) not in fresh:  # one keyword per normaliser; __init__ spreads it again
                fresh[id(norm)] = names[name] = Normalizer(norm.epsilon)
        return NormalizedTraces(self.traces.empty_copy(capacity), **names)

    # -- reads ------------------------------------------------------------------------------
    def _normalized(self, row):
        if not isinstance(row, dict):
            return row
        return {k: self.normalizers[k].normalize(v) if k in self.normalizers else v
                for k, v in row.items()}

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.traces[key]
        return self._normalized(self.traces[key])

    def take(self, name, idx):
        """Column ``name`` at logical rows ``idx``, normalised when ``name`` has a normaliser."""
        out = self.traces.take(name, idx)
        norm = self.normalizers.get(name)
        # An empty gather is how callers probe a column's stored dtype and frame shape.
        return out if norm is None or not out.size else norm.normalize(out)

    # -- writes: the inner traces first (they validate), then the statistics -----------------
    def _frames(self, name, values, many):
        """The pushed values as float64: one frame, or frames ``(n, *frame)`` when ``many``; the
        frame shape is read once from the stored column (a pushed scalar may fill a frame)."""
        shape = self._frame_shapes.get(name)
        if shape is None:
            shape = self.traces.take(name, np.zeros(0, dtype=np.int64)).shape[1:]
            self._frame_shapes[name] = shape
        values = np.asarray(values, dtype=np.float64)
        if many:
            return np.broadcast_to(values, values.shape[:1] + shape)
        return np.broadcast_to(values, shape)

    def _observe(self, row, many):
        frames = [(self.normalizers[k], self._frames(k, v, many))
                  for k, v in row.items() if k in self.normalizers]
        for norm, xs in frames:
            if many:
                norm.append(xs)
            else:
                norm.push(xs)

    def write_function(self, keys: tuple, pad: bool = False):
        """The inner traces' ``write(row)`` for these names (see `Traces.write_function`),
        followed by the statistics of what was pushed."""
        return partial(self._write_observed, write_function_of(self.traces, keys, pad))

    def _write_observed(self, write, row: dict):
        evict = write(row)  # validates and writes, or raises having changed nothing
        self._observe(row, many=False)
        return evict

    def push(self, **row) -> None:
        self.write_function(tuple(row))(row)

    def append(self, **rows) -> None:
        self.traces.append(**rows)
        self._observe(rows, many=True)

    def pad(self, **row) -> None:
        self.write_function(tuple(row), pad=True)(row)
