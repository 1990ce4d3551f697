"""Each stage's calls, resolved once per experiment (the run loop's per-step cost).

The policy, env and hook of an experiment do not change while it runs, so neither do the types
``push`` / ``optimise`` / ``plan`` dispatch on. :class:`StageCalls` looks each call up once with
plum and keeps the method found, bound to its arguments; a call that lands on a no-op fallback is
left out, and a method marked ``@forwarding`` (the Agent's default ``plan`` and ``optimise``,
which only forward to its policy) is replaced by the call it forwards to. Only
``push(policy, PostActStage(), env, action)`` depends on a value whose type may change from step
to step (the action); it is resolved once per type of action. A method
registered while the experiment runs is picked up at the next episode.

The calls made, and their order, are exactly those of plain dispatch
(``tests/stagerl/core/test_run.py`` runs both loops and compares their calls).
"""

from __future__ import annotations

import functools
import inspect
import linecache
from functools import partial
from pathlib import Path
from typing import Any

import plum

from stagerl.core import fallbacks
from stagerl.core.dispatch import optimise, plan, push
from stagerl.core.hooks_together import (
    DEFAULT_METHODS,
    post_act_function,
    post_episode_together,
    pre_episode_together,
)
from stagerl.core.plum_adapter import (
    LOOKUP_ERRORS,
    registration_count,
    resolve,
    resolve_types,
)
from stagerl.core.plum_adapter import methods as methods_of
from stagerl.core.stages import (
    PostActStage,
    PostEpisodeStage,
    PreActStage,
    PreEpisodeStage,
)

__all__ = ["StageCalls", "no_op_fallbacks", "composed_members", "short_name"]

PRE_EPISODE = PreEpisodeStage()
PRE_ACT = PreActStage()
POST_ACT = PostActStage()
POST_EPISODE = PostEpisodeStage()

# The fallbacks that do nothing: a call resolved to one of them is skipped.
_NO_OP_NAMES = (
    "_push_policy",
    "_push_policy_action",
    "_push_hook",
    "_optimise_policy",
    "_optimise_policy_trajectory",
)


def _fallback_implementations(
    function: plum.Function, names: tuple[str, ...], module: str = fallbacks.__name__
) -> frozenset:
    # @dispatch returns the generic function, not the decorated one, so the plain functions are
    # found among the registered methods.
    return frozenset(
        method.implementation
        for method in methods_of(function)
        if method.implementation.__module__ == module and method.implementation.__name__ in names
    )


@functools.cache
def no_op_fallbacks() -> frozenset:
    """The plain functions of the no-op fallbacks of ``push`` and ``optimise``.

    Looked up on first use, not at import: reading ``Function.methods`` resolves every pending
    registration, which must not happen while another module is half imported.
    """
    return _fallback_implementations(push, _NO_OP_NAMES) | _fallback_implementations(
        optimise, _NO_OP_NAMES
    )


@functools.cache
def _push_composed_hook() -> Any:
    (implementation,) = _fallback_implementations(push, ("_push_composed_hook",))
    return implementation


class StageCalls:
    """The calls of each stage for one policy, env and hook, resolved once with plum.

    Each of ``pre_episode``, ``pre_act``, ``post_act`` (everything after the action push) and
    ``post_episode`` is a tuple of argument-bound callables in the loop's order
    (``docs/loop.md``), without the calls that resolve to a no-op fallback; a
    :class:`ComposedHook` contributes its members' calls.
    ``push_with_action[type(action)]`` is the resolved ``push(policy, PostActStage(), env,
    action)`` method, or ``None`` for the no-op.

    :meth:`current` re-resolves everything when a method was registered since, so the loop
    always calls what plain dispatch would (checked once per episode).
    """

    def __init__(self, policy: Any, env: Any, hook: Any) -> None:
        self.policy, self.env, self.hook = policy, env, hook
        self.registrations = _registrations()
        # Listed call by call (lines()); run with consecutive per-episode hooks as one call.
        self._listed = {
            "PreEpisode": self._stage(PRE_EPISODE),
            "PreAct": self._stage(PRE_ACT),
            "PostAct": self._stage(POST_ACT, with_policy_push=False),
            "PostEpisode": self._stage(POST_EPISODE),
        }
        self.pre_episode = _episode_hooks_together(self._listed["PreEpisode"], policy, env,
                                                   "pre_episode")
        self.pre_act = self._listed["PreAct"]
        self.post_act = _episode_hooks_together(self._listed["PostAct"], policy, env, "post_act")
        self.post_episode = _episode_hooks_together(self._listed["PostEpisode"], policy, env,
                                                    "post_episode")
        (self.plan,) = _bound(plan, (policy, env))  # plan has no no-op fallback
        self.push_with_action = _PushWithAction(policy, env)

    def current(self) -> StageCalls:
        if _registrations() == self.registrations:
            return self
        return StageCalls(self.policy, self.env, self.hook)

    def _stage(self, stage: Any, with_policy_push: bool = True) -> tuple:
        policy, env = self.policy, self.env
        calls = _bound(push, (policy, stage, env)) if with_policy_push else ()
        hooks = _hook_calls(self.hook, stage, policy, env)
        return calls + _bound(optimise, (policy, stage)) + hooks

    def lines(self) -> list[str]:
        """One line per call, stage by stage in the loop's order: the call and the method it
        resolves to, with its ``file:line``."""
        action_push = (f"push({short_name(self.policy)}, PostAct, {short_name(self.env)}, "
                       f"action) -> {self.push_with_action.described()}")
        out = []
        listed = self._listed
        for stage, calls in (("PreEpisode", listed["PreEpisode"]), ("PreAct", listed["PreAct"]),
                             ("plan", (self.plan,)), ("PostAct", listed["PostAct"]),
                             ("PostEpisode", listed["PostEpisode"])):
            out.append(f"  {stage}:")
            described = [_described(call) for call in calls]
            if stage == "PostAct":
                described.insert(0, action_push)
            if not described:
                described = ["(nothing: every call lands on a do-nothing default)"]
            out.extend(f"    {line}" for line in described)
        return out

    def __repr__(self) -> str:
        header = (f"StageCalls({short_name(self.policy)}, {short_name(self.env)}, hook "
                  f"{short_name(self.hook)}):")
        return "\n".join([header, *self.lines()])


class _PushWithAction(dict):
    """``push(policy, PostActStage(), env, action)`` by type of action, resolved on first sight."""

    def __init__(self, policy: Any, env: Any) -> None:
        super().__init__()
        self.policy, self.env = policy, env
        self.types = (type(policy), PostActStage, type(env))

    def described(self) -> str:
        if not self:
            return "resolved by the type of the first action"
        return "; ".join(f"{t.__name__}: " + ("nothing" if m is None else _where(m))
                         for t, m in self.items())

    def __missing__(self, action_type: type) -> Any:
        try:
            method, return_type = resolve_types(push, (*self.types, action_type))
        except LOOKUP_ERRORS:
            method = push  # the plain call raises it, at the moment the plain loop would
        else:
            if method in no_op_fallbacks():
                method = None
            elif return_type is not Any:
                method = push  # plum converts annotated results: keep its call
            else:
                method = _specialised(method, self.policy, self.env)
        self[action_type] = method
        return method


def _specialised(method: Any, policy: Any, env: Any) -> Any:
    """``method``, or the method it names for this policy and env (``method.specialised_for(
    policy, env)``: the Agent's PostAct push of a single env's plain steps, its checks of
    the policy and env made once)."""
    specialise = getattr(method, "specialised_for", None)
    return (specialise(policy, env) or method) if specialise is not None else method


def _bound(function: plum.Function, args: tuple) -> tuple:
    """The method ``function(*args)`` resolves to, bound to ``args``; ``()`` for a no-op."""
    try:
        method, return_type = resolve(function, args)
    except LOOKUP_ERRORS:
        return (partial(function, *args),)  # raises it when the plain loop would
    if method in no_op_fallbacks():
        return ()
    if return_type is not Any:  # plum converts annotated results: keep its call
        return (partial(function, *args),)
    forwards_to = getattr(method, "forwards_to", None)
    if forwards_to is not None:  # e.g. plan(agent, env) is plan(agent.policy, env)
        target, forwarded = forwards_to(*args)
        if isinstance(target, plum.Function):
            return _bound(target, forwarded)
        return (partial(target, *forwarded),)  # e.g. a per-episode hook's own post_act
    return (partial(method, *args),)


_TOGETHER = {"pre_episode": lambda hooks, policy, env: partial(pre_episode_together, hooks,
                                                                 policy, env),
             "post_act": post_act_function,
             "post_episode": lambda hooks, policy, env: partial(post_episode_together, hooks,
                                                                policy, env)}


def _episode_hooks_together(calls: tuple, policy: Any, env: Any, method: str) -> tuple:
    """``calls`` with each run of two or more consecutive calls of ``EpisodeHook``'s own
    ``method`` (``"pre_episode"``, ``"post_act"`` or ``"post_episode"``, by hooks that keep
    the default) made one call for them all (`stagerl.core.hooks_together`)."""
    default = DEFAULT_METHODS[method]
    out: list = []
    run: list = []
    for call in (*calls, None):
        function = getattr(call, "func", None)
        if getattr(function, "__func__", None) is default and \
                call.args == (policy, env) and not call.keywords:
            run.append(call)
            continue
        if len(run) >= 2:
            hooks = tuple(c.func.__self__ for c in run)
            out.append(_TOGETHER[method](hooks, policy, env))
        else:
            out.extend(run)
        run = []
        if call is not None:
            out.append(call)
    return tuple(out)


def _hook_calls(hook: Any, stage: Any, policy: Any, env: Any) -> tuple:
    try:
        method, _ = resolve(push, (hook, stage, policy, env))
    except LOOKUP_ERRORS:
        method = None  # _bound below defers the error to the moment of the call
    if method is _push_composed_hook():  # members run left to right, as the fallback runs them
        members = hook.hooks
        return tuple(call for m in members for call in _hook_calls(m, stage, policy, env))
    return _bound(push, (hook, stage, policy, env))


def short_name(obj: Any) -> str:
    """A receiver as a call line names it: its class, a composed hook with its members."""
    members = getattr(obj, "hooks", None)
    if isinstance(members, tuple) and type(obj).__name__ == "ComposedHook":
        return " + ".join(short_name(m) for m in members) or "ComposedHook()"
    name = type(obj).__name__.split("[", 1)[0]  # Agent[P, T] is an Agent
    if name.endswith("Stage") and name != "Stage":
        return name.removesuffix("Stage")
    return name


def _described(call: partial) -> str:
    """``push(Agent, PreEpisode, GymEnv) -> _push_agent_pre_episode (stagerl/...py:140)``."""
    method = call.func
    generic = next((f for f in (push, plan, optimise) if method is f), None)
    arguments = ", ".join(short_name(a) for a in call.args)
    owner = getattr(method, "__self__", None)
    if owner is not None:  # a hook's own method, which its push method forwards to
        return f"{short_name(owner)}.{method.__name__}({arguments}) -> {_where(method)}"
    if generic is not None:  # kept as the plain call: plum resolves it at each call
        return f"{generic.__name__}({arguments}) -> dispatched at each call"
    name = next((f.__name__ for f in (push, plan, optimise)
                 if any(m.implementation is method for m in methods_of(f))), "call")
    return f"{name}({arguments}) -> {_where(method)}"


def _where(method: Any) -> str:
    """``name (path:line)``, the path relative to the installed package's folder when under it."""
    function = inspect.unwrap(method)
    code = getattr(function, "__code__", None)
    name = getattr(function, "__qualname__", repr(function))
    if code is None:
        return name
    path = Path(code.co_filename)
    try:
        path = path.resolve().relative_to(_PACKAGES_ROOT)
    except ValueError:
        pass
    return f"{name} ({path.as_posix()}:{_def_line(code)})"


def _def_line(code: Any) -> int:
    """The line of the ``def`` (a code object's first line is its first decorator's)."""
    line = code.co_firstlineno
    for offset in range(64):
        if linecache.getline(code.co_filename, line + offset).lstrip().startswith(
                ("def ", "async def ")):
            return line + offset
    return line


_PACKAGES_ROOT = Path(__file__).resolve().parents[2]  # the folder holding stagerl/


def _registrations() -> tuple[int, ...]:
    return registration_count(push), registration_count(plan), registration_count(optimise)


def composed_members(hook: Any, stage: Any, policy: Any, env: Any) -> list:
    """``[hook]``, or a composed hook's members when plain dispatch would run them in turn."""
    try:
        method, _ = resolve(push, (hook, stage, policy, env))
    except LOOKUP_ERRORS:
        return [hook]  # the plain call raises, and the caller reports it like any other failure
    if method is not _push_composed_hook():
        return [hook]
    return [m for member in hook.hooks for m in composed_members(member, stage, policy, env)]
