"""What every logger hook does: count env steps, see finished episodes and reported scalars.

A :class:`LoggingHook` is an :class:`~stagerl.EpisodeHook` (``on_episode`` sees every finished
episode of every sub-env) that also keeps ``env_step`` (env steps so far: ``num_envs`` per act on
a vector env) and ``episodes`` (episodes finished so far), calls ``on_scalar`` for every scalar
an algorithm reports with ``rl.log_scalar`` (when ``listens_to_scalars``) and ``on_tick`` every
``tick_every`` env steps. ``start`` runs at PreExperiment and ``finish`` at PostExperiment, also
when the run was left by an exception or Ctrl-C. See ``docs/logging.md``.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, ClassVar

from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.episodes import Episode, EpisodeHook
from stagerl.core.stages import PostExperimentStage, PreExperimentStage
from stagerl.core.stop_conditions import steps_per_act
from stagerl.logging.scalars import ScalarListener

__all__ = ["LoggingHook", "ended_in_env", "shows_progress"]


def ended_in_env(episode: Episode) -> bool:
    """Whether the env ended the episode (terminated or truncated), not the stop condition or a
    reset condition: curves, means and TensorBoard count only these."""
    return episode.terminated or episode.truncated


def shows_progress() -> bool:
    """Progress bars are drawn unless the environment variable ``CI`` is set (a CI log is not a
    terminal, and a bar redrawn there is noise)."""
    return "CI" not in os.environ


class LoggingHook(EpisodeHook):
    """Base class of logger hooks (see the module docstring).

    Subclasses are dataclasses; one that defines ``__post_init__`` calls this one's first.
    ``clock`` (an attribute or a dataclass field, default ``time.perf_counter``) reads the
    time, and ``wall_time()`` is the seconds since the first PreExperiment. A copy (pickle,
    ``deepcopy``, a checkpoint) keeps the counts and the seconds elapsed so far, and drops what
    ``transient`` names (open files, writers): started again, in this process or another, it
    goes on counting from there.

    Example:
        >>> from dataclasses import dataclass, field
        >>> import stagerl as rl
        >>> from stagerl.logging import LoggingHook, log_scalar
        >>> @dataclass
        ... class Losses(LoggingHook):
        ...     listens_to_scalars = True
        ...     seen: list = field(default_factory=list)
        ...     def on_scalar(self, name, value, step):
        ...         self.seen.append((name, value, step))
        >>> hook = Losses()
        >>> log_scalar("losses/x", 1.0)                     # no run: nobody listens
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), hook=hook)
        >>> hook.seen, hook.episodes, hook.env_step > 0
        ([], 1, True)
    """

    #: Whether ``on_scalar`` receives the scalars reported with ``rl.log_scalar``.
    listens_to_scalars: ClassVar[bool] = False
    #: Attributes a copy drops (set to ``None``); ``start`` rebuilds them.
    transient: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        self.env_step = 0
        self.episodes = 0
        self._listener = ScalarListener() if self.listens_to_scalars else None
        # Seconds counted by the copies this hook was made from: a clock reading means nothing
        # in another process, so a copy keeps elapsed seconds and restarts the clock.
        self._elapsed = 0.0
        self._started: float | None = None  # clock() at this object's first PreExperiment
        self._per_act = 1
        self._next_tick = math.inf
        self._track: Any = None

    # ---- what subclasses define ---------------------------------------------------------

    def start(self, policy: Any, env: Any) -> None:
        """PreExperiment: open files, writers, bars."""

    def on_scalar(self, name: str, value: float, step: int) -> None:
        """A reported scalar; ``step`` is the env step it belongs to."""

    def tick_every(self) -> int | None:
        """Env steps between ``on_tick`` calls; ``None`` (the default) for none."""
        return None

    def on_tick(self) -> None:
        """Called once ``env_step`` reaches each multiple of ``tick_every()``."""

    def finish(self, policy: Any, env: Any) -> None:
        """PostExperiment (also after an exception): flush and close."""

    # ---- the stages -----------------------------------------------------------------------

    def wall_time(self) -> float:
        """Seconds since the first PreExperiment of this hook, counted on across copies (the
        time between a copy and its start is not counted)."""
        if self._started is None:
            return self._elapsed
        return self._elapsed + self.clock() - self._started

    def clock(self) -> float:  # a dataclass field named clock replaces this default
        return time.perf_counter()

    def pre_experiment(self, policy: Any, env: Any) -> None:
        if self._started is None:
            self._started = self.clock()
        self._per_act = steps_per_act(env)
        every = self.tick_every()
        self._next_tick = math.inf if every is None else (self.env_step // every + 1) * every
        if self._listener is not None:
            self._listener.open()
        self.start(policy, env)

    def pre_episode(self, policy: Any, env: Any) -> None:
        self._track = self.tracker
        self._track.start(env)
        self._per_act = steps_per_act(env)

    def post_act(self, policy: Any, env: Any) -> None:
        self.env_step += self._per_act
        for episode in self._track.step(env):  # a vector env's sub-envs end at PostAct
            self.episodes += 1
            self.on_episode(episode, policy, env)
        listener = self._listener
        if listener is not None and listener.received:
            self._read_scalars()
        if self.env_step >= self._next_tick:
            self._tick()

    def post_episode(self, policy: Any, env: Any) -> None:
        for episode in self._track.finish(env):
            self.episodes += 1
            self.on_episode(episode, policy, env)
        if self._listener is not None and self._listener.received:
            self._read_scalars()

    def post_experiment(self, policy: Any, env: Any) -> None:
        try:
            if self._listener is not None:
                self._listener.close()
                self._read_scalars()
        finally:
            self.finish(policy, env)

    def _tick(self) -> None:
        every = self.tick_every()
        self._next_tick = math.inf if every is None else (self.env_step // every + 1) * every
        self.on_tick()

    def _read_scalars(self) -> None:
        for name, value, step in self._listener.drain():
            self.on_scalar(name, value, self.env_step if step is None else step)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in self.transient:
            state[name] = None
        state["_elapsed"], state["_started"] = self.wall_time(), None
        return state


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_logging_hook_pre_experiment(hook: LoggingHook, stage: PreExperimentStage, policy, env):
    hook.pre_experiment(policy, env)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_logging_hook_post_experiment(hook: LoggingHook, stage: PostExperimentStage, policy,
                                       env):
    hook.post_experiment(policy, env)
