"""RMSprop's tensor operations called directly (A2C's optimiser step) against
``optimiser.step()`` on the same inputs: one optimiser alone, and whole A2C runs on a vector env
whose lanes' rings wrap, with terminations and truncations inside the rollouts."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import stagerl as rl
from stagerl.algorithms.on_policy import A2CConfig, make_a2c_agent
from stagerl.algorithms.on_policy import base as on_policy_base
from stagerl.algorithms.on_policy.rmsprop_step import rmsprop_step


def twin_networks(**settings):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2),
                              torch.nn.Linear(2, 1))
    twin = copy.deepcopy(net)
    options = {"lr": 0.01, "alpha": 0.99, "eps": 1e-5, "foreach": True, **settings}
    return (net, twin), (torch.optim.RMSprop(net.parameters(), **options),
                         torch.optim.RMSprop(twin.parameters(), **options))


def backward(net, x):
    for p in net.parameters():
        p.grad = None
    net[2](net[1](net[0](x))).pow(2).sum().backward()  # the last layer gets no gradient


def test_rmsprop_step_is_the_optimisers_step_to_the_bit():
    (ours, theirs), (our_rmsprop, their_rmsprop) = twin_networks()
    x = torch.randn(16, 3)
    for step in range(6):
        if step == 3:  # a checkpoint's round trip replaces the state's tensors
            for rmsprop in (our_rmsprop, their_rmsprop):
                rmsprop.load_state_dict(copy.deepcopy(rmsprop.state_dict()))
        for rmsprop in (our_rmsprop, their_rmsprop):
            rmsprop.param_groups[0]["lr"] = 0.01 / (step + 1)
        backward(ours, x * (step + 1))
        backward(theirs, x * (step + 1))
        rmsprop_step(our_rmsprop)
        their_rmsprop.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    assert len(our_rmsprop.state) == 4  # the layer without gradients has no state, as RMSprop
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        if p in our_rmsprop.state:
            for name in ("step", "square_avg"):
                assert torch.equal(our_rmsprop.state[p][name], their_rmsprop.state[q][name])


@pytest.mark.parametrize("settings", [{"momentum": 0.9}, {"centered": True},
                                      {"weight_decay": 0.1}, {"foreach": False}])
def test_rmsprop_step_leaves_hooks_and_other_settings_to_the_optimiser(settings):
    (ours, theirs), (our_rmsprop, their_rmsprop) = twin_networks(**settings)
    calls = []
    our_rmsprop.register_step_pre_hook(lambda *args: calls.append("pre"))
    x = torch.randn(4, 3)
    for _ in range(3):
        backward(ours, x)
        backward(theirs, x)
        rmsprop_step(our_rmsprop)
        their_rmsprop.step()
    assert calls == ["pre"] * 3  # through optimiser.step(), which runs its hooks
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    sgd_net = torch.nn.Linear(3, 1)
    sgd = torch.optim.SGD(sgd_net.parameters(), lr=1.0)
    sgd_net.weight.grad, sgd_net.bias.grad = torch.ones(1, 3), torch.ones(1)
    before = sgd_net.weight.detach().clone()
    rmsprop_step(sgd)
    assert torch.equal(sgd_net.weight.detach(), before - 1.0)


def a2c_run(steps: int) -> tuple:
    """A2C on 3 sub-envs of CartPole cut at 14 steps (terminations and truncations inside the
    rollouts), its lanes' rings wrapping; the parameters, RMSprop's state and the rollouts'
    count after ``steps`` env steps."""
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=2, max_episode_steps=14,
                          vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    agent = make_a2c_agent(env, A2CConfig(n_steps=5, ent_coef=0.01), seed=2, device="cpu")
    policy, learn, wrapped = agent.policy, agent.policy.learn, []

    def learn_noting_wrap(container):  # some lane's ring wrapped (private geometry, read here)
        wrapped.append(bool(((container._start + container._m) > container._P).any()))
        learn(container)

    policy.learn = learn_noting_wrap
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    state = policy.optimiser.state_dict()["state"]
    return ([p.detach().clone() for p in policy.model.flat_parameters()],
            [(s["step"].clone(), s["square_avg"].clone()) for s in state.values()],
            policy.n_updates, any(wrapped))


def test_a2c_with_rmsprops_operations_called_directly_is_the_optimisers_run_to_the_bit():
    fast = a2c_run(600)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(on_policy_base, "rmsprop_step", lambda optimiser: optimiser.step())
        general = a2c_run(600)
    assert fast[2] == general[2] == 40 and fast[3]  # 600 steps: 40 rollouts of 5 x 3, wrapped
    for a, b in zip(fast[0], general[0], strict=True):
        assert torch.equal(a, b)
    for (step, square), (step_g, square_g) in zip(fast[1], general[1], strict=True):
        assert torch.equal(step, step_g) and torch.equal(square, square_g)
    assert np.isfinite(fast[0][0].numpy()).all()
