"""Torch approximators: a module with its optimiser, and a target network around one."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from stagerl.core.policy import move_optimiser_state

__all__ = ["Approximator", "TargetNetwork"]


class Approximator:
    """A torch module and the optimiser of its parameters.

    ``approximator(x)`` runs the module; ``approximator.optimise(loss)`` does ``zero_grad``,
    ``backward`` and ``step`` (clipping the gradient norm first when ``max_grad_norm`` is set).

    Args:
        model: the ``torch.nn.Module``.
        optimiser: a ``torch.optim.Optimizer`` over ``model``'s parameters.
        max_grad_norm: clip the total gradient norm to this before each step (``None``: no clip).

    Example:
        >>> import torch
        >>> from stagerl import Approximator
        >>> model = torch.nn.Linear(2, 1)
        >>> approximator = Approximator(model, torch.optim.SGD(model.parameters(), lr=0.1))
        >>> approximator(torch.ones(3, 2)).shape
        torch.Size([3, 1])
        >>> approximator.optimise(approximator(torch.ones(3, 2)).pow(2).mean())
        >>> sorted(approximator.state_dict())
        ['model', 'optimiser']
    """

    def __init__(self, model: nn.Module, optimiser: torch.optim.Optimizer,
                 max_grad_norm: float | None = None):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(optimiser, torch.optim.Optimizer):
            raise TypeError(
                f"optimiser must be a torch.optim.Optimizer, got {type(optimiser).__name__}; "
                "e.g. torch.optim.Adam(model.parameters(), lr=1e-3)"
            )
        if max_grad_norm is not None and max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be positive or None, got {max_grad_norm!r}")
        self.model = model
        self.optimiser = optimiser
        self.max_grad_norm = max_grad_norm

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.model(*args, **kwargs)

    def parameters(self) -> Any:
        return self.model.parameters()

    def optimise(self, loss: torch.Tensor) -> None:
        """One gradient step on ``loss``."""
        self.optimiser.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.optimiser.step()

    def to(self, device: Any) -> Approximator:
        self.model.to(device)
        move_optimiser_state(self.optimiser, device, torch)
        return self

    def train(self, mode: bool = True) -> Approximator:
        self.model.train(mode)
        return self

    def eval(self) -> Approximator:
        return self.train(False)

    def state_dict(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "optimiser": self.optimiser.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimiser.load_state_dict(state["optimiser"])

    def __repr__(self) -> str:
        return f"Approximator({self.model!r}, {type(self.optimiser).__name__})"


class TargetNetwork:
    """An online :class:`Approximator` plus a slowly following copy of its module.

    ``tn(x)`` runs the online network (``tn.model``); ``tn.target`` is the target module, a deep
    copy without gradients. ``tn.optimise(loss)`` steps the online network and counts
    (``tn.n_optimise``); every ``sync_freq`` steps the target becomes
    ``rho * target + (1 - rho) * online`` and the counter returns to 0: ``rho=0`` is a hard copy
    every ``sync_freq`` steps (DQN), ``rho`` near 1 with ``sync_freq=1`` is Polyak averaging
    (SAC, TD3). Floating buffers (batch-norm statistics) follow the same rule; others are copied.

    Example:
        >>> import torch
        >>> from stagerl import Approximator, TargetNetwork
        >>> model = torch.nn.Linear(1, 1, bias=False)
        >>> tn = TargetNetwork(Approximator(model, torch.optim.SGD(model.parameters(), lr=0.5)),
        ...                    sync_freq=2)
        >>> _ = torch.nn.init.ones_(tn.model.weight); tn.sync()
        >>> tn.optimise(tn(torch.ones(1, 1)).sum())              # weight 1.0 -> 0.5
        >>> tn.n_optimise, tn.target.weight.item()
        (1, 1.0)
        >>> tn.optimise(tn(torch.ones(1, 1)).sum())              # weight 0.5 -> 0.0, synced
        >>> tn.n_optimise, tn.target.weight.item()
        (0, 0.0)
    """

    def __init__(self, network: Approximator, sync_freq: int = 1, rho: float = 0.0):
        if not isinstance(network, Approximator):
            raise TypeError(
                f"TargetNetwork needs an Approximator, got {type(network).__name__}; wrap it: "
                "TargetNetwork(Approximator(model, optimiser))"
            )
        if isinstance(sync_freq, bool) or not isinstance(sync_freq, int):
            raise TypeError(f"sync_freq must be an int, got sync_freq={sync_freq!r}")
        if sync_freq <= 0:
            raise ValueError(f"sync_freq must be positive, got sync_freq={sync_freq!r}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"rho must be in [0, 1], got rho={rho!r}")
        self.network = network
        self.sync_freq = sync_freq
        self.rho = float(rho)
        self.n_optimise = 0
        self.target = copy.deepcopy(network.model)
        self.target.requires_grad_(False)

    @property
    def model(self) -> nn.Module:
        """The online module."""
        return self.network.model

    @property
    def optimiser(self) -> torch.optim.Optimizer:
        return self.network.optimiser

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.network.model(*args, **kwargs)

    def parameters(self) -> Any:
        return self.network.model.parameters()

    def optimise(self, loss: torch.Tensor) -> None:
        """One gradient step of the online network; syncs the target every ``sync_freq``."""
        self.network.optimise(loss)
        self.n_optimise += 1
        if self.n_optimise >= self.sync_freq:
            self.sync()
            self.n_optimise = 0

    @torch.no_grad()
    def sync(self) -> None:
        """``target <- rho * target + (1 - rho) * online`` (parameters and floating buffers)."""
        pairs = [
            *zip(self.target.parameters(), self.network.model.parameters(), strict=True),
            *zip(self.target.buffers(), self.network.model.buffers(), strict=True),
        ]
        blended = [(t, o) for t, o in pairs if t.is_floating_point()] if self.rho > 0.0 else []
        for target, online in pairs:
            if self.rho == 0.0 or not target.is_floating_point():
                target.copy_(online)  # exact, where a lerp with weight 1 may round
        if blended and self.rho < 1.0:
            # One fused call: Polyak averaging runs after every gradient step in SAC and TD3.
            targets, onlines = zip(*blended, strict=True)
            torch._foreach_lerp_(list(targets), list(onlines), 1.0 - self.rho)

    def to(self, device: Any) -> TargetNetwork:
        self.network.to(device)
        self.target.to(device)
        return self

    def train(self, mode: bool = True) -> TargetNetwork:
        self.network.train(mode)
        return self

    def eval(self) -> TargetNetwork:
        return self.train(False)

    def state_dict(self) -> dict[str, Any]:
        return {
            "network": self.network.state_dict(),
            "target": self.target.state_dict(),
            "n_optimise": self.n_optimise,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state["network"])
        self.target.load_state_dict(state["target"])
        self.n_optimise = int(state["n_optimise"])

    def __repr__(self) -> str:
        return f"TargetNetwork({self.network!r}, sync_freq={self.sync_freq}, rho={self.rho})"
