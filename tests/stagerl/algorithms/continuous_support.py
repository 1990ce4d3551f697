"""What the SAC and TD3 tests share: one torch thread, tiny spaces, a tiny batch and ramp weights
that pin one update's numbers, and parameter snapshots."""

import gymnasium
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

STATE_SPACE = gymnasium.spaces.Box(-10.0, 10.0, (2,))
ACTION_SPACE = gymnasium.spaces.Box(-2.0, 2.0, (1,))


def fill(module, scale):
    """Deterministic weights: each parameter a ramp from -scale/2 to scale/2, steeper per layer."""
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * scale * (1 + 0.5 * i))


def tiny_batch():
    return {
        "state": torch.tensor([[0.5, -1.0], [1.0, 0.0]]),
        "action": torch.tensor([[1.0], [-2.0]]),  # as the env received them: unit 0.5 and -1
        "reward": torch.tensor([1.0, -0.5]),
        "next_state": torch.tensor([[0.0, 1.0], [0.5, 0.5]]),
        "terminal": torch.tensor([False, True]),
    }


def parameters(module):
    return [p.detach().clone() for p in module.parameters()]


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
