"""Dict and Tuple observations, MultiDiscrete and MultiBinary actions through the algorithms, on
vector envs with lanes and ring wrap: what the Agent pushes, what is sampled (the nesting kept),
an update that changes the networks through the nested batch, and a checkpoint the run goes on
from exactly. Refusals name the algorithm, the space and the wrapper that fixes it.

``DictObservationEnv`` (tests/support/nested_envs.py): every observation tells its sub-env,
episode and step; the reward rewards the action's first entry being ``t % 3``.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from nested_envs import DictObservationEnv, dict_vector_env

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.algorithms.extractors import CombinedExtractor
from stagerl.algorithms.off_policy import SACConfig, make_sac_agent, make_td3_agent
from stagerl.algorithms.on_policy import (
    A2CConfig,
    A3CConfig,
    ERWRConfig,
    PPOConfig,
    REPSConfig,
    TRPOConfig,
    VPGConfig,
    make_a2c_agent,
    make_a3c_agent,
    make_erwr_agent,
    make_ppo_agent,
    make_reps_agent,
    make_trpo_agent,
    make_vpg_agent,
)
from stagerl.checkpoints import load, save

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


def origin(state):
    """(lane, episode, t) of each observation of a nested batch."""
    frame = state["frame"]
    return np.stack([frame[..., 0, 0], frame[..., 0, 1], frame[..., 0, 2]], axis=-1)


class Recording(CombinedExtractor):
    """The combined extractor, noting the type and dtypes of every batch it reads."""

    seen: list = []

    def forward(self, x):
        Recording.seen.append({k: (type(v).__name__, v.dtype, tuple(v.shape))
                               for k, v in x.items()})
        return super().forward(x)


@pytest.mark.parametrize("mode", MODES)
def test_ppo_pushes_samples_and_learns_nested_states_with_multidiscrete_actions(mode, tmp_path):
    env = rl.GymVectorEnv(dict_vector_env(3, autoreset_mode=mode), seed=0)
    Recording.seen = []
    config = PPOConfig(n_steps=8, batch_size=12, n_epochs=2, learning_rate=1e-2)
    agent = make_ppo_agent(env, config, seed=0, device="cpu", features_extractor=Recording)
    before = [p.detach().clone() for p in agent.policy.model.parameters()]
    # The rollout's storage: one ring per leaf and the MultiDiscrete actions, per lane.
    trajectory = agent.trajectory
    rl.run(agent, env, rl.StopAfterNSteps(3 * 8 * 5 + 3 * 5, progress=False))
    # one update per 24 transitions (NEXT_STEP: the reset-only acts are none)
    assert agent.policy.n_updates == trajectory.controller.n_inserted // 24 >= 4
    container = trajectory.container
    assert container.n_lanes == 3
    stored = container["state"]
    assert stored["frame"].dtype == np.uint8 and stored["position"].dtype == np.float32
    assert container["action"].dtype == np.int64 and container["action"].shape[1:] == (2,)
    here, there = origin(stored), origin(container["next_state"])
    rows = np.flatnonzero(container.sampleable_inds)
    assert (here[rows, :2] == there[rows, :2]).all()  # never across a lane or an episode
    assert (there[rows, 2] == here[rows, 2] + 1).all()
    # Every update read nested uint8 frames (its own scaling) and float32 positions.
    update_batches = [s for s in Recording.seen if s["frame"][2][0] == 3 * 8 or
                      s["frame"][2][0] == 12]
    assert update_batches and all(s["frame"][:2] == ("Tensor", torch.uint8) and
                                  s["position"][1] == torch.float32 for s in update_batches)
    after = list(agent.policy.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert all(torch.isfinite(p).all() for p in after)


def test_a_checkpoint_of_a_nested_run_goes_on_exactly(tmp_path):
    def parts():
        env = rl.GymVectorEnv(dict_vector_env(2), seed=0)
        return env, make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=8, n_epochs=1),
                                   seed=0, device="cpu")

    env, agent = parts()
    rl.run(agent, env, rl.StopAfterNSteps(2 * 13, progress=False))  # mid-rollout
    copy_agent, copy_env = load(save((agent, env), tmp_path / "run"))
    for a, e in ((agent, env), (copy_agent, copy_env)):
        _go_on(a, e, 21)
    for name in ("state", "next_state"):
        for leaf in ("frame", "position"):
            np.testing.assert_array_equal(agent.trajectory.container[name][leaf],
                                          copy_agent.trajectory.container[name][leaf])
    np.testing.assert_array_equal(agent.trajectory.container["action"],
                                  copy_agent.trajectory.container["action"])
    for p, q in zip(agent.policy.model.parameters(), copy_agent.policy.model.parameters(),
                    strict=True):
        assert torch.equal(p, q)
    assert agent.policy.n_updates == copy_agent.policy.n_updates == \
        agent.trajectory.controller.n_inserted // 16 >= 3


def _go_on(agent, env, acts):
    """Act and record ``acts`` more times, without a reset (the run goes on mid-episode)."""
    for _ in range(acts):
        rl.push(agent, rl.PreActStage(), env)
        action = rl.plan(agent, env)
        env.act(action)
        rl.push(agent, rl.PostActStage(), env, action)
        rl.optimise(agent, rl.PostActStage())


@pytest.mark.parametrize("space", [spaces.MultiBinary(3), spaces.Box(-1.0, 1.0, (2, 3)),
                                   spaces.Discrete(3), spaces.MultiDiscrete([3, 2])])
@pytest.mark.parametrize("make, config", [
    (make_a2c_agent, A2CConfig(n_steps=4)),
    (make_vpg_agent, VPGConfig(episodes_per_update=2, max_episode_steps=6)),
    (make_trpo_agent, TRPOConfig(n_steps=8, batch_size=8)),
    (make_ppo_agent, PPOConfig(n_steps=8, batch_size=8, n_epochs=1)),
    # the baselines by name that read nested states, ERWR's L-BFGS fit, A3C (A2C in one
    # process), PPO's KL penalty through each distribution (with the value clipped as well)
    (make_vpg_agent, VPGConfig(episodes_per_update=2, max_episode_steps=6, baseline="zero")),
    (make_erwr_agent, ERWRConfig(episodes_per_update=2, max_episode_steps=6,
                                 baseline="network")),
    (make_a3c_agent, A3CConfig(n_steps=4)),
    (make_ppo_agent, PPOConfig(n_steps=8, batch_size=8, n_epochs=2, kl_coef=0.2,
                               clip_range_vf=0.2))])
def test_every_on_policy_algorithm_acts_in_each_space_with_tuple_states(space, make, config):
    env = rl.GymVectorEnv(dict_vector_env(2, action_space=space, tuple_observations=True),
                          seed=0)
    agent = make(env, config, seed=0, device="cpu")
    before = [p.detach().clone() for p in agent.policy.model.parameters()]
    rl.run(agent, env, rl.StopAfterNSteps(2 * 24, progress=False))
    assert agent.policy.n_updates >= 1
    stored = agent.trajectory.container["action"] if len(agent.trajectory) else None
    if stored is not None:
        assert stored.shape[1:] == (space.shape or ())
    assert any(not torch.equal(a, b) for a, b in
               zip(before, agent.policy.model.parameters(), strict=True))
    actions = agent.policy.sample(env.state, space)[0]
    assert all(space.contains(np.asarray(a, dtype=space.dtype)) for a in actions)


@pytest.mark.parametrize("make, config, pattern", [
    (make_vpg_agent, VPGConfig(baseline="linear"),
     r"VPGPolicy: the linear baseline's features are those of Box observations .* got "
     r"Dict\(.*use baseline='network' \(or 'zero'\)"),
    (make_erwr_agent, ERWRConfig(),  # its default baseline is the linear one
     r"ERWRPolicy: the linear baseline's features are those of Box observations"),
    (make_reps_agent, REPSConfig(),
     r"REPS's context features are those of Box observations .* got Dict\("),
])
def test_linear_features_refuse_dict_states_naming_the_fix(make, config, pattern):
    env = rl.GymVectorEnv(dict_vector_env(2), seed=0)
    with pytest.raises(TypeError, match=pattern):
        make(env, config, device="cpu")


def test_the_kl_penalty_adapts_on_dict_states_with_the_value_clipped():
    env = rl.GymVectorEnv(dict_vector_env(2, length=6), seed=0)
    config = PPOConfig(n_steps=8, batch_size=8, n_epochs=2, kl_coef=0.2, clip_range_vf=0.2,
                       learning_rate=1e-2)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(24, progress=False))  # one rollout, one update
    stats = agent.policy.stats
    assert agent.policy.n_updates == 1 and stats["kl_coef"] == 0.2
    assert stats["kl"] > 0 and stats["kl_penalty"] >= 0
    assert agent.policy.kl_coef in (0.1, 0.2, pytest.approx(0.3))


def test_ppo_learns_the_multidiscrete_task_from_dict_states():
    env = rl.GymVectorEnv(dict_vector_env(4, length=6), seed=0)
    config = PPOConfig(n_steps=32, batch_size=64, n_epochs=4, learning_rate=3e-3,
                       ent_coef=0.0, net_arch=(32,))
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    hook = rl.TotalRewardPerEpisode()
    rl.run(agent, env, rl.StopAfterNSteps(4 * 32 * 30, progress=False), hook)
    # random play scores 1/3 of the steps (about 2 of 6-9); the task is the step's t % 3
    late = hook.rewards[-12:]
    lengths = [6 + lane for lane in range(4)]
    assert np.mean(late) >= 0.8 * np.mean(lengths)


@pytest.mark.parametrize("mode", MODES)
def test_dqn_replays_nested_states_across_lanes_and_checkpoints(mode, tmp_path):
    env = rl.GymVectorEnv(dict_vector_env(3, action_space=spaces.Discrete(3),
                                          autoreset_mode=mode), seed=0)
    config = DQNConfig(total_steps=600, learning_starts=30, buffer_size=60, batch_size=16,
                       net_arch=(16,), train_freq=4, target_update_interval=50)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    before = [p.detach().clone() for p in agent.policy.network.parameters()]
    rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
    container = agent.trajectory.container
    assert container.lane_lengths() == [20, 20, 20]  # the rings wrapped
    burst = agent.trajectory.sample()
    batch = next(iter(burst))
    assert batch["state"]["frame"].dtype == np.uint8 and batch["state"]["frame"].shape == \
        (16, 3, 4)
    here, there = origin(batch["state"]), origin(batch["next_state"])
    assert (here[:, :2] == there[:, :2]).all() and (there[:, 2] == here[:, 2] + 1).all()
    assert any(not torch.equal(a, b) for a, b in
               zip(before, agent.policy.network.parameters(), strict=True))
    copy = load(save(agent, tmp_path / "dqn"))
    for name in ("state", "next_state"):
        for leaf in ("frame", "position"):
            np.testing.assert_array_equal(container[name][leaf],
                                          copy.trajectory.container[name][leaf])
    a, b = agent.trajectory.sample(), copy.trajectory.sample()
    np.testing.assert_array_equal(a.rows["state"]["frame"], b.rows["state"]["frame"])


def test_sac_reads_dict_states_through_a_shared_extractor():
    env = rl.GymVectorEnv(dict_vector_env(2, action_space=spaces.Box(-1.0, 1.0, (2,))), seed=0)
    agent = make_sac_agent(env, SACConfig(learning_starts=20, batch_size=8, net_arch=(16,),
                                          share_features_extractor=True), device="cpu")
    assert agent.policy.critic.extractor is agent.policy.actor.net[0]
    extractor = [p.detach().clone() for p in agent.policy.critic.extractor.parameters()]
    rl.run(agent, env, rl.StopAfterNSteps(80, progress=False))
    assert agent.policy.n_updates == agent.trajectory.controller.n_sampled > 20
    assert agent.trajectory.container["state"]["frame"].dtype == np.uint8
    # a Flatten-only combined extractor has no parameters; its reads are what matters here
    assert extractor == []


@pytest.mark.parametrize("make, space, pattern", [
    (make_dqn_agent, spaces.MultiDiscrete([3, 2]),
     r"DQN needs a Discrete action space, got MultiDiscrete\(\[3 2\]\); for MultiDiscrete or "
     r"MultiBinary actions use PPO, A2C, VPG or TRPO, or map the actions onto one Discrete "
     r"space with a gymnasium ActionWrapper"),
    (make_ppo_agent, spaces.Dict(a=spaces.Discrete(2)),
     r"make_ppo_agent acts in Discrete, MultiDiscrete, MultiBinary or float Box action "
     r"spaces, got Dict\('a': Discrete\(2\)\); map the actions onto one of them with a "
     r"gymnasium ActionWrapper"),
    (make_a2c_agent, spaces.Box(0, 3, (2,), np.int64),
     r"make_a2c_agent acts in .* got Box\(0, 3, \(2,\), int64\)"),
    (make_sac_agent, spaces.Box(0, 3, (2,), np.int64),
     r"SAC needs a float Box action space, got Box\(0, 3, \(2,\), int64\); map the actions "
     r"onto a float Box with a gymnasium ActionWrapper"),
    (make_td3_agent, spaces.Discrete(3),
     r"TD3 acts in continuous \(Box\) action spaces, got Discrete\(3\); for discrete actions "
     r"use DQN or PPO"),
    (make_sac_agent, spaces.Box(-1.0, 1.0, (2, 2)),
     r"SAC needs actions on one axis, got the action space Box\(-1.0, 1.0, \(2, 2\), "
     r"float32\); reshape them with a gymnasium ActionWrapper"),
])
def test_spaces_an_algorithm_cannot_act_in_are_refused_with_the_fix(make, space, pattern):
    env = rl.GymEnv(DictObservationEnv(action_space=space))
    config = DQNConfig(total_steps=10) if make is make_dqn_agent else None
    error = ValueError if "one axis" in pattern else TypeError  # a shape, not a kind of space
    with pytest.raises(error, match=pattern):
        make(env, config, device="cpu") if config is not None else make(env, device="cpu")


def test_a_single_env_of_dict_states_records_and_learns():
    env = rl.GymEnv(gymnasium.wrappers.TimeLimit(DictObservationEnv(length=50), 5), seed=0)
    agent = make_ppo_agent(env, PPOConfig(n_steps=16, batch_size=8, n_epochs=1), device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(40, progress=False))
    assert agent.policy.n_updates == 2
    stored = agent.trajectory.container["state"]
    assert origin(stored)[:, 2].max() <= 5 and stored["frame"].dtype == np.uint8
