"""A2C: its loss on a tiny network, one step per rollout, learning, bad input."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.algorithms.on_policy import ActorCritic, make_vector_env
from stagerl.algorithms.on_policy.a2c import A2CConfig, a2c_loss, make_a2c_agent

LN3 = math.log(3.0)


def tiny_model() -> ActorCritic:
    """Linear heads over one input s: logits (s, 0), V(s) = 2 s + 0.5."""
    model = ActorCritic(1, gymnasium.spaces.Discrete(2), net_arch=(), ortho_init=False)
    with torch.no_grad():
        model.actor[0].weight.copy_(torch.tensor([[1.0], [0.0]]))
        model.actor[0].bias.zero_()
        model.critic[0].weight.fill_(2.0)
        model.critic[0].bias.fill_(0.5)
    return model


def tiny_batch() -> dict:
    # action 0 in state 0 (pi = 1/2, advantage +1) and in state ln 3 (pi = 3/4, advantage -1)
    return {"state": torch.tensor([[0.0], [LN3]]), "action": torch.tensor([0, 0]),
            "advantage": torch.tensor([1.0, -1.0]), "return": torch.tensor([1.0, 2.0])}


def test_a2c_loss_on_a_tiny_network():
    model = tiny_model()
    loss, parts = a2c_loss(model, tiny_batch(), ent_coef=0.0, vf_coef=0.5,
                           normalize_advantage=False)
    # policy: -mean(1 * ln 1/2, -1 * ln 3/4) = (ln 2 - ln 4/3) / 2 = 0.2027326
    # value: mean((0.5 - 1)^2, (2 ln 3 + 0.5 - 2)^2) = 0.3680610
    assert parts["policy_loss"].item() == pytest.approx(0.2027326, abs=1e-6)
    assert parts["value_loss"].item() == pytest.approx(0.3680610, abs=1e-6)
    assert loss.item() == pytest.approx(0.2027326 + 0.5 * 0.3680610, abs=1e-6)
    loss.backward()
    # d/d logits: -(1/2)(1/2, -1/2) from state 0 and +(1/2)(1/4, -1/4) from state ln 3
    assert model.actor[0].bias.grad.tolist() == pytest.approx([-0.125, 0.125], abs=1e-6)
    assert parts["entropy"].item() == pytest.approx(
        (math.log(2) - 0.75 * math.log(0.75) - 0.25 * math.log(0.25)) / 2, abs=1e-6)


def test_one_gradient_step_per_rollout_of_n_steps_per_sub_env():
    env = make_vector_env("CartPole-v1", 4, seed=0)
    agent = make_a2c_agent(env, A2CConfig(n_steps=5), seed=0, device="cpu")
    steps = []
    original = agent.policy.update

    def update(batch):
        steps.append(len(batch["advantage"]))
        original(batch)

    agent.policy.update = update
    rl.run(agent, env, rl.StopAfterNSteps(200, progress=False))
    assert steps == [20] * 10
    actor_flat = agent.policy.model.flat_parameters()[0]
    assert agent.policy.optimiser.state[actor_flat]["step"] == 10


def test_a2c_learns_cartpole():  # CI smoke test: random play averages ~22; seeds 0-4 give 490+
    env = make_vector_env("CartPole-v1", 8, seed=0)
    agent = make_a2c_agent(env, A2CConfig(), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(80_000, progress=False))
    assert np.mean(rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=100), 10)) >= 150


def test_bad_input_is_refused_at_construction():
    env = make_vector_env("CartPole-v1", 2, seed=0)
    with pytest.raises(ValueError, match="A2CConfig: n_steps must be an int >= 1"):
        make_a2c_agent(env, A2CConfig(n_steps=0), device="cpu")
    with pytest.raises(ValueError, match="ent_coef must be a finite number >= 0"):
        make_a2c_agent(env, A2CConfig(ent_coef=-0.1), device="cpu")
    with pytest.raises(ValueError, match="ent_coef must be a finite number >= 0, got ent_coef=nan"):
        A2CConfig(ent_coef=float("nan"))
    with pytest.raises(TypeError, match="learning_rate expects float, got 'fast'"):
        make_a2c_agent(env, A2CConfig(learning_rate="fast"), device="cpu")
    with pytest.raises(TypeError, match="needs an A2CConfig"):
        make_a2c_agent(env, {"n_steps": 5}, device="cpu")
    text = gymnasium.wrappers.TransformObservation(
        gymnasium.make("CartPole-v1"), lambda o: "x", gymnasium.spaces.Text(4))
    with pytest.raises(TypeError, match="make_a2c_agent reads Box.*got Text.*FlattenObservation"):
        make_a2c_agent(rl.GymEnv(text), device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a2c_cartpole_reaches_475(seed):
    summary = experiments.train("a2c-cartpole", seed=seed, device="cpu", progress=False)
    assert summary["eval_return_mean"] >= 475
