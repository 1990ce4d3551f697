"""Baselines by name: the linear feature baseline's fit, the episode time steps it is fed on
vector envs (rollouts cut across episodes, both autoreset modes), the advantages VPG and TRPO
compute with each baseline, exact copies, and bad names."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from one_thread import one_torch_thread  # noqa: F401  (autouse: one torch thread)
from scripted_envs import scripted_vector_env

import stagerl as rl
from stagerl.algorithms import (
    LinearFeatureBaseline,
    TRPOConfig,
    VPGConfig,
    ZeroBaseline,
    make_baseline,
    make_trpo_agent,
    make_vpg_agent,
)
from stagerl.algorithms.on_policy.baselines import linear_features

STATES = np.array([[0.5, -1.0], [1.0, 0.0], [-2.0, 0.5], [0.0, 12.0], [1.5, -0.5], [-0.5, 1.0],
                   [3.0, 2.0], [1.0, -3.0], [2.0, 1.0], [-1.0, -1.0], [0.25, 0.75], [0.0, 0.0]])
STEPS = np.array([0, 50, 100, 150, 0, 100, 200, 0, 60, 120, 180, 240])
RETURNS = np.array([4.0, 3.0, 2.5, 1.0, 3.5, 2.0, 1.5, 5.0, 4.0, 2.0, 1.0, 0.5])


def test_the_linear_fit_is_the_regularised_least_squares_solution():
    baseline = LinearFeatureBaseline()
    baseline.fit(None, {"raw_state": STATES, "step": STEPS, "return": RETURNS})
    # rllab's features: [o, o^2, t/100, (t/100)^2, (t/100)^3, 1], o clipped to [-10, 10]
    features = linear_features(STATES, STEPS)
    assert features[3].tolist() == [0.0, 10.0, 0.0, 100.0, 1.5, 2.25, 3.375, 1.0]
    direct = np.linalg.solve(features.T @ features + 1e-5 * np.identity(8), features.T @ RETURNS)
    assert baseline.coefficients == pytest.approx(direct, rel=1e-9, abs=1e-12)
    assert baseline.coefficients == pytest.approx(
        [0.159719, -0.3303, 0.112549, 0.0289309, 0.62131, -2.0643, 0.551648, 3.27844], rel=1e-5)
    value = baseline.values(None, np.array([[1.0, 1.0]]), np.array([20]))
    assert value.dtype == np.float32 and value.tolist() == pytest.approx([3.295441], abs=1e-5)


def test_a_singular_batch_still_fits_and_more_regularisation_shrinks_the_coefficients():
    one_state = {"raw_state": np.ones((4, 2)), "step": np.zeros(4), "return": np.full(4, 2.0)}
    small, large = LinearFeatureBaseline(1e-5), LinearFeatureBaseline(10.0)
    small.fit(None, one_state)
    large.fit(None, one_state)
    assert small.values(None, np.ones((1, 2)), np.zeros(1)).tolist() == pytest.approx([2.0],
                                                                                     abs=1e-4)
    assert np.abs(large.coefficients).sum() < np.abs(small.coefficients).sum()


def test_baselines_by_name_and_a_name_that_does_not_exist():
    assert [type(make_baseline(n)).__name__ for n in ("zero", "network", "linear")] == [
        "ZeroBaseline", "ValueNetworkBaseline", "LinearFeatureBaseline"]
    assert make_baseline("linear", reg_coeff=0.5).reg_coeff == 0.5
    for bad in ("linaer", "", None, 3):
        with pytest.raises(ValueError, match=r"baseline must be 'zero' or 'network' or "
                                             r"'linear', got baseline="):
            make_baseline(bad)
    with pytest.raises(ValueError, match="VPGConfig: baseline must be 'zero' or 'network' or "
                                         "'linear', got baseline='mean'"):
        VPGConfig(baseline="mean")
    with pytest.raises(ValueError, match="TRPOConfig: baseline_reg_coeff must be a finite number "
                                         ">= 0, got baseline_reg_coeff=-1.0"):
        TRPOConfig(baseline="linear", baseline_reg_coeff=-1)


def recording(agent):
    """Keep every batch the policy learns from (numpy) with the baseline's coefficients before
    the update, then learn as usual."""
    batches, update = [], agent.policy.update

    def record(batch):
        coefficients = getattr(agent.policy.baseline, "coefficients", None)
        batches.append(({k: v.numpy().copy() for k, v in batch.items()},
                        None if coefficients is None else coefficients.copy()))
        update(batch)

    agent.policy.update = record
    return batches


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_trpo_with_the_linear_baseline_on_lanes_cut_across_episodes(mode):
    # Lanes of episodes of 2-4 steps, rollouts of 3 acts: episodes span rollouts, and the time
    # step of each row (the observation's last entry) must be its step within its episode.
    env = rl.GymVectorEnv(scripted_vector_env((2, 3, 4), mode))
    config = TRPOConfig(n_steps=3, batch_size=6, gamma=0.5, gae_lambda=0.5, baseline="linear",
                        n_critic_updates=1)
    agent = make_trpo_agent(env, config, seed=0, device="cpu")
    batches = recording(agent)
    rl.run(agent, env, rl.StopAfterNSteps(3 * 30, progress=False))
    assert len(batches) >= 7  # NEXT_STEP: the act after an episode's end is no transition
    for batch, coefficients in batches:
        states = batch["raw_state"]
        assert batch["step"].tolist() == states[:, 2].tolist()
        expected = np.zeros(len(states)) if coefficients is None else \
            linear_features(states, batch["step"]) @ coefficients
        assert batch["value"] == pytest.approx(expected, rel=1e-5, abs=1e-4)
    # The fit after the last update is the least-squares fit of that update's returns.
    last, _ = batches[-1]
    refit = LinearFeatureBaseline()
    refit.fit(None, last)
    assert agent.policy.baseline.coefficients == pytest.approx(refit.coefficients)


def test_vpg_with_the_zero_baseline_learns_from_the_returns_themselves():
    env = rl.GymVectorEnv(scripted_vector_env((2, 3), AutoresetMode.SAME_STEP))
    config = VPGConfig(episodes_per_update=2, gamma=0.5, baseline="zero", max_episode_steps=5,
                       normalize_advantage=False)
    agent = make_vpg_agent(env, config, seed=0, device="cpu")
    assert isinstance(agent.policy.baseline, ZeroBaseline)
    batches = recording(agent)
    critic = [p.detach().clone() for p in agent.policy.model.critic.parameters()]
    rl.run(agent, env, rl.StopAfterNSteps(2 * 12, progress=False))
    assert len(batches) >= 3
    for batch, _ in batches:
        assert batch["value"].tolist() == [0.0] * len(batch["value"])
        assert batch["advantage"].tolist() == batch["return"].tolist()
        assert batch["step"].tolist() == batch["raw_state"][:, 2].tolist()
    # The value network is not trained without it.
    assert all(torch.equal(a, b) for a, b in zip(critic, agent.policy.model.critic.parameters(),
                                                 strict=True))


def test_vpg_with_the_linear_baseline_carries_episode_steps_over_dropped_rows():
    # VPG drops the rows of episodes still running at an update; their rest comes later, and
    # its time steps must go on counting from the episode's start.
    env = rl.GymVectorEnv(scripted_vector_env((2, 7), AutoresetMode.SAME_STEP))
    config = VPGConfig(episodes_per_update=2, baseline="linear", max_episode_steps=9)
    agent = make_vpg_agent(env, config, seed=0, device="cpu")
    batches = recording(agent)
    rl.run(agent, env, rl.StopAfterNSteps(2 * 40, progress=False))
    later_rows = 0
    for batch, coefficients in batches:
        assert batch["step"].tolist() == batch["raw_state"][:, 2].tolist()
        later_rows += int(((batch["raw_state"][:, 0] == 1) & (batch["step"] > 3)).sum())
        if coefficients is not None:
            assert batch["value"] == pytest.approx(
                linear_features(batch["raw_state"], batch["step"]) @ coefficients, abs=1e-4)
    assert later_rows > 0


def test_an_agent_with_the_linear_baseline_copies_and_goes_on_exactly():
    env = rl.GymVectorEnv(scripted_vector_env((2, 3), AutoresetMode.SAME_STEP))
    agent = make_trpo_agent(env, TRPOConfig(n_steps=4, batch_size=8, baseline="linear"),
                            seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(2 * 10, progress=False))  # mid-rollout
    copy, env_copy = pickle.loads(pickle.dumps((agent, env)))
    assert copy.policy.baseline.coefficients.tolist() == \
        agent.policy.baseline.coefficients.tolist()
    state = agent.policy.state_dict()
    assert state["baseline"]["coefficients"].tolist() == \
        agent.policy.baseline.coefficients.tolist()
    assert state["lane_steps"].tolist() == agent.policy.lane_steps.tolist()
    for a, e in ((agent, env), (copy, env_copy)):
        rl.run(a, e, rl.StopAfterNSteps(2 * 12, progress=False))
    assert copy.policy.baseline.coefficients.tolist() == \
        agent.policy.baseline.coefficients.tolist()
    assert all(torch.equal(a, b) for a, b in zip(agent.policy.model.parameters(),
                                                 copy.policy.model.parameters(), strict=True))


def test_the_command_line_sets_the_baseline_and_refuses_an_unknown_one(tmp_path, capsys):
    import json

    from stagerl.cli import main

    status = main(["run", "trpo-cartpole", "baseline=linear", "n_steps=32", "batch_size=64",
                   "--steps", "128", "--logdir", str(tmp_path / "run"), "--no-tensorboard"])
    assert status == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "run" / "config.json").read_text())["config"][
        "baseline"] == "linear"
    capsys.readouterr()
    status = main(["run", "vpg-cartpole", "baseline=linaer", "--logdir", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert status == 2 and err.splitlines() == [
        "stagerl run: error: vpg-cartpole: baseline must be 'zero' or 'network' or 'linear', "
        "got baseline='linaer'"]
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vpg_with_the_linear_baseline_reaches_475_in_the_steps_vpg_needs_with_its_network(seed):
    import stagerl.experiments as experiments

    # vpg-cartpole's budget, 150k steps, is what VPG with its value network needs
    # (test_vpg.py::test_vpg_cartpole_reaches_475)
    summary = experiments.train("vpg-cartpole", seed=seed, device="cpu", progress=False,
                                baseline="linear")
    assert summary["config"]["steps"] == 150_000 and summary["eval_return_mean"] >= 475
