"""FrameStacker: the stacks a policy acts on equal stacking at collection time and at sample time.

``PixelEnv`` frames encode where they come from: pixel ``[0, 0]`` is the sub-env, ``[0, 1]`` the
episode, ``[0, 2]`` the step. Episodes of 2 to 6 steps (some shorter than a stack), terminated
and truncated in turn, and sub-envs whose episodes end at different acts.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import FrameStackObservation

import stagerl as rl
from stagerl.envs.frame_stack import FrameStacker
from trajectories import CircularArraySARTSTraces, NStepBatchSampler

K = 4
MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


class PixelEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0, 255, (3, 3), np.uint8)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, lane: int = 0):
        self.lane, self.episode, self.t = lane, -1, 0

    def frame(self):
        frame = np.zeros((3, 3), np.uint8)
        frame[0] = self.lane, self.episode, self.t
        return frame

    def reset(self, *, seed=None, options=None):
        self.episode, self.t = self.episode + 1, 0
        return self.frame(), {}

    def step(self, action):
        self.t += 1
        end = self.t >= 2 + (3 * self.lane + self.episode) % 5
        return self.frame(), 1.0, end and self.episode % 2 == 0, end and self.episode % 2 == 1, {}


def vector(n, mode, stacked=False):
    def make(lane):
        env = PixelEnv(lane)
        return lambda: FrameStackObservation(env, K, padding_type="reset") if stacked else env

    return SyncVectorEnv([make(i) for i in range(n)], autoreset_mode=mode)


def code(frames):
    """(lane, episode, step) of each frame of a stack (or of each stack of a batch)."""
    return np.asarray(frames)[..., 0, :].tolist()


@pytest.mark.parametrize("mode", MODES)
def test_acting_stacks_equal_stacking_in_each_sub_env(mode):
    # reference: gymnasium's FrameStackObservation inside each sub-env (stacks at collection)
    env, reference = rl.GymVectorEnv(vector(3, mode)), rl.GymVectorEnv(vector(3, mode, True))
    stacker = FrameStacker(K)
    env.reset(), reference.reset()
    ends = 0
    for _ in range(60):
        np.testing.assert_array_equal(stacker.observe(env), reference.state)
        env.act(np.zeros(3, np.int64)), reference.act(np.zeros(3, np.int64))
        ends += env.any_episode_end
    assert ends > 10


def test_a_stack_holds_one_episode_of_one_sub_env_and_pads_with_its_first_frame():
    env = rl.GymVectorEnv(vector(2, AutoresetMode.NEXT_STEP))
    stacker = FrameStacker(K)
    env.reset()
    for _ in range(30):
        for lane, stack in enumerate(code(stacker.observe(env))):
            lanes, episodes, steps = zip(*stack, strict=True)
            assert set(lanes) == {lane} and len(set(episodes)) == 1
            last = steps[-1]
            assert list(steps) == [max(0, last - K + 1 + i) for i in range(K)]
        env.act(np.zeros(2, np.int64))


def test_a_single_env_stack_restarts_where_start_is_called():
    env, stacker = rl.GymEnv(PixelEnv()), FrameStacker(K)
    env.reset()
    assert code(stacker.observe(env)) == [[0, 0, 0]] * K
    env.act(0)
    assert code(stacker.observe(env)) == [[0, 0, 0]] * 3 + [[0, 0, 1]]
    env.act(0)  # the episode (2 steps) ends
    env.reset(), stacker.start()
    assert code(stacker.observe(env)) == [[0, 1, 0]] * K


class StackingPolicy(rl.Policy):
    """Acts on stacks from a FrameStacker and remembers each one by the frame it ends with."""

    def __init__(self):
        self.stacker, self.stacks = FrameStacker(K), {}


@rl.plan.dispatch
def _plan_stacking(policy: StackingPolicy, env: rl.VectorEnv):
    stacks = policy.stacker.observe(env)
    for stack in stacks:
        policy.stacks[tuple(stack[-1, 0].tolist())] = stack
    return np.zeros(env.num_envs, np.int64)


@pytest.mark.parametrize("mode", MODES)
def test_sampled_stacks_equal_the_stacks_acted_on_across_lanes_episodes_and_ring_wraps(mode):
    env = rl.GymVectorEnv(vector(3, mode))
    traces = CircularArraySARTSTraces(capacity=120, state=(np.uint8, (3, 3)))
    agent = rl.Agent(StackingPolicy(), rl.Trajectory(traces))
    rl.run(agent, env, rl.StopAfterNSteps(3 * 300, progress=False))  # each ring wraps
    batch = NStepBatchSampler(n=1, gamma=1.0, batch_size=2000, stack_size=K, rng=0).sample(
        agent.trajectory.container)
    assert agent.trajectory.container.n_lanes == 3
    acted = agent.policy.stacks
    sampled = {tuple(stack[-1, 0].tolist()) for stack in batch["state"]}
    assert len(sampled) > 20 and min(step for *_, step in sampled) >= K - 1
    for stack, next_stack in zip(batch["state"], batch["next_state"], strict=True):
        np.testing.assert_array_equal(stack, acted[tuple(stack[-1, 0].tolist())])
        key = tuple(next_stack[-1, 0].tolist())
        if key in acted:  # the final frame of a SAME_STEP episode is never acted on
            np.testing.assert_array_equal(next_stack, acted[key])


def test_the_stacker_equals_dqns_frame_stack_on_the_same_frames():
    from stagerl.algorithms.dqn.networks import FrameStack

    env = rl.GymVectorEnv(vector(3, AutoresetMode.NEXT_STEP))
    ours, dqns = FrameStacker(K), FrameStack(K)
    env.reset()
    for _ in range(40):
        np.testing.assert_array_equal(ours.observe(env), dqns.observe(env.state,
                                                                      env.episode_start))
        env.act(np.zeros(3, np.int64))


def test_a_returned_stack_is_not_changed_by_later_pushes():
    stacker = FrameStacker(2)
    first = stacker.push(np.array([[1]]), True)
    stacker.push(np.array([[2]]), False)
    assert first.tolist() == [[[1], [1]]]


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None])
def test_bad_stack_sizes_are_refused_with_the_value(bad):
    with pytest.raises((TypeError, ValueError), match="num_frames"):
        FrameStacker(bad)
