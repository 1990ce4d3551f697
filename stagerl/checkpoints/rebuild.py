"""Data to objects: the way back from :mod:`stagerl.checkpoints.graph`.

The tree is read node by node against a fixed schema: each node has one tag and only the keys
that tag allows (:data:`SCHEMA`), nesting stops at :data:`MAX_DEPTH`, and each tag is rebuilt by
one function of :data:`REBUILDERS` (Python's values here, numpy's and torch's in
:mod:`stagerl.checkpoints.rebuild_arrays`). Nothing the file names is imported or called:

* a registered class is built as ``cls.__new__(cls)`` and given its state through its own
  ``__setstate__`` (looked up on the class, never on the instance), else by setting its
  attributes; either way only the attributes the class declares
  (:mod:`stagerl.checkpoints.declared`);
* a class that rebuilds itself from arguments (the Agent) is called with them only if one of
  stagerl's own classes, or a class you registered, defines that ``__reduce__``;
* list and dict items go into real lists and dicts only (``list.extend``, ``dict.update``);
* a bound method only of a registered object, only a method its class defines;
* a defaultdict's factory only a plain type; functions only from the fixed list and yours;
* torch modules and optimisers come without hooks, gymnasium env specs only of registered ids
  (:mod:`stagerl.checkpoints.foreign`).
"""

from __future__ import annotations

import base64
import collections
import inspect
import pathlib
import types
from typing import Any

from stagerl.checkpoints.declared import undeclared
from stagerl.checkpoints.foreign import check_foreign
from stagerl.checkpoints.graph import FACTORIES, MAX_DEPTH
from stagerl.checkpoints.rebuild_arrays import ARRAY_REBUILDERS, ARRAY_SCHEMA
from stagerl.checkpoints.registry import (
    BUILTIN_TYPES,
    CheckpointError,
    Unregistered,
    is_enum_class,
    registered_name,
    resolve,
)

__all__ = ["rebuild", "MAX_DEPTH", "SCHEMA", "REBUILDERS"]

_BUILTIN_CLASSES = frozenset(BUILTIN_TYPES.values())


class Rebuilder:
    """Rebuilds one tree: the tensors it refers to, what it built so far by id, its depth."""

    def __init__(self, tensors: dict, map_location: Any) -> None:
        self.tensors = tensors
        self.map_location = map_location
        self.memo: dict[int, Any] = {}
        self.depth = 0

    def value(self, node: Any) -> Any:
        kind = type(node)
        if kind in (str, int, float, bool) or node is None:
            return node
        if kind is not dict:
            raise CheckpointError(f"malformed checkpoint: a bare {kind.__name__} where a tagged "
                                  "value belongs")
        tag = next((t for t in SCHEMA if t in node), None)
        if tag is None:
            raise CheckpointError(f"malformed checkpoint: a value with none of the known tags "
                                  f"(keys {sorted(map(str, node))[:5]})")
        extra = [k for k in node if k not in SCHEMA[tag] and k != "id"]
        if extra:
            raise CheckpointError(f"malformed checkpoint: a {tag!r} value with the keys "
                                  f"{sorted(extra)[:5]}, which it has no use for")
        if tag == "ref":
            ref = node["ref"]
            if type(ref) is not int or ref not in self.memo:
                raise CheckpointError(f"malformed checkpoint: a reference to {ref!r}, which "
                                      "is not defined before it")
            return self.memo[ref]
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise CheckpointError(f"malformed checkpoint: values nest deeper than "
                                      f"{MAX_DEPTH} levels")
            return REBUILDERS[tag](self, node, node.get("id"))
        finally:
            self.depth -= 1

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

    def number(self, node: Any) -> float:
        value = self.value(node)
        if type(value) not in (int, float):
            raise CheckpointError(f"malformed checkpoint: {value!r} is not a number")
        return value


def rebuild(tree: Any, tensors: dict, map_location: Any = None) -> Any:
    """The object ``tree`` describes, its arrays and tensors taken from ``tensors``;
    :class:`CheckpointError` for anything malformed or unregistered."""
    return Rebuilder(tensors, map_location).value(tree)


# -- containers (made empty, kept, then filled: cycles through them close) ---------------------

def _list(r: Rebuilder, node: dict, node_id: Any) -> list:
    out = r.keep(node_id, [])
    out.extend(r.value(v) for v in r.items(node, "list"))
    return out


def _tuple(r: Rebuilder, node: dict, node_id: Any) -> tuple:
    return r.keep(node_id, tuple(r.value(v) for v in r.items(node, "tuple")))


def _fill(r: Rebuilder, out: dict, node: dict, tag: str) -> dict:
    items = node[tag]
    if node.get("pairs", False) is True:
        for pair in r.items(node, tag):
            if type(pair) is not list or len(pair) != 2:
                raise CheckpointError("malformed checkpoint: a dict entry is not a pair")
            key = r.value(pair[0])
            out[key] = r.value(pair[1])
    elif type(items) is dict and "pairs" not in node:
        for key, v in items.items():
            out[key] = r.value(v)
    else:
        raise CheckpointError(f"malformed checkpoint: {tag} needs an object or pairs")
    return out


def _dict(r, node, node_id):
    return _fill(r, r.keep(node_id, {}), node, "dict")


def _odict(r, node, node_id):
    return _fill(r, r.keep(node_id, collections.OrderedDict()), node, "odict")


def _defaultdict(r, node, node_id):
    out = r.keep(node_id, collections.defaultdict(None))
    factory = r.value(node.get("factory"))
    if factory is not None and factory not in FACTORIES:
        raise CheckpointError(f"malformed checkpoint: a defaultdict's factory must be a plain "
                              f"type such as dict or list, got {factory!r}")
    out.default_factory = factory
    return _fill(r, out, node, "defaultdict")


def _set(r, node, node_id):
    out = r.keep(node_id, set())
    out.update(r.value(v) for v in r.items(node, "set"))
    return out


def _frozenset(r, node, node_id):
    return r.keep(node_id, frozenset(r.value(v) for v in r.items(node, "frozenset")))


def _deque(r, node, node_id):
    maxlen = node.get("maxlen")
    if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
        raise CheckpointError("malformed checkpoint: a deque's maxlen must be an int")
    out = r.keep(node_id, collections.deque(maxlen=maxlen))
    out.extend(r.value(v) for v in r.items(node, "deque"))
    return out


def _base64(text: Any) -> bytes:
    if type(text) is not str:
        raise CheckpointError("malformed checkpoint: bytes must be a base64 string")
    return base64.b64decode(text, validate=True)


def _bytes(r, node, node_id):
    return r.keep(node_id, _base64(node["bytes"]))


def _bytearray(r, node, node_id):
    return r.keep(node_id, bytearray(_base64(node["bytearray"])))


def _complex(r, node, node_id):
    parts = r.items(node, "complex")
    if len(parts) != 2:
        raise CheckpointError("malformed checkpoint: a complex number needs two parts")
    return r.keep(node_id, complex(r.number(parts[0]), r.number(parts[1])))


def _ints_or_none(r: Rebuilder, node: dict, tag: str) -> list:
    values = r.items(node, tag)
    if len(values) != 3 or not all(v is None or type(v) is int for v in values):
        raise CheckpointError(f"malformed checkpoint: a {tag} needs start, stop and step ints")
    return values


def _slice(r, node, node_id):
    return r.keep(node_id, slice(*_ints_or_none(r, node, "slice")))


def _range(r, node, node_id):
    start, stop, step = _ints_or_none(r, node, "range")
    return r.keep(node_id, range(start, stop, 1 if step is None else step))


def _path(r, node, node_id):
    text, pure, windows = node["path"], node.get("pure", False), node.get("windows", False)
    if type(text) is not str or type(pure) is not bool or type(windows) is not bool:
        raise CheckpointError("malformed checkpoint: a path must be a string")
    if pure:
        cls = pathlib.PureWindowsPath if windows else pathlib.PurePosixPath
        return r.keep(node_id, cls(text))
    return r.keep(node_id, pathlib.Path(text))


def _float(r, node, node_id):
    if node["float"] not in ("nan", "inf", "-inf"):
        raise CheckpointError(f"malformed checkpoint: float {node['float']!r}")
    return float(node["float"])


# -- classes, functions and instances of registered classes ------------------------------------

def _class(r, node, node_id):
    cls = resolve(node["class"])
    if not isinstance(cls, type):
        raise CheckpointError(f"malformed checkpoint: {node['class']!r} is not a class")
    return r.keep(node_id, cls)


def _function(r, node, node_id):
    function = resolve(node["function"], "function")
    if isinstance(function, type):
        raise CheckpointError(f"malformed checkpoint: {node['function']!r} is a class")
    return r.keep(node_id, function)


def _enum(r, node, node_id):
    cls = resolve(node["enum"])
    member = node.get("member")
    if not is_enum_class(cls) or type(member) is not str:
        raise CheckpointError(f"malformed checkpoint: {node['enum']!r} is not an enum")
    found = cls.__members__.get(member)
    if found is None:
        raise CheckpointError(f"the checkpoint names {node['enum']}.{member}, which does not "
                              "exist")
    return r.keep(node_id, found)


def _method(r, node, node_id):
    name = node["method"]
    if type(name) is not str or not name.isidentifier() or name.startswith("__"):
        raise CheckpointError(f"malformed checkpoint: method name {name!r}")
    owner = r.value(node["self"])
    cls = owner if isinstance(owner, type) else type(owner)
    if not _is_registered_class(cls):
        raise CheckpointError(f"the checkpoint names the method {name!r} of a "
                              f"{cls.__name__}, which is not a registered component; only a "
                              "registered object's own methods may be named")
    found = inspect.getattr_static(cls, name, None)
    defined_by = next((k for k in cls.__mro__ if name in vars(k)), object)
    if isinstance(owner, type):
        function = found.__func__ if isinstance(found, classmethod) else None
    else:
        function = found if isinstance(found, types.FunctionType) else None
    if function is None or defined_by.__module__ == "builtins":
        raise CheckpointError(f"the checkpoint names the method {name!r} of "
                              f"{cls.__name__}, which has none")
    return r.keep(node_id, types.MethodType(function, owner))


def _obj(r, node, node_id):
    cls = resolve(node["obj"])
    if not isinstance(cls, type) or is_enum_class(cls) or cls in _BUILTIN_CLASSES:
        raise CheckpointError(f"malformed checkpoint: {node['obj']!r} is not a class")
    obj = r.keep(node_id, cls.__new__(cls))
    _build(r, cls, obj, node)
    return obj


def _call(r, node, node_id):
    cls = resolve(node["call"])
    if not isinstance(cls, type) or cls in _BUILTIN_CLASSES or not _rebuilds_itself(cls):
        raise CheckpointError(f"malformed checkpoint: {node['call']!r} is not rebuilt from "
                              "arguments")
    args = r.value(node["args"])
    if type(args) is not tuple:
        raise CheckpointError("malformed checkpoint: arguments must be a tuple")
    obj = r.keep(node_id, cls(*args))
    _build(r, cls, obj, node)
    return obj


def _build(r: Rebuilder, cls: type, obj: Any, node: dict) -> None:
    """Give ``obj`` its state (only attributes ``cls`` declares), then its list or dict items
    (only a real list or dict has them); check what torch and gymnasium objects hold."""
    if "state" in node:
        state = r.value(node["state"])
        wrong = undeclared(cls, state)
        if wrong:
            raise CheckpointError(
                f"the state of {cls.__qualname__} holds {', '.join(wrong[:3])}, which "
                f"{cls.__qualname__} does not declare (no attribute of that name is set by "
                "its code); a crafted or foreign file")
        setstate = _own_method(cls, "__setstate__")
        if setstate is not None:
            setstate(obj, state)
        else:
            _set_attributes(obj, state)
    if "items" in node:
        items = r.value(node["items"])
        if not isinstance(obj, list) or type(items) is not list:
            raise CheckpointError(f"malformed checkpoint: list items for a {cls.__name__}")
        list.extend(obj, items)
    if "dict_items" in node:
        items = r.value(node["dict_items"])
        if not isinstance(obj, dict) or type(items) is not dict:
            raise CheckpointError(f"malformed checkpoint: dict items for a {cls.__name__}")
        dict.update(obj, items)
    check_foreign(obj)


def _set_attributes(obj: Any, state: Any) -> None:
    """What pickle's BUILD does without ``__setstate__``: a dict of attributes, or a
    ``(dict, slots)`` pair."""
    slots = None
    if type(state) is tuple and len(state) == 2:
        state, slots = state
    if state is not None and type(state) is not dict or slots is not None and \
            type(slots) is not dict:
        raise CheckpointError(f"malformed checkpoint: the state of {type(obj).__name__} must "
                              "be a dict of its attributes")
    if state:
        vars(obj).update(state)
    for key, value in (slots or {}).items():
        object.__setattr__(obj, key, value)


def _own_method(cls: type, name: str) -> Any:
    """``name`` as the class (not an instance) defines it, unless only a builtin type does."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return None if klass.__module__ == "builtins" else vars(klass)[name]
    return None


def _rebuilds_itself(cls: type) -> bool:
    """Whether ``cls`` defines how it is rebuilt from arguments, in stagerl's own code or
    yours (a ``__reduce__`` of a registered class)."""
    owner = next((k for k in cls.__mro__ if "__reduce__" in vars(k)), object)
    return owner is not object and owner.__module__.split(".")[0] not in (
        "builtins", "torch", "gymnasium")  # cls is registered; owner is among its bases


def _is_registered_class(cls: type) -> bool:
    if cls in _BUILTIN_CLASSES:
        return False
    try:
        registered_name(cls)
    except Unregistered:
        return False
    return True


SCHEMA: dict[str, frozenset] = {tag: frozenset(keys) for tag, keys in {
    "ref": ("ref",), "list": ("list",), "tuple": ("tuple",), "dict": ("dict", "pairs"),
    "odict": ("odict", "pairs"), "defaultdict": ("defaultdict", "pairs", "factory"),
    "set": ("set",), "frozenset": ("frozenset",), "deque": ("deque", "maxlen"),
    "bytes": ("bytes",), "bytearray": ("bytearray",), "complex": ("complex",),
    "slice": ("slice",), "range": ("range",), "float": ("float",),
    "path": ("path", "pure", "windows"), "class": ("class",), "enum": ("enum", "member"),
    "method": ("method", "self"), "function": ("function",),
    "obj": ("obj", "state", "items", "dict_items"),
    "call": ("call", "args", "state", "items", "dict_items"),
    **ARRAY_SCHEMA,
}.items()}

REBUILDERS = {
    "list": _list, "tuple": _tuple, "dict": _dict, "odict": _odict,
    "defaultdict": _defaultdict, "set": _set, "frozenset": _frozenset, "deque": _deque,
    "bytes": _bytes, "bytearray": _bytearray, "complex": _complex, "slice": _slice,
    "range": _range, "float": _float, "path": _path, "class": _class, "enum": _enum,
    "method": _method, "function": _function, "obj": _obj, "call": _call,
    **ARRAY_REBUILDERS,
}
