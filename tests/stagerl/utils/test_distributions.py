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


def test_a_sample_of_equal_shapes_draws_what_the_broadcast_draw_draws():
    # mean and log_std of one shape skip broadcast_shapes: the draw must be the general path's
    mean, log_std = torch.randn(7, 3), torch.randn(7, 3)
    fast = diag_gaussian_sample(mean, log_std, torch.Generator().manual_seed(5))
    noise = torch.randn(torch.broadcast_shapes(mean.shape, log_std.shape),
                        generator=torch.Generator().manual_seed(5))
    assert torch.equal(fast, mean + torch.exp(log_std) * noise)
    wide = diag_gaussian_sample(mean[:1], log_std, torch.Generator().manual_seed(5))
    assert wide.shape == (7, 3) and torch.equal(wide, mean[:1] + torch.exp(log_std) * noise)


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


# ---- the categorical under a legal-action mask -------------------------------------------


def test_a_masked_categorical_is_the_categorical_of_the_legal_actions():
    from stagerl.utils.distributions import Categorical, masked_categorical_log_prob_entropy

    generator = torch.Generator().manual_seed(2)
    logits = torch.randn(4, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, True, False, True, False], [False, False, True, False, False],
                         [True, True, True, True, True], [False, True, False, True, True]])
    actions = torch.tensor([3, 2, 0, 4])
    dist = Categorical(5)
    log_prob, entropy = dist.log_prob_entropy((logits,), actions, True, mask)
    for row in range(4):  # each row: torch's categorical over that row's legal logits alone
        legal = mask[row].nonzero().squeeze(-1)
        reference = torch.distributions.Categorical(logits=logits[row, legal])
        position = (legal == actions[row]).nonzero().item()
        assert log_prob[row].item() == pytest.approx(
            reference.log_prob(torch.tensor(position)).item(), abs=1e-12)
        assert entropy[row].item() == pytest.approx(reference.entropy().item(), abs=1e-12)
    assert torch.equal(dist.log_prob((logits,), actions, mask), log_prob)
    assert torch.equal(dist.entropy((logits,), mask), entropy)
    same = masked_categorical_log_prob_entropy(logits, actions, mask)
    assert torch.equal(same[0], log_prob) and torch.equal(same[1], entropy)
    (log_prob.sum() + entropy.sum()).backward()
    assert (logits.grad[~mask] == 0).all() and (logits.grad[mask] != 0).any()
    assert torch.isfinite(logits.grad).all()
    # without a mask: the plain categorical, bit for bit
    plain = dist.log_prob_entropy((logits,), actions, True)
    assert torch.equal(plain[0], dist.log_prob((logits,), actions))


def test_masked_numpy_draws_keep_to_the_legal_actions_with_the_torch_log_probs():
    import gymnasium
    import numpy as np

    from stagerl.utils.distributions import Categorical

    space, dist = gymnasium.spaces.Discrete(4), Categorical(4)
    out = np.tile(np.array([2.0, -1.0, 0.5, 3.0], dtype=np.float32), (20_000, 1))
    mask = np.tile(np.array([True, True, True, False]), (20_000, 1))
    mask[::2] = [False, True, True, False]  # rows of two kinds
    env_action, stored, log_prob = dist.sample(out, None, np.random.default_rng(0), space, mask)
    assert env_action is stored and mask[np.arange(len(mask)), stored].all()
    expected = dist.log_prob((torch.as_tensor(out),), torch.as_tensor(stored),
                             torch.as_tensor(mask))
    np.testing.assert_allclose(log_prob, expected.numpy(), rtol=1e-5, atol=1e-6)
    for rows in (slice(0, None, 2), slice(1, None, 2)):  # frequencies: the legal probabilities
        legal = mask[rows][0]
        probs = np.where(legal, np.exp(out[0] - out[0][legal].max()), 0.0)
        counts = np.bincount(stored[rows], minlength=4) / len(stored[rows])
        np.testing.assert_allclose(counts, probs / probs.sum(), atol=0.015)
    # the mode is the best legal action (row 0 may not play 0 nor 3, row 1 not 3)
    assert dist.mode(out[:2], space, mask[:2]).tolist() == [2, 0]
    assert dist.mode(out[:2], space).tolist() == [3, 3]


def test_a_draw_above_the_rounded_cumulative_sum_lands_on_the_last_legal_action():
    import gymnasium
    import numpy as np

    from stagerl.utils.distributions import Categorical

    class AlmostOne:  # a uniform above the float32 sum of the legal probabilities (0.99999994)
        def random(self, shape):
            return np.full(shape, 0.99999997)

    out = np.array([[0.1, 0.2, 0.3, 0.0, 0.0]], dtype=np.float32)
    mask = np.array([[True, True, True, False, False]])
    action, _, log_prob = Categorical(5).sample(out, None, AlmostOne(),
                                                gymnasium.spaces.Discrete(5), mask)
    assert action.tolist() == [2] and np.isfinite(log_prob).all()


@pytest.mark.parametrize("space", ["MultiDiscrete", "MultiBinary", "Box"])
def test_every_distribution_but_the_categorical_refuses_a_mask(space):
    import gymnasium
    import numpy as np

    from stagerl.utils.distributions import action_distribution

    space = {"MultiDiscrete": gymnasium.spaces.MultiDiscrete([3, 2]),
             "MultiBinary": gymnasium.spaces.MultiBinary(2),
             "Box": gymnasium.spaces.Box(-1.0, 1.0, (2,))}[space]
    dist = action_distribution(space)
    out = np.zeros((1, dist.n_outputs), dtype=np.float32)
    log_std = np.zeros(dist.n_outputs, dtype=np.float32)
    mask = np.ones((1, dist.n_outputs), dtype=bool)
    params = dist.params(torch.as_tensor(out), torch.as_tensor(log_std))
    actions = torch.zeros((1, *dist.action_shape))
    for call in (lambda: dist.sample(out, log_std, np.random.default_rng(0), space, mask),
                 lambda: dist.mode(out, space, mask),
                 lambda: dist.log_prob_entropy(params, actions, True, torch.as_tensor(mask))):
        with pytest.raises(TypeError, match="legal-action masks are for Discrete action spaces"):
            call()
    dist.sample(out, log_std, np.random.default_rng(0), space)  # without a mask: as ever
