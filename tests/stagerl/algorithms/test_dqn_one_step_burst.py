"""A burst of one gradient step (the games' ``train_freq`` bursts) learns through ``dqn_update``
on the burst's rows directly; the general path (``steps_on_rows``: the burst's target pass in
parts, cut into batches, joined) on the same rows must give the same parameters, Adam state and
loss to the bit: a masked self-play game whose two lanes' rings have wrapped, and a vector env's
wrapped lanes with each head and target setting."""

import copy
import dataclasses

import numpy as np
import pytest
import torch

import stagerl as rl
from stagerl import experiments
from stagerl.algorithms.dqn import DQNConfig, learn_burst, make_dqn_agent
from stagerl.algorithms.dqn import update as dqn_update_module
from stagerl.algorithms.dqn.replay import as_tensors


def assert_same_learning(fast, general):
    for a, b in zip(fast.network.parameters(), general.network.parameters(), strict=True):
        assert torch.equal(a, b)
    fast_adam = fast.q.optimiser.state_dict()["state"]
    general_adam = general.q.optimiser.state_dict()["state"]
    assert fast_adam.keys() == general_adam.keys() and fast_adam
    for key, state in fast_adam.items():
        for name, value in state.items():
            assert torch.equal(value, general_adam[key][name]), (key, name)
    assert torch.equal(fast.loss, general.loss)


def one_step_burst_both_ways(policy, trajectory, monkeypatch):
    """``learn_burst`` (which must not take the general path) on a copy, and the general path
    on another copy, of ``policy``, on one burst drawn from ``trajectory``."""
    burst = trajectory.sampler.sample(trajectory.container)
    assert burst.rows is not None and len(burst) == 1
    fast, general = copy.deepcopy(policy), copy.deepcopy(policy)
    general_path = dqn_update_module.steps_on_rows
    with monkeypatch.context() as patch:
        patch.setattr(dqn_update_module, "steps_on_rows",
                      lambda *a: pytest.fail("a one-step burst took the general path"))
        learn_burst(fast, burst, trajectory)
    for group in general.q.optimiser.param_groups:
        group["lr"] = general.learning_rate
    rows = as_tensors(burst.rows, general.device, general.action_start)
    general_path(general, rows, burst.n_batches, burst.batch_size)
    return fast, general, burst


@pytest.mark.parametrize("double", [False, True])
def test_a_one_step_masked_self_play_burst_learns_as_the_general_path_on_wrapped_lanes(
        double, monkeypatch):
    e = experiments.get_experiment("dqn-tictactoe-selfplay")
    config = dataclasses.replace(e.config(), steps=700, buffer_size=100, learning_starts=100,
                                 double=double, net_arch=(32, 32))
    game = e.make_env(config, 0)
    players = e.make_agent(config, game, 0, torch.device("cpu"))
    rl.run(players, game, rl.StopAfterNSteps(700, progress=False))
    agent = players.policies["shared"]
    container = agent.trajectory.container
    assert container.lane_lengths() == [50, 50]  # 350 moves a lane into 50 rows: wrapped
    fast, general, burst = one_step_burst_both_ways(agent.policy, agent.trajectory, monkeypatch)
    masks = burst.rows["next_legal_actions_mask"]
    assert not masks.all(axis=1).all() and not masks.any(axis=1).all()  # some illegal, some none
    assert_same_learning(fast, general)


@pytest.mark.parametrize("settings", [
    {},
    {"double": True, "n_step": 3, "learning_rate_schedule": "linear"},
    {"dueling": True, "loss": "mse", "max_grad_norm": None},
    {"distributional": True, "n_atoms": 11, "v_min": 0.0, "v_max": 50.0},
    {"target_network": False, "stack_size": 2},
])
def test_a_one_step_burst_learns_as_the_general_path_on_wrapped_lanes(settings, monkeypatch):
    config = DQNConfig(**{**dict(total_steps=3_000, learning_starts=60, train_freq=4,
                                 gradient_steps=1, batch_size=32, buffer_size=24,
                                 target_update_interval=40, net_arch=(64, 64), gamma=0.5),
                          **settings})
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    trajectory, rng = agent.trajectory, np.random.default_rng(0)
    trajectory.push(state=rng.normal(size=(3, 4)).astype(np.float32))
    for _ in range(40):
        trajectory.push(state=rng.normal(size=(3, 4)).astype(np.float32),
                        action=rng.integers(2, size=3), reward=rng.normal(size=3),
                        terminal=rng.random(3) < 0.2)
    assert trajectory.container.lane_lengths() == [8, 8, 8]  # 40 pushes a lane: wrapped
    agent.policy.env_steps = 120
    learn_burst(agent.policy, trajectory.sampler.sample(trajectory.container), trajectory)
    fast, general, _ = one_step_burst_both_ways(agent.policy, trajectory, monkeypatch)
    assert_same_learning(fast, general)
