"""SAC: one update pinned on a tiny network, acting, truncation, vector envs, copies, bad input,
CUDA, and learning on Pendulum."""

import copy
import math
import pickle

import gymnasium
import numpy as np
import pytest
import torch
from continuous_support import (  # one_torch_thread: an autouse fixture
    ACTION_SPACE,
    STATE_SPACE,
    fill,
    one_torch_thread,  # noqa: F401
    tiny_batch,
)

import stagerl as rl
import stagerl.experiments as experiments
from stagerl.algorithms.off_policy.sac import (
    SACConfig,
    SACPolicy,
    SquashedGaussianActor,
    make_sac_agent,
    sac_update,
)


def tiny_policy(**overrides):
    settings = dict(learning_rate=0.1, net_arch=(2,), gamma=0.9, tau=0.5, **overrides)
    policy = SACPolicy(STATE_SPACE, ACTION_SPACE, SACConfig(**settings), seed=0, device="cpu")
    fill(policy.actor, 0.5)
    fill(policy.critic.q_networks[0], 1.0)
    fill(policy.critic.q_networks[1], -1.0)
    policy.critic_target.load_state_dict(policy.critic.state_dict())
    policy.generator.manual_seed(0)
    return policy


def small_agent(env, seed=0, **overrides):
    settings = {"learning_starts": 50, "batch_size": 32, "net_arch": (16,), **overrides}
    return make_sac_agent(env, SACConfig(**settings), seed=seed, device="cpu")


# ---- one update, pinned --------------------------------------------------------------------


def test_one_update_pinned_on_a_tiny_network():
    policy = tiny_policy()
    sac_update(policy, tiny_batch())
    update = policy.last_update
    # Row 0: r + gamma * (min_i Q'_i(s', a') - ent_coef * log pi(a'|s')); row 1 terminal: r.
    assert update["target_q"].tolist() == pytest.approx([-0.51799655, -0.5], abs=1e-6)
    assert update["critic_loss"].item() == pytest.approx(3.7276578, abs=1e-5)
    assert update["actor_loss"].item() == pytest.approx(2.2897980, abs=1e-5)
    assert update["ent_coef"].item() == 1.0  # the coefficient the losses used: exp(0)
    # The policy's entropy (-mean log pi = -1.605) is below the target (-1): the coefficient
    # grows; Adam's first step moves log(ent_coef) by the learning rate.
    assert policy.log_ent_coef.item() == pytest.approx(0.1, abs=1e-6)
    assert policy.ent_coef == pytest.approx(math.exp(0.1), rel=1e-6)
    # The critics stepped; their targets moved halfway (tau = 0.5) towards them.
    assert policy.critic.q_networks[0][0].weight[1].tolist() == pytest.approx(
        [0.2, 0.4, 0.4], abs=1e-6)
    assert policy.critic_target.q_networks[0][0].weight[1].tolist() == pytest.approx(
        [0.15, 0.35, 0.45], abs=1e-6)
    assert policy.n_updates == 1


def test_a_truncated_transition_bootstraps_and_a_terminal_one_does_not():
    batch = tiny_batch()
    batch["terminal"] = torch.tensor([False, False])  # row 1 cut by a time limit, say
    policy = tiny_policy()
    sac_update(policy, batch)
    bootstrapped = policy.last_update["target_q"][1].item()
    batch["terminal"] = torch.tensor([False, True])
    policy = tiny_policy()
    sac_update(policy, batch)
    assert policy.last_update["target_q"][1].item() == -0.5  # the reward alone
    assert bootstrapped != pytest.approx(-0.5, abs=1e-3)


def test_a_fixed_entropy_coefficient_is_not_learned():
    policy = tiny_policy(ent_coef=0.2)
    sac_update(policy, tiny_batch())
    assert policy.ent_coef == pytest.approx(0.2)
    assert "ent_coef_loss" not in policy.last_update
    assert policy.target_entropy == -1.0


def test_squashed_log_probability_is_the_change_of_variables_of_tanh():
    actor = SquashedGaussianActor(2, 3, (4,))
    fill(actor, 0.3)
    state = torch.tensor([[0.3, -0.7], [1.5, 2.0]])
    action, log_prob = actor.sample(state, torch.Generator().manual_seed(1))
    mean, log_std = actor(state)
    reference = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()),
        torch.distributions.transforms.TanhTransform())
    assert log_prob.tolist() == pytest.approx(reference.log_prob(action).sum(-1).tolist(),
                                              abs=1e-5)
    assert log_prob.tolist() == pytest.approx([-3.6932468, -3.1932111], abs=1e-5)


def test_squashed_log_probability_stays_finite_where_tanh_rounds_to_one():
    value = rl.utils.squashed_diag_gaussian_log_prob(torch.zeros(1), torch.zeros(1),
                                                     torch.tensor([[30.0]]))
    # log N(30; 0, 1) - log(1 - tanh(30)^2) = -450.919 + 2 * (30 - log 2 + log(1 + e^-60))
    assert value.item() == pytest.approx(-0.5 * 900 - 0.5 * math.log(2 * math.pi)
                                         + 2 * (30 - math.log(2)), rel=1e-6)


# ---- acting --------------------------------------------------------------------------------


def test_actions_are_uniform_in_the_bounds_before_learning_starts_then_sampled():
    env = rl.GymEnv("Pendulum-v1", seed=0)
    agent = small_agent(env)
    policy = agent.policy
    env.reset()
    warmup = np.array([rl.plan(policy, env) for _ in range(50)])
    assert warmup.shape == (50, 1) and warmup.dtype == np.float32
    assert -2.0 <= warmup.min() < -1.0 and 1.0 < warmup.max() <= 2.0
    assert policy.env_steps == 50
    generator_before = policy.generator.get_state()
    action = rl.plan(policy, env)
    assert not torch.equal(policy.generator.get_state(), generator_before)  # sampled
    assert action.shape == (1,) and abs(action[0]) <= 2.0


def test_deterministic_action_is_tanh_of_the_mean_and_draws_nothing():
    env = rl.GymEnv("Pendulum-v1", seed=0)
    agent = small_agent(env)
    rl.run(agent, env, rl.StopAfterNSteps(80, progress=False))
    policy = agent.policy
    rng_before, generator_before = policy.rng.bit_generator.state, policy.generator.get_state()
    steps_before = policy.env_steps
    with rl.deterministic(policy):
        action = rl.plan(policy, env)
    mean, _ = policy.actor(torch.as_tensor(env.state, dtype=torch.float32)[None])
    assert action.tolist() == pytest.approx((2.0 * torch.tanh(mean[0])).tolist(), abs=1e-6)
    returns = rl.evaluate(agent, rl.GymEnv("Pendulum-v1", seed=5), episodes=2)
    assert len(returns) == 2
    assert policy.rng.bit_generator.state == rng_before
    assert torch.equal(policy.generator.get_state(), generator_before)
    assert policy.env_steps == steps_before


# ---- the run: updates, truncation, vector envs ---------------------------------------------


def test_updates_follow_the_controller_one_per_env_step_after_learning_starts():
    env = rl.GymEnv("Pendulum-v1", seed=0)
    agent = small_agent(env, learning_starts=50)
    rl.run(agent, env, rl.StopAfterNSteps(120, progress=False))
    assert agent.policy.n_updates == 120 - 50  # SB3 trains after every step beyond 50
    agent = small_agent(env, learning_starts=50, train_freq=4, gradient_steps=3)
    rl.run(agent, env, rl.StopAfterNSteps(120, progress=False))
    assert agent.policy.n_updates == 3 * len(range(52, 121, 4))  # at steps 52, 56, ..., 120


def test_vector_env_acts_with_one_forward_per_act_and_keeps_sub_envs_apart():
    env = rl.GymVectorEnv("Pendulum-v1", num_envs=3, seed=0)
    agent = small_agent(env, buffer_size=60, learning_starts=30)  # 20 rows a sub-env: wraps
    batch_sizes = []
    agent.policy.actor.register_forward_pre_hook(lambda m, x: batch_sizes.append(len(x[0])))
    rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
    policy, container = agent.policy, agent.trajectory.container
    assert policy.env_steps == 300 and policy.n_updates == 300 - 30
    assert container.n_lanes == 3 and len(container) == 60
    assert batch_sizes.count(3) == 100 - 10  # one forward of all 3 sub-envs per act after warm-up
    env.reset()
    action = rl.plan(policy, env)
    assert action.shape == (3, 1) and np.abs(action).max() <= 2.0
    # Every stored transition pairs consecutive states of one sub-env's episode: Pendulum's
    # state is (cos, sin, angular velocity), and one step changes the angle by at most 0.8.
    batch = agent.trajectory.sample()[0]
    angle = np.arctan2(batch["state"][:, 1].numpy(), batch["state"][:, 0].numpy())
    next_angle = np.arctan2(batch["next_state"][:, 1].numpy(), batch["next_state"][:, 0].numpy())
    turn = np.abs((next_angle - angle + np.pi) % (2 * np.pi) - np.pi)
    assert turn.max() < 0.8


def test_vector_env_episodes_end_by_truncation_and_bootstrap():
    env = rl.GymVectorEnv("Pendulum-v1", num_envs=2, seed=0, max_episode_steps=4)
    agent = small_agent(env, buffer_size=100, learning_starts=10)
    hook = rl.run(agent, env, rl.StopAfterNSteps(20, progress=False), rl.StepsPerEpisode())
    # 10 acts: each sub-env steps 4 times, resets, steps 4 times, resets (the reset-only acts
    # store no transition).
    assert hook.steps == [4, 4, 4, 4]
    container = agent.trajectory.container
    assert not container["terminal"].any()
    assert agent.trajectory.controller.n_inserted == 16
    assert agent.policy.n_updates == 16 - 10


# ---- copies and state ----------------------------------------------------------------------


def _continue(agent, env, steps=40):
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return [p.detach().clone() for p in agent.policy.actor.parameters()]


def test_pickled_and_deep_copied_agents_continue_exactly_as_the_original():
    env = rl.GymEnv("Pendulum-v1", seed=0)
    agent = small_agent(env)
    pickle.loads(pickle.dumps(agent))  # before training too
    rl.run(agent, env, rl.StopAfterNSteps(70, progress=False))
    copies = [copy.deepcopy(agent), pickle.loads(pickle.dumps(agent))]
    envs = [rl.GymEnv("Pendulum-v1", seed=1) for _ in range(3)]
    original = _continue(agent, envs[0])
    for other, other_env in zip(copies, envs[1:], strict=True):
        assert all(torch.equal(a, b) for a, b in zip(original, _continue(other, other_env),
                                                     strict=True))


def test_state_dict_round_trip_continues_identically():
    env = rl.GymEnv("Pendulum-v1", seed=0)
    agent = small_agent(env)
    rl.run(agent, env, rl.StopAfterNSteps(70, progress=False))
    state = agent.state_dict()
    assert {"actor", "critic", "critic_target", "log_ent_coef", "optimiser", "env_steps",
            "n_updates", "rng", "generator"} <= set(state)
    fresh = small_agent(env, seed=7)
    restored = rl.Agent(fresh.policy, copy.deepcopy(agent.trajectory))
    restored.load_state_dict(copy.deepcopy(state))
    assert restored.policy.env_steps == 70 and restored.policy.n_updates == 20
    original = _continue(agent, rl.GymEnv("Pendulum-v1", seed=1))
    assert all(torch.equal(a, b) for a, b in zip(
        original, _continue(restored, rl.GymEnv("Pendulum-v1", seed=1)), strict=True))


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        env = rl.GymEnv("Pendulum-v1", seed=3)
        runs.append(_continue(small_agent(env, seed=3), env, steps=90))
    assert all(torch.equal(a, b) for a, b in zip(*runs, strict=True))


# ---- bad input -----------------------------------------------------------------------------


class _Spaces(rl.Env):
    """An env read for its spaces only."""

    def __init__(self, action_space, state_space=None):
        self._spaces = action_space, state_space or gymnasium.spaces.Box(-1.0, 1.0, (3,))

    action_space = property(lambda self: self._spaces[0])
    state_space = property(lambda self: self._spaces[1])


def test_a_discrete_action_space_is_refused_naming_dqn_and_ppo():
    with pytest.raises(TypeError, match="DQN or PPO"):
        make_sac_agent(rl.GymEnv("CartPole-v1"), device="cpu")


def test_an_unbounded_box_is_refused_with_the_fix():
    env = _Spaces(gymnasium.spaces.Box(-np.inf, np.inf, (1,)))
    with pytest.raises(ValueError, match="unbounded.*RescaleAction"):
        make_sac_agent(env, device="cpu")


def test_observations_it_cannot_read_are_refused():
    with pytest.raises(TypeError, match="SAC reads Box.*got Text.*FlattenObservation"):
        make_sac_agent(_Spaces(ACTION_SPACE, gymnasium.spaces.Text(4)), device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused_naming_cpu_and_auto():
    with pytest.raises(ValueError, match="device='cpu'.*'auto'"):
        make_sac_agent(rl.GymEnv("Pendulum-v1"), device="cuda")


@pytest.mark.parametrize("settings, error", [
    (dict(learning_rate=0.0), ValueError),
    (dict(tau=0.0), ValueError),
    (dict(gamma=1.5), ValueError),
    (dict(batch_size=0), ValueError),
    (dict(batch_size=2.5), TypeError),
    (dict(n_critics=0), ValueError),
    (dict(net_arch=(8, -1)), ValueError),
    (dict(net_arch="64"), TypeError),
    (dict(ent_coef="often"), ValueError),
    (dict(ent_coef=-0.1), ValueError),
    (dict(ent_coef=float("nan")), ValueError),
    (dict(ent_coef="auto_inf"), ValueError),
    (dict(target_entropy="high"), ValueError),
    (dict(target_entropy=float("inf")), ValueError),
    (dict(learning_rate=float("inf")), ValueError),
    (dict(gamma=float("nan")), ValueError),
])
def test_bad_settings_are_refused_at_construction(settings, error):
    with pytest.raises(error, match=next(iter(settings))):
        SACConfig(**settings)


def test_bad_config_and_seed_are_refused():
    with pytest.raises(TypeError, match="SACConfig"):
        make_sac_agent(rl.GymEnv("Pendulum-v1"), {"learning_rate": 1e-3}, device="cpu")
    with pytest.raises(ValueError, match="seed"):
        make_sac_agent(rl.GymEnv("Pendulum-v1"), seed=-1, device="cpu")


def test_policy_refuses_an_env_of_other_shapes():
    agent = small_agent(rl.GymEnv("Pendulum-v1"))
    with pytest.raises(ValueError, match="make_sac_agent"):
        agent.validate(rl.GymEnv("MountainCarContinuous-v0"))


# ---- CUDA ----------------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_learns_on_cuda_and_moves_back_and_forth():
    env = rl.GymEnv("Pendulum-v1", seed=0)
    agent = make_sac_agent(env, SACConfig(learning_starts=50, net_arch=(16,)), device="cuda")
    rl.run(agent, env, rl.StopAfterNSteps(80, progress=False))
    policy = agent.policy
    assert policy.actor.net[0].weight.device.type == "cuda" and policy.n_updates == 30
    agent.to("cpu")
    assert policy.generator.device.type == "cpu"
    assert all(v.device.type == "cpu" for s in policy.optimiser.state.values()
               for v in s.values())
    rl.run(agent, env, rl.StopAfterNSteps(10, progress=False))
    agent.to("cuda")
    rl.run(agent, env, rl.StopAfterNSteps(10, progress=False))
    assert policy.n_updates == 50


# ---- learning ------------------------------------------------------------------------------


def test_learns_pendulum_clearly_above_random_in_a_few_thousand_steps():
    # Random actions score about -1,200 on Pendulum-v1.
    # Measured: -119, -172, -140 for seeds 0, 1, 2 (a 64-64 MLP, 5k steps, ~10 s on one core).
    summary = experiments.train("sac-pendulum", steps=5_000, seed=0, device="cpu",
                              progress=False, net_arch=(64, 64))
    assert summary["eval_return_mean"] > -400


@pytest.mark.slow
def test_sac_pendulum_reaches_minus_200_in_20k_steps_in_two_of_three_seeds():
    returns = [experiments.train("sac-pendulum", seed=seed, device="cpu", progress=False)
               ["eval_return_mean"] for seed in range(3)]
    assert sum(r >= -200 for r in returns) >= 2, returns


@pytest.mark.slow
def test_sac_pendulum_learns_on_a_vector_env():
    summary = experiments.train("sac-pendulum", seed=0, device="cpu", progress=False, num_envs=4)
    assert summary["eval_return_mean"] >= -200
