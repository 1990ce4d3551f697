"""ERWR and REPS: ERWR's weights against a hand computation, REPS's dual and its gradient against
finite differences and its solution's optimality conditions, one update of each pinned on a
tiny problem (a policy with one free distribution: the weighted maximum-likelihood solution is
the weighted action counts), both on a vector env's lanes, learning smoke tests, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)
from scripted_envs import scripted_vector_env

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.algorithms import ERWRConfig, REPSConfig, make_erwr_agent, make_reps_agent
from stagerl.algorithms.on_policy import reps
from stagerl.algorithms.on_policy.baselines import linear_features
from stagerl.algorithms.on_policy.erwr import LBFGS, erwr_weights, lbfgs_minimise
from stagerl.algorithms.on_policy.reps import (
    context_features,
    dual_gradient_and_hessian,
    minimise_dual,
    reps_dual,
    reps_weights,
)

F64 = dict(dtype=torch.float64)
RETURNS = np.array([1.0, 2.0, 0.5, 3.0, 1.5])
FEATURES = np.array([[0.5, -1.0], [-0.5, 0.0], [1.0, 1.0], [-1.0, 0.5], [0.0, -0.5]])
FEATURES = FEATURES - FEATURES.mean(axis=0)


# ---- ERWR ------------------------------------------------------------------------------------


def test_erwr_weights_are_the_centred_advantages_shifted_to_be_positive():
    # mean 2, population std sqrt(2/3): centred -1.2247, 1.2247, 0; shifted by +1.2247 + 1e-8
    weights = erwr_weights(torch.tensor([1.0, 3.0, 2.0], **F64))
    s = np.sqrt(1.5)
    assert weights.tolist() == pytest.approx([1e-8, 2 * s + 1e-8, s + 1e-8], rel=1e-7, abs=1e-15)
    assert erwr_weights(torch.tensor([1.0, 3.0, 2.0], **F64), normalize=False).tolist() == \
        pytest.approx([1e-8, 2.0, 1.0])


def tiny_batch(actions, advantages):
    """Transitions from the all-zeros observation (a linear actor's output is its bias: one free
    categorical distribution), each with its action and advantage."""
    n = len(actions)
    return {"state": torch.zeros(n, 3), "raw_state": torch.zeros(n, 3),
            "action": torch.tensor(actions), "advantage": torch.tensor(advantages),
            "return": torch.tensor(advantages), "step": torch.arange(n),
            "reward": torch.ones(n)}


def tiny_env():
    return rl.GymVectorEnv(scripted_vector_env((2, 3), AutoresetMode.SAME_STEP))


def action_probabilities(agent):
    with torch.no_grad():
        return agent.policy.model.distribution(torch.zeros(1, 3))[0].softmax(-1)[0].tolist()


def test_one_erwr_update_is_the_weighted_maximum_likelihood_fit():
    agent = make_erwr_agent(tiny_env(), ERWRConfig(net_arch=(), episodes_per_update=2,
                                                   max_opt_iter=50), seed=0, device="cpu")
    actions, advantages = [0, 1, 1, 0, 1], [1.0, 3.0, 2.0, 0.0, 2.0]
    agent.policy.update(tiny_batch(actions, advantages))
    # Centring and scaling, then shifting to the smallest, leaves w proportional to
    # advantage - 0: action 0 weighs 1 + 0, action 1 weighs 3 + 2 + 2 (and 1e-8 each).
    by_hand = [1 / 8, 7 / 8]
    assert action_probabilities(agent) == pytest.approx(by_hand, abs=1e-4)


# ---- REPS ------------------------------------------------------------------------------------


def test_the_reps_dual_by_hand_and_its_gradient_against_finite_differences():
    eta, v = 2.0, np.array([0.5, -1.0])
    delta = RETURNS - FEATURES @ v
    by_hand = eta * 0.3 + eta * np.log(np.mean(np.exp(delta / eta)))
    value = reps_dual(torch.tensor(eta, **F64), torch.tensor(v, **F64),
                      torch.tensor(RETURNS, **F64), torch.tensor(FEATURES, **F64), 0.3)
    assert float(value) == pytest.approx(by_hand, rel=1e-12)
    assert float(value) == pytest.approx(2.749897319868357, rel=1e-12)

    def dual(x):
        return float(reps_dual(torch.tensor(x[0], **F64), torch.tensor(x[1:], **F64),
                               torch.tensor(RETURNS, **F64), torch.tensor(FEATURES, **F64),
                               0.3, l2_reg=0.01))

    for point in ([2.0, 0.5, -1.0], [0.05, 3.0, 1.0], [40.0, -2.0, 0.0]):
        x = torch.tensor(point, **F64, requires_grad=True)
        (gradient,) = torch.autograd.grad(
            reps_dual(x[0], x[1:], torch.tensor(RETURNS, **F64), torch.tensor(FEATURES, **F64),
                      0.3, l2_reg=0.01), x)
        h = 1e-6 * max(1.0, abs(point[0]))
        numeric = [(dual(np.add(point, h * e)) - dual(np.subtract(point, h * e))) / (2 * h)
                   for e in np.identity(3)]
        assert gradient.tolist() == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def autograd_gradient_and_hessian(dual_of, x):
    """The general path: autograd's gradient, then ``torch.autograd.functional.hessian``."""
    point = x.clone().requires_grad_(True)
    return (torch.autograd.grad(dual_of(point), point)[0],
            torch.autograd.functional.hessian(dual_of, x))


def cartpole_like_duals():
    """Duals of CartPole's size and shape: returns to go of episodes of 10..500 steps and the
    centred context features of random states at their time steps."""
    rng = np.random.default_rng(3)
    for episodes in (3, 16):
        lengths = rng.integers(10, 500, size=episodes)
        returns = np.concatenate([(1 - 0.99 ** np.arange(n, 0, -1)) / 0.01 for n in lengths])
        steps = np.concatenate([np.arange(n) for n in lengths])
        features = context_features(rng.normal(size=(len(steps), 4)), steps)
        yield returns, features


def test_the_duals_derivatives_are_autograds_hessian_bit_for_bit():
    for returns, features in cartpole_like_duals():
        r, f = torch.tensor(returns, **F64), torch.tensor(features, **F64)
        for l2 in (0.0, 0.01):
            def dual_of(x, l2=l2, r=r, f=f):
                return reps_dual(x[0], x[1:], r, f, 0.5, l2)
            for eta in (0.05, 1.0, 15.0):
                x = torch.tensor([eta, *np.linspace(-2, 2, features.shape[1])], **F64)
                gradient, hessian = dual_gradient_and_hessian(dual_of, x)
                general = autograd_gradient_and_hessian(dual_of, x)
                assert torch.equal(gradient, general[0]) and torch.equal(hessian, general[1])
                assert not gradient.requires_grad and not hessian.requires_grad


def test_the_duals_minimisation_is_the_one_with_autograds_hessian_bit_for_bit(monkeypatch):
    problems = [(returns, features, 0.5, l2, 15.0, np.zeros(features.shape[1]), 50)
                for returns, features in cartpole_like_duals() for l2 in (0.0, 0.01)]
    fast = [minimise_dual(*problem) for problem in problems]
    monkeypatch.setattr(reps, "dual_gradient_and_hessian", autograd_gradient_and_hessian)
    general = [minimise_dual(*problem) for problem in problems]
    for (eta, v, dual), (eta_general, v_general, dual_general) in zip(fast, general,
                                                                       strict=True):
        assert eta == eta_general and dual == dual_general
        assert np.array_equal(v, v_general)


def test_the_duals_minimum_holds_the_kl_bound_and_the_feature_averages():
    eta, v, dual = minimise_dual(RETURNS, FEATURES, 0.3, 0.0, 15.0, np.zeros(2), 50)
    q = reps_weights(RETURNS - FEATURES @ v, eta)
    q = q / q.sum()
    assert (q * np.log(q * len(q))).sum() == pytest.approx(0.3, abs=1e-6)  # the bound binds
    assert q @ FEATURES == pytest.approx([0.0, 0.0], abs=1e-6)  # the feature averages held
    assert q @ RETURNS > RETURNS.mean()  # and the returns improved
    assert [eta, *v.tolist(), dual] == pytest.approx(
        [0.10484499, -1.24057563, 0.0890256, 1.68300354], rel=1e-6)


def test_one_reps_update_fits_the_policy_to_the_duals_weights():
    agent = make_reps_agent(tiny_env(), REPSConfig(net_arch=(), episodes_per_update=2,
                                                   max_opt_iter=50), seed=0, device="cpu")
    actions = [0, 1, 1, 0, 1]
    returns = [1.0, 3.0, 2.0, 0.0, 2.0]
    batch = tiny_batch(actions, returns)
    # one context feature that varies (and its square): the averages leave the weights room
    batch["raw_state"] = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0],
                                       [0.0, 0.0, 1.0], [0.0, 0.0, 3.0]])
    batch["step"] = torch.zeros(5, dtype=torch.int64)
    agent.policy.update(batch)
    features = context_features(batch["raw_state"].numpy(), batch["step"].numpy())
    eta, v, _ = minimise_dual(np.array(returns), features, 0.5, 0.0, 15.0,
                              np.zeros(features.shape[1]), 50)
    assert agent.policy.eta == pytest.approx(eta) and agent.policy.dual_v == pytest.approx(v)
    q = reps_weights(np.array(returns) - features @ v, eta)
    by_hand = [q[[0, 3]].sum() / q.sum(), q[[1, 2, 4]].sum() / q.sum()]
    assert action_probabilities(agent) == pytest.approx(by_hand, abs=1e-4)
    assert agent.policy.stats["weights_kl"] == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize("make, config", [
    (make_erwr_agent, ERWRConfig(episodes_per_update=3, max_episode_steps=6)),
    (make_reps_agent, REPSConfig(episodes_per_update=3, max_episode_steps=6, gamma=0.5)),
])
def test_on_a_vector_env_each_update_learns_from_whole_episodes_at_their_time_steps(make,
                                                                                   config):
    env = rl.GymVectorEnv(scripted_vector_env((2, 3, 4), AutoresetMode.SAME_STEP))
    agent = make(env, config, seed=0, device="cpu")
    batches, update = [], agent.policy.update

    def record(batch):
        coefficients = agent.policy.baseline.coefficients
        batches.append(({k: v.numpy().copy() for k, v in batch.items()},
                        None if coefficients is None else coefficients.copy()))
        update(batch)

    agent.policy.update = record
    rl.run(agent, env, rl.StopAfterNSteps(3 * 30, progress=False))
    assert len(batches) >= 5
    for batch, coefficients in batches:
        states = batch["raw_state"]
        assert batch["step"].tolist() == states[:, 2].tolist()  # [lane, episode, t]
        # whole episodes: every lane's rows end with its episode's end
        for lane in np.unique(states[:, 0]):
            rows = states[:, 0] == lane
            assert batch["terminal"][rows][-1] or batch["truncated"][rows][-1]
        # the returns to go, gamma 0.5, a truncated end bootstrapped by the baseline before
        # it (the batch is time-major: each lane's rows are its own, in time order)
        gamma = agent.policy.gamma
        for lane in np.unique(states[:, 0]):
            rows = np.flatnonzero(states[:, 0] == lane)
            following = 0.0
            for i in reversed(rows):
                if batch["terminal"][i]:
                    following = 0.0
                elif batch["truncated"][i]:
                    final = states[i] + np.array([0, 0, 1])
                    following = 0.0 if coefficients is None else float(
                        (linear_features(final[None], [batch["step"][i] + 1]) @ coefficients)[0])
                following = batch["reward"][i] + gamma * following
                assert batch["return"][i] == pytest.approx(following, rel=1e-5, abs=1e-3)


# ---- named experiments, learning, bad input ------------------------------------------------


def test_erwr_and_reps_learn_cartpole():  # CI smoke tests: random play ~22
    erwr = experiments.train("erwr-cartpole", steps=60_000, seed=0, device="cpu")
    reps = experiments.train("reps-cartpole", steps=60_000, seed=0, device="cpu")
    assert erwr["eval_return_mean"] >= 100 and reps["eval_return_mean"] >= 150, (
        erwr["eval_return_mean"], reps["eval_return_mean"])


def test_bad_settings_and_agents_are_refused():
    with pytest.raises(ValueError, match="REPSConfig: epsilon must be a finite number > 0, got "
                                         "epsilon=0.0"):
        REPSConfig(epsilon=0)
    with pytest.raises(ValueError, match="ERWRConfig: max_opt_iter must be an int >= 1"):
        ERWRConfig(max_opt_iter=0)
    with pytest.raises(TypeError, match="make_reps_agent needs a REPSConfig, got ERWRConfig"):
        make_reps_agent(tiny_env(), ERWRConfig())


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", ["erwr-cartpole", "reps-cartpole"])
def test_erwr_and_reps_cartpole_reach_475_within_their_budgets(name, seed):
    # the budgets: erwr-cartpole 500k steps, reps-cartpole 200k (their own `steps`)
    summary = experiments.train(name, seed=seed, device="cpu", progress=False)
    assert summary["eval_return_mean"] >= 475


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("make, config", [
    (make_erwr_agent, ERWRConfig(episodes_per_update=4, max_opt_iter=3)),
    (make_reps_agent, REPSConfig(episodes_per_update=4, max_opt_iter=3))])
def test_a_copy_mid_run_continues_exactly_as_the_original(make, config, how):
    """torch pickles an optimiser's param groups and state only; L-BFGS's step needs two more
    attributes, which the copy gets back as it is built. REPS's dual solution (the next
    update's start) goes with the policy's state."""
    import copy
    import pickle

    clone = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "deepcopy": copy.deepcopy}[how]
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    agent = make(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
    assert agent.policy.n_updates >= 1
    copied_agent, copied_env = clone((agent, env))
    if make is make_reps_agent:
        assert copied_agent.state_dict()["dual"]["eta"] == agent.policy.eta != 15.0
    for a, e in ((agent, env), (copied_agent, copied_env)):
        rl.run(a, e, rl.StopAfterNSteps(300, progress=False))
    assert copied_agent.policy.n_updates == agent.policy.n_updates >= 2
    for key, value in agent.policy.model.state_dict().items():
        assert torch.equal(value, copied_agent.policy.model.state_dict()[key]), key
    assert copied_agent.policy.stats == agent.policy.stats


def _quadratic_fit(optimiser, x):
    return lbfgs_minimise(optimiser, lambda: ((x - torch.arange(3.0)) ** 2).sum())


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_the_l_bfgs_of_erwr_and_reps_is_the_same_after_a_copy_and_steps_as_the_original(how):
    """Its pickled state (what a checkpoint holds) is the original's, settings included, and
    the copy minimises as the original does; a plain torch L-BFGS copied still minimises (it
    gets the attributes its step reads back at its first problem)."""
    import copy
    import pickle

    clone = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "deepcopy": copy.deepcopy}[how]
    x = torch.zeros(3, requires_grad=True)
    x.grad = torch.zeros(3)
    optimiser = LBFGS([x], lr=1.0, max_iter=5)
    copied = clone(optimiser)
    assert copied.__getstate__()["defaults"] == optimiser.defaults
    assert copied._params[0] is copied.param_groups[0]["params"][0]
    y = copied._params[0]
    y.grad = torch.zeros(3)  # (pickle leaves gradients out; the model's relink gives them)
    assert _quadratic_fit(copied, y) == _quadratic_fit(optimiser, x)
    assert torch.equal(x, y) and torch.allclose(x, torch.arange(3.0))

    plain = clone(torch.optim.LBFGS([torch.zeros(3, requires_grad=True)], max_iter=5,
                                    line_search_fn="strong_wolfe"))
    assert not hasattr(plain, "_params")
    z = plain.param_groups[0]["params"][0]
    z.grad = torch.zeros(3)
    assert _quadratic_fit(plain, z) < 1e-10
