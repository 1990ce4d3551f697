"""CheckpointSchedule: when a ResumableExperiment saves itself, where, and what it keeps.

A plain dataclass: the experiment asks it, after every step's stop check, whether a save is due
(:meth:`CheckpointSchedule.count` counts env steps), and hands it each checkpoint written
(:meth:`CheckpointSchedule.keep`) to keep the newest ``keep_last`` and the best. It is saved
inside every checkpoint of the experiment, so a resumed run goes on counting where it was.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import stagerl.checkpoints.files as files
from stagerl.core.episodes import Episode, EpisodeHook
from trajectories.checks import require_positive_int

__all__ = ["CheckpointSchedule", "RecentReturns", "BEST"]

#: The name of the best checkpoint's directory.
BEST = "best"


@dataclass
class CheckpointSchedule:
    """Save the whole experiment every ``every_n_steps`` env steps to ``directory/step-N``.

    Give it to :class:`~stagerl.checkpoints.ResumableExperiment` as ``checkpoints=``. N is the
    number of env steps so far (a vector env counts ``num_envs`` per act); the save happens
    after the step's stop check, the one point a run continues exactly from. Only the newest
    ``keep_last`` ``step-N`` checkpoints are kept (older ones are removed: only ``step-N``
    directories holding a checkpoint's files, only those files). With ``keep_best``,
    ``directory/best`` is the checkpoint written at the best score so far: the newest
    evaluation's mean return where the experiment's hooks evaluate (an ``Evaluate`` hook), else
    the mean return of the last ``recent_episodes`` training episodes. With ``at_end``, the
    run's last step is saved too.

    Example:
        >>> import pathlib, tempfile, stagerl as rl
        >>> from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment
        >>> directory = pathlib.Path(tempfile.mkdtemp())
        >>> agent = rl.Agent(rl.RandomPolicy(rng=0),
        ...                  rl.Trajectory(rl.CircularArraySARTSTraces(capacity=16)))
        >>> schedule = CheckpointSchedule(every_n_steps=10, directory=directory, keep_last=2)
        >>> _ = ResumableExperiment(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(45,
        ...     progress=False), rl.TotalRewardPerEpisode(), checkpoints=schedule).run()
        >>> sorted(p.name for p in directory.iterdir())
        ['best', 'step-000000040', 'step-000000045']
    """

    every_n_steps: int
    directory: str | Path = "checkpoints"
    keep_last: int = 3
    keep_best: bool = True
    recent_episodes: int = 20
    at_end: bool = True
    #: Env steps counted so far (a resumed run's schedule starts where the checkpoint was).
    env_step: int = 0
    #: The score of ``directory/best`` (``-inf`` before one is kept) ...
    best_return: float = -math.inf
    #: ... and what it is: ``"evaluation"`` or ``"training"`` (``None`` before one is kept).
    best_by: str | None = None

    def __post_init__(self) -> None:
        require_positive_int("CheckpointSchedule", "every_n_steps", self.every_n_steps)
        require_positive_int("CheckpointSchedule", "keep_last", self.keep_last)
        require_positive_int("CheckpointSchedule", "recent_episodes", self.recent_episodes)
        if isinstance(self.directory, str) and not self.directory:
            raise ValueError("CheckpointSchedule needs a directory, got directory=''")
        if not isinstance(self.directory, (str, Path)):
            raise TypeError(f"CheckpointSchedule needs a directory path, got "
                            f"directory={self.directory!r}")
        for name in ("keep_best", "at_end"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"CheckpointSchedule: {name} must be a bool, got "
                                f"{name}={getattr(self, name)!r}")
        if isinstance(self.env_step, bool) or not isinstance(self.env_step, int) \
                or self.env_step < 0:
            raise ValueError(f"CheckpointSchedule: env_step must be an int >= 0, got "
                             f"env_step={self.env_step!r}")
        if not isinstance(self.best_return, (int, float)) or math.isnan(self.best_return):
            raise ValueError(f"CheckpointSchedule: best_return must be a number, got "
                             f"best_return={self.best_return!r}")
        if self.best_by not in (None, "evaluation", "training"):
            raise ValueError(f"CheckpointSchedule: best_by must be 'evaluation', 'training' or "
                             f"None, got best_by={self.best_by!r}")
        #: Whether a save is due at this step's save point.
        self.due = False

    def count(self, env_steps: int) -> bool:
        """Count a step of ``env_steps`` env steps; whether a save is due now."""
        before = self.env_step
        self.env_step += env_steps
        self.due = self.env_step // self.every_n_steps > before // self.every_n_steps
        return self.due

    def path(self) -> Path:
        """Where the checkpoint of this step goes: ``directory/step-N``."""
        return Path(self.directory) / f"step-{self.env_step:09d}"

    def is_best(self, score: float | None, by: str = "training") -> bool:
        """Whether a checkpoint of ``score`` (an ``"evaluation"`` or a ``"training"`` return)
        is the best so far and becomes ``best``: the first evaluated one beats any chosen by
        training returns, then only a higher score of the same kind does."""
        if not self.keep_best or score is None:
            return False
        if by == "evaluation" and self.best_by != "evaluation":
            return True
        return by == (self.best_by or by) and score > self.best_return

    def keep(self, path: Path, best: bool, score: float | None, by: str = "training") -> None:
        """``path`` was just written: link it as ``best`` if it is, and remove the ``step-N``
        checkpoints beyond the newest ``keep_last`` and those after this step (a run resumed
        from an earlier checkpoint overtakes them: they belong to a run that no longer
        happened)."""
        self.due = False
        directory = Path(self.directory)
        if best:
            self.best_return, self.best_by = score, by
            files.copy_files(path, directory / BEST)
        kept = files.step_directories(directory)
        for step, old in kept:
            if step > self.env_step:
                files.remove(old)
        for _, old in [(s, p) for s, p in kept if s <= self.env_step][:-self.keep_last]:
            files.remove(old)


@dataclass
class RecentReturns(EpisodeHook):
    """The returns of the last ``n`` episodes the env ended (terminated or truncated, not cut
    by the stop): what ``best`` is chosen by in a run without evaluations. A
    ``ResumableExperiment`` that keeps the best adds one to its hook.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNEpisodes(5, progress=False), RecentReturns(n=3))
        >>> len(hook.returns), hook.mean in (-1.0, 1.0) or -1.0 < hook.mean < 1.0
        (3, True)
    """

    n: int = 20
    returns: collections.deque = field(default_factory=collections.deque)

    def __post_init__(self) -> None:
        require_positive_int("RecentReturns", "n", self.n)
        self.returns = collections.deque(self.returns, maxlen=self.n)

    @property
    def mean(self) -> float | None:
        """Their mean (``None`` before an episode ended)."""
        return sum(self.returns) / len(self.returns) if self.returns else None

    def on_episode(self, episode: Episode, policy: Any, env: Any) -> None:
        if episode.terminated or episode.truncated:  # not an episode cut by the stop
            self.returns.append(episode.total_reward)
