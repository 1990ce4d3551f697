"""What a checkpoint may name: stagerl's own classes, a fixed list of others, and the user's.

A checkpoint names the type of every object it holds. Loading builds an object only when its name
is found in one of these tables, never by importing or looking up what the file names:

* the user's: what :func:`register` was given;
* stagerl's and trajectories' own classes: a table of every top-level class their source files
  define (read from disk, not imported); a name found there imports the module the table gives;
* a fixed list of other modules (torch's layers and optimisers, gymnasium's spaces,
  classic-control and toy-text envs, wrappers and synchronous vector envs), imported when the
  registry is first used; their classes count only if they derive from the module's bases;
* a fixed list of functions (clocks, activations) and of plain types.
"""

from __future__ import annotations

import enum
import functools
import importlib
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from stagerl.checkpoints.declared import declare

__all__ = ["register", "registered_name", "resolve", "Unregistered", "CheckpointError",
           "BUILTIN_TYPES"]


class CheckpointError(ValueError):
    """A checkpoint that cannot be written or read; the message is one line naming what is
    wrong (and, where there is one, the fix)."""


class Unregistered(CheckpointError):
    """An object whose type (or a function) no checkpoint may name."""


_OWN_PACKAGES = ("stagerl", "trajectories")
# Modules of the packages that hold no components (the command line and its entry point).
_NOT_COMPONENTS = ("stagerl.cli", "stagerl.__main__")

# Modules of other packages whose classes may be named, each with the bases a class must have.
# They are imported when the registry is first used, never because a file names them.
_OTHERS = (
    ("torch.nn.modules", ("torch.nn", "Module")),
    ("torch.optim", ("torch.optim", "Optimizer"), ("torch.optim.lr_scheduler", "LRScheduler")),
    ("gymnasium.spaces", ("gymnasium.spaces", "Space")),
    ("gymnasium.envs.classic_control", ("gymnasium", "Env")),
    ("gymnasium.envs.toy_text", ("gymnasium", "Env")),
    ("gymnasium.wrappers", ("gymnasium", "Wrapper")),
    ("gymnasium.vector", ("gymnasium.vector", "SyncVectorEnv"),
     ("gymnasium.vector", "VectorWrapper"), ("gymnasium.vector", "AutoresetMode")),
    ("gymnasium.envs.registration", ("gymnasium.envs.registration", "EnvSpec"),
     ("gymnasium.envs.registration", "WrapperSpec")),
)
# Modules under those prefixes that are left out: they hold renderers and recorders (files,
# windows, other processes), never state a run needs.
_LEFT_OUT = ("gymnasium.wrappers.rendering", "gymnasium.wrappers.vector.rendering",
             "gymnasium.vector.async_vector_env")

# Functions stored by components: the loggers' clocks, and activations that networks keep
# (pure functions of a tensor). Named explicitly, found by identity.
_TIME_FUNCTIONS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time",
                   "time_ns", "process_time")
_TORCH_FUNCTIONS = ("tanh", "relu", "sigmoid", "exp", "log", "abs", "sin", "cos")
_FUNCTIONAL = ("relu", "relu6", "elu", "selu", "celu", "gelu", "silu", "mish", "leaky_relu",
               "softplus", "softsign", "tanh", "sigmoid", "hardtanh", "hardswish",
               "hardsigmoid", "logsigmoid", "tanhshrink", "softmax", "log_softmax")


def _functions() -> dict[str, Any]:
    """The fixed functions by name (torch's only once torch is imported)."""
    found = {f"time.{name}": getattr(time, name) for name in _TIME_FUNCTIONS}
    torch = sys.modules.get("torch")
    if torch is not None:
        found.update({f"torch.{name}": getattr(torch, name) for name in _TORCH_FUNCTIONS})
        functional = torch.nn.functional
        found.update({f"torch.nn.functional.{name}": getattr(functional, name)
                      for name in _FUNCTIONAL if hasattr(functional, name)})
    return found

_SCALAR_TYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                 np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
                 np.complex128, np.clongdouble, np.str_, np.bytes_)
_PLAIN_TYPES = (int, float, bool, complex, str, bytes, bytearray, list, tuple, dict, set,
                frozenset, type(None), object, slice, range)


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


#: Types that may be stored as values (``int``, ``np.float32``, numpy's dtype classes), by name.
BUILTIN_TYPES: dict[str, type] = {
    _type_name(t): t
    for t in (*_PLAIN_TYPES, *_SCALAR_TYPES, *(type(np.dtype(s)) for s in _SCALAR_TYPES))
}

_registered: dict[str, Any] = {}  # name -> class or function the user registered
_registered_names: dict[int, str] = {}  # id(class or function) -> its name


def register(component: Any = None, *, name: str | None = None,
             state: tuple[str, ...] | None = None) -> Any:
    """Allow checkpoints to hold instances of ``component`` (a class), or to refer to it (a
    function or class stored as a value); returns it, so it also works as a decorator.

    stagerl's own classes need no registration. A class is saved as its name plus what
    ``__getstate__`` returns (else its ``__dict__``) and rebuilt with ``cls.__new__(cls)`` and
    its own ``__setstate__`` (else its attributes set one by one): register only classes whose
    state is data. Only the attributes the class declares are set: its dataclass fields, slots
    and annotations and the names its methods set on ``self`` (read from its source);
    ``state=("a", "b")`` declares more (for attributes set from outside the class, or a class
    defined where its source cannot be read). Register it before loading too (in a fresh
    process, import the module that registers it). ``name`` defaults to
    ``module.QualifiedName``.

    Example:
        >>> import stagerl as rl
        >>> from stagerl.checkpoints import register
        >>> @register
        ... class AlwaysRight(rl.Policy):
        ...     pass
        >>> registered_name(AlwaysRight).endswith("AlwaysRight")
        True
    """
    if component is None:
        return functools.partial(register, name=name, state=state)
    if not (isinstance(component, type) or callable(component)):
        raise TypeError(f"register takes a class or a function, got {component!r} of type "
                        f"{type(component).__name__}")
    if name is None:
        name = f"{component.__module__}.{component.__qualname__}"
    if not isinstance(name, str) or not name:
        raise TypeError(f"register: name must be a non-empty str, got name={name!r}")
    known = _registered.get(name)
    if known is not None and known is not component:
        raise ValueError(f"register: the name {name!r} already belongs to {known!r}; pass "
                         "name= to register {component!r} under another")
    if state is not None:
        if isinstance(state, str) or not all(isinstance(n, str) and n.isidentifier()
                                             for n in state) or not isinstance(component, type):
            raise TypeError(f"register: state must be a tuple of attribute names of a class, "
                            f"got state={state!r}")
        declare(component, frozenset(state))
    _registered[name] = component
    _registered_names[id(component)] = name
    return component


def registered_name(component: Any) -> str:
    """The name a checkpoint stores for ``component`` (a class or function it may name);
    :class:`Unregistered` if it may name none."""
    name = _registered_names.get(id(component))
    if name is not None and _registered.get(name) is component:
        return name
    name = _type_name(component) if hasattr(component, "__qualname__") else repr(component)
    if isinstance(component, type):
        if BUILTIN_TYPES.get(name) is component or _allowed_class(component):
            return name
    else:
        for fixed_name, function in _functions().items():
            if component is function:
                return fixed_name
    raise Unregistered(name)


def resolve(name: str, what: str = "class") -> Any:
    """The class (or function) ``name`` stands for, found in the tables above;
    :class:`Unregistered` otherwise."""
    if not isinstance(name, str):
        raise CheckpointError(f"a type name must be a string, got {name!r}")
    name = _current_name(name)
    found = _registered.get(name)
    if found is None:
        found = BUILTIN_TYPES.get(name) or _functions().get(name)
    if found is None and name in _own_classes():
        module = importlib.import_module(_own_classes()[name])  # a module from the table
        found = vars(module).get(name.rpartition(".")[2])
    if found is None and _other_bases(name.rpartition(".")[0]) is not None:
        found = _other_classes().get(name)
    if isinstance(found, type) and _type_name(found) == name and (
            _allowed_class(found) or BUILTIN_TYPES.get(name) is found) \
            or found is not None and _registered.get(name) is found \
            or found is not None and _functions().get(name) is found:
        return found
    raise Unregistered(f"the checkpoint names the {what} {_shown(name)}, which is not a "
                       "registered component (no module outside stagerl's own is imported by "
                       "name); if it is yours, call stagerl.checkpoints.register(...) on it "
                       "before loading")


# stagerl modules renamed since checkpoints were first written: a class stored under the old
# module's name is read as the same class under the new one, so older checkpoints still load
# (saving always writes the new name).
_RENAMED_MODULES = {
    "stagerl.logging.evaluation": "stagerl.logging.periodic_evaluation",
    "stagerl.core.evaluation": "stagerl.core.evaluate",
    "stagerl.experiments.evaluation": "stagerl.experiments.checkpoint_evaluation",
}


def _current_name(name: str) -> str:
    """``name`` with a renamed module's old name replaced by its new one."""
    for old, new in _RENAMED_MODULES.items():
        if name.startswith(old + "."):
            return new + name[len(old):]
    return name


def _shown(name: str) -> str:
    return repr(name if len(name) <= 120 else name[:117] + "...")


@functools.cache
def _own_classes() -> dict[str, str]:
    """``{"stagerl.module.Class": "stagerl.module"}`` for every top-level class that stagerl's
    and trajectories' source files define (read from disk: nothing is imported to list them)."""
    found = {}
    for module, path in _own_module_paths().items():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for match in _CLASS_LINE.finditer(text):
            found[f"{module}.{match.group(1)}"] = module
    return found


_CLASS_LINE = re.compile(r"^class\s+([A-Za-z_][A-Za-z0-9_]*)\b", re.MULTILINE)


def _other_classes() -> dict[str, type]:
    """The classes of the fixed other modules, by name (rebuilt when more are imported)."""
    _import_others()
    count = len(sys.modules)
    if _OTHER_TABLE.get("count") != count:
        table = {}
        for module_name, module in list(sys.modules.items()):
            if module is None or _other_bases(module_name) is None:
                continue
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == module_name:
                    table[_type_name(value)] = value
        _OTHER_TABLE.update(count=count, table=table)
    return _OTHER_TABLE["table"]


_OTHER_TABLE: dict[str, Any] = {}


@functools.cache
def _own_modules() -> frozenset:
    """stagerl's and trajectories' modules, found on disk (never imported to be found)."""
    return frozenset(_own_module_paths())


@functools.cache
def _own_module_paths() -> dict[str, Path]:
    found = {}
    for package in _OWN_PACKAGES:
        root = Path(importlib.import_module(package).__file__).resolve().parent
        for path in root.rglob("*.py"):
            parts = (package, *path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            module = ".".join(parts)
            if not any(module == m or module.startswith(m + ".") for m in _NOT_COMPONENTS):
                found[module] = path
    return found


def _other_bases(module_name: str) -> tuple | None:
    if any(module_name == m or module_name.startswith(m + ".") for m in _LEFT_OUT):
        return None
    for prefix, *bases in _OTHERS:
        if module_name == prefix or module_name.startswith(prefix + "."):
            return tuple(bases)
    return None


@functools.cache
def _import_others() -> None:
    for prefix, *_ in _OTHERS:
        importlib.import_module(prefix)


def _allowed_class(cls: type) -> bool:
    module = getattr(cls, "__module__", None)
    if not isinstance(module, str):
        return False
    if module in _own_modules():
        return _type_name(cls) == f"{module}.{cls.__qualname__}" and sys.modules.get(
            module) is not None and _defined_in(cls, sys.modules[module])
    bases = _other_bases(module)
    if bases is None:
        return False
    _import_others()
    if module not in sys.modules:
        return False
    for base_module, base_name in bases:
        base = getattr(sys.modules.get(base_module), base_name, None)
        if isinstance(base, type) and issubclass(cls, base):
            return True
    return False


def _defined_in(cls: type, module: Any) -> bool:
    obj = module
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is cls


def is_enum_class(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, enum.Enum)
