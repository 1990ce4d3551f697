"""One fused Adam step on the CPU, straight to its kernel.

``torch.optim.Adam.step()`` with ``fused=True`` spends most of a small network's step in Python
before its one kernel: the step wrapper (profiling, hooks, grad mode), the gathering of the
parameters' state, the grouping by device and dtype. At RL-Zoo's CartPole settings (an MLP of
256-256, batches of 64) that was ~75 us of a ~0.58 ms gradient step, measured on one CPU
thread. :func:`adam_step` makes the same two calls the optimiser makes (the step counters
incremented, then ``torch._fused_adam_`` with the group's settings) on the same tensors, so
the result is the same to the bit (tested against ``optimiser.step()``); anything it does not
cover goes through ``optimiser.step()`` itself.
"""

from __future__ import annotations

import torch
from torch.optim import optimizer as _optimizer

__all__ = ["adam_step"]

#: The settings of a group that the direct call covers (their values as Adam's defaults).
_PLAIN = (("amsgrad", False), ("maximize", False), ("capturable", False),
          ("differentiable", False), ("decoupled_weight_decay", False), ("foreach", None))


def _global_hooks() -> bool:
    return bool(getattr(_optimizer, "_global_optimizer_pre_hooks", True)
                or getattr(_optimizer, "_global_optimizer_post_hooks", True))


def _one_plain_group(optimiser: torch.optim.Optimizer, kind: type) -> dict | None:
    """The one parameter group of an optimiser of exactly type ``kind`` that no step hook (its
    own or a global one) watches; None otherwise (its own ``step()`` is then taken)."""
    groups = optimiser.param_groups
    if (type(optimiser) is not kind or len(groups) != 1 or optimiser._optimizer_step_pre_hooks
            or optimiser._optimizer_step_post_hooks or _global_hooks()):
        return None
    return groups[0]


def _cpu_float32_states(optimiser: torch.optim.Optimizer, group: dict,
                        names: tuple[str, ...]) -> tuple[list, list, list] | None:
    """``(params, grads, [state[name] of each param for each name])`` over the group's
    parameters that have a gradient (the optimiser leaves the others alone); None where some
    parameter's state is not made yet (its first step makes it) or is not dense CPU float32."""
    state = optimiser.state
    params, grads, columns = [], [], [[] for _ in names]
    for p in group["params"]:
        grad = p.grad
        if grad is None:
            continue
        s = state.get(p)
        if (not s or p.device.type != "cpu" or p.dtype != torch.float32 or grad.is_sparse
                or grad.dtype != torch.float32 or s["step"].device.type != "cpu"):
            return None
        params.append(p)
        grads.append(grad)
        for column, name in zip(columns, names, strict=True):
            column.append(s[name])
    return params, grads, columns


def adam_step(optimiser: torch.optim.Optimizer) -> None:
    """``optimiser.step()``, for a fused ``torch.optim.Adam`` on the CPU without hooks by one
    call of its kernel; every other optimiser, setting or device by ``optimiser.step()``.

    Example:
        >>> import torch
        >>> weight = torch.nn.Parameter(torch.ones(3))
        >>> adam = torch.optim.Adam([weight], lr=0.1, fused=True)
        >>> for _ in range(2):
        ...     weight.grad = torch.tensor([1.0, -1.0, 0.0])
        ...     adam_step(adam)
        >>> [round(w, 4) for w in weight.tolist()], int(adam.state[weight]["step"])
        ([0.8, 1.2, 1.0], 2)
    """
    group = _one_plain_group(optimiser, torch.optim.Adam)
    if (group is None or getattr(optimiser, "grad_scale", None) is not None
            or getattr(optimiser, "found_inf", None) is not None):  # hooks, a GradScaler's
        optimiser.step()
        return
    beta1, beta2 = group["betas"]
    lr = group["lr"]
    if not group.get("fused") or any(group.get(k, v) != v for k, v in _PLAIN) or any(
            isinstance(v, torch.Tensor) for v in (beta1, beta2, lr)):  # tensor settings
        optimiser.step()
        return
    found = _cpu_float32_states(optimiser, group, ("exp_avg", "exp_avg_sq", "step"))
    if found is None:
        optimiser.step()  # its first step creates the state (or a case not covered here)
        return
    params, grads, (exp_avgs, exp_avg_sqs, steps) = found
    if not params:
        return
    with torch.no_grad():  # as the optimiser's step: the weights change in place
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                           lr=lr, beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                           eps=group["eps"], maximize=False)
