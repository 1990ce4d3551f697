"""Finding and configuring named experiments (see the package docstring)."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib
import pkgutil
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["NamedExperiment", "names", "describe", "load", "configure", "parse_overrides",
           "hyper_parameters", "make_eval_env", "config_from", "use_torch_threads"]

_HERE = Path(__file__).resolve().parent
_NOT_EXPERIMENTS = {"registry", "runner", "evaluation", "distributed"}
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


def make_eval_env(experiment: NamedExperiment, config: Any, seed: int) -> Any:
    """The experiment's evaluation env: its own ``make_eval_env``, else a single ``GymEnv``."""
    if experiment.make_eval_env is not None:
        return experiment.make_eval_env(config, seed)
    from stagerl.envs.gym import GymEnv

    return GymEnv(config.env_id, seed=seed)


def config_from(config_type: type, source: Any, **values: Any) -> Any:
    """A ``config_type`` dataclass (an algorithm's settings) with the fields that ``source`` (a
    named experiment's configuration) shares with it, and ``values``."""
    shared = {f.name: getattr(source, f.name) for f in dataclasses.fields(config_type)
              if hasattr(source, f.name)}
    return config_type(**{**shared, **values})


def use_torch_threads(threads: int, device: Any) -> None:
    """Set torch's CPU threads to ``threads`` for a run on the CPU (0 leaves torch's setting).

    Small networks learn fastest on one thread, and on a busy 2-core machine two threads can be
    ten times slower (measured: 4.5 s against 58 s for the same 10k-step CartPole DQN run)."""
    import torch

    if threads > 0 and torch.device(device).type == "cpu":
        torch.set_num_threads(threads)


def _module_name(name: str) -> str:
    return name.replace("-", "_")


def names() -> list[str]:
    """Every named experiment, sorted (found without importing any of them)."""
    found = [info.name for info in pkgutil.iter_modules([str(_HERE)])]
    return sorted(n.replace("_", "-") for n in found if n not in _NOT_EXPERIMENTS
                  and not n.startswith("_"))


def describe(name: str) -> str:
    """The one-line summary of experiment ``name`` (its module docstring's first line), read
    from the source without importing it."""
    _check_name(name)
    source = (_HERE / f"{_module_name(name)}.py").read_text()
    doc = ast.get_docstring(ast.parse(source)) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _check_name(name: str) -> None:
    known = names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ValueError(f"unknown experiment {name!r}{hint} (stagerl list shows all "
                         f"{len(known)})")


def load(name: str) -> NamedExperiment:
    """The :class:`NamedExperiment` of ``name``; ``ValueError`` with the closest names when
    there is none."""
    _check_name(name)
    module = importlib.import_module(f"stagerl.experiments.{_module_name(name)}")
    experiment = getattr(module, "EXPERIMENT", None)
    if not isinstance(experiment, NamedExperiment):
        raise TypeError(f"stagerl.experiments.{module.__name__} must define EXPERIMENT = "
                        "NamedExperiment(...)")
    return experiment


def configure(name_or_experiment: str | NamedExperiment, **overrides: Any) -> Any:
    """The experiment's hyper-parameters with ``overrides`` applied, each checked against the
    dataclass: an unknown name lists the valid ones, a value of the wrong type names the type
    expected (an int is accepted for a float, a list for a tuple)."""
    experiment, label = _experiment_and_label(name_or_experiment)
    config_type = experiment.config
    hints = typing.get_type_hints(config_type)
    fields = [f.name for f in dataclasses.fields(config_type)]
    checked = {}
    for key, value in overrides.items():
        _check_field(label, key, fields)
        checked[key] = _checked_value(key, value, hints[key])
    return config_type(**checked)


def _experiment_and_label(name_or_experiment: str | NamedExperiment) -> tuple[Any, str]:
    if isinstance(name_or_experiment, str):
        return load(name_or_experiment), name_or_experiment
    return name_or_experiment, name_or_experiment.config.__name__


def _check_field(label: str, key: str, fields: list[str]) -> None:
    if key not in fields:
        close = difflib.get_close_matches(key, fields, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"{label} has no hyper-parameter {key!r}{hint}; the hyper-parameters "
                         f"are: {', '.join(fields)}")


def _checked_value(key: str, value: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if value is None and type(None) in args:
            return None
        others = [a for a in args if a is not type(None)]
        errors = []
        for option in others:
            try:
                return _checked_value(key, value, option)
            except TypeError as error:
                errors.append(error)
        raise errors[0]
    if hint is Any:
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is tuple:
        if isinstance(value, (list, tuple)):
            item = args[0] if args else Any
            return tuple(_checked_value(key, v, item) for v in value)
    elif isinstance(hint, type) and isinstance(value, hint):
        return value
    raise TypeError(f"hyper-parameter {key} expects {_type_name(hint)}, got {value!r} of type "
                    f"{type(value).__name__}")


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
    that does not parse names the type expected; :func:`configure` checks the result again.

    Example:
        >>> parse_overrides("tabular-q-random-walk", ["lr=0.1", "n_states=9"])
        {'lr': 0.1, 'n_states': 9}
    """
    experiment, label = _experiment_and_label(name_or_experiment)
    config_type = experiment.config
    hints = typing.get_type_hints(config_type)
    fields = [f.name for f in dataclasses.fields(config_type)]
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
    """``(name, type, default, comment)`` of every hyper-parameter, in the dataclass's order;
    the comment is the field's trailing ``# ...`` or its ``#: ...`` lines above, else ``""``.

    Example:
        >>> hyper_parameters("tabular-q-random-walk")[0][:3]
        ('steps', 'int', 5000)
    """
    experiment = (load(name_or_experiment) if isinstance(name_or_experiment, str)
                  else name_or_experiment)
    config_type = experiment.config
    hints = typing.get_type_hints(config_type)
    comments = _field_comments(config_type)
    out = []
    for f in dataclasses.fields(config_type):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        out.append((f.name, _type_name(hints[f.name]), default, comments.get(f.name, "")))
    return out


def _field_comments(config_type: type) -> dict[str, str]:
    import inspect
    import io
    import textwrap
    import tokenize

    try:
        source = textwrap.dedent(inspect.getsource(config_type))
    except (OSError, TypeError):
        return {}
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = (token.start[1], token.string.lstrip("#:").strip())
    found = {}
    (body,) = ast.parse(source).body
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = node.lineno
            if line in comments and comments[line][0] > node.col_offset:
                found[node.target.id] = comments[line][1]
                continue
            above = []
            while line - 1 in comments and comments[line - 1][0] == node.col_offset:
                line -= 1
                above.insert(0, comments[line][1])
            if above:
                found[node.target.id] = " ".join(above)
    return found
