"""Running a named experiment: check everything, train with the logging hooks, evaluate, write
the summary.

:func:`prepare` checks the whole request (experiment, hyper-parameters, steps, seed, device, log
directory, TensorBoard) and builds the env and the agent, writing nothing; :func:`execute` runs
what it prepared. :func:`run` does both. The command line calls them apart, so that bad input is
one line and exit status 2 with nothing written.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import stagerl as rl
from stagerl.experiments.registry import (
    EVAL_EPISODES,
    EVAL_SEED_OFFSET,
    NamedExperiment,
    configure,
    load,
)
from stagerl.logging import (
    ConsoleSummary,
    CSVLogger,
    Evaluate,
    PlotLearningCurve,
    ProgressBar,
    TensorBoardLogger,
    tensorboard_available,
)
from stagerl.logging.base import shows_progress
from stagerl.logging.logdir import check_logdir, open_logdir, versions, write_json
from stagerl.logging.plotting import in_notebook
from stagerl.logging.tensorboard_logger import TENSORBOARD_MISSING

__all__ = ["run", "prepare", "execute", "PreparedRun", "make_eval_env", "default_hooks",
           "EVAL_EVERY_N_STEPS", "EVAL_EPISODES_DURING"]

#: The default hooks evaluate every this many env steps ...
EVAL_EVERY_N_STEPS = 10_000
#: ... this many deterministic episodes (the final evaluation runs ``EVAL_EPISODES``).
EVAL_EPISODES_DURING = 5


def make_eval_env(experiment: NamedExperiment, config: Any, seed: int) -> Any:
    """The experiment's evaluation env: its own ``make_eval_env``, else a single ``GymEnv``."""
    if experiment.make_eval_env is not None:
        return experiment.make_eval_env(config, seed)
    return rl.GymEnv(config.env_id, seed=seed)


@dataclass
class PreparedRun:
    """A checked request with its env and agent built; nothing written yet."""

    name: str
    experiment: NamedExperiment
    config: Any
    steps: int
    seed: int
    device: Any
    logdir: Path | None
    overwrite: bool
    tensorboard: bool
    progress: bool
    env: Any
    agent: Any
    notices: list[str]


def prepare(name: str, steps: int | None = None, seed: int = 0, device: Any = "auto",
            logdir: str | Path | None = None, *, progress: bool = True,
            overwrite: bool = False, tensorboard: bool | None = None,
            overrides: dict[str, Any] | None = None) -> PreparedRun:
    """Check a run request and build its env and agent; ``ValueError`` or ``TypeError`` (with
    the fix) for bad input. Writes nothing (the log directory is only looked at).

    ``tensorboard``: ``None`` writes TensorBoard logs when the package is installed (else a
    one-line notice), ``True`` requires it, ``False`` skips them.
    """
    experiment = load(name)
    config = configure(name, **(overrides or {}))
    if steps is None:
        steps = config.steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got steps={steps!r}")
    config = dataclasses.replace(config, steps=steps)  # schedules follow the run's length
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got seed={seed!r}")
    notices = []
    if logdir is not None:
        logdir = check_logdir(logdir, overwrite)
    if tensorboard and logdir is None:
        raise ValueError("TensorBoard logs need a log directory: pass logdir=")
    if tensorboard and not tensorboard_available():
        raise ValueError(TENSORBOARD_MISSING)
    if tensorboard is None:
        tensorboard = logdir is not None and tensorboard_available()
        if logdir is not None and not tensorboard:
            notices.append(f"no TensorBoard logs: {TENSORBOARD_MISSING}")
    import torch

    from stagerl.utils.devices import resolve_device  # imports torch: not on `stagerl list`

    device = resolve_device(device)

    torch.manual_seed(seed)  # network initialisation; policies own their sampling generators
    env = experiment.make_env(config, seed)
    agent = experiment.make_agent(config, env, seed, device)
    return PreparedRun(name, experiment, config, steps, seed, device, logdir, overwrite,
                       bool(tensorboard), progress, env, agent, notices)


def default_hooks(prepared: PreparedRun) -> list[rl.Hook]:
    """Progress (a bar in terminals and notebooks, else a summary line every tenth of the run)
    and, with a log directory, CSV, TensorBoard, the learning-curve plot and an evaluation of
    ``EVAL_EPISODES_DURING`` episodes every ``EVAL_EVERY_N_STEPS`` env steps."""
    hooks: list[rl.Hook] = []
    if prepared.progress:
        if shows_progress() and (sys.stderr.isatty() or in_notebook()):
            hooks.append(ProgressBar(total=prepared.steps))
        else:
            hooks.append(ConsoleSummary(every_n_steps=max(1, prepared.steps // 10),
                                        total=prepared.steps))
    logdir = prepared.logdir
    if logdir is not None:
        experiment, config = prepared.experiment, prepared.config
        # An env of its own, seeded as the final evaluation's: the evaluations during training
        # do not change the final one.
        eval_env = make_eval_env(experiment, config, prepared.seed + EVAL_SEED_OFFSET)
        hooks.append(Evaluate(EVAL_EVERY_N_STEPS, EVAL_EPISODES_DURING, eval_env,
                              experiment.eval_max_episode_steps))
        hooks.append(CSVLogger(logdir))
        if prepared.tensorboard:
            hooks.append(TensorBoardLogger(logdir))
        hooks.append(PlotLearningCurve(logdir / "learning_curve.png", title=prepared.name))
    return hooks


def execute(prepared: PreparedRun, hook: rl.Hook | None = None) -> dict[str, Any]:
    """Train with the default hooks (and ``hook``), evaluate, summarise; returns the summary
    (written as ``summary.json`` when there is a log directory)."""
    for notice in prepared.notices:
        print(f"stagerl: {notice}", file=sys.stderr)
    hooks = default_hooks(prepared) + ([] if hook is None else [hook])
    evaluations = next((h for h in hooks if isinstance(h, Evaluate)), None)
    logdir = prepared.logdir
    if logdir is not None:
        open_logdir(logdir, prepared.overwrite)
        write_json(logdir / "config.json", {
            "experiment": prepared.name, "seed": prepared.seed,
            "device": str(prepared.device), "steps": prepared.steps,
            "config": dataclasses.asdict(prepared.config),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        })
    stop = rl.StopAfterNSteps(prepared.steps, progress=False)
    start = time.perf_counter()
    rl.run(prepared.agent, prepared.env, stop, rl.ComposedHook(*hooks))
    wall = time.perf_counter() - start
    experiment = prepared.experiment
    eval_env = make_eval_env(experiment, prepared.config, prepared.seed + EVAL_SEED_OFFSET)
    returns = rl.evaluate(prepared.agent, eval_env, EVAL_EPISODES,
                          experiment.eval_max_episode_steps)
    summary = {
        "experiment": prepared.name,
        "seed": prepared.seed,
        "device": str(prepared.device),
        "env_steps": stop.step,
        "wall_seconds": wall,
        "steps_per_second": stop.step / wall if wall > 0 else float("inf"),
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_std": statistics.pstdev(returns),
        "eval_episodes": len(returns),
        "evaluations": [] if evaluations is None else [
            {"env_step": s, "return_mean": statistics.fmean(r),
             "return_std": statistics.pstdev(r)}
            for s, r in zip(evaluations.steps, evaluations.returns, strict=True)],
        "config": dataclasses.asdict(prepared.config),
        "versions": versions(),
        "total_seconds": time.perf_counter() - start,
    }
    if logdir is not None:
        summary["logdir"] = str(logdir)
        write_json(logdir / "summary.json", summary)
    return summary


def run(name: str, steps: int | None = None, seed: int = 0, device: Any = "auto",
        logdir: str | Path | None = None, *, progress: bool = True, overwrite: bool = False,
        tensorboard: bool | None = None, hook: rl.Hook | None = None,
        **overrides: Any) -> dict[str, Any]:
    """Run experiment ``name`` for ``steps`` env steps (default: its own), then evaluate it.

    Returns the run's summary: ``experiment``, ``seed``, ``device``, ``env_steps``,
    ``wall_seconds`` (training), ``steps_per_second``, ``eval_return_mean``,
    ``eval_return_std``, ``eval_episodes`` (the final deterministic episodes on a separate
    env), ``evaluations`` (those during training), ``config`` (the resolved hyper-parameters),
    ``versions`` and ``total_seconds``. ``overrides`` replace hyper-parameters (see
    :func:`~stagerl.experiments.configure`).

    With ``logdir`` the run writes its log directory (``config.json``, ``episodes.csv``,
    ``updates.csv``, TensorBoard event files, ``learning_curve.png``, ``summary.json``; see
    ``docs/logging.md``) and evaluates every 10,000 env steps; a directory that is not empty
    is refused unless ``overwrite``. ``tensorboard``: ``None`` when installed, ``True``
    required, ``False`` never. ``progress`` shows a progress bar (a summary line every tenth
    of the run where there is no terminal). ``hook`` is added to the default hooks.
    """
    prepared = prepare(name, steps, seed, device, logdir, progress=progress,
                       overwrite=overwrite, tensorboard=tensorboard, overrides=overrides)
    return execute(prepared, hook)
