"""Every algorithm reports its losses to whatever loggers listen (``rl.log_scalar``): the names
CleanRL's TensorBoard tags use, the values of the update that computed them."""

from __future__ import annotations

import math

import stagerl as rl
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.on_policy.a2c import A2CConfig, make_a2c_agent
from stagerl.algorithms.on_policy.ppo import PPOConfig, make_ppo_agent
from stagerl.algorithms.on_policy.trpo import TRPOConfig, make_trpo_agent
from stagerl.logging import ScalarListener


def _reported(agent, env, steps):
    with ScalarListener() as listener:
        rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return listener.drain()


def test_ppo_reports_each_rollouts_losses_kl_and_learning_rate():
    env = make_vector_env("CartPole-v1", num_envs=2, seed=0)
    config = PPOConfig(n_steps=16, batch_size=16, n_epochs=2, learning_rate=1e-3,
                       learning_rate_schedule="linear", total_steps=128)
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


def test_dqn_reports_each_bursts_td_loss_and_the_epsilon_of_the_next_act():
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

    env = make_vector_env("CartPole-v1", num_envs=2, seed=0)
    config = DQNConfig(total_steps=400, learning_starts=100, train_freq=50,
                       gradient_steps=2, batch_size=16, buffer_size=64, net_arch=(8,),
                       exploration_fraction=0.5, exploration_final_eps=0.1)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    reported = _reported(agent, env, 400)  # six bursts of 2 gradient steps
    assert [name for name, _, _ in reported] == ["losses/td_loss", "charts/epsilon"] * 6
    assert reported[-2][1] == agent.policy.loss.item()
    # ε falls from 1 to 0.1 over 200 env steps, 100 acts of 2 sub-envs; the first burst comes
    # after act 76 (env step 152), so the next act's ε is 1 - 0.9 * 76 / 100.
    assert [round(v, 6) for n, v, _ in reported if n == "charts/epsilon"] == [
        0.316, 0.1, 0.1, 0.1, 0.1, 0.1]


def test_sac_and_td3_report_the_last_updates_losses_every_hundred_updates():
    from stagerl.algorithms.off_policy.sac import SACConfig, make_sac_agent
    from stagerl.algorithms.off_policy.td3 import TD3Config, make_td3_agent

    env = rl.GymVectorEnv("Pendulum-v1", num_envs=2, seed=0)
    sac = make_sac_agent(env, SACConfig(learning_starts=20, batch_size=8, net_arch=(8,)),
                         seed=0, device="cpu")
    reported = _reported(sac, env, 240)  # one update per transition after the first 20
    assert sac.policy.n_updates == 220  # reports after updates 100 and 200
    assert [name for name, _, _ in reported] == [
        "losses/q_values", "losses/critic_loss", "losses/actor_loss", "losses/ent_coef",
        "losses/ent_coef_loss"] * 2
    assert all(math.isfinite(value) for _, value, _ in reported)
    env = rl.GymVectorEnv("Pendulum-v1", num_envs=2, seed=0)
    td3 = make_td3_agent(env, TD3Config(learning_starts=20, batch_size=8, net_arch=(8,)),
                         seed=0, device="cpu")
    reported = _reported(td3, env, 240)  # 220 updates: reports after updates 100 and 200
    names = [name for name, _, _ in reported]
    assert names == ["losses/q_values", "losses/critic_loss", "losses/actor_loss"] * 2
    assert all(math.isfinite(value) for _, value, _ in reported)
