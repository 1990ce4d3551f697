"""Data to objects: the way back from :mod:`stagerl.checkpoints.graph`.

Only registered classes are built (``cls.__new__(cls)``, then ``__setstate__`` or a
``__dict__`` update, as pickle builds them; a class that rebuilds itself from arguments, such as
the Agent, is called with them only if it defines its own ``__reduce__``). Nothing named in the
data is imported or called beyond that: numpy dtypes come from a strict pattern, bit generators
and torch dtypes from fixed tables, a bound method only from a registered object's own methods.
"""

from __future__ import annotations

import base64
import collections
import inspect
import pathlib
import types
from typing import Any

from stagerl.checkpoints.rebuild_arrays import ArrayRebuilders
from stagerl.checkpoints.registry import BUILTIN_TYPES, CheckpointError, is_enum_class, resolve

__all__ = ["rebuild"]

_BUILTIN_CLASSES = frozenset(BUILTIN_TYPES.values())
_METHODS = (types.FunctionType, classmethod, types.MethodDescriptorType,
            types.BuiltinFunctionType)
_TAGS = ("list", "tuple", "dict", "odict", "defaultdict", "set", "frozenset", "deque", "bytes",
         "bytearray", "complex", "slice", "range", "float", "array", "scalar", "dtype",
         "np_generator", "bit_generator", "seed_sequence", "random_state", "py_random", "tensor",
         "torch_dtype", "device", "size", "torch_generator", "class", "enum", "method",
         "function", "obj", "call", "path", "objects", "ref")


def rebuild(tree: Any, tensors: dict, map_location: Any = None) -> Any:
    """The object ``tree`` describes, its arrays and tensors taken from ``tensors``;
    :class:`CheckpointError` for anything malformed or unregistered."""
    return _Rebuilder(tensors, map_location).value(tree)


class _Rebuilder(ArrayRebuilders):
    def __init__(self, tensors: dict, map_location: Any) -> None:
        self.tensors = tensors
        self.map_location = map_location
        self.memo: dict[int, Any] = {}

    def value(self, node: Any) -> Any:
        kind = type(node)
        if kind in (str, int, float, bool) or node is None:
            return node
        if kind is list:
            raise CheckpointError("malformed checkpoint: a bare list where a tagged value "
                                  "belongs")
        if kind is not dict:
            raise CheckpointError(f"malformed checkpoint: unexpected {kind.__name__} value")
        tag = next((t for t in _TAGS if t in node), None)
        if tag is None:
            raise CheckpointError(f"malformed checkpoint: a value with none of the known tags "
                                  f"(keys {sorted(node)[:5]})")
        if tag == "ref":
            ref = node["ref"]
            if ref not in self.memo:
                raise CheckpointError(f"malformed checkpoint: a reference to {ref!r}, which "
                                      "is not defined before it")
            return self.memo[ref]
        return getattr(self, "_" + tag)(node, node.get("id"))

    def keep(self, node_id: Any, obj: Any) -> Any:
        if node_id is not None:
            if type(node_id) is not int or node_id in self.memo:
                raise CheckpointError(f"malformed checkpoint: the id {node_id!r} is defined "
                                      "twice or is not an int")
            self.memo[node_id] = obj
        return obj

    def items(self, node: dict, tag: str) -> list:
        items = node[tag]
        if type(items) is not list:
            raise CheckpointError(f"malformed checkpoint: {tag} needs a list")
        return items

    # -- containers (made empty, kept, then filled: cycles through them close) ----------------
    def _list(self, node, node_id):
        out = self.keep(node_id, [])
        out.extend(self.value(v) for v in self.items(node, "list"))
        return out

    def _tuple(self, node, node_id):
        return self.keep(node_id, tuple(self.value(v) for v in self.items(node, "tuple")))

    def _fill(self, out: dict, node: dict, tag: str) -> dict:
        items = node[tag]
        if node.get("pairs"):
            for pair in self.items(node, tag):
                if type(pair) is not list or len(pair) != 2:
                    raise CheckpointError("malformed checkpoint: a dict entry is not a pair")
                key = self.value(pair[0])
                out[key] = self.value(pair[1])
        elif type(items) is dict:
            for key, v in items.items():
                out[key] = self.value(v)
        else:
            raise CheckpointError(f"malformed checkpoint: {tag} needs an object or pairs")
        return out

    def _dict(self, node, node_id):
        return self._fill(self.keep(node_id, {}), node, "dict")

    def _odict(self, node, node_id):
        return self._fill(self.keep(node_id, collections.OrderedDict()), node, "odict")

    def _defaultdict(self, node, node_id):
        out = self.keep(node_id, collections.defaultdict(None))
        factory = self.value(node.get("factory"))
        if factory is not None and not callable(factory):
            raise CheckpointError("malformed checkpoint: a defaultdict factory that is not a "
                                  "class or function")
        out.default_factory = factory
        return self._fill(out, node, "defaultdict")

    def _set(self, node, node_id):
        out = self.keep(node_id, set())
        out.update(self.value(v) for v in self.items(node, "set"))
        return out

    def _frozenset(self, node, node_id):
        return self.keep(node_id, frozenset(self.value(v) for v in self.items(node, "frozenset")))

    def _deque(self, node, node_id):
        maxlen = node.get("maxlen")
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise CheckpointError("malformed checkpoint: a deque's maxlen must be an int")
        out = self.keep(node_id, collections.deque(maxlen=maxlen))
        out.extend(self.value(v) for v in self.items(node, "deque"))
        return out

    def _bytes(self, node, node_id):
        return self.keep(node_id, base64.b64decode(node["bytes"], validate=True))

    def _bytearray(self, node, node_id):
        return self.keep(node_id, bytearray(base64.b64decode(node["bytearray"], validate=True)))

    def _complex(self, node, node_id):
        real, imag = (self._number(v) for v in self.items(node, "complex"))
        return self.keep(node_id, complex(real, imag))

    def _slice(self, node, node_id):
        return self.keep(node_id, slice(*(self._int_or_none(v) for v in node["slice"])))

    def _range(self, node, node_id):
        return self.keep(node_id, range(*(self._int_or_none(v) for v in node["range"])))

    def _path(self, node, node_id):
        text = node["path"]
        if type(text) is not str:
            raise CheckpointError("malformed checkpoint: a path must be a string")
        if node.get("pure"):
            cls = pathlib.PureWindowsPath if node.get("windows") else pathlib.PurePosixPath
            return self.keep(node_id, cls(text))
        return self.keep(node_id, pathlib.Path(text))

    def _float(self, node, node_id):
        if node["float"] not in ("nan", "inf", "-inf"):
            raise CheckpointError(f"malformed checkpoint: float {node['float']!r}")
        return float(node["float"])

    def _number(self, node: Any) -> float:
        value = self.value(node)
        if type(value) not in (int, float):
            raise CheckpointError(f"malformed checkpoint: {value!r} is not a number")
        return value

    def _int_or_none(self, node: Any) -> int | None:
        if node is not None and type(node) is not int:
            raise CheckpointError(f"malformed checkpoint: {node!r} is not an int")
        return node

    # -- classes, functions and instances of registered classes ---------------------------------
    def _class(self, node, node_id):
        return self.keep(node_id, resolve(node["class"]))

    def _function(self, node, node_id):
        function = resolve(node["function"], "function")
        if isinstance(function, type):
            raise CheckpointError(f"malformed checkpoint: {node['function']!r} is a class")
        return self.keep(node_id, function)

    def _enum(self, node, node_id):
        cls = resolve(node["enum"])
        if not is_enum_class(cls) or type(node.get("member")) is not str:
            raise CheckpointError(f"malformed checkpoint: {node['enum']!r} is not an enum")
        try:
            return self.keep(node_id, cls[node["member"]])
        except KeyError:
            raise CheckpointError(f"the checkpoint names {node['enum']}.{node['member']}, "
                                  "which does not exist") from None

    def _method(self, node, node_id):
        name = node["method"]
        owner = self.value(node["self"])
        if type(name) is not str or not name.isidentifier() or name.startswith("__"):
            raise CheckpointError(f"malformed checkpoint: method name {name!r}")
        # Only a method the owner's class defines (no property getter runs to find it).
        defined = inspect.getattr_static(owner if isinstance(owner, type) else type(owner),
                                         name, None)
        method = getattr(owner, name, None) if isinstance(defined, _METHODS) else None
        if getattr(method, "__self__", None) is not owner or not callable(method):
            raise CheckpointError(f"the checkpoint names the method {name!r} of "
                                  f"{type(owner).__name__}, which has none")
        return self.keep(node_id, method)

    def _call(self, node, node_id):
        cls = resolve(node["call"])
        if not isinstance(cls, type) or cls.__reduce__ is object.__reduce__ \
                or cls in _BUILTIN_CLASSES:
            raise CheckpointError(f"malformed checkpoint: {node['call']!r} is not rebuilt "
                                  "from arguments")
        args = self.value(node["args"])
        if type(args) is not tuple:
            raise CheckpointError("malformed checkpoint: arguments must be a tuple")
        obj = self.keep(node_id, cls(*args))
        self.build(obj, node)
        return obj

    def _obj(self, node, node_id):
        cls = resolve(node["obj"])
        if not isinstance(cls, type) or is_enum_class(cls) or cls in _BUILTIN_CLASSES:
            raise CheckpointError(f"malformed checkpoint: {node['obj']!r} is not a class")
        new_args = self.value(node["new_args"]) if "new_args" in node else ()
        if type(new_args) is not tuple:
            raise CheckpointError("malformed checkpoint: new_args must be a tuple")
        obj = self.keep(node_id, cls.__new__(cls, *new_args))
        self.build(obj, node)
        return obj

    def build(self, obj: Any, node: dict) -> None:
        """Set the state as pickle's BUILD does (then its list and dict items)."""
        if "state" in node:
            state = self.value(node["state"])
            setstate = getattr(obj, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                slots = None
                if type(state) is tuple and len(state) == 2:
                    state, slots = state
                if state:
                    if type(state) is not dict:
                        raise CheckpointError(f"malformed checkpoint: the state of "
                                              f"{type(obj).__name__} must be a dict")
                    obj.__dict__.update(state)
                if slots:
                    if type(slots) is not dict:
                        raise CheckpointError("malformed checkpoint: slots must be a dict")
                    for key, value in slots.items():
                        setattr(obj, key, value)
        if "items" in node:
            for item in self.value(node["items"]):
                obj.append(item)
        if "dict_items" in node:
            for key, value in self.value(node["dict_items"]).items():
                obj[key] = value

