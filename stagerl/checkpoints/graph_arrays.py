"""Numpy and torch values to data: the part of :mod:`stagerl.checkpoints.graph` for values that
are not Python's own (arrays, scalars, bit generators, tensors, dtypes, devices, generators).

Each is a function of the encoder (which provides ``value`` and ``tensor_key``); the way back is
:mod:`stagerl.checkpoints.rebuild_arrays`.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from stagerl.checkpoints.registry import CheckpointError

__all__ = ["BIT_GENERATORS", "encode_array", "encode_numpy_scalar", "encode_bit_generator",
           "encode_torch_value", "dtype_str"]

#: numpy bit generators a checkpoint may hold, by name.
BIT_GENERATORS = {c.__name__: c for c in (np.random.PCG64, np.random.PCG64DXSM,
                                          np.random.MT19937, np.random.Philox, np.random.SFC64)}


# -- numpy ----------------------------------------------------------------------------------
def encode_array(encoder: Any, obj: np.ndarray, where: str) -> dict:
    if obj.dtype == object:  # e.g. a vector env's final observations: each one as data
        return {"objects": [encoder.value(v, f"{where}[{i}]")
                            for i, v in enumerate(obj.reshape(-1).tolist())],
                "shape": list(obj.shape)}
    dtype = dtype_str(obj.dtype, where)
    node = {"array": encoder.tensor_key(_array_as_tensor(obj, where, encoder)), "dtype": dtype,
            "shape": list(obj.shape)}
    if not obj.flags.writeable:
        node["writeable"] = False
    return node

def encode_numpy_scalar(encoder: Any, obj: np.generic, where: str) -> dict:
    dtype = dtype_str(obj.dtype, where)
    kind = obj.dtype.kind
    if kind == "c":
        value: Any = [encoder.value(float(obj.real), where), encoder.value(float(obj.imag), where)]
    elif kind == "f":
        value = encoder.value(float(obj), where)
        if obj.dtype.itemsize > 8:
            raise CheckpointError(f"cannot save {where}: a long double scalar would lose "
                                  "precision; store it as a 0-d array")
    elif kind == "S":
        value = base64.b64encode(bytes(obj)).decode("ascii")
    else:
        value = obj.item()
    return {"scalar": value, "dtype": dtype}

def encode_bit_generator(encoder: Any, obj: Any, where: str) -> dict:
    seed_seq = getattr(obj, "seed_seq", None)
    return {"bit_generator": type(obj).__name__,
            "state": encoder.value(obj.state, f"{where}.state"),
            "seed_seq": encoder.value(seed_seq if type(seed_seq) is np.random.SeedSequence
                                   else None, f"{where}.seed_seq")}

# -- torch ----------------------------------------------------------------------------------
def encode_torch_value(encoder: Any, obj: Any, kind: type, where: str, torch: Any) -> dict | None:
    if isinstance(obj, torch.Tensor):
        return _encode_tensor(encoder, obj, where, torch)
    if kind is torch.dtype:
        return {"torch_dtype": str(obj).removeprefix("torch.")}
    if kind is torch.device:
        return {"device": str(obj)}
    if kind is torch.Size:
        return {"size": list(obj)}
    if kind is torch.Generator:
        state = obj.get_state()
        return {"torch_generator": str(obj.device), "state": encoder.tensor_key(state)}
    return None

def _encode_tensor(encoder: Any, obj: Any, where: str, torch: Any) -> dict:
    parameter = isinstance(obj, torch.nn.Parameter)
    if type(obj) is not torch.Tensor and not parameter:
        raise CheckpointError(f"cannot save {where}: a tensor of the subclass "
                              f"{type(obj).__name__} (only plain tensors and parameters)")
    if obj.grad_fn is not None:
        raise CheckpointError(f"cannot save {where}: a tensor that is the result of a "
                              "computation still tracked by autograd; store it detached")
    if obj.layout is not torch.strided or obj.device.type == "meta":
        raise CheckpointError(f"cannot save {where}: a {obj.layout} tensor on "
                              f"{obj.device} (only dense tensors with data)")
    node: dict[str, Any] = {"tensor": encoder.tensor_key(obj.detach())}
    if parameter:
        node["parameter"] = True
    if obj.requires_grad:
        node["requires_grad"] = True
    if obj.grad is not None:
        node["grad"] = encoder.value(obj.grad, f"{where}.grad")
    return node


def dtype_str(dtype: np.dtype, where: str) -> str:
    if dtype.kind not in "biufcSU" or dtype.fields is not None or dtype.subdtype is not None:
        raise CheckpointError(f"cannot save {where}: arrays of dtype {dtype} are not plain "
                              "data (numbers, booleans, fixed-size strings)")
    return dtype.str


def _array_as_tensor(obj: np.ndarray, where: str, encoder: Any) -> Any:
    torch = encoder.torch or __import__("torch")
    encoder.torch = torch
    if not obj.flags.writeable or not (obj.flags.c_contiguous or obj.flags.f_contiguous):
        obj = np.array(obj, order="K" if obj.flags.f_contiguous else "C")
    if obj.dtype.isnative and obj.dtype.kind in "biufc":
        try:
            return torch.from_numpy(obj)
        except TypeError:  # a dtype torch lacks: its bytes below
            pass
    raw = np.ascontiguousarray(obj).reshape(-1).view(np.uint8)
    return torch.from_numpy(raw)
