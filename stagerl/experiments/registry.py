"""Finding and configuring named experiments (see the package docstring).

The experiments are the modules of :mod:`stagerl.experiments.zoo`. Their settings are written to
``config.json`` and into checkpoints as JSON (:func:`config_to_json`): every value as JSON
writes it, except a non-finite float, which JSON has no number for: it is the object
``{"float": "inf"}`` (``"-inf"``, ``"nan"``), the tag the checkpoints' object graph uses too.
:func:`configure` reads such values back, so a run whose settings hold ``inf``
(``max_grad_norm=inf``: never clip) resumes and evaluates like any other.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib
import math
import pkgutil
import statistics
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagerl.experiments._field_docs import field_descriptions

__all__ = ["NamedExperiment", "names", "describe", "get_experiment", "configure",
           "parse_overrides", "hyper_parameters", "make_eval_env", "config_to_json",
           "json_value", "settable_fields", "evaluation_summary"]

_ZOO = Path(__file__).resolve().parent / "zoo"
#: Deterministic evaluation episodes at the end of every run.
EVAL_EPISODES = 20
#: The evaluation env's seed is the run's seed plus this, so it never shares the training env's.
EVAL_SEED_OFFSET = 10_000


@dataclass(frozen=True)
class NamedExperiment:
    """What a named experiment is made of.

    Args:
        config: the hyper-parameter dataclass; its defaults are the experiment's settings. It
            has a ``steps`` field (env steps of a run) and, unless ``make_eval_env`` is given,
            an ``env_id`` field (the gymnasium id of the evaluation env).
        make_env: ``(config, seed) -> env``, the training env (single or vector).
        make_agent: ``(config, env, seed, device) -> policy``, usually an ``Agent``; ``device``
            is a ``torch.device``.
        make_eval_env: ``(config, seed) -> env``, a single env for the deterministic final
            evaluation; default ``GymEnv(config.env_id, seed=seed)``.
        eval_max_episode_steps: cut evaluation episodes after this many steps (for envs
            without a time limit, where a greedy policy could loop forever).
    """

    config: type
    make_env: Callable[[Any, int], Any]
    make_agent: Callable[[Any, Any, int, Any], Any]
    make_eval_env: Callable[[Any, int], Any] | None = None
    eval_max_episode_steps: int | None = None

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config):
            raise TypeError(f"NamedExperiment config must be a dataclass, got {self.config!r}")
        fields = {f.name for f in dataclasses.fields(self.config)}
        if "steps" not in fields:
            raise TypeError(f"{self.config.__name__} needs a steps field (env steps of a run)")
        if self.make_eval_env is None and "env_id" not in fields:
            raise TypeError(f"{self.config.__name__} needs an env_id field, or pass "
                            "make_eval_env=")


def evaluation_summary(returns: list[float], during: Any = None) -> dict[str, Any]:
    """The summary's evaluation entries: the final ``returns`` (``eval_return_mean``,
    ``eval_return_std``, ``eval_episodes``) and ``evaluations``, those of the ``Evaluate`` hook
    ``during`` the run (``[]`` without one)."""
    return {
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_std": statistics.pstdev(returns),
        "eval_episodes": len(returns),
        "evaluations": [] if during is None else [
            {"env_step": s, "return_mean": statistics.fmean(r),
             "return_std": statistics.pstdev(r)}
            for s, r in zip(during.steps, during.returns, strict=True)],
    }


def make_eval_env(experiment: NamedExperiment, config: Any, seed: int) -> Any:
    """The experiment's evaluation env: its own ``make_eval_env``, else a single ``GymEnv``."""
    if experiment.make_eval_env is not None:
        return experiment.make_eval_env(config, seed)
    from stagerl.envs.gym import GymEnv

    return GymEnv(config.env_id, seed=seed)


def _module_name(name: str) -> str:
    return name.replace("-", "_")


def names() -> list[str]:
    """Every named experiment (every module of :mod:`stagerl.experiments.zoo`), sorted, found
    without importing any of them."""
    found = [info.name for info in pkgutil.iter_modules([str(_ZOO)])]
    return sorted(n.replace("_", "-") for n in found if not n.startswith("_"))


def describe(name: str) -> str:
    """The one-line summary of experiment ``name`` (its module docstring's first line), read
    from the source without importing it."""
    _check_name(name)
    source = (_ZOO / f"{_module_name(name)}.py").read_text()
    doc = ast.get_docstring(ast.parse(source)) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _check_name(name: str) -> None:
    known = names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ValueError(f"unknown experiment {name!r}{hint} (stagerl list shows all "
                         f"{len(known)})")


def get_experiment(name: str) -> NamedExperiment:
    """The :class:`NamedExperiment` of ``name``; ``ValueError`` with the closest names when
    there is none."""
    _check_name(name)
    module = importlib.import_module(f"stagerl.experiments.zoo.{_module_name(name)}")
    experiment = getattr(module, "EXPERIMENT", None)
    if not isinstance(experiment, NamedExperiment):
        raise TypeError(f"{module.__name__} must define EXPERIMENT = NamedExperiment(...)")
    return experiment


def __getattr__(name: str) -> Any:
    if name == "load":  # the name it had: kept for one release
        warnings.warn("stagerl.experiments.registry.load is deprecated (it shadowed "
                      "stagerl.load); use get_experiment", DeprecationWarning, stacklevel=2)
        return get_experiment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def settable_fields(config_type: type) -> list[str]:
    """The fields of a settings dataclass that its constructor takes (the hyper-parameters):
    the run's settings (``steps``, ``torch_threads``, ``env_id``, ``num_envs``) first, then the
    others in the dataclass's order."""
    fields = [f.name for f in dataclasses.fields(config_type) if f.init]
    return sorted(fields, key=lambda name: name not in _RUN_SETTINGS)  # a stable sort


#: The run's settings (those of stagerl.experiments.settings.GymRunSettings), listed first.
_RUN_SETTINGS = ("steps", "torch_threads", "env_id", "num_envs")


def configure(name_or_experiment: str | NamedExperiment, **overrides: Any) -> Any:
    """The experiment's hyper-parameters with ``overrides`` applied: an unknown name lists the
    valid ones; the settings dataclass checks every value when it is built (its type, its
    range). Values may also be given as ``config.json`` holds them (``{"float": "inf"}``, see
    :func:`config_to_json`).

    Example:
        >>> configure("tabular-q-random-walk", lr=0.25).lr
        0.25
        >>> configure("tabular-q-random-walk", lr=float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: tabular-q-random-walk: lr must be in (0, 1], got lr=nan
    """
    experiment, label = _experiment_and_label(name_or_experiment)
    fields = settable_fields(experiment.config)
    for key in overrides:
        _check_field(label, key, fields)
    return experiment.config(**{key: _from_json(value) for key, value in overrides.items()})


def config_to_json(config: Any) -> dict[str, Any]:
    """The hyper-parameters of ``config`` (the fields its constructor takes) as JSON data:
    tuples as lists, a non-finite float as ``{"float": "inf"}`` (``"-inf"``, ``"nan"``).
    :func:`configure` builds the same config from it.

    Example:
        >>> config = configure("ppo-cartpole", max_grad_norm=float("inf"), net_arch=(32,))
        >>> data = config_to_json(config)
        >>> data["max_grad_norm"], data["net_arch"]
        ({'float': 'inf'}, [32])
        >>> configure("ppo-cartpole", **data) == config
        True
    """
    return {name: json_value(getattr(config, name)) for name in settable_fields(type(config))}


def json_value(value: Any) -> Any:
    """A setting's value as ``config.json`` holds it (see :func:`config_to_json`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"float"} and value["float"] in (
            "inf", "-inf", "nan"):
        return float(value["float"])
    return value


def _experiment_and_label(name_or_experiment: str | NamedExperiment) -> tuple[Any, str]:
    if isinstance(name_or_experiment, str):
        return get_experiment(name_or_experiment), name_or_experiment
    return name_or_experiment, name_or_experiment.config.__name__


def _check_field(label: str, key: str, fields: list[str]) -> None:
    if key not in fields:
        close = difflib.get_close_matches(key, fields, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"{label} has no hyper-parameter {key!r}{hint}; the hyper-parameters "
                         f"are: {', '.join(fields)}")


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


# ---- hyper-parameters from the command line ---------------------------------------------------

_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def parse_overrides(name_or_experiment: str | NamedExperiment,
                    pairs: list[str]) -> dict[str, Any]:
    """``name=value`` strings (as typed on a command line) as hyper-parameters, each value
    parsed by its field's type: ``int`` (``50000``, ``50_000``, ``5e4``), ``float``, ``bool``
    (``true``/``false``/``1``/``0``), ``str``, ``tuple[int, ...]`` (``64,64`` or ``[64,64]``),
    ``None`` for an optional field (``none``). An unknown name lists the valid ones, a value
    that does not parse names the type expected; the settings dataclass checks the ranges when
    :func:`configure` builds it.

    Example:
        >>> parse_overrides("tabular-q-random-walk", ["lr=0.1", "n_states=9"])
        {'lr': 0.1, 'n_states': 9}
    """
    experiment, label = _experiment_and_label(name_or_experiment)
    hints = typing.get_type_hints(experiment.config)
    fields = settable_fields(experiment.config)
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"hyper-parameters are given as name=value, got {pair!r}")
        _check_field(label, key, fields)
        if key in parsed:
            raise ValueError(f"hyper-parameter {key} is given twice")
        parsed[key] = _parsed_value(key, text.strip(), hints[key])
    return parsed


def _parsed_value(key: str, text: str, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if text.lower() == "none" and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return _parsed_value(key, text, option)
            except TypeError:
                pass
    elif hint is bool:
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
    elif hint is int:
        number = _number(text)
        if number is not None and float(number).is_integer():
            return int(number)
    elif hint is float:
        number = _number(text)
        if number is not None:
            return float(number)
    elif hint is str or hint is Any:
        return text
    elif origin is tuple:
        items = text[1:-1] if text[:1] + text[-1:] in ("[]", "()") else text
        item = args[0] if args else str
        parts = [p.strip() for p in items.split(",")] if items.strip() else []
        if parts and parts[-1] == "":  # a trailing comma: "64,"
            parts.pop()
        try:
            return tuple(_parsed_value(key, p, item) for p in parts)
        except TypeError:
            pass
    raise TypeError(f"hyper-parameter {key} expects {_type_name(hint)}, got {text!r}")


def _number(text: str) -> int | float | None:
    try:
        return int(text)  # exact for large ints; accepts 50_000
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def hyper_parameters(name_or_experiment: str | NamedExperiment) -> list[tuple[str, str, Any,
                                                                              str]]:
    """``(name, type, default, comment)`` of every hyper-parameter: the run's settings (``steps``
    and the others of :mod:`stagerl.experiments.settings`) first, then the rest in the
    dataclass's order. The comment is the field's trailing ``# ...`` or its ``#: ...`` lines
    above, else its entry under ``Attributes:`` in a docstring, looked up from the experiment's
    class through its bases (the algorithm's config), else ``""``.

    Example:
        >>> hyper_parameters("tabular-q-random-walk")[0][:3]
        ('steps', 'int', 5000)
        >>> [row[0] for row in hyper_parameters("ppo-cartpole")][:4]
        ['steps', 'torch_threads', 'env_id', 'num_envs']
        >>> dict((row[0], row[3]) for row in hyper_parameters("ppo-cartpole"))["gae_lambda"]
        "GAE's lambda."
    """
    experiment = (get_experiment(name_or_experiment) if isinstance(name_or_experiment, str)
                  else name_or_experiment)
    config_type = experiment.config
    hints = typing.get_type_hints(config_type)
    comments = field_descriptions(config_type)
    fields = {f.name: f for f in dataclasses.fields(config_type)}
    out = []
    for f in (fields[name] for name in settable_fields(config_type)):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        out.append((f.name, _type_name(hints[f.name]), default, comments.get(f.name, "")))
    return out
