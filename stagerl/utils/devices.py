"""Torch devices by name: ``"cpu"``, ``"cuda"`` (or ``"cuda:1"``) and ``"auto"``."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["resolve_device"]


def resolve_device(device: Any = "auto") -> torch.device:
    """The ``torch.device`` for ``device``; ``"auto"`` is CUDA when it is available, else the CPU.

    Raises ``ValueError`` for CUDA on a machine without it (naming ``"cpu"`` and ``"auto"``) and
    for a name torch does not know.

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
        >>> resolve_device("auto").type in ("cpu", "cuda")
        True
    """
    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str):
        name = device
    else:
        raise TypeError(f"device must be 'cpu', 'cuda', 'auto' or a torch.device, got {device!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(name)
    except RuntimeError as error:
        raise ValueError(
            f"device must be 'cpu', 'cuda' or 'auto', got device={device!r}"
        ) from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} but this machine has no CUDA device (torch.cuda.is_available() is "
            "False); use device='cpu', or device='auto' to take a GPU only where there is one"
        )
    return resolved
