"""Watching a run: a progress bar in terminals and notebooks, summary lines everywhere else."""

from __future__ import annotations

import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stagerl.core.episodes import Episode
from stagerl.logging.base import LoggingHook, ended_in_env, shows_progress
from trajectories.checks import require_positive_int

__all__ = ["ProgressBar", "ConsoleSummary"]


def _check_total(owner: str, total: Any) -> None:
    if total is not None:
        require_positive_int(owner, "total", total)


@dataclass
class ProgressBar(LoggingHook):
    """A tqdm bar over env steps (``tqdm.auto``: a widget in notebooks, with the ``notebook``
    extra, ``pip install 'stagerl[notebook]'``, which brings ipywidgets) showing the episodes
    finished, the mean return of the last ``window`` of them and the steps per second.

    ``total`` is the run's length in env steps (a bar to it), or ``None`` (a counter). The bar
    is redrawn every ``max(1, min(1000, total // 100))`` env steps (1000 without a total), not
    every step, and closed at PostExperiment. Drawn unless the environment variable ``CI`` is
    set. Give the stop condition ``progress=False`` so that it draws no bar of its own.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.logging import ProgressBar
        >>> bar = ProgressBar(total=200)
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...            rl.StopAfterNSteps(200, progress=False), bar)  # doctest: +SKIP
    """

    total: int | None = None
    window: int = 20

    transient = ("_bar",)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_total("ProgressBar", self.total)
        require_positive_int("ProgressBar", "window", self.window)
        self.recent: deque = deque(maxlen=self.window)
        self._bar: Any = None
        self._shown_episodes = -1

    def tick_every(self) -> int:
        return max(1, min(1000, self.total // 100)) if self.total else 1000

    def start(self, policy: Any, env: Any) -> None:
        if self._bar is None and shows_progress():
            from tqdm.auto import tqdm  # imported on first use: tqdm.auto probes for a notebook

            self._bar = tqdm(total=self.total, initial=min(self.env_step, self.total or
                                                           self.env_step),
                             unit="step", unit_scale=True, dynamic_ncols=True)

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if ended_in_env(episode):
            self.recent.append(episode.total_reward)

    def on_tick(self) -> None:
        bar = self._bar
        if bar is None:
            return
        if self.episodes != self._shown_episodes and self.recent:
            self._shown_episodes = self.episodes
            bar.set_postfix_str(f"episodes {self.episodes:,}, return "
                                f"{statistics.fmean(self.recent):.4g}", refresh=False)
        shown = self.env_step if self.total is None else min(self.env_step, self.total)
        bar.update(shown - bar.n)

    def finish(self, policy: Any, env: Any) -> None:
        if self._bar is not None:
            self.on_tick()
            self._bar.close()
            self._bar = None


@dataclass
class ConsoleSummary(LoggingHook):
    """Prints one summary line every ``every_n_steps`` env steps and one at the end: for runs
    without a terminal (CI, batch jobs, ``nohup``), where a progress bar is noise.

    A line holds the env steps (of ``total`` when given), the episodes finished, the mean return
    of the last ``window``, the steps per second and the latest value of every scalar reported
    with ``rl.log_scalar`` since the line before. ``file`` defaults to standard output. A copy
    (pickle, a checkpoint) writes to standard output, or to standard error when ``file`` was
    ``sys.stderr``: an open file is not data to copy.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.logging import ConsoleSummary
        >>> hook = ConsoleSummary(every_n_steps=4, total=8)
        >>> hook.clock = lambda: hook.env_step / 1000   # a clock of 1 ms per env step
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...            rl.StopAfterNSteps(8, progress=False), hook)
        env steps 4/8 | episodes 1 | return 1 (mean of last 1) | 1,000 steps/s
        env steps 8/8 | episodes 2 | return 0 (mean of last 2) | 1,000 steps/s
        done: env steps 8/8 | episodes 3 | return 0 (mean of last 2) | 1,000 steps/s
    """

    every_n_steps: int = 10_000
    total: int | None = None
    window: int = 20
    file: Any = None
    clock: Callable[[], float] = time.perf_counter

    listens_to_scalars = True
    transient = ("file",)

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive_int("ConsoleSummary", "every_n_steps", self.every_n_steps)
        _check_total("ConsoleSummary", self.total)
        require_positive_int("ConsoleSummary", "window", self.window)
        self.recent: deque = deque(maxlen=self.window)
        self.latest: dict[str, float] = {}
        self._to_stderr = False  # a copy's file: the stream itself is not copied

    def tick_every(self) -> int:
        return self.every_n_steps

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if ended_in_env(episode):
            self.recent.append(episode.total_reward)

    def on_scalar(self, name: str, value: float, step: int) -> None:
        self.latest[name] = value

    def on_tick(self) -> None:
        self._print("")

    def finish(self, policy: Any, env: Any) -> None:
        self._print("done: ")

    def line(self) -> str:
        """The summary line for now."""
        steps = f"{self.env_step:,}" + (f"/{self.total:,}" if self.total else "")
        parts = [f"env steps {steps}", f"episodes {self.episodes:,}"]
        if self.recent:
            parts.append(f"return {statistics.fmean(self.recent):.4g} (mean of last "
                         f"{len(self.recent)})")
        elapsed = self.wall_time()
        if elapsed > 0:
            parts.append(f"{self.env_step / elapsed:,.0f} steps/s")
        parts += [f"{name} {value:.4g}" for name, value in sorted(self.latest.items())]
        return " | ".join(parts)

    def _print(self, prefix: str) -> None:
        file = self.file or (sys.stderr if self._to_stderr else sys.stdout)
        print(prefix + self.line(), file=file, flush=True)
        self.latest.clear()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_to_stderr"] = self.file is sys.stderr or (self.file is None and
                                                          self._to_stderr)
        return state
