"""Small torch networks with an RNN, stepped in numpy for acting.

One step of ``torch.nn.LSTM`` on one observation costs ~100-200 us on a CPU (its checks and
dispatch), far more than a CartPole step (~7 us); the same step in numpy costs ~10 us. A
:class:`NumpyCopy` holds numpy copies of the weights of ``torch.nn.Sequential`` MLPs (``Linear``
layers each followed by at most one ``Tanh`` or ``ReLU``) and single-layer ``LSTM``/``GRU``
modules (``batch_first``), computes their steps in float32 with torch's gate formulas, and
copies the weights again whenever a parameter changed (an optimiser step or a load bumps the
tensor's version counter), so acting never uses stale weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["NumpyCopy", "lstm_step", "gru_step", "mlp_forward"]

_ACTIVATIONS = {nn.Tanh: np.tanh, nn.ReLU: lambda x: np.maximum(x, 0.0)}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(x: np.ndarray, h: np.ndarray, c: np.ndarray, weights: tuple) -> tuple:
    """One step of a torch LSTM (gates ``i, f, g, o``) for a batch: ``(h', c')``."""
    w_ih, w_hh, bias = weights
    gates = x @ w_ih + h @ w_hh + bias
    n = h.shape[-1]
    i, f = _sigmoid(gates[:, :n]), _sigmoid(gates[:, n:2 * n])
    g, o = np.tanh(gates[:, 2 * n:3 * n]), _sigmoid(gates[:, 3 * n:])
    c = f * c + i * g
    return o * np.tanh(c), c


def gru_step(x: np.ndarray, h: np.ndarray, weights: tuple) -> np.ndarray:
    """One step of a torch GRU (gates ``r, z, n``) for a batch: ``h'``."""
    w_ih, w_hh, b_ih, b_hh = weights
    gi, gh = x @ w_ih + b_ih, h @ w_hh + b_hh
    n = h.shape[-1]
    r = _sigmoid(gi[:, :n] + gh[:, :n])
    z = _sigmoid(gi[:, n:2 * n] + gh[:, n:2 * n])
    new = np.tanh(gi[:, 2 * n:] + r * gh[:, 2 * n:])
    return (1.0 - z) * new + z * h


def mlp_forward(x: np.ndarray, layers: list) -> np.ndarray:
    """``x`` through ``(weight_T, bias, activation or None)`` layers."""
    for weight, bias, activation in layers:
        x = x @ weight + bias
        if activation is not None:
            x = activation(x)
    return x


def _array(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float32, copy=True).numpy()


class NumpyCopy:
    """Numpy copies of some modules of a network, refreshed when their parameters change.

    ``copy[name]`` is the numpy form of module ``name``: for a ``Sequential`` MLP a list of
    ``(weight_T, bias, activation)``; for an LSTM ``("lstm", (w_ih_T, w_hh_T, bias))``; for a
    GRU ``("gru", (w_ih_T, w_hh_T, b_ih, b_hh))``. Modules of other kinds raise ``TypeError``
    when the copy is made (check with :meth:`supports`).

    Example:
        >>> rnn = nn.LSTM(3, 4, batch_first=True)
        >>> copy = NumpyCopy({"rnn": rnn})
        >>> x, h, c = np.ones((2, 3), np.float32), np.zeros((2, 4), np.float32), np.zeros((2, 4),
        ...                                                                             np.float32)
        >>> h2, _ = lstm_step(x, h, c, copy["rnn"][1])
        >>> out, _ = rnn(torch.ones(2, 1, 3))
        >>> bool(np.allclose(h2, out[:, 0].detach().numpy(), atol=1e-6))
        True
    """

    def __init__(self, modules: dict):
        self.modules = modules
        self._parameters = [p for m in modules.values() for p in m.parameters()]
        self._versions: list = []
        self._copies: dict = {}

    @staticmethod
    def supports(module: Any) -> bool:
        """Whether a module can be copied (MLPs of Linear/Tanh/ReLU, one-layer LSTM/GRU)."""
        if isinstance(module, (nn.LSTM, nn.GRU)):
            return module.num_layers == 1 and not module.bidirectional and module.bias \
                and module.batch_first and getattr(module, "proj_size", 0) == 0
        if isinstance(module, nn.Sequential):
            return all(type(m) in (nn.Linear, nn.Tanh, nn.ReLU) for m in module)
        return False

    def current(self) -> dict:
        """Every module's numpy form, copied again if a parameter changed since."""
        versions = [p._version for p in self._parameters]
        if versions != self._versions:
            self._copies = {n: _numpy_form(m) for n, m in self.modules.items()}
            self._versions = versions
        return self._copies

    def __getitem__(self, name: str) -> Any:
        return self.current()[name]

    def __getstate__(self) -> dict:
        return {"modules": self.modules}  # the copies are made again on first use

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["modules"])


def _numpy_form(module: Any) -> Any:
    if isinstance(module, nn.LSTM):
        return "lstm", (_array(module.weight_ih_l0).T.copy(), _array(module.weight_hh_l0).T.copy(),
                        _array(module.bias_ih_l0) + _array(module.bias_hh_l0))
    if isinstance(module, nn.GRU):
        return "gru", (_array(module.weight_ih_l0).T.copy(), _array(module.weight_hh_l0).T.copy(),
                       _array(module.bias_ih_l0), _array(module.bias_hh_l0))
    layers: list = []
    for m in module:
        if isinstance(m, nn.Linear):
            layers.append([_array(m.weight).T.copy(), _array(m.bias), None])
        elif not layers or layers[-1][2] is not None:
            raise TypeError(f"NumpyCopy needs Linear layers each followed by at most one "
                            f"activation, got {module}")
        else:
            layers[-1][2] = _ACTIVATIONS[type(m)]
    return [tuple(layer) for layer in layers]
