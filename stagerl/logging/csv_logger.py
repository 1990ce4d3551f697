"""CSVLogger: every episode and every reported scalar, one CSV row each."""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagerl.core.episodes import Episode
from stagerl.logging.base import LoggingHook

__all__ = ["CSVLogger", "EPISODE_COLUMNS", "SCALAR_COLUMNS"]

#: The columns of ``episodes.csv``.
EPISODE_COLUMNS = ("env_step", "episode", "sub_env", "return", "length", "terminated",
                   "truncated", "wall_time")
#: The columns of ``updates.csv``.
SCALAR_COLUMNS = ("env_step", "name", "value", "wall_time")


@dataclass
class CSVLogger(LoggingHook):
    """Writes ``episodes.csv`` and ``updates.csv`` in ``logdir`` (created if missing).

    ``episodes.csv`` has one row per finished episode of every sub-env: ``env_step`` (env steps
    when it ended), ``episode`` (1, 2, ... in the order they ended), ``sub_env``, ``return``,
    ``length``, ``terminated`` and ``truncated`` (1 or 0; both 0 for an episode cut by the stop
    or a reset condition) and ``wall_time`` (seconds since the run started). ``updates.csv`` has
    one row per scalar reported with ``rl.log_scalar``: ``env_step``, ``name``, ``value``,
    ``wall_time``. Rows are appended (a header is written to a new file only), flushed every
    ``flush_seconds`` and at PostExperiment, also after an exception.

    Example:
        >>> import tempfile, pathlib
        >>> import stagerl as rl
        >>> from stagerl.logging import CSVLogger
        >>> logdir = pathlib.Path(tempfile.mkdtemp())
        >>> _ = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...            rl.StopAfterNEpisodes(2, progress=False), CSVLogger(logdir))
        >>> lines = (logdir / "episodes.csv").read_text().splitlines()
        >>> lines[0]
        'env_step,episode,sub_env,return,length,terminated,truncated,wall_time'
        >>> len(lines)
        3
    """

    logdir: str | Path
    flush_seconds: float = 5.0
    clock: Callable[[], float] = time.perf_counter

    listens_to_scalars = True
    transient = ("_files", "_episodes", "_scalars")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.logdir, (str, Path)):
            raise TypeError(f"CSVLogger needs a directory path as logdir, got {self.logdir!r}")
        if isinstance(self.flush_seconds, bool) or not isinstance(self.flush_seconds,
                                                                  (int, float)):
            raise TypeError(f"CSVLogger: flush_seconds must be a number, got "
                            f"flush_seconds={self.flush_seconds!r}")
        self._files: list[Any] | None = None
        self._episodes: Any = None
        self._scalars: Any = None
        self._flushed = 0.0

    @property
    def episodes_path(self) -> Path:
        return Path(self.logdir) / "episodes.csv"

    @property
    def updates_path(self) -> Path:
        return Path(self.logdir) / "updates.csv"

    def start(self, policy: Any, env: Any) -> None:
        Path(self.logdir).mkdir(parents=True, exist_ok=True)
        self._close()
        episodes, self._episodes = _open(self.episodes_path, EPISODE_COLUMNS)
        scalars, self._scalars = _open(self.updates_path, SCALAR_COLUMNS)
        self._files = [episodes, scalars]
        self._flushed = self.clock()

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        now = self.wall_time()
        self._episodes.writerow((self.env_step, self.episodes, episode.lane,
                                 repr(episode.total_reward), episode.length,
                                 int(episode.terminated), int(episode.truncated), _seconds(now)))
        self._maybe_flush()

    def on_scalar(self, name: str, value: float, step: int) -> None:
        self._scalars.writerow((step, name, repr(value), _seconds(self.wall_time())))
        self._maybe_flush()

    def finish(self, policy: Any, env: Any) -> None:
        self._close()

    def _maybe_flush(self) -> None:
        now = self.clock()
        if now - self._flushed >= self.flush_seconds:
            self._flushed = now
            for file in self._files:
                file.flush()

    def _close(self) -> None:
        files, self._files = self._files, None
        for file in files or ():
            file.close()


def _open(path: Path, columns: tuple[str, ...]) -> tuple[Any, Any]:
    new = not path.exists() or path.stat().st_size == 0
    file = path.open("a", newline="")
    writer = csv.writer(file, lineterminator="\n")
    if new:
        writer.writerow(columns)
    return file, writer


def _seconds(t: float) -> str:
    return repr(round(t, 6))
