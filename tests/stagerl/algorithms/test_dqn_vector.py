"""DQN on vector envs (lanes whose rings wrap) and with stacked frames: the data it learns from
is checked transition by transition on a scripted env whose observations say where they come
from."""

import math

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from scripted_envs import scripted_env, scripted_vector_env

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

LENGTHS = (2, 3, 5)  # lane i: even episodes terminate after LENGTHS[i] steps, odd ones are
GAMMA = 0.5          # truncated after LENGTHS[i] + 1 (see scripted_envs)


def config(**settings):
    base = dict(total_steps=3_000, learning_starts=60, train_freq=30, gradient_steps=2,
                batch_size=32, buffer_size=24, target_update_interval=40, net_arch=(16,),
                gamma=GAMMA)
    return DQNConfig(**{**base, **settings})


def run_scripted(mode, steps=600, **settings):
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS, autoreset_mode=mode), seed=0)
    agent = make_dqn_agent(env, config(**settings), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return agent


def newest_states(container):
    """The newest state of each lane (the next state of its last row)."""
    lengths = container.lane_lengths() if hasattr(container, "lane_lengths") else [len(container)]
    last_rows = np.cumsum(lengths) - 1
    return {tuple(s) for s in container["next_state"][last_rows].tolist()}


def check_transitions(rows, n_step, stack_size, newest):
    """Every sampled row is a real n-step transition of one lane's one episode."""
    state, next_state = rows["state"], rows["next_state"]
    if stack_size > 1:  # windows of consecutive frames of one episode of one lane
        for window in (state, next_state):
            lane_episode = window[:, :, :2]
            assert (lane_episode == lane_episode[:, -1:]).all()
            assert (np.diff(window[:, :, 2], axis=1) == 1).all()
        state, next_state = state[:, -1], next_state[:, -1]
    lane, episode, t = state.T
    assert (next_state[:, 0] == lane).all() and (next_state[:, 1] == episode).all()
    steps = next_state[:, 2] - t
    discount = rows.get("discount", np.full(len(t), GAMMA))
    assert np.allclose(discount, GAMMA**steps)
    assert ((steps >= 1) & (steps <= n_step)).all()
    length = np.asarray(LENGTHS)[lane]
    ends = np.where(episode % 2 == 0, length, length + 1)
    assert (rows["terminal"] == ((episode % 2 == 0) & (next_state[:, 2] == length))).all()
    # n is cut only where the episode ended or at the lane's newest state
    for row in np.flatnonzero(steps < n_step):
        assert next_state[row, 2] == ends[row] or tuple(next_state[row].tolist()) in newest
    # reward_j = 100 lane + 10 (t + j) + action_j; the first action is the row's own
    powers = GAMMA ** np.arange(n_step)
    within = np.arange(n_step)[None, :] < steps[:, None]
    base = ((100 * lane[:, None] + 10 * (t[:, None] + np.arange(n_step))) * powers * within).sum(1)
    rest = rows["reward"] - base - rows["action"]
    later = (powers[1:] * within[:, 1:]).sum(1)
    assert ((rest >= -1e-4) & (rest <= later + 1e-4)).all()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("n_step, stack_size", [(1, 1), (3, 1), (1, 3), (3, 2)])
def test_vector_env_batches_are_transitions_of_one_lanes_episode(mode, n_step, stack_size):
    agent = run_scripted(mode, n_step=n_step, stack_size=stack_size)
    container = agent.trajectory.container
    assert container.n_lanes == 3 and len(container) <= 24  # every lane's ring has wrapped
    assert agent.trajectory.controller.n_sampled > 5
    for _ in range(5):
        check_transitions(agent.trajectory.sample().rows, n_step, stack_size,
                          newest_states(container))


def test_single_env_batches_are_transitions_of_one_episode():
    env = rl.GymEnv(scripted_env(lane=2, length=LENGTHS[2]), seed=0)
    agent = make_dqn_agent(env, config(n_step=3, stack_size=2), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
    for _ in range(5):
        check_transitions(agent.trajectory.sample().rows, 3, 2,
                          newest_states(agent.trajectory.container))


def test_cartpole_vector_env_learns_with_every_option_that_lanes_take():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    settings = dict(double=True, dueling=True, n_step=3, distributional=True, v_min=0.0,
                    v_max=50.0, stack_size=2, buffer_size=200, gamma=0.99)
    agent = make_dqn_agent(env, config(**settings), seed=0, device="cpu")
    before = [p.detach().clone() for p in agent.policy.network.parameters()]
    rl.run(agent, env, rl.StopAfterNSteps(1_200, progress=False))
    assert agent.policy.env_steps == 1_200
    # 1,200 transitions less the reset-only acts of ended episodes: one burst per 30 from 90
    bursts = agent.trajectory.controller.n_sampled
    assert bursts == (agent.trajectory.controller.n_inserted - 90) // 30 + 1
    assert any(not torch.equal(a, b) for a, b in
               zip(before, agent.policy.network.parameters(), strict=True))


class CountingNetwork:
    def __init__(self, inner):
        self.inner, self.batches = inner, []

    def refresh(self):
        self.inner.refresh()

    def q_values(self, x, single=True):
        self.batches.append(np.shape(x))
        return self.inner.q_values(x, single)


def test_vector_env_acts_with_one_forward_pass_for_every_sub_env():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    settings = dict(exploration_initial_eps=0.0, exploration_final_eps=0.0, learning_starts=0)
    agent = make_dqn_agent(env, config(**settings), seed=0, device="cpu")
    counting = agent.policy.acting_network = CountingNetwork(agent.policy.acting_network)
    rl.run(agent, env, rl.StopAfterNSteps(40, progress=False))
    assert counting.batches == [(4, 4)] * 10


class FrameCounter(gymnasium.Env):
    """Observation: the step count of the episode, as a 1-element frame; episodes of 4 steps."""

    observation_space = gymnasium.spaces.Box(0, 100, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([float(self.t)], np.float32), 0.0, self.t == 4, False, {}


class StackSeen(rl.Hook):
    def __init__(self):
        self.stacks = []


@rl.push.dispatch
def _seen(hook: StackSeen, stage: rl.PostActStage, policy: object, env: object):
    hook.stacks.append(policy.policy._frames[False].frames[..., 0].tolist())


def test_frame_stack_acting_restarts_with_every_episode_on_a_single_env():
    env = rl.GymEnv(FrameCounter(), seed=0)
    agent = make_dqn_agent(env, config(stack_size=3, buffer_size=50), seed=0, device="cpu")
    hook = rl.run(agent, env, rl.StopAfterNSteps(6, progress=False), StackSeen())
    # what was acted on: the first frame repeated at an episode's start
    assert [s[0] for s in hook.stacks] == [[0, 0, 0], [0, 0, 1], [0, 1, 2], [1, 2, 3],
                                          [0, 0, 0], [0, 0, 1]]
    rl.evaluate(agent, rl.GymEnv(FrameCounter()), episodes=2)
    assert agent.policy._frames[False].frames[0, :, 0].tolist() == [0, 0, 1]  # left alone


def test_frame_stack_acting_restarts_each_sub_env_at_its_episode_start():
    env = rl.GymVectorEnv(gymnasium.vector.SyncVectorEnv([FrameCounter, FrameCounter]), seed=0)
    agent = make_dqn_agent(env, config(stack_size=2, buffer_size=50), seed=0, device="cpu")
    hook = rl.run(agent, env, rl.StopAfterNSteps(12, progress=False), StackSeen())
    # NEXT_STEP autoreset: the fifth act, at the final state 4, only resets the sub-env; the
    # sixth starts from the new episode's first frame
    assert [s[0] for s in hook.stacks] == [[0, 0], [0, 1], [1, 2], [2, 3], [3, 4], [0, 0]]
    assert all(s[0] == s[1] for s in hook.stacks)


def test_burst_rows_per_lane_follow_the_total_buffer_size():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    agent = make_dqn_agent(env, config(buffer_size=100), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(800, progress=False))
    assert agent.trajectory.container.lane_lengths() == [math.ceil(100 / 4)] * 4
