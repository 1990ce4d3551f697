"""The networks of the on-policy algorithms: :class:`ActorCritic` (a policy and a value network
whose parameters live in two flat tensors, over the observations or a feature extractor's
features, with the action space's distribution) and :class:`RunningMeanStd` (observation and
return statistics).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from stagerl.algorithms._checks import single_spaces
from stagerl.algorithms.extractors import (
    extractor_factory,
    features_dim,
    make_extractor,
    orthogonal_init,
    readable_observations,
)
from stagerl.utils.devices import resolve_device
from stagerl.utils.distributions import Categorical, DiagGaussian, action_distribution
from stagerl.utils.networks import mlp

__all__ = ["ActorCritic", "RunningMeanStd", "check_spaces", "build_model", "LOG_SQRT_2PI"]

#: ``log(sqrt(2 pi))``: the constant of a Gaussian's log-density.
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class ActorCritic(nn.Module):
    """A policy network and a value network (hidden sizes ``net_arch``, no shared layers) over
    flat observations or over the features of an extractor, shared by both or one each.

    The actor's head gives the parameters of the action space's distribution
    (:func:`~stagerl.utils.distributions.action_distribution`): the logits of a categorical
    (``Discrete``), of one categorical per dimension (``MultiDiscrete``) or of one Bernoulli per
    entry (``MultiBinary``), or the mean of a diagonal Gaussian whose log standard deviation
    ``log_std`` is a learned vector, the same for every state (``Box``). With ``ortho_init``
    the layers are initialised as in Stable-Baselines3 and CleanRL (orthogonal, gain sqrt(2);
    the actor's head 0.01, the critic's 1).

    Args:
        n_inputs: the size of what the heads read: the flat observation, or the extractor's
            features.
        action_space: the single env's action space.
        net_arch, activation: the heads' hidden layers.
        log_std_init: the Gaussian's initial log standard deviation.
        ortho_init: the initialisation above (extractors too, gain sqrt(2)).
        extractor: a module from observations to ``(batch, n_inputs)`` features: the actor's,
            and the critic's too unless ``critic_extractor`` is given (then it is shared).
        critic_extractor: the critic's own extractor (not shared).
        observation_space: the single env's observation space (kept for the observation
            statistics; optional).

    Every parameter lives in one of two flat tensors (the actor's, a shared extractor
    included, and the critic's), see :meth:`flat_parameters`.

    Example:
        >>> import gymnasium, torch
        >>> model = ActorCritic(4, gymnasium.spaces.Discrete(2))
        >>> log_prob, entropy = model.log_prob_entropy(torch.zeros(3, 4), torch.tensor([0, 1, 1]))
        >>> log_prob.shape, model.value(torch.zeros(3, 4)).shape
        (torch.Size([3]), torch.Size([3]))
    """

    def __init__(self, n_inputs: int, action_space: Any, net_arch: tuple = (64, 64),
                 activation: type[nn.Module] = nn.Tanh, log_std_init: float = 0.0,
                 ortho_init: bool = True, extractor: nn.Module | None = None,
                 critic_extractor: nn.Module | None = None, observation_space: Any = None):
        super().__init__()
        self.dist = action_distribution(action_space, "ActorCritic")
        self.discrete = isinstance(self.dist, Categorical)
        self.gaussian = isinstance(self.dist, DiagGaussian)
        self.n_inputs = int(n_inputs)
        self.observation_space = observation_space
        n_out = self.dist.n_outputs
        self.extractor = extractor
        self.critic_extractor = critic_extractor
        if critic_extractor is not None and extractor is None:
            raise ValueError("ActorCritic: a critic_extractor needs the actor's extractor too")
        self.shares_extractor = extractor is not None and critic_extractor is None
        self.actor = mlp(n_inputs, net_arch, n_out, activation, 0.01 if ortho_init else None)
        self.critic = mlp(n_inputs, net_arch, 1, activation, 1.0 if ortho_init else None)
        if ortho_init:
            for net in (self.actor, self.critic):
                for layer in list(net)[:-1]:
                    if isinstance(layer, nn.Linear):
                        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
                        nn.init.zeros_(layer.bias)
            for body in (extractor, critic_extractor):
                if body is not None:
                    orthogonal_init(body)
        log_std = nn.Parameter(torch.full((n_out,), log_std_init)) if self.gaussian else None
        self.register_parameter("log_std", log_std)
        # The actor's and the critic's parameters live in two flat tensors (see flat_parameters)
        flats = [torch.cat([p.detach().reshape(-1) for p in group])
                 for group in self.parameter_groups()]
        self._flats = [nn.Parameter(flat) for flat in flats]  # a list: not registered twice
        self.relink()

    def parameter_groups(self) -> tuple:
        """``(actor's parameters, critic's)``: ``log_std`` and a shared extractor with the
        actor's, each extractor of its own with its network's."""
        actor = [] if self.extractor is None else list(self.extractor.parameters())
        actor += list(self.actor.parameters()) + ([self.log_std] if self.gaussian else [])
        critic = [] if self.critic_extractor is None else list(self.critic_extractor.parameters())
        return actor, critic + list(self.critic.parameters())

    def flat_parameters(self) -> list:
        """``[actor's, critic's]`` (see :meth:`parameter_groups`): every parameter of the model
        is a view into one of these two tensors, and its gradient a view into theirs. An
        optimiser over them steps, clips and zeroes with a few tensor operations instead of a
        dozen, which is most of a small network's gradient step on a CPU. Zero their gradients
        in place (``zero_grad(set_to_none=False)``), as :meth:`OnPolicy.gradient_step` does.
        An optimiser over the critic's alone leaves a shared extractor to the actor's."""
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

    def features(self, states: Any) -> tuple:
        """``(the actor's input, the critic's input)``: the observations themselves without an
        extractor, else the extractors' features (one pass of a shared extractor)."""
        if self.extractor is None:
            return states, states
        actor = self.extractor(states)
        if self.critic_extractor is None:
            return actor, actor
        return actor, self.critic_extractor(states)

    def extractors(self) -> tuple:
        """The feature extractors (none, a shared one, or the actor's and the critic's)."""
        return tuple(e for e in (self.extractor, self.critic_extractor) if e is not None)

    def _actor_features(self, states: Any) -> torch.Tensor:
        return states if self.extractor is None else self.extractor(states)

    def _critic_features(self, states: Any) -> torch.Tensor:
        if self.extractor is None:
            return states
        if self.critic_extractor is None:
            return self.extractor(states)
        return self.critic_extractor(states)

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
        for flat in self._flats:  # a gradient restored with its tensor is kept (relink: views)
            grad = flat.grad
            if grad is not None and (grad.shape != flat.shape or grad.device != flat.device):
                flat.grad = None
        self.relink()

    def value(self, states: Any) -> torch.Tensor:
        """``V(s)`` for a batch of observations: ``(B,)``."""
        return self.forward_mlp(self._critic_features(states), "critic").squeeze(-1)

    def distribution(self, states: Any) -> tuple:
        """The action distribution's parameters in ``states``: ``(logits,)`` or
        ``(mean, log_std)``."""
        return self.dist.params(self.forward_mlp(self._actor_features(states), "actor"),
                                self.log_std)

    def log_prob_entropy(self, states: Any, actions: torch.Tensor, entropy: bool = True,
                         mask: torch.Tensor | None = None) -> tuple:
        """The log-probability of ``actions`` in ``states`` ``(B,)`` and the entropy (``(B,)``,
        or a scalar for Gaussian policies: it depends on ``log_std`` alone; ``None`` with
        ``entropy=False``, which saves its share of the backward pass). ``mask`` (bool
        ``(B, n)``, Discrete action spaces only): the categorical of the legal actions (see
        :class:`~stagerl.utils.distributions.Categorical`)."""
        return self.dist.log_prob_entropy(self.distribution(states), actions, entropy, mask)

    def evaluate(self, states: Any, actions: torch.Tensor, entropy: bool = True,
                 mask: torch.Tensor | None = None) -> tuple:
        """``(log_prob, entropy, value)`` of ``actions`` in ``states`` (under the legal-action
        ``mask``, as :meth:`log_prob_entropy`), with one pass of a shared extractor (what the
        actor-critic losses need)."""
        actor_in, critic_in = self.features(states)
        params = self.dist.params(self.forward_mlp(actor_in, "actor"), self.log_std)
        log_prob, ent = self.dist.log_prob_entropy(params, actions, entropy, mask)
        return log_prob, ent, self.forward_mlp(critic_in, "critic").squeeze(-1)

    def kl_from(self, old: tuple, states: Any) -> torch.Tensor:
        """``KL(old || current)`` per state ``(B,)``; ``old = self.distribution(states)`` taken
        (detached) before the parameters changed."""
        return self.dist.kl(old, self.distribution(states))

    @torch.inference_mode()
    def act_outputs(self, states: Any) -> tuple:
        """The actor's output, ``log_std`` (or None) and the value, as numpy arrays (acting)."""
        actor_in, critic_in = self.features(states)
        out = self.forward_mlp(actor_in, "actor").cpu().numpy()
        value = self.forward_mlp(critic_in, "critic").squeeze(-1).cpu().numpy()
        log_std = self.log_std.detach().cpu().numpy() if self.gaussian else None
        return out, log_std, value

    def numpy_act_outputs(self, states: np.ndarray, actor: bool = True) -> tuple | None:
        """:meth:`act_outputs` computed by numpy, for float32 ``states`` ``(B, n_inputs)``
        (``actor=False``: the actor's output left out, ``None``); ``None`` where it does not
        apply (an extractor, parameters off the CPU or not float32, an activation other than
        Tanh and ReLU, observations of another shape): then act through torch, as
        :meth:`OnPolicy.act_outputs <stagerl.algorithms.on_policy.base.OnPolicy.act_outputs>`
        does.

        A small MLP's torch forward pass costs more in per-call overhead than in arithmetic
        (about half of an act at 8 sub-envs). The arrays are views of the parameters' memory,
        not copies, so every in-place change (optimiser steps, loading a state) shows at once;
        they are taken again when a parameter's memory moves (a move, a copy).
        """
        if self.extractor is not None or states.ndim != 2 or states.shape[1] != self.n_inputs \
                or states.dtype != np.float32:
            return None
        layers = _numpy_layers(self)
        if layers is None:
            return None
        out = _numpy_mlp(states, layers["actor"]) if actor else None
        value = _numpy_mlp(states, layers["critic"])[:, 0]
        return out, layers["log_std"], value


_ACTIVATIONS = {nn.Tanh: torch.tanh, nn.ReLU: torch.relu, nn.Identity: None}


def _relu(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=out)


#: The activations the numpy pass knows, by the torch function ``_functional`` gives.
_NUMPY_ACTIVATIONS = {torch.tanh: np.tanh, torch.relu: _relu, None: None}
#: Each model's numpy views of its weights, with its parameters' addresses they were taken at
#: (kept out of the model: nothing of it belongs in a copy, a pickle or a checkpoint).
_NUMPY_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _numpy_layers(model: ActorCritic) -> dict | None:
    """The numpy views of ``model``'s layers, ``{"actor": [(weight.T, bias, activation)...],
    "critic": [...], "log_std": array or None}``; ``None`` where numpy cannot act for it.
    Taken again when any parameter's memory moved (a move, a copy, a parameter's ``.data``
    replaced); the views keep the memory they read alive, so no other tensor can take it."""
    cached = _NUMPY_VIEWS.get(model)
    if cached is not None and all(p.data_ptr() == ptr for p, ptr in cached[0]):
        return cached[1]
    params = list(model.parameters())
    layers: dict | None = None
    if all(p.device.type == "cpu" and p.dtype == torch.float32 for p in params):
        functional = {name: _functional(getattr(model, name)) for name in ("actor", "critic")}
        if all(activation in _NUMPY_ACTIVATIONS
               for net in functional.values() for _, _, activation in net):
            layers = {name: [(weight.detach().numpy().T, bias.detach().numpy(),
                              _NUMPY_ACTIVATIONS[activation]) for weight, bias, activation in net]
                      for name, net in functional.items()}
            layers["log_std"] = model.log_std.detach().numpy() if model.gaussian else None
    _NUMPY_VIEWS[model] = ([(p, p.data_ptr()) for p in params], layers)
    return layers


def _numpy_mlp(x: np.ndarray, layers: list) -> np.ndarray:
    """``forward_mlp`` in numpy (float32 throughout, in place after each product)."""
    for weight_t, bias, activation in layers:
        x = x @ weight_t
        x += bias
        if activation is not None:
            activation(x, out=x)
    return x


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


_FLOATS = (np.float32, np.float64)


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
        n = len(x)
        if n == 0:  # no rows (an act whose every lane only reset): nothing new, not NaN
            return
        if n == 1 and x.dtype in _FLOATS:  # one row (a step's return): its mean and variance
            mean = x[0]
            var = (mean - mean) * (mean - mean)  # 0 (NaN for an infinite or NaN entry)
        else:
            mean, var = x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = mean - self.mean
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / np.sqrt(self.var + self.epsilon)
        return np.clip(z, -self.clip, self.clip).astype(np.float32)


def check_spaces(env: Any, who: str) -> tuple:
    """One sub-env's ``(state_space, action_space)`` and the number of sub-envs: observations
    a Box of any shape, Discrete, MultiDiscrete, MultiBinary, or a Dict or Tuple of them;
    actions Discrete, MultiDiscrete, MultiBinary or a float Box. Anything else raises a
    ``TypeError`` that names ``who``, the space and the wrapper that fixes it."""
    state_space, action_space, num_envs = single_spaces(env, who)
    if not readable_observations(state_space):
        raise TypeError(f"{who} reads Box, Discrete, MultiDiscrete or MultiBinary observations "
                        f"(or a Dict or Tuple of them), got {state_space}; turn them into one "
                        "with a gymnasium ObservationWrapper (FlattenObservation)")
    action_distribution(action_space, who)  # raises for a space the actor cannot act in
    return state_space, action_space, num_envs


def build_model(env: Any, who: str, net_arch: tuple, log_std_init: float, ortho_init: bool,
                seed: int, device: Any, features_extractor: Any = "auto",
                share_features_extractor: bool = True,
                activation: type[nn.Module] = nn.Tanh) -> ActorCritic:
    """The :class:`ActorCritic` for ``env``'s spaces, initialised from ``seed`` (the global torch
    generator is left as it was), on ``device`` (``"cpu"``, ``"cuda"`` or ``"auto"``).

    ``features_extractor``: a built-in's name (``"auto"``, ``"mlp"``, ``"nature_cnn"``,
    ``"combined"``; see :mod:`stagerl.algorithms.extractors`) or a factory of the observation
    space; ``share_features_extractor``: one extractor for actor and critic, or one each."""
    state_space, action_space, _ = check_spaces(env, who)
    device = resolve_device(device)
    factory = extractor_factory(features_extractor, state_space) \
        if isinstance(features_extractor, str) else features_extractor
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        extractor = critic_extractor = None
        if factory is None:
            n_inputs = int(np.prod(state_space.shape))
        else:
            extractor = make_extractor(factory, state_space, who)
            n_inputs = features_dim(extractor, state_space)
            if not share_features_extractor:
                critic_extractor = make_extractor(factory, state_space, who)
        model = ActorCritic(n_inputs, action_space, tuple(net_arch), activation=activation,
                            log_std_init=log_std_init, ortho_init=ortho_init,
                            extractor=extractor, critic_extractor=critic_extractor,
                            observation_space=state_space)
    return model.to(device)
