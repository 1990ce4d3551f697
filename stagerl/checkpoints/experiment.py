"""ResumableExperiment: an experiment that checkpoints all of itself and continues exactly.

A checkpoint of an experiment is taken at one point of the run loop: right after a step's stop
check (every PostAct call of the step made, the stop condition asked). It holds the policy (an
Agent with its trajectory), the env (in the middle of its episode), the stop condition, every
hook, the reset condition, the global random states (numpy's, Python's, torch's CPU generator)
and torch's thread count. :func:`resume` builds the experiment back, and its ``run`` continues
the loop from that point: the episode goes on where it was (no reset, no PreEpisode), so the run
ends as the one that was never interrupted would have, bit for bit on the CPU.

The loop is ``stagerl.Experiment``'s: it starts at the saved ``position`` and calls the save
point after every step's stop check (``Experiment._step_end``).
"""

from __future__ import annotations

import random
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

import stagerl.checkpoints.api as api
import stagerl.checkpoints.files as files
from stagerl.checkpoints.graph import encode_parts
from stagerl.checkpoints.hook import Checkpoint
from stagerl.checkpoints.registry import CheckpointError
from stagerl.core.hooks_base import ComposedHook
from stagerl.core.run import Experiment
from stagerl.core.stop_conditions import StopAfterNSteps

__all__ = ["ResumableExperiment", "resume", "global_state", "restore_global_state"]

class ResumableExperiment(Experiment):
    """An :class:`~stagerl.Experiment` whose :class:`Checkpoint` hooks save all of it, and
    which :func:`resume` continues exactly from such a checkpoint.

    Build it as an ``Experiment`` (``hook`` holds one or more ``Checkpoint`` hooks, anywhere
    among its members) and call :meth:`run`. At a step where a ``Checkpoint`` is due, once the
    step's stop check is made, the whole experiment is written to ``directory/step-N``. Ctrl-C
    during :meth:`run` (or :meth:`interrupt`) finishes the current step, writes a checkpoint,
    announces PostExperiment (logs are flushed) and raises ``KeyboardInterrupt``; a second
    Ctrl-C stops at once.

    ``info`` is plain data kept in every checkpoint's manifest (the experiment's name, seed,
    hyper-parameters), for the code that resumes it to check.

    Example:
        >>> import tempfile, stagerl as rl
        >>> from stagerl.checkpoints import Checkpoint, ResumableExperiment, resume
        >>> directory = tempfile.mkdtemp()
        >>> def parts():
        ...     trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=16))
        ...     return rl.Agent(rl.RandomPolicy(rng=0), trajectory), rl.RandomWalk1D()
        >>> agent, env = parts()
        >>> _ = ResumableExperiment(agent, env, rl.StopAfterNSteps(50, progress=False),
        ...     rl.TotalRewardPerEpisode() + Checkpoint(20, directory)).run()
        >>> resumed = resume(directory + "/step-000000020")
        >>> resumed.stop_condition.step
        20
        >>> _ = resumed.run()    # steps 21 to 50, exactly as they ran above
        >>> resumed.hook[0].rewards == rl.run(*parts(), rl.StopAfterNSteps(50, progress=False),
        ...                                  rl.TotalRewardPerEpisode()).rewards
        True
    """

    def __init__(self, policy: Any, env: Any, stop_condition: Any, hook: Any,
                 reset_condition: Any = None, *, check_methods: bool = True,
                 info: dict | None = None) -> None:
        super().__init__(policy, env, stop_condition, hook, reset_condition,
                         check_methods=check_methods)
        if info is not None and not isinstance(info, dict):
            raise TypeError(f"info must be a dict of plain data, got {info!r}")
        self.info = info
        self._interrupted = False
        self._at_save_point = False

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """The :class:`Checkpoint` hooks among the hook's members."""
        members = self.hook.hooks if isinstance(self.hook, ComposedHook) else (self.hook,)
        return [m for m in members if isinstance(m, Checkpoint)]

    def interrupt(self) -> None:
        """Stop at the end of the current step as Ctrl-C does: write a checkpoint (with every
        ``Checkpoint`` hook), announce PostExperiment, raise ``KeyboardInterrupt``."""
        self._interrupted = True

    def run(self, *, checkpoint_on_interrupt: bool = True) -> ResumableExperiment:
        """Run the loop, from the start or from where the checkpoint it was resumed from left
        it; returns ``self``. ``checkpoint_on_interrupt``: Ctrl-C writes a checkpoint at the end
        of the current step (in the main thread, while there is a ``Checkpoint`` hook)."""
        checkpoints = self.checkpoints
        for checkpoint in checkpoints:
            checkpoint.attached = True
        restore = _catch_interrupts(self) if checkpoint_on_interrupt and checkpoints else None
        try:
            super().run()
        finally:
            if restore is not None:
                restore()
            for checkpoint in checkpoints:
                checkpoint.attached = False
            self._interrupted = False
        return self

    def _step_end(self):
        # The run loop calls this after every step's stop check: the save point.
        checkpoints = self.checkpoints

        def save_point(stop: bool) -> None:
            if checkpoints or self._interrupted:
                self._save_point(checkpoints, stop)

        return save_point

    def _save_point(self, checkpoints: list[Checkpoint], stop: bool) -> None:
        interrupted = self._interrupted
        written = []
        self._at_save_point = True
        try:
            for checkpoint in checkpoints:
                if checkpoint.due or interrupted or (stop and checkpoint.at_end):
                    reason = ("interrupted" if interrupted else "every_n_steps"
                              if checkpoint.due else "end")
                    written.append(checkpoint.write(self, stop, reason))
        finally:
            self._at_save_point = False
        if interrupted:
            saved = f"; checkpoint written to {written[-1]}" if written else ""
            raise KeyboardInterrupt(f"interrupted{saved}")

    def save(self, path: str | Path, stopped: bool = False, **summary: Any) -> Path:
        """Write the whole experiment to the checkpoint directory ``path``; ``summary`` adds
        entries to the manifest's summary. Only at the loop's save point (where a
        ``Checkpoint`` hook's ``write`` is called): the one place a run continues exactly from.
        """
        if not self._at_save_point:
            raise RuntimeError("an experiment continues exactly only from the point of the loop "
                               "where its Checkpoint hooks write; give it a "
                               "stagerl.checkpoints.Checkpoint hook instead of calling save")
        parts = {
            "state_dict": api.state_dict_of(self.policy),  # first: plain data, read alone
            "policy": self.policy,
            "env": self.env,
            "stop_condition": self.stop_condition,
            "hook": self.hook,
            "reset_condition": self.reset_condition,
            "position": {"stopped": bool(stopped)},
            "globals": global_state(),
        }
        encoded = encode_parts([(name, f"experiment.{name}", value)
                                for name, value in parts.items()])
        described = api.describe(self.policy, self.env)
        described.update(api.jsonable(summary), stopped=bool(stopped))
        manifest = api.manifest_for("experiment", described, encoded.types, self.info)
        return files.write(path, manifest, encoded.tree, encoded.tensors)


def resume(path: str | Path, *, steps: int | None = None, stop_condition: Any = None,
           map_location: Any = None, expect: dict | None = None,
           restore_globals: bool = True) -> ResumableExperiment:
    """The experiment saved at ``path``, ready to continue: its ``run()`` goes on from the
    step the checkpoint was written at and ends as the uninterrupted run would have.

    ``path``: a checkpoint, a directory of checkpoints or a log directory (its newest
    checkpoint). The experiment's ``Checkpoint`` hooks go on writing into the directory the
    checkpoint is in.

    Args:
        steps: continue to this many env steps in all (the run's ``StopAfterNSteps`` gets this
            ``n``; a run that had stopped goes on). Refused below the steps already taken.
        stop_condition: another stop condition, counting from where the checkpoint is (a run
            that had stopped goes on).
        map_location: where tensors go (``"cpu"`` for a checkpoint written on a GPU).
        expect: what the checkpoint must hold (see :func:`load`), checked before loading.
        restore_globals: set numpy's, Python's and torch's global random states and torch's
            thread count to the checkpoint's (needed for an exact continuation).
    """
    path = files.find(path)
    manifest, root = api.read(path, map_location=map_location, expect=expect)
    if manifest.get("kind") != "experiment":
        raise CheckpointError(f"{path} holds a single {manifest.get('summary', {}).get('type')}"
                              " saved with save(), not a whole experiment; load it with "
                              "stagerl.checkpoints.load")
    if not isinstance(root, dict) or not {"policy", "env", "stop_condition", "hook",
                                          "reset_condition", "position"} <= set(root):
        raise CheckpointError(f"{path}: malformed checkpoint (an experiment without its parts)")
    position = dict(root["position"])
    stop = root["stop_condition"]
    if steps is not None:
        stop = _stop_after(stop, steps, path)
        position["stopped"] = stop.step >= stop.n
    elif stop_condition is not None:
        stop = stop_condition
        position["stopped"] = False
    experiment = ResumableExperiment(root["policy"], root["env"], stop, root["hook"],
                                     root["reset_condition"], info=manifest.get("info"))
    experiment.position = position
    for checkpoint in experiment.checkpoints:
        checkpoint.directory = path.parent
    if restore_globals and "globals" in root:
        restore_global_state(root["globals"])
    return experiment


def _stop_after(stop: Any, steps: Any, path: Path) -> StopAfterNSteps:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got steps={steps!r}")
    if not isinstance(stop, StopAfterNSteps):
        raise CheckpointError(f"{path}: steps= continues a run stopped by StopAfterNSteps; this "
                              f"one stops by {type(stop).__name__} (pass stop_condition=)")
    if steps < stop.step:
        raise CheckpointError(f"{path} is at env step {stop.step}, beyond steps={steps}; "
                              "resume with steps of at least that")
    return StopAfterNSteps(steps, progress=stop.progress, step=stop.step)


# -- the process-wide state a run may draw from ------------------------------------------------

def global_state() -> dict:
    """numpy's and Python's global random states and, once torch is imported, torch's CPU
    generator state and thread count (and its CUDA generators' states once CUDA is in use)."""
    state: dict[str, Any] = {"numpy": np.random.get_state(legacy=False),
                             "python": random.getstate()}
    torch = sys.modules.get("torch")
    if torch is not None:
        state["torch"] = torch.get_rng_state()
        state["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["torch_cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_global_state(state: dict) -> None:
    """Set what :func:`global_state` returned."""
    try:
        np.random.set_state(state["numpy"])
        random.setstate(state["python"])
        if "torch" in state:
            import torch

            torch.set_rng_state(state["torch"])
            cuda = state.get("torch_cuda")
            if cuda is not None and torch.cuda.is_available() and \
                    len(cuda) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(cuda)
            threads = state.get("torch_threads")
            if isinstance(threads, int) and threads > 0 and threads != torch.get_num_threads():
                torch.set_num_threads(threads)
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        raise CheckpointError(f"malformed checkpoint: global random state ({error})") from None


def _catch_interrupts(experiment: ResumableExperiment) -> Any:
    """Make the first Ctrl-C ask for a checkpoint at the end of the step (a second one
    interrupts at once); returns what undoes it, or ``None`` off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGINT)

    def on_interrupt(signum: int, frame: Any) -> None:
        if experiment._interrupted:
            raise KeyboardInterrupt
        experiment._interrupted = True

    signal.signal(signal.SIGINT, on_interrupt)
    return lambda: signal.signal(signal.SIGINT, previous)
