"""TensorBoardLogger: episodes, speed and reported scalars under CleanRL's tag names."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagerl.core.episodes import Episode
from stagerl.logging.base import LoggingHook, ended_in_env
from trajectories.checks import require_positive_int

__all__ = ["TensorBoardLogger", "tensorboard_available", "TENSORBOARD_MISSING"]

#: What to do when the tensorboard package is missing.
TENSORBOARD_MISSING = "tensorboard is not installed: pip install 'stagerl[tensorboard]'"


def tensorboard_available() -> bool:
    """Whether the tensorboard package imports (its top module alone: a few milliseconds)."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class TensorBoardLogger(LoggingHook):
    """Writes TensorBoard event files in ``logdir`` with the tags CleanRL writes.

    ``charts/episodic_return`` and ``charts/episodic_length`` for every episode the env ended
    (terminated or truncated; an episode cut by the stop is left out), at the env step it ended;
    ``charts/SPS`` (env steps per second since the start) every ``sps_every`` env steps; every
    scalar reported with ``rl.log_scalar`` under its own name (``losses/td_loss``,
    ``charts/epsilon``, ``eval/return_mean`` ...). The writer is flushed and closed at
    PostExperiment, also after an exception or Ctrl-C. Needs the tensorboard package
    (``pip install 'stagerl[tensorboard]'``; not torch's writer, nor TensorFlow): without it
    construction raises ``ImportError``. The event file is opened at PreExperiment. Each event
    (the scalars of one step) costs about 30 µs: report per-update scalars every so many
    updates, not on every gradient step.

    A copy (pickle, a checkpoint) keeps the counts and the events of the last env step, not the
    writer. Started again after it has logged (a run resumed from a checkpoint of env step
    ``k``), it opens a new event file, writes TensorBoard's ``SessionLog(START)`` at step ``k``
    (on loading, TensorBoard drops the events of step ``k`` and later from the files before: a
    killed process may have written them after the checkpoint) and writes again the events of
    step ``k`` that came before the copy.

    Example:
        >>> import tempfile
        >>> import stagerl as rl
        >>> from stagerl.logging import TensorBoardLogger
        >>> logdir = tempfile.mkdtemp()
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(3, progress=False), TensorBoardLogger(logdir))
        >>> hook.episodes
        3
    """

    logdir: str | Path
    sps_every: int = 1000
    flush_seconds: int = 10
    clock: Callable[[], float] = time.perf_counter

    listens_to_scalars = True
    transient = ("_writer",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.logdir, (str, Path)):
            raise TypeError(f"TensorBoardLogger needs a directory path as logdir, got "
                            f"{self.logdir!r}")
        require_positive_int("TensorBoardLogger", "sps_every", self.sps_every)
        require_positive_int("TensorBoardLogger", "flush_seconds", self.flush_seconds)
        if not tensorboard_available():
            raise ImportError(f"TensorBoardLogger: {TENSORBOARD_MISSING}")
        # Imported at construction (about 0.3 s), not inside the run it logs; the writer keeps
        # the classes (protobuf classes are not data a checkpoint holds).
        import tensorboard.compat.proto.event_pb2  # noqa: F401
        import tensorboard.compat.proto.summary_pb2  # noqa: F401

        self._writer: _EventFile | None = None
        # The events written at env step >= _kept_at, as (step, wall time, {tag: value}): a
        # resumed copy writes them again after its START.
        self._kept: list[tuple[int, float, dict[str, float]]] = []
        self._kept_at = 0

    def start(self, policy: Any, env: Any) -> None:
        if self._writer is None:
            self._writer = _EventFile(Path(self.logdir), self.flush_seconds)
            if self.env_step > 0:
                self._writer.write_start(self.env_step)
                for step, wall_time, scalars in self._kept_events():
                    self._writer.write_scalars(step, scalars, wall_time)

    def add_scalars(self, step: int, scalars: dict[str, float]) -> None:
        """Write ``{tag: value}`` at env step ``step``, in one event (about 15 µs, mostly
        tensorboard's checksum in Python, whatever the event holds)."""
        wall_time = time.time()
        self._writer.write_scalars(step, scalars, wall_time)
        if step >= self.env_step:
            if self._kept_at != self.env_step:
                self._kept = self._kept_events()
            self._kept.append((step, wall_time, dict(scalars)))

    def _kept_events(self) -> list[tuple[int, float, dict[str, float]]]:
        """The kept events of env step ``env_step`` and later."""
        self._kept_at = self.env_step
        return [event for event in self._kept if event[0] >= self.env_step]

    def tick_every(self) -> int:
        return self.sps_every

    def on_tick(self) -> None:
        elapsed = self.wall_time()
        if elapsed > 0:
            self.add_scalars(self.env_step, {"charts/SPS": int(self.env_step / elapsed)})

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if ended_in_env(episode):
            self.add_scalars(self.env_step, {"charts/episodic_return": episode.total_reward,
                                             "charts/episodic_length": episode.length})

    def on_scalar(self, name: str, value: float, step: int) -> None:
        self.add_scalars(step, {name: value})

    def _read_scalars(self) -> None:
        # Consecutive scalars of one step go in one event (a name seen twice starts another).
        groups: list[tuple[int, dict[str, float]]] = []
        for name, value, step in self._listener.drain():
            step = self.env_step if step is None else step
            if not groups or groups[-1][0] != step or name in groups[-1][1]:
                groups.append((step, {}))
            groups[-1][1][name] = value
        for step, scalars in groups:
            self.add_scalars(step, scalars)

    def finish(self, policy: Any, env: Any) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def __getstate__(self) -> dict:
        self._kept = self._kept_events()
        return super().__getstate__()


class _EventFile:
    """A TensorBoard event file written in the caller's thread.

    tensorboard's own ``EventFileWriter`` hands every event to a writer thread; at a few events
    per hundred steps, waking that thread and passing the GIL back and forth cost about 100 µs
    an event, several times the work. Here records go into the file's buffer and reach the
    disk every ``flush_seconds`` and at :meth:`close`.
    """

    _count = 0  # tells apart the files one process opens within a second

    def __init__(self, logdir: Path, flush_seconds: float) -> None:
        from tensorboard.compat.proto.event_pb2 import Event, SessionLog
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.record_writer import RecordWriter

        self._event, self._session_log, self._summary = Event, SessionLog, Summary
        logdir.mkdir(parents=True, exist_ok=True)
        _EventFile._count += 1
        name = (f"events.out.tfevents.{_stamp(logdir):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{_EventFile._count}")
        self.path = logdir / name
        self._file = self.path.open("wb")
        self._records = RecordWriter(self._file)
        self._flush_seconds = flush_seconds
        self._flushed = time.monotonic()
        self.write(Event(wall_time=time.time(), file_version="brain.Event:2"))
        self.flush()

    def write_scalars(self, step: int, scalars: dict[str, float], wall_time: float) -> None:
        """One event holding ``{tag: value}`` at ``step``."""
        summary = self._summary
        values = [summary.Value(tag=tag, simple_value=value) for tag, value in scalars.items()]
        self.write(self._event(wall_time=wall_time, step=step, summary=summary(value=values)))

    def write_start(self, step: int) -> None:
        """TensorBoard's mark of a restart at ``step``: loading the directory, it drops the
        events of ``step`` and later read before this one (from the files named before)."""
        self.write(self._event(wall_time=time.time(), step=step,
                               session_log=self._session_log(status=self._session_log.START)))

    def write(self, event: Any) -> None:
        self._records.write(event.SerializeToString())
        if time.monotonic() - self._flushed >= self._flush_seconds:
            self.flush()

    def flush(self) -> None:
        self._file.flush()
        self._flushed = time.monotonic()

    def close(self) -> None:
        self._file.close()


def _stamp(logdir: Path) -> int:
    """The time in an event file's name: now, or later than every event file in ``logdir``
    (TensorBoard reads them in name order, and a restart's file must come after the others)."""
    stamp = int(time.time())
    for path in logdir.glob("events.out.tfevents.*"):
        field = path.name.split(".")[3]
        if field.isdigit():
            stamp = max(stamp, int(field) + 1)
    return stamp
