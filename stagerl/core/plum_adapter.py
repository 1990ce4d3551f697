"""The few things stagerl asks of plum beyond calling a generic function, in one place.

Everything here uses plum's public API (``Function.resolve_method``, ``Function.methods``,
``Signature`` and its ``is_faithful``); ``tests/stagerl/core/test_plum_adapter.py`` fails with a
clear message if a plum release changes what these return.
"""

from __future__ import annotations

import operator
from typing import Any

import plum

__all__ = ["LOOKUP_ERRORS", "resolve", "resolve_types", "registration_count", "methods"]

#: What a failed lookup raises: no method, or several equally specific ones.
LOOKUP_ERRORS = (plum.NotFoundLookupError, plum.AmbiguousLookupError)

# Per generic function: its methods when the lookups below were made (the Method objects: a
# method redefined with the same signature is a new one) and {argument types: (implementation,
# return type)}, or None while some method's signature is not faithful.
_by_types: dict = {}
_MAX_KEPT = 4096  # lookups kept per function before they are made again


def resolve(function: plum.Function, args: tuple) -> tuple[Any, Any]:
    """``(implementation, return type)`` that ``function(*args)`` would call; raises one of
    :data:`LOOKUP_ERRORS` when none or several apply.

    While every method of ``function`` has a faithful signature, the answer depends on the
    argument types alone (what plum's own call cache relies on): it is kept for those types
    until a method is registered or redefined (a run loop looks up the same calls at every
    ``run``). Otherwise each call looks it up on the values.
    """
    kept = _lookups(function)
    if kept is None:
        return function.resolve_method(args)
    types = tuple(map(type, args))
    found = kept.get(types)
    if found is None:
        found = kept[types] = function.resolve_method(args)
    return found


def resolve_types(function: plum.Function, types: tuple) -> tuple[Any, Any]:
    """The same for argument *types* (a call whose values are not at hand yet)."""
    kept = _lookups(function)
    if kept is None:
        return function.resolve_method(plum.Signature(*types))
    types = tuple(types)
    found = kept.get(types)
    if found is None:
        found = kept[types] = function.resolve_method(plum.Signature(*types))
    return found


def _lookups(function: plum.Function) -> dict | None:
    """The lookups kept for ``function``'s methods as they are now (None: not faithful)."""
    current = function.methods
    entry = _by_types.get(function)
    if entry is None or len(entry[0]) != len(current) or \
            not all(map(operator.is_, entry[0], current)) or \
            (entry[1] is not None and len(entry[1]) >= _MAX_KEPT):
        faithful = all(method.signature.is_faithful for method in current)
        entry = _by_types[function] = (tuple(current), {} if faithful else None)
    return entry[1]


def registration_count(function: plum.Function) -> int:
    """How many methods ``function`` has; it changes exactly when a method is registered."""
    return len(function.methods)


def methods(function: plum.Function) -> list:
    """The registered methods: each has ``.implementation`` (the function), ``.signature``
    (``.types``, a tuple of type hints, ``.varargs``, ``.precedence`` and ``.is_faithful``)."""
    return list(function.methods)
