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


# ---- the action distributions of each kind of space ------------------------------------


def _torch_reference(kind, logits, nvec=None):
    if kind == "categorical":
        return torch.distributions.Categorical(logits=logits)
    if kind == "bernoulli":
        return torch.distributions.Independent(torch.distributions.Bernoulli(logits=logits), 1)
    raise ValueError(kind)


def test_categorical_and_bernoulli_match_torch_distributions():
    from stagerl.utils.distributions import Bernoulli, Categorical

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    other = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    actions = torch.tensor([0, 3, 1, 2, 2, 0])
    cat, ref, ref_other = Categorical(4), _torch_reference("categorical", logits), \
        _torch_reference("categorical", other)
    assert torch.allclose(cat.log_prob((logits,), actions), ref.log_prob(actions))
    assert torch.allclose(cat.entropy((logits,)), ref.entropy())
    assert torch.allclose(cat.kl((logits,), (other,)),
                          torch.distributions.kl_divergence(ref, ref_other))
    bits = (torch.rand(6, 4, generator=generator) < 0.5).to(torch.int8)
    bern, ref, ref_other = Bernoulli((4,)), _torch_reference("bernoulli", logits), \
        _torch_reference("bernoulli", other)
    assert torch.allclose(bern.log_prob((logits,), bits), ref.log_prob(bits.double()))
    assert torch.allclose(bern.entropy((logits,)), ref.entropy())
    assert torch.allclose(bern.kl((logits,), (other,)),
                          torch.distributions.kl_divergence(ref, ref_other))


def test_multi_categorical_is_the_sum_of_its_dimensions():
    from stagerl.utils.distributions import MultiCategorical

    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(5, 2 + 3, generator=generator, dtype=torch.float64)
    other = torch.randn(5, 2 + 3, generator=generator, dtype=torch.float64)
    actions = torch.tensor([[0, 2], [1, 0], [1, 1], [0, 0], [1, 2]])
    dist = MultiCategorical([2, 3])
    parts = [torch.distributions.Categorical(logits=x) for x in logits.split([2, 3], dim=1)]
    others = [torch.distributions.Categorical(logits=x) for x in other.split([2, 3], dim=1)]
    expected = parts[0].log_prob(actions[:, 0]) + parts[1].log_prob(actions[:, 1])
    assert torch.allclose(dist.log_prob((logits,), actions), expected)
    assert torch.allclose(dist.entropy((logits,)), parts[0].entropy() + parts[1].entropy())
    kl = sum(torch.distributions.kl_divergence(p, q) for p, q in zip(parts, others, strict=True))
    assert torch.allclose(dist.kl((logits,), (other,)), kl)


@pytest.mark.parametrize("kind", ["categorical", "multi", "bernoulli"])
def test_numpy_draws_follow_the_probabilities_and_their_log_probabilities(kind):
    import gymnasium
    import numpy as np

    from stagerl.utils.distributions import action_distribution

    space = {"categorical": gymnasium.spaces.Discrete(3),
             "multi": gymnasium.spaces.MultiDiscrete([3, 2]),
             "bernoulli": gymnasium.spaces.MultiBinary(2)}[kind]
    dist = action_distribution(space)
    out = np.tile(np.linspace(-1.0, 1.0, dist.n_outputs, dtype=np.float32), (20_000, 1))
    env_action, stored, log_prob = dist.sample(out, None, np.random.default_rng(0), space)
    assert env_action is stored and all(space.contains(a) for a in env_action[:50])
    # each draw's log-probability is the torch layer's for the same action
    expected = dist.log_prob((torch.as_tensor(out[:50]),), torch.as_tensor(stored[:50]))
    np.testing.assert_allclose(log_prob[:50], expected.numpy(), rtol=1e-5, atol=1e-6)
    # and the frequencies are the probabilities
    values, counts = np.unique(stored.reshape(len(stored), -1), axis=0, return_counts=True)
    probs = np.exp(dist.log_prob((torch.as_tensor(out[:len(values)]),),
                                 torch.as_tensor(values.reshape(-1, *dist.action_shape))).numpy())
    np.testing.assert_allclose(counts / len(stored), probs, atol=0.015)
    assert dist.mode(out[:2], space).shape == (2, *dist.action_shape)
