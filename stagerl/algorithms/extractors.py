"""Feature extractors: the network body that turns observations into a feature vector, chosen by
the user and shared (or not) between an algorithm's networks, as Stable-Baselines3's
``features_extractor_class`` and CleanRL's ``Agent`` body.

An extractor is a torch module built from the observation space by a *factory*::

    factory(observation_space) -> module       module(observations) -> (batch, features)

``observations`` is a batch of what the env gives (a tensor, or a dict or tuple of tensors for
``Dict`` and ``Tuple`` spaces); ``uint8`` pixels come in as they are stored and are scaled to
[0, 1] inside the extractor, so replay and rollouts keep a byte per pixel. A module may say its
output size as ``features_dim``; otherwise it is measured with one forward pass. Any callable
of that shape is a factory (a class taking the space, a ``functools.partial``, a lambda); the
built-ins, by the names the algorithms' settings take (``features_extractor="..."``):

* ``"mlp"`` — :class:`Flatten`: the observation as one flat float vector (``Discrete`` and
  ``MultiDiscrete`` one-hot); the algorithm's own ``net_arch`` layers follow (the default for
  vector observations, and the fastest: no extra module at all);
* ``"nature_cnn"`` — :class:`NatureCNN`, the DQN paper's convolutions for 84×84 frames (a
  frame, a stack of frames or a channels-first image);
* ``"combined"`` — :class:`CombinedExtractor`: a ``Dict`` or ``Tuple`` observation, each image
  leaf through a :class:`NatureCNN`, every other leaf flattened, the features concatenated;
* ``"auto"`` — ``"combined"`` for ``Dict``/``Tuple`` spaces, ``"nature_cnn"`` for images
  (``uint8`` Boxes of at least 36×36 pixels), else ``"mlp"``.

:class:`MLP` (flatten, then hidden layers) is there for bodies given directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["Flatten", "MLP", "NatureCNN", "CombinedExtractor", "EXTRACTORS", "is_image_space",
           "make_extractor", "extractor_factory", "features_dim", "stacked_space",
           "check_extractor_name", "sample_batch", "orthogonal_init", "observation_spec",
           "input_dtypes", "readable_observations", "convolution_layout"]

#: The built-in extractors by the name the settings take.
EXTRACTORS = ("auto", "mlp", "nature_cnn", "combined")


def is_image_space(space: Any) -> bool:
    """A ``uint8`` Box of frames with at least 36×36 pixels on its last two axes (one grey
    frame, a stack of them, or a channels-first image): what :class:`NatureCNN` reads."""
    return (isinstance(space, gymnasium.spaces.Box) and space.dtype == np.uint8
            and len(space.shape) >= 2 and min(space.shape[-2:]) >= 36)


def stacked_space(space: gymnasium.spaces.Box, k: int) -> gymnasium.spaces.Box:
    """The space of ``k`` stacked frames of ``space`` (a leading stack axis; ``k == 1``:
    ``space`` itself)."""
    if k == 1:
        return space
    low = np.broadcast_to(space.low, (k, *space.shape))
    high = np.broadcast_to(space.high, (k, *space.shape))
    return gymnasium.spaces.Box(low, high, dtype=space.dtype)


def observation_spec(space: Any) -> Any:
    """How a replay or rollout stores observations of ``space``: ``Discrete`` as int64 indices,
    float Boxes as float32, other arrays in their own dtype (``uint8`` pixels stay a byte); a
    ``Dict`` or ``Tuple`` as one trace per leaf (a dict or tuple of specs, see
    ``trajectories.nested``).

    Example:
        >>> observation_spec(gymnasium.spaces.Dict(
        ...     frame=gymnasium.spaces.Box(0, 255, (84, 84), np.uint8),
        ...     n=gymnasium.spaces.Discrete(3)))
        {'frame': (dtype('uint8'), (84, 84)), 'n': (<class 'numpy.int64'>, ())}
    """
    if isinstance(space, gymnasium.spaces.Dict):
        return {key: observation_spec(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gymnasium.spaces.Tuple):
        return tuple(observation_spec(sub) for sub in space.spaces)
    if isinstance(space, gymnasium.spaces.Discrete):
        return np.int64, ()
    dtype = np.float32 if np.dtype(space.dtype).kind == "f" else np.dtype(space.dtype)
    return dtype, tuple(space.shape)


def input_dtypes(space: Any, extractor: bool) -> Any:
    """The torch dtype each observation leaf goes to the networks in: float32, or for an
    extractor ``uint8`` pixels (it scales them) and int64 discrete observations (it one-hots
    them); nested as the space.

    Example:
        >>> input_dtypes(gymnasium.spaces.Dict(
        ...     frame=gymnasium.spaces.Box(0, 255, (84, 84), np.uint8),
        ...     n=gymnasium.spaces.Discrete(3)), extractor=True)
        {'frame': torch.uint8, 'n': torch.int64}
    """
    if isinstance(space, gymnasium.spaces.Dict):
        return {k: input_dtypes(s, extractor) for k, s in space.spaces.items()}
    if isinstance(space, gymnasium.spaces.Tuple):
        return tuple(input_dtypes(s, extractor) for s in space.spaces)
    if extractor and isinstance(space, (gymnasium.spaces.Discrete,
                                        gymnasium.spaces.MultiDiscrete)):
        return torch.int64
    if extractor and isinstance(space, gymnasium.spaces.Box) and space.dtype == np.uint8:
        return torch.uint8
    return torch.float32


def _flat_size(space: Any) -> int:
    if isinstance(space, gymnasium.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    return int(np.prod(space.shape))


class Flatten(nn.Module):
    """One flat float vector per observation: Boxes flattened (``uint8`` images scaled to
    [0, 1]), ``Discrete`` one-hot, ``MultiDiscrete`` one-hot per dimension, ``MultiBinary`` as
    floats.

    Example:
        >>> import gymnasium, torch
        >>> Flatten(gymnasium.spaces.MultiDiscrete([2, 3]))(torch.tensor([[1, 2]])).tolist()
        [[0.0, 1.0, 0.0, 0.0, 1.0]]
    """

    def __init__(self, space: Any):
        super().__init__()
        self.kind = "float"
        self.nvec: tuple = ()
        if isinstance(space, gymnasium.spaces.Discrete):
            self.kind, self.nvec, self.start = "one_hot", (int(space.n),), int(space.start)
        elif isinstance(space, gymnasium.spaces.MultiDiscrete):
            self.kind, self.nvec = "multi_one_hot", tuple(int(n) for n in space.nvec.ravel())
            self.start = 0
        elif isinstance(space, gymnasium.spaces.Box) and space.dtype == np.uint8:
            self.kind = "image"
        self.features_dim = _flat_size(space)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "one_hot":
            return F.one_hot(x.long().reshape(-1) - self.start, self.nvec[0]).float()
        if self.kind == "multi_one_hot":
            x = x.long().reshape(x.shape[0], -1)
            return torch.cat([F.one_hot(x[:, i], n).float() for i, n in enumerate(self.nvec)],
                             dim=1)
        x = x.reshape(x.shape[0], -1)
        if self.kind == "image":
            return x.float() / 255.0
        return x if x.dtype == torch.float32 else x.float()

    def extra_repr(self) -> str:
        return f"{self.kind!r}, features_dim={self.features_dim}"


class MLP(nn.Module):
    """:class:`Flatten`, then ``Linear`` + ``activation`` per hidden size of ``net_arch``.

    Example:
        >>> import gymnasium, torch
        >>> body = MLP(gymnasium.spaces.Box(-1.0, 1.0, (4,)), net_arch=(32, 16))
        >>> body(torch.zeros(3, 4)).shape, body.features_dim
        (torch.Size([3, 16]), 16)
    """

    def __init__(self, space: Any, net_arch: tuple = (64, 64),
                 activation: type[nn.Module] = nn.ReLU):
        super().__init__()
        self.flatten = Flatten(space)
        sizes = [self.flatten.features_dim, *map(int, net_arch)]
        layers: list[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            layers += [nn.Linear(a, b), activation()]
        self.layers = nn.Sequential(*layers)
        self.features_dim = sizes[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(self.flatten(x))


class NatureCNN(nn.Module):
    """The convolutions of the DQN paper (Mnih et al. 2015): 32 8×8 filters stride 4, 64 4×4
    stride 2, 64 3×3 stride 1, then a ``features_dim`` linear layer, ReLU throughout.

    Its input is a batch of frames with the pixels on the last two axes: ``(B, H, W)`` (one grey
    frame), ``(B, k, H, W)`` (a stack), ``(B, C, H, W)`` or ``(B, k, C, H, W)``; every axis but
    the last two is a channel. ``uint8`` pixels are scaled to [0, 1] here (a replay of frames
    stays a byte per pixel up to the network).

    Example:
        >>> import gymnasium, torch
        >>> cnn = NatureCNN(gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8))
        >>> cnn(torch.zeros(2, 4, 84, 84, dtype=torch.uint8)).shape
        torch.Size([2, 512])
    """

    def __init__(self, space: Any, features_dim: int = 512):
        super().__init__()
        shape = tuple(space.shape)
        if len(shape) < 2 or min(shape[-2:]) < 36:
            raise ValueError(f"NatureCNN reads frames of at least 36x36 pixels on the last two "
                             f"axes, got observations of shape {shape}; use the 'mlp' "
                             "extractor for vectors")
        self.frame = shape[-2:]
        channels = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
            nn.Flatten())
        with torch.no_grad():
            n_flat = self.cnn(torch.zeros(1, channels, *self.frame)).shape[1]
        self.linear = nn.Sequential(nn.Linear(n_flat, int(features_dim)), nn.ReLU())
        self.features_dim = int(features_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1, *self.frame)
        if x.device.type == "cpu":  # oneDNN's convolutions, backward most, run about a third
            # faster in channels last; a batch already in it is not copied (convolution_layout)
            x = x.contiguous(memory_format=torch.channels_last)
        # (in place on the new float copy: one pass and one allocation fewer, the same values)
        x = x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()
        return self.linear(self.cnn(x))


def convolution_layout(extractors: tuple, states: Any) -> Any:
    """``states``, a batch every one of ``extractors`` reads, in the memory layout they
    convolve in, the values unchanged: 4-D frames on the CPU channels last where each is a
    :class:`NatureCNN` (which would copy them so at every pass; a minibatch indexed from the
    converted batch keeps the layout), else ``states`` as they are.

    Example:
        >>> cnn = NatureCNN(gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8))
        >>> frames = torch.zeros(2, 4, 84, 84, dtype=torch.uint8)
        >>> convolution_layout((cnn,), frames).is_contiguous(memory_format=torch.channels_last)
        True
    """
    if extractors and all(isinstance(e, NatureCNN) for e in extractors) \
            and isinstance(states, torch.Tensor) and states.dim() == 4 \
            and states.device.type == "cpu":
        return states.contiguous(memory_format=torch.channels_last)
    return states


class CombinedExtractor(nn.Module):
    """A ``Dict`` or ``Tuple`` observation: each image leaf (:func:`is_image_space`) through its
    own :class:`NatureCNN` of ``cnn_features`` outputs, every other leaf :class:`Flatten`-ed;
    the features are concatenated in the space's order (SB3's ``CombinedExtractor``). Nested
    ``Dict``/``Tuple`` leaves get a combined extractor of their own.

    Example:
        >>> import gymnasium, torch
        >>> space = gymnasium.spaces.Dict(
        ...     frame=gymnasium.spaces.Box(0, 255, (36, 36), np.uint8),
        ...     speed=gymnasium.spaces.Box(-1.0, 1.0, (2,)))
        >>> extractor = CombinedExtractor(space, cnn_features=8)
        >>> extractor({"frame": torch.zeros(3, 36, 36, dtype=torch.uint8),
        ...            "speed": torch.zeros(3, 2)}).shape
        torch.Size([3, 10])
    """

    def __init__(self, space: Any, cnn_features: int = 256):
        super().__init__()
        if isinstance(space, gymnasium.spaces.Dict):
            self.keys = tuple(space.spaces)
            leaves = list(space.spaces.values())
        elif isinstance(space, gymnasium.spaces.Tuple):
            self.keys = None
            leaves = list(space.spaces)
        else:
            raise TypeError(f"CombinedExtractor reads Dict or Tuple observations, got {space}")
        self.parts = nn.ModuleList(_leaf_extractor(leaf, cnn_features) for leaf in leaves)
        self.features_dim = sum(part.features_dim for part in self.parts)

    def forward(self, x: Any) -> torch.Tensor:
        values = [x[k] for k in self.keys] if self.keys is not None else list(x)
        return torch.cat([part(v) for part, v in zip(self.parts, values, strict=True)], dim=1)


def _leaf_extractor(space: Any, cnn_features: int) -> nn.Module:
    if isinstance(space, (gymnasium.spaces.Dict, gymnasium.spaces.Tuple)):
        return CombinedExtractor(space, cnn_features)
    if is_image_space(space):
        return NatureCNN(space, cnn_features)
    return Flatten(space)


def check_extractor_name(owner: str, name: Any) -> None:
    """``ValueError`` unless ``name`` is a built-in extractor's name."""
    if name not in EXTRACTORS:
        raise ValueError(f"{owner}: features_extractor must be "
                         f"{' or '.join(repr(n) for n in EXTRACTORS)}, got "
                         f"features_extractor={name!r}; pass a factory of your own to the "
                         "agent's maker (features_extractor=...) for another network")


def extractor_factory(name: str, space: Any) -> Callable[[Any], nn.Module] | None:
    """The factory a built-in name stands for on ``space``; ``None`` for ``"mlp"`` on a flat
    float Box (the algorithm's own layers read it as it is)."""
    if name == "auto":
        if isinstance(space, (gymnasium.spaces.Dict, gymnasium.spaces.Tuple)):
            name = "combined"
        elif is_image_space(space):
            name = "nature_cnn"
        else:
            name = "mlp"
    if name == "mlp":
        flat_float = isinstance(space, gymnasium.spaces.Box) and len(space.shape) == 1 and \
            np.issubdtype(space.dtype, np.floating)
        return None if flat_float else Flatten
    if name == "nature_cnn":
        return NatureCNN
    if name == "combined":
        return CombinedExtractor
    check_extractor_name("extractor_factory", name)
    return None


def make_extractor(factory: Any, space: Any, who: str) -> nn.Module:
    """``factory(space)``, checked: a torch module; ``TypeError`` naming ``who`` otherwise."""
    if isinstance(factory, nn.Module):
        raise TypeError(f"{who}: features_extractor takes a factory (a class or function of the "
                        f"observation space), not a module: pass type(module) or a lambda "
                        f"space: ...; got {factory!r}")
    if not callable(factory):
        raise TypeError(f"{who}: features_extractor must be a built-in's name "
                        f"({', '.join(EXTRACTORS)}) or a factory of the observation space, got "
                        f"{factory!r}")
    module = factory(space)
    if not isinstance(module, nn.Module):
        raise TypeError(f"{who}: the features_extractor factory must return a torch.nn.Module, "
                        f"got {type(module).__name__}")
    return module


def features_dim(module: nn.Module, space: Any) -> int:
    """The module's output size: its ``features_dim``, else measured on a sample of ``space``
    (one forward pass); ``ValueError`` unless it gives ``(batch, features)``."""
    declared = getattr(module, "features_dim", None)
    if isinstance(declared, int) and declared > 0:
        return declared
    with torch.no_grad():
        out = module(sample_batch(space))
    if not isinstance(out, torch.Tensor) or out.dim() != 2:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"a features extractor must return (batch, features), got {shape} "
                         f"for observations of {space}")
    return int(out.shape[1])


def sample_batch(space: Any) -> Any:
    """A batch of one zero observation of ``space``, as tensors (nested for Dict/Tuple)."""
    if isinstance(space, gymnasium.spaces.Dict):
        return {k: sample_batch(s) for k, s in space.spaces.items()}
    if isinstance(space, gymnasium.spaces.Tuple):
        return tuple(sample_batch(s) for s in space.spaces)
    if isinstance(space, gymnasium.spaces.Discrete):
        return torch.full((1,), int(space.start), dtype=torch.int64)
    dtype = torch.from_numpy(np.zeros(0, dtype=space.dtype)).dtype
    return torch.zeros((1, *space.shape), dtype=dtype)


def orthogonal_init(module: nn.Module, gain: float = math.sqrt(2)) -> None:
    """Orthogonal weights (``gain``) and zero biases for every linear and convolutional layer
    of ``module`` (SB3's and CleanRL's initialisation of a body)."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.orthogonal_(layer.weight, gain=gain)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)


def readable_observations(space: Any) -> bool:
    """Whether every algorithm family can read observations of ``space`` (through an extractor
    but for flat vectors): Box, Discrete, MultiDiscrete, MultiBinary, and Dict or Tuple spaces
    of them.

    Example:
        >>> import gymnasium
        >>> readable_observations(gymnasium.spaces.Dict({"n": gymnasium.spaces.Discrete(3)}))
        True
        >>> readable_observations(gymnasium.spaces.Text(5))
        False
    """
    spaces = gymnasium.spaces
    if isinstance(space, spaces.Dict):
        return all(readable_observations(s) for s in space.spaces.values())
    if isinstance(space, spaces.Tuple):
        return all(readable_observations(s) for s in space.spaces)
    return isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete,
                              spaces.MultiBinary))
