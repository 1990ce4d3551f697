"""VPG: whole episodes (single and vector envs), Monte-Carlo returns, learning, bad input."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)
from scripted_envs import scripted_env, scripted_vector_env

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.on_policy.vpg import VPGConfig, make_vpg_agent, vpg_loss


def recording(agent):
    """Keep every batch the policy learns from (numpy), then learn as usual."""
    batches, update = [], agent.policy.update

    def record(batch):
        batches.append({k: v.numpy().copy() for k, v in batch.items()})
        update(batch)

    agent.policy.update = record
    return batches


def test_an_update_every_n_whole_episodes_of_a_single_env():
    env = rl.GymEnv(scripted_env(0, 3))  # episodes: 3 steps (terminated), 4 (truncated), ...
    config = VPGConfig(episodes_per_update=2, gamma=0.5, max_episode_steps=4)
    agent = make_vpg_agent(env, config, seed=0, device="cpu")
    batches = recording(agent)
    rl.run(agent, env, rl.StopAfterNEpisodes(4, progress=False))
    assert [len(b["return"]) for b in batches] == [7, 7]
    first = batches[0]
    assert first["state"][:, 1:].tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2],
                                              [1, 3]]
    # Monte-Carlo returns, gamma 0.5; the truncated episode bootstraps its final state's value
    r = first["reward"][:3]  # 10 t + action
    assert first["return"][:3].tolist() == pytest.approx(
        [r[0] + 0.5 * r[1] + 0.25 * r[2], r[1] + 0.5 * r[2], r[2]])
    assert first["advantage"].tolist() == pytest.approx(
        (first["return"] - first["value"]).tolist())


def test_on_a_vector_env_the_running_episodes_are_dropped_and_go_on():
    # Lane 0 ends episodes at acts 2 (terminated) and 5 (truncated); lane 1's first episode
    # ends at act 6. Two episodes make an update: at act 5, from lane 0 only.
    env = rl.GymVectorEnv(scripted_vector_env((2, 6), AutoresetMode.SAME_STEP))
    agent = make_vpg_agent(env, VPGConfig(episodes_per_update=2, max_episode_steps=7),
                           seed=0, device="cpu")
    batches = recording(agent)
    rl.run(agent, env, rl.StopAfterNSteps(2 * 9, progress=False))  # 9 acts
    lanes_and_t = [b["state"][:, [0, 2]].tolist() for b in batches]
    # update 1 (act 5): lane 0's two episodes; lane 1's five steps so far are dropped.
    # update 2 (act 7: lane 1 ends at act 6, lane 0 at act 7): lane 0's t 0 1, lane 1's t 5.
    assert lanes_and_t[0] == [[0, 0], [0, 1], [0, 0], [0, 1], [0, 2]]
    assert sorted(map(tuple, lanes_and_t[1])) == [(0, 0), (0, 1), (1, 5)]


def test_vpg_loss_is_the_policy_gradient_surrogate():
    model = make_vpg_agent(make_vector_env("CartPole-v1", 2, 0), device="cpu").policy.model
    states, actions = torch.randn(5, 4), torch.tensor([0, 1, 1, 0, 1])
    advantage = torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0])
    log_prob, _ = model.log_prob_entropy(states, actions)
    loss = vpg_loss(model, {"state": states, "action": actions, "advantage": advantage})
    assert loss.item() == pytest.approx(-(log_prob * advantage).mean().item())


def test_vpg_learns_cartpole():  # CI smoke test: random play ~22; seeds 0-4 give 349-500
    env = make_vector_env("CartPole-v1", 8, seed=0)
    agent = make_vpg_agent(env, VPGConfig(learning_rate=1e-2), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(20_000, progress=False))
    assert np.mean(rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=100), 10)) >= 150


def test_gaussian_vpg_acts_in_a_box():
    env = make_vector_env("Pendulum-v1", 2, seed=0)
    agent = make_vpg_agent(env, VPGConfig(episodes_per_update=2, max_episode_steps=200),
                           seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(800, progress=False))
    assert agent.policy.n_updates == 2 and np.isfinite(agent.policy.stats["policy_loss"])


def test_bad_input_is_refused_at_construction():
    env = make_vector_env("CartPole-v1", 2, seed=0)
    with pytest.raises(ValueError, match="episodes_per_update must be an int >= 1"):
        make_vpg_agent(env, VPGConfig(episodes_per_update=0), device="cpu")
    with pytest.raises(TypeError, match=r"make_vpg_agent acts in Discrete, MultiDiscrete, "
                                        r"MultiBinary or float Box action spaces, got Tuple"):
        make_vpg_agent(rl.GymEnv(gymnasium.wrappers.TransformAction(
            gymnasium.make("CartPole-v1"), lambda a: int(a[0]),
            gymnasium.spaces.Tuple([gymnasium.spaces.Discrete(2)]))), device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vpg_cartpole_reaches_475(seed):
    summary = experiments.train("vpg-cartpole", seed=seed, device="cpu", progress=False)
    assert summary["eval_return_mean"] >= 475
