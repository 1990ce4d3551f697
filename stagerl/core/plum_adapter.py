"""The few things stagerl asks of plum beyond calling a generic function, in one place.

Everything here uses plum's public API (``Function.resolve_method``, ``Function.methods``,
``Signature``); ``tests/stagerl/core/test_plum_adapter.py`` fails with a clear message if a
plum release changes what these return.
"""

from __future__ import annotations

from typing import Any

import plum

__all__ = ["LOOKUP_ERRORS", "resolve", "resolve_types", "registration_count", "methods"]

#: What a failed lookup raises: no method, or several equally specific ones.
LOOKUP_ERRORS = (plum.NotFoundLookupError, plum.AmbiguousLookupError)


def resolve(function: plum.Function, args: tuple) -> tuple[Any, Any]:
    """``(implementation, return type)`` that ``function(*args)`` would call; raises one of
    :data:`LOOKUP_ERRORS` when none or several apply."""
    return function.resolve_method(args)


def resolve_types(function: plum.Function, types: tuple) -> tuple[Any, Any]:
    """The same for argument *types* (a call whose values are not at hand yet)."""
    return function.resolve_method(plum.Signature(*types))


def registration_count(function: plum.Function) -> int:
    """How many methods ``function`` has; it changes exactly when a method is registered."""
    return len(function.methods)


def methods(function: plum.Function) -> list:
    """The registered methods: each has ``.implementation`` (the function), ``.signature``
    (``.types``, a tuple of type hints, ``.varargs`` and ``.precedence``)."""
    return list(function.methods)
