"""Named experiments on Ray workers: the central agent, the workers' factories, a whole run.

:func:`learner_for` builds what a distributed run of a named experiment needs: the central
agent, built by the experiment's own ``make_agent`` for :class:`WorkerLanes` (the spaces of the
experiment's env, one lane per sub-env of every worker), and a
:class:`~stagerl.distributed.pool.WorkerPool` whose workers build the experiment's env and agent
(on the CPU) themselves. :func:`train` runs it and evaluates the central agent as
``stagerl.experiments.run`` does.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from stagerl.core.env import VectorEnv
from stagerl.core.evaluation import evaluate
from stagerl.distributed.learner import Learner
from stagerl.distributed.pool import WorkerPool
from stagerl.experiments.registry import EVAL_EPISODES, EVAL_SEED_OFFSET, NamedExperiment, load

__all__ = ["WorkerLanes", "ExperimentEnv", "ExperimentAgent", "learner_for", "train"]


class WorkerLanes(VectorEnv):
    """What the central agent is built for: the spaces of one worker's env and one lane per
    sub-env of every worker. It is never stepped (the workers act).

    Example:
        >>> import stagerl as rl
        >>> lanes = WorkerLanes(rl.GymEnv("CartPole-v1"), workers=3)
        >>> lanes.num_envs, lanes.single_action_space
        (3, Discrete(2))
    """

    def __init__(self, env: Any, workers: int):
        vector = isinstance(env, VectorEnv)
        self.lanes_per_worker = int(env.num_envs) if vector else 1
        self.num_envs = self.lanes_per_worker * int(workers)
        self._action_space = env.single_action_space if vector else env.action_space
        self._state_space = env.single_state_space if vector else env.state_space
        self.autoreset_mode = getattr(env, "autoreset_mode", None)

    @property
    def single_action_space(self) -> Any:
        return self._action_space

    @property
    def single_state_space(self) -> Any:
        return self._state_space

    @property
    def action_space(self) -> Any:
        return self._action_space

    @property
    def state_space(self) -> Any:
        return self._state_space

    def reset(self) -> None:
        raise RuntimeError("WorkerLanes is never stepped: the rollout workers act")

    def act(self, action: Any) -> None:
        raise RuntimeError("WorkerLanes is never stepped: the rollout workers act")


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
        return load(experiment)
    if not isinstance(experiment, NamedExperiment):
        raise TypeError(f"experiment must be a name or a NamedExperiment, got "
                        f"{type(experiment).__name__}")
    return experiment


def learner_for(experiment: str | NamedExperiment, config: Any = None, seed: int = 0,
                device: Any = "auto", workers: int = 2, address: str | None = None, *,
                steps_per_batch: int | None = None, in_flight: int | None = None,
                cpus_per_worker: float = 1.0, make_hook: Any = None,
                callback: Any = None) -> Learner:
    """A :class:`Learner` for a named experiment with ``workers`` Ray workers.

    ``config`` is the experiment's configuration (default: its own defaults); the central agent
    is built on ``device`` with ``seed``, worker ``i`` from ``worker_seed(seed, i)``. Bad input
    is refused before any worker starts: unpicklable factories (``TypeError``), an unreachable
    ``address`` (``ConnectionError``), more workers than CPUs (``ValueError``).
    """
    import torch

    import stagerl.distributed.adapters  # noqa: F401  (the algorithms' weights)
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
                       callback)
    except BaseException:
        pool.shutdown()
        raise


def train(experiment: str | NamedExperiment, config: Any = None, steps: int | None = None,
          seed: int = 0, workers: int = 2, address: str | None = None, device: Any = "auto",
          **options: Any) -> dict:
    """Train a named experiment with ``workers`` Ray workers, then evaluate the central agent
    on ``EVAL_EPISODES`` deterministic episodes of a separate env, as
    ``stagerl.experiments.run`` does; returns the summary (``env_steps``, ``wall_seconds``,
    ``steps_per_second``, ``eval_return_mean``, ``eval_return_std``, ``eval_episodes``, and the
    ``Learner.figures()`` under ``workers``). ``options`` go to :func:`learner_for`.
    """
    from stagerl.experiments.runner import make_eval_env

    experiment = _experiment(experiment)
    config = experiment.config() if config is None else config
    steps = config.steps if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got steps={steps!r}")
    config = dataclasses.replace(config, steps=steps)  # schedules follow the run's length
    with learner_for(experiment, config, seed, device, workers, address, **options) as learner:
        figures = learner.train(steps)
    eval_env = make_eval_env(experiment, config, seed + EVAL_SEED_OFFSET)
    returns = evaluate(learner.agent, eval_env, EVAL_EPISODES, experiment.eval_max_episode_steps)
    return {
        "seed": seed,
        "env_steps": figures["env_steps"],
        "wall_seconds": figures["wall_seconds"],
        "steps_per_second": figures["steps_per_second"],
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_std": statistics.pstdev(returns),
        "eval_episodes": len(returns),
        "workers": figures,
        "config": dataclasses.asdict(config),
    }
