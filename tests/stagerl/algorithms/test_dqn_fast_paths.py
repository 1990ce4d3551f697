"""DQN's faster paths against the general ones on the same inputs: a burst learned at once (one
target pass for all its batches, batches cut once per field, Adam's kernel called directly) against
the same burst learned batch by batch with torch's own clipping and ``optimiser.step()``, on a
vector env whose lanes' rings wrap."""

import copy

import numpy as np
import pytest
import torch

import stagerl as rl
from stagerl.algorithms import onednn
from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn import DQNConfig, dqn_update, learn_burst, make_dqn_agent
from stagerl.algorithms.dqn import update as dqn_update_module
from stagerl.algorithms.dqn.replay import Burst, as_tensors

CPU = torch.device("cpu")


def trained_on_wrapped_lanes(**settings):
    """A DQN agent for 3 sub-envs whose trajectory holds 3 lanes of random transitions (episodes
    ending now and then) whose rings (8 rows a lane) have wrapped, after one burst of learning
    (Adam's state exists)."""
    base = dict(total_steps=3_000, learning_starts=60, train_freq=30, gradient_steps=20,
                batch_size=64, buffer_size=24, target_update_interval=40, net_arch=(256, 256),
                gamma=0.5, max_grad_norm=0.5)
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    agent = make_dqn_agent(env, DQNConfig(**{**base, **settings}), seed=0, device="cpu")
    trajectory, rng = agent.trajectory, np.random.default_rng(0)
    trajectory.push(state=rng.normal(size=(3, 4)).astype(np.float32))
    for _ in range(40):
        trajectory.push(state=rng.normal(size=(3, 4)).astype(np.float32),
                        action=rng.integers(2, size=3), reward=rng.normal(size=3),
                        terminal=rng.random(3) < 0.2)
    agent.policy.env_steps = 120
    learn_burst(agent.policy, trajectory.sampler.sample(trajectory.container), trajectory)
    return agent


def batch_by_batch(policy, burst):
    """The general path: each batch moved on its own, its own TD target, torch's
    ``clip_grad_norm_`` and ``optimiser.step()``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dqn_update_module, "adam_step", lambda optimiser: optimiser.step())
        patch.setattr(dqn_update_module, "clip_grad_norm", torch.nn.utils.clip_grad_norm_)
        for group in policy.q.optimiser.param_groups:
            group["lr"] = policy.learning_rate
        for batch in burst:
            dqn_update(policy, as_tensors(batch, CPU, policy.action_start))


@pytest.mark.parametrize("settings", [
    {},
    {"double": True, "n_step": 3, "learning_rate_schedule": "linear"},
    {"dueling": True, "loss": "mse", "max_grad_norm": None},
    {"distributional": True, "n_atoms": 11, "v_min": 0.0, "v_max": 50.0, "max_grad_norm": 1e6},
    {"target_network": False, "stack_size": 2},
])
def test_a_burst_learns_as_its_batches_do_one_by_one_on_wrapped_lanes(settings, monkeypatch):
    if settings.get("distributional"):  # the head's product (256 x 22) on 1,024 rows at once
        # goes to oneDNN, on one batch's 64 to MKL: another order of the same sums; one kernel
        # for both (as for the other heads, whose products fall on the same side) makes it equal
        monkeypatch.setattr(onednn, "MIN_MACS", 1 << 40)
    agent = trained_on_wrapped_lanes(**settings)
    trajectory = agent.trajectory
    assert trajectory.container.lane_lengths() == [8, 8, 8]  # 40 pushes a lane: wrapped
    burst = trajectory.sampler.sample(trajectory.container)
    assert burst.rows is not None and len(burst) == 20
    fast, general = agent.policy, copy.deepcopy(agent.policy)
    learn_burst(fast, burst, trajectory)
    batch_by_batch(general, burst)
    for a, b in zip(fast.network.parameters(), general.network.parameters(), strict=True):
        assert torch.equal(a, b)
    fast_adam = fast.q.optimiser.state_dict()["state"]
    general_adam = general.q.optimiser.state_dict()["state"]
    for key, state in fast_adam.items():
        for name, value in state.items():
            assert torch.equal(value, general_adam[key][name]), (key, name)
    assert torch.equal(fast.loss, general.loss)


def test_a_burst_cuts_each_field_into_its_batches_nested_ones_too():
    rows = {"state": {"a": np.arange(6), "b": (np.arange(6) * 10,)}, "reward": np.arange(6) + 0.5}
    batches = list(Burst(3, 2, rows))
    assert [b["state"]["a"].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5]]
    assert [b["state"]["b"][0].tolist() for b in batches] == [[0, 10], [20, 30], [40, 50]]
    assert [b["reward"].tolist() for b in batches] == [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]]


def twin_networks(weight_decay=0.0, **adam):
    torch.manual_seed(0)
    nets = [torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2),
                                torch.nn.Linear(2, 2)) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    optimisers = [torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=weight_decay,
                                   fused=True, **adam) for net in nets]
    return nets, optimisers


def backward(net, x):
    for p in net.parameters():
        p.grad = None
    net[2](net[1](net[0](x))).pow(2).sum().backward()  # the last layer gets no gradient


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adam_step_is_the_optimisers_step_to_the_bit(weight_decay):
    (ours, theirs), (our_adam, their_adam) = twin_networks(weight_decay)
    x = torch.randn(16, 3)
    for step in range(6):
        if step == 3:  # a checkpoint's round trip replaces the state's tensors
            for adam in (our_adam, their_adam):
                adam.load_state_dict(copy.deepcopy(adam.state_dict()))
        for adam in (our_adam, their_adam):
            adam.param_groups[0]["lr"] = 0.01 / (step + 1)
        backward(ours, x)
        backward(theirs, x)
        adam_step(our_adam)
        their_adam.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    assert len(our_adam.state) == 4  # the layer without gradients has no state, as in Adam
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        if p in our_adam.state:
            for name in ("step", "exp_avg", "exp_avg_sq"):
                assert torch.equal(our_adam.state[p][name], their_adam.state[q][name])


def test_adam_step_leaves_hooks_and_other_settings_to_the_optimiser():
    (net, _), (adam, _) = twin_networks(amsgrad=True)
    calls = []
    adam.register_step_pre_hook(lambda *args: calls.append("pre"))
    x = torch.randn(4, 3)
    for _ in range(2):
        backward(net, x)
        adam_step(adam)
    assert calls == ["pre", "pre"]  # through optimiser.step(), which runs its hooks
    assert int(next(iter(adam.state.values()))["step"]) == 2
    sgd_net = torch.nn.Linear(3, 1)
    sgd = torch.optim.SGD(sgd_net.parameters(), lr=1.0)
    sgd_net.weight.grad, sgd_net.bias.grad = torch.ones(1, 3), torch.ones(1)
    before = sgd_net.weight.detach().clone()
    adam_step(sgd)
    assert torch.equal(sgd_net.weight.detach(), before - 1.0)
