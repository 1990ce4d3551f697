"""The recurrent DQN's network (:class:`DRQNNetwork`): trained in torch on sequences, stepped
in numpy when acting (``stagerl.utils.numpy_rnn``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from stagerl.utils.numpy_rnn import NumpyCopy, gru_step, lstm_step, mlp_forward

__all__ = ["DRQNNetwork"]


class DRQNNetwork(nn.Module):
    """``observation -> MLP (net_arch, ReLU) -> LSTM/GRU -> MLP (head_net_arch) -> Q``; a
    lane's state is the RNN's ``h`` (and ``c``) stacked: ``(1 or 2, hidden_size)``.

    Example:
        >>> import torch
        >>> net = DRQNNetwork(2, 3, net_arch=(8,), hidden_size=4)
        >>> q, state = net.unroll(torch.zeros(5, 7, 2), torch.zeros(5, 2, 4))
        >>> q.shape, state.shape
        (torch.Size([5, 7, 3]), torch.Size([5, 2, 4]))
    """

    def __init__(self, n_inputs: int, n_actions: int, net_arch: tuple = (64,),
                 rnn: str = "lstm", hidden_size: int = 64, head_net_arch: tuple = ()):
        super().__init__()
        layers: list[nn.Module] = []
        size = int(n_inputs)
        for width in net_arch:
            layers += [nn.Linear(size, width), nn.ReLU()]
            size = width
        self.encoder = nn.Sequential(*layers)
        self.rnn = (nn.LSTM if rnn == "lstm" else nn.GRU)(size, hidden_size, batch_first=True)
        head: list[nn.Module] = []
        size = hidden_size
        for width in head_net_arch:
            head += [nn.Linear(size, width), nn.ReLU()]
            size = width
        self.head = nn.Sequential(*head, nn.Linear(size, n_actions))
        self.n_inputs, self.n_actions = int(n_inputs), int(n_actions)
        self.lstm = rnn == "lstm"
        self.recurrent_state_shape = (2 if self.lstm else 1, int(hidden_size))

    def step(self, x: np.ndarray, state: np.ndarray) -> tuple:
        """One step of a batch of lanes (acting), in numpy (the weights' numpy copy, kept
        current; see ``stagerl.utils.numpy_rnn``): the action values ``(B, n_actions)`` and
        the new states, for observations ``(B, n_inputs)`` (float32) and states ``(B, k, H)``."""
        copy = self.__dict__.get("_numpy")
        if copy is None:
            copy = self.__dict__["_numpy"] = NumpyCopy(
                {"encoder": self.encoder, "rnn": self.rnn, "head": self.head})
        forms = copy.current()
        features = mlp_forward(x, forms["encoder"])
        _, weights = forms["rnn"]
        if self.lstm:
            h, c = lstm_step(features, state[:, 0], state[:, 1], weights)
            new_state = np.empty((len(h), 2, h.shape[1]), np.float32)
            new_state[:, 0], new_state[:, 1] = h, c
        else:
            h = gru_step(features, state[:, 0], weights)
            new_state = h[:, None]
        return mlp_forward(h, forms["head"]), new_state

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_numpy", None)  # made again at the first act
        return state

    def unroll(self, x: torch.Tensor, state: torch.Tensor) -> tuple:
        """Action values ``(B, T, n_actions)`` for ``B`` sequences of ``T`` observations from
        ``state`` ``(B, k, H)``, and the state after the last step."""
        if self.lstm:
            h = (state[:, 0].unsqueeze(0).contiguous(), state[:, 1].unsqueeze(0).contiguous())
        else:
            h = state[:, 0].unsqueeze(0).contiguous()
        out, h = self.rnn(self.encoder(x), h)
        after = torch.cat(h if self.lstm else (h,), dim=0).transpose(0, 1)
        return self.head(out), after
