"""One set of checks for every algorithm's settings (and the named experiments' own).

Every settings dataclass derives from :class:`Settings`: at construction it checks each field
against its annotation (``TypeError`` naming the field and the type expected), and each class
then checks its ranges in its ``__post_init__`` with :func:`check_ints` and
:func:`check_numbers` (``ValueError`` naming the field, the range and the value)::

    @dataclass
    class MyConfig(Settings):
        n_steps: int = 128
        learning_rate: float = 3e-4
        max_grad_norm: float = 0.5

        def __post_init__(self) -> None:
            super().__post_init__()  # the types, and the checks of the base classes
            check_ints(self, "n_steps")
            check_numbers(self, "learning_rate", above=0)
            check_numbers(self, "max_grad_norm", above=0, inf="never clip")

A float must be finite unless its check names what ``inf`` means there (``inf="never clip"``);
NaN and ``-inf`` are never accepted. Counts are ints (``bool`` is not an int here).

The env's single-env spaces are looked up here too (:func:`single_spaces`): every stagerl env
answers ``num_envs``, ``single_state_space`` and ``single_action_space``, so an algorithm reads
the same three names from one env and from a vector env.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from typing import Any

import numpy as np

__all__ = ["Settings", "settings_name", "check_types", "check_int", "check_number", "check_ints",
           "check_numbers", "check_choice", "check_net_arch", "single_spaces",
           "changed_settings"]


def settings_name(owner: Any) -> str:
    """What messages call ``owner``: a string as it is, a settings object by its class's
    ``settings_name`` (the experiment's name for a named experiment) or its class's name."""
    if isinstance(owner, str):
        return owner
    cls = owner if isinstance(owner, type) else type(owner)
    return cls.__dict__.get("settings_name") or cls.__name__


class Settings:
    """Base of the settings dataclasses: checks every field given at construction against its
    annotation and makes it that type (an int given for a float becomes a float, a list for a
    tuple a tuple). Subclasses check their ranges in ``__post_init__`` after calling
    ``super().__post_init__()``.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Demo(Settings):
        ...     lr: float = 0.1
        ...     def __post_init__(self):
        ...         super().__post_init__()
        ...         check_numbers(self, "lr", above=0)
        >>> Demo(lr=1).lr
        1.0
        >>> Demo(lr="fast")
        Traceback (most recent call last):
        ...
        TypeError: Demo: lr expects float, got 'fast' of type str
        >>> Demo(lr=float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: Demo: lr must be a finite number > 0, got lr=nan
    """

    def __post_init__(self) -> None:
        check_types(self)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def check_types(settings: Any) -> None:
    """Check every field of the dataclass ``settings`` that its constructor takes against the
    field's annotation, converting where the value is of a compatible kind; ``TypeError``
    naming the field, the type expected and the value otherwise."""
    hints = _hints(type(settings))
    owner = settings_name(settings)
    for f in dataclasses.fields(settings):
        if f.init:
            value = getattr(settings, f.name)
            typed = _typed(owner, f.name, value, hints[f.name])
            if typed is not value:
                setattr(settings, f.name, typed)


def _typed(owner: str, name: str, value: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _typed(owner, name, value, option)
            except TypeError as error:
                errors.append(error)
        if errors and len(args) == 2:  # Optional[X]: say what X wanted, and that None is fine
            raise TypeError(f"{errors[0]} (or None)") from None
    elif hint is Any:
        return value
    elif hint is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
    elif hint is int:
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            return value if type(value) is int else int(value)
    elif hint is float:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                value, (bool, np.bool_)):
            return value if type(value) is float else float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is tuple:
        if isinstance(value, (list, tuple)):
            item = args[0] if args else Any
            typed = tuple(_typed(owner, name, v, item) for v in value)
            return value if type(value) is tuple and all(
                a is b for a, b in zip(typed, value, strict=True)) else typed
    elif isinstance(hint, type) and isinstance(value, hint):
        return value
    raise TypeError(f"{owner}: {name} expects {_type_name(hint)}, got {value!r} of type "
                    f"{type(value).__name__}")


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def check_int(owner: Any, name: str, value: Any, low: int = 1) -> int:
    """``value`` as an int, ``TypeError`` unless it is one (``bool`` is not), ``ValueError``
    unless it is at least ``low``.

    Example:
        >>> check_int("make_sac_agent", "seed", -1, low=0)
        Traceback (most recent call last):
        ...
        ValueError: make_sac_agent: seed must be an int >= 0, got seed=-1
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{settings_name(owner)}: {name} must be an int, got {name}={value!r}")
    if value < low:
        raise ValueError(f"{settings_name(owner)}: {name} must be an int >= {low}, got "
                         f"{name}={value!r}")
    return int(value)


def check_number(owner: Any, name: str, value: Any, *, above: float | None = None,
                 at_least: float | None = None, below: float | None = None,
                 at_most: float | None = None, inf: str | None = None) -> float:
    """``value`` as a float, ``TypeError`` unless it is a real number, ``ValueError`` unless it
    is finite (or ``+inf`` where ``inf`` says what it means) and within the bounds given:
    ``above``/``below`` exclusive, ``at_least``/``at_most`` inclusive.

    Example:
        >>> check_number("PPOConfig", "gamma", 1.5, at_least=0, at_most=1)
        Traceback (most recent call last):
        ...
        ValueError: PPOConfig: gamma must be in [0, 1], got gamma=1.5
        >>> check_number("PPOConfig", "max_grad_norm", float("inf"), above=0, inf="never clip")
        inf
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{settings_name(owner)}: {name} must be a number, got {name}={value!r}")
    value = float(value)
    low_ok = (above is None or value > above) and (at_least is None or value >= at_least)
    high_ok = (below is None or value < below) and (at_most is None or value <= at_most)
    finite_ok = math.isfinite(value) or (inf is not None and value == math.inf)
    if not (low_ok and high_ok and finite_ok):
        raise ValueError(f"{settings_name(owner)}: {name} must be "
                         f"{_wanted(above, at_least, below, at_most, inf)}, got {name}={value!r}")
    return value


def _wanted(above: float | None, at_least: float | None, below: float | None,
            at_most: float | None, inf: str | None) -> str:
    low = f"({above:g}" if above is not None else f"[{at_least:g}" if at_least is not None \
        else None
    high = f"{below:g})" if below is not None else f"{at_most:g}]" if at_most is not None \
        else None
    if low is not None and high is not None:
        return f"in {low}, {high}"  # bounded: finite
    if low is not None:
        text = f"{'>' if low[0] == '(' else '>='} {low[1:]}"
    elif high is not None:
        text = f"{'<' if high[-1] == ')' else '<='} {high[:-1]}"
    else:
        text = ""
    if inf is not None:
        return f"{text or 'a number'} (inf: {inf})"
    return f"a finite number {text}".strip()


def check_ints(settings: Any, *names: str, low: int = 1) -> None:
    """:func:`check_int` on each field ``names`` of ``settings`` (None passes where the field
    allows it: its annotation was checked first)."""
    for name in names:
        value = getattr(settings, name)
        if value is not None:
            setattr(settings, name, check_int(settings, name, value, low))


def check_numbers(settings: Any, *names: str, above: float | None = None,
                  at_least: float | None = None, below: float | None = None,
                  at_most: float | None = None, inf: str | None = None) -> None:
    """:func:`check_number` on each field ``names`` of ``settings`` (None passes where the
    field allows it)."""
    for name in names:
        value = getattr(settings, name)
        if value is not None:
            setattr(settings, name, check_number(settings, name, value, above=above,
                                                 at_least=at_least, below=below,
                                                 at_most=at_most, inf=inf))


def check_choice(settings: Any, name: str, choices: tuple) -> None:
    """``ValueError`` unless the field ``name`` of ``settings`` is one of ``choices``."""
    value = getattr(settings, name)
    if value not in choices:
        wanted = " or ".join(repr(c) for c in choices)
        raise ValueError(f"{settings_name(settings)}: {name} must be {wanted}, got "
                         f"{name}={value!r}")


def check_net_arch(settings: Any, name: str = "net_arch") -> None:
    """The field ``name`` of ``settings`` as a tuple of hidden-layer sizes, each a positive int
    (``()``: no hidden layer, a linear network)."""
    arch = getattr(settings, name)
    if not isinstance(arch, (tuple, list)) or not all(
            isinstance(h, (int, np.integer)) and not isinstance(h, (bool, np.bool_)) and h > 0
            for h in arch):
        raise ValueError(f"{settings_name(settings)}: {name} must be positive ints (the hidden "
                         f"layers' sizes, e.g. {name}=64,64), got {name}={arch!r}")
    setattr(settings, name, tuple(int(h) for h in arch))


def single_spaces(env: Any, who: str) -> tuple[Any, Any, int]:
    """One sub-env's ``(state_space, action_space)`` and the number of sub-envs of ``env`` (1
    for a single env); ``TypeError`` naming ``who`` for an object that is not a stagerl env."""
    try:
        return env.single_state_space, env.single_action_space, int(env.num_envs)
    except (AttributeError, NotImplementedError, TypeError) as error:
        raise TypeError(f"{who} needs a stagerl env with state_space and action_space (a "
                        f"stagerl.GymEnv or GymVectorEnv), got {type(env).__name__}; wrap "
                        "gymnasium envs in stagerl.GymEnv or stagerl.GymVectorEnv") from error


def changed_settings(settings: Any) -> str:
    """The fields of the dataclass ``settings`` that differ from their defaults, as
    ``name=value, ...`` (a policy's repr shows them).

    Example:
        >>> from stagerl.algorithms import PPOConfig
        >>> changed_settings(PPOConfig(n_steps=32, gamma=0.98))
        'gamma=0.98, n_steps=32'
    """
    return ", ".join(f"{f.name}={getattr(settings, f.name)!r}"
                     for f in dataclasses.fields(settings)
                     if getattr(settings, f.name) != f.default)
