"""Continuing a run in its log directory: what may be resumed, checked before anything runs.

A run's log directory holds ``config.json`` (the experiment, seed, steps and hyper-parameters it
was started with) and ``checkpoints/step-N``. Resuming continues from the newest checkpoint with
the configuration the run was started with: a hyper-parameter or seed given again must be the
one the run has, and the checkpoint must be of that experiment and configuration; each
difference is refused with the keys that differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagerl.checkpoints import CheckpointError, config_differences, find, read_manifest
from stagerl.experiments.registry import configure

__all__ = ["ResumeRequest", "check_resume", "CHECKPOINTS"]

#: Where a run's checkpoints go, inside its log directory.
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class ResumeRequest:
    """A checked resume: the checkpoint to continue from and the run's configuration."""

    checkpoint: Path
    config: Any
    steps: int
    seed: int
    at_step: int
    saved: dict  # the run's config.json


def check_resume(name: str, logdir: str | Path | None, steps: int | None, seed: int | None,
                 overrides: dict[str, Any]) -> ResumeRequest:
    """Check that the run in ``logdir`` may be continued to ``steps`` env steps in all (default:
    the steps it was started with); ``ValueError`` naming what differs. Writes nothing."""
    if logdir is None:
        raise ValueError("resuming continues the run in a log directory: pass its --logdir DIR")
    logdir = Path(logdir)
    saved = _read_config(name, logdir)
    if saved.get("experiment") != name:
        raise ValueError(f"{logdir} holds a run of {saved.get('experiment')!r}, not {name!r}; "
                         f"resume it with stagerl run {saved.get('experiment')} --logdir "
                         f"{logdir} --resume")
    if seed is not None and seed != saved.get("seed"):
        raise ValueError(f"{logdir} holds the run with seed {saved.get('seed')}, not {seed}; "
                         "leave --seed out to resume it")
    run_config = saved.get("config")
    if not isinstance(run_config, dict):
        raise ValueError(f"{logdir / 'config.json'} has no hyper-parameters (config); it was not "
                         "written by a stagerl run")
    given = {k: v for k, v in overrides.items() if k != "steps"}
    differing = config_differences({k: run_config.get(k) for k in given}, given)
    if differing:
        raise ValueError(f"{logdir} holds a run with other hyper-parameters: "
                         f"{_listed(differing, 'the run', 'given')}; leave them out to resume "
                         "it, or start a new run in another --logdir")
    try:
        checkpoint = find(logdir / CHECKPOINTS)
        manifest = read_manifest(checkpoint)
    except CheckpointError as error:
        raise ValueError(f"cannot resume the run in {logdir}: {error}") from None
    info = manifest.get("info") or {}
    if info.get("experiment") != name or info.get("seed") != saved.get("seed"):
        raise ValueError(f"{checkpoint} is a checkpoint of {info.get('experiment')!r} seed "
                         f"{info.get('seed')!r}, but {logdir / 'config.json'} is of {name!r} "
                         f"seed {saved.get('seed')!r}; nothing was resumed")
    differing = config_differences(info.get("config"), run_config, ignore=("steps",))
    if differing:
        raise ValueError(f"{checkpoint} was saved with other hyper-parameters than "
                         f"{logdir / 'config.json'} holds: "
                         f"{_listed(differing, 'the checkpoint', 'config.json')}; nothing was "
                         "resumed")
    at_step = (manifest.get("summary") or {}).get("env_steps")
    if isinstance(at_step, bool) or not isinstance(at_step, int):
        raise ValueError(f"{checkpoint}: its manifest does not say at which env step it was "
                         "written (summary.env_steps); it is not a checkpoint of a stagerl run")
    steps = saved.get("steps") if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got steps={steps!r}")
    if steps < at_step:
        raise ValueError(f"the run in {logdir} is at env step {at_step:,}, beyond --steps "
                         f"{steps:,}; resume with --steps of at least {at_step}")
    config = configure(name, **{**run_config, "steps": steps})
    return ResumeRequest(checkpoint, config, steps, saved["seed"], at_step, saved)


def _read_config(name: str, logdir: Path) -> dict:
    path = logdir / "config.json"
    if not path.is_file():
        raise ValueError(f"{logdir} holds no run to resume (no config.json); start one with "
                         f"stagerl run {name} --logdir {logdir}")
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not readable JSON ({error}); nothing was resumed") from None
    if not isinstance(saved, dict):
        raise ValueError(f"{path} does not hold a run's configuration; nothing was resumed")
    return saved


def _listed(differing: dict, first: str, second: str) -> str:
    return ", ".join(f"{key} ({first}: {a!r}, {second}: {b!r})"
                     for key, (a, b) in differing.items())
