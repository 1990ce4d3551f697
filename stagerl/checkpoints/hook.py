"""Checkpoint: the hook that has a ResumableExperiment save all of itself every so often."""

from __future__ import annotations

import collections
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import stagerl.checkpoints.files as files
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.episodes import Episode, EpisodeHook
from stagerl.core.stages import PostActStage, PreExperimentStage
from stagerl.core.stop_conditions import steps_per_act
from trajectories.checks import require_positive_int

__all__ = ["Checkpoint", "BEST"]

#: The name of the best checkpoint's directory.
BEST = "best"


@dataclass
class Checkpoint(EpisodeHook):
    """Every ``every_n_steps`` env steps, the whole experiment is saved to
    ``directory/step-N`` (N: env steps so far), in a :class:`ResumableExperiment`.

    Only the newest ``keep_last`` ``step-N`` checkpoints are kept (older ones are removed: only
    ``step-N`` directories holding a checkpoint's files, only those files). With ``keep_best``,
    ``directory/best`` is the checkpoint with the highest mean return over the last
    ``recent_episodes`` episodes the env ended (not cut by the stop), as of its save. With
    ``at_end``, the run's last step is saved too. The save happens after the step's stop check,
    whatever the hook's place among the others; ``docs/checkpoints.md`` has the details.

    A checkpoint of the whole experiment continues exactly with
    ``stagerl.checkpoints.resume(directory)``; ``stagerl.checkpoints.load(directory)`` gives its
    Agent.

    Example:
        >>> import tempfile, stagerl as rl
        >>> from stagerl.checkpoints import Checkpoint, ResumableExperiment
        >>> directory = tempfile.mkdtemp()
        >>> agent = rl.Agent(rl.RandomPolicy(rng=0),
        ...                  rl.Trajectory(rl.CircularArraySARTSTraces(capacity=16)))
        >>> checkpoint = Checkpoint(every_n_steps=10, directory=directory, keep_last=2)
        >>> _ = ResumableExperiment(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(45,
        ...                         progress=False), checkpoint).run()
        >>> sorted(p.name for p in __import__("pathlib").Path(directory).iterdir())
        ['best', 'step-000000040', 'step-000000045']
    """

    every_n_steps: int
    directory: str | Path = "checkpoints"
    keep_last: int = 3
    keep_best: bool = True
    recent_episodes: int = 20
    at_end: bool = True
    env_step: int = 0
    best_return: float = -math.inf
    returns: collections.deque = field(default_factory=collections.deque)

    def __post_init__(self) -> None:
        require_positive_int("Checkpoint", "every_n_steps", self.every_n_steps)
        require_positive_int("Checkpoint", "keep_last", self.keep_last)
        require_positive_int("Checkpoint", "recent_episodes", self.recent_episodes)
        if not isinstance(self.directory, (str, Path)):
            raise TypeError(f"Checkpoint needs a directory path, got directory={self.directory!r}")
        for name in ("keep_best", "at_end"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Checkpoint: {name} must be a bool, got "
                                f"{name}={getattr(self, name)!r}")
        self.returns = collections.deque(self.returns, maxlen=self.recent_episodes)
        #: Whether a save is due at this step's save point (set at PostAct).
        self.due = False
        #: Whether a ResumableExperiment runs this hook now (it saves; a plain run cannot).
        self.attached = False
        self._per_act = 1
        self._next = (self.env_step // self.every_n_steps + 1) * self.every_n_steps

    def __getstate__(self) -> dict:
        return {**self.__dict__, "attached": False}

    @property
    def recent_return(self) -> float | None:
        """The mean return of the last ``recent_episodes`` episodes (``None`` before one)."""
        return statistics.fmean(self.returns) if self.returns else None

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if episode.terminated or episode.truncated:  # not an episode cut by the stop
            self.returns.append(episode.total_reward)

    def pre_experiment(self, policy: Any, env: Any) -> None:
        if not self.attached:
            raise ValueError(
                "Checkpoint saves a whole experiment (agent, env, hooks, stop condition), so it "
                "runs inside one that it can save: build a "
                "stagerl.checkpoints.ResumableExperiment(policy, env, stop_condition, hook) "
                "instead of calling run(...) or stagerl.Experiment")
        self._per_act = steps_per_act(env)
        self._next = (self.env_step // self.every_n_steps + 1) * self.every_n_steps

    def post_act(self, policy: Any, env: Any) -> None:
        EpisodeHook.post_act(self, policy, env)
        self.env_step += self._per_act
        if self.env_step >= self._next:
            self._next = (self.env_step // self.every_n_steps + 1) * self.every_n_steps
            self.due = True

    def write(self, experiment: Any, stopped: bool, reason: str) -> Path:
        """Save ``experiment`` now (the loop's save point) as ``step-N``; keep the newest
        ``keep_last`` and, when it is the best so far, link it as ``best``."""
        directory = Path(self.directory)
        path = directory / f"step-{self.env_step:09d}"
        self.due = False
        score = self.recent_return
        best = self.keep_best and score is not None and score > self.best_return
        if best:
            self.best_return = score
        experiment.save(path, stopped, env_steps=self.env_step, reason=reason,
                        recent_return=score, best=best)
        if best:
            files.copy_files(path, directory / BEST)
        kept = files.step_directories(directory)
        for step, old in kept:
            # Later steps are from a run this one was resumed before: they no longer follow.
            if step > self.env_step:
                files.remove(old)
        for _, old in [(s, p) for s, p in kept if s <= self.env_step][:-self.keep_last]:
            files.remove(old)
        return path


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_checkpoint_pre_experiment(hook: Checkpoint, stage: PreExperimentStage, policy, env):
    hook.pre_experiment(policy, env)


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _push_checkpoint_post_act(hook: Checkpoint, stage: PostActStage, policy, env):
    hook.post_act(policy, env)
