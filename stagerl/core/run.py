"""run() and Experiment: the staged loop of an experiment.

The loop with every call written out (``docs/loop.md`` prints this text; a test runs it beside
:meth:`Experiment.run` and checks that both make the same calls in the same order)::

    def plain_run(policy, env, stop_condition, hook, reset_condition):
        push(hook, PreExperimentStage(), policy, env)  # the hook first here
        push(policy, PreExperimentStage(), env)
        stop = False
        try:
            while not stop:
                env.reset()
                push(policy, PreEpisodeStage(), env)
                optimise(policy, PreEpisodeStage())
                push(hook, PreEpisodeStage(), policy, env)
                while not reset_condition.check(policy, env):  # before every step, the first too
                    push(policy, PreActStage(), env)
                    optimise(policy, PreActStage())
                    push(hook, PreActStage(), policy, env)
                    action = plan(policy, env)
                    env.act(action)
                    env.last_action = action
                    push(policy, PostActStage(), env, action)  # the only stage given the action
                    optimise(policy, PostActStage())
                    push(hook, PostActStage(), policy, env)
                    if stop_condition.check(policy, env):  # once per step, after the PostAct hook
                        stop = True
                        break
                push(policy, PostEpisodeStage(), env)
                optimise(policy, PostEpisodeStage())
                push(hook, PostEpisodeStage(), policy, env)
        finally:  # also when an exception or Ctrl-C leaves the loop
            push(policy, PostExperimentStage(), env)  # the policy first here
            push(hook, PostExperimentStage(), policy, env)
        return hook

:class:`Experiment` runs the same calls, each resolved once per experiment by
:class:`~stagerl.core.stage_calls.StageCalls` rather than once per step
(:meth:`Experiment.describe` lists what each stage resolves to). Beyond the plain loop it calls
its ``after_step`` callbacks after every step's stop check, announces PostExperiment member by
member when the loop is left by an exception, and ``run(start_at=StepEnd(...))`` enters the loop
at the end of a step saved earlier (how a checkpointed run continues).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from numpy import ndarray

from stagerl.core.dispatch import push
from stagerl.core.hooks import EmptyHook
from stagerl.core.hooks_base import Hook
from stagerl.core.method_checks import check_methods
from stagerl.core.policy import Policy
from stagerl.core.reset_conditions import ResetCondition, ResetIfEnvTerminated
from stagerl.core.run_checks import (
    checked_after_step,
    checked_env,
    checked_hook,
    checked_policy,
    checked_reset_condition,
    checked_stop_condition,
)
from stagerl.core.stage_calls import POST_ACT, StageCalls, composed_members, short_name
from stagerl.core.stages import PostExperimentStage, PreExperimentStage
from stagerl.core.stop_conditions import (
    StopAfterNEpisodes,
    StopAfterNSteps,
    StopCondition,
    episodes_ended,
)

__all__ = ["run", "Experiment", "StepEnd"]

# The checks of the default conditions, which the loop makes inline while they are these.
_RESET_CHECK, _STEPS_CHECK = ResetIfEnvTerminated.check, StopAfterNSteps.check
# Stages carry no data, so one instance of each serves every call.
PRE_EXPERIMENT = PreExperimentStage()
POST_EXPERIMENT = PostExperimentStage()


@dataclass(frozen=True)
class StepEnd:
    """Where :meth:`Experiment.run` starts when it continues a run saved at the end of a step
    (right after that step's stop check): the episode goes on without a reset or PreEpisode.

    ``stopped``: that step's stop check said stop (the loop then ends the episode at once).
    """

    stopped: bool = False


def run(
    policy: Policy,
    env: Any,
    stop_condition: StopCondition | None = None,
    hook: Hook | None = None,
    reset_condition: ResetCondition | None = None,
) -> Hook:
    """Run ``policy`` in ``env`` until ``stop_condition`` says stop; returns the hook.

    Defaults (new ones for each call): ``StopAfterNEpisodes(1)``, ``EmptyHook()``,
    ``ResetIfEnvTerminated()``. The order of the calls is that of ``docs/loop.md``;
    PostExperiment is announced also when the loop is left by an exception or Ctrl-C, which then
    propagates.

    Example:
        >>> import stagerl as rl
        >>> hook = rl.run(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...               rl.StopAfterNSteps(10, progress=False), rl.StepsPerEpisode())
        >>> sum(hook.steps) + hook.count
        10
    """
    return Experiment(policy, env, stop_condition, hook, reset_condition).run().hook


class Experiment:
    """A policy, an env, a stop condition, a hook and a reset condition, run together.

    Arguments are checked here, before anything runs (``policy.validate(env)`` included);
    ``experiment.run()`` runs the loop and returns the experiment. ``None`` for
    ``stop_condition`` or ``hook`` means the defaults of :func:`run`. When the loop starts, a
    method that the loop can never call for an object of this experiment (a hook's
    ``push(hook, stage, env)`` without the policy, ``optimise(policy, stage)`` for the policy
    inside an Agent...) is reported with a warning naming the call the loop makes
    (``check_methods=False`` turns that off). ``after_step`` is a list of callables called as
    ``f(stop)`` after every step's stop check (``stop``: whether the run ends there).

    Example:
        >>> import stagerl as rl
        >>> experiment = rl.Experiment(rl.RandomPolicy(rng=0), rl.RandomWalk1D(),
        ...                            rl.StopAfterNEpisodes(2, progress=False),
        ...                            rl.TotalRewardPerEpisode())
        >>> len(experiment.run().hook.rewards)
        2
    """

    def __init__(
        self,
        policy: Policy,
        env: Any,
        stop_condition: StopCondition | None,
        hook: Hook | None,
        reset_condition: ResetCondition | None = None,
        *,
        after_step: Sequence[Callable[[bool], None]] = (),
        check_methods: bool = True,
    ) -> None:
        self.policy = checked_policy(policy)
        self.env = checked_env(env)
        self.check_methods = check_methods
        self.stop_condition = checked_stop_condition(
            StopAfterNEpisodes(1) if stop_condition is None else stop_condition
        )
        self.hook = checked_hook(EmptyHook() if hook is None else hook)
        self.reset_condition = checked_reset_condition(
            ResetIfEnvTerminated() if reset_condition is None else reset_condition
        )
        #: Called after every step's stop check as ``f(stop)``, in order (a checkpointing
        #: experiment saves itself there).
        self.after_step = checked_after_step(after_step)
        validate = getattr(self.policy, "validate", None)
        if validate is not None:
            validate(self.env)

    def run(self, *, start_at: StepEnd | None = None) -> Experiment:
        """Run the loop once (the module docstring writes it out); returns ``self``.

        ``start_at``: ``None`` starts a new run; a :class:`StepEnd` continues one saved at the
        end of a step: PreExperiment is announced, then the episode goes on from that step
        (no ``env.reset()``, no PreEpisode).
        """
        if start_at is not None and not isinstance(start_at, StepEnd):
            raise TypeError(f"start_at must be None or a StepEnd, got {start_at!r}")
        policy, env, hook = self.policy, self.env, self.hook
        try:
            self._run_stages(start_at)
        except BaseException as error:  # Ctrl-C too: logs are flushed either way
            _announce_post_experiment(policy, env, hook, error)
            raise
        _announce_post_experiment(policy, env, hook, None)
        return self

    def describe(self) -> str:
        """What each stage's calls resolve to for this experiment's policy, env and hook: one
        line per call with the method's ``file:line`` (resolved now; a method registered at
        PreExperiment shows once the run has started).

        Example:
            >>> import stagerl as rl
            >>> experiment = rl.Experiment(rl.RandomPolicy(rng=0), rl.RandomWalk1D(), None,
            ...                            rl.StepsPerEpisode())
            >>> print(experiment.describe().splitlines()[0])
            Experiment(RandomPolicy, RandomWalk1D, hook StepsPerEpisode):
        """
        calls = StageCalls(self.policy, self.env, self.hook)
        header = (f"{type(self).__name__}({short_name(self.policy)}, {short_name(self.env)}, hook "
                  f"{short_name(self.hook)}):")
        return "\n".join([header, *calls.lines()])

    def _run_stages(self, start_at: StepEnd | None) -> None:
        run_stages = getattr(getattr(self.env, "dynamic_style", None), "run_stages", None)
        if run_stages is not None:  # a game's own loop (stagerl.multi_agent)
            return run_stages(self, start_at)
        policy, env, hook = self.policy, self.env, self.hook
        stop_condition, reset_condition = self.stop_condition, self.reset_condition
        after_step = self.after_step
        push(hook, PRE_EXPERIMENT, policy, env)  # hook first here
        push(policy, PRE_EXPERIMENT, env)
        calls = StageCalls(policy, env, hook)  # resolved after PreExperiment, which may register
        if self.check_methods:
            check_methods(policy, env, composed_members(hook, PRE_EXPERIMENT, policy, env))
        # Bound once: the per-step lookups of these methods cost more than the checks of the
        # default conditions themselves.
        check_stop, check_reset = stop_condition.check, reset_condition.check
        # The default conditions are checked inline, with the rules of their check() (one call
        # less each, per step; tests/stagerl/core/test_loop_fast_paths.py runs both ways): the
        # reset while both flags are plain bools or the terminations a vector env's array
        # (never a reset), the step count while no progress bar is due, by the env's steps per
        # act (known after one check).
        inline_reset = getattr(check_reset, "__func__", None) is _RESET_CHECK and \
            type(reset_condition) is ResetIfEnvTerminated
        counts_steps = getattr(check_stop, "__func__", None) is _STEPS_CHECK and \
            type(stop_condition) is StopAfterNSteps
        inline_stop, steps_per_act = False, 1
        stop = False
        while not stop:
            calls = calls.current()
            pre_act, plan_action, post_act = calls.pre_act, calls.plan, calls.post_act
            # One call (the hooks' together, most often) is made without a for loop.
            post_act_one = post_act[0] if len(post_act) == 1 else None
            push_with_action = calls.push_with_action
            act = env.act
            if start_at is None:
                env.reset()
                if env.is_terminated is not False or env.is_truncated is not False:
                    _refuse_finished_episode(env)  # plain False flags (most envs) pass as is
                for call in calls.pre_episode:  # push(policy, ...); optimise(...); push(hook, ...)
                    call()
            else:  # the episode a saved run was in goes on from the step it ended at
                stop, start_at = start_at.stopped, None
            while not stop:
                if inline_reset:
                    reset = env.is_terminated
                    if reset is False:
                        reset = env.is_truncated
                    elif type(reset) is ndarray and reset.ndim:  # a vector env's flags: never
                        reset = False
                    if reset is not True and reset is not False:
                        reset = check_reset(policy, env)
                else:
                    reset = check_reset(policy, env)
                if reset:
                    break
                if pre_act:
                    for call in pre_act:
                        call()
                action = plan_action()
                act(action)
                env.last_action = action
                push_action = push_with_action[type(action)]
                if push_action is not None:
                    push_action(policy, POST_ACT, env, action)  # the only push given the action
                if post_act_one is not None:
                    post_act_one()
                elif post_act:
                    for call in post_act:  # optimise(policy, PostActStage()); push(hook, ...)
                        call()
                # after the PostAct hook
                step = stop_condition.step + steps_per_act if inline_stop else 0
                if inline_stop and step < stop_condition._next_redraw:
                    stop_condition.step = step
                    stop = step >= stop_condition.n
                else:
                    stop = check_stop(policy, env)
                    if stop is not True and stop is not False:
                        stop = bool(stop)
                    if counts_steps:
                        inline_stop = stop_condition._env is env
                        steps_per_act = stop_condition._steps_per_act
                if after_step:
                    for callback in after_step:
                        callback(stop)
            for call in calls.post_episode:
                call()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.policy!r}, {self.env!r}, {self.stop_condition!r}, "
            f"{self.hook!r}, {self.reset_condition!r})"
        )


def _refuse_finished_episode(env: Any) -> None:
    # Otherwise the reset condition is true at once, forever: an endless loop of empty episodes.
    if episodes_ended(env):
        name = type(env).__name__
        raise RuntimeError(
            f"{name} is already terminated or truncated right after reset(); its reset() must "
            f"start a new episode (is_terminated and is_truncated both False)"
        )


def _announce_post_experiment(policy: Any, env: Any, hook: Any, error: BaseException | None):
    """PostExperiment for the policy, then the hook, each even if the other raised.

    The members of a composed hook are announced one by one, so one failing member does not keep
    the others from flushing their logs. With ``error`` (the loop's exception) a failure here
    becomes a note on ``error``, which the caller re-raises unchanged; without it the first
    failure is raised and later ones are noted on it.
    """
    calls = [
        ("push(policy, PostExperimentStage(), env)", partial(push, policy, POST_EXPERIMENT, env))
    ]
    for member in composed_members(hook, POST_EXPERIMENT, policy, env):
        described = "hook" if member is hook else f"{type(member).__name__} (a member of hook)"
        calls.append(
            (
                f"push({described}, PostExperimentStage(), policy, env)",
                partial(push, member, POST_EXPERIMENT, policy, env),
            )
        )
    raised: BaseException | None = None
    for description, call in calls:
        try:
            call()
        except BaseException as failure:
            if error is None and raised is None:
                raised = failure
            else:
                _add_note(
                    error or raised, f"while finishing, {description} raised:\n" + _told(failure)
                )
    if raised is not None:
        raise raised


def _told(failure: BaseException) -> str:
    lines = traceback.format_exception(type(failure), failure, failure.__traceback__)
    return "".join(lines).rstrip()


def _add_note(error: BaseException, note: str) -> None:
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(note)
    else:  # Python 3.10: same attribute, shown by 3.11+ tracebacks and readable by tools
        error.__notes__ = [*getattr(error, "__notes__", []), note]
