"""What a loaded torch or gymnasium object may hold, and which gymnasium ids may be made.

Their classes are on the registry's fixed list, but some of their attributes are code that runs
later: a torch module's or optimiser's hooks run at every forward and step, a module's
submodules are called, and a gymnasium ``EnvSpec`` names the module ``gymnasium.make`` imports
(``"somemodule:Env-v0"`` imports ``somemodule``). :func:`check_foreign` refuses such an object
before anything uses it; :func:`check_env_id` is the rule for an env id read from a file.
"""

from __future__ import annotations

import sys
from typing import Any

from stagerl.checkpoints.registry import CheckpointError
from stagerl.envs.env_ids import env_id_problem

__all__ = ["check_foreign", "check_env_id", "env_id_problem"]


def check_foreign(obj: Any) -> None:
    """Refuse a rebuilt torch module or optimiser with hooks or with submodules that are not
    modules, and a gymnasium env spec of an id gymnasium has not registered."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(obj, torch.nn.Module):
            _check_module(obj, torch)
        elif isinstance(obj, torch.optim.Optimizer):
            _no_hooks(obj)
    registration = sys.modules.get("gymnasium.envs.registration")
    if registration is not None:
        if isinstance(obj, registration.EnvSpec):
            _check_spec(obj, registration)
        elif isinstance(obj, registration.WrapperSpec):
            _check_wrapper_spec(obj)


def _no_hooks(obj: Any) -> None:
    for name, value in vars(obj).items():
        if "hook" in name and isinstance(value, dict) and value:  # a registry of callables
            raise CheckpointError(f"the checkpoint gives a {type(obj).__name__} hooks ({name}): "
                                  "code run at every call; stagerl never saves them")


def _check_module(module: Any, torch: Any) -> None:
    _no_hooks(module)
    parts = vars(module)
    for name, kind in (("_modules", torch.nn.Module), ("_parameters", torch.Tensor),
                       ("_buffers", torch.Tensor)):
        held = parts.get(name, {})
        if not isinstance(held, dict) or not all(
                type(k) is str and (v is None or isinstance(v, kind)) for k, v in held.items()):
            raise CheckpointError(f"the checkpoint gives a {type(module).__name__} {name} that "
                                  f"are not all {kind.__name__}s")


def _check_spec(spec: Any, registration: Any) -> None:
    if "id" not in vars(spec):  # a file written before ids of attributes were kept: rebuilt
        spec.id = registration.get_env_id(spec.namespace, spec.name, spec.version)  # from parts
    problem = env_id_problem(spec.id)
    registered = registration.registry.get(spec.id) if problem is None else None
    if problem is None and (spec.entry_point != registered.entry_point or
                            spec.vector_entry_point != registered.vector_entry_point):
        problem = (f"its entry point {spec.entry_point!r} is not the one gymnasium registered "
                   f"for {spec.id!r}")
    if problem is not None:
        raise CheckpointError(f"the checkpoint holds a gymnasium EnvSpec that cannot be "
                              f"trusted: {problem}")
    for wrapper in spec.additional_wrappers or ():
        _check_wrapper_spec(wrapper)


#: stagerl's own gymnasium wrappers, which an env's spec may name (plain strings: nothing is
#: imported or called from them).
_OWN_WRAPPERS = frozenset(("stagerl.envs.wrappers:MaskObservation",))


def _check_wrapper_spec(spec: Any) -> None:
    entry = getattr(spec, "entry_point", None)
    if not isinstance(entry, str) or not (entry.startswith("gymnasium.wrappers")
                                          or entry in _OWN_WRAPPERS):
        raise CheckpointError(f"the checkpoint holds a gymnasium WrapperSpec whose entry point "
                              f"{entry!r} is not one of gymnasium's wrappers (or stagerl's)")


def check_env_id(env_id: Any, where: Any, expected: str | None = None) -> str:
    """``env_id`` if it may be made (see :func:`env_id_problem`), else :class:`CheckpointError`
    naming ``where`` it was read."""
    problem = env_id_problem(env_id, expected)
    if problem is not None:
        raise CheckpointError(f"{where}: {problem}; nothing was built")
    return env_id
