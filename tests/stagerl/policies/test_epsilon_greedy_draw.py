"""EpsilonGreedyExplorer.draw: ε-greedy that computes the action values only when some action is
greedy (how DQN acts), drawing exactly what ``plan`` and DQN's former inline draws drew."""

from __future__ import annotations

import numpy as np
import pytest

import stagerl as rl


def inline_dqn_draw(rng, epsilon, n_actions, values, n=None):
    """The draws DQN's plan made itself before it acted through the explorer (the reference)."""
    if n is None:
        if rng.random() < epsilon:
            return int(rng.integers(n_actions))
        return int(np.argmax(values()))
    explores = rng.random(n) < epsilon
    random_actions = rng.integers(n_actions, size=n)
    if explores.all():
        return random_actions
    return np.where(explores, random_actions, np.argmax(values(), axis=1))


@pytest.mark.parametrize("n", [None, 1, 5])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_draw_draws_what_dqn_drew_inline_and_calls_values_only_when_greedy(n, epsilon):
    table = np.random.default_rng(7).normal(size=(50, 5 if n is None else n, 4))
    explorer = rl.EpsilonGreedyExplorer(epsilon, epsilon_init=epsilon, break_ties=False, rng=3)
    reference = np.random.default_rng(3)
    calls = {"draw": 0, "reference": 0}

    def values(i, who):
        def read():
            calls[who] += 1
            return table[i, 0] if n is None else table[i]
        return read

    for i in range(50):
        got = explorer.draw(4, values(i, "draw"), n)
        want = inline_dqn_draw(reference, epsilon, 4, values(i, "reference"), n)
        assert np.array_equal(got, want)
        assert type(got) is type(want)
    assert explorer.rng.bit_generator.state == reference.bit_generator.state
    assert calls["draw"] == calls["reference"]
    assert (calls["draw"] == 0) == (epsilon == 1.0) and explorer.step == 51


@pytest.mark.parametrize("break_ties", [False, True])
def test_one_row_draws_what_plan_draws(break_ties):
    values = np.array([[0.0, 1.0, 1.0], [2.0, 0.5, 2.0], [0.1, 0.2, 0.3]] * 20)
    a = rl.EpsilonGreedyExplorer(0.1, decay_steps=30, break_ties=break_ties, rng=0)
    b = rl.EpsilonGreedyExplorer(0.1, decay_steps=30, break_ties=break_ties, rng=0)
    drawn = [a.draw(3, lambda row=row: row) for row in values]
    planned = [b.plan(row) for row in values]
    assert drawn == planned and a.state_dict() == b.state_dict()


def test_a_batch_draws_what_plan_draws_without_tie_breaking():
    values = np.random.default_rng(1).normal(size=(30, 6, 3))
    a = rl.EpsilonGreedyExplorer(0.2, decay_steps=10, break_ties=False, rng=5)
    b = rl.EpsilonGreedyExplorer(0.2, decay_steps=10, break_ties=False, rng=5)
    for batch in values:
        assert np.array_equal(a.draw(3, lambda batch=batch: batch, n=6), b.plan(batch))
    assert a.state_dict() == b.state_dict()


def test_epsilon_replaces_the_schedule_for_one_draw_and_the_step_still_advances():
    explorer = rl.EpsilonGreedyExplorer(0.0, epsilon_init=0.0, rng=0)
    assert explorer.draw(2, lambda: [0.0, 1.0]) == 1
    never = []
    actions = {explorer.draw(2, lambda: never.append(1), epsilon=1.0) for _ in range(40)}
    assert actions == {0, 1} and not never and explorer.step == 42


def test_dqn_acts_through_its_explorer():
    from stagerl.algorithms import DQNConfig, make_dqn_agent

    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_dqn_agent(env, DQNConfig(total_steps=200, learning_starts=50, net_arch=(8,)),
                           seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(120, progress=False))
    policy = agent.policy
    assert policy.explorer.step == 121 and policy.env_steps == 120
