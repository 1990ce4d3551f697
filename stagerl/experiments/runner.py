"""Training and evaluating one named experiment (called by ``stagerl.experiments.run``)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

import stagerl as rl
from stagerl.experiments.registry import EVAL_EPISODES, EVAL_SEED_OFFSET, NamedExperiment
from stagerl.utils.devices import resolve_device

__all__ = ["train_and_evaluate", "make_eval_env"]


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
