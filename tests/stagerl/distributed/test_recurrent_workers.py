"""Rollout workers act recurrent policies through compute_actions: every shipped step carries
the state that went into it, each fragment's memory starts at its episode's start and never
mixes lanes, and loaded weights act at once."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

import stagerl as rl
from stagerl.algorithms import (
    DRQNConfig,
    RecurrentPPOConfig,
    make_drqn_agent,
    make_recurrent_ppo_agent,
)
from stagerl.distributed import RolloutWorker
from stagerl.policies.weights import get_weights


def _make_env(seed):
    limits = (4, 7)  # the sub-envs' episodes end at other steps
    envs = [lambda k=k: TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=k)
            for k in limits]
    return rl.GymVectorEnv(SyncVectorEnv(envs, autoreset_mode=AutoresetMode.SAME_STEP),
                           seed=seed)


AGENTS = {
    "recurrent ppo": lambda env, seed: make_recurrent_ppo_agent(
        env, RecurrentPPOConfig(n_steps=32, batch_size=32, rnn_hidden_size=8), seed=seed,
        device="cpu"),
    "drqn": lambda env, seed: make_drqn_agent(
        env, DRQNConfig(total_steps=1000, buffer_size=500, rnn_hidden_size=8, net_arch=(8,)),
        seed=seed, device="cpu"),
}


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_shipped_step_carries_the_state_compute_actions_went_from(name):
    make_agent = AGENTS[name]
    learner = make_agent(_make_env(99), 99)
    worker = RolloutWorker(_make_env, make_agent, worker=1)
    try:
        worker.sample(6)
        batch = worker.sample(24, weights=get_weights(learner.policy), version=1)
    finally:
        worker.close()
    fragments = batch.fragments
    assert {f.lane for f in fragments} == {0, 1}
    assert sum(f.first_step == 0 for f in fragments) >= 4  # episodes started in both lanes
    for fragment in fragments:
        columns = fragment.columns
        states, memory = columns["state"], columns["recurrent_state"]
        if fragment.first_step == 0:  # the memory starts with the episode
            assert not memory[0].any()
        # Replayed with the learner's weights from the fragment's first stored state, every
        # next stored state is compute_actions' new state: the worker acted through that call
        # with the weights it was sent, one lane's steps in order, never another lane's.
        state = memory[0]
        for t in range(fragment.n_steps):
            np.testing.assert_allclose(memory[t], state, atol=1e-5)
            out = rl.compute_actions(learner, states[t], state, deterministic=True)
            state = out.state
            if "value" in columns:
                np.testing.assert_allclose(columns["value"][t], out.extra["value"], atol=1e-5)
