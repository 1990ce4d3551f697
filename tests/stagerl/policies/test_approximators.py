import copy

import pytest
import torch

import stagerl as rl


def linear(weight=1.0, lr=0.5):
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(weight)
    return rl.Approximator(model, torch.optim.SGD(model.parameters(), lr=lr))


def test_approximator_runs_module_and_optimises():
    approximator = linear(weight=2.0, lr=0.5)
    x = torch.ones(1, 1)
    assert approximator(x).item() == 2.0
    approximator.optimise(approximator(x).sum())      # d/dw (w * 1) = 1: w = 2 - 0.5
    assert approximator.model.weight.item() == 1.5
    approximator.optimise(approximator(x).sum())      # gradients were zeroed: one more 0.5
    assert approximator.model.weight.item() == 1.0
    assert approximator.to("cpu") is approximator


def test_approximator_clips_gradients():
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    clipped = rl.Approximator(model, torch.optim.SGD(model.parameters(), lr=1.0), max_grad_norm=0.1)
    clipped.optimise(clipped(torch.full((1, 1), 100.0)).sum())
    assert clipped.model.weight.item() == pytest.approx(-0.1)


def test_approximator_state_dict_covers_model_and_optimiser():
    model = torch.nn.Linear(2, 1)
    approximator = rl.Approximator(model, torch.optim.Adam(model.parameters(), lr=0.1))
    approximator.optimise(approximator(torch.ones(3, 2)).pow(2).mean())
    state = approximator.state_dict()
    assert set(state) == {"model", "optimiser"} and state["optimiser"]["state"]
    other_model = torch.nn.Linear(2, 1)
    other = rl.Approximator(other_model, torch.optim.Adam(other_model.parameters(), lr=0.1))
    other.load_state_dict(copy.deepcopy(state))
    assert torch.equal(other.model.weight, model.weight)
    approximator.optimise(approximator(torch.ones(3, 2)).pow(2).mean())
    other.optimise(other(torch.ones(3, 2)).pow(2).mean())
    assert torch.allclose(other.model.weight, model.weight)


def test_approximator_validation():
    model = torch.nn.Linear(1, 1)
    with pytest.raises(TypeError):
        rl.Approximator(lambda x: x, torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError):
        rl.Approximator(model, "adam")
    with pytest.raises(ValueError):
        rl.Approximator(model, torch.optim.SGD(model.parameters(), lr=0.1), max_grad_norm=0.0)


def test_target_network_is_a_gradient_free_copy():
    tn = rl.TargetNetwork(linear(weight=3.0))
    assert tn.target is not tn.model
    assert tn.target.weight.item() == 3.0 and not tn.target.weight.requires_grad
    assert tn.model.weight.requires_grad
    assert tn(torch.ones(1, 1)).item() == 3.0


def test_target_network_hard_copy_every_sync_freq_steps():
    tn = rl.TargetNetwork(linear(weight=1.0, lr=0.25), sync_freq=3)
    x = torch.ones(1, 1)
    seen = []
    for _ in range(7):
        tn.optimise(tn(x).sum())
        seen.append((tn.n_optimise, tn.model.weight.item(), tn.target.weight.item()))
    assert seen == [
        (1, 0.75, 1.0), (2, 0.5, 1.0), (0, 0.25, 0.25),
        (1, 0.0, 0.25), (2, -0.25, 0.25), (0, -0.5, -0.5),
        (1, -0.75, -0.5),
    ]


def test_target_network_polyak_averaging():
    tn = rl.TargetNetwork(linear(weight=1.0, lr=1.0), sync_freq=1, rho=0.75)
    x = torch.ones(1, 1)
    tn.optimise(tn(x).sum())              # online 0.0; target 0.75 * 1 + 0.25 * 0
    assert tn.model.weight.item() == 0.0
    assert tn.target.weight.item() == pytest.approx(0.75)
    tn.optimise(tn(x).sum())              # online -1.0; target 0.75 * 0.75 + 0.25 * -1
    assert tn.target.weight.item() == pytest.approx(0.3125)
    assert tn.n_optimise == 0


def test_target_network_polyak_with_sync_freq_and_buffers():
    model = torch.nn.Sequential(torch.nn.Linear(1, 1, bias=False), torch.nn.BatchNorm1d(1))
    tn = rl.TargetNetwork(rl.Approximator(model, torch.optim.SGD(model.parameters(), lr=0.0)),
                          sync_freq=2, rho=0.5)
    with torch.no_grad():
        model[1].running_mean.fill_(4.0)
        model[1].num_batches_tracked.fill_(9)
    tn.sync()
    assert tn.target[1].running_mean.item() == pytest.approx(2.0)   # 0.5 * 0 + 0.5 * 4
    assert tn.target[1].num_batches_tracked.item() == 9             # integers are copied


def test_target_network_state_dict_and_validation():
    tn = rl.TargetNetwork(linear(weight=1.0), sync_freq=5)
    tn.optimise(tn(torch.ones(1, 1)).sum())
    other = rl.TargetNetwork(linear(weight=9.0), sync_freq=5)
    other.load_state_dict(tn.state_dict())
    assert other.n_optimise == 1
    assert other.model.weight.item() == tn.model.weight.item()
    assert other.target.weight.item() == 1.0
    assert tn.to("cpu") is tn
    for kwargs in ({"sync_freq": 0}, {"sync_freq": -1}, {"rho": -0.1}, {"rho": 1.5}):
        with pytest.raises(ValueError):
            rl.TargetNetwork(linear(), **kwargs)
    with pytest.raises(TypeError):
        rl.TargetNetwork(torch.nn.Linear(1, 1))
