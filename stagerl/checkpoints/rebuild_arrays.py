"""Data to numpy and torch values: arrays, scalars, dtypes, generators, tensors.

The part of :mod:`stagerl.checkpoints.rebuild` for values that are not Python's own: each is
built from a fixed table or a strict pattern (a numpy dtype, a bit generator's name, a torch
dtype), never from a name looked up or imported.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
from typing import Any

import numpy as np

from stagerl.checkpoints.graph import BIT_GENERATORS
from stagerl.checkpoints.registry import CheckpointError

__all__ = ["ArrayRebuilders"]

_DTYPE = re.compile(r"[<>|=][biufc][0-9]{1,2}|[<>|=][SU][0-9]{1,9}")


class ArrayRebuilders:
    """The rebuilders of numpy and torch values (a mixin of the rebuilder, which provides
    ``value``, ``keep``, ``items``, ``_number`` and ``map_location``)."""

    tensors: dict
    map_location: Any

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


_TORCH_DTYPES = frozenset((
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8",
    "int16", "int32", "int64", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn",
    "float8_e5m2",
))
