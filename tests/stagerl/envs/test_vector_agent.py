"""An Agent on a GymVectorEnv stores what the same episodes run one env at a time would store.

The scripted lanes (``scripted_envs``) make every transition identifiable: lane i's
observations are ``[i, episode, t]``, its reward ``100 i + 10 t + action``; even episodes
terminate after ``length`` steps, odd ones are truncated after ``length + 1``.
"""

from __future__ import annotations

from collections import Counter

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from scripted_envs import scripted_env, scripted_vector_env

import stagerl as rl

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]
LENGTHS = (2, 3, 5)


class Scripted(rl.Policy):
    """A deterministic policy of the state alone, for one state or a batch of them."""


@rl.plan.dispatch
def _plan_scripted(policy: Scripted, env: rl.Env):
    state = np.asarray(env.state)
    action = (state[..., 1] + state[..., 2] + state[..., 0]) % 2
    return action.astype(np.int64) if action.ndim else int(action)


def traces(capacity=1000, layout=rl.CircularArraySARTSTraces):
    return layout(capacity=capacity, state=(np.int64, (3,)))


def transitions(container, rows=None):
    """The sampleable transitions as hashable tuples, in row order."""
    rows = container.sampleable_indices() if rows is None else rows
    keys = [k for k in container.keys()]
    cols = {k: container.take(k, np.asarray(rows, dtype=np.int64)) for k in keys}
    return [tuple(tuple(np.atleast_1d(cols[k][i]).tolist()) for k in keys)
            for i in range(len(rows))]


def lane_rows(container, lane):
    off = np.concatenate(([0], np.cumsum(container.lane_lengths())))
    rows = container.sampleable_indices()
    return rows[(rows >= off[lane]) & (rows < off[lane + 1])]


def run_vector(mode, acts, layout=rl.CircularArraySARTSTraces, hook=None):
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS, autoreset_mode=mode))
    agent = rl.Agent(Scripted(), rl.Trajectory(traces(layout=layout)))
    hook = rl.StepsPerEpisode() if hook is None else hook
    rl.run(agent, env, rl.StopAfterNSteps(acts * env.num_envs, progress=False), hook)
    return agent, hook


def run_single(lane, steps, layout=rl.CircularArraySARTSTraces, hook=None):
    agent = rl.Agent(Scripted(), rl.Trajectory(traces(layout=layout)))
    env = rl.GymEnv(scripted_env(lane, LENGTHS[lane]))
    stop = rl.StopAfterNSteps(steps, progress=False)
    hooks = rl.run(agent, env, stop, rl.StepsPerEpisode() if hook is None else hook)
    return agent, hooks


@pytest.mark.parametrize("layout", [rl.CircularArraySARTSTraces, rl.CircularArraySARTSATraces])
@pytest.mark.parametrize("mode", MODES)
def test_stored_transitions_equal_single_env_runs(mode, layout):
    acts = 23
    agent, steps = run_vector(mode, acts, layout)
    container = agent.trajectory.container
    assert container.n_lanes == 3
    per_lane_steps = Counter()
    for lane in range(3):
        stored = transitions(container, lane_rows(container, lane))
        # every transition of this lane stays inside the lane and inside one episode
        for row in stored:
            state, next_state = row[0], row[1]
            assert state[0] == next_state[0] == lane and next_state[1] == state[1]
            assert next_state[2] == state[2] + 1
        # the single env, one episode after another, as many env steps as the lane really took
        single, single_steps = run_single(lane, _real_steps(mode, lane, acts), layout)
        expected = transitions(single.trajectory.container)
        assert stored == expected
        per_lane_steps.update(single_steps.steps)
    assert Counter(steps.steps) == per_lane_steps
    assert agent.trajectory.controller.n_inserted == sum(steps.steps)


def _real_steps(mode, lane, acts):
    """Env steps lane ``lane`` takes in ``acts`` acts: with NEXT_STEP, each episode end costs a
    reset-only act (episode k of the lane has length, length + 1 alternately)."""
    if mode == AutoresetMode.SAME_STEP:
        return acts
    steps, episode, left = 0, 0, acts
    while left > 0:
        length = LENGTHS[lane] + (episode % 2)
        take = min(length, left)
        steps += take
        left -= take + 1  # the reset-only act
        episode += 1
    return steps


@pytest.mark.parametrize("mode", MODES)
def test_per_episode_hooks_equal_single_env_runs(mode):
    acts = 17
    hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode() + rl.RewardsPerEpisode()
    run_vector(mode, acts, hook=hook)
    totals, lengths, rewards = Counter(), Counter(), Counter()
    for lane in range(3):
        single_hook = rl.TotalRewardPerEpisode() + rl.StepsPerEpisode() + rl.RewardsPerEpisode()
        run_single(lane, _real_steps(mode, lane, acts), hook=single_hook)
        totals.update(single_hook[0].rewards)
        lengths.update(single_hook[1].steps)
        rewards.update(tuple(r) for r in single_hook[2].rewards)
    assert Counter(hook[0].rewards) == totals
    assert Counter(hook[1].steps) == lengths
    assert Counter(tuple(r) for r in hook[2].rewards) == rewards


@pytest.mark.parametrize("mode", MODES)
def test_truncation_is_stored_bootstrapped(mode):
    agent, _ = run_vector(mode, 12)
    stored = transitions(agent.trajectory.container)
    # lane 0's second episode (odd) is truncated after 3 steps: a sampleable non-terminal row
    last = [r for r in stored if r[0][:2] == (0, 1) and r[1][2] == 3]
    assert len(last) == 1 and last[0][4] == (False,)
    # its first episode terminated after 2 steps
    first = [r for r in stored if r[0][:2] == (0, 0) and r[1][2] == 2]
    assert len(first) == 1 and first[0][4] == (True,)


def test_sarts_and_same_step_store_the_true_final_observation():
    agent, _ = run_vector(AutoresetMode.SAME_STEP, 6)
    container = agent.trajectory.container

    def lane(i):
        rows = lane_rows(container, i)
        return [(tuple(s), tuple(n), bool(t)) for s, n, t in zip(
            container.take("state", rows).tolist(), container.take("next_state", rows).tolist(),
            container.take("terminal", rows), strict=True)]

    # Each episode's last transition leads to its true final observation ([lane, episode, t]),
    # not to the next episode's first state that SAME_STEP autoreset put in env.state; lane 0's
    # second episode is truncated at t = 3 (a time limit of length + 1): bootstrapped.
    assert lane(0) == [((0, 0, 0), (0, 0, 1), False), ((0, 0, 1), (0, 0, 2), True),
                       ((0, 1, 0), (0, 1, 1), False), ((0, 1, 1), (0, 1, 2), False),
                       ((0, 1, 2), (0, 1, 3), False), ((0, 2, 0), (0, 2, 1), False)]
    assert lane(1) == [((1, 0, 0), (1, 0, 1), False), ((1, 0, 1), (1, 0, 2), False),
                       ((1, 0, 2), (1, 0, 3), True), ((1, 1, 0), (1, 1, 1), False),
                       ((1, 1, 1), (1, 1, 2), False), ((1, 1, 2), (1, 1, 3), False)]


def test_async_vector_env():
    envs = scripted_vector_env((1, 2), vectorization_mode="async")
    env = rl.GymVectorEnv(envs)
    agent = rl.Agent(Scripted(), rl.Trajectory(traces()))
    try:
        hook = rl.run(agent, env, rl.StopAfterNSteps(12, progress=False), rl.StepsPerEpisode())
    finally:
        env.close()
    assert sum(hook.steps) == agent.trajectory.controller.n_inserted > 0
    assert agent.trajectory.container.lane_lengths()[1] > 0


def test_a_second_run_continues_the_same_lanes():
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS))
    agent = rl.Agent(Scripted(), rl.Trajectory(traces()))
    rl.run(agent, env, rl.StopAfterNSteps(9, progress=False))  # lane 0 was just reset
    rl.run(agent, env, rl.StopAfterNSteps(9, progress=False))
    for row in transitions(agent.trajectory.container):
        assert row[0][0] == row[1][0] and row[1][2] == row[0][2] + 1


def test_random_policy_draws_a_batch_over_the_single_action_space():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    env.reset()
    actions = [rl.plan(rl.RandomPolicy(rng=3), env) for _ in range(2)]
    assert actions[0].shape == (4,) and env.action_space.contains(actions[0])
    assert actions[0].tolist() == actions[1].tolist()  # the same seed, the same actions
    policy = rl.RandomPolicy(rng=0)
    drawn = np.stack([rl.plan(policy, env) for _ in range(200)])
    assert set(np.unique(drawn)) == {0, 1}
    box = rl.GymVectorEnv("Pendulum-v1", num_envs=3, seed=0)
    box.reset()
    action = rl.plan(rl.RandomPolicy(rng=0), box)
    assert action.shape == (3, 1) and box.action_space.contains(action)


def test_random_agent_on_cartpole_vector_env():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    traces4 = rl.CircularArraySARTSTraces(capacity=400, state=(np.float32, (4,)))
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces4, rl.BatchSampler(32, rng=0)))
    hook = rl.run(agent, env, rl.StopAfterNSteps(400, progress=False), rl.StepsPerEpisode())
    assert agent.trajectory.controller.n_inserted == sum(hook.steps)
    batch = agent.trajectory.sample()
    assert batch["state"].shape == (32, 4)


def test_q_based_policy_acts_on_the_whole_batch():
    env = rl.GymVectorEnv("FrozenLake-v1", num_envs=4, seed=0, is_slippery=False)
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(16, 4), gamma=0.9, lr=0.5),
                             rl.EpsilonGreedyExplorer(0.1, break_ties=True, rng=0))
    agent = rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=64)))
    hook = rl.run(agent, env, rl.StopAfterNSteps(4000, progress=False),
                  rl.TotalRewardPerEpisode())
    assert policy.explorer.step == 1 + 1000  # one plan per act, for the whole batch
    assert sum(hook.rewards) > 0
    greedy = np.argmax(policy.learner.values(np.arange(16)), axis=1)
    state, path = 0, []
    for _ in range(10):  # the greedy path reaches the goal (state 15)
        move = {0: -1, 1: 4, 2: 1, 3: -4}[int(greedy[state])]
        state = state + move
        path.append(state)
        if state == 15:
            break
    assert path[-1] == 15


def test_trajectory_split_for_another_vector_env_is_refused():
    trajectory = rl.Trajectory(traces(), n_lanes=2)
    agent = rl.Agent(Scripted(), trajectory)
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS))
    with pytest.raises(ValueError, match="already stores 2 lanes"):
        rl.run(agent, env, rl.StopAfterNSteps(3, progress=False))


def test_gymnasium_single_env_is_refused():
    with pytest.raises(TypeError, match="GymEnv"):
        rl.GymVectorEnv(gymnasium.make("CartPole-v1"))


# -- SARSA layouts on an async vector env -------------------------------------------------------
def stored(container):
    """Everything a container holds, lane by lane: every column, the metadata."""
    return ({k: container[k].tolist() for k in container.keys()},
            container.sampleable_inds.tolist(), container.step_numbers.tolist(),
            container.episodes_lengths.tolist(), container.lane_lengths())


@pytest.mark.parametrize("mode", MODES)
def test_a_sartsa_agent_on_an_async_vector_env_stores_what_the_sync_one_stores(mode):
    """The action completing an episode that SAME_STEP autoreset ended is planned on the env
    itself, shown at its final states (an AsyncVectorEnv cannot be copied)."""
    runs = {}
    for vectorization in ("sync", "async"):
        env = rl.GymVectorEnv(scripted_vector_env(LENGTHS, mode, vectorization))
        agent = rl.Agent(rl.RandomPolicy(rng=0),
                         rl.Trajectory(traces(layout=rl.CircularArraySARTSATraces)))
        try:
            rl.run(agent, env, rl.StopAfterNSteps(17 * env.num_envs, progress=False))
        finally:
            env.close()
        runs[vectorization] = (stored(agent.trajectory.container), agent.policy.rng.random())
    assert runs["async"] == runs["sync"]
    columns = runs["sync"][0][0]
    assert len(columns["next_action"]) > 20 and sum(runs["sync"][0][1]) > 20


# -- traces the Agent fills, per lane ---------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_the_agent_fills_a_truncated_trace_in_every_lane(mode):
    layout = rl.CircularArraySARTSTraces(capacity=300, state=(np.int64, (3,)),
                                         extra={"truncated": (np.bool_, ())})
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS, autoreset_mode=mode))
    agent = rl.Agent(Scripted(), rl.Trajectory(layout))
    rl.run(agent, env, rl.StopAfterNSteps(20 * env.num_envs, progress=False))
    c = agent.trajectory.container
    for lane in range(3):
        rows = lane_rows(c, lane)
        next_states = c.take("next_state", rows)
        # odd episodes are cut by the time limit at t = length + 1, never terminated
        cut = (next_states[:, 1] % 2 == 1) & (next_states[:, 2] == LENGTHS[lane] + 1)
        assert c.take("truncated", rows).tolist() == cut.tolist() and cut.any()
        assert not (c.take("terminal", rows) & cut).any()


def test_legal_action_masks_with_same_step_autoreset_are_refused_before_anything_is_stored():
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS, autoreset_mode=AutoresetMode.SAME_STEP))
    layout = rl.CircularArraySLARTTraces(capacity=30, state=(np.int64, (3,)),
                                         legal_actions_mask=(np.bool_, (2,)))
    agent = rl.Agent(Scripted(), rl.Trajectory(layout))
    with pytest.raises(ValueError, match="AutoresetMode.NEXT_STEP"):
        rl.run(agent, env, rl.StopAfterNSteps(6, progress=False))
    assert len(agent.trajectory) == 0


# -- a fresh rollout while the sub-envs' episodes go on -----------------------------------------
class RolloutLearner(rl.Policy):
    """Acts as `Scripted`; learns from each rollout of ``n`` transitions (it records them, lane
    by lane) and starts the next with ``trajectory.clear(keep_running_episodes=True)``."""

    def __init__(self):
        self.rollouts = []


@rl.plan.dispatch
def _plan_rollout_learner(policy: RolloutLearner, env: rl.Env):
    return _plan_scripted(Scripted(), env)


@rl.optimise.dispatch
def _optimise_rollout_learner(policy: RolloutLearner, stage: rl.PostActStage, trajectory):
    for container in trajectory:
        policy.rollouts.append([transitions(container, lane_rows(container, lane))
                                for lane in range(container.n_lanes)])
        trajectory.clear(keep_running_episodes=True)


@pytest.mark.parametrize("layout", [rl.CircularArraySARTSTraces, rl.CircularArraySARTSATraces])
@pytest.mark.parametrize("mode", MODES)
def test_rollouts_cleared_keeping_running_episodes_hold_every_transition_once(mode, layout):
    """Rollout after rollout, each lane's transitions are exactly those a trajectory that is
    never cleared stores, in order: none lost at a rollout's end, none twice, none pairing a
    kept state with the wrong next state."""
    acts, n = 25, 7
    env = rl.GymVectorEnv(scripted_vector_env(LENGTHS, autoreset_mode=mode))
    controller = rl.InsertSampleRatioController(ratio=1 / n, threshold=n)
    agent = rl.Agent(RolloutLearner(), rl.Trajectory(traces(layout=layout), controller=controller))
    rl.run(agent, env, rl.StopAfterNSteps(acts * env.num_envs, progress=False))
    rollouts = agent.policy.rollouts
    assert len(rollouts) >= 5
    whole, _ = run_vector(mode, acts, layout)  # the same run, never cleared
    left = agent.trajectory.container
    for lane in range(3):
        learned = [row for rollout in rollouts for row in rollout[lane]]
        learned += transitions(left, lane_rows(left, lane))  # the rollout still collecting
        assert learned == transitions(whole.trajectory.container,
                                      lane_rows(whole.trajectory.container, lane))
    # a rollout starts inside running episodes: its first state of lane 2 (episodes of 5, 6
    # steps) is mid-episode
    assert any(r[2] and r[2][0][0][2] > 0 for r in rollouts[1:])
