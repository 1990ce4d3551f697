"""ResumableExperiment: an experiment that checkpoints all of itself and continues exactly.

A checkpoint of an experiment is taken at one point of the run loop: right after a step's stop
check (every PostAct call of the step made, the stop condition asked), where the loop calls the
experiment's ``after_step`` callbacks. It holds the policy (an Agent with its trajectory), the
env (in the middle of its episode), the stop condition, every hook, the reset condition, the
:class:`~stagerl.checkpoints.CheckpointSchedule`, the global random states (numpy's, Python's,
torch's CPU generator) and torch's thread count. :func:`resume` builds the experiment back, and
its ``run`` continues the loop from that point (``Experiment.run(start_at=StepEnd(...))``): the
episode goes on where it was (no reset, no PreEpisode), so the run ends as the one that was
never interrupted would have, bit for bit on the CPU.
"""

from __future__ import annotations

import random
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import stagerl.checkpoints.api as api
import stagerl.checkpoints.files as files
from stagerl.checkpoints.graph import encode, encode_parts
from stagerl.checkpoints.registry import CheckpointError
from stagerl.checkpoints.schedule import CheckpointSchedule, RecentReturns
from stagerl.core.hooks import EmptyHook
from stagerl.core.hooks_base import ComposedHook, Hook
from stagerl.core.run import Experiment, StepEnd
from stagerl.core.stop_conditions import StopAfterNSteps, steps_per_act
from stagerl.logging.periodic_evaluation import Evaluate

__all__ = ["ResumableExperiment", "resume", "global_state", "restore_global_state"]

_PARTS = ("policy", "env", "stop_condition", "hook", "reset_condition", "checkpoints",
          "position")


class ResumableExperiment(Experiment):
    """An :class:`~stagerl.Experiment` that saves all of itself on the schedule
    ``checkpoints`` (a :class:`CheckpointSchedule`), and which :func:`resume` continues exactly
    from such a checkpoint.

    At a step where a save is due, once the step's stop check is made, the whole experiment is
    written to ``directory/step-N``. Ctrl-C during :meth:`run` (or :meth:`interrupt`) finishes
    the current step, writes a checkpoint, announces PostExperiment (logs are flushed) and
    raises ``KeyboardInterrupt``; a second Ctrl-C stops at once. ``checkpoints=None`` saves
    nothing (a resumed experiment's checkpoints are its own).

    A member of ``hook`` that is not data (its class not registered with
    :func:`~stagerl.checkpoints.register`, or holding a function) is left out of the checkpoints
    with one warning naming it: the run goes on with it, a resumed run without it. ``best`` is
    chosen by the newest evaluation of an ``Evaluate`` among the hook's members and, before the
    first (or without one), by the returns of the last training episodes: with ``keep_best``
    the experiment adds a :class:`~stagerl.checkpoints.schedule.RecentReturns` to its hook as
    its last member, unless the hook has one.

    ``info`` is plain data kept in every checkpoint's manifest (the experiment's name, seed,
    hyper-parameters), for the code that resumes it to check.

    Example:
        >>> import tempfile, stagerl as rl
        >>> from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment, resume
        >>> directory = tempfile.mkdtemp()
        >>> def parts():
        ...     trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=16))
        ...     return rl.Agent(rl.RandomPolicy(rng=0), trajectory), rl.RandomWalk1D()
        >>> agent, env = parts()
        >>> _ = ResumableExperiment(agent, env, rl.StopAfterNSteps(50, progress=False),
        ...     rl.TotalRewardPerEpisode(), checkpoints=CheckpointSchedule(20, directory)).run()
        >>> resumed = resume(directory + "/step-000000020")
        >>> resumed.stop_condition.step
        20
        >>> _ = resumed.run()    # steps 21 to 50, exactly as they ran above
        >>> resumed.hook[0].rewards == rl.run(*parts(), rl.StopAfterNSteps(50, progress=False),
        ...                                   rl.TotalRewardPerEpisode()).rewards
        True
    """

    def __init__(self, policy: Any, env: Any, stop_condition: Any, hook: Any,
                 reset_condition: Any = None, *, checkpoints: CheckpointSchedule | None = None,
                 check_methods: bool = True, info: dict | None = None) -> None:
        hook, checkpoints = _deprecated_checkpoint_hooks(hook, checkpoints)
        if checkpoints is not None and not isinstance(checkpoints, CheckpointSchedule):
            raise TypeError(f"checkpoints must be a stagerl.checkpoints.CheckpointSchedule or "
                            f"None, got {checkpoints!r}; e.g. CheckpointSchedule(every_n_steps="
                            "10_000, directory='run/checkpoints')")
        if info is not None and not isinstance(info, dict):
            raise TypeError(f"info must be a dict of plain data, got {info!r}")
        if checkpoints is not None and checkpoints.keep_best and (hook is None or isinstance(
                hook, Hook)) and not any(isinstance(m, RecentReturns) for m in _members(hook)):
            # best is chosen by training returns before (or without) evaluations
            returns = RecentReturns(checkpoints.recent_episodes)
            hook = returns if hook is None else hook + returns
        super().__init__(policy, env, stop_condition, hook, reset_condition,
                         after_step=[self._save_point], check_methods=check_methods)
        self.checkpoints = checkpoints
        self.info = info
        self._start_at: StepEnd | None = None
        self._interrupted = False
        self._at_save_point = False
        self._per_act = 1
        self._unsaved = _unsaved_members(self.hook) if checkpoints is not None else []

    def interrupt(self) -> None:
        """Stop at the end of the current step as Ctrl-C does: write a checkpoint (when there
        is a schedule), announce PostExperiment, raise ``KeyboardInterrupt``."""
        self._interrupted = True

    def run(self, *, checkpoint_on_interrupt: bool = True) -> ResumableExperiment:
        """Run the loop, from the start or from where the checkpoint it was resumed from left
        it; returns ``self``. ``checkpoint_on_interrupt``: Ctrl-C writes a checkpoint at the end
        of the current step (in the main thread, while there is a schedule)."""
        self._per_act = steps_per_act(self.env)
        restore = _catch_interrupts(self) if checkpoint_on_interrupt and \
            self.checkpoints is not None else None
        start_at, self._start_at = self._start_at, None
        try:
            super().run(start_at=start_at)
        finally:
            if restore is not None:
                restore()
            self._interrupted = False
        return self

    def _save_point(self, stop: bool) -> None:
        # The loop calls this after every step's stop check: the one point a run continues
        # exactly from.
        schedule, interrupted = self.checkpoints, self._interrupted
        if schedule is None:
            if interrupted:
                raise KeyboardInterrupt("interrupted")
            return
        due = schedule.count(self._per_act)
        if not (due or interrupted or (stop and schedule.at_end)):
            return
        reason = "interrupted" if interrupted else "every_n_steps" if due else "end"
        score, by = self.score()
        best = schedule.is_best(score, by)
        path = schedule.path()
        self._at_save_point = True
        try:
            self.save(path, stop, env_steps=schedule.env_step, reason=reason,
                      recent_return=score, scored_by=by, best=best)
        finally:
            self._at_save_point = False
        schedule.keep(path, best, score, by)
        if interrupted:
            raise KeyboardInterrupt(f"interrupted; checkpoint written to {path}")

    def score(self) -> tuple[float | None, str]:
        """What ``best`` is chosen by, and which it is: the newest evaluation's mean return
        (``"evaluation"``) once an ``Evaluate`` among the hook's members has evaluated, else the
        mean return of the last training episodes the env ended (``"training"``; ``None``
        before one)."""
        members = _members(self.hook)
        evaluations = next((m for m in members if isinstance(m, Evaluate) and m.returns), None)
        if evaluations is not None:
            return evaluations.means[-1], "evaluation"
        recent = next((m for m in members if isinstance(m, RecentReturns)), None)
        return (None if recent is None else recent.mean), "training"

    def save(self, path: str | Path, stopped: bool = False, **summary: Any) -> Path:
        """Write the whole experiment to the checkpoint directory ``path``; ``summary`` adds
        entries to the manifest's summary. Only at the loop's save point (where the schedule
        saves): the one place a run continues exactly from."""
        if not self._at_save_point:
            raise RuntimeError("an experiment continues exactly only from the point of the loop "
                               "where it saves on its schedule; give it checkpoints="
                               "stagerl.checkpoints.CheckpointSchedule(...) instead of calling "
                               "save")
        hook = self.hook
        if self._unsaved:
            kept = [m for m in _members(hook) if not any(m is u for u in self._unsaved)]
            hook = kept[0] if len(kept) == 1 else ComposedHook(*kept) if kept else EmptyHook()
        parts = {
            "state_dict": api.state_dict_of(self.policy),  # first: plain data, read alone
            "policy": self.policy,
            "env": self.env,
            "stop_condition": self.stop_condition,
            "hook": hook,
            "reset_condition": self.reset_condition,
            "checkpoints": self.checkpoints,
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
    checkpoint). The experiment's schedule goes on writing into the directory the checkpoint is
    in.

    Args:
        steps: continue to this many env steps in all (the run's ``StopAfterNSteps`` gets this
            ``n``; a run that had stopped goes on). Refused below the steps already taken.
        stop_condition: another stop condition, counting from where the checkpoint is (a run
            that had stopped goes on).
        map_location: where tensors go (``"cpu"`` for a checkpoint written on a GPU).
        expect: what the checkpoint must hold (see :func:`load`), checked before loading.
        restore_globals: set numpy's, Python's and torch's global random states and torch's
            thread count to the checkpoint's (needed for an exact continuation).

    Raises:
        CheckpointError: no checkpoint at ``path``, or one that is damaged, crafted, of a
            single object rather than an experiment, or of another ``expect``; one line.
    """
    path = files.find(path)
    manifest, root = api.read(path, map_location=map_location, expect=expect)
    if manifest.get("kind") != "experiment":
        raise CheckpointError(f"{path} holds a single {manifest.get('summary', {}).get('type')}"
                              " saved with save(), not a whole experiment; load it with "
                              "stagerl.checkpoints.load")
    if not isinstance(root, dict) or not set(_PARTS) <= set(root):
        raise CheckpointError(f"{path}: malformed checkpoint (an experiment without its parts)")
    position, schedule = root["position"], root["checkpoints"]
    if type(position) is not dict or type(position.get("stopped")) is not bool:
        raise CheckpointError(f"{path}: malformed checkpoint (position {position!r})")
    if schedule is not None and not isinstance(schedule, CheckpointSchedule):
        raise CheckpointError(f"{path}: malformed checkpoint (its schedule is a "
                              f"{type(schedule).__name__})")
    stopped = position["stopped"]
    stop = root["stop_condition"]
    if steps is not None:
        stop = _stop_after(stop, steps, path)
        stopped = stop.step >= stop.n
    elif stop_condition is not None:
        stop = stop_condition
        stopped = False
    if schedule is not None:
        schedule.directory = path.parent
    try:
        experiment = ResumableExperiment(root["policy"], root["env"], stop, root["hook"],
                                         root["reset_condition"], checkpoints=schedule,
                                         info=manifest.get("info"))
    except (TypeError, ValueError) as error:  # parts of the wrong kind
        raise CheckpointError(f"{path}: malformed checkpoint ({_first_line(error)})") from None
    experiment._start_at = StepEnd(stopped=stopped)
    if restore_globals and "globals" in root:
        restore_global_state(root["globals"])
    return experiment


def _first_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:200] or type(error).__name__


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


def _members(hook: Any) -> list:
    if hook is None:
        return []
    return list(hook.hooks) if isinstance(hook, ComposedHook) else [hook]


def _unsaved_members(hook: Any) -> list:
    """The members of ``hook`` that are not data: each left out of the checkpoints, with a
    warning naming it."""
    unsaved = []
    for member in _members(hook):
        try:
            encode(member, type(member).__name__)
        except CheckpointError as error:
            unsaved.append(member)
            cls = type(member)
            warnings.warn(
                f"the hook {cls.__module__}.{cls.__qualname__} is left out of the checkpoints "
                f"({error}); the run goes on with it, a resumed run without it. To keep it, "
                f"call stagerl.checkpoints.register({cls.__qualname__}) before the run",
                UserWarning, stacklevel=4)
    return unsaved


def _deprecated_checkpoint_hooks(hook: Any, checkpoints: Any) -> tuple[Any, Any]:
    """``hook`` without the deprecated ``Checkpoint`` hooks, and the schedule one of them
    held."""
    from stagerl.checkpoints.hook import Checkpoint

    if hook is None:
        return hook, checkpoints
    members = _members(hook)
    found = [m for m in members if isinstance(m, Checkpoint)]
    if not found:
        return hook, checkpoints
    if checkpoints is not None or len(found) > 1:
        raise TypeError("a ResumableExperiment saves on one schedule: pass "
                        "checkpoints=CheckpointSchedule(...) and no Checkpoint hook")
    rest = [m for m in members if m is not found[0]]
    hook = rest[0] if len(rest) == 1 else ComposedHook(*rest) if rest else None
    return hook, found[0].schedule


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
