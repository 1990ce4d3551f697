"""The networks of the on-policy algorithms: :class:`ActorCritic` (a policy and a value network
whose parameters live in two flat tensors) and :class:`RunningMeanStd` (observation statistics).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from stagerl.algorithms._checks import single_spaces
from stagerl.utils.devices import resolve_device
from stagerl.utils.distributions import masked_categorical_log_prob_entropy
from stagerl.utils.networks import mlp

__all__ = ["ActorCritic", "RunningMeanStd", "check_spaces", "build_model", "LOG_SQRT_2PI"]

#: ``log(sqrt(2 pi))``: the constant of a Gaussian's log-density.
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class ActorCritic(nn.Module):
    """A policy network and a value network (no shared layers, hidden sizes ``net_arch``) over
    flat observations.

    Discrete actions: the actor gives the logits of a categorical distribution. Box actions: it
    gives the mean of a diagonal Gaussian whose log standard deviation ``log_std`` is a learned
    vector, the same for every state. With ``ortho_init`` the layers are initialised as in
    Stable-Baselines3 and CleanRL (orthogonal, gain sqrt(2); the actor's head 0.01, the critic's 1).

    Example:
        >>> import gymnasium, torch
        >>> model = ActorCritic(4, gymnasium.spaces.Discrete(2))
        >>> log_prob, entropy = model.log_prob_entropy(torch.zeros(3, 4), torch.tensor([0, 1, 1]))
        >>> log_prob.shape, model.value(torch.zeros(3, 4)).shape
        (torch.Size([3]), torch.Size([3]))
    """

    def __init__(self, n_inputs: int, action_space: Any, net_arch: tuple = (64, 64),
                 activation: type[nn.Module] = nn.Tanh, log_std_init: float = 0.0,
                 ortho_init: bool = True):
        super().__init__()
        self.discrete = isinstance(action_space, gymnasium.spaces.Discrete)
        n_out = int(action_space.n) if self.discrete else int(action_space.shape[0])
        self.actor = mlp(n_inputs, net_arch, n_out, activation, 0.01 if ortho_init else None)
        self.critic = mlp(n_inputs, net_arch, 1, activation, 1.0 if ortho_init else None)
        if ortho_init:
            for net in (self.actor, self.critic):
                for layer in list(net)[:-1]:
                    if isinstance(layer, nn.Linear):
                        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
                        nn.init.zeros_(layer.bias)
        log_std = None if self.discrete else nn.Parameter(torch.full((n_out,), log_std_init))
        self.register_parameter("log_std", log_std)
        # The actor's and the critic's parameters live in two flat tensors (see flat_parameters)
        flats = [torch.cat([p.detach().reshape(-1) for p in group])
                 for group in self.parameter_groups()]
        self._flats = [nn.Parameter(flat) for flat in flats]  # a list: not registered twice
        self.relink()

    def parameter_groups(self) -> tuple:
        """``(actor's parameters, critic's)``, ``log_std`` with the actor's."""
        actor = list(self.actor.parameters()) + ([] if self.discrete else [self.log_std])
        return actor, list(self.critic.parameters())

    def flat_parameters(self) -> list:
        """``[actor's, critic's]`` (``log_std`` with the actor's): every parameter of the model is
        a view into one of these two tensors, and its gradient a view into theirs. An optimiser
        over them steps, clips and zeroes with a few tensor operations instead of a dozen, which
        is most of a small network's gradient step on a CPU. Zero their gradients in place
        (``zero_grad(set_to_none=False)``), as :meth:`OnPolicy.gradient_step` does."""
        return self._flats

    def relink(self) -> None:
        """Make every parameter (and gradient) a view into its flat tensor again (after a move
        to another device, a copy or unpickling, which give them storages of their own)."""
        for flat, group in zip(self._flats, self.parameter_groups(), strict=True):
            if flat.grad is None or flat.grad.device != flat.device:
                flat.grad = torch.zeros_like(flat)
            offset = 0
            for p in group:
                n = p.numel()
                p.data = flat.data[offset:offset + n].view_as(p)
                p.grad = flat.grad[offset:offset + n].view_as(p)
                offset += n

    def forward_mlp(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """``self.actor(x)`` or ``self.critic(x)`` without ``nn.Module.__call__``, whose few
        microseconds a layer are a good part of a small network's forward pass on a CPU."""
        layers = self.__dict__.get("_layers")
        if layers is None:
            layers = self.__dict__["_layers"] = {n: _functional(getattr(self, n))
                                                 for n in ("actor", "critic")}
        for weight, bias, activation in layers[name]:
            x = F.linear(x, weight, bias)
            if activation is not None:
                x = activation(x)
        return x

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> ActorCritic:
        super()._apply(fn, *args, **kwargs)
        for flat in self._flats:
            flat.data = fn(flat.data)
            flat.grad = None
        self.relink()
        return self

    def __setstate__(self, state: dict) -> None:
        state.pop("_layers", None)  # the copy's parameters are new objects
        super().__setstate__(state)
        for flat in self._flats:
            flat.grad = None
        self.relink()

    def value(self, states: torch.Tensor) -> torch.Tensor:
        """``V(s)`` for a ``(B, n_inputs)`` batch: ``(B,)``."""
        return self.forward_mlp(states, "critic").squeeze(-1)

    def log_prob_entropy(self, states: torch.Tensor, actions: torch.Tensor,
                         entropy: bool = True, mask: torch.Tensor | None = None) -> tuple:
        """The log-probability of ``actions`` in ``states`` ``(B,)`` and the entropy (``(B,)``
        for categorical policies, a scalar for Gaussian ones: it depends on ``log_std`` alone;
        ``None`` with ``entropy=False``, which saves its share of the backward pass).
        ``mask`` (bool ``(B, n)``, categorical policies): the categorical of the legal actions
        (see ``stagerl.utils.distributions.masked_categorical_log_prob_entropy``)."""
        out = self.forward_mlp(states, "actor")
        if self.discrete:
            return masked_categorical_log_prob_entropy(out, actions, mask, entropy)
        z = (actions - out) * torch.exp(-self.log_std)
        log_prob = (-0.5 * z * z - self.log_std - LOG_SQRT_2PI).sum(-1)
        return log_prob, (self.log_std + 0.5 + LOG_SQRT_2PI).sum() if entropy else None

    def kl_from(self, old: tuple, states: torch.Tensor) -> torch.Tensor:
        """``KL(old || current)`` per state ``(B,)``; ``old = self.distribution(states)`` taken
        (detached) before the parameters changed."""
        new = self.distribution(states)
        if self.discrete:
            old_log_probs, log_probs = F.log_softmax(old[0], -1), F.log_softmax(new[0], -1)
            return (old_log_probs.exp() * (old_log_probs - log_probs)).sum(-1)
        (old_mean, old_log_std), (mean, log_std) = old, new
        var_ratio = torch.exp(2.0 * (old_log_std - log_std))
        mahalanobis = ((old_mean - mean) * torch.exp(-log_std)) ** 2
        return (0.5 * (var_ratio + mahalanobis - 1.0) - (old_log_std - log_std)).sum(-1)

    def distribution(self, states: torch.Tensor) -> tuple:
        """``(logits,)`` or ``(mean, log_std)``: the action distribution in ``states``."""
        out = self.forward_mlp(states, "actor")
        return (out,) if self.discrete else (out, self.log_std)

    @torch.inference_mode()
    def act_outputs(self, states: torch.Tensor) -> tuple:
        """The actor's output, ``log_std`` (or None) and the value, as numpy arrays (acting)."""
        out = self.forward_mlp(states, "actor").cpu().numpy()
        value = self.forward_mlp(states, "critic").squeeze(-1).cpu().numpy()
        log_std = None if self.discrete else self.log_std.detach().cpu().numpy()
        return out, log_std, value


_ACTIVATIONS = {nn.Tanh: torch.tanh, nn.ReLU: torch.relu, nn.Identity: None}


def _functional(net: nn.Sequential) -> list:
    """``(weight, bias, activation)`` per Linear layer of ``net`` (the parameters themselves, so
    loaded or moved values are used); activations other than Tanh and ReLU stay modules."""
    layers: list = []
    for module in net:
        if isinstance(module, nn.Linear):
            layers.append([module.weight, module.bias, None])
        elif not layers or layers[-1][2] is not None:
            raise TypeError(f"forward_mlp needs Linear layers each followed by at most one "
                            f"activation, got {net}")
        else:
            layers[-1][2] = _ACTIVATIONS.get(type(module), module)
    return [tuple(layer) for layer in layers]


class RunningMeanStd:
    """Running mean and variance of observations (Chan et al.'s parallel update), for the
    observation normalisation option: ``clip((x - mean) / sqrt(var + eps), -10, 10)``.

    Example:
        >>> rms = RunningMeanStd((2,))
        >>> rms.update(np.array([[1.0, 2.0], [3.0, 2.0]]))
        >>> rms.mean.round(3).tolist(), rms.var.round(3).tolist()
        ([2.0, 2.0], [1.0, 0.0])
    """

    def __init__(self, shape: tuple, clip: float = 10.0, epsilon: float = 1e-8):
        self.mean, self.var = np.zeros(shape), np.ones(shape)
        self.count, self.clip, self.epsilon = 1e-4, clip, epsilon

    def update(self, x: np.ndarray) -> None:
        n, mean, var = len(x), x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = mean - self.mean
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / np.sqrt(self.var + self.epsilon)
        return np.clip(z, -self.clip, self.clip).astype(np.float32)


def check_spaces(env: Any, who: str) -> tuple:
    """One sub-env's ``(state_space, action_space)`` and the number of sub-envs: a flat Box of
    observations and Discrete or flat Box actions; anything else raises a ``TypeError`` that
    says what ``who`` needs."""
    state_space, action_space, num_envs = single_spaces(env, who)
    if not isinstance(state_space, gymnasium.spaces.Box) or len(state_space.shape) != 1:
        raise TypeError(f"{who} needs flat Box observations, got {state_space}; wrap the env in "
                        "gymnasium.wrappers.FlattenObservation (one-hot Discrete observations)")
    box = isinstance(action_space, gymnasium.spaces.Box) and len(action_space.shape) == 1
    if not (box or isinstance(action_space, gymnasium.spaces.Discrete)):
        raise TypeError(f"{who} acts in Discrete or flat Box action spaces, got {action_space}")
    return state_space, action_space, num_envs


def build_model(env: Any, who: str, net_arch: tuple, log_std_init: float, ortho_init: bool,
                seed: int, device: Any) -> ActorCritic:
    """The :class:`ActorCritic` for ``env``'s spaces, initialised from ``seed`` (the global torch
    generator is left as it was), on ``device`` (``"cpu"``, ``"cuda"`` or ``"auto"``)."""
    state_space, action_space, _ = check_spaces(env, who)
    device = resolve_device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ActorCritic(state_space.shape[0], action_space, tuple(net_arch),
                            log_std_init=log_std_init, ortho_init=ortho_init)
    return model.to(device)
