"""Objects to data: a JSON-able tree that names types, and a flat dict of tensors.

Every value becomes a JSON value: numbers, strings, booleans and ``None`` as themselves, anything
else as a one-key-tagged object (``{"list": [...]}``, ``{"obj": "stagerl...Agent", "state":
...}``, ``{"array": "3", "dtype": "<f4", ...}``). An object that occurs twice is written once,
with an ``"id"``, and referred to as ``{"ref": id}`` afterwards, so shared objects stay shared
(an optimiser and its network hold the same parameters) and cycles close. Arrays and tensors go
to the tensor dict by key. A registered class's instance is its name plus its state, taken as
pickle takes it (``__reduce_ex__``: ``__getstate__``, else ``__dict__``), so whatever a
component leaves out of a copy (caches, compiled code, open files) it leaves out here too.

See :mod:`stagerl.checkpoints.rebuild` for the way back, and ``docs/checkpoints.md`` for the
tags.
"""

from __future__ import annotations

import base64
import collections
import copyreg
import enum
import inspect
import math
import pathlib
import random
import sys
import types
from typing import Any

import numpy as np

from stagerl.checkpoints.declared import undeclared
from stagerl.checkpoints.graph_arrays import (
    BIT_GENERATORS,
    dtype_str,
    encode_array,
    encode_bit_generator,
    encode_numpy_scalar,
    encode_torch_value,
)
from stagerl.checkpoints.registry import (
    BUILTIN_TYPES,
    CheckpointError,
    Unregistered,
    registered_name,
)

__all__ = ["encode", "encode_parts", "Encoded", "BIT_GENERATORS", "MAX_DEPTH", "FACTORIES"]

#: The deepest a tree may nest, in tagged values (stagerl's own checkpoints reach about 20);
#: loading refuses deeper ones, so saving does too.
MAX_DEPTH = 64

_ATOMS = (str, int, bool, type(None))
_BUILTIN_CLASSES = frozenset(BUILTIN_TYPES.values())
_MAPPINGS = ("dict", "odict", "defaultdict")
#: The plain types a saved defaultdict may make its missing values with.
FACTORIES = (dict, list, set, frozenset, tuple, int, float, complex, str, bytes, bool,
              collections.OrderedDict, collections.deque)


class Encoded:
    """The result of :func:`encode`: ``tree`` (JSON-able), ``tensors`` (key -> tensor) and
    ``types`` (the names of the classes of the objects it holds)."""

    def __init__(self, tree: Any, tensors: dict, type_names: set) -> None:
        self.tree, self.tensors, self.types = tree, tensors, sorted(type_names)


def encode(obj: Any, label: str = "obj") -> Encoded:
    """``obj`` as data; :class:`CheckpointError` (naming where ``obj`` holds it) for anything
    that is not: an unregistered class, a function, an open file, a lock...

    ``label`` names ``obj`` in messages (``agent``: ``agent.policy.rng``...).
    """
    encoder = _Encoder()
    tree = encoder.value(obj, label)
    encoder.drop_unused_ids(tree)
    return Encoded(tree, encoder.tensors, encoder.type_names)


def encode_parts(parts: list[tuple[str, str, Any]]) -> Encoded:
    """Several objects as one tree, ``{"dict": {name: node}}``, shared objects written once
    (in the first part that holds them); ``parts`` holds ``(name, label, obj)``."""
    encoder = _Encoder()
    tree = {"dict": {name: encoder.value(obj, label) for name, label, obj in parts}}
    encoder.drop_unused_ids(tree)
    return Encoded(tree, encoder.tensors, encoder.type_names)


class _Encoder:
    def __init__(self) -> None:
        self.tensors: dict[str, Any] = {}
        self.type_names: set[str] = set()
        self.memo: dict[int, tuple[dict, Any]] = {}  # id(obj) -> (its node, obj kept alive)
        self.referenced: set[int] = set()  # node ids referred to
        self.torch = sys.modules.get("torch")  # no tensor exists before torch is imported
        self.depth = 0

    # -- the dispatch over kinds of values ------------------------------------------------------
    def value(self, obj: Any, where: str, attributes: bool = False) -> Any:
        kind = type(obj)
        if kind in _ATOMS:
            return obj
        if kind is float:
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        seen = self.memo.get(id(obj))
        if seen is not None:
            node = seen[0]
            self.referenced.add(node["id"])
            return {"ref": node["id"]}
        node: dict[str, Any] = {"id": len(self.memo)}
        self.memo[id(obj)] = (node, obj)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise CheckpointError(f"cannot save {where}: it nests more than {MAX_DEPTH} "
                                      "levels deep")
            if attributes and kind is dict:  # an object's state: its attributes by name
                node.update(self.mapping("dict", obj, where, attributes=True))
            else:
                node.update(self.compound(obj, kind, where))
        except RecursionError:
            raise CheckpointError(f"cannot save {where}: it nests too deeply") from None
        finally:
            self.depth -= 1
        return node

    def compound(self, obj: Any, kind: type, where: str) -> dict:
        if kind is list:
            return {"list": [self.value(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if kind is tuple:
            return {"tuple": [self.value(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if kind is dict:
            return self.mapping("dict", obj, where)
        if kind is collections.OrderedDict:
            return self.mapping("odict", obj, where)
        if kind is collections.defaultdict:
            if obj.default_factory is not None and obj.default_factory not in FACTORIES:
                raise CheckpointError(f"cannot save {where}: a defaultdict whose factory is "
                                      f"{obj.default_factory!r} (checkpoints hold plain types "
                                      "such as dict or list as factories)")
            node = self.mapping("defaultdict", obj, where)
            node["factory"] = self.value(obj.default_factory, f"{where}.default_factory")
            return node
        if kind in (set, frozenset):
            items = [self.value(v, f"{where} item") for v in _in_stable_order(obj)]
            return {kind.__name__: items}
        if kind is collections.deque:
            return {"deque": [self.value(v, f"{where}[{i}]") for i, v in enumerate(obj)],
                    "maxlen": obj.maxlen}
        if kind in (bytes, bytearray):
            return {kind.__name__: base64.b64encode(obj).decode("ascii")}
        if kind is complex:
            return {"complex": [self.value(obj.real, where), self.value(obj.imag, where)]}
        if kind in (slice, range):
            return {kind.__name__: [self.value(v, where) for v in (obj.start, obj.stop, obj.step)]}
        if kind is np.ndarray:
            return encode_array(self, obj, where)
        if isinstance(obj, pathlib.PurePath):
            return {"path": str(obj), "pure": not isinstance(obj, pathlib.Path),
                    "windows": isinstance(obj, pathlib.PureWindowsPath)}
        if isinstance(obj, np.generic):
            return encode_numpy_scalar(self, obj, where)
        if kind is np.dtype or isinstance(obj, np.dtype):
            return {"dtype": dtype_str(obj, where)}
        if kind is np.random.Generator:
            return {"np_generator": self.value(obj.bit_generator, f"{where}.bit_generator")}
        if kind in BIT_GENERATORS.values():
            return encode_bit_generator(self, obj, where)
        if kind is np.random.SeedSequence:
            return {"seed_sequence": self.value(
                {"entropy": obj.entropy, "spawn_key": obj.spawn_key, "pool_size": obj.pool_size,
                 "n_children_spawned": obj.n_children_spawned}, where)}
        if kind is np.random.RandomState:
            return {"random_state": self.value(obj.get_state(legacy=False), where)}
        if kind is random.Random:
            return {"py_random": self.value(obj.getstate(), where)}
        torch = self.torch
        if torch is not None:
            node = encode_torch_value(self, obj, kind, where, torch)
            if node is not None:
                return node
        if isinstance(obj, type):
            return {"class": self.name(obj, where)}
        if isinstance(obj, enum.Enum):
            return {"enum": self.name(kind, where), "member": obj.name}
        if kind is types.MethodType:
            return self.bound_method(obj, where)
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
            return {"function": self.name(obj, where, "function")}
        return self.instance(obj, kind, where)

    # -- containers ---------------------------------------------------------------------------
    def mapping(self, tag: str, obj: dict, where: str, attributes: bool = False) -> dict:
        if all(type(k) is str for k in obj):
            label = "{}.{}" if attributes else "{}[{!r}]"
            return {tag: {k: self.value(v, label.format(where, k)) for k, v in obj.items()}}
        pairs = [[self.value(k, f"{where} key"), self.value(v, f"{where}[{k!r}]")]
                 for k, v in obj.items()]
        return {tag: pairs, "pairs": True}

    def tensor_key(self, tensor: Any) -> str:
        key = str(len(self.tensors))
        self.tensors[key] = tensor
        return key

    # -- functions, classes and instances -------------------------------------------------------
    def name(self, obj: Any, where: str, what: str = "class") -> str:
        try:
            name = registered_name(obj)
        except Unregistered:
            raise Unregistered(_unregistered_message(obj, where, what)) from None
        self.type_names.add(name)
        return name

    def bound_method(self, obj: types.MethodType, where: str) -> dict:
        owner, name = obj.__self__, obj.__func__.__name__
        if name.startswith("__") or getattr(owner, name, None) != obj:
            raise CheckpointError(f"cannot save {where}: the bound method {obj!r} is not the "
                                  "method of its object by that name")
        cls = owner if isinstance(owner, type) else type(owner)
        if cls in _BUILTIN_CLASSES or isinstance(owner, pathlib.PurePath) or \
                cls.__module__ == "builtins":
            raise CheckpointError(f"cannot save {where}: the bound method {obj!r} of a "
                                  f"{cls.__name__}; checkpoints hold only methods of registered "
                                  "components")
        if isinstance(owner, type):  # a classmethod
            return {"method": name, "self": {"class": self.name(owner, where)}}
        return {"method": name, "self": self.value(owner, f"{where}.__self__")}

    def instance(self, obj: Any, kind: type, where: str) -> dict:
        if kind in _BUILTIN_CLASSES:  # a bare object() or an unusual builtin: no component
            raise Unregistered(_unregistered_message(obj, where, "class"))
        try:
            reduced = obj.__reduce_ex__(4)
        except Exception as error:  # e.g. an AsyncVectorEnv: "cannot be pickled or copied"
            raise CheckpointError(f"cannot save {where}: {_one_line(error)}") from None
        if isinstance(reduced, str) or not isinstance(reduced, tuple) or len(reduced) < 2:
            raise CheckpointError(f"cannot save {where} ({kind.__name__}): it pickles as a "
                                  "global name, not as data")
        call, args, state, list_items, dict_items = (*reduced, None, None, None)[:5]
        if call is copyreg.__newobj__ and args and args[0] is kind:
            node: dict[str, Any] = {"obj": self.name(kind, where)}
            if len(args) > 1:
                raise CheckpointError(f"cannot save {where}: {kind.__qualname__} is rebuilt "
                                      "from __getnewargs__ arguments, which checkpoints do not "
                                      "hold; give it a __reduce__ or plain state")
        elif isinstance(call, type) and call.__reduce__ is not object.__reduce__ \
                and isinstance(obj, call):
            # The class rebuilds itself from arguments (an Agent from its policy and trajectory).
            names = _parameter_names(call, len(args))
            arguments: dict[str, Any] = {"id": len(self.memo)}
            self.memo[id(args)] = (arguments, args)
            arguments["tuple"] = [self.value(arg, f"{where}.{name}")
                                  for arg, name in zip(args, names, strict=True)]
            node = {"call": self.name(call, where), "args": arguments}
        else:
            raise Unregistered(_unregistered_message(obj, where, "class"))
        if state is not None:
            wrong = undeclared(kind, state)
            if wrong:
                raise CheckpointError(
                    f"cannot save {where}: {kind.__qualname__} holds {', '.join(wrong[:3])}, "
                    f"which its code never sets, so loading would refuse it; declare them "
                    f"with stagerl.checkpoints.register({kind.__qualname__}, state=(...)) "
                    "or leave them out of its __getstate__")
            node["state"] = self.value(state, where, attributes=True)
        if list_items is not None:
            node["items"] = self.value(list(list_items), where)
        if dict_items is not None:
            node["dict_items"] = self.value(dict(dict_items), where)
        return node

    def drop_unused_ids(self, tree: Any) -> None:
        """Remove the ``"id"`` of every node nothing refers to (most of them)."""
        stack = [tree]
        referenced = self.referenced
        while stack:
            node = stack.pop()
            if type(node) is dict:
                if "id" in node and node["id"] not in referenced:
                    del node["id"]
                for key, child in node.items():
                    if key in _MAPPINGS and type(child) is dict:
                        # keys by name (an EnvSpec's attribute "id" among them): values only
                        stack.extend(child.values())
                    else:
                        stack.append(child)
            elif type(node) is list:
                stack.extend(node)


def _in_stable_order(items: set | frozenset) -> list:
    """A set's items sorted when they are types, dtypes, strings or numbers (a set of types
    iterates in an order that differs between processes: the same state, another file)."""
    def key(item: Any) -> tuple:
        if isinstance(item, type):
            return (0, f"{item.__module__}.{item.__qualname__}")
        if isinstance(item, np.dtype):
            return (1, item.str)
        if type(item) in (str, int, float, bool):
            return (2, type(item).__name__, repr(item))
        raise TypeError
    try:
        return sorted(items, key=key)
    except TypeError:
        return list(items)


def _parameter_names(cls: type, n: int) -> list[str]:
    """Names for a constructor's arguments in messages (``agent.policy``), else ``args[i]``."""
    try:  # __init__'s own: a parametric class's signature is (*args, **kwargs)
        names = [name for name, p in inspect.signature(cls.__init__).parameters.items()
                 if name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"args[{i}]" for i in range(n)]


def _unregistered_message(obj: Any, where: str, what: str) -> str:
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)) \
            or what == "function":
        name = getattr(obj, "__qualname__", repr(obj))
        return (f"cannot save {where}: it is the function {name}, which is code, not data; "
                "register it with stagerl.checkpoints.register if it is yours and importable, "
                "or leave it out of the object's __getstate__")
    cls = obj if isinstance(obj, type) else type(obj)
    name = f"{cls.__module__}.{cls.__qualname__}"
    module = cls.__module__ or ""
    if module.startswith("gymnasium.envs."):
        return (f"cannot save {where}: the gymnasium env {cls.__qualname__} keeps its state in "
                "objects that are not data; checkpoints hold classic-control and toy-text envs "
                "(CartPole, Acrobot, Pendulum, MountainCar, FrozenLake, CliffWalking, Taxi, "
                "Blackjack) and envs registered with stagerl.checkpoints.register")
    return (f"cannot save {where}: {name} is not a registered component; call "
            f"stagerl.checkpoints.register({cls.__qualname__}) if its state is plain data")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
