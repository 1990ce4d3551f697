"""Small torch networks the algorithms share."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["mlp", "clip_grad_norm"]


def mlp(in_features: int, hidden: Sequence[int], out_features: int,
        activation: type[nn.Module] = nn.ReLU, out_gain: float | None = None) -> nn.Sequential:
    """A multi-layer perceptron: ``Linear`` layers of sizes ``hidden`` with ``activation``
    between them, and a linear output of ``out_features``.

    ``out_gain``: when given, the output layer is initialised orthogonally with that gain and a
    zero bias (PPO's policy head uses 0.01, its value head 1.0); otherwise torch's default.

    Example:
        >>> import torch
        >>> net = mlp(4, (64, 64), 2)
        >>> net(torch.zeros(3, 4)).shape
        torch.Size([3, 2])
    """
    sizes = [int(in_features), *map(int, hidden)]
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), activation()]
    out = nn.Linear(sizes[-1], int(out_features))
    if out_gain is not None:
        nn.init.orthogonal_(out.weight, gain=out_gain)
        nn.init.zeros_(out.bias)
    layers.append(out)
    return nn.Sequential(*layers)


def clip_grad_norm(parameters: list, max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_(parameters, max_norm, foreach=True)`` without its
    per-call checks and grouping (parameters on one device, of one dtype; their gradients
    scaled by ``min(1, max_norm / (total norm + 1e-6))``), the same float operations in the
    same order: the same gradients, bit for bit, in about half the time on a small network.
    On the CPU a scale of exactly 1 (the norm within ``max_norm``) multiplies nothing: ``x *
    1.0`` is ``x`` (on a GPU reading the scale would wait for the device). Returns the total
    norm.

    Example:
        >>> weight = torch.nn.Parameter(torch.zeros(2))
        >>> weight.grad = torch.tensor([3.0, 4.0])
        >>> total = clip_grad_norm([weight], 1.0)
        >>> round(total.item(), 4), [round(g, 4) for g in weight.grad.tolist()]
        (5.0, [0.6, 0.8])
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    with torch.no_grad():
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        if scale.device.type != "cpu" or scale.item() != 1.0:
            torch._foreach_mul_(grads, scale)
    return total
