"""The state a class declares: the attribute names its own code gives its instances.

A checkpoint rebuilds an object from its class and its state, a dict of attribute names. Loading
sets only names the class declares, so a file cannot add an attribute the class never has (an
``append`` that shadows a method, a ``validate`` that a caller looks up by name):

* a dataclass's fields, ``__slots__`` and class-level annotations;
* the names its methods assign on the instance, read from the class's source:
  ``self.x = ...`` (also in tuples, ``+=``, ``for``/``with`` targets), ``self.__dict__["x"] =``,
  ``setattr(self, "x", ...)``, ``object.__setattr__(self, "x", ...)``,
  ``super().__setattr__("x", ...)``;
* the keys its ``__setstate__`` reads from the state it is given (``state["x"]``,
  ``state.get("x")``, ``state.pop("x")``);
* the names its methods read from the instance (``self.x``) that the class does not have as a
  method, property or other descriptor (a helper elsewhere may set them: ``Traces`` names its
  buffers);
* for a class registered with ``register(cls, state=(...))``, those names.

The same holds for every base class but ``object``'s and the standard library's typing bases.
For a class whose source cannot be read (defined at an interactive prompt or by ``exec``), the
``self.x = ...`` stores and ``self.x`` reads of its methods' bytecode stand for its source.
"""

from __future__ import annotations

import ast
import dis
import functools
import inspect
import linecache
import types
from typing import Any

__all__ = ["declared_state", "undeclared", "declare"]

_SKIPPED_MODULES = frozenset(("builtins", "typing", "abc", "collections.abc", "enum",
                              "_collections_abc"))

#: Extra names declared by ``register(cls, state=...)``, by class.
extra_state: dict[type, frozenset] = {}


def declare(cls: type, names: frozenset) -> None:
    """Add ``names`` to what ``cls`` declares (``register(cls, state=...)``)."""
    extra_state[cls] = extra_state.get(cls, frozenset()) | names
    declared_state.cache_clear()


@functools.cache
def declared_state(cls: type) -> frozenset:
    """Every attribute name ``cls`` (and its bases) declares (cached: :func:`declare` clears
    it)."""
    names: set[str] = set(extra_state.get(cls, ()))
    read: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or klass.__module__ in _SKIPPED_MODULES:
            continue
        stored, loaded = _own_names(klass)
        names |= stored | extra_state.get(klass, frozenset())
        read |= loaded
    # A name the class's code only reads (set by a helper elsewhere: Traces names its buffers)
    # counts as data unless the class has it as a method, property or other descriptor.
    names |= {name for name in read - names if not _behaviour(cls, name)}
    return frozenset(names)


def _behaviour(cls: type, name: str) -> bool:
    found = inspect.getattr_static(cls, name, _MISSING)
    return found is not _MISSING and (callable(found) or hasattr(type(found), "__get__"))


_MISSING = object()
_CLASS_LEVEL = ("__new__", "__init_subclass__", "__class_getitem__")


def undeclared(cls: type, state: Any) -> list[str]:
    """The keys of a state dict (or a ``(dict, slots)`` pair) that ``cls`` does not declare:
    every key must be a str naming a declared attribute."""
    dicts = list(state) if type(state) is tuple else [state]
    declared = None
    wrong = []
    for part in dicts:
        if type(part) is not dict:
            continue
        for key in part:
            if type(key) is not str or not key.isidentifier():
                wrong.append(repr(key))
                continue
            if declared is None:
                declared = declared_state(cls)
            if key not in declared:
                wrong.append(key)
    return wrong


@functools.cache
def _own_names(klass: type) -> tuple[frozenset, frozenset]:
    """``(names set, names only read)`` by ``klass``'s own definition."""
    names: set[str] = set(getattr(klass, "__dataclass_fields__", {}) or {})
    slots = vars(klass).get("__slots__", ())
    names.update((slots,) if isinstance(slots, str) else slots)
    names.update(vars(klass).get("__annotations__", {}))
    read: set[str] = set()
    node = _class_node(klass)
    if node is not None:
        stored, read = _assigned(node)
    else:  # no source (a class defined at a prompt or by exec): its methods' bytecode
        stored, read = _compiled(klass)
    names |= stored
    return (frozenset(n for n in names if isinstance(n, str)), frozenset(read))


def _compiled(klass: type) -> tuple[set[str], set[str]]:
    """``self.x = ...`` and ``self.x`` in the compiled methods of ``klass``."""
    stored: set[str] = set()
    read: set[str] = set()
    codes = []
    for value in vars(klass).values():
        function = getattr(value, "__func__", value)  # classmethod, staticmethod
        for part in (function, getattr(value, "fget", None), getattr(value, "fset", None)):
            if isinstance(getattr(part, "__code__", None), types.CodeType):
                codes.append(part.__code__)
    while codes:
        code = codes.pop()
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        receivers = {"self", *code.co_varnames[:1]} if code.co_argcount else {"self"}
        previous = None
        for instruction in dis.get_instructions(code):
            if previous is not None and previous.opname in ("LOAD_FAST", "LOAD_DEREF") \
                    and previous.argval in receivers and isinstance(instruction.argval, str):
                if instruction.opname == "STORE_ATTR":
                    stored.add(instruction.argval)
                elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    read.add(instruction.argval)
            previous = instruction
    return stored, read


def _class_node(klass: type) -> ast.ClassDef | None:
    """The class's definition in its module's source, else ``None``."""
    try:
        filename = inspect.getsourcefile(klass)
    except (TypeError, OSError):
        return None
    if filename is None:
        return None
    tree = _module_tree(filename)
    if tree is None:
        return None
    found = None
    scopes: list[Any] = [tree]
    for part in klass.__qualname__.split("."):
        if part == "<locals>":
            continue
        kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        children = [n for scope in scopes for n in getattr(scope, "body", ())]
        found = next((n for n in children if isinstance(n, kinds) and n.name == part), None) \
            or next((n for scope in scopes for n in ast.walk(scope)
                     if isinstance(n, kinds) and n.name == part), None)
        if found is None:
            return None
        scopes = [found]
    return found if isinstance(found, ast.ClassDef) else None


@functools.cache
def _module_tree(filename: str) -> ast.Module | None:
    source = "".join(linecache.getlines(filename))
    if not source:
        return None
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _assigned(class_node: ast.ClassDef) -> tuple[set[str], set[str]]:
    receivers = {"self"}  # and the first parameter of each method (not of class-level ones)
    for item in class_node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args \
                and item.name not in _CLASS_LEVEL and not any(
                    isinstance(d, ast.Name) and d.id in ("classmethod", "staticmethod")
                    for d in item.decorator_list):
            receivers.add(item.args.args[0].arg)
    names: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(class_node):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in receivers:
            (names if isinstance(node.ctx, ast.Store) else read).add(node.attr)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            target = node.value  # self.__dict__["x"] = ...
            if isinstance(target, ast.Attribute) and target.attr == "__dict__" \
                    and isinstance(target.value, ast.Name) and target.value.id in receivers:
                names.update(_strings([node.slice]))
        elif isinstance(node, ast.Call):
            names.update(_set_by_call(node, receivers))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name == "__setstate__" and len(node.args.args) >= 2:
            names.update(_keys_read(node, node.args.args[1].arg))
    return names, read


def _set_by_call(call: ast.Call, receivers: set[str]) -> list[str]:
    func, args = call.func, call.args
    is_receiver = lambda arg: isinstance(arg, ast.Name) and arg.id in receivers  # noqa: E731
    if isinstance(func, ast.Name) and func.id == "setattr" and len(args) >= 2 \
            and is_receiver(args[0]):
        return _strings(args[1:2])
    if isinstance(func, ast.Attribute) and func.attr == "__setattr__":
        if len(args) >= 2 and is_receiver(args[0]):  # object.__setattr__(self, "x", v)
            return _strings(args[1:2])
        if args and isinstance(func.value, ast.Call):  # super().__setattr__("x", v)
            return _strings(args[:1])
    return []


def _keys_read(function: ast.FunctionDef, state: str) -> list[str]:
    keys = []
    for node in ast.walk(function):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id == state:
            keys += _strings([node.slice])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop") and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == state:
            keys += _strings(node.args[:1])
    return keys


def _strings(nodes: list) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
