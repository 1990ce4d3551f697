"""Small torch networks with an RNN, stepped in numpy for acting.

One step of ``torch.nn.LSTM`` on one observation costs ~100-200 us on a CPU (its checks and
dispatch), far more than a CartPole step (~7 us); the same step in numpy costs ~10 us. A
:class:`NumpyCopy` holds numpy copies of the weights of ``torch.nn.Sequential`` MLPs (``Linear``
layers each followed by at most one ``Tanh`` or ``ReLU``) and single-layer ``LSTM``/``GRU``
modules (``batch_first``) and computes their steps in float32 with torch's gate formulas. On
the CPU its weights are numpy views of the parameters' memory, not copies: every in-place change
(an optimiser step, a load) shows at once, including the fused Adam kernel's, which leaves the
tensors' version counters as they were. They are taken again when a parameter's memory moves;
parameters elsewhere (another device or dtype) are copied again whenever a version counter
changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["NumpyCopy", "lstm_step", "gru_step", "mlp_forward", "weights_changed"]

_ACTIVATIONS = {nn.Tanh: np.tanh, nn.ReLU: lambda x: np.maximum(x, 0.0)}


def weights_changed(parameters: list) -> None:
    """Mark ``parameters`` as changed in place (their version counters bumped, no value
    touched), for a step that does not: the fused Adam kernel. A :class:`NumpyCopy` of weights
    off the CPU follows the counters; on the CPU its views need no mark.

    Example:
        >>> weight = torch.nn.Parameter(torch.zeros(2))
        >>> before = weight._version
        >>> weights_changed([weight])
        >>> weight._version - before
        1
    """
    torch.autograd.graph.increment_version(parameters)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(x: np.ndarray, h: np.ndarray, c: np.ndarray, weights: tuple) -> tuple:
    """One step of a torch LSTM (gates ``i, f, g, o``) for a batch: ``(h', c')``."""
    w_ih, w_hh, bias = weights
    gates = x @ w_ih + h @ w_hh + bias
    n = h.shape[-1]
    input_forget = _sigmoid(gates[:, :2 * n])  # elementwise: one call for both gates
    i, f = input_forget[:, :n], input_forget[:, n:]
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
    """A view of a CPU float32 tensor's memory, else a float32 copy on the CPU."""
    t = t.detach()
    if t.device.type == "cpu" and t.dtype == torch.float32:
        return t.numpy()
    return t.to("cpu", torch.float32, copy=True).numpy()


class NumpyCopy:
    """Numpy forms of some modules of a network, always those of the current weights.

    ``copy[name]`` is the numpy form of module ``name``: for a ``Sequential`` MLP a list of
    ``(weight_T, bias, activation)``; for an LSTM ``("lstm", (w_ih_T, w_hh_T, bias))`` (the two
    biases summed); for a GRU ``("gru", (w_ih_T, w_hh_T, b_ih, b_hh))``. Modules of other kinds
    raise ``TypeError`` when the copy is made (check with :meth:`supports`).

    The weights of CPU float32 parameters are views of their memory (see the module
    docstring); only an LSTM's bias sum is computed again at each :meth:`current`.

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
        self._taken_at: list = []  # each parameter's address (and version) the forms were taken at
        self._views = False  # whether the forms are views (CPU float32) or copies
        self._forms: dict = {}

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
        """Every module's numpy form, of the weights as they are now."""
        if self._views:
            taken = [p.data_ptr() for p in self._parameters]
        else:
            taken = [(p.data_ptr(), p._version) for p in self._parameters]
        if taken != self._taken_at:
            self._forms = {n: _numpy_form(m) for n, m in self.modules.items()}
            self._views = all(p.device.type == "cpu" and p.dtype == torch.float32
                              for p in self._parameters)
            self._taken_at = [p.data_ptr() for p in self._parameters] if self._views else taken
        return {n: _with_bias_sum(form) for n, form in self._forms.items()}

    def __getitem__(self, name: str) -> Any:
        return self.current()[name]

    def __getstate__(self) -> dict:
        return {"modules": self.modules}  # the forms are taken again on first use

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["modules"])


def _with_bias_sum(form: Any) -> Any:
    # An LSTM's gates take b_ih + b_hh: summed from the current biases (views) at each use.
    if isinstance(form, tuple) and form[0] == "lstm_parts":
        w_ih, w_hh, b_ih, b_hh = form[1]
        return "lstm", (w_ih, w_hh, b_ih + b_hh)
    return form


def _numpy_form(module: Any) -> Any:
    if isinstance(module, nn.LSTM):
        return "lstm_parts", (_array(module.weight_ih_l0).T, _array(module.weight_hh_l0).T,
                              _array(module.bias_ih_l0), _array(module.bias_hh_l0))
    if isinstance(module, nn.GRU):
        return "gru", (_array(module.weight_ih_l0).T, _array(module.weight_hh_l0).T,
                       _array(module.bias_ih_l0), _array(module.bias_hh_l0))
    layers: list = []
    for m in module:
        if isinstance(m, nn.Linear):
            layers.append([_array(m.weight).T, _array(m.bias), None])
        elif not layers or layers[-1][2] is not None:
            raise TypeError(f"NumpyCopy needs Linear layers each followed by at most one "
                            f"activation, got {module}")
        else:
            layers[-1][2] = _ACTIVATIONS[type(m)]
    return [tuple(layer) for layer in layers]
