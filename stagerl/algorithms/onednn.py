"""Linear layers whose large matrix products run on oneDNN on the CPU.

torch's CPU builds multiply dense float32 matrices with MKL's ``sgemm``; the same builds carry
oneDNN, whose kernels use every vector instruction set the processor has. Measured on this
project's machines (AMD EPYC with AVX-512, one thread), a 256×256 by 256×256 product took
326 us through ``torch.mm`` and 158 us through oneDNN, and the Nature CNN's 32×3136 by 3136×512
layer 1.34 ms against 0.73 ms: the gradient steps of SAC, TD3 and DQN are mostly such products.
oneDNN costs ~12 us a call more, so small products (acting on one observation, a network's
one-value output) stay with ``torch.nn.functional.linear``.

The arithmetic is the same (float32 products and sums, in another order: results agree to float
rounding), and so are the parameters: :class:`OneDNNLinear` is an ``nn.Linear`` (same names, same
initialisation, same ``state_dict``) whose forward and backward take oneDNN's path for products
of at least :data:`MIN_MACS` multiply-adds on the CPU. :func:`with_onednn_linears` switches the
``nn.Linear`` layers of a built network over in place.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["OneDNNLinear", "with_onednn_linears", "onednn_linear", "ONEDNN", "MIN_MACS"]

#: Multiply-adds of one product from which oneDNN is faster than MKL here (256×23×256 is
#: 1.5M: 28 us against 35 us; 256×256×12, 0.8M: about even).
MIN_MACS = 1 << 20


def _linear_pointwise_works() -> bool:
    try:
        op = torch.ops.mkldnn._linear_pointwise
        x, w = torch.ones(2, 3), torch.ones(4, 3)
        return bool(torch.equal(op(x, w, None, "none", [], ""), torch.full((2, 4), 3.0)))
    except (AttributeError, RuntimeError, NotImplementedError):
        return False


#: Whether this torch build has oneDNN's linear kernel (CPU builds with MKL-DNN do).
ONEDNN = torch.backends.mkldnn.is_available() and _linear_pointwise_works()


def _product(a: torch.Tensor, b_t: torch.Tensor) -> torch.Tensor:
    """``a @ b_t.T`` on oneDNN."""
    return torch.ops.mkldnn._linear_pointwise(a, b_t, None, "none", [], "")


class _OneDNNLinearFunction(torch.autograd.Function):
    """``x @ weight.T + bias`` for a 2-D ``x``, forward and backward on oneDNN; only the
    gradients asked for are computed (a frozen layer passes the gradient to its input alone)."""

    @staticmethod
    def forward(ctx, x, weight, bias):  # noqa: ANN001, ANN205 (autograd's signature)
        ctx.save_for_backward(x, weight)
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        x, weight = ctx.saved_tensors
        wants_x, wants_weight, wants_bias = ctx.needs_input_grad
        grad_x = _product(grad, weight.t()) if wants_x else None  # grad @ weight
        grad_weight = _product(grad.t(), x.t()) if wants_weight else None  # grad.T @ x
        grad_bias = grad.sum(0) if wants_bias else None
        return grad_x, grad_weight, grad_bias


def onednn_linear(x: torch.Tensor, weight: torch.Tensor,
                  bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear(x, weight, bias)``, on oneDNN where that is faster: float32
    tensors on the CPU, a product of at least :data:`MIN_MACS` multiply-adds.

    Example:
        >>> import torch
        >>> x, weight, bias = torch.ones(256, 64), torch.ones(128, 64), torch.zeros(128)
        >>> y = onednn_linear(x, weight, bias)
        >>> y.shape, bool((y == 64.0).all())
        (torch.Size([256, 128]), True)
    """
    out_features, in_features = weight.shape
    rows = x.numel() // max(in_features, 1)
    if not (ONEDNN and x.device.type == "cpu" and x.dtype == torch.float32
            and weight.dtype == torch.float32 and x.layout == torch.strided
            and rows * in_features * out_features >= MIN_MACS):
        return F.linear(x, weight, bias)
    if x.dim() == 2:
        return _OneDNNLinearFunction.apply(x, weight, bias)
    flat = _OneDNNLinearFunction.apply(x.reshape(rows, in_features), weight, bias)
    return flat.reshape(*x.shape[:-1], out_features)


class OneDNNLinear(nn.Linear):
    """An ``nn.Linear`` whose large products run on oneDNN on the CPU (see the module's
    docstring); its parameters, initialisation and ``state_dict`` are ``nn.Linear``'s.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0); layer = OneDNNLinear(256, 256)
        >>> _ = torch.manual_seed(0); plain = torch.nn.Linear(256, 256)
        >>> x = torch.randn(256, 256)
        >>> bool(torch.allclose(layer(x), plain(x), atol=1e-5)), list(layer.state_dict())
        (True, ['weight', 'bias'])
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return onednn_linear(x, self.weight, self.bias)


def with_onednn_linears(module: nn.Module) -> nn.Module:
    """``module`` with every plain ``nn.Linear`` inside it made a :class:`OneDNNLinear`, in
    place (the same parameters; subclasses of ``nn.Linear`` are left as they are).

    Example:
        >>> import torch
        >>> net = with_onednn_linears(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()))
        >>> type(net[0]).__name__, list(net.state_dict())
        ('OneDNNLinear', ['0.weight', '0.bias'])
    """
    for layer in module.modules():
        if type(layer) is nn.Linear:
            layer.__class__ = OneDNNLinear
    return module
