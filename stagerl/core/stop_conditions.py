"""Stop conditions: ``check(policy, env) -> bool``, asked once per step after the PostAct hook.

Conditions may count (their counters advance on every ``check``), so one instance belongs to one
experiment; reusing it continues its count.

Vector envs (``env.num_envs`` sub-envs, flags as arrays, sub-envs resetting themselves):
``StopAfterNSteps`` counts ``num_envs`` env-steps per ``act``, ``StopAfterNEpisodes`` counts every
sub-env's finished episodes, ``StopIfEnvTerminated`` is true when any sub-env terminated and
``StopAfterNoImprovement`` reads ``fn()`` once at every step where some sub-env's episode ended.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trajectories.checks import require_positive_int

__all__ = [
    "StopCondition",
    "StopAfterNSteps",
    "StopAfterNEpisodes",
    "StopIfEnvTerminated",
    "StopAfterNoImprovement",
    "StopAfterNSeconds",
    "StopSignal",
    "StopIfAny",
    "StopIfAll",
]


class StopCondition:
    """Base class of stop conditions: ``check(policy, env)`` is true when the experiment should end.

    Example:
        >>> import stagerl as rl
        >>> class StopAtRightEnd(rl.StopCondition):
        ...     def check(self, policy, env):
        ...         return env.state == 6
        >>> StopAtRightEnd().check(None, rl.RandomWalk1D())
        False
    """

    def check(self, policy: Any, env: Any) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement check(policy, env)")


def _require_positive_seconds(owner: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: seconds must be a number, got seconds={value!r} of type "
                        f"{type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{owner}: seconds must be positive, got seconds={value!r}")


def _shows_progress(progress: bool) -> bool:
    # CI logs are not terminals: a bar redrawn there is noise.
    return bool(progress) and "CI" not in os.environ


def episodes_ended(env: Any) -> int:
    """How many episodes the last step ended: 0 or 1, or up to ``num_envs`` for a vector env.

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D(start=5); env.reset(); env.act(1)
        >>> episodes_ended(env)
        1
    """
    terminated = env.is_terminated
    if isinstance(terminated, np.ndarray) and terminated.ndim:
        return int(np.count_nonzero(terminated | env.is_truncated))
    return 1 if terminated or env.is_truncated else 0


def steps_per_act(env: Any) -> int:
    """``env.num_envs`` for a vector env, else 1."""
    num_envs = getattr(env, "num_envs", None)
    if isinstance(num_envs, (int, np.integer)) and not isinstance(num_envs, bool):
        return int(num_envs)
    return 1


def _progress_bar(total: int, unit: str) -> Any:
    from tqdm.auto import tqdm  # imported on first use: tqdm.auto probes for a notebook

    return tqdm(total=total, unit=unit, dynamic_ncols=True)


@dataclass
class StopAfterNSteps(StopCondition):
    """True from the ``n``-th call on, so ``run`` makes exactly ``n`` ``env.act`` calls.

    With a vector env each call counts ``num_envs`` steps (as SB3's ``total_timesteps``), and the
    condition is true once ``step >= n``.

    Shows a tqdm progress bar unless ``progress=False`` or the environment variable ``CI`` is set.
    The bar is redrawn every ``max(1, min(1000, n // 100))`` steps, not every step, and closed at
    the ``n``-th step.

    Example:
        >>> import stagerl as rl
        >>> stop = rl.StopAfterNSteps(3, progress=False)
        >>> [stop.check(None, None) for _ in range(4)]
        [False, False, True, True]
    """

    n: int
    progress: bool = True
    step: int = 0

    def __post_init__(self) -> None:
        require_positive_int("StopAfterNSteps", "n", self.n)
        self._bar: Any = None
        # One redraw per 1% (at most every 1000 steps) keeps the bar off the per-step cost.
        self._every = max(1, min(1000, self.n // 100))
        self._next_redraw = self.step + 1 if _shows_progress(self.progress) else math.inf
        self._env: Any = None
        self._steps_per_act = 1

    def __getstate__(self) -> dict:
        # The progress bar (a terminal handle) and the env are not part of the count: a copy
        # draws a bar of its own and looks at the env it is given next.
        return {**self.__dict__, "_bar": None, "_env": None}

    def check(self, policy: Any, env: Any) -> bool:
        if env is not self._env:  # once per env: a vector env counts num_envs steps per act
            self._env, self._steps_per_act = env, steps_per_act(env)
        self.step += self._steps_per_act
        if self.step >= self._next_redraw:
            self._redraw()
        return self.step >= self.n

    def _redraw(self) -> None:
        if self._bar is None:
            self._bar = _progress_bar(self.n, "step")
        self._bar.update(min(self.step, self.n) - self._bar.n)
        if self.step >= self.n:
            self._bar.close()
            self._next_redraw = math.inf
        else:
            self._next_redraw = min((self.step // self._every + 1) * self._every, self.n)


@dataclass
class StopAfterNEpisodes(StopCondition):
    """Counts the calls at which the episode ended (terminated or truncated); true once ``n``.

    With a vector env every sub-env's finished episode counts.

    Shows a progress bar over episodes unless ``progress=False`` or ``CI`` is set.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(3, progress=False), rl.StepsPerEpisode())
        >>> len(hook.steps)
        3
    """

    n: int
    progress: bool = True
    episode: int = 0

    def __post_init__(self) -> None:
        require_positive_int("StopAfterNEpisodes", "n", self.n)
        self._bar: Any = None
        self._shows_progress = _shows_progress(self.progress)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_bar": None}

    def check(self, policy: Any, env: Any) -> bool:
        ended = episodes_ended(env)
        if ended:
            self.episode += ended
            if self._shows_progress:
                self._redraw()
        return self.episode >= self.n

    def _redraw(self) -> None:
        if self._bar is None:
            self._bar = _progress_bar(self.n, "episode")
        self._bar.update(min(self.episode, self.n) - self._bar.n)
        if self.episode >= self.n:
            self._bar.close()
            self._shows_progress = False


@dataclass
class StopIfEnvTerminated(StopCondition):
    """True when ``env.is_terminated`` (a truncated episode does not stop the experiment).

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D(start=5); env.reset(); env.act(1)
        >>> rl.StopIfEnvTerminated().check(None, env)
        True
    """

    def check(self, policy: Any, env: Any) -> bool:
        terminated = env.is_terminated
        if isinstance(terminated, np.ndarray):  # a vector env: any sub-env
            return bool(terminated.any())
        return bool(terminated)


@dataclass
class StopAfterNoImprovement(StopCondition):
    """Stops when ``fn()``, read at episode ends, has not improved by more than ``delta`` for
    ``patience`` episodes in a row.

    Starts with ``peak = -inf`` and ``counter = 1``. At each episode end (terminated or
    truncated) ``v = fn()``: if ``v - peak > delta``, ``peak = max(v, peak)`` and the counter goes
    back to 1 (false); otherwise the counter grows by one and the condition is true once
    ``counter > patience``. Between episode ends it is false and ``fn`` is not called.

    Example:
        >>> import stagerl as rl
        >>> env = rl.RandomWalk1D(start=5); env.reset(); env.act(1)   # an episode end
        >>> returns = iter([1.0, 2.0, 2.0, 1.5])
        >>> stop = rl.StopAfterNoImprovement(lambda: next(returns), patience=2)
        >>> [stop.check(None, env) for _ in range(4)]
        [False, False, False, True]
    """

    fn: Callable[[], float]
    patience: int
    delta: float = 0.0
    peak: float = -math.inf
    counter: int = 1

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(
                f"StopAfterNoImprovement needs a callable fn returning the value to watch, got "
                f"fn={self.fn!r}; pass e.g. lambda: hook.rewards[-1]"
            )
        require_positive_int("StopAfterNoImprovement", "patience", self.patience)

    def check(self, policy: Any, env: Any) -> bool:
        if not episodes_ended(env):
            return False
        value = self.fn()
        if value - self.peak > self.delta:
            self.peak = max(value, self.peak)
            self.counter = 1
            return False
        self.counter += 1
        return self.counter > self.patience


@dataclass
class StopAfterNSeconds(StopCondition):
    """True once ``seconds`` of wall-clock time have passed since construction.

    Example:
        >>> import stagerl as rl
        >>> rl.StopAfterNSeconds(60).check(None, None)
        False
    """

    seconds: float
    start: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        _require_positive_seconds("StopAfterNSeconds", self.seconds)

    def check(self, policy: Any, env: Any) -> bool:
        return time.perf_counter() - self.start >= self.seconds


class StopSignal(StopCondition):
    """True once :meth:`set` was called, by a hook or by another thread (thread-safe).

    Example:
        >>> import stagerl as rl
        >>> signal = rl.StopSignal()
        >>> signal.check(None, None)
        False
        >>> signal.set(); signal.check(None, None)
        True
    """

    def __init__(self) -> None:
        self._event = threading.Event()

    def __getstate__(self) -> dict:
        return {"set": self._event.is_set()}

    def __setstate__(self, state: dict) -> None:
        self._event = threading.Event()
        if state["set"]:
            self._event.set()

    def set(self) -> None:
        """Ask the experiment to stop after the current step."""
        self._event.set()

    def clear(self) -> None:
        """Withdraw the request, e.g. before reusing the signal for another experiment."""
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def check(self, policy: Any, env: Any) -> bool:
        return self._event.is_set()

    def __repr__(self) -> str:
        return f"StopSignal(set={self._event.is_set()})"


class _Combination(StopCondition):
    def __init__(self, *conditions: StopCondition) -> None:
        name = type(self).__name__
        if not conditions:
            raise ValueError(f"{name} needs at least one stop condition, got none")
        for condition in conditions:
            if not isinstance(condition, StopCondition):
                raise TypeError(
                    f"{name} takes StopCondition instances, got {condition!r} of type "
                    f"{type(condition).__name__}; wrap it, e.g. StopAfterNSteps(n), or subclass "
                    "stagerl.StopCondition"
                )
        self.conditions: tuple[StopCondition, ...] = conditions

    def _check_every_member(self, policy: Any, env: Any) -> list[bool]:
        # A list, not a generator: any()/all() would short-circuit and freeze later counters.
        return [bool(condition.check(policy, env)) for condition in self.conditions]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(map(repr, self.conditions)) + ")"


class StopIfAny(_Combination):
    """True when any member is; every member is checked on every call, so all counters advance.

    Example:
        >>> import stagerl as rl
        >>> stop = rl.StopIfAny(rl.StopAfterNSteps(2, progress=False),
        ...                     rl.StopAfterNSteps(3, progress=False))
        >>> [stop.check(None, None) for _ in range(2)], stop.conditions[1].step
        ([False, True], 2)
    """

    def check(self, policy: Any, env: Any) -> bool:
        return any(self._check_every_member(policy, env))


class StopIfAll(_Combination):
    """True when every member is; every member is checked on every call.

    Example:
        >>> import stagerl as rl
        >>> stop = rl.StopIfAll(rl.StopAfterNSteps(2, progress=False),
        ...                     rl.StopAfterNSteps(3, progress=False))
        >>> [stop.check(None, None) for _ in range(3)]
        [False, False, True]
    """

    def check(self, policy: Any, env: Any) -> bool:
        return all(self._check_every_member(policy, env))
