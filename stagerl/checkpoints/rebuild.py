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
import hashlib
import pathlib
import random
import re
from typing import Any

import numpy as np

from stagerl.checkpoints.graph import BIT_GENERATORS
from stagerl.checkpoints.registry import BUILTIN_TYPES, CheckpointError, is_enum_class, resolve

__all__ = ["rebuild"]

_BUILTIN_CLASSES = frozenset(BUILTIN_TYPES.values())
_DTYPE = re.compile(r"[<>|=][biufc][0-9]{1,2}|[<>|=][SU][0-9]{1,9}")
_TAGS = ("list", "tuple", "dict", "odict", "defaultdict", "set", "frozenset", "deque", "bytes",
         "bytearray", "complex", "slice", "range", "float", "array", "scalar", "dtype",
         "np_generator", "bit_generator", "seed_sequence", "random_state", "py_random", "tensor",
         "torch_dtype", "device", "size", "torch_generator", "class", "enum", "method",
         "function", "obj", "call", "path", "objects", "ref")


def rebuild(tree: Any, tensors: dict, map_location: Any = None) -> Any:
    """The object ``tree`` describes, its arrays and tensors taken from ``tensors``;
    :class:`CheckpointError` for anything malformed or unregistered."""
    return _Rebuilder(tensors, map_location).value(tree)


class _Rebuilder:
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

    # -- numpy ----------------------------------------------------------------------------------
    def dtype(self, text: Any) -> np.dtype:
        if type(text) is not str or not _DTYPE.fullmatch(text):
            raise CheckpointError(f"malformed checkpoint: {text!r} is not a plain dtype")
        return np.dtype(text)

    def tensor_at(self, key: Any) -> Any:
        tensor = self.tensors.get(key) if type(key) is str else None
        if tensor is None:
            raise CheckpointError(f"malformed checkpoint: no tensor {key!r} in the tensor file")
        return tensor

    def _array(self, node, node_id):
        dtype = self.dtype(node.get("dtype"))
        shape = node.get("shape")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise CheckpointError(f"malformed checkpoint: array shape {shape!r}")
        tensor = self.tensor_at(node["array"])
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()
        data = tensor.numpy()
        if data.dtype != dtype:  # stored as bytes: a dtype torch lacks, or another byte order
            if data.dtype != np.uint8:
                raise CheckpointError(f"malformed checkpoint: array stored as {data.dtype}, "
                                      f"declared {dtype}")
            data = data.view(dtype)
        if data.shape != tuple(shape):
            if data.size != int(np.prod(shape)):
                raise CheckpointError(f"malformed checkpoint: array of {data.size} values "
                                      f"declared with shape {shape}")
            data = data.reshape(shape)
        if node.get("writeable") is False:
            data.flags.writeable = False
        return self.keep(node_id, data)

    def _objects(self, node, node_id):
        shape = node.get("shape")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise CheckpointError(f"malformed checkpoint: array shape {shape!r}")
        out = self.keep(node_id, np.empty(shape, dtype=object))
        values = [self.value(v) for v in self.items(node, "objects")]
        if len(values) != out.size:
            raise CheckpointError(f"malformed checkpoint: {len(values)} values for shape {shape}")
        flat = out.reshape(-1)
        for i, v in enumerate(values):
            flat[i] = v
        return out

    def _scalar(self, node, node_id):
        dtype = self.dtype(node.get("dtype"))
        value = node["scalar"]
        if dtype.kind == "c":
            real, imag = (self._number(v) for v in value)
            value = complex(real, imag)
        elif dtype.kind == "f":
            value = self._number(value)
        elif dtype.kind == "S":
            value = base64.b64decode(value, validate=True)
        elif type(value) not in ((bool,) if dtype.kind == "b" else (int,) if dtype.kind in "iu"
                                 else (str,)):
            raise CheckpointError(f"malformed checkpoint: {value!r} is not a {dtype} value")
        return self.keep(node_id, dtype.type(value))

    def _dtype(self, node, node_id):
        return self.keep(node_id, self.dtype(node["dtype"]))

    def _np_generator(self, node, node_id):
        bit_generator = self.value(node["np_generator"])
        if type(bit_generator) not in BIT_GENERATORS.values():
            raise CheckpointError("malformed checkpoint: a numpy Generator needs a bit generator")
        return self.keep(node_id, np.random.Generator(bit_generator))

    def _bit_generator(self, node, node_id):
        cls = BIT_GENERATORS.get(node["bit_generator"])
        if cls is None:
            raise CheckpointError(f"malformed checkpoint: unknown bit generator "
                                  f"{node['bit_generator']!r}")
        seed_seq = self.value(node.get("seed_seq"))
        if seed_seq is not None and type(seed_seq) is not np.random.SeedSequence:
            raise CheckpointError("malformed checkpoint: a bit generator's seed_seq is not one")
        bit_generator = cls(seed_seq)
        try:
            bit_generator.state = self.value(node["state"])
        except (TypeError, ValueError, KeyError) as error:
            raise CheckpointError(f"malformed checkpoint: bit generator state ({error})") from None
        return self.keep(node_id, bit_generator)

    def _seed_sequence(self, node, node_id):
        fields = self.value(node["seed_sequence"])
        if type(fields) is not dict:
            raise CheckpointError("malformed checkpoint: a SeedSequence needs its fields")
        try:
            return self.keep(node_id, np.random.SeedSequence(
                fields["entropy"], spawn_key=tuple(fields["spawn_key"]),
                pool_size=fields["pool_size"], n_children_spawned=fields["n_children_spawned"]))
        except (TypeError, ValueError, KeyError) as error:
            raise CheckpointError(f"malformed checkpoint: SeedSequence ({error})") from None

    def _random_state(self, node, node_id):
        generator = np.random.RandomState()
        try:
            generator.set_state(self.value(node["random_state"]))
        except (TypeError, ValueError, KeyError) as error:
            raise CheckpointError(f"malformed checkpoint: RandomState ({error})") from None
        return self.keep(node_id, generator)

    def _py_random(self, node, node_id):
        generator = random.Random()
        try:
            generator.setstate(self.value(node["py_random"]))
        except (TypeError, ValueError) as error:
            raise CheckpointError(f"malformed checkpoint: random.Random ({error})") from None
        return self.keep(node_id, generator)

    # -- torch ----------------------------------------------------------------------------------
    def _tensor(self, node, node_id):
        import torch

        tensor = self.tensor_at(node["tensor"])
        if node.get("parameter"):
            tensor = torch.nn.Parameter(tensor, requires_grad=bool(node.get("requires_grad")))
        elif node.get("requires_grad"):
            tensor = tensor.detach().requires_grad_(True)
        self.keep(node_id, tensor)
        if "grad" in node:
            tensor.grad = self.value(node["grad"])
        return tensor

    def _torch_dtype(self, node, node_id):
        import torch

        dtype = getattr(torch, node["torch_dtype"], None) if node["torch_dtype"] in _TORCH_DTYPES \
            else None
        if not isinstance(dtype, torch.dtype):
            raise CheckpointError(f"malformed checkpoint: torch dtype {node['torch_dtype']!r}")
        return self.keep(node_id, dtype)

    def _device(self, node, node_id):
        import torch

        try:
            return self.keep(node_id, torch.device(node["device"]))
        except (TypeError, RuntimeError) as error:
            raise CheckpointError(f"malformed checkpoint: device {node['device']!r}") from error

    def _size(self, node, node_id):
        import torch

        sizes = node["size"]
        if type(sizes) is not list or not all(type(n) is int for n in sizes):
            raise CheckpointError("malformed checkpoint: torch.Size needs ints")
        return self.keep(node_id, torch.Size(sizes))

    def _torch_generator(self, node, node_id):
        import torch

        device = torch.device(self._device({"device": node["torch_generator"]}, None))
        state = self.tensor_at(node["state"]).cpu()
        if state.dtype != torch.uint8:
            raise CheckpointError("malformed checkpoint: a generator state must be bytes")
        target = device if self.map_location is None else torch.device(self.map_location)
        if target.type != device.type:
            # A CUDA generator's state means nothing to a CPU one: a new stream, seeded from it.
            seed = int.from_bytes(hashlib.sha256(state.numpy().tobytes()).digest()[:8], "big")
            return self.keep(node_id, torch.Generator(device=target).manual_seed(seed >> 1))
        generator = torch.Generator(device=device)
        try:
            generator.set_state(state)
        except RuntimeError as error:
            raise CheckpointError(f"malformed checkpoint: generator state ({error})") from None
        return self.keep(node_id, generator)

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
        method = getattr(owner, name, None)
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


_TORCH_DTYPES = frozenset((
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8",
    "int16", "int32", "int64", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn",
    "float8_e5m2",
))
