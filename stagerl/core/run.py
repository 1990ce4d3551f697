"""run() and Experiment: the staged loop of an experiment.

The loop below reads as the pseudocode in ``docs/loop.md``. What it calls at each stage is
resolved once per experiment by :class:`~stagerl.core.stage_calls.StageCalls`, not once per
step; the calls made, and their order, are exactly those of plain dispatch.
"""

from __future__ import annotations

import traceback
from functools import partial
from typing import Any

import gymnasium

from stagerl.core.dispatch import push
from stagerl.core.env import Env
from stagerl.core.hooks import EmptyHook
from stagerl.core.hooks_base import Hook
from stagerl.core.method_checks import check_methods
from stagerl.core.policy import Policy
from stagerl.core.reset_conditions import ResetCondition, ResetIfEnvTerminated
from stagerl.core.stage_calls import POST_ACT, StageCalls, composed_members
from stagerl.core.stages import PostExperimentStage, PreExperimentStage
from stagerl.core.stop_conditions import StopAfterNEpisodes, StopCondition, episodes_ended

__all__ = ["run", "Experiment"]

# Stages carry no data, so one instance of each serves every call.
PRE_EXPERIMENT = PreExperimentStage()
POST_EXPERIMENT = PostExperimentStage()


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
    (``check_methods=False`` turns that off).

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
        check_methods: bool = True,
    ) -> None:
        self.policy = _checked_policy(policy)
        self.env = _checked_env(env)
        self.check_methods = check_methods
        self.stop_condition = _checked_stop_condition(
            StopAfterNEpisodes(1) if stop_condition is None else stop_condition
        )
        self.hook = _checked_hook(EmptyHook() if hook is None else hook)
        self.reset_condition = _checked_reset_condition(
            ResetIfEnvTerminated() if reset_condition is None else reset_condition
        )
        validate = getattr(self.policy, "validate", None)
        if validate is not None:
            validate(self.env)

    #: Where the loop starts: ``None`` (a new run: PreExperiment, reset, PreEpisode) or, to
    #: continue a run saved at a step's end, ``{"stopped": bool}`` (the episode goes on from that
    #: step, without a reset; ``stopped``: that step's stop check was true). Reset by ``run``.
    position: dict | None = None

    def run(self) -> Experiment:
        """Run the loop once (``docs/loop.md``); returns ``self``."""
        policy, env, hook = self.policy, self.env, self.hook
        try:
            self._run_stages()
        except BaseException as error:  # Ctrl-C too: logs are flushed either way
            _announce_post_experiment(policy, env, hook, error)
            raise
        _announce_post_experiment(policy, env, hook, None)
        return self

    def _step_end(self):
        """A callable run after every step's stop check as ``f(stopped)``, or ``None`` (the
        default: nothing more per step). A checkpointing experiment saves itself there."""
        return None

    def _run_stages(self) -> None:
        run_stages = getattr(getattr(self.env, "dynamic_style", None), "run_stages", None)
        if run_stages is not None:  # a game's own loop (stagerl.multi_agent)
            return run_stages(self)
        policy, env, hook = self.policy, self.env, self.hook
        stop_condition, reset_condition = self.stop_condition, self.reset_condition
        push(hook, PRE_EXPERIMENT, policy, env)  # hook first here
        push(policy, PRE_EXPERIMENT, env)
        calls = StageCalls(policy, env, hook)  # resolved after PreExperiment, which may register
        if self.check_methods:
            check_methods(policy, env, composed_members(hook, PRE_EXPERIMENT, policy, env))
        step_end = self._step_end()
        resumed, self.position = self.position, None
        stop = False
        while not stop:
            calls = calls.current()
            pre_act, plan_action, post_act = calls.pre_act, calls.plan, calls.post_act
            push_with_action = calls.push_with_action
            if resumed is None:
                env.reset()
                _refuse_finished_episode(env)
                for call in calls.pre_episode:  # push(policy, ...); optimise(...); push(hook, ...)
                    call()
            else:  # the episode a saved run was in goes on from the step it ended at
                stop, resumed = bool(resumed["stopped"]), None
            while not stop and not reset_condition.check(policy, env):
                for call in pre_act:
                    call()
                action = plan_action()
                env.act(action)
                env.last_action = action
                push_action = push_with_action[type(action)]
                if push_action is not None:
                    push_action(policy, POST_ACT, env, action)  # the only push given the action
                for call in post_act:  # optimise(policy, PostActStage()); push(hook, ...)
                    call()
                stop = bool(stop_condition.check(policy, env))  # after the PostAct hook
                if step_end is not None:
                    step_end(stop)
            for call in calls.post_episode:
                call()

    def __repr__(self) -> str:
        return (
            f"Experiment({self.policy!r}, {self.env!r}, {self.stop_condition!r}, {self.hook!r}, "
            f"{self.reset_condition!r})"
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


# ---- argument checks: wrong kinds fail here with the fix, not deep inside the loop ----


def _checked_policy(policy: Any) -> Policy:
    if not isinstance(policy, Policy):
        raise TypeError(
            f"run needs a stagerl.Policy as policy, got {policy!r} of type "
            f"{type(policy).__name__}; subclass stagerl.Policy and define its plan with "
            "@stagerl.plan.dispatch, or use stagerl.RandomPolicy()"
        )
    return policy


def _checked_env(env: Any) -> Any:
    if isinstance(env, Env):
        return env
    # Other objects with reset() and act() are driven too; a gymnasium env has no act().
    if isinstance(env, gymnasium.Env) or not all(
        callable(getattr(env, verb, None)) for verb in ("reset", "act")
    ):
        raise TypeError(
            f"run needs a stagerl.Env as env, got {env!r} of type {type(env).__name__}; wrap a "
            "gymnasium env or id in stagerl.GymEnv(...), or subclass stagerl.Env"
        )
    return env


def _has_check(condition: Any) -> bool:
    return callable(getattr(condition, "check", None))


def _checked_stop_condition(stop_condition: Any) -> Any:
    # Any object with a callable check(policy, env) will do; the base class is a convenience.
    if _has_check(stop_condition):
        return stop_condition
    if isinstance(stop_condition, int) and not isinstance(stop_condition, bool):
        fix = f"to stop after {stop_condition} steps pass StopAfterNSteps({stop_condition})"
    else:
        fix = ("pass e.g. StopAfterNSteps(n) or StopAfterNEpisodes(n), or an object with a "
               "check(policy, env) method (a stagerl.StopCondition subclass, say)")
    raise TypeError(
        f"stop_condition needs a check(policy, env) method, got {stop_condition!r} of type "
        f"{type(stop_condition).__name__}; {fix}"
    )


def _checked_hook(hook: Any) -> Hook:
    if isinstance(hook, Hook):
        return hook
    if callable(hook):
        fix = "to call a function every step pass DoEveryNSteps(f), or subclass stagerl.Hook"
    else:
        fix = "pass e.g. TotalRewardPerEpisode(), compose hooks with +, or subclass stagerl.Hook"
    raise TypeError(
        f"hook must be a stagerl.Hook, got {hook!r} of type {type(hook).__name__}; {fix}"
    )


def _checked_reset_condition(reset_condition: Any) -> Any:
    if _has_check(reset_condition):
        return reset_condition
    raise TypeError(
        f"reset_condition needs a check(policy, env) method, got {reset_condition!r} of type "
        f"{type(reset_condition).__name__}; pass e.g. ResetIfEnvTerminated() or "
        "ResetAfterNSteps(n), or an object with a check(policy, env) method (a "
        "stagerl.ResetCondition subclass, say)"
    )
