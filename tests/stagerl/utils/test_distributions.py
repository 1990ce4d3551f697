import pytest
import torch

from stagerl.utils import (
    diag_gaussian_entropy,
    diag_gaussian_log_prob,
    diag_gaussian_sample,
    gaussian_log_prob,
    squashed_diag_gaussian_log_prob,
)


def reference(mean, log_std):
    return torch.distributions.Normal(mean, log_std.exp())


def test_log_prob_matches_torch_distributions():
    generator = torch.Generator().manual_seed(0)
    mean = torch.randn(8, 3, generator=generator, dtype=torch.float64)
    log_std = torch.randn(3, generator=generator, dtype=torch.float64) * 0.5
    x = torch.randn(8, 3, generator=generator, dtype=torch.float64)
    expected = reference(mean, log_std).log_prob(x)
    assert torch.allclose(gaussian_log_prob(mean, log_std, x), expected)
    assert torch.allclose(diag_gaussian_log_prob(mean, log_std, x), expected.sum(-1))


def test_entropy_matches_torch_distributions():
    log_std = torch.tensor([[-1.0, 0.0, 0.7]], dtype=torch.float64)
    expected = reference(torch.zeros_like(log_std), log_std).entropy().sum(-1)
    assert torch.allclose(diag_gaussian_entropy(log_std), expected)


def test_log_prob_is_differentiable():
    mean = torch.zeros(2, requires_grad=True)
    log_std = torch.zeros(2, requires_grad=True)
    diag_gaussian_log_prob(mean, log_std, torch.tensor([1.0, -1.0])).backward()
    assert mean.grad.tolist() == [1.0, -1.0]          # d/dmu = (x - mu) / sigma^2
    assert log_std.grad.tolist() == [0.0, 0.0]        # z^2 - 1 with z = +-1


def test_sample_is_reproducible_and_has_the_right_moments():
    mean, log_std = torch.tensor([1.0, -2.0]), torch.tensor([0.0, -1.0])
    a = diag_gaussian_sample(mean, log_std, torch.Generator().manual_seed(3))
    b = diag_gaussian_sample(mean, log_std, torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    draws = diag_gaussian_sample(mean.expand(20000, 2), log_std, torch.Generator().manual_seed(4))
    assert draws.mean(0).tolist() == pytest.approx([1.0, -2.0], abs=0.03)
    assert draws.std(0).tolist() == pytest.approx([1.0, torch.e**-1], abs=0.03)


def test_squashed_log_prob_matches_transformed_distribution():
    mean = torch.tensor([[0.3, -0.2]], dtype=torch.float64)
    log_std = torch.tensor([-0.5, 0.1], dtype=torch.float64)
    u = torch.tensor([[0.8, -1.5]], dtype=torch.float64)
    squashed = torch.distributions.TransformedDistribution(
        reference(mean, log_std), [torch.distributions.TanhTransform()])
    expected = squashed.log_prob(torch.tanh(u)).sum(-1)
    assert torch.allclose(squashed_diag_gaussian_log_prob(mean, log_std, u), expected)
    assert torch.isfinite(squashed_diag_gaussian_log_prob(mean, log_std, u * 100)).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_helpers_stay_on_the_device():
    mean = torch.zeros(4, 2, device="cuda")
    log_std = torch.zeros(2, device="cuda")
    x = torch.ones(4, 2, device="cuda")
    assert diag_gaussian_log_prob(mean, log_std, x).device.type == "cuda"
    assert diag_gaussian_entropy(log_std).device.type == "cuda"
    generator = torch.Generator(device="cuda").manual_seed(0)
    assert diag_gaussian_sample(mean, log_std, generator).device.type == "cuda"
    assert squashed_diag_gaussian_log_prob(mean, log_std, x).device.type == "cuda"
