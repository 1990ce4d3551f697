"""A DRQN run on one env (its replay an EpisodesBuffer, whose window starts the sampler lists
from the metadata and draws by indexing the list) learns to the bit what it learns with the
sampler's general path (the container's readers and the round-by-round rejection draw), with
its ring wrapped many times and episodes ending by termination and by truncation."""

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.wrappers import TimeLimit

import stagerl as rl
from stagerl.algorithms import DRQNConfig, make_drqn_agent
from trajectories import sequences


def _trained(general: bool, settings: dict):
    config = DRQNConfig(**{**dict(
        total_steps=400, learning_starts=40, buffer_size=50, sequence_length=6, burn_in=2,
        batch_size=8, rnn_hidden_size=16, net_arch=(16,), target_update_interval=60,
        train_freq=2), **settings})
    # Episodes cut at 13 steps (truncated) or ended by the pole (terminated, early in training)
    env = rl.GymEnv(TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=13), seed=0)
    agent = make_drqn_agent(env, config, seed=0, device="cpu")
    with pytest.MonkeyPatch.context() as patch:
        if general:
            patch.setattr(sequences, "listed_window_starts", lambda *args: None)
        rl.run(agent, env, rl.StopAfterNSteps(400, progress=False))
    return agent


@pytest.mark.parametrize("settings", [{}, {"pad": False, "period": 3}, {"burn_in": 0,
                                                                        "period": 1}])
def test_a_drqn_run_learns_to_the_bit_what_the_general_window_draw_learns(settings):
    fast, general = _trained(False, settings), _trained(True, settings)
    assert fast.policy.n_updates == general.policy.n_updates > 150
    for p, q in zip(fast.policy.network.parameters(), general.policy.network.parameters(),
                    strict=True):
        assert torch.equal(p, q)
    assert not torch.equal(next(fast.policy.network.parameters()),
                           next(_untrained(settings).policy.network.parameters()))
    rng_fast = fast.trajectory.sampler.rng.bit_generator.state
    assert rng_fast == general.trajectory.sampler.rng.bit_generator.state
    container = fast.trajectory.container
    assert type(container).__name__ == "EpisodesBuffer"
    assert fast.trajectory.controller.n_inserted > 6 * container.traces.capacity  # wrapped
    for name in container.keys():
        assert np.array_equal(fast.trajectory[name], general.trajectory[name])


def _untrained(settings):
    config = DRQNConfig(**{**dict(total_steps=400, rnn_hidden_size=16, net_arch=(16,),
                                  sequence_length=6, burn_in=2, buffer_size=50), **settings})
    env = rl.GymEnv(TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=13), seed=0)
    return make_drqn_agent(env, config, seed=0, device="cpu")
