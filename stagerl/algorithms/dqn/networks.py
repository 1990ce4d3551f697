"""Q-networks of the DQN family, and a numpy copy of them for acting without torch.

A :class:`QNetwork` is ``encoder -> body -> head``:

* the encoder turns stored observations into floats (one-hot for ``Discrete`` states, ``/255``
  for ``uint8`` images), so batches travel to the device in their compact stored dtype;
* the body is an MLP over the flattened observation (or stack of frames) by default, or a
  feature extractor (``stagerl.algorithms.extractors``: the Nature CNN for frames, a combined
  extractor for Dict observations, or the user's) followed by the ``net_arch`` layers;
* the head is plain (one value per action), dueling (``V(s) + A(s, a) - mean_a A(s, a)``) or
  distributional (C51: ``n_atoms`` logits per action over a fixed support of returns).

Acting on one observation through torch costs ~30-40 us per call on a CPU, more than a CartPole
step (~7 us). :class:`NumpyQNetwork` holds numpy copies of an MLP network's weights and computes
the same action values in ~8 us; the policy refreshes it after every burst of gradient steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from stagerl.algorithms.onednn import OneDNNLinear

__all__ = ["ObservationEncoder", "QNetwork", "NumpyQNetwork", "mlp_body"]


class ObservationEncoder(nn.Module):
    """Stored observations to float inputs: ``"one_hot"`` (``Discrete``), ``"image"`` (``uint8``
    pixels scaled to [0, 1]), ``"float"`` (a cast, free for float32) or ``"raw"`` (as stored:
    a feature extractor reads them, and scales pixels itself).

    Example:
        >>> import torch
        >>> ObservationEncoder("one_hot", n=3)(torch.tensor([2, 0])).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """

    def __init__(self, kind: str = "float", n: int = 0, start: int = 0):
        super().__init__()
        if kind not in ("float", "one_hot", "image", "raw"):
            raise ValueError(f'kind must be "float", "one_hot", "image" or "raw", got '
                             f'kind={kind!r}')
        self.kind, self.n, self.start = kind, int(n), int(start)

    @classmethod
    def for_space(cls, space: gymnasium.Space) -> ObservationEncoder:
        if isinstance(space, gymnasium.spaces.Discrete):
            return cls("one_hot", int(space.n), int(space.start))
        if isinstance(space, gymnasium.spaces.Box) and space.dtype == np.uint8 and \
                np.all(space.low == 0) and np.all(space.high == 255):
            return cls("image")
        return cls("float")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "raw":
            return x
        if self.kind == "one_hot":
            return F.one_hot(x.long() - self.start, self.n).float()
        if self.kind == "image":
            return x.float() / 255.0
        return x if x.dtype == torch.float32 else x.float()

    def extra_repr(self) -> str:
        return f"{self.kind!r}" + (f", n={self.n}" if self.kind == "one_hot" else "")


def mlp_body(in_features: int, net_arch: Sequence[int]) -> nn.Sequential:
    """``Flatten`` then ``Linear + ReLU`` per hidden size (no output layer: the head follows)."""
    layers: list[nn.Module] = [nn.Flatten()]
    sizes = [int(in_features), *map(int, net_arch)]
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU(inplace=True)]  # in place: addmm keeps its input
    return nn.Sequential(*layers)


class QNetwork(nn.Module):
    """Action values ``Q(s, .)`` from a batch of observations: encoder, body, head.

    ``network(x)`` is the head's raw output: action values ``(batch, n_actions)``, or for the
    distributional head logits ``(batch, n_actions, n_atoms)`` over ``network.support``.
    ``network.q_values(x)`` is always ``(batch, n_actions)`` (the expectation for C51).

    Args:
        body: features from encoded observations, ``(batch, features)``.
        features: the body's output size.
        n_actions: the number of actions.
        encoder: an :class:`ObservationEncoder` (default: a float cast).
        dueling: a value stream and an advantage stream, ``V + A - mean(A)``.
        n_atoms: 1 for plain action values; more for a distributional (C51) head.
        v_min, v_max: the distributional head's support (``n_atoms`` evenly spaced returns).

    Example:
        >>> import torch
        >>> net = QNetwork(mlp_body(4, (8,)), 8, n_actions=2, dueling=True, n_atoms=5)
        >>> net(torch.zeros(3, 4)).shape, net.q_values(torch.zeros(3, 4)).shape
        (torch.Size([3, 2, 5]), torch.Size([3, 2]))
    """

    def __init__(self, body: nn.Module, features: int, n_actions: int,
                 encoder: ObservationEncoder | None = None, dueling: bool = False,
                 n_atoms: int = 1, v_min: float = -10.0, v_max: float = 10.0):
        super().__init__()
        self.encoder = encoder if encoder is not None else ObservationEncoder()
        self.body = body
        self.n_actions, self.n_atoms, self.dueling = int(n_actions), int(n_atoms), bool(dueling)
        self.advantage = nn.Linear(features, self.n_actions * self.n_atoms)
        self.value = nn.Linear(features, self.n_atoms) if dueling else None
        self.distributional = self.n_atoms > 1
        if self.distributional:
            self.register_buffer("support", torch.linspace(v_min, v_max, self.n_atoms))
        else:
            self.support = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(self.encoder(x))
        out = self.advantage(h)
        if self.distributional:
            out = out.view(-1, self.n_actions, self.n_atoms)
        if self.value is not None:
            value = self.value(h)
            value = value.unsqueeze(1) if self.distributional else value
            out = value + out - out.mean(dim=1, keepdim=True)
        return out

    def values_of(self, output: torch.Tensor) -> torch.Tensor:
        """Action values from the network's raw output (the expectation for C51)."""
        if self.distributional:
            return (output.softmax(dim=-1) * self.support).sum(dim=-1)
        return output

    def q_values(self, x: torch.Tensor) -> torch.Tensor:
        return self.values_of(self(x))


class NumpyQNetwork:
    """The action values of a :class:`QNetwork` with an MLP body, computed with numpy.

    Built from the network (``NumpyQNetwork.of(network)``, ``None`` when the body is not an
    MLP of ``Flatten``, ``Linear`` and ``ReLU``); ``refresh()`` copies the weights again.
    ``q_values(x)`` takes one observation (``(n_actions,)`` out) or a batch.

    Example:
        >>> import numpy as np, torch
        >>> net = QNetwork(mlp_body(4, (16, 16)), 16, n_actions=2)
        >>> fast = NumpyQNetwork.of(net)
        >>> x = np.ones(4, dtype=np.float32)
        >>> bool(np.allclose(fast.q_values(x), net.q_values(torch.ones(1, 4))[0].detach(),
        ...                  atol=1e-6))
        True
    """

    def __init__(self, network: QNetwork):
        self.network = network
        self.encoder = network.encoder
        self.refresh()

    @classmethod
    def of(cls, network: QNetwork) -> NumpyQNetwork | None:
        body = network.body
        if not isinstance(body, nn.Sequential) or not all(
                type(m) in (nn.Flatten, nn.Linear, OneDNNLinear, nn.ReLU) for m in body):
            return None
        return cls(network)

    def refresh(self) -> None:
        """Copy the network's weights (one host transfer per tensor on an accelerator)."""
        def arrays(linear: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
            weight = linear.weight.detach().to("cpu").numpy()  # on the CPU a view, copied once
            return np.array(weight.T, order="C"), linear.bias.detach().to("cpu").numpy().copy()

        net = self.network
        self.hidden = [arrays(m) for m in net.body if isinstance(m, nn.Linear)]
        self.advantage = arrays(net.advantage)
        self.value = None if net.value is None else arrays(net.value)
        self.support = None if net.support is None else net.support.cpu().numpy().copy()

    def _encode(self, x: np.ndarray, single: bool) -> np.ndarray:
        kind = self.encoder.kind
        if kind == "one_hot":
            x = np.eye(self.encoder.n, dtype=np.float32)[np.asarray(x) - self.encoder.start]
        elif kind == "image":
            x = np.asarray(x, dtype=np.float32) / np.float32(255.0)
        else:
            x = np.asarray(x, dtype=np.float32)
        return x.reshape(-1) if single else x.reshape(x.shape[0], -1)

    def q_values(self, x: np.ndarray, single: bool = True) -> np.ndarray:
        """Action values of one observation (``single``) or of a batch of them."""
        h = self._encode(x, single)
        for weight, bias in self.hidden:
            h = h @ weight
            h += bias
            np.maximum(h, 0.0, out=h)
        weight, bias = self.advantage
        out = h @ weight + bias
        n_actions, n_atoms = self.network.n_actions, self.network.n_atoms
        if n_atoms > 1:
            out = out.reshape(out.shape[:-1] + (n_actions, n_atoms))
        if self.value is not None:
            value = h @ self.value[0] + self.value[1]
            value = value[..., None, :] if n_atoms > 1 else value
            out = value + out - out.mean(axis=-2 if n_atoms > 1 else -1, keepdims=True)
        if n_atoms > 1:
            p = np.exp(out - out.max(axis=-1, keepdims=True))
            return (p * self.support).sum(axis=-1) / p.sum(axis=-1)
        return out
