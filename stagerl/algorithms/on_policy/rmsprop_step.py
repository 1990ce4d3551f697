"""One foreach RMSprop step on the CPU, straight to its tensor operations (A2C's optimiser).

``torch.optim.RMSprop.step()`` spends most of a small network's step in Python around its six
``torch._foreach_*`` calls: the step wrapper (profiling, hooks, grad mode), the gathering of the
parameters' state, the grouping by device and dtype. A2C takes one such step per rollout of a
few dozen transitions, where that Python weighs as much as the gradient itself.
:func:`rmsprop_step` makes the same calls ``_multi_tensor_rmsprop`` makes, in the same order, on
the same tensors, so the result is the same to the bit (tested against ``optimiser.step()``);
anything it does not cover goes through ``optimiser.step()`` itself.
"""

from __future__ import annotations

import torch

from stagerl.algorithms.adam_step import _cpu_float32_states, _one_plain_group

__all__ = ["rmsprop_step"]

#: The settings of a group that the direct call covers.
_PLAIN = (("momentum", 0), ("centered", False), ("weight_decay", 0), ("maximize", False),
          ("capturable", False), ("differentiable", False), ("foreach", True))


def rmsprop_step(optimiser: torch.optim.Optimizer) -> None:
    """``optimiser.step()``, for a ``torch.optim.RMSprop(foreach=True)`` on the CPU without
    momentum, centring, weight decay or hooks, by its tensor operations called directly; every
    other optimiser, setting or device by ``optimiser.step()``.

    Example:
        >>> import torch
        >>> weight = torch.nn.Parameter(torch.ones(2))
        >>> rmsprop = torch.optim.RMSprop([weight], lr=0.1, alpha=0.5, eps=0.0, foreach=True)
        >>> for _ in range(2):
        ...     weight.grad = torch.tensor([1.0, -1.0])
        ...     rmsprop_step(rmsprop)
        >>> [round(w, 4) for w in weight.tolist()], int(rmsprop.state[weight]["step"])
        ([0.7431, 1.2569], 2)
    """
    group = _one_plain_group(optimiser, torch.optim.RMSprop)
    if group is None:
        optimiser.step()
        return
    lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
    if any(group.get(k, not v) != v for k, v in _PLAIN) or any(
            isinstance(v, torch.Tensor) for v in (lr, alpha, eps)):  # tensor settings
        optimiser.step()
        return
    found = _cpu_float32_states(optimiser, group, ("square_avg", "step"))
    if found is None:
        optimiser.step()  # its first step creates the state (or a case not covered here)
        return
    params, grads, (square_avgs, steps) = found
    if not params:
        return
    with torch.no_grad():  # as the optimiser's step: the weights change in place
        torch._foreach_add_(steps, torch.tensor(1.0, device="cpu"), alpha=1.0)
        torch._foreach_mul_(square_avgs, alpha)
        torch._foreach_addcmul_(square_avgs, grads, grads, value=1 - alpha)
        avg = torch._foreach_sqrt(square_avgs)
        torch._foreach_add_(avg, eps)
        torch._foreach_addcdiv_(params, grads, avg, value=-lr)
