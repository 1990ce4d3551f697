"""Running a named experiment: train, evaluate, summarise."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import torch

import stagerl as rl
from stagerl.experiments.registry import (
    EVAL_EPISODES,
    EVAL_SEED_OFFSET,
    NamedExperiment,
    configure,
    load,
)
from stagerl.utils.devices import resolve_device

__all__ = ["run", "train_and_evaluate", "make_eval_env"]


def make_eval_env(experiment: NamedExperiment, config: Any, seed: int) -> Any:
    """The experiment's evaluation env: its own ``make_eval_env``, else a single ``GymEnv``."""
    if experiment.make_eval_env is not None:
        return experiment.make_eval_env(config, seed)
    return rl.GymEnv(config.env_id, seed=seed)


def train_and_evaluate(experiment: NamedExperiment, config: Any, steps: int, seed: int,
                       device: Any, progress: bool) -> dict[str, Any]:
    device = resolve_device(device)
    torch.manual_seed(seed)  # network initialisation; policies own their sampling generators
    env = experiment.make_env(config, seed)
    agent = experiment.make_agent(config, env, seed, device)
    stop = rl.StopAfterNSteps(steps, progress=progress)
    start = time.perf_counter()
    rl.run(agent, env, stop)
    wall = time.perf_counter() - start
    returns = rl.evaluate(agent, make_eval_env(experiment, config, seed + EVAL_SEED_OFFSET),
                          EVAL_EPISODES, experiment.eval_max_episode_steps)
    return {
        "seed": seed,
        "device": str(device),
        "env_steps": stop.step,
        "wall_seconds": wall,
        "steps_per_second": stop.step / wall if wall > 0 else float("inf"),
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_std": statistics.pstdev(returns),
        "eval_episodes": len(returns),
    }


def run(name: str, steps: int | None = None, seed: int = 0, device: Any = "auto",
        logdir: str | Path | None = None, *, progress: bool = True,
        **overrides: Any) -> dict[str, Any]:
    """Run experiment ``name`` for ``steps`` env steps (default: its own), then evaluate it.

    Returns the run's summary: ``experiment``, ``seed``, ``device``, ``env_steps``,
    ``wall_seconds`` (training), ``steps_per_second``, ``eval_return_mean``,
    ``eval_return_std``, ``eval_episodes`` (the deterministic episodes on a separate env) and
    ``config`` (the resolved hyper-parameters). With ``logdir`` it is also written there as
    ``summary.json``. ``overrides`` replace hyper-parameters (see :func:`configure`).
    """
    experiment = load(name)
    config = configure(experiment, **overrides)
    if steps is None:
        steps = config.steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got steps={steps!r}")
    config = dataclasses.replace(config, steps=steps)  # schedules follow the run's length
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got seed={seed!r}")
    start = time.perf_counter()
    summary = train_and_evaluate(experiment, config, steps, seed, device, progress)
    summary = {"experiment": name, **summary,
               "config": _jsonable(dataclasses.asdict(config))}
    summary["total_seconds"] = time.perf_counter() - start
    if logdir is not None:
        path = Path(logdir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
