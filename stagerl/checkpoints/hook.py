"""Checkpoint: the hook that scheduled a ResumableExperiment's saves (deprecated).

A :class:`~stagerl.checkpoints.ResumableExperiment` now takes its schedule as a parameter,
``checkpoints=CheckpointSchedule(...)``. A ``Checkpoint`` among its hooks still works for one
release: the experiment takes the hook out and saves on the schedule it holds.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from stagerl.checkpoints.schedule import BEST, CheckpointSchedule
from stagerl.core.dispatch import DEFAULT_PRECEDENCE, push
from stagerl.core.hooks_base import Hook
from stagerl.core.stages import PreExperimentStage

__all__ = ["Checkpoint", "BEST"]


class Checkpoint(Hook):
    """Deprecated: pass ``checkpoints=CheckpointSchedule(every_n_steps, directory, ...)`` to
    :class:`~stagerl.checkpoints.ResumableExperiment` instead (the same arguments).

    Among a ``ResumableExperiment``'s hooks it is taken out, and the experiment saves on the
    :class:`~stagerl.checkpoints.CheckpointSchedule` it holds (``hook.schedule``). Anywhere else
    it is refused when the run starts: only the experiment can save itself.
    """

    def __init__(self, every_n_steps: int, directory: str | Path = "checkpoints",
                 keep_last: int = 3, keep_best: bool = True, recent_episodes: int = 20,
                 at_end: bool = True) -> None:
        warnings.warn("stagerl.checkpoints.Checkpoint is deprecated: pass checkpoints="
                      "stagerl.checkpoints.CheckpointSchedule(every_n_steps, directory, ...) to "
                      "ResumableExperiment instead of a Checkpoint hook", DeprecationWarning,
                      stacklevel=2)
        self.schedule = CheckpointSchedule(every_n_steps, directory, keep_last, keep_best,
                                           recent_episodes, at_end)

    def __repr__(self) -> str:
        return f"Checkpoint({self.schedule!r})"


@push.dispatch(precedence=DEFAULT_PRECEDENCE)
def _refuse_checkpoint_outside_a_resumable_experiment(hook: Checkpoint,
                                                      stage: PreExperimentStage, policy, env):
    raise ValueError("Checkpoint saves a whole experiment (agent, env, hooks, stop condition), "
                     "so only the experiment can save: build a stagerl.checkpoints."
                     "ResumableExperiment(policy, env, stop_condition, hook, checkpoints="
                     "CheckpointSchedule(...)) instead of calling run(...) or stagerl.Experiment")
