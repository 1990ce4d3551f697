"""Small torch networks the algorithms share."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

__all__ = ["mlp"]


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
