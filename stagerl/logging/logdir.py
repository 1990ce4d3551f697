"""A run's log directory: where it goes, when it may be written, what it holds.

::

    runs/<experiment>/<YYYYmmdd-HHMMSS>-seed<S>/
        config.json            the resolved configuration (experiment, seed, device, steps, ...)
        episodes.csv           one row per finished episode          (CSVLogger)
        updates.csv            one row per reported scalar           (CSVLogger)
        events.out.tfevents.*  TensorBoard event files               (TensorBoardLogger)
        learning_curve.png     the learning curve                    (PlotLearningCurve)
        summary.json           the final evaluation, speed and versions

See ``docs/logging.md``.
"""

from __future__ import annotations

import json
import math
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["default_logdir", "check_logdir", "open_logdir", "write_json", "versions",
           "RUN_FILES", "LogdirError"]

#: The files a run writes (TensorBoard's event files are ``events.out.tfevents.*``); with
#: ``overwrite`` these, and only these, are removed first.
RUN_FILES = ("config.json", "episodes.csv", "updates.csv", "learning_curve.png", "summary.json")
_EVENT_FILES = "events.out.tfevents.*"


class LogdirError(ValueError):
    """A log directory that may not be written (it holds a run, or is not a directory)."""


def default_logdir(experiment: str, seed: int, root: str | Path = "runs") -> Path:
    """``runs/<experiment>/<timestamp>-seed<S>``, with ``-2``, ``-3``, ... added when a run of
    the same second took that name."""
    base = Path(root) / experiment / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def check_logdir(logdir: str | Path, overwrite: bool = False) -> Path:
    """``logdir`` as a Path if a run may write there: it does not exist, is an empty directory,
    or ``overwrite`` is set; else :class:`LogdirError` (a ``ValueError``). Writes nothing."""
    path = Path(logdir)
    if path.exists() and not path.is_dir():
        raise LogdirError(f"log directory {str(path)!r} is a file; choose another --logdir")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise LogdirError(f"log directory {str(path)!r} already exists and is not empty; "
                          "choose another --logdir, or pass --overwrite to replace its run")
    return path


def open_logdir(logdir: str | Path, overwrite: bool = False) -> Path:
    """Check ``logdir`` (:func:`check_logdir`), create it, and with ``overwrite`` remove the
    files of the run it held (:data:`RUN_FILES` and TensorBoard's event files; nothing else)."""
    path = check_logdir(logdir, overwrite)
    path.mkdir(parents=True, exist_ok=True)
    if overwrite:
        for name in RUN_FILES:
            (path / name).unlink(missing_ok=True)
        for events in path.glob(_EVENT_FILES):
            events.unlink()
    return path


def write_json(path: str | Path, data: dict) -> None:
    """``data`` as indented JSON (infinite and NaN floats as strings, tuples as lists)."""
    Path(path).write_text(json.dumps(_jsonable(data), indent=2) + "\n")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def versions() -> dict[str, str | None]:
    """The versions of stagerl, torch, gymnasium, numpy and Python (``None``: not installed)."""
    found: dict[str, str | None] = {}
    for package in ("stagerl", "torch", "gymnasium", "numpy"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    found["python"] = platform.python_version()
    return found
