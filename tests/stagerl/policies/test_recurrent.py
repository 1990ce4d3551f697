"""The recurrent-policy protocol: each lane's memory starts again exactly where its episode
starts (one env, each sub-env in both autoreset modes, each player of a game on its own turns),
the state that went into each step is stored with it, evaluation keeps its own memory."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

import stagerl as rl
from stagerl.core.actions import as_batch, checked_state, one_or_batch
from stagerl.multi_agent import MultiAgentPolicy, RockPaperScissors, TicTacToe


class StepCounter(rl.RecurrentPolicy):
    """Remembers how many steps its lane took in the episode; acts ``count % n_actions``
    (on a board: the first empty square)."""

    recurrent_state_shape = (1,)

    def __init__(self, frame=(4,), n_actions=2):
        self.frame, self.n_actions = frame, n_actions


@rl.compute_actions.dispatch
def _compute_counter(policy: StepCounter, observations, state, deterministic):
    batch, single = as_batch(observations, policy.frame, "StepCounter")
    state = checked_state("StepCounter", state, (1,), len(batch), single, policy.initial_state)
    if policy.frame == (3, 3, 2):  # tic-tac-toe: the first empty square
        empty = (np.asarray(batch).reshape(len(batch), 9, 2) == 0).all(axis=2)
        actions = empty.argmax(axis=1)
    else:
        actions = state[:, 0].astype(np.int64) % policy.n_actions
    return one_or_batch(actions, state + 1, {"value": 10.0 * state[:, 0]}, single)


def _counting_agent(capacity=256, state=(np.float32, (4,))):
    traces = rl.CircularArraySARTSTraces(capacity, state=state, extra={
        "recurrent_state": (np.float32, (1,)), "value": (np.float32, ())})
    return rl.Agent(StepCounter(state[1]), rl.Trajectory(traces))


def _stored_counts_and_steps(container):
    rows = container.sampleable_indices()
    counts = container.take("recurrent_state", rows)[:, 0]
    steps = np.asarray(container.step_numbers)[rows]
    return counts, steps


# ---- the memory itself ------------------------------------------------------------------------


def test_resetting_a_lane_leaves_every_other_lane_bitwise_unchanged():
    memory = rl.LaneMemory((3, 5))
    rng = np.random.default_rng(0)
    memory.ensure(6, lambda n: rng.normal(size=(n, 3, 5)).astype(np.float32))
    before = memory.values.copy()
    memory.reset(np.array([False, False, True, False, True, False]),
                 lambda n: np.zeros((n, 3, 5), np.float32))
    after = memory.values
    assert (after[[2, 4]] == 0).all()
    kept = [0, 1, 3, 5]
    assert after[kept].view(np.uint32).tobytes() == before[kept].view(np.uint32).tobytes()
    memory.reset([7], lambda n: np.ones((n, 3, 5), np.float32))  # a lane not held yet
    assert len(memory.values) == 8 and (memory.values[7] == 1).all() and (
        memory.values[6] == 1).all()


# ---- where each lane starts again --------------------------------------------------------------


def test_one_env_starts_each_episode_from_the_initial_state():
    env = rl.GymEnv(TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=4), seed=0)
    agent = _counting_agent()
    hook = rl.run(agent, env, rl.StopAfterNEpisodes(5, progress=False), rl.StepsPerEpisode())
    counts, steps = _stored_counts_and_steps(agent.trajectory.container)
    assert counts.tolist() == (steps - 1).tolist() and len(hook.steps) == 5


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_each_sub_env_starts_again_exactly_where_its_episode_starts(mode):
    limits = (2, 3, 5, 50)

    def make(limit):
        return lambda: TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=limit)

    env = rl.GymVectorEnv(SyncVectorEnv([make(k) for k in limits], autoreset_mode=mode), seed=0)
    agent = _counting_agent()
    rl.run(agent, env, rl.StopAfterNSteps(4 * 30, progress=False))
    container = agent.trajectory.container
    counts, steps = _stored_counts_and_steps(container)
    assert counts.tolist() == (steps - 1).tolist()  # the count of steps so far in its episode
    lane = container.lane_of(container.sampleable_indices())[0]
    assert counts[lane == 0].max() == 1 and counts[lane == 3].max() >= 8


def test_each_player_remembers_its_own_turns_only_on_its_own_lane():
    shared = _counting_agent(state=(np.int8, (3, 3, 2)))
    rl.run(MultiAgentPolicy({"player_1": shared, "player_2": shared}), TicTacToe(),
           rl.StopAfterNEpisodes(4, progress=False))
    container = shared.trajectory.container
    assert container.n_lanes == 2
    counts, steps = _stored_counts_and_steps(container)
    # Each player's n-th move of a game went in with the count of its own earlier moves, and
    # is stored with what its own plan gave (the other player planned in between).
    assert counts.tolist() == (steps - 1).tolist() and counts.max() >= 2
    values = container.take("value", container.sampleable_indices())
    assert values.tolist() == (10 * counts).tolist()


def test_a_game_played_simultaneously_keeps_each_players_memory_apart():
    shared = _counting_agent(state=(np.int64, ()))
    shared.policy.frame, shared.policy.n_actions = (), 3
    rl.run(MultiAgentPolicy({"player_0": shared, "player_1": shared}),
           RockPaperScissors(max_cycles=4), rl.StopAfterNEpisodes(3, progress=False))
    counts, steps = _stored_counts_and_steps(shared.trajectory.container)
    assert counts.tolist() == (steps - 1).tolist() and counts.max() == 3


# ---- evaluation and copies ----------------------------------------------------------------------


def test_an_evaluation_in_the_middle_of_training_never_touches_the_training_memory():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    agent = _counting_agent()
    rl.run(agent, env, rl.StopAfterNSteps(3 * 4, progress=False))
    before = agent.policy.memory.values.copy()
    rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=1), episodes=2)
    assert agent.policy.memory.values.tobytes() == before.tobytes()
    assert not agent.policy.deterministic
    with rl.deterministic(agent) as acting:
        assert acting.memory is not agent.policy.__dict__["_memories"][False]


def test_a_copy_goes_on_with_the_same_memory():
    import copy
    import pickle

    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0)
    agent = _counting_agent()
    rl.run(agent, env, rl.StopAfterNSteps(2 * 3, progress=False))
    for twin in (copy.deepcopy(agent), pickle.loads(pickle.dumps(agent))):
        assert twin.policy.memory.values.tolist() == agent.policy.memory.values.tolist()


# ---- refusals ------------------------------------------------------------------------------------


def test_traces_without_the_state_trace_are_refused_before_anything_is_stored():
    traces = rl.CircularArraySARTSTraces(16, state=(np.float32, (4,)))
    with pytest.raises(ValueError, match=r"no 'recurrent_state' trace .* extra=\{'recurrent_"
                                         r"state': \(np.float32, \(1,\)\)\}"):
        rl.Agent(StepCounter(), rl.Trajectory(traces))
    assert len(traces) == 0


def test_a_next_action_layout_on_a_same_step_vector_env_is_refused_with_the_fix():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0,
                          vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    traces = rl.CircularArraySARTSATraces(16, state=(np.float32, (4,))) + rl.Traces(
        recurrent_state=rl.CircularArrayBuffer(17, (1,), np.float32))
    agent = rl.Agent(StepCounter(), rl.Trajectory(traces))
    with pytest.raises(ValueError, match="AutoresetMode.NEXT_STEP"):
        rl.run(agent, env, rl.StopAfterNSteps(4, progress=False))
    assert len(agent.trajectory) == 0
