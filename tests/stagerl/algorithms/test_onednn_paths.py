"""The fast paths of the off-policy and DQN learners compute what the plain torch layers do.

``OneDNNLinear`` runs large products on oneDNN and the Atari Q-network keeps its convolution
weights channels-last: each test computes the same losses, gradients and steps through the
fast layers and through plain ``nn.Linear`` layers with contiguous weights, on the same inputs,
and compares them to float tolerance.
"""

from __future__ import annotations

import copy

import gymnasium
import numpy as np
import pytest
import torch
from torch import nn

from stagerl.algorithms import SACConfig, TD3Config
from stagerl.algorithms.dqn import DQNConfig
from stagerl.algorithms.dqn.agent import make_q_network
from stagerl.algorithms.dqn.policy import DQNPolicy
from stagerl.algorithms.dqn.update import dqn_update
from stagerl.algorithms.off_policy.sac import SACPolicy, sac_update
from stagerl.algorithms.off_policy.td3 import TD3Policy, td3_update
from stagerl.algorithms.onednn import MIN_MACS, ONEDNN, OneDNNLinear, onednn_linear

needs_onednn = pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN linear")


def plain(module: nn.Module) -> nn.Module:
    """A deep copy with plain ``nn.Linear`` layers and contiguous weights."""
    module = copy.deepcopy(module)
    for layer in module.modules():
        if type(layer) is OneDNNLinear:
            layer.__class__ = nn.Linear
    return module.to(memory_format=torch.contiguous_format)


@needs_onednn
@pytest.mark.parametrize("shape", [(256, 256), (4, 64, 256)])
@pytest.mark.parametrize("frozen", [False, True])
def test_onednn_linear_gives_functional_linears_values_and_gradients(shape, frozen):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=generator, requires_grad=True)
    weight = torch.randn(128, shape[-1], generator=generator, requires_grad=not frozen)
    bias = torch.randn(128, generator=generator, requires_grad=not frozen)
    grad = torch.randn(*shape[:-1], 128, generator=generator)
    fast = onednn_linear(x, weight, bias)
    node = fast.grad_fn if len(shape) == 2 else fast.grad_fn.next_functions[0][0]  # a view
    assert type(node).__name__ == "_OneDNNLinearFunctionBackward"
    slow = nn.functional.linear(x, weight, bias)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-4)
    inputs = (x,) if frozen else (x, weight, bias)
    fast_grads = torch.autograd.grad(fast, inputs, grad)
    for a, b in zip(fast_grads, torch.autograd.grad(slow, inputs, grad), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-3)


@needs_onednn
def test_onednn_linear_reads_strided_inputs_and_a_broadcast_gradient():
    generator = torch.Generator().manual_seed(3)
    wide = torch.randn(256, 512, generator=generator)
    x = wide[:, ::2].requires_grad_()  # every other column: not contiguous
    weight = torch.randn(256, 256, generator=generator).t().requires_grad_()  # transposed
    fast, slow = onednn_linear(x, weight), nn.functional.linear(x, weight)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-4)
    # sum()'s gradient is one value broadcast over the output (stride 0)
    fast_grads = torch.autograd.grad(fast.sum(), (x, weight))
    for a, b in zip(fast_grads, torch.autograd.grad(slow.sum(), (x, weight)), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-3)


def test_small_products_and_other_dtypes_stay_with_functional_linear():
    x, weight = torch.ones(1, 256, requires_grad=True), torch.ones(256, 256)
    assert 256 * 256 < MIN_MACS
    assert type(onednn_linear(x, weight).grad_fn).__name__ == "MmBackward0"
    x64 = torch.ones(256, 256, dtype=torch.float64, requires_grad=True)
    out = onednn_linear(x64, weight.double())
    assert out.dtype == torch.float64 and type(out.grad_fn).__name__ == "MmBackward0"


def _replay_batch(state_dim: int, action_dim: int, n: int = 256) -> dict:
    generator = torch.Generator().manual_seed(1)
    return {"state": torch.randn(n, state_dim, generator=generator),
            "next_state": torch.randn(n, state_dim, generator=generator),
            "action": torch.rand(n, action_dim, generator=generator) * 2 - 1,
            "reward": torch.randn(n, generator=generator),
            "terminal": torch.rand(n, generator=generator) < 0.1}


def _spaces():
    return (gymnasium.spaces.Box(-np.inf, np.inf, (17,), np.float64),
            gymnasium.spaces.Box(-1.0, 1.0, (6,), np.float32))


def _plain_copy(policy, modules):
    twin = copy.deepcopy(policy)
    for name in modules:
        setattr(twin, name, plain(getattr(policy, name)))
    return twin


@needs_onednn
def test_sac_update_on_onednn_layers_takes_the_plain_layers_step():
    policy = SACPolicy(*_spaces(), SACConfig(), seed=0, device="cpu")
    assert type(policy.actor.net[0]).__name__ == "OneDNNLinear"
    twin = _plain_copy(policy, ("actor", "critic", "critic_target"))
    twin.optimiser = torch.optim.Adam(
        [*twin.actor.parameters(), *twin.critic.parameters(), twin.log_ent_coef],
        lr=policy.config.learning_rate, fused=True)
    twin.optimiser.load_state_dict(policy.optimiser.state_dict())
    batch = _replay_batch(17, 6)
    for _ in range(3):
        sac_update(policy, batch)
        sac_update(twin, batch)
        for name in ("critic_loss", "actor_loss", "ent_coef_loss"):
            torch.testing.assert_close(policy.last_update[name], twin.last_update[name],
                                       rtol=1e-4, atol=1e-5)
    for name in ("actor", "critic", "critic_target"):
        for a, b in zip(getattr(policy, name).parameters(), getattr(twin, name).parameters(),
                        strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@needs_onednn
def test_td3_update_on_onednn_layers_takes_the_plain_layers_step():
    policy = TD3Policy(*_spaces(), TD3Config(), seed=0, device="cpu")
    twin = _plain_copy(policy, ("actor", "critic", "actor_target", "critic_target"))
    twin.optimiser = torch.optim.Adam([*twin.actor.parameters(), *twin.critic.parameters()],
                                      lr=policy.config.learning_rate, fused=True)
    batch = _replay_batch(17, 6)
    for _ in range(4):  # two delayed actor steps
        td3_update(policy, batch)
        td3_update(twin, batch)
    for name in ("actor", "critic", "actor_target", "critic_target"):
        for a, b in zip(getattr(policy, name).parameters(), getattr(twin, name).parameters(),
                        strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@needs_onednn
def test_atari_q_network_steps_like_the_plain_contiguous_one():
    space = gymnasium.spaces.Box(0, 255, (84, 84), np.uint8)
    config = DQNConfig(total_steps=1000, stack_size=4, net_arch=(), max_grad_norm=10.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        network = make_q_network(space, 4, config)
    conv = next(m for m in network.modules() if isinstance(m, nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert any(type(m) is OneDNNLinear for m in network.modules())
    fast = DQNPolicy(network, config, device="cpu")
    slow = DQNPolicy(plain(network), config, device="cpu")
    generator = torch.Generator().manual_seed(2)
    frames = torch.randint(0, 256, (2, 32, 4, 84, 84), generator=generator, dtype=torch.uint8)
    batch = {"state": frames[0], "next_state": frames[1],
             "action": torch.randint(0, 4, (32,), generator=generator),
             "reward": torch.randn(32, generator=generator),
             "terminal": (torch.rand(32, generator=generator) < 0.1).float()}
    for _ in range(3):
        dqn_update(fast, batch)
        dqn_update(slow, batch)
        torch.testing.assert_close(fast.loss, slow.loss, rtol=1e-4, atol=1e-6)
    for a, b in zip(fast.network.parameters(), slow.network.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
