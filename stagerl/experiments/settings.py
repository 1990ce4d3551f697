"""What a named experiment's run has besides its algorithm's settings.

A named experiment's settings are one dataclass that derives from these and from its algorithm's
config, overriding only the defaults it changes (every field can be set on the command line)::

    @dataclass
    class Config(GymRunSettings, SACConfig):
        steps: int = 50_000
        env_id: str = "MountainCarContinuous-v0"
        ent_coef: str | float = 0.1

``steps`` is the run's length; the algorithm's ``total_steps`` (over which its schedules run)
follows it and is not set apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from stagerl.algorithms._checks import Settings, check_ints

__all__ = ["RunSettings", "GymRunSettings", "DEFAULT_TORCH_THREADS", "torch_threads",
           "gym_env", "same_step_vector_env"]

#: Torch's CPU threads during a named experiment's run. The networks here are small (a few
#: 64- to 400-unit layers): one thread runs them fastest. Measured on a 2-core machine whose
#: cores other processes kept busy, ``stagerl run ppo-cartpole --steps 4000`` trained in 1.8 s
#: on one thread and in 70 s on two (medians of 5 interleaved fresh processes; see
#: ``docs/algorithms/index.md``).
DEFAULT_TORCH_THREADS = 1


@dataclass(kw_only=True)
class RunSettings(Settings):
    """The settings of every named experiment's run.

    Attributes:
        steps: env steps of a run (``--steps`` on the command line).
        torch_threads: torch's CPU threads while the run trains (0: torch's own setting);
            the thread count before the run is restored after it.
    """

    steps: int
    torch_threads: int = DEFAULT_TORCH_THREADS
    total_steps: int | None = field(default=None, init=False, repr=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        module = cls.__module__
        if module.startswith("stagerl.experiments.zoo."):  # messages name the experiment
            cls.settings_name = module.rpartition(".")[2].replace("_", "-")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "steps")
        check_ints(self, "torch_threads", low=0)
        self.total_steps = self.steps  # the algorithm's schedules span the run


@dataclass(kw_only=True)
class GymRunSettings(RunSettings):
    """The settings of a run on a gymnasium env (:func:`gym_env`, :func:`same_step_vector_env`).

    Attributes:
        env_id: the gymnasium id of the env (training and evaluation).
        num_envs: sub-envs stepped together (1: a single env).
    """

    env_id: str
    num_envs: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ints(self, "num_envs")


def gym_env(config: GymRunSettings, seed: int) -> Any:
    """A ``GymEnv`` of ``config.env_id``, or a ``GymVectorEnv`` of ``config.num_envs`` of them
    (gymnasium's default autoreset: the act after an episode's end resets that sub-env)."""
    from stagerl.envs.gym import GymEnv
    from stagerl.envs.vector import GymVectorEnv

    with _naming_env_id(config):
        if config.num_envs > 1:
            return GymVectorEnv(config.env_id, num_envs=config.num_envs, seed=seed)
        return GymEnv(config.env_id, seed=seed)


def same_step_vector_env(config: GymRunSettings, seed: int) -> Any:
    """``config.num_envs`` sub-envs of ``config.env_id`` that reset in the step that ends an
    episode: every act is a step of every sub-env, as the on-policy algorithms want (see
    ``stagerl.algorithms.on_policy.make_vector_env``)."""
    from stagerl.algorithms.on_policy import make_vector_env

    with _naming_env_id(config):
        return make_vector_env(config.env_id, config.num_envs, seed)


@contextmanager
def _naming_env_id(config: GymRunSettings) -> Iterator[None]:
    """gymnasium's refusal of an env id as a ``ValueError`` that names the setting."""
    import gymnasium

    try:
        yield
    except gymnasium.error.Error as error:
        raise ValueError(f"env_id={config.env_id!r}: {error}") from error


@contextmanager
def torch_threads(threads: int = DEFAULT_TORCH_THREADS, device: Any = "cpu") -> Iterator[None]:
    """Inside the block, torch's CPU threads are ``threads`` (default
    :data:`DEFAULT_TORCH_THREADS`) for work on the CPU (0, or a ``device`` that is an
    accelerator: torch's setting is left alone); the count before is restored after. Every
    named experiment trains (and builds its agent) inside it; a script or a notebook that runs
    an agent itself can do the same::

        with torch_threads():
            rl.run(agent, env, rl.StopAfterNSteps(50_000))

    Example:
        >>> import torch
        >>> before = torch.get_num_threads()
        >>> with torch_threads(1, "cpu"):
        ...     torch.get_num_threads()
        1
        >>> torch.get_num_threads() == before
        True
    """
    import torch

    before = torch.get_num_threads()
    change = threads > 0 and torch.device(device).type == "cpu" and threads != before
    if change:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(before)
