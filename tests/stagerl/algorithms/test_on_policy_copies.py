"""Every on-policy agent round-trips its state dict, pickles and deep-copies before and after
training, and a copy continues exactly as the original; CUDA where there is one."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.on_policy.a2c import A2CConfig, make_a2c_agent
from stagerl.algorithms.on_policy.ppo import PPOConfig, make_ppo_agent
from stagerl.algorithms.on_policy.trpo import TRPOConfig, make_trpo_agent
from stagerl.algorithms.on_policy.vpg import VPGConfig, make_vpg_agent

BUILDERS = {
    "ppo": lambda env, device: make_ppo_agent(
        env, PPOConfig(n_steps=16, batch_size=16, n_epochs=2, normalize_states=True,
                       learning_rate_schedule="linear", total_steps=10_000), 0, device),
    "a2c": lambda env, device: make_a2c_agent(env, A2CConfig(n_steps=5), 0, device),
    "trpo": lambda env, device: make_trpo_agent(
        env, TRPOConfig(n_steps=32, batch_size=32, n_critic_updates=2), 0, device),
    "vpg": lambda env, device: make_vpg_agent(env, VPGConfig(episodes_per_update=2), 0, device),
}


def train(agent, env, steps):
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))


def weights(agent):
    return [p.detach().cpu().clone() for p in agent.policy.model.parameters()]


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_continues_exactly_as_the_original(name, how):
    env = make_vector_env("CartPole-v1", 3, seed=0)
    agent = BUILDERS[name](env, "cpu")
    copied = copy.deepcopy(agent) if how == "deepcopy" else pickle.loads(pickle.dumps(agent))
    train(agent, env, 300)  # an untrained copy trains the same way on the same env
    env_copy = make_vector_env("CartPole-v1", 3, seed=0)
    train(copied, env_copy, 300)
    assert all(torch.equal(a, b) for a, b in zip(weights(agent), weights(copied), strict=True))
    # and after training: copy the agent with its env mid-run, train both further
    twin_agent = copy.deepcopy(agent) if how == "deepcopy" else \
        pickle.loads(pickle.dumps(agent))
    twin_env = copy.deepcopy(env)  # (gymnasium's make_vec envs do not pickle)
    assert agent.policy.n_updates > 0
    for a, e in ((agent, env), (twin_agent, twin_env)):
        rl.run(a, e, rl.StopAfterNSteps(300, progress=False))
    assert all(torch.equal(a, b) for a, b in zip(weights(agent), weights(twin_agent),
                                                  strict=True))
    assert agent.policy.n_updates == twin_agent.policy.n_updates


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_checkpoint_restores_the_gradients_as_they_were_in_views_of_its_own(name):
    # A checkpoint holds the last update's gradients: a model rebuilt from it that dropped them
    # would hold a state other than the run's until its next update.
    from stagerl.checkpoints.graph import encode
    from stagerl.checkpoints.rebuild import rebuild

    env = make_vector_env("CartPole-v1", 3, seed=0)
    agent = BUILDERS[name](env, "cpu")
    train(agent, env, 300)
    encoded = encode(agent)
    loaded = rebuild(encoded.tree, encoded.tensors)
    for original, twin in zip(agent.policy.model.flat_parameters(),
                              loaded.policy.model.flat_parameters(), strict=True):
        assert torch.equal(original.grad, twin.grad)
    assert any(bool(f.grad.abs().sum() > 0) for f in loaded.policy.model.flat_parameters())
    flats = [(f.grad.data_ptr(), f.grad.data_ptr() + f.grad.numel() * f.grad.element_size())
             for f in loaded.policy.model.flat_parameters()]
    for p in loaded.policy.model.parameters():  # every gradient a view into its flat one
        assert any(lo <= p.grad.data_ptr() < hi for lo, hi in flats)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_state_dict_round_trips(name):
    env = make_vector_env("CartPole-v1", 3, seed=0)
    agent = BUILDERS[name](env, "cpu")
    train(agent, env, 600)
    state = agent.state_dict()
    fresh = BUILDERS[name](make_vector_env("CartPole-v1", 3, seed=1), "cpu")
    fresh.load_state_dict(copy.deepcopy(state))
    assert all(torch.equal(a, b) for a, b in zip(weights(agent), weights(fresh), strict=True))
    again = fresh.state_dict()
    assert again.keys() == state.keys() and again["env_steps"] == state["env_steps"] > 0
    for key in agent.policy.optimisers():
        assert str(again[key]["state"]) == str(state[key]["state"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_learning_on_cuda_and_moving_back(name):
    env = make_vector_env("CartPole-v1", 3, seed=0)
    agent = BUILDERS[name](env, "cuda")
    assert all(p.device.type == "cuda" for p in agent.policy.model.parameters())
    train(agent, env, 600)
    assert agent.policy.n_updates > 0
    agent.to("cpu")
    assert all(p.device.type == "cpu" for p in agent.policy.model.parameters())
    train(agent, env, 300)
    agent.to("cuda")
    train(agent, env, 300)
