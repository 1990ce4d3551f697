"""The on-policy learners' faster paths give what the general ones give, on the same inputs: the
rollout's columns read with their rows located once (ring lanes of a vector env, wrapped around,
with truncations and terminations inside the rollouts), the bootstrap values by the numpy pass,
GAE with its TD errors computed at once, and the gradient-norm clip without torch's checks."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
from stagerl.algorithms.on_policy import A2CConfig, PPOConfig, make_a2c_agent, make_ppo_agent
from stagerl.algorithms.on_policy.rollout import read_rollout, take_columns
from stagerl.utils.networks import clip_grad_norm
from stagerl.utils.returns import generalized_advantage_estimation
from trajectories.lanes import RingLanes


def short_episodes(num_envs: int, seed: int) -> rl.GymVectorEnv:
    """CartPole cut at 14 steps: rollouts hold terminations and truncations."""
    return rl.GymVectorEnv("CartPole-v1", num_envs=num_envs, seed=seed, max_episode_steps=14,
                           vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})


def rollouts_of(agent, env, steps: int) -> list:
    """Copies of the containers of every rollout ``agent`` learns from in ``steps`` env steps."""
    policy, seen = agent.policy, []
    learn = policy.learn

    def keep_then_learn(container):
        seen.append(copy.deepcopy(container))
        learn(container)

    policy.learn = keep_then_learn
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return seen


def wrapped(container: RingLanes) -> bool:
    """Some lane's states run past the end of its ring (private geometry, read for the test)."""
    return bool(((container._start + container._m) > container._P).any())


@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalised"])
def test_rollouts_read_with_rows_located_once_are_the_traces_own_columns(normalize):
    env = short_episodes(3, seed=1)
    agent = make_ppo_agent(env, PPOConfig(n_steps=5, batch_size=15, n_epochs=1,
                                          normalize_states=normalize), seed=1, device="cpu")
    containers = rollouts_of(agent, env, 15 * 12)
    assert len(containers) == 12 and all(isinstance(c, RingLanes) for c in containers)
    assert any(wrapped(c) for c in containers)
    ended = [c.take("terminal", np.arange(len(c))) for c in containers]
    truncated = [c.take("truncated", np.arange(len(c))) for c in containers]
    assert any(e.any() for e in ended) and any(t.any() for t in truncated)
    rng = np.random.default_rng(0)
    for container in containers:
        names = list(container.keys())
        assert "next_state" in names and "log_prob" in names
        for rows in (np.arange(len(container)), rng.permutation(len(container))[:7],
                     np.arange(0)):
            fast = take_columns(container, names, rows)
            assert list(fast) == names
            for name in names:
                general = container.take(name, rows)
                assert fast[name].dtype == general.dtype
                np.testing.assert_array_equal(fast[name], general, err_msg=name)


@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalised"])
def test_bootstrap_values_by_the_numpy_pass_are_the_torch_critics(normalize):
    env = short_episodes(4, seed=2)
    agent = make_a2c_agent(env, A2CConfig(normalize_states=normalize), seed=2, device="cpu")
    containers = rollouts_of(agent, env, 4 * 5 * 6)
    policy = agent.policy
    if normalize:
        assert policy.state_rms.count > 1  # statistics that normalise for real
    for container in containers:
        rows = np.arange(len(container))
        states = container.take("next_state", rows)
        steps = np.zeros(len(rows), dtype=np.int64)
        fast = policy.state_values(states, steps)
        with torch.no_grad():
            general = policy.model.value(policy.states_tensor(states)).numpy()
        assert fast.dtype == np.float32 and fast.shape == general.shape
        np.testing.assert_allclose(fast, general, rtol=1e-5, atol=1e-6)
        rollout = read_rollout(container, policy)
        ends = rollout["chain_end"] & ~rollout["terminal"] & rollout["valid"]
        assert ends.any()
        assert (rollout["bootstrap_value"][~ends] == 0).all()


def gae_one_step_at_a_time(rewards, values, gamma, lam, terminal=None):
    """The per-step recursion GAE was computed by (the general form)."""
    continues = None if terminal is None else 1.0 - (
        np.asarray(terminal, dtype=np.float64) if not isinstance(terminal, torch.Tensor)
        else terminal.to(torch.get_default_dtype()))
    like = rewards if rewards.dtype == values.dtype else rewards[:1] + values[:1]
    advantages = torch.empty_like(rewards, dtype=like.dtype) \
        if isinstance(rewards, torch.Tensor) else np.empty(rewards.shape, dtype=like.dtype)
    gae = 0.0
    for t in range(rewards.shape[0] - 1, -1, -1):
        if continues is None:
            delta = rewards[t] + gamma * values[t + 1] - values[t]
            gae = delta + gamma * lam * gae
        else:
            delta = rewards[t] + gamma * continues[t] * values[t + 1] - values[t]
            gae = delta + gamma * lam * continues[t] * gae
        advantages[t] = gae
    return advantages


@pytest.mark.parametrize("lanes", [(), (1,), (8,)], ids=["single", "one-lane", "eight-lanes"])
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float32, np.float64),
                                    (np.float64, np.float64)], ids=["f32", "mixed", "f64"])
@pytest.mark.parametrize("terminal", ["none", "bool", "float"])
def test_gae_with_td_errors_at_once_is_bit_for_bit_the_per_step_recursion(lanes, dtypes,
                                                                          terminal):
    rng = np.random.default_rng(len(lanes) * 7 + len(terminal))
    for length, gamma, lam in ((1, 0.99, 0.95), (5, 0.98, 0.8), (64, 1.0, 1.0), (33, 0.9, 0.0),
                               (17, 0.0, 0.5)):
        rewards = (rng.standard_normal((length, *lanes)) * 3).astype(dtypes[0])
        values = (rng.standard_normal((length + 1, *lanes)) * 10).astype(dtypes[1])
        ends = rng.random((length, *lanes)) < 0.2
        cut = None if terminal == "none" else ends if terminal == "bool" else ends * 1.0
        fast = generalized_advantage_estimation(rewards, values, gamma, lam, terminal=cut)
        general = gae_one_step_at_a_time(rewards, values, gamma, lam, terminal=cut)
        assert fast.dtype == general.dtype
        np.testing.assert_array_equal(fast, general)
        if terminal != "float" and dtypes[0] == dtypes[1]:  # tensors: the same recursion
            as_tensor = None if cut is None else torch.as_tensor(cut)
            fast = generalized_advantage_estimation(torch.as_tensor(rewards),
                                                    torch.as_tensor(values), gamma, lam,
                                                    terminal=as_tensor)
            general = gae_one_step_at_a_time(torch.as_tensor(rewards), torch.as_tensor(values),
                                             gamma, lam, terminal=as_tensor)
            assert torch.equal(fast, general)


def test_gae_on_a_vector_runs_rollout_is_the_per_step_recursion():
    env = short_episodes(4, seed=3)
    agent = make_a2c_agent(env, A2CConfig(n_steps=16, gae_lambda=0.9), seed=3, device="cpu")
    for container in rollouts_of(agent, env, 4 * 16 * 3):
        rollout = read_rollout(container, agent.policy)
        assert rollout["chain_end"][:-1].any()  # episodes end inside the rollout
        rewards = rollout["reward"] + 0.99 * rollout["bootstrap_value"]
        values = np.concatenate([rollout["value"], np.zeros_like(rollout["value"][:1])])
        np.testing.assert_array_equal(
            generalized_advantage_estimation(rewards, values, 0.99, 0.9, rollout["chain_end"]),
            gae_one_step_at_a_time(rewards, values, 0.99, 0.9, rollout["chain_end"]))


@pytest.mark.parametrize("max_norm", [1e-3, 0.5, 1e6])
def test_the_lean_gradient_clip_is_torchs_clip_bit_for_bit(max_norm):
    generator = torch.Generator().manual_seed(0)
    shapes = [(64, 4), (64,), (2, 64), (2,), (1,)]
    for scale in (1e-4, 1.0, 1e3):
        grads = [torch.randn(shape, generator=generator) * scale for shape in shapes]
        mine = [torch.nn.Parameter(torch.zeros(shape)) for shape in shapes]
        theirs = [torch.nn.Parameter(torch.zeros(shape)) for shape in shapes]
        for p, q, g in zip(mine, theirs, grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        mine[1].grad = theirs[1].grad = None  # a parameter without a gradient is left out
        total = clip_grad_norm(mine, max_norm)
        expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, foreach=True)
        assert torch.equal(total, expected)
        for p, q in zip(mine, theirs, strict=True):
            assert (p.grad is None and q.grad is None) or torch.equal(p.grad, q.grad)


def test_a_gradient_step_relinks_gradients_someone_set_to_none():
    env = short_episodes(2, seed=4)
    agent = make_a2c_agent(env, seed=4, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(20, progress=False))  # steps taken: parameters listed
    policy = agent.policy
    before = policy.model.flat_parameters()[0].detach().clone()
    policy.model.zero_grad()  # every parameter's gradient None: not the flat gradients' views
    assert all(p.grad is None for p in policy.model.parameters())
    rl.run(agent, env, rl.StopAfterNSteps(20, progress=False))
    assert all(p.grad is not None for p in policy.model.parameters())
    assert not torch.equal(policy.model.flat_parameters()[0], before)  # the steps reached it



def test_the_categorical_draws_reductions_are_the_array_methods_ones():
    from stagerl.utils.action_distribution import inverse_cdf, numpy_log_softmax

    rng = np.random.default_rng(5)
    for rows, n in ((8, 2), (3, 7), (1, 1)):
        logits = (rng.standard_normal((rows, n)) * 4).astype(np.float32)
        logits[0, -1] = -np.inf  # an illegal action, as the masked draw gives it
        if n == 1:
            logits[0, 0] = 3.0
        z = logits - logits.max(axis=-1, keepdims=True)
        general = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
        fast = numpy_log_softmax(logits)
        assert fast.dtype == general.dtype
        np.testing.assert_array_equal(fast, general)
        u = rng.random((rows, 1))
        cdf = np.cumsum(np.exp(general), axis=-1)
        np.testing.assert_array_equal(inverse_cdf(fast, u),
                                      np.minimum((cdf < u).sum(axis=-1), n - 1))
