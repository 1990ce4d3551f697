"""The on-policy machinery: rollouts per sub-env, GAE with truncations bootstrapped, the cycle
rollout -> update -> clear on single and vector envs in both autoreset modes."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)
from scripted_envs import scripted_env, scripted_vector_env

import stagerl as rl
from stagerl.algorithms.on_policy import (
    ActorCritic,
    OnPolicy,
    add_discounted_returns,
    add_gae,
    rollout_trajectory,
)


class Recorder(OnPolicy):
    """Learns nothing: keeps the batch of every rollout (numpy copies)."""

    def __init__(self, model: ActorCritic, gamma: float = 0.5, gae_lambda: float = 0.5):
        super().__init__(model, torch.optim.SGD(model.parameters(), lr=0.0), gamma, gae_lambda,
                         rng=0)
        self.batches: list[dict] = []

    def update(self, batch: dict) -> None:
        self.batches.append({k: v.cpu().numpy().copy() for k, v in batch.items()})


def always_action_0_and_value_t() -> ActorCritic:
    """A linear actor-critic over the scripted observation [lane, episode, t]: it always takes
    action 0 (logits 50 and -50) and values a state at its step number t."""
    model = ActorCritic(3, gymnasium.spaces.Discrete(2), net_arch=(), ortho_init=False)
    with torch.no_grad():
        model.actor[0].weight.zero_()
        model.actor[0].bias.copy_(torch.tensor([50.0, -50.0]))
        model.critic[0].weight.copy_(torch.tensor([[0.0, 0.0, 1.0]]))
        model.critic[0].bias.zero_()
    return model


def scripted(mode, lengths=(2,)):
    return rl.GymVectorEnv(scripted_vector_env(lengths, mode))


# Lane 0 of the scripted env: episode 0 terminates after 2 steps, episode 1 is truncated after
# 3 (its final observation has t = 3, so V = 3), episode 2 is cut by the rollout's end after one
# step (next state t = 1). Rewards 10 t, gamma = lambda = 0.5:
#   episode 0: delta = [0 + .5 * 1 - 0, 10 - 1] = [.5, 9]           A = [.5 + .25 * 9, 9]
#   episode 1: delta = [.5, 10 + .5 * 2 - 1, 20 + .5 * 3 - 2]       A = [4.21875, 14.875, 19.5]
#   episode 2: delta = [0 + .5 * 1 - 0]                               A = [.5]
EXPECTED_ADVANTAGE = [2.75, 9.0, 4.21875, 14.875, 19.5, 0.5]


@pytest.mark.parametrize("kind", ["same_step", "next_step", "single"])
def test_gae_with_a_truncation_in_the_middle_of_a_rollout(kind):
    if kind == "single":
        env, acts = rl.GymEnv(scripted_env(0, 2)), 6
    else:  # NEXT_STEP: two acts only reset the sub-env, they are not steps
        same = kind == "same_step"
        env = scripted(AutoresetMode.SAME_STEP if same else AutoresetMode.NEXT_STEP)
        acts = 6 if same else 8
    agent = rl.Agent(Recorder(always_action_0_and_value_t()), rollout_trajectory(env, 6))
    rl.run(agent, env, rl.StopAfterNSteps(acts, progress=False))
    (batch,) = agent.policy.batches
    assert batch["reward"].tolist() == [0.0, 10.0, 0.0, 10.0, 20.0, 0.0]
    assert batch["terminal"].tolist() == [False, True, False, False, False, False]
    assert batch["truncated"].tolist() == [False, False, False, False, True, False]
    assert batch["advantage"].tolist() == EXPECTED_ADVANTAGE
    assert batch["return"].tolist() == [2.75, 10.0, 4.21875, 15.875, 21.5, 0.5]


def test_a_truncated_episode_bootstraps_from_its_final_observation():
    env = scripted(AutoresetMode.SAME_STEP)
    agent = rl.Agent(Recorder(always_action_0_and_value_t()), rollout_trajectory(env, 6))
    rl.run(agent, env, rl.StopAfterNSteps(6, progress=False))
    (batch,) = agent.policy.batches
    # The truncated step (reward 20, V(s) = 2) bootstraps V(final observation, t = 3) = 3:
    # delta = 20 + 0.5 * 3 - 2 = 19.5. Treated as terminal it would be 20 - 2 = 18, and the two
    # steps before it would get 0.5 + 0.25 * (10 + 0.25 * 18) = 4.125 and 14.5.
    assert batch["advantage"][2:5].tolist() == [4.21875, 14.875, 19.5]
    assert batch["bootstrap_value"].tolist() == [0.0, 0.0, 0.0, 0.0, 3.0, 1.0]


class AtCounts:
    """A controller that allows one sample when the transitions inserted reach each count."""

    def __init__(self, counts):
        self.counts, self.n_inserted, self.n_sampled = list(counts), 0, 0

    def on_insert(self, n, data=None):
        self.n_inserted += n

    def on_sample(self):
        due = self.n_sampled < len(self.counts) and \
            self.n_inserted >= self.counts[self.n_sampled]
        self.n_sampled += due
        return due


class AfterUpdates:
    """Stop once the agent's policy has learned from ``n`` rollouts."""

    def __init__(self, n):
        self.n = n

    def check(self, agent, env):
        return agent.policy.n_updates >= self.n


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_each_sub_env_is_its_own_rollout(mode):
    """Three sub-envs with episodes of different lengths give, lane by lane, the states and
    advantages of the same lane run alone as a single env cut at the same steps, over two
    rollouts: the second goes on with the episodes that the first one cut."""
    lengths, n_steps = (2, 3, 5), 7
    env = scripted(mode, lengths)
    agent = rl.Agent(Recorder(always_action_0_and_value_t()), rollout_trajectory(env, n_steps))
    rl.run(agent, env, AfterUpdates(2))
    batches = agent.policy.batches
    sizes = np.cumsum([len(b["reward"]) for b in batches]).tolist()
    if mode is AutoresetMode.SAME_STEP:
        assert sizes == [21, 42]  # n_steps of each of the 3 sub-envs, every act
    else:  # acts that only reset a sub-env add nothing: a rollout ends at the act reaching 21
        assert 21 <= sizes[0] < 24 and 42 <= sizes[1] < 45
    for lane, length in enumerate(lengths):
        rows = [b["state"][:, 0] == lane for b in batches]
        counts = np.cumsum([r.sum() for r in rows])
        if mode is AutoresetMode.SAME_STEP:
            assert counts.tolist() == [n_steps, 2 * n_steps]
        alone = rl.GymEnv(scripted_env(lane, length))
        trajectory = rollout_trajectory(alone, n_steps, controller=AtCounts(counts))
        single = rl.Agent(Recorder(always_action_0_and_value_t()), trajectory)
        rl.run(single, alone, AfterUpdates(2))
        for mine, theirs, lane_rows in zip(batches, single.policy.batches, rows, strict=True):
            assert mine["state"][lane_rows].tolist() == theirs["state"].tolist()
            assert mine["advantage"][lane_rows].tolist() == theirs["advantage"].tolist()
    second = batches[1]["state"]
    assert second[:3, 2].tolist() != [0, 0, 0]  # rollout 2 starts inside running episodes


def test_a_run_stopped_right_after_learning_mid_episode_goes_on_in_a_second_run():
    """Single env: a rollout learned mid-episode leaves the trajectory empty; the next step
    starts the next rollout from the state it was planned at, and a new run starts afresh."""
    env = rl.GymEnv(scripted_env(0, 5))  # episodes of 5 (terminated) and 6 (truncated) steps
    agent = rl.Agent(Recorder(always_action_0_and_value_t()), rollout_trajectory(env, 3))
    rl.run(agent, env, rl.StopAfterNSteps(3, progress=False))  # stops right after learning
    rl.run(agent, env, rl.StopAfterNSteps(4, progress=False))  # learns at 3, one step more
    rl.run(agent, env, rl.StopAfterNSteps(2, progress=False))
    t = [b["state"][:, 2].tolist() for b in agent.policy.batches]
    # each run starts a new episode; run 2's last step (t = 3, after its rollout was learned)
    # is learned with run 3's first two, its chain cut (bootstrapped) where run 2 stopped
    assert t == [[0, 1, 2], [0, 1, 2], [3, 0, 1]]
    assert agent.policy.batches[2]["chain_end"].tolist() == [True, False, True]


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_learning_at_the_act_that_ends_an_episode(mode):
    # Lane 0's first episode ends at its second step, exactly when the rollout is complete.
    env = scripted(mode, (2, 4))
    agent = rl.Agent(Recorder(always_action_0_and_value_t()), rollout_trajectory(env, 2))
    rl.run(agent, env, AfterUpdates(3))
    states = [b["state"][b["state"][:, 0] == 0, 1:].tolist() for b in agent.policy.batches]
    # lane 0, (episode, t): the next episode starts afresh in the next rollout
    assert states == [[[0, 0], [0, 1]], [[1, 0], [1, 1]], [[1, 2], [2, 0]]]


def test_a_rollout_that_overflows_its_ring_raises():
    env = scripted(AutoresetMode.SAME_STEP, (1, 1))  # every step ends an episode: 2 rows a step
    controller = rl.InsertSampleRatioController(ratio=1 / 8, threshold=8)
    agent = rl.Agent(Recorder(always_action_0_and_value_t()),
                     rollout_trajectory(env, 4, controller=controller, lane_capacity=5))
    with pytest.raises(RuntimeError, match="lane_capacity"):
        rl.run(agent, env, rl.StopAfterNSteps(8, progress=False))


def test_deterministic_acting_is_greedy_and_draws_nothing():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    model = ActorCritic(4, env.single_action_space)
    policy = Recorder(model)
    env.reset()
    before = policy.rng.bit_generator.state
    with rl.deterministic(policy):
        action = rl.plan(policy, env)
    logits = model.actor(torch.as_tensor(env.state)).argmax(-1)
    assert action.tolist() == logits.tolist()
    assert policy.rng.bit_generator.state == before and policy._steps == {}
    rl.plan(policy, env)
    assert policy.rng.bit_generator.state != before


class PushAway(gymnasium.Env):
    """One-step episodes: observation 0, a Box action in [-1, 1], reward 0."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, np.float32))
        return np.zeros(1, np.float32), 0.0, True, False, {}


def test_gaussian_actions_are_clipped_for_the_env_and_stored_as_sampled():
    env = rl.GymEnv(PushAway())
    model = ActorCritic(1, env.action_space, net_arch=(), ortho_init=False, log_std_init=1.0)
    with torch.no_grad():
        model.actor[0].bias.fill_(0.5)
    policy = Recorder(model)
    agent = rl.Agent(policy, rollout_trajectory(env, 64))
    rl.run(agent, env, rl.StopAfterNSteps(64, progress=False))
    (batch,) = policy.batches
    stored = batch["action"][:, 0]
    assert np.abs(stored).max() > 1.0  # std e: many draws fall outside the Box
    # the log-probability is that of the unclipped draw
    expected = -0.5 * ((stored - 0.5) / np.e) ** 2 - 1.0 - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(batch["log_prob"], expected, rtol=1e-5)
    with rl.deterministic(policy):
        env.reset()
        assert rl.plan(policy, env).tolist() == [0.5]


def test_add_gae_and_discounted_returns_on_a_hand_made_rollout():
    # Two lanes of two steps; lane 1's first step ends a truncated episode (bootstrap 4).
    rollout = {
        "reward": np.array([[1.0, 1.0], [1.0, 2.0]], np.float32),
        "value": np.array([[0.0, 1.0], [2.0, 0.0]], np.float32),
        "bootstrap_value": np.array([[0.0, 4.0], [0.0, 3.0]], np.float32),
        "chain_end": np.array([[False, True], [True, True]]),
    }
    add_gae(rollout, gamma=0.5, lam=1.0)
    # lane 0: terminal at t=1: A1 = 1 - 2 = -1, A0 = 1 + .5 * 2 - 0 + .5 * -1 = 1.5
    # lane 1: A0 = 1 + .5 * 4 - 1 = 2, A1 = 2 + .5 * 3 - 0 = 3.5
    assert rollout["advantage"].tolist() == [[1.5, 2.0], [-1.0, 3.5]]
    assert rollout["return"].tolist() == [[1.5, 3.0], [1.0, 3.5]]
    add_discounted_returns(rollout, gamma=0.5)
    assert rollout["return"].tolist() == [[1.5, 3.0], [1.0, 3.5]]


def test_recording_a_step_with_an_action_plan_did_not_return_raises():
    env = scripted(AutoresetMode.SAME_STEP, (3, 3))
    agent = rl.Agent(Recorder(always_action_0_and_value_t()), rollout_trajectory(env, 4))
    env.reset()
    rl.push(agent, rl.PreEpisodeStage(), env)
    rl.plan(agent, env)
    other = np.array([1, 1])
    env.act(other)
    with pytest.raises(RuntimeError, match="another action"):
        rl.push(agent, rl.PostActStage(), env, other)
