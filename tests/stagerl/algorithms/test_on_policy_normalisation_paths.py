"""The running statistics of observation and reward normalisation on their faster paths give
what the general ones give, on the same inputs: one row's mean and variance against numpy's, and
reward normalisation's per-step bookkeeping (every lane stepped) against the general one, over
whole PPO runs on vector envs whose lanes' rings wrap (same-step autoreset: every lane steps;
next-step autoreset: a resetting lane does not)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import stagerl as rl
from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent
from stagerl.algorithms.on_policy.base import OnPolicy
from stagerl.algorithms.on_policy.networks import RunningMeanStd
from stagerl.core.env import VectorEnv


def numpy_update(rms: RunningMeanStd, x: np.ndarray) -> None:
    """The general update: numpy's mean and variance of the rows."""
    n, mean, var = len(x), x.mean(axis=0), x.var(axis=0)
    total = rms.count + n
    delta = mean - rms.mean
    rms.mean = rms.mean + delta * n / total
    rms.var = (rms.var * rms.count + var * n + delta**2 * rms.count * n / total) / total
    rms.count = total


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (3,)], ids=["scalars", "vectors"])
def test_one_rows_statistics_are_numpys_mean_and_variance_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, 1e-310, -3e38, 1e300, np.inf, -np.inf, np.nan]
    rows = [np.full(shape, v) for v in special] + [rng.normal(size=shape) * 10.0 ** k
                                                   for k in range(-8, 9, 2)]
    with np.errstate(all="ignore"):
        for start in range(len(rows)):  # each special value met by statistics of all kinds
            fast, general = RunningMeanStd(shape), RunningMeanStd(shape)
            for row in rows[start:] + rows[:start]:
                x = np.asarray(row, dtype=dtype)[None]
                fast.update(x)
                numpy_update(general, x)
                for a, b in ((fast.mean, general.mean), (fast.var, general.var)):
                    assert np.asarray(a).dtype == np.asarray(b).dtype
                    np.testing.assert_array_equal(a, b)
                    assert np.array_equal(np.signbit(a), np.signbit(b))
                assert fast.count == general.count


def general_record_rewards(self, env) -> None:
    """Reward normalisation's per-step bookkeeping, every lane through ``np.where``."""
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
    numpy_update(rms, returns[stepped])
    self.running_returns = np.where(done, 0.0, returns)


def normalised_ppo_run(num_envs: int, autoreset: AutoresetMode) -> tuple:
    """PPO with observation and reward normalisation on CartPole cut at 14 steps (terminations
    and truncations inside the rollouts); the statistics, the parameters and whether some
    lane's ring wrapped and some lane did not step."""
    if num_envs:
        env = rl.GymVectorEnv("CartPole-v1", num_envs=num_envs, seed=3, max_episode_steps=14,
                              vector_kwargs={"autoreset_mode": autoreset})
    else:
        env = rl.GymEnv("CartPole-v1", seed=3, max_episode_steps=14)
    config = PPOConfig(n_steps=8, batch_size=8, n_epochs=2, normalize_states=True,
                       normalize_rewards=True)
    agent = make_ppo_agent(env, config, seed=3, device="cpu")
    policy, learn, record = agent.policy, agent.policy.learn, agent.policy.record_rewards
    seen = {"wrapped": False, "skipped": False}

    def learn_noting_wrap(container):  # some lane's ring wrapped (private geometry, read here)
        if hasattr(container, "_start"):
            seen["wrapped"] |= bool(((container._start + container._m) > container._P).any())
        learn(container)

    def record_noting_skips(env):
        seen["skipped"] |= isinstance(env, VectorEnv) and not np.asarray(env.stepped).all()
        record(env)

    policy.learn, policy.record_rewards = learn_noting_wrap, record_noting_skips
    rl.run(agent, env, rl.StopAfterNSteps(240, progress=False))
    rms, states = policy.reward_rms, policy.state_rms
    return ([rms.mean, rms.var, rms.count, policy.running_returns, states.mean, states.var],
            [p.detach().clone() for p in policy.model.flat_parameters()], seen)


@pytest.mark.parametrize(("num_envs", "autoreset"), [
    (3, AutoresetMode.SAME_STEP), (3, AutoresetMode.NEXT_STEP), (1, AutoresetMode.SAME_STEP),
    (0, None)], ids=["3-lanes-same-step", "3-lanes-next-step", "1-lane", "single-env"])
def test_reward_normalisations_bookkeeping_is_the_general_one_over_whole_runs(num_envs,
                                                                               autoreset):
    fast = normalised_ppo_run(num_envs, autoreset)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OnPolicy, "record_rewards", general_record_rewards)
        general = normalised_ppo_run(num_envs, autoreset)
    assert fast[2] == general[2]
    assert fast[2]["wrapped"] == (num_envs > 0)  # a single env's trajectory has no lanes
    assert fast[2]["skipped"] == (autoreset == AutoresetMode.NEXT_STEP)
    for a, b in zip(fast[0], general[0], strict=True):
        np.testing.assert_array_equal(a, b)
    assert fast[0][1] != 1.0  # the reward statistics moved
    for a, b in zip(fast[1], general[1], strict=True):
        assert torch.equal(a, b)
