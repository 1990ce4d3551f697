"""The recurrent DQN: replayed windows reproduce the collection's action values from their
stored states, the TD targets follow the window's own steps, learning runs (smoke), bad input."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

import stagerl as rl
from stagerl.algorithms import DRQNConfig, make_drqn_agent
from stagerl.algorithms.dqn.recurrent import drqn_update
from trajectories import SequenceSampler


def _env(limits=(6, 9, 11), mode=AutoresetMode.NEXT_STEP):
    def make(limit):
        return lambda: TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=limit)

    return rl.GymVectorEnv(SyncVectorEnv([make(k) for k in limits], autoreset_mode=mode), seed=0)


def _recording(env, **settings):
    """A DRQN agent that never learns and also stores each step's action values."""
    config = DRQNConfig(total_steps=10_000, learning_starts=10**6, rnn_hidden_size=16,
                        net_arch=(16,), sequence_length=5, burn_in=2, batch_size=16,
                        exploration_initial_eps=0.3, **settings)
    agent = make_drqn_agent(env, config, seed=0, device="cpu")
    traces = rl.CircularArraySARTSTraces(300, state=(np.float32, (4,)), extra={
        "recurrent_state": (np.float32, agent.policy.recurrent_state_shape),
        "q_values": (np.float32, (2,))})
    lanes = env.num_envs if isinstance(env, rl.VectorEnv) else None
    return rl.Agent(agent.policy, rl.Trajectory(traces, agent.trajectory.sampler,
                                                rl.InsertSampleRatioController(threshold=10**9),
                                                n_lanes=lanes))


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_replayed_windows_give_the_collections_action_values(rnn, mode):
    env = _env(mode=mode)
    agent = _recording(env, rnn=rnn)
    rl.run(agent, env, rl.StopAfterNSteps(3 * 60, progress=False))
    sampler = SequenceSampler(5, batch_size=64, burn_in=2, period=1, rng=0)
    windows = sampler.sample(agent.trajectory.container)
    network = agent.policy.network
    with torch.no_grad():
        q, _ = network.unroll(torch.as_tensor(windows["state"]),
                              torch.as_tensor(windows["initial_state"]))
    mask = windows["mask"]
    assert np.abs(q.numpy()[mask] - windows["q_values"][mask]).max() < 1e-5
    assert windows["is_first"][:, 0].sum() > 0  # some windows start an episode (from zeros)


def test_a_window_learns_from_its_own_next_states_and_never_past_its_episode():
    env = rl.GymEnv(TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=7), seed=0)
    agent = _recording(env)
    rl.run(agent, env, rl.StopAfterNSteps(40, progress=False))
    sampler = SequenceSampler(5, batch_size=32, burn_in=2, rng=0,
                              names=("state", "next_state", "action", "reward", "terminal"))
    batch = sampler.sample(agent.trajectory.container)
    rows = np.arange(32)
    last = batch["seq_lens"] - 1
    # The last real step's next state is what the targets' unroll reads after the window.
    assert not np.allclose(batch["next_state"][rows, last], 0)
    inner = batch["mask"][:, 1:]
    assert np.array_equal(batch["state"][:, 1:][inner], batch["next_state"][:, :-1][inner])
    tensors = {k: torch.as_tensor(v) for k, v in batch.items()}
    policy = agent.policy
    before = [p.detach().clone() for p in policy.network.parameters()]
    drqn_update(policy, tensors)
    assert torch.isfinite(policy.loss) and policy.n_updates == 1
    after = list(policy.network.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_it_learns_on_a_vector_env_smoke():
    env = _env(limits=(500, 500))
    config = DRQNConfig(total_steps=1200, learning_starts=300, sequence_length=8, burn_in=2,
                        batch_size=8, rnn_hidden_size=16, net_arch=(16,),
                        target_update_interval=100)
    agent = make_drqn_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(1200, progress=False))
    assert agent.policy.n_updates > 100 and torch.isfinite(agent.policy.loss)
    assert agent.policy.target_updates == 12
    assert agent.policy.memory.values.shape == (2, 2, 16)


def test_evaluation_is_greedy_and_counts_no_step():
    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_drqn_agent(env, DRQNConfig(total_steps=100), device="cpu")
    returns = rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=1), episodes=2)
    assert len(returns) == 2 and agent.policy.env_steps == 0


@pytest.mark.parametrize("kwargs, words", [
    ({"burn_in": 20}, "burn_in must be below sequence_length=20"),
    ({"burn_in": -1}, "burn_in must be an int >= 0"),
    ({"sequence_length": 0}, "sequence_length must be an int >= 1"),
    ({"period": 0}, "period must be an int >= 1"),
    ({"rnn": "rnn"}, "rnn must be 'lstm' or 'gru'"),
    ({"gamma": float("nan")}, "gamma must be in"),
])
def test_bad_settings_are_refused_naming_the_setting(kwargs, words):
    with pytest.raises(ValueError, match=words):
        DRQNConfig(**kwargs)


def test_envs_it_cannot_act_in_and_a_small_buffer_are_refused_with_the_fix():
    with pytest.raises(TypeError, match="recurrent PPO for continuous"):
        make_drqn_agent(rl.GymEnv("Pendulum-v1"), DRQNConfig(total_steps=10))
    with pytest.raises(ValueError, match="raise buffer_size"):
        make_drqn_agent(rl.GymEnv("CartPole-v1"), DRQNConfig(total_steps=10, buffer_size=30))
    with pytest.raises(ValueError, match="total_steps is None"):
        make_drqn_agent(rl.GymEnv("CartPole-v1"), DRQNConfig())
