"""Continuing a run in its log directory: what may be resumed, checked before anything runs.

A run's log directory holds ``config.json`` (the experiment, seed, steps and hyper-parameters it
was started with) and ``checkpoints/step-N``. Resuming continues from the newest intact
checkpoint with the configuration the run was started with: a hyper-parameter or seed given
again must be the one the run has, and the checkpoint must be of that experiment and
configuration; each difference is refused with the keys that differ. A newest checkpoint that
is damaged (truncated, edited, crafted) is passed over for the one before it, with a notice
naming it; with none intact nothing is resumed. Both files are read as hostile: the env id they
name must be the experiment's own or a gymnasium id registered without a ``module:`` prefix
(:func:`checked_run_config`) before anything is built from it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stagerl.checkpoints import CheckpointError, config_differences, read_manifest, resume
from stagerl.checkpoints.files import step_directories
from stagerl.checkpoints.foreign import env_id_problem
from stagerl.experiments.registry import configure, get_experiment, names

__all__ = ["ResumeRequest", "check_resume", "checked_run_config", "CHECKPOINTS"]

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
    #: One line per newer checkpoint passed over because it is damaged.
    notices: list[str] = field(default_factory=list)


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
    checked_run_config(name, run_config, logdir / "config.json")
    checkpoint, manifest, notices = _newest_intact(logdir)
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
    checked_run_config(name, info.get("config"), checkpoint)
    config = configure(name, **{**run_config, "steps": steps})
    return ResumeRequest(checkpoint, config, steps, saved["seed"], at_step, saved, notices)


def checked_run_config(name: Any, config: Any, where: Any) -> str:
    """The experiment ``name`` of a run and its hyper-parameters ``config``, as read from a file
    (a checkpoint's manifest, a ``config.json``), checked before anything is built from them:
    ``name`` is a named experiment of this stagerl (returned as this stagerl spells it) and
    ``env_id`` is the experiment's own or a gymnasium id registered without a ``module:``
    prefix. ``ValueError`` naming ``where``."""
    name = next((known for known in names() if known == name), None) if isinstance(
        name, str) else None
    if name is None:
        raise ValueError(f"{where} names an experiment this stagerl does not have (stagerl "
                         "list shows them)")
    if not isinstance(config, dict):
        raise ValueError(f"{where} holds no hyper-parameters of {name}")
    if "env_id" in config:
        fields = {f.name: f for f in dataclasses.fields(get_experiment(name).config)}
        own = fields["env_id"].default if "env_id" in fields else None
        problem = env_id_problem(config["env_id"], expected=own)
        if problem is not None:
            raise ValueError(f"{where}: {problem}; nothing was built")
    return name


def _newest_intact(logdir: Path) -> tuple[Path, dict, list[str]]:
    """The newest checkpoint in ``logdir/checkpoints`` that loads whole (read through, every
    check passed; nothing is run or written), its manifest, and a notice for each newer one
    that does not."""
    found = step_directories(logdir / CHECKPOINTS)
    if not found:
        raise ValueError(f"cannot resume the run in {logdir}: no checkpoint in "
                         f"{logdir / CHECKPOINTS} (no step-N directory with a manifest.json)")
    notices = []
    for _, checkpoint in reversed(found):
        try:
            manifest = read_manifest(checkpoint)
            resume(checkpoint, map_location="cpu", restore_globals=False)
        except CheckpointError as error:
            notices.append(f"{checkpoint} is damaged and was passed over ({error})")
            continue
        if notices:
            notices[-1] += f"; resuming from {checkpoint}"
        return checkpoint, manifest, [" ".join(notices)] if notices else []
    raise ValueError(f"cannot resume the run in {logdir}: no intact checkpoint in "
                     f"{logdir / CHECKPOINTS} ({' '.join(notices)}); nothing was resumed")


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
