"""The on-policy acting path gives what its general formulas give, bit for bit, on the same
inputs: the running statistics against the general update (an update of no rows changes
nothing), the distributions' draws against their formulas (Gaussian and categorical,
legal-action masks, the deterministic mode), and reward normalisation's bookkeeping and the
draws against the general ones over whole runs on vector envs (lanes that did not step,
episodes ending, every lane ending at once), with normalisation on and off."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent
from stagerl.algorithms.on_policy.base import OnPolicy
from stagerl.algorithms.on_policy.networks import RunningMeanStd
from stagerl.core.env import VectorEnv
from stagerl.utils.action_distribution import numpy_log_softmax
from stagerl.utils.distributions import Categorical, DiagGaussian


def assert_identical(fast, general) -> None:
    """Same type (numpy scalar or array), dtype, shape and bytes (NaNs and signed zeros too)."""
    assert type(fast) is type(general)
    fast, general = np.asarray(fast), np.asarray(general)
    assert fast.dtype == general.dtype and fast.shape == general.shape
    assert fast.tobytes() == general.tobytes()


# ---- the running statistics ---------------------------------------------------------------------
def general_update(rms: RunningMeanStd, x: np.ndarray) -> None:
    """The general update: numpy's mean and variance of the rows (none: no change)."""
    if len(x) == 0:
        return
    n, mean, var = len(x), x.mean(axis=0), x.var(axis=0)
    total = rms.count + n
    delta = mean - rms.mean
    rms.mean = rms.mean + delta * n / total
    rms.var = (rms.var * rms.count + var * n + delta**2 * rms.count * n / total) / total
    rms.count = total


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (3,)], ids=["scalars", "vectors"])
def test_updates_of_several_rows_and_the_normalisation_are_the_general_ones(dtype, shape):
    rng = np.random.default_rng(2)
    fast, general = RunningMeanStd(shape), RunningMeanStd(shape)
    with np.errstate(all="ignore"):
        for step, rows in enumerate([1, 4, 0, 2, 1, 64, 3, 0, 9]):
            x = (rng.standard_normal((rows, *shape)) * 10.0 ** (step - 4)).astype(dtype)
            if step == 5:
                x[3] = 1e300 if dtype == np.float64 else 3e38  # a huge return
            fast.update(x)
            general_update(general, x)
            for a, b in ((fast.mean, general.mean), (fast.var, general.var)):
                assert_identical(a, b)
            assert fast.count == general.count
            states = (rng.standard_normal((5, *shape)) * 3).astype(dtype)
            z = (states - general.mean) / np.sqrt(general.var + general.epsilon)
            assert_identical(fast.normalize(states),
                             np.clip(z, -general.clip, general.clip).astype(np.float32))


def test_an_update_with_no_rows_changes_nothing():
    rms = RunningMeanStd((2,))
    rms.update(np.array([[1.0, 2.0], [3.0, 5.0]]))
    before = (rms.mean.copy(), rms.var.copy(), rms.count)
    rms.update(np.zeros((0, 2)))
    assert_identical(rms.mean, before[0])
    assert_identical(rms.var, before[1])
    assert rms.count == before[2]


# ---- the distributions' draws -------------------------------------------------------------------
def general_gaussian_sample(dist, out, log_std, rng, space):
    noise = rng.standard_normal(out.shape).astype(np.float32)
    action = out + np.exp(log_std) * noise
    log_prob = (-0.5 * noise**2 - log_std - 0.5 * math.log(2.0 * math.pi)).sum(axis=1)
    action = action.reshape((len(out), *dist.shape))
    return np.clip(action, space.low, space.high), action, log_prob


def general_categorical_sample(out, rng, mask):
    last = None
    if mask is not None:
        out = np.where(mask, out, -np.inf)
        last = out.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)
    z = out - out.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    cdf = np.cumsum(np.exp(log_probs), axis=-1)
    u = rng.random((len(out), 1))
    action = np.minimum((cdf < u).sum(axis=-1), out.shape[1] - 1 if last is None else last)
    return action, action, log_probs[np.arange(len(out)), action].astype(np.float32)


@pytest.mark.parametrize("shape", [(2,), (2, 2), ()], ids=["vector", "matrix", "scalar"])
@pytest.mark.parametrize("batch", [1, 5])
def test_the_gaussian_draw_and_mode_are_the_general_formulas(shape, batch):
    space = gymnasium.spaces.Box(-0.5, 0.7, shape, dtype=np.float32)  # the clip bites
    dist = DiagGaussian(shape)
    k = dist.n_outputs
    rng = np.random.default_rng(3)
    clipped = False
    for _ in range(20):
        out = (rng.standard_normal((batch, k)) * 2).astype(np.float32)
        log_std = (rng.standard_normal(k) * 0.5).astype(np.float32)
        seed = int(rng.integers(1 << 30))
        fast = dist.sample(out, log_std, np.random.default_rng(seed), space)
        general = general_gaussian_sample(dist, out, log_std, np.random.default_rng(seed), space)
        for a, b in zip(fast, general, strict=True):
            assert_identical(a, b)
        clipped |= bool((fast[0] != fast[1]).any())  # clipped for the env, stored as drawn
        assert_identical(dist.mode(out, space),
                         np.clip(out.reshape((batch, *shape)), space.low, space.high))
    assert clipped
    with pytest.raises(TypeError, match="Discrete action spaces"):
        dist.sample(out, log_std, rng, space, np.ones((batch, k), bool))


@pytest.mark.parametrize("masked", [False, True], ids=["all-legal", "masked"])
@pytest.mark.parametrize("batch", [1, 8])
def test_the_categorical_draw_and_mode_are_the_general_formulas(masked, batch):
    dist = Categorical(4)
    rng = np.random.default_rng(4)
    for i in range(50):
        out = (rng.standard_normal((batch, 4)) * 3).astype(np.float32)
        mask = None
        if masked:
            mask = rng.random((batch, 4)) < 0.6
            mask[np.arange(batch), rng.integers(0, 4, batch)] = True  # one legal at least
            mask[0] = [False, False, i % 2 == 0, i % 2 == 1]  # one legal only
        seed = int(rng.integers(1 << 30))
        fast = dist.sample(out, None, np.random.default_rng(seed), None, mask)
        general = general_categorical_sample(out, np.random.default_rng(seed), mask)
        for a, b in zip(fast, general, strict=True):
            assert_identical(a, b)
        if masked:
            assert mask[np.arange(batch), fast[0]].all()
        legal = out if mask is None else np.where(mask, out, -np.inf)
        assert_identical(dist.mode(out, None, mask), legal.argmax(axis=1))
    assert_identical(numpy_log_softmax(out), general_log_softmax(out))


def general_log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


# ---- whole runs: reward normalisation's bookkeeping and the draws -----------------------------
def general_record_rewards(self, env) -> None:
    """Reward normalisation's per-step bookkeeping, every lane's flags read at every step."""
    rms = self.reward_rms
    if rms is None:
        return
    reward = np.atleast_1d(np.asarray(env.reward, dtype=np.float64))
    if isinstance(env, VectorEnv):
        stepped = np.asarray(env.stepped, dtype=bool)
        done = np.asarray(env.is_terminated | env.is_truncated, dtype=bool)
    else:
        stepped = np.ones(1, dtype=bool)
        done = np.atleast_1d(bool(env.is_terminated or env.is_truncated))
    if self.running_returns is None or self.running_returns.shape != reward.shape:
        self.running_returns = np.zeros(reward.shape)
    returns = np.where(stepped, self.running_returns * self.gamma + reward,
                       self.running_returns)
    general_update(rms, returns[stepped])
    self.running_returns = np.where(done, 0.0, returns)


def general_draw(self, out, log_std, value, action_space, mask=None) -> tuple:
    """The draw by the general formulas."""
    dist = self.model.dist
    if self.deterministic:
        return dist.mode(out, action_space, mask), None, None, value
    if isinstance(dist, DiagGaussian):
        return (*general_gaussian_sample(dist, out, log_std, self.rng, action_space), value)
    return (*general_categorical_sample(out, self.rng, mask), value)


RUNS = {  # env id, lanes (0: one env), autoreset, episode cut
    "cartpole-3-lanes-next-step": ("CartPole-v1", 3, AutoresetMode.NEXT_STEP, 14),
    "cartpole-3-lanes-same-step": ("CartPole-v1", 3, AutoresetMode.SAME_STEP, 14),
    "pendulum-3-lanes-next-step-ending-together": ("Pendulum-v1", 3, AutoresetMode.NEXT_STEP, 10),
    "pendulum-2-lanes-same-step": ("Pendulum-v1", 2, AutoresetMode.SAME_STEP, 10),
    "pendulum-one-env": ("Pendulum-v1", 0, None, 10),
}


def ppo_run(env_id: str, num_envs: int, autoreset, cut: int, normalize: bool) -> tuple:
    """A short PPO run (two or three rollouts learned, episodes ending inside them); its statistics,
    parameters and whether some act had lanes that did not step or every lane ending."""
    if num_envs:
        env = rl.GymVectorEnv(env_id, num_envs=num_envs, seed=5, max_episode_steps=cut,
                              vector_kwargs={"autoreset_mode": autoreset})
    else:
        env = rl.GymEnv(env_id, seed=5, max_episode_steps=cut)
    config = PPOConfig(n_steps=16, batch_size=16, n_epochs=2, normalize_states=normalize,
                       normalize_rewards=normalize)
    agent = make_ppo_agent(env, config, seed=5, device="cpu")
    policy, record = agent.policy, agent.policy.record_rewards
    seen = {"skipped": False, "all ended": False}

    def record_noting(env):
        if isinstance(env, VectorEnv):
            seen["skipped"] |= not np.asarray(env.stepped).all()
            seen["all ended"] |= bool((env.is_terminated | env.is_truncated).all())
        record(env)

    policy.record_rewards = record_noting
    lanes = max(num_envs, 1)
    rl.run(agent, env, rl.StopAfterNSteps(16 * lanes * 3 + lanes, progress=False))
    assert policy.n_updates >= 2
    stats = []
    if normalize:
        rms, states = policy.reward_rms, policy.state_rms
        stats = [rms.mean, rms.var, rms.count, policy.running_returns, states.mean, states.var]
    state = policy.state_dict()
    return stats, [p.detach().clone() for p in policy.model.flat_parameters()], seen, state


@pytest.mark.parametrize("normalize", [True, False], ids=["normalised", "raw"])
@pytest.mark.parametrize("run", RUNS.values(), ids=RUNS.keys())
def test_whole_runs_learn_what_the_general_draw_and_bookkeeping_learn(run, normalize):
    fast = ppo_run(*run, normalize)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OnPolicy, "record_rewards", general_record_rewards)
        patch.setattr(OnPolicy, "draw", general_draw)
        general = ppo_run(*run, normalize)
    assert fast[2] == general[2]
    assert fast[2]["skipped"] == (run[2] == AutoresetMode.NEXT_STEP)
    assert fast[2]["all ended"] or not (run[0] == "Pendulum-v1" and run[1] > 0)
    for a, b in zip(fast[0], general[0], strict=True):
        assert_identical(a, b)
    if normalize:
        assert np.isfinite(fast[0][1]) and fast[0][1] != 1.0  # the reward statistics moved
    for a, b in zip(fast[1], general[1], strict=True):
        assert torch.equal(a, b)
    adam_fast, adam_general = fast[3]["optimiser"]["state"], general[3]["optimiser"]["state"]
    for key in adam_fast:
        for name in adam_fast[key]:
            assert torch.equal(adam_fast[key][name], adam_general[key][name])


def test_every_lane_ending_at_once_keeps_the_reward_statistics_finite():
    """Pendulum's episodes last the same number of steps in every lane: with a next-step
    autoreset, the act after they end together only resets every lane, and no lane's return
    is new; folding in no rows must leave the statistics as they were, not NaN."""
    stats, _, seen, _ = ppo_run("Pendulum-v1", 3, AutoresetMode.NEXT_STEP, 10, True)
    assert seen["all ended"] and seen["skipped"]
    assert np.isfinite(stats[0]) and np.isfinite(stats[1])
    assert stats[2] == pytest.approx(1e-4 + 3 * (16 * 3 + 1) - 3 * 4)  # four reset-only acts


def test_the_deterministic_mode_acts_by_the_general_mode():
    env = rl.GymVectorEnv("Pendulum-v1", num_envs=3, seed=6)
    agent = make_ppo_agent(env, PPOConfig(normalize_states=True), seed=6, device="cpu")
    policy = agent.policy
    policy.state_rms.update(np.random.default_rng(6).standard_normal((40, 3)) * 2 + 1)
    env.reset()
    states = env.state
    policy.deterministic = True
    out, log_std, value = policy.act_outputs(states)
    draws = policy.rng.bit_generator.state
    fast = policy.sample(states, env.single_action_space)
    assert policy.rng.bit_generator.state == draws  # nothing drawn
    general = general_draw(policy, out, log_std, value, env.single_action_space)
    assert fast[1] is None and fast[2] is None
    for a, b in ((fast[0], general[0]), (fast[3], general[3])):
        assert_identical(a, b)
