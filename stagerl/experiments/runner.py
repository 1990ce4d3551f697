"""Running a named experiment: check everything, train with the logging hooks, evaluate, write
the summary.

:func:`prepare` checks the whole request (experiment, hyper-parameters, steps, seed, device, log
directory, TensorBoard, a run to resume) and builds the env and the agent, writing nothing;
:func:`execute` runs what it prepared, with torch's CPU threads at the run's ``torch_threads``.
:func:`train` does both. The command line calls them apart, so that bad input is one line and
exit status 2 with nothing written.

A run with a log directory runs as a :class:`~stagerl.checkpoints.ResumableExperiment`: its
:class:`~stagerl.checkpoints.CheckpointSchedule` saves all of it to ``<logdir>/checkpoints`` every
``checkpoint_every`` env steps and at its end, Ctrl-C saves it at the end of the current step,
and ``resume=True`` continues it from its newest checkpoint exactly as if it had never stopped.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import stagerl as rl
from stagerl.experiments._resuming import CHECKPOINTS, ResumeRequest, check_resume
from stagerl.experiments.registry import (
    EVAL_EPISODES,
    EVAL_SEED_OFFSET,
    NamedExperiment,
    config_to_json,
    configure,
    evaluation_summary,
    get_experiment,
    json_value,
    make_eval_env,
)
from stagerl.experiments.settings import DEFAULT_TORCH_THREADS, torch_threads
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

__all__ = ["train", "prepare", "execute", "PreparedRun", "make_eval_env", "default_hooks",
           "EVAL_EVERY_N_STEPS", "EVAL_EPISODES_DURING", "CHECKPOINT_EVERY_N_STEPS"]

#: The default hooks evaluate every this many env steps ...
EVAL_EVERY_N_STEPS = 10_000
#: ... this many deterministic episodes (the final evaluation runs ``EVAL_EPISODES``).
EVAL_EPISODES_DURING = 5
#: A run with a log directory saves a checkpoint every this many env steps (and at its end).
CHECKPOINT_EVERY_N_STEPS = 10_000


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
    checkpoint_every: int | None = None
    resuming: ResumeRequest | None = None
    ray_workers: int | None = None
    ray_address: str | None = None


def prepare(name: str, steps: int | None = None, seed: int | None = 0, device: Any = "auto",
            logdir: str | Path | None = None, *, progress: bool = True,
            overwrite: bool = False, tensorboard: bool | None = None,
            overrides: dict[str, Any] | None = None, resume: bool = False,
            checkpoint_every: int | None = CHECKPOINT_EVERY_N_STEPS,
            ray_workers: int | None = None, ray_address: str | None = None) -> PreparedRun:
    """Check a run request and build its env and agent; ``ValueError`` or ``TypeError`` (with
    the fix) for bad input. Writes nothing (the log directory is only looked at).

    ``tensorboard``: ``None`` writes TensorBoard logs when the package is installed (else a
    one-line notice), ``True`` requires it, ``False`` skips them. ``resume``: continue the run
    in ``logdir`` (see :func:`run`); its env and agent come from the checkpoint. With
    ``ray_workers`` the env and agent are built when the workers start.
    """
    experiment = get_experiment(name)
    overrides = dict(overrides or {})
    if ray_workers is not None:
        if isinstance(ray_workers, bool) or not isinstance(ray_workers, int) or ray_workers < 1:
            raise ValueError(f"ray_workers must be an int >= 1, got ray_workers={ray_workers!r}")
        if resume:
            raise ValueError("a run on Ray workers is not checkpointed, so it cannot be "
                             "resumed; leave out --ray-workers or --resume")
        checkpoint_every = None  # the workers' envs live in other processes
    elif ray_address is not None:
        raise ValueError("ray_address= names the Ray cluster of a run on Ray workers: pass "
                         "ray_workers= too (--ray-workers N)")
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(
            checkpoint_every, int) or checkpoint_every <= 0):
        raise ValueError(f"checkpoint_every must be a positive int or None (no checkpoints), got "
                         f"checkpoint_every={checkpoint_every!r}")
    if resume:
        if overwrite:
            raise ValueError("resume continues the run in the log directory and overwrite "
                             "replaces it: pass one of them")
        # Compared with the run's config.json, which holds them as JSON (inf tagged).
        given = {key: json_value(value) for key, value in overrides.items()}
        request = check_resume(name, logdir, steps, seed, given)
        config, steps, seed, logdir = request.config, request.steps, request.seed, Path(logdir)
    else:
        request = None
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
                raise ValueError(f"steps must be a positive int, got steps={steps!r}")
            overrides["steps"] = steps  # the settings' schedules follow the run's length
        config = configure(name, **overrides)
        steps = config.steps
        seed = 0 if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got seed={seed!r}")
        if logdir is not None:
            logdir = check_logdir(logdir, overwrite)
    notices = [] if request is None else list(request.notices)  # damaged checkpoints passed over
    if tensorboard and logdir is None:
        raise ValueError("TensorBoard logs need a log directory: pass logdir=")
    if tensorboard and not tensorboard_available():
        raise ValueError(TENSORBOARD_MISSING)
    if tensorboard is None:
        tensorboard = logdir is not None and tensorboard_available()
        if logdir is not None and not tensorboard and not resume:
            notices.append(f"no TensorBoard logs: {TENSORBOARD_MISSING}")
    import torch

    from stagerl.utils.devices import resolve_device  # imports torch: not on `stagerl list`

    device = resolve_device(device)
    if request is not None:
        return PreparedRun(name, experiment, config, steps, seed, device, logdir, False,
                           bool(tensorboard), progress, None, None, notices, checkpoint_every,
                           request)
    if ray_workers is not None:
        from stagerl.distributed import connect

        try:  # Ray installed, the cluster there: found out before anything is written
            connect(ray_address)
        except (ImportError, ConnectionError) as error:
            raise ValueError(str(error)) from None
        return PreparedRun(name, experiment, config, steps, seed, device, logdir, overwrite,
                           bool(tensorboard), progress, None, None, notices, None, None,
                           ray_workers, ray_address)
    torch.manual_seed(seed)  # network initialisation; policies own their sampling generators
    # Built with the threads it trains with: some initialisations (orthogonal) round
    # differently on other thread counts, and the same seed must give the same run.
    with torch_threads(_threads(config), device):
        env = experiment.make_env(config, seed)
        agent = experiment.make_agent(config, env, seed, device)
    return PreparedRun(name, experiment, config, steps, seed, device, logdir, overwrite,
                       bool(tensorboard), progress, env, agent, notices,
                       checkpoint_every if logdir is not None else None)


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
        csv_logger, tensorboard_logger = _loggers(prepared.env)
        hooks.append(csv_logger(logdir))
        if prepared.tensorboard:
            hooks.append(tensorboard_logger(logdir))
        hooks.append(PlotLearningCurve(logdir / "learning_curve.png", title=prepared.name))
    return hooks


def _loggers(env: Any) -> tuple[type, type]:
    """The CSV and TensorBoard loggers of a run on ``env``: a game's (``players``) add a column
    and a tag per player (``stagerl.multi_agent``)."""
    if getattr(env, "players", None):
        from stagerl.multi_agent import MultiAgentCSVLogger, MultiAgentTensorBoardLogger

        return MultiAgentCSVLogger, MultiAgentTensorBoardLogger
    return CSVLogger, TensorBoardLogger


def execute(prepared: PreparedRun, hook: rl.Hook | None = None) -> dict[str, Any]:
    """Train with the default hooks (and ``hook``), evaluate, summarise; returns the summary
    (written as ``summary.json`` when there is a log directory).

    Ctrl-C during training saves a checkpoint at the end of the current step (when the run has
    a log directory), writes the logs and raises ``KeyboardInterrupt``."""
    for notice in prepared.notices:
        print(f"stagerl: {notice}", file=sys.stderr)
    with torch_threads(_threads(prepared.config), prepared.device):
        if prepared.ray_workers is not None:
            return _on_ray_workers(prepared, hook)
        return _trained(prepared, hook)


def _threads(config: Any) -> int:
    return getattr(config, "torch_threads", DEFAULT_TORCH_THREADS)  # a user's own settings


def _trained(prepared: PreparedRun, hook: rl.Hook | None) -> dict[str, Any]:
    if prepared.resuming is not None:
        if hook is not None:
            raise ValueError("a resumed run goes on with the hooks saved in its checkpoint; "
                             "hook= cannot be added to it")
        trainer = _resumed(prepared)
    else:
        trainer = _started(prepared, hook)
    stop = trainer.stop_condition
    first_step = stop.step
    start = time.perf_counter()
    trainer.run()
    wall = time.perf_counter() - start
    members = trainer.hook.hooks if isinstance(trainer.hook, rl.ComposedHook) else [trainer.hook]
    evaluations = next((h for h in members if isinstance(h, Evaluate)), None)
    experiment = prepared.experiment
    eval_env = make_eval_env(experiment, prepared.config, prepared.seed + EVAL_SEED_OFFSET)
    returns = rl.evaluate(trainer.policy, eval_env, EVAL_EPISODES,
                          experiment.eval_max_episode_steps)
    steps_here = stop.step - first_step
    summary = {
        "experiment": prepared.name,
        "seed": prepared.seed,
        "device": str(prepared.device),
        "env_steps": stop.step,
        "wall_seconds": wall,
        "steps_per_second": steps_here / wall if wall > 0 else float("inf"),
        **evaluation_summary(returns, evaluations),
        "config": config_to_json(prepared.config),
        "versions": versions(),
        "total_seconds": time.perf_counter() - start,
    }
    if prepared.resuming is not None:
        # This process's share: wall_seconds and steps_per_second count from the resume.
        summary["resumed_at_step"] = first_step
    logdir = prepared.logdir
    if logdir is not None:
        summary["logdir"] = str(logdir)
        write_json(logdir / "summary.json", summary)
    return summary


def _on_ray_workers(prepared: PreparedRun, hook: rl.Hook | None) -> dict[str, Any]:
    from stagerl.experiments.distributed import train

    hooks = default_hooks(prepared) + ([] if hook is None else [hook])
    logdir = prepared.logdir
    if logdir is not None:
        open_logdir(logdir, prepared.overwrite)
        write_json(logdir / "config.json", {**_config_json(prepared),
                                            "ray_workers": prepared.ray_workers})
    start = time.perf_counter()
    summary = train(prepared.experiment, prepared.config, prepared.steps, prepared.seed,
                    prepared.ray_workers, prepared.ray_address, prepared.device, hooks=hooks)
    summary = {"experiment": prepared.name, "seed": prepared.seed,
               "device": str(prepared.device), **summary,
               "versions": versions(), "total_seconds": time.perf_counter() - start}
    if logdir is not None:
        summary["logdir"] = str(logdir)
        write_json(logdir / "summary.json", summary)
    return summary


def _started(prepared: PreparedRun, hook: rl.Hook | None) -> rl.Experiment:
    hooks = default_hooks(prepared) + ([] if hook is None else [hook])
    logdir = prepared.logdir
    stop = rl.StopAfterNSteps(prepared.steps, progress=False)
    if logdir is None or prepared.checkpoint_every is None:
        if logdir is not None:
            open_logdir(logdir, prepared.overwrite)
            write_json(logdir / "config.json", _config_json(prepared))
        return rl.Experiment(prepared.agent, prepared.env, stop, rl.ComposedHook(*hooks))
    from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment

    open_logdir(logdir, prepared.overwrite)
    if prepared.overwrite:
        _remove_checkpoints(logdir / CHECKPOINTS)
    write_json(logdir / "config.json", _config_json(prepared))
    info = {"experiment": prepared.name, "seed": prepared.seed,
            "config": config_to_json(prepared.config)}
    # A hook that is not data is left out of the checkpoints with a warning (the run goes on).
    return ResumableExperiment(prepared.agent, prepared.env, stop, rl.ComposedHook(*hooks),
                               checkpoints=CheckpointSchedule(prepared.checkpoint_every,
                                                              logdir / CHECKPOINTS),
                               info=info)


def _resumed(prepared: PreparedRun) -> rl.Experiment:
    from stagerl.checkpoints import resume

    request = prepared.resuming
    trainer = resume(request.checkpoint, steps=prepared.steps, map_location=prepared.device)
    members = trainer.hook.hooks if isinstance(trainer.hook, rl.ComposedHook) else [trainer.hook]
    for member in members:  # a run continued to more steps shows its new length
        if isinstance(member, (ProgressBar, ConsoleSummary)) and member.total is not None:
            member.total = prepared.steps
    saved = dict(request.saved)
    saved["steps"] = prepared.steps
    saved["config"] = config_to_json(prepared.config)
    saved.setdefault("resumed", []).append({"env_step": request.at_step,
                                            "checkpoint": str(request.checkpoint),
                                            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    write_json(prepared.logdir / "config.json", saved)
    return trainer


def _config_json(prepared: PreparedRun) -> dict:
    return {"experiment": prepared.name, "seed": prepared.seed,
            "device": str(prepared.device), "steps": prepared.steps,
            "config": config_to_json(prepared.config),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _remove_checkpoints(directory: Path) -> None:
    """The checkpoints of the run an overwritten log directory held (theirs only)."""
    from stagerl.checkpoints.files import remove, step_directories

    for _, path in step_directories(directory):
        remove(path)
    best = directory / "best"
    if (best / "manifest.json").is_file():
        remove(best)


def train(name: str, steps: int | None = None, seed: int | None = 0, device: Any = "auto",
          logdir: str | Path | None = None, *, progress: bool = True, overwrite: bool = False,
          tensorboard: bool | None = None, hook: rl.Hook | None = None, resume: bool = False,
          checkpoint_every: int | None = CHECKPOINT_EVERY_N_STEPS,
          ray_workers: int | None = None, ray_address: str | None = None,
          **overrides: Any) -> dict[str, Any]:
    """Run experiment ``name`` for ``steps`` env steps (default: its own), then evaluate it.

    Returns the run's summary: ``experiment``, ``seed``, ``device``, ``env_steps``,
    ``wall_seconds`` (training), ``steps_per_second``, ``eval_return_mean``,
    ``eval_return_std``, ``eval_episodes`` (the final deterministic episodes on a separate
    env), ``evaluations`` (those during training), ``config`` (the resolved hyper-parameters),
    ``versions`` and ``total_seconds``. ``overrides`` replace hyper-parameters (see
    :func:`~stagerl.experiments.configure`); torch's CPU threads are the settings'
    ``torch_threads`` while it trains (see :mod:`stagerl.experiments.settings`).

    With ``logdir`` the run writes its log directory (``config.json``, ``episodes.csv``,
    ``updates.csv``, TensorBoard event files, ``learning_curve.png``, ``summary.json``; see
    ``docs/logging.md``) and evaluates every 10,000 env steps; a directory that is not empty
    is refused unless ``overwrite``. ``tensorboard``: ``None`` when installed, ``True``
    required, ``False`` never. ``progress`` shows a progress bar (a summary line every tenth
    of the run where there is no terminal). ``hook`` is added to the default hooks.

    With ``logdir``, checkpoints of the whole run (agent, trajectory, env, hooks, random states)
    go to ``logdir/checkpoints`` every ``checkpoint_every`` env steps and at the end (``None``:
    none); ``resume=True`` continues the run in ``logdir`` from its newest checkpoint to
    ``steps`` env steps in all (default: the steps it was started with), with the seed and
    hyper-parameters it was started with (one given again must be the same). A run cut short
    (Ctrl-C, a crash, a kill) and resumed ends bit for bit as the run that was never cut would
    have on the CPU. A finished run continued to more steps goes on with the schedules laid out
    for its first length (ε, learning rates).

    ``ray_workers``: act in that many Ray rollout workers feeding the central agent (see
    ``docs/distributed.md``; needs ``pip install 'stagerl[ray]'``), on the local Ray or the
    cluster at ``ray_address``; ``summary["workers"]`` holds the workers' env steps per second.
    Such a run is not checkpointed.
    """
    prepared = prepare(name, steps, seed, device, logdir, progress=progress,
                       overwrite=overwrite, tensorboard=tensorboard, overrides=overrides,
                       resume=resume, checkpoint_every=checkpoint_every,
                       ray_workers=ray_workers, ray_address=ray_address)
    return execute(prepared, hook)
