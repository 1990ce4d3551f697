"""The generic functions ``push``, ``plan`` and ``optimise`` and their fallbacks.

stagerl owns a private :class:`plum.Dispatcher`; users extend the generic functions with
``@stagerl.push.dispatch``, ``@stagerl.plan.dispatch`` and ``@stagerl.optimise.dispatch``.

Rules every method registered here follows (``docs/dispatch.md`` explains them):

* fallbacks annotate only the positions dispatched on; other positions stay unannotated, which
  plum reads as ``Any`` (wider than ``object``), so a user method that annotates ``object`` there is
  still more specific than the fallback instead of ambiguous with it;
* every default has ``precedence=-1`` so that a user method that is as specific as a default
  wins the tie;
* no method annotates its return type: plum converts every annotated return value, which
  costs microseconds per call even for ``-> None``;
* every annotation is a faithful type: one unfaithful hint turns plum's per-type cache off for
  the whole function (a cached call costs ~0.4 µs, an uncached one 4-18 µs).
"""

from __future__ import annotations

import plum

__all__ = [
    "dispatch",
    "push",
    "plan",
    "optimise",
    "MissingMethodError",
    "DEFAULT_PRECEDENCE",
    "forwarding",
]

#: The precedence of every default and fallback method stagerl registers.
DEFAULT_PRECEDENCE = -1

dispatch = plum.Dispatcher(warn_redefinition=True)


class MissingMethodError(plum.NotFoundLookupError):
    """No method of a generic function applies; the message says what to define."""

    def __init__(self, message: str) -> None:
        LookupError.__init__(self, message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    __repr__ = __str__


def forwarding(target):
    """Mark a method that only forwards its call: ``target(*args)`` gives ``(function, args)``
    of the call it makes. The run loop resolves the forwarded call once per experiment instead of
    paying two dispatches per step (the Agent's ``plan`` and ``optimise`` are such methods); a
    ``function`` that is not a generic function (a hook's own ``post_act``) is called as it is."""

    def mark(method):
        method.forwards_to = target
        return method

    return mark


# The generic functions are created from stub definitions whose docstrings plum keeps.
@dispatch.abstract
def push(*args):
    """Tell a policy, agent or hook that a stage happened.

    Signatures: ``push(policy, stage, env)``, ``push(policy, PostActStage(), env, action)`` and
    ``push(hook, stage, policy, env)``. Extend with ``@stagerl.push.dispatch``.
    """


@dispatch.abstract
def plan(*args):
    """Choose an action: ``plan(policy, env) -> action``. Extend with ``@stagerl.plan.dispatch``."""


@dispatch.abstract
def optimise(*args):
    """Let a policy learn: ``optimise(policy, stage)`` and ``optimise(policy, stage, trajectory)``.

    Extend with ``@stagerl.optimise.dispatch``.
    """
