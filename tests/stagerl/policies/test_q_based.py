import numpy as np
import pytest

import stagerl as rl


class MaskedWalk(rl.RandomWalk1D):
    """RandomWalk1D where only moving left is legal (test-only)."""

    legal_actions_mask = np.array([True, False])


class TwoLanes:
    """A stand-in for a vector env: one state per sub-env."""

    state = np.array([1, 2])


def q_policy(table, explorer=None, method="SARS"):
    approximator = rl.TabularQApproximator(*np.shape(table))
    approximator.table[...] = table
    learner = rl.TDLearner(approximator, method=method, gamma=0.5, lr=0.5)
    return rl.QBasedPolicy(learner, explorer or rl.GreedyExplorer())


def test_plan_asks_the_explorer_about_the_values_at_env_state():
    table = np.zeros((7, 2))
    table[3] = [0.0, 1.0]
    table[4] = [1.0, 0.0]
    policy = q_policy(table)
    env = rl.RandomWalk1D()
    env.reset()
    assert rl.plan(policy, env) == 1
    env.act(1)
    assert rl.plan(policy, env) == 0


def test_plan_passes_the_env_mask():
    table = np.zeros((7, 2))
    table[:, 1] = 5.0                                    # right looks best, but is illegal
    policy = q_policy(table, rl.EpsilonGreedyExplorer(0.5, rng=0))
    env = MaskedWalk()
    env.reset()
    assert {rl.plan(policy, env) for _ in range(100)} == {0}


def test_plan_on_a_batch_of_states_gives_an_array():
    table = np.array([[0.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    actions = rl.plan(q_policy(table), TwoLanes())
    assert isinstance(actions, np.ndarray) and actions.tolist() == [1, 0]


def test_optimise_at_post_act_updates_with_every_batch_in_order():
    policy = q_policy(np.zeros((3, 2)))
    batches = [
        {"state": [0], "action": [1], "reward": [1.0], "terminal": [True], "next_state": [1]},
        {"state": [0], "action": [1], "reward": [1.0], "terminal": [True], "next_state": [1]},
    ]
    rl.optimise(policy, rl.PostActStage(), batches)
    assert policy.learner.approximator.table[0, 1] == 0.75


@pytest.mark.parametrize("stage", [rl.PreEpisodeStage(), rl.PreActStage(), rl.PostEpisodeStage()])
def test_other_stages_do_not_learn(stage):
    policy = q_policy(np.zeros((3, 2)))
    batches = [{"state": [0], "action": [1], "reward": [1.0], "terminal": [True],
                "next_state": [1]}]
    rl.optimise(policy, stage, batches)
    assert not policy.learner.approximator.table.any()


def test_state_dict_round_trip():
    policy = q_policy(np.arange(6.0).reshape(3, 2), rl.EpsilonGreedyExplorer(0.1, rng=0))
    policy.explorer.plan([0.0, 1.0])
    state = policy.state_dict()
    assert state["table"].tolist() == [[0, 1], [2, 3], [4, 5]]
    other = q_policy(np.zeros((3, 2)), rl.EpsilonGreedyExplorer(0.1, rng=5))
    other.load_state_dict(state)
    assert other.learner.approximator.table.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert other.explorer.step == 2


def test_construction_checks_learner_and_explorer():
    learner = rl.TDLearner(rl.TabularQApproximator(2, 2))
    with pytest.raises(TypeError, match="learner"):
        rl.QBasedPolicy(object(), rl.GreedyExplorer())
    with pytest.raises(TypeError, match="explorer"):
        rl.QBasedPolicy(learner, object())


class Transitions(rl.Hook):
    """Records every (s, a, r, terminal, s') the run produces (test-only)."""

    def __init__(self):
        self.rows, self.state = [], None


@rl.push.dispatch
def _record_pre_episode(hook: Transitions, stage: rl.PreEpisodeStage, policy, env):
    hook.state = env.state


@rl.push.dispatch
def _record_post_act(hook: Transitions, stage: rl.PostActStage, policy, env):
    hook.rows.append((hook.state, env.last_action, env.reward, env.is_terminated, env.state))
    hook.state = env.state


def test_agent_in_the_loop_learns_every_transition_exactly_once_in_order():
    policy = q_policy(np.zeros((7, 2)), rl.EpsilonGreedyExplorer(0.3, rng=1))
    agent = rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=1)))
    hook = rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(300, progress=False), Transitions())
    assert len(hook.rows) == 300
    replay = rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.5, lr=0.5)
    for s, a, r, terminal, s2 in hook.rows:
        replay.update({"state": [s], "action": [a], "reward": [r], "terminal": [terminal],
                       "next_state": [s2]})
    assert np.array_equal(replay.approximator.table, policy.learner.approximator.table)


def test_expected_sarsa_policy_learns_in_the_loop():
    policy = q_policy(np.zeros((7, 2)), rl.EpsilonGreedyExplorer(0.1, rng=0),
                      method="ExpectedSARSA")
    agent = rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=1)))
    rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(2000, progress=False))
    assert (policy.learner.approximator.table[1:-1].argmax(axis=1) == 1).all()


# ---- online SARSA learns every complete transition, at capacity 1 too -----------------------


def _online_sarsa(capacity, env):
    learner = rl.TDLearner(rl.TabularQApproximator(env.state_space.n, 2), "SARSA", gamma=1.0,
                           lr=0.5)
    policy = rl.QBasedPolicy(learner, rl.GreedyExplorer())  # Q[:, 0] >= 0 = Q[:, 1]: always 0
    return rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSATraces(capacity=capacity)))


@pytest.mark.parametrize("capacity", [1, 2])
def test_online_sarsa_learns_every_transition_of_a_scripted_episode_once(capacity):
    # FixedLengthEnv(3): states 0 -> 1 -> 2 -> 3 (terminal), reward 1 a step; action 0 always.
    env = rl.FixedLengthEnv(3)
    agent = _online_sarsa(capacity, env)
    table = agent.policy.learner.approximator.table
    rl.run(agent, env, rl.StopAfterNEpisodes(1, progress=False))
    # rows learned in order: (0, 0, r=1, 1, 0) -> 0.5 * (1 + Q[1, 0]) = 0.5; (1, 0, 1, 2, 0) ->
    # 0.5; the last, (2, 0, 1, 3, terminal), completed at PostEpisode -> 0.5 * 1 = 0.5.
    if capacity == 1:
        assert table[:, 0].tolist() == [0.5, 0.5, 0.5, 0.0]
    rl.run(agent, env, rl.StopAfterNEpisodes(1, progress=False))
    if capacity == 1:
        # 0.5 + 0.5 (1 + 0.5 - 0.5) = 1.0 twice, then 0.5 + 0.5 (1 - 0.5) = 0.75
        assert table[:, 0].tolist() == [1.0, 1.0, 0.75, 0.0]
    else:  # capacity 2 relearns the container's older row too at each step (DummySampler)
        assert table[2, 0] > 0.0 and table[:, 1].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_online_sarsa_learns_random_walk_at_capacity_one():
    learner = rl.TDLearner(rl.TabularQApproximator(7, 2), "SARSA", gamma=0.9, lr=0.5)
    policy = rl.QBasedPolicy(learner, rl.EpsilonGreedyExplorer(0.1, decay_steps=500, rng=0))
    agent = rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSATraces(capacity=1)))
    rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(2000, progress=False))
    table = learner.approximator.table
    assert (table != 0).any()
    assert (table[1:-1].argmax(axis=1) == 1).all()  # right, towards the +1 end, everywhere


def test_load_state_dict_from_an_epsilon_greedy_policy_into_a_greedy_one():
    trained = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(3, 2)),
                              rl.EpsilonGreedyExplorer(0.1, rng=0))
    trained.learner.approximator.table[:] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    greedy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(3, 2)), rl.GreedyExplorer())
    greedy.load_state_dict(trained.state_dict())
    assert greedy.learner.approximator.table.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    back = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(3, 2)),
                           rl.EpsilonGreedyExplorer(0.1, rng=5))
    back.load_state_dict(trained.state_dict())  # the same kind of explorer: its state too
    assert back.explorer.step == trained.explorer.step
    assert back.explorer.rng.random() == trained.explorer.rng.random()
