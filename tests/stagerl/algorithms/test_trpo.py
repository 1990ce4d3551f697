"""TRPO and NPG: conjugate gradient, the step within the KL bound, learning, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.algorithms.on_policy import make_vector_env
from stagerl.algorithms.on_policy.trpo import TRPOConfig, conjugate_gradient, make_trpo_agent


def test_conjugate_gradient_solves_a_positive_definite_system():
    A = torch.tensor([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    b = torch.tensor([1.0, 2.0, 3.0])
    x = conjugate_gradient(lambda v: A @ v, b, max_steps=3)
    # exact after n = 3 steps: x = (2, 1, 13) / 9 (rows: 8 + 1 = 9, 2 + 3 + 13 = 18, 1 + 26 = 27)
    assert x.tolist() == pytest.approx([2 / 9, 1 / 9, 13 / 9], abs=1e-5)


def a_rollout_batch(agent, env, steps):
    """The batch of the agent's next rollout, read before it learns from it."""
    batches = []
    agent.policy.update = lambda batch: batches.append(batch)
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    del agent.policy.update
    return batches


def kl_categorical(old_logits, new_logits):
    p, q = torch.softmax(old_logits, -1), torch.softmax(new_logits, -1)
    return (p * (p.log() - q.log())).sum(-1).mean().item()


@pytest.mark.parametrize("line_search", [True, False])
def test_the_policy_step_keeps_within_the_kl_bound(line_search):
    env = make_vector_env("CartPole-v1", 2, seed=0)
    config = TRPOConfig(n_steps=256, batch_size=256, target_kl=0.01, line_search=line_search)
    agent = make_trpo_agent(env, config, seed=0, device="cpu")
    policy = agent.policy
    for batch in a_rollout_batch(agent, env, 2048):  # four rollouts of a random-ish policy
        # advantages as the policy makes them, then one policy step from the same weights
        old_logits = policy.model.actor(batch["state"]).detach()
        policy.policy_step(batch)
        kl = kl_categorical(old_logits, policy.model.actor(batch["state"]))
        if line_search:
            assert 0.0 < kl <= 0.01
            assert policy.stats["accepted"] == 1.0
            assert policy.stats["kl"] == pytest.approx(kl, rel=1e-4)
        else:  # NPG: the full step, whose quadratic model of the KL is target_kl
            assert 0.002 < kl < 0.03


def test_a_step_that_cannot_improve_is_not_taken():
    env = make_vector_env("CartPole-v1", 2, seed=0)
    agent = make_trpo_agent(env, TRPOConfig(n_steps=128, batch_size=128), seed=0, device="cpu")
    (batch, *_) = a_rollout_batch(agent, env, 256)
    before = [p.detach().clone() for p in agent.policy.model.actor.parameters()]
    batch = {**batch, "advantage": torch.zeros_like(batch["advantage"])}  # nothing to gain
    agent.policy.policy_step(batch)
    after = list(agent.policy.model.actor.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert agent.policy.stats == {"kl": 0.0, "objective": 0.0, "accepted": 0.0}


@pytest.mark.parametrize("line_search", [True, False], ids=["trpo", "npg"])
def test_trpo_and_npg_learn_cartpole(line_search):  # CI smoke test: random play ~22
    env = make_vector_env("CartPole-v1", 2, seed=0)
    config = TRPOConfig(n_steps=512, batch_size=512, cg_damping=1e-3, gae_lambda=0.98,
                        n_critic_updates=20, line_search=line_search)
    agent = make_trpo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(30_000, progress=False))
    # seeds 0-4 give 285 to 500 (TRPO) and 125 to 500 (NPG)
    assert np.mean(rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=100), 10)) >= 100


def test_bad_input_is_refused_at_construction():
    env = make_vector_env("CartPole-v1", 2, seed=0)
    with pytest.raises(ValueError, match="fewer than batch_size=128"):
        make_trpo_agent(env, TRPOConfig(n_steps=32), device="cpu")
    with pytest.raises(ValueError, match="target_kl must be a finite number > 0"):
        make_trpo_agent(env, TRPOConfig(target_kl=0.0), device="cpu")
    with pytest.raises(ValueError, match=r"line_search_shrinking_factor must be in \(0, 1\)"):
        make_trpo_agent(env, TRPOConfig(line_search_shrinking_factor=2.0), device="cpu")
    with pytest.raises(ValueError, match="cg_damping must be a finite number >= 0, got "
                                         "cg_damping=nan"):
        TRPOConfig(cg_damping=float("nan"))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trpo_cartpole_reaches_475_at_100k_steps(seed):
    summary = experiments.train("trpo-cartpole", seed=seed, device="cpu", progress=False)
    assert summary["env_steps"] == 100_000
    assert summary["eval_return_mean"] >= 475
