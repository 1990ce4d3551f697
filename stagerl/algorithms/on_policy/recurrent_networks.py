"""The network of recurrent PPO: :class:`RecurrentActorCritic`, an LSTM or GRU actor-critic
whose memory is one array per lane.

::

    observation -> [MLP net_arch] -> actor RNN  -> [MLP actor_net_arch]  -> logits / mean
                                  -> critic RNN -> [MLP critic_net_arch] -> value

With ``shared_rnn`` one RNN feeds both heads. A lane's state is the RNNs' states stacked into
one ``(k, hidden_size)`` array: ``h`` (and ``c`` for an LSTM) of the actor's RNN, then the
critic's; so ``k`` is 1 (a shared GRU), 2 (a shared LSTM, or two GRUs) or 4 (two LSTMs). The
same RNN steps once per act (``act_outputs``) and unrolls whole sequences in training
(``unroll``), from the state stored with each sequence's first step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from stagerl.utils.distributions import Categorical, DiagGaussian, action_distribution
from stagerl.utils.networks import mlp
from stagerl.utils.numpy_rnn import NumpyCopy, gru_step, lstm_step, mlp_forward

__all__ = ["RecurrentActorCritic", "RNN_KINDS"]

#: The recurrent layers recurrent PPO offers.
RNN_KINDS = ("lstm", "gru")


class RecurrentActorCritic(nn.Module):
    """An actor and a critic, each an RNN over (optionally encoded) observations followed by
    an MLP head; see the module docstring.

    Args:
        n_inputs: the observation's size (flat).
        action_space: ``Discrete`` (a categorical policy) or a flat ``Box`` (a diagonal
            Gaussian with a learned, state-independent ``log_std``).
        rnn: ``"lstm"`` or ``"gru"``.
        hidden_size: the RNNs' units.
        shared_rnn: one RNN for the actor and the critic.
        net_arch: hidden sizes of an MLP (tanh) before the RNN(s) (``()``: none).
        actor_net_arch, critic_net_arch: hidden sizes of the heads' MLPs (tanh).
        log_std_init: the Gaussian's initial ``log_std``.
        ortho_init: orthogonal initialisation of the linear layers (gain sqrt(2); the actor's
            output 0.01, the critic's 1), as Stable-Baselines3.

    Example:
        >>> import gymnasium, torch
        >>> model = RecurrentActorCritic(2, gymnasium.spaces.Discrete(2), hidden_size=8)
        >>> model.recurrent_state_shape
        (4, 8)
        >>> out, value, state = model.unroll(torch.zeros(3, 5, 2), torch.zeros(3, 4, 8))
        >>> out.shape, value.shape, state.shape
        (torch.Size([3, 5, 2]), torch.Size([3, 5]), torch.Size([3, 4, 8]))
    """

    def __init__(self, n_inputs: int, action_space: Any, rnn: str = "lstm",
                 hidden_size: int = 64, shared_rnn: bool = False, net_arch: tuple = (),
                 actor_net_arch: tuple = (), critic_net_arch: tuple = (64,),
                 log_std_init: float = 0.0, ortho_init: bool = True):
        super().__init__()
        if rnn not in RNN_KINDS:
            raise ValueError(f'rnn must be "lstm" or "gru", got rnn={rnn!r}')
        self.dist = action_distribution(action_space, "RecurrentActorCritic")
        if not isinstance(self.dist, (Categorical, DiagGaussian)):
            raise TypeError(f"RecurrentActorCritic acts in Discrete or float Box action spaces, "
                            f"got {action_space}")
        self.discrete = isinstance(self.dist, Categorical)
        self.gaussian = not self.discrete
        n_out = self.dist.n_outputs
        self.n_inputs, self.hidden_size, self.shared_rnn = int(n_inputs), hidden_size, shared_rnn
        layers: list[nn.Module] = []
        size = self.n_inputs
        for width in net_arch:
            layers += [nn.Linear(size, width), nn.Tanh()]
            size = width
        self.encoder = nn.Sequential(*layers)
        kind = nn.LSTM if rnn == "lstm" else nn.GRU
        self.actor_rnn = kind(size, hidden_size, batch_first=True)
        self.critic_rnn = None if shared_rnn else kind(size, hidden_size, batch_first=True)
        self.actor_head = mlp(hidden_size, actor_net_arch, n_out, nn.Tanh,
                              0.01 if ortho_init else None)
        self.critic_head = mlp(hidden_size, critic_net_arch, 1, nn.Tanh,
                               1.0 if ortho_init else None)
        if ortho_init:
            for net in (self.encoder, self.actor_head, self.critic_head):
                for layer in list(net)[:-1] if net is not self.encoder else list(net):
                    if isinstance(layer, nn.Linear):
                        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
                        nn.init.zeros_(layer.bias)
        log_std = None if self.discrete else nn.Parameter(torch.full((n_out,), log_std_init))
        self.register_parameter("log_std", log_std)
        self.per_rnn = 2 if rnn == "lstm" else 1
        n_rnns = 1 if shared_rnn else 2
        self.recurrent_state_shape = (self.per_rnn * n_rnns, int(hidden_size))

    # -- the state of a batch of lanes: (B, k, H) <-> the RNNs' (1, B, H) tensors -------------
    def _split(self, state: torch.Tensor) -> tuple:
        parts = [state[:, i].unsqueeze(0).contiguous() for i in range(state.shape[1])]
        k = self.per_rnn
        actor = parts[:k]
        critic = parts[k:2 * k] if self.critic_rnn is not None else None
        if k == 1:
            return actor[0], None if critic is None else critic[0]
        return tuple(actor), None if critic is None else tuple(critic)

    def _join(self, actor: Any, critic: Any) -> torch.Tensor:
        parts = [actor] if self.per_rnn == 1 else list(actor)
        if critic is not None:
            parts += [critic] if self.per_rnn == 1 else list(critic)
        return torch.cat(parts, dim=0).transpose(0, 1)

    def unroll(self, x: torch.Tensor, state: torch.Tensor) -> tuple:
        """The actor's output ``(B, T, n_out)``, the values ``(B, T)`` and the state after the
        last step ``(B, k, H)``, for ``B`` sequences of ``T`` observations ``(B, T, n_inputs)``
        that start from ``state`` (no episode starts inside a sequence)."""
        features = self.encoder(x)
        actor_state, critic_state = self._split(state)
        actor_out, actor_state = self.actor_rnn(features, actor_state)
        if self.critic_rnn is None:
            critic_out = actor_out
        else:
            critic_out, critic_state = self.critic_rnn(features, critic_state)
        out = self.actor_head(actor_out)
        value = self.critic_head(critic_out).squeeze(-1)
        return out, value, self._join(actor_state, critic_state)

    def act_outputs(self, x: np.ndarray, state: np.ndarray) -> tuple:
        """One step of a batch of lanes (acting), in numpy (the weights' numpy copy, kept
        current; see ``stagerl.utils.numpy_rnn``): the actor's output, ``log_std`` (or None),
        the values and the new state, for observations ``(B, n_inputs)`` (float32) and states
        ``(B, k, H)``."""
        copy = self.__dict__.get("_numpy")
        if copy is None:
            modules = {"encoder": self.encoder, "actor_rnn": self.actor_rnn,
                       "actor_head": self.actor_head, "critic_head": self.critic_head}
            if self.critic_rnn is not None:
                modules["critic_rnn"] = self.critic_rnn
            copy = self.__dict__["_numpy"] = NumpyCopy(modules)
        forms = copy.current()
        features = mlp_forward(x, forms["encoder"])
        k = self.per_rnn
        actor = _rnn_step(forms["actor_rnn"], features, state[:, :k])
        critic = actor if self.critic_rnn is None else \
            _rnn_step(forms["critic_rnn"], features, state[:, k:])
        out = mlp_forward(actor[:, 0], forms["actor_head"])
        value = mlp_forward(critic[:, 0], forms["critic_head"])[:, 0]
        new_state = actor if self.critic_rnn is None else np.concatenate([actor, critic], 1)
        log_std = None if self.discrete else self.log_std.detach().cpu().numpy()
        return out, log_std, value, new_state

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_numpy", None)  # made again at the first act
        return state

    def log_prob_entropy(self, out: torch.Tensor, actions: torch.Tensor,
                         entropy: bool = True) -> tuple:
        """The log-probability of ``actions`` under the actor's output ``out`` (any leading
        shape) and the entropy (``None`` with ``entropy=False``)."""
        params = self.dist.params(out, self.log_std)
        log_prob, h = self.dist.log_prob_entropy(params, actions, entropy)
        return log_prob, None if h is None else h.expand_as(log_prob)


def _rnn_step(form: tuple, x: np.ndarray, state: np.ndarray) -> np.ndarray:
    """One step of an RNN in numpy form from ``state`` ``(B, 1 or 2, H)`` (``h`` and, for an
    LSTM, ``c``): the new state, the same shape."""
    kind, weights = form
    if kind == "lstm":
        h, c = lstm_step(x, state[:, 0], state[:, 1], weights)
        return np.stack([h, c], axis=1)
    return gru_step(x, state[:, 0], weights)[:, None]
