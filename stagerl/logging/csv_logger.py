"""CSVLogger: every episode and every reported scalar, one CSV row each."""

from __future__ import annotations

import csv
import os
import time
import warnings
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

    A copy (pickle, a checkpoint) flushes the files and keeps how many data rows each holds.
    Started again (a run resumed from a checkpoint, maybe after the process that wrote on was
    killed), it first cuts each file back to its header and that many rows, so that the rows
    written after the copy are not there twice; a file found with fewer rows is warned about
    and appended to.

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
        # The data rows each file holds (None: not started yet, the files are not read).
        self._episode_rows: int | None = None
        self._update_rows: int | None = None

    @property
    def episodes_path(self) -> Path:
        return Path(self.logdir) / "episodes.csv"

    @property
    def updates_path(self) -> Path:
        return Path(self.logdir) / "updates.csv"

    def start(self, policy: Any, env: Any) -> None:
        Path(self.logdir).mkdir(parents=True, exist_ok=True)
        self._close()
        self._episode_rows = _cut(self.episodes_path, self._episode_rows)
        self._update_rows = _cut(self.updates_path, self._update_rows)
        episodes, self._episodes = _open(self.episodes_path, self.episode_columns(env))
        scalars, self._scalars = _open(self.updates_path, SCALAR_COLUMNS)
        self._files = [episodes, scalars]
        self._flushed = self.clock()

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        now = self.wall_time()
        self._episodes.writerow((self.env_step, self.episodes, episode.lane,
                                 repr(episode.total_reward), episode.length,
                                 int(episode.terminated), int(episode.truncated), _seconds(now),
                                 *self.episode_values(episode, env)))
        self._episode_rows += 1
        self._maybe_flush()

    def episode_columns(self, env: Any) -> tuple[str, ...]:
        """The header of ``episodes.csv``: ``EPISODE_COLUMNS``, then any a subclass adds."""
        return EPISODE_COLUMNS

    def episode_values(self, episode: Episode, env: Any) -> tuple:
        """The values of the columns a subclass adds to an episode's row (none here)."""
        return ()

    def on_scalar(self, name: str, value: float, step: int) -> None:
        self._scalars.writerow((step, name, repr(value), _seconds(self.wall_time())))
        self._update_rows += 1
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

    def __getstate__(self) -> dict:
        # What the row counts say must be on disk: a copy is resumed from them.
        for file in self._files or ():
            file.flush()
        return super().__getstate__()


def _cut(path: Path, rows: int | None) -> int:
    """Cut the CSV file at ``path`` back to its header and ``rows`` data rows (``None``: keep
    them all); returns the data rows it holds. Fewer than ``rows``: a warning, nothing cut."""
    if not path.is_file():
        if rows:
            _warn_missing(path, 0, rows)
        return 0
    found, end = -1, 0  # the first record is the header
    with path.open("rb") as file:
        def lines():
            nonlocal end
            for line in file:
                end += len(line)  # csv pulls a record's lines and no more: end is its end
                yield line.decode("utf-8")

        for _ in csv.reader(lines()):
            found += 1
            if found == rows:
                break
    found = max(found, 0)
    if rows is None:
        return found
    if found < rows:
        _warn_missing(path, found, rows)
        return found
    if path.stat().st_size > end:
        os.truncate(path, end)
    return rows


def _warn_missing(path: Path, found: int, rows: int) -> None:
    warnings.warn(f"{path} holds {found} data rows, fewer than the {rows} it held when this "
                  "logger was saved (was it removed or cut?); its new rows are appended to "
                  "what is there", RuntimeWarning, stacklevel=2)


def _open(path: Path, columns: tuple[str, ...]) -> tuple[Any, Any]:
    new = not path.exists() or path.stat().st_size == 0
    file = path.open("a", newline="", encoding="utf-8")
    writer = csv.writer(file, lineterminator="\n")
    if new:
        writer.writerow(columns)
    return file, writer


def _seconds(t: float) -> str:
    return repr(round(t, 6))
