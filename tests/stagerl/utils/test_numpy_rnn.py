"""The numpy forms that recurrent policies act with: torch's steps, and always of the weights
as they are now (after a fused Adam step, which leaves the version counters alone, a load, or a
parameter's memory replaced)."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from stagerl.utils.numpy_rnn import NumpyCopy, gru_step, lstm_step, mlp_forward, weights_changed


def _modules(rnn):
    torch.manual_seed(0)
    return {"encoder": nn.Sequential(nn.Linear(3, 8), nn.Tanh()),
            "rnn": (nn.LSTM if rnn == "lstm" else nn.GRU)(8, 6, batch_first=True),
            "head": nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))}


def _numpy_step(forms, x, h, c):
    features = mlp_forward(x, forms["encoder"])
    kind, weights = forms["rnn"]
    if kind == "lstm":
        h, c = lstm_step(features, h, c, weights)
    else:
        h = gru_step(features, h, weights)
    return mlp_forward(h, forms["head"]), h, c


def _torch_step(modules, x, h, c):
    with torch.no_grad():
        features = modules["encoder"](torch.as_tensor(x))[:, None]
        hidden = torch.as_tensor(h)[None]
        if isinstance(modules["rnn"], nn.LSTM):
            out, (h, c) = modules["rnn"](features, (hidden, torch.as_tensor(c)[None]))
            c = c[0].numpy()
        else:
            out, h = modules["rnn"](features, hidden)
        return modules["head"](out[:, 0]).numpy(), h[0].numpy(), c


def _inputs(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(4, 3)).astype(np.float32),
            rng.normal(size=(4, 6)).astype(np.float32),
            rng.normal(size=(4, 6)).astype(np.float32))


def _fused_adam_step(modules, generator):
    params = [p for m in modules.values() for p in m.parameters()]
    adam = torch.optim.Adam(params, lr=0.05, fused=True)
    for p in params:
        p.grad = torch.randn(p.shape, generator=generator, dtype=p.dtype)
    adam.step()
    return params


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_a_numpy_step_is_torchs_step(rnn):
    modules = _modules(rnn)
    x, h, c = _inputs()
    ours = _numpy_step(NumpyCopy(modules).current(), x, h, c)
    theirs = _torch_step(modules, x, h, c)
    for mine, torchs in zip(ours[:2], theirs[:2], strict=True):
        np.testing.assert_allclose(mine, torchs, atol=1e-6)


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_the_forms_follow_a_fused_adam_step_that_leaves_the_version_counters_alone(rnn):
    modules = _modules(rnn)
    forms = NumpyCopy(modules)
    x, h, c = _inputs()
    before = _numpy_step(forms.current(), x, h, c)[0]
    versions = [p._version for m in modules.values() for p in m.parameters()]
    params = _fused_adam_step(modules, torch.Generator().manual_seed(0))
    assert [p._version for p in params] == versions  # torch's fused kernel bumps none
    after = _numpy_step(forms.current(), x, h, c)
    fresh = _numpy_step(NumpyCopy(modules).current(), x, h, c)
    assert not np.array_equal(after[0], before)
    for followed, made_now in zip(after[:2], fresh[:2], strict=True):
        assert np.array_equal(followed, made_now)
    np.testing.assert_allclose(after[0], _torch_step(modules, x, h, c)[0], atol=1e-6)


def test_the_forms_follow_a_load_and_a_parameter_whose_memory_was_replaced():
    modules, other = _modules("lstm"), _modules("lstm")
    for m in other.values():
        for p in m.parameters():
            p.data.mul_(0.5)
    forms = NumpyCopy(modules)
    x, h, c = _inputs()
    forms.current()
    for name, module in modules.items():
        module.load_state_dict(other[name].state_dict())
    assert np.array_equal(_numpy_step(forms.current(), x, h, c)[0],
                          _numpy_step(NumpyCopy(other).current(), x, h, c)[0])
    weight = modules["rnn"].weight_hh_l0
    weight.data = weight.data * 2.0  # new memory, no in-place change
    assert np.array_equal(_numpy_step(forms.current(), x, h, c)[0],
                          _numpy_step(NumpyCopy(modules).current(), x, h, c)[0])


def test_copies_of_weights_off_the_cpu_float32_follow_the_version_counters():
    modules = {name: m.double() for name, m in _modules("gru").items()}
    forms = NumpyCopy(modules)
    x, h, c = _inputs()
    first = _numpy_step(forms.current(), x, h, c)[0]
    assert first.dtype == np.float32  # float32 copies of the float64 weights
    params = _fused_adam_step(modules, torch.Generator().manual_seed(0))
    assert np.array_equal(_numpy_step(forms.current(), x, h, c)[0], first)  # copies: unmarked
    weights_changed(params)
    assert np.array_equal(_numpy_step(forms.current(), x, h, c)[0],
                          _numpy_step(NumpyCopy(modules).current(), x, h, c)[0])


def test_a_copied_network_acts_with_its_own_weights():
    modules = _modules("lstm")
    forms = NumpyCopy(modules)
    x, h, c = _inputs()
    clone = copy.deepcopy(forms)  # the forms are taken again from the copied modules
    _fused_adam_step(modules, torch.Generator().manual_seed(0))
    assert np.array_equal(_numpy_step(clone.current(), x, h, c)[0],
                          _numpy_step(NumpyCopy(clone.modules).current(), x, h, c)[0])
    assert not np.array_equal(_numpy_step(clone.current(), x, h, c)[0],
                              _numpy_step(forms.current(), x, h, c)[0])


def test_an_lstm_step_is_torchs_gate_formulas_gate_by_gate_to_the_bit():
    rng = np.random.default_rng(3)
    x, h, c = (rng.normal(size=(5, n)).astype(np.float32) for n in (3, 4, 4))
    weights = (rng.normal(size=(3, 16)).astype(np.float32),
               rng.normal(size=(4, 16)).astype(np.float32), rng.normal(size=16).astype(np.float32))
    gates = x @ weights[0] + h @ weights[1] + weights[2]

    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    i, f, g, o = (gates[:, k * 4:(k + 1) * 4] for k in range(4))
    c_next = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h_next = sigmoid(o) * np.tanh(c_next)
    ours = lstm_step(x, h, c, weights)
    assert np.array_equal(ours[0], h_next) and np.array_equal(ours[1], c_next)
