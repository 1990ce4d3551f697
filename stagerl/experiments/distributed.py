"""Named experiments on Ray workers: the central agent, the workers' factories, a whole run.

:func:`learner_for` builds what a distributed run of a named experiment needs: the central
agent, built by the experiment's own ``make_agent`` for
:class:`~stagerl.distributed.WorkerLanes` (the spaces of the experiment's env, one lane per
sub-env of every worker), and a :class:`~stagerl.distributed.WorkerPool` whose workers build the
experiment's env and agent (on the CPU) themselves. :func:`train` runs it, tells the run's hooks
the workers' episodes (:class:`~stagerl.distributed.EpisodeReplay`) and evaluates the central
agent as ``stagerl.experiments.train`` does; ``train(name, ray_workers=N)`` calls it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from stagerl.core.evaluate import evaluate
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.distributed.lanes import WorkerLanes
from stagerl.distributed.learner import Learner
from stagerl.distributed.pool import WorkerPool
from stagerl.distributed.replay import EpisodeReplay
from stagerl.experiments.registry import (
    EVAL_EPISODES,
    EVAL_SEED_OFFSET,
    NamedExperiment,
    config_to_json,
    evaluation_summary,
    get_experiment,
    make_eval_env,
)
from stagerl.logging.periodic_evaluation import Evaluate

__all__ = ["ExperimentEnv", "ExperimentAgent", "learner_for", "train"]


@dataclasses.dataclass(frozen=True)
class ExperimentEnv:
    """A worker's env factory: ``seed -> experiment.make_env(config, seed)``."""

    experiment: NamedExperiment
    config: Any

    def __call__(self, seed: int) -> Any:
        return self.experiment.make_env(self.config, seed)


@dataclasses.dataclass(frozen=True)
class ExperimentAgent:
    """A worker's agent factory: ``(env, seed) -> experiment.make_agent(config, env, seed,
    cpu)``."""

    experiment: NamedExperiment
    config: Any

    def __call__(self, env: Any, seed: int) -> Any:
        import torch

        return self.experiment.make_agent(self.config, env, seed, torch.device("cpu"))


def _experiment(experiment: str | NamedExperiment) -> NamedExperiment:
    if isinstance(experiment, str):
        return get_experiment(experiment)
    if not isinstance(experiment, NamedExperiment):
        raise TypeError(f"experiment must be a name or a NamedExperiment, got "
                        f"{type(experiment).__name__}")
    return experiment


def learner_for(experiment: str | NamedExperiment, config: Any = None, seed: int = 0,
                device: Any = "auto", workers: int = 2, address: str | None = None, *,
                steps_per_batch: int | None = None, in_flight: int | None = None,
                cpus_per_worker: float = 1.0, make_hook: Any = None,
                callback: Any = None, max_staleness: int | None = None,
                plan: Any = None) -> Learner:
    """A :class:`~stagerl.distributed.Learner` for a named experiment with ``workers`` Ray
    workers.

    ``config`` is the experiment's configuration (default: its own defaults); the central agent
    is built on ``device`` with ``seed``, worker ``i`` from ``worker_seed(seed, i)``. The
    learner runs the execution plan of the experiment's policy (``plan``: another, see
    :mod:`stagerl.distributed.plans`). Bad input is refused before any worker starts:
    unpicklable factories (``TypeError``), an unreachable ``address`` (``ConnectionError``),
    more workers than CPUs (``ValueError``); a plan that cannot work when it is built.
    """
    import torch

    from stagerl.utils.devices import resolve_device

    experiment = _experiment(experiment)
    config = experiment.config() if config is None else config
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got workers={workers!r}")
    device = resolve_device(device)
    torch.manual_seed(seed)
    env = experiment.make_env(config, seed)  # read for its spaces only
    lanes = WorkerLanes(env, workers)
    close = getattr(env, "close", None)
    if callable(close):
        close()
    agent = experiment.make_agent(config, lanes, seed, device)
    pool = WorkerPool(ExperimentEnv(experiment, config), ExperimentAgent(experiment, config),
                      workers, seed, address, make_hook, cpus_per_worker)
    try:
        return Learner(agent, pool, lanes.lanes_per_worker, steps_per_batch, in_flight,
                       callback, max_staleness, plan)
    except BaseException:
        pool.shutdown()
        raise


def train(experiment: str | NamedExperiment, config: Any, steps: int | None, seed: int,
          workers: int, address: str | None = None, device: Any = "auto", *,
          hooks: Any = (), **options: Any) -> dict:
    """Train a named experiment with ``workers`` Ray workers, then evaluate the central agent
    on ``EVAL_EPISODES`` deterministic episodes of a separate env, as
    ``stagerl.experiments.train`` does.

    Args:
        experiment: a :class:`NamedExperiment` or its name.
        config: its configuration (``None``: its defaults); ``steps`` replaces ``config.steps``
            so that schedules follow the run's length (``None``: ``config.steps``).
        seed: the central agent's seed; worker ``i`` acts with ``worker_seed(seed, i)``.
        workers: Ray rollout workers; ``address``: the Ray cluster (``None``: a local one).
        device: where the central agent learns (the workers act on the CPU).
        hooks: hooks of the central side (a Hook or a list: ``CSVLogger``, ``ConsoleSummary``,
            ``Evaluate``, ...). They see the workers' episodes as they end, replayed by
            :class:`~stagerl.distributed.EpisodeReplay`, and the central agent as the policy.
        options: passed to :func:`learner_for` (``steps_per_batch``, ``in_flight``,
            ``max_staleness``, ``cpus_per_worker``, ``make_hook``, ``callback``, ``plan``).

    Returns:
        The summary: ``seed``, ``device``, ``env_steps``, ``wall_seconds`` (training, without
        the workers' start), ``steps_per_second``, ``eval_return_mean``, ``eval_return_std``,
        ``eval_episodes``, ``evaluations`` (those of an ``Evaluate`` hook, else ``[]``),
        ``config`` and ``workers`` (``Learner.figures()``: each worker's env steps per second).
    """
    from stagerl.utils.devices import resolve_device

    experiment = _experiment(experiment)
    config = experiment.config() if config is None else config
    steps = config.steps if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got steps={steps!r}")
    config = dataclasses.replace(config, steps=steps)  # schedules follow the run's length
    hooks = [hooks] if isinstance(hooks, Hook) else list(hooks)
    hook = ComposedHook(*hooks)  # TypeError for anything not a Hook, before workers start
    device = resolve_device(device)
    callback = options.pop("callback", None)
    with learner_for(experiment, config, seed, device, workers, address, **options) as learner:
        replay = EpisodeReplay(hook, learner.agent)
        learner.callback = replay if callback is None else _Both(replay, callback)
        try:
            figures = learner.train(steps)
        except BaseException:
            replay.finish(cut_running=False)  # the hooks close their files
            raise
        replay.finish()
    returns = evaluate(learner.agent, make_eval_env(experiment, config, seed + EVAL_SEED_OFFSET),
                       EVAL_EPISODES, experiment.eval_max_episode_steps)
    during = next((h for h in hook if isinstance(h, Evaluate)), None)
    return {
        "seed": seed,
        "device": str(device),
        "env_steps": figures["env_steps"],
        "wall_seconds": figures["wall_seconds"],
        "steps_per_second": figures["steps_per_second"],
        **evaluation_summary(returns, during),
        "config": config_to_json(config),
        "workers": figures,
    }


@dataclasses.dataclass(frozen=True)
class _Both:
    """Two learner callbacks, in order."""

    first: Any
    second: Any

    def __call__(self, learner: Any, batch: Any) -> None:
        self.first(learner, batch)
        self.second(learner, batch)
