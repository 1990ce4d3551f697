"""Data to numpy and torch values: arrays, scalars, dtypes, generators, tensors.

The part of :mod:`stagerl.checkpoints.rebuild` for values that are not Python's own, as a table
of functions (:data:`ARRAY_REBUILDERS`, each ``f(rebuilder, node, node_id)``) and the keys each
tag allows (:data:`ARRAY_SCHEMA`). Each value is built from a fixed table or a strict pattern (a
numpy dtype, a bit generator's name, a torch dtype or device), never from a name looked up or
imported, and no allocation is larger than what the files hold: an array is a view of a tensor
read from ``tensors.pt``, an array of objects has exactly as many entries as the file lists.
"""

from __future__ import annotations

import base64
import hashlib
import math
import random
import re
from typing import Any

import numpy as np

from stagerl.checkpoints.graph_arrays import BIT_GENERATORS
from stagerl.checkpoints.registry import CheckpointError

__all__ = ["ARRAY_REBUILDERS", "ARRAY_SCHEMA"]

_DTYPE = re.compile(r"[<>|=][biufc][0-9]{1,2}|[<>|=][SU][0-9]{1,9}")
_DEVICE = re.compile(r"(cpu|cuda|mps)(:[0-9]{1,3})?")
#: The largest pool a numpy SeedSequence is rebuilt with (numpy's default is 4).
_MAX_POOL = 64


def _dtype_of(text: Any) -> np.dtype:
    if type(text) is not str or not _DTYPE.fullmatch(text):
        raise CheckpointError(f"malformed checkpoint: {text!r} is not a plain dtype")
    return np.dtype(text)


def _tensor_at(r: Any, key: Any) -> Any:
    tensor = r.tensors.get(key) if type(key) is str else None
    if tensor is None:
        raise CheckpointError(f"malformed checkpoint: no tensor {key!r} in the tensor file")
    return tensor


def _shape(node: dict) -> tuple:
    shape = node.get("shape")
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape) \
            or len(shape) > 32:
        raise CheckpointError(f"malformed checkpoint: array shape {shape!r}")
    return tuple(shape)


# -- numpy ------------------------------------------------------------------------------------

def _array(r, node, node_id):
    dtype, shape = _dtype_of(node.get("dtype")), _shape(node)
    writeable = node.get("writeable", True)
    if type(writeable) is not bool:
        raise CheckpointError("malformed checkpoint: writeable must be true or false")
    tensor = _tensor_at(r, node["array"])
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    data = tensor.numpy()
    if data.dtype != dtype:  # stored as bytes: a dtype torch lacks, or another byte order
        if data.dtype != np.uint8 or data.ndim != 1 or data.size % dtype.itemsize:
            raise CheckpointError(f"malformed checkpoint: array stored as {data.dtype}, "
                                  f"declared {dtype}")
        data = data.view(dtype)
    if data.shape != shape:
        if data.size != math.prod(shape):
            raise CheckpointError(f"malformed checkpoint: array of {data.size} values "
                                  f"declared with shape {list(shape)}")
        data = data.reshape(shape)
    if not writeable:
        data.flags.writeable = False
    return r.keep(node_id, data)


def _objects(r, node, node_id):
    shape, items = _shape(node), r.items(node, "objects")
    if len(items) != math.prod(shape):  # before allocating: the file lists every entry
        raise CheckpointError(f"malformed checkpoint: {len(items)} values for an array of "
                              f"objects of shape {list(shape)}")
    out = r.keep(node_id, np.empty(shape, dtype=object))
    flat = out.reshape(-1)
    for i, v in enumerate(items):
        flat[i] = r.value(v)
    return out


def _scalar(r, node, node_id):
    dtype = _dtype_of(node.get("dtype"))
    value = node["scalar"]
    if dtype.kind == "c":
        parts = value if type(value) is list and len(value) == 2 else None
        if parts is None:
            raise CheckpointError(f"malformed checkpoint: {value!r} is not a {dtype} value")
        value = complex(r.number(parts[0]), r.number(parts[1]))
    elif dtype.kind == "f":
        value = r.number(value)
        if math.isfinite(value) and abs(value) > float(np.finfo(dtype).max):
            raise CheckpointError(f"malformed checkpoint: {value} is outside the range of "
                                  f"{dtype}")
    elif dtype.kind == "S":
        if type(value) is not str:
            raise CheckpointError(f"malformed checkpoint: {value!r} is not a {dtype} value")
        value = base64.b64decode(value, validate=True)
    elif type(value) is not {"b": bool, "i": int, "u": int, "U": str}[dtype.kind]:
        raise CheckpointError(f"malformed checkpoint: {value!r} is not a {dtype} value")
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise CheckpointError(f"malformed checkpoint: {value} is outside the range of "
                                  f"{dtype} ({info.min} to {info.max})")
    return r.keep(node_id, dtype.type(value))


def _dtype(r, node, node_id):
    return r.keep(node_id, _dtype_of(node["dtype"]))


def _np_generator(r, node, node_id):
    bit_generator = r.value(node["np_generator"])
    if type(bit_generator) not in BIT_GENERATORS.values():
        raise CheckpointError("malformed checkpoint: a numpy Generator needs a bit generator")
    return r.keep(node_id, np.random.Generator(bit_generator))


def _bit_generator(r, node, node_id):
    name = node["bit_generator"]
    cls = BIT_GENERATORS.get(name) if type(name) is str else None
    if cls is None:
        raise CheckpointError(f"malformed checkpoint: unknown bit generator {name!r}")
    seed_seq = r.value(node.get("seed_seq"))
    if seed_seq is not None and type(seed_seq) is not np.random.SeedSequence:
        raise CheckpointError("malformed checkpoint: a bit generator's seed_seq is not one")
    bit_generator = cls(seed_seq)
    try:
        bit_generator.state = r.value(node["state"])
    except (TypeError, ValueError, KeyError, OverflowError) as error:
        raise CheckpointError(f"malformed checkpoint: bit generator state ({error})") from None
    return r.keep(node_id, bit_generator)


def _seed_sequence(r, node, node_id):
    fields = r.value(node["seed_sequence"])
    if type(fields) is not dict or set(fields) != {"entropy", "spawn_key", "pool_size",
                                                   "n_children_spawned"}:
        raise CheckpointError("malformed checkpoint: a SeedSequence needs its four fields")
    pool_size, spawn_key = fields["pool_size"], fields["spawn_key"]
    if type(pool_size) is not int or not 1 <= pool_size <= _MAX_POOL \
            or type(spawn_key) not in (list, tuple):
        raise CheckpointError(f"malformed checkpoint: SeedSequence pool_size {pool_size!r}")
    try:
        return r.keep(node_id, np.random.SeedSequence(
            fields["entropy"], spawn_key=tuple(spawn_key), pool_size=pool_size,
            n_children_spawned=fields["n_children_spawned"]))
    except (TypeError, ValueError, OverflowError) as error:
        raise CheckpointError(f"malformed checkpoint: SeedSequence ({error})") from None


def _random_state(r, node, node_id):
    generator = np.random.RandomState()
    try:
        generator.set_state(r.value(node["random_state"]))
    except (TypeError, ValueError, KeyError, OverflowError) as error:
        raise CheckpointError(f"malformed checkpoint: RandomState ({error})") from None
    return r.keep(node_id, generator)


def _py_random(r, node, node_id):
    generator = random.Random()
    try:
        generator.setstate(r.value(node["py_random"]))
    except (TypeError, ValueError, OverflowError) as error:
        raise CheckpointError(f"malformed checkpoint: random.Random ({error})") from None
    return r.keep(node_id, generator)


# -- torch --------------------------------------------------------------------------------------

def _flag(node: dict, key: str) -> bool:
    value = node.get(key, False)
    if type(value) is not bool:
        raise CheckpointError(f"malformed checkpoint: {key} must be true or false")
    return value


def _tensor(r, node, node_id):
    import torch

    tensor = _tensor_at(r, node["tensor"])
    parameter, requires_grad = _flag(node, "parameter"), _flag(node, "requires_grad")
    if parameter:
        tensor = torch.nn.Parameter(tensor, requires_grad=requires_grad)
    elif requires_grad:
        tensor = tensor.detach().requires_grad_(True)
    r.keep(node_id, tensor)
    if "grad" in node:
        grad = r.value(node["grad"])
        if grad is not None and (not isinstance(grad, torch.Tensor) or grad.shape !=
                                 tensor.shape):
            raise CheckpointError("malformed checkpoint: a gradient that is not a tensor of "
                                  "its parameter's shape")
        tensor.grad = grad
    return tensor


def _torch_dtype(r, node, node_id):
    import torch

    name = node["torch_dtype"]
    dtype = getattr(torch, name, None) if type(name) is str and name in _TORCH_DTYPES else None
    if not isinstance(dtype, torch.dtype):
        raise CheckpointError(f"malformed checkpoint: torch dtype {name!r}")
    return r.keep(node_id, dtype)


def _device(r, node, node_id):
    import torch

    text = node["device"]
    if type(text) is not str or not _DEVICE.fullmatch(text):
        raise CheckpointError(f"malformed checkpoint: device {text!r} (cpu, cuda or mps)")
    return r.keep(node_id, torch.device(text))


def _size(r, node, node_id):
    import torch

    sizes = node["size"]
    if type(sizes) is not list or not all(type(n) is int and n >= 0 for n in sizes):
        raise CheckpointError("malformed checkpoint: torch.Size needs ints")
    return r.keep(node_id, torch.Size(sizes))


def _torch_generator(r, node, node_id):
    import torch

    device = _device(r, {"device": node["torch_generator"]}, None)
    state = _tensor_at(r, node["state"]).cpu()
    if state.dtype != torch.uint8 or state.dim() != 1:
        raise CheckpointError("malformed checkpoint: a generator state must be bytes")
    target = device if r.map_location is None else torch.device(r.map_location)
    if target.type != device.type:
        # A CUDA generator's state means nothing to a CPU one: a new stream, seeded from it.
        seed = int.from_bytes(hashlib.sha256(state.numpy().tobytes()).digest()[:8], "big")
        return r.keep(node_id, torch.Generator(device=target).manual_seed(seed >> 1))
    generator = torch.Generator(device=device)
    try:
        generator.set_state(state)
    except RuntimeError as error:
        raise CheckpointError(f"malformed checkpoint: generator state ({error})") from None
    return r.keep(node_id, generator)


_TORCH_DTYPES = frozenset((
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8",
    "int16", "int32", "int64", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn",
    "float8_e5m2",
))

#: The rebuilder of each tag (``f(rebuilder, node, node_id)``); "array", "objects" and
#: "scalar" come before "dtype", a key they also have.
ARRAY_REBUILDERS = {
    "array": _array, "objects": _objects, "scalar": _scalar, "dtype": _dtype,
    "np_generator": _np_generator, "bit_generator": _bit_generator,
    "seed_sequence": _seed_sequence, "random_state": _random_state, "py_random": _py_random,
    "tensor": _tensor, "torch_dtype": _torch_dtype, "device": _device, "size": _size,
    "torch_generator": _torch_generator,
}

#: The keys each of these tags allows (besides ``id``).
ARRAY_SCHEMA = {
    "array": ("array", "dtype", "shape", "writeable"), "objects": ("objects", "shape"),
    "scalar": ("scalar", "dtype"), "dtype": ("dtype",), "np_generator": ("np_generator",),
    "bit_generator": ("bit_generator", "state", "seed_seq"),
    "seed_sequence": ("seed_sequence",), "random_state": ("random_state",),
    "py_random": ("py_random",), "tensor": ("tensor", "parameter", "requires_grad", "grad"),
    "torch_dtype": ("torch_dtype",), "device": ("device",), "size": ("size",),
    "torch_generator": ("torch_generator", "state"),
}
