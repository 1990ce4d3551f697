"""PPO's adaptive KL penalty (RLlib's kl_coeff / kl_target / update_kl): the rule on a scripted
sequence of measured KLs, the penalty in the loss, the coefficient an update measures and
adapts (on a vector env's lanes, with and without clipping), reports and resumes exactly."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)
from scripted_envs import scripted_vector_env

import stagerl as rl
from stagerl.algorithms import PPOConfig, make_ppo_agent
from stagerl.algorithms.on_policy.ppo import adapt_kl_coef, ppo_loss
from stagerl.logging import ScalarListener


def test_the_coefficient_follows_the_rule_on_a_scripted_sequence_of_kls():
    # kl_target 0.01: above 0.02 the coefficient grows by half, below 0.005 it halves.
    measured = [0.05, 0.03, 0.02, 0.0201, 0.01, 0.005, 0.0049, 0.001, 0.015, 0.04]
    coefficients, coef = [], 0.2
    for kl in measured:
        coef = adapt_kl_coef(coef, kl, 0.01)
        coefficients.append(coef)
    assert coefficients == pytest.approx([0.3, 0.45, 0.45, 0.675, 0.675, 0.675, 0.3375,
                                          0.16875, 0.16875, 0.253125])
    assert adapt_kl_coef(0.2, 1.0, math.inf) == adapt_kl_coef(0.2, 0.0, math.inf) == 0.2
    assert adapt_kl_coef(0.0, 1.0, 0.01) == 0.0  # 0: no penalty, and it stays so


def test_the_penalty_adds_the_coefficient_times_the_mean_kl_to_the_loss():
    env = rl.GymVectorEnv(scripted_vector_env((2, 3), AutoresetMode.SAME_STEP))
    model = make_ppo_agent(env, PPOConfig(n_steps=4, batch_size=8), device="cpu").policy.model
    states = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    batch = {"state": states, "action": torch.tensor([0, 1, 1]),
             "advantage": torch.tensor([1.0, -1.0, 0.5]), "log_prob": torch.full((3,), -0.7),
             "value": torch.zeros(3), "return": torch.ones(3)}
    old_logits = torch.tensor([[0.0, 0.0], [1.0, -1.0], [0.5, 0.0]])
    plain, _ = ppo_loss(model, batch, 0.2, None, 0.0, 0.5, False)
    penalised, parts = ppo_loss(model, batch, 0.2, None, 0.0, 0.5, False, 0.3, (old_logits,))
    new_logits = model.distribution(states)[0]
    p, log_p, log_q = old_logits.softmax(-1), old_logits.log_softmax(-1), \
        new_logits.log_softmax(-1)
    kl = (p * (log_p - log_q)).sum(-1).mean()
    assert parts["kl_penalty"].item() == pytest.approx(kl.item(), rel=1e-6)
    assert (penalised - plain).item() == pytest.approx(0.3 * kl.item(), rel=1e-5)


def recording(agent):
    """The acting policy's logits on each update's states, taken before the update."""
    seen, update = [], agent.policy.update

    def record(batch):
        with torch.no_grad():
            seen.append((batch["state"].clone(), agent.policy.model.distribution(
                batch["state"])[0].clone(), agent.policy.kl_coef))
        update(batch)
        seen[-1] += (agent.policy.model.distribution(batch["state"])[0].detach().clone(),
                     dict(agent.policy.stats), agent.policy.kl_coef)

    agent.policy.update = record
    return seen


@pytest.mark.parametrize("clip_range", [0.2, math.inf])
def test_each_update_measures_its_kl_and_adapts_the_coefficient(clip_range):
    env = rl.GymVectorEnv(scripted_vector_env((2, 3, 5), AutoresetMode.SAME_STEP))
    config = PPOConfig(n_steps=8, batch_size=8, n_epochs=4, learning_rate=3e-3,
                       kl_coef=0.5, kl_target=0.002, clip_range=clip_range)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    seen = recording(agent)
    rl.run(agent, env, rl.StopAfterNSteps(3 * 8 * 8, progress=False))  # 8 updates, 3 lanes
    assert len(seen) == 8
    coef = 0.5
    for _, before, used, after, stats, adapted in seen:
        assert used == coef and stats["kl_coef"] == coef
        p = before.softmax(-1)
        kl = (p * (before.log_softmax(-1) - after.log_softmax(-1))).sum(-1).mean().item()
        assert stats["kl"] == pytest.approx(kl, rel=1e-4, abs=1e-9)
        coef = adapt_kl_coef(coef, stats["kl"], config.kl_target)
        assert adapted == coef
    assert len({round(s[2], 12) for s in seen}) > 1  # it did adapt
    assert agent.policy.state_dict()["kl_coef"] == coef


def test_the_coefficient_is_reported_each_update():
    env = rl.GymVectorEnv(scripted_vector_env((2, 3), AutoresetMode.SAME_STEP))
    config = PPOConfig(n_steps=8, batch_size=16, n_epochs=2, kl_coef=0.2, kl_target=1e-6)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    with ScalarListener() as listener:
        rl.run(agent, env, rl.StopAfterNSteps(2 * 8 * 3, progress=False))
    reported = [value for name, value, _ in listener.drain() if name == "losses/kl_coef"]
    # Every update moves the policy by more than twice kl_target: the coefficient grows.
    assert reported == pytest.approx([0.2, 0.3, 0.45], rel=1e-12)
    assert agent.policy.kl_coef == pytest.approx(0.675)


def test_an_interrupted_run_with_the_penalty_resumes_with_its_coefficient(tmp_path):
    sys.path.insert(0, str(Path(__file__).parents[1] / "checkpoints"))
    import resume_runs

    whole = resume_runs.run_whole("ppo-kl", tmp_path)
    checkpoint = resume_runs.run_interrupted("ppo-kl", tmp_path)
    resumed = resume_runs.run_resumed("ppo-kl", tmp_path)
    assert sorted(whole) == sorted(resumed)
    assert [k for k in whole if not np.array_equal(whole[k], resumed[k])] == []
    assert whole["state/kl_coef"] != 0.2  # it adapted during the run
    from stagerl.checkpoints import load

    assert load(checkpoint).policy.kl_coef not in (None, 0.0)
