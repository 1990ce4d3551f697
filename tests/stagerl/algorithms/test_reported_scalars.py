"""Every algorithm reports its losses to whatever loggers listen (``rl.log_scalar``): the names
CleanRL's TensorBoard tags use, the values of the update that computed them."""

from __future__ import annotations

import math

import stagerl as rl
from stagerl.algorithms.a2c import A2CConfig, make_a2c_agent
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.ppo import PPOConfig, make_ppo_agent
from stagerl.algorithms.trpo import TRPOConfig, make_trpo_agent
from stagerl.logging import ScalarListener


def _reported(agent, env, steps):
    with ScalarListener() as listener:
        rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return listener.drain()


def test_ppo_reports_each_rollouts_losses_kl_and_learning_rate():
    env = make_vector_env("CartPole-v1", num_envs=2, seed=0)
    config = PPOConfig(n_steps=16, batch_size=16, n_epochs=2, learning_rate=1e-3,
                       learning_rate_schedule="linear", schedule_steps=128)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    reported = _reported(agent, env, 64)  # two rollouts of 16 steps on 2 sub-envs
    names = ["losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl",
             "losses/clip_fraction", "charts/learning_rate"]
    assert [name for name, _, _ in reported] == names * 2
    assert all(step is None for _, _, step in reported)  # filed under the step that learned
    last = {name: value for name, value, _ in reported[len(names):]}
    assert last == {**{f"losses/{k}": v for k, v in agent.policy.stats.items()},
                    "charts/learning_rate": last["charts/learning_rate"]}
    # The linear schedule at the two updates: 32 and 64 of 128 env steps done before them.
    assert [v for n, v, _ in reported if n == "charts/learning_rate"] == [1e-3 * 0.75,
                                                                          1e-3 * 0.5]
    assert all(math.isfinite(value) for _, value, _ in reported)


def test_a2c_and_trpo_report_their_updates_figures():
    env = make_vector_env("CartPole-v1", num_envs=2, seed=0)
    a2c = make_a2c_agent(env, A2CConfig(n_steps=5), seed=0, device="cpu")
    reported = _reported(a2c, env, 20)
    assert len(reported) == 2 * (len(a2c.policy.stats) + 1)
    env = make_vector_env("CartPole-v1", num_envs=2, seed=0)
    trpo = make_trpo_agent(env, TRPOConfig(n_steps=32, batch_size=32), seed=0, device="cpu")
    reported = _reported(trpo, env, 64)
    assert [name for name, _, _ in reported] == ["losses/kl", "losses/objective",
                                                 "losses/accepted", "charts/learning_rate"]
