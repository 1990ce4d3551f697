"""PPO: the clipped loss on a tiny network, learning (discrete and Gaussian), options, bad input."""

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
from stagerl.algorithms.on_policy.ppo import PPOConfig, make_ppo_agent, ppo_loss


def tiny_model() -> ActorCritic:
    """Linear heads over one input s: logits (s, 0), V(s) = 2 s + 0.5."""
    model = ActorCritic(1, gymnasium.spaces.Discrete(2), net_arch=(), ortho_init=False)
    with torch.no_grad():
        model.actor[0].weight.copy_(torch.tensor([[1.0], [0.0]]))
        model.actor[0].bias.zero_()
        model.critic[0].weight.fill_(2.0)
        model.critic[0].bias.fill_(0.5)
    return model


LN3 = math.log(3.0)


def tiny_batch() -> dict:
    # state 0: pi(0) = 1/2, acted with probability 0.4 -> ratio 1.25, advantage +1: clipped
    # state ln 3: pi(0) = 3/4, acted with 3/4 -> ratio 1, advantage -1
    return {"state": torch.tensor([[0.0], [LN3]]), "action": torch.tensor([0, 0]),
            "log_prob": torch.log(torch.tensor([0.4, 0.75])), "value": torch.zeros(2),
            "advantage": torch.tensor([1.0, -1.0]), "return": torch.tensor([1.0, 2.0])}


def test_clipped_loss_on_a_tiny_network():
    loss, parts = ppo_loss(tiny_model(), tiny_batch(), clip_range=0.2, clip_range_vf=None,
                           ent_coef=0.0, vf_coef=0.5, normalize_advantage=False)
    # policy: -mean(min(1.25, 1.2) * 1, 1 * -1) = -0.1
    # value: mean((0.5 - 1)^2, (2 ln 3 + 0.5 - 2)^2) = (0.25 + 0.486122) / 2 = 0.368061
    assert parts["policy_loss"].item() == pytest.approx(-0.1, abs=1e-6)
    assert parts["value_loss"].item() == pytest.approx(0.3680610, abs=1e-6)
    assert loss.item() == pytest.approx(0.0840305, abs=1e-6)


def test_clipped_loss_gradient_direction():
    model = tiny_model()
    loss, _ = ppo_loss(model, tiny_batch(), 0.2, None, 0.0, 0.5, False)
    loss.backward()
    # The clipped state contributes nothing; the other (advantage -1) pushes pi(0 | ln 3) down:
    # d loss / d logits = ratio / 2 * (1 - 3/4, -1/4) = (0.125, -0.125), times s = ln 3 for W.
    assert model.actor[0].bias.grad.tolist() == pytest.approx([0.125, -0.125], abs=1e-6)
    assert model.actor[0].weight.grad[:, 0].tolist() == pytest.approx(
        [0.125 * LN3, -0.125 * LN3], abs=1e-6)
    clipped_only = {k: v[:1] for k, v in tiny_batch().items()}
    model.zero_grad()
    ppo_loss(model, clipped_only, 0.2, None, 0.0, 0.0, False)[0].backward()
    assert model.actor[0].bias.grad.abs().max().item() == 0.0
    # a gradient step makes the state with a negative advantage less likely to repeat its action
    before = torch.softmax(model.actor(torch.tensor([[LN3]])), -1)[0, 0].item()
    model = tiny_model()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    ppo_loss(model, tiny_batch(), 0.2, None, 0.0, 0.5, False)[0].backward()
    optimiser.step()
    assert torch.softmax(model.actor(torch.tensor([[LN3]])), -1)[0, 0].item() < before


def test_value_clipping_keeps_the_value_near_the_acting_one():
    batch = {**tiny_batch(), "value": torch.tensor([0.4, 2.0])}
    _, parts = ppo_loss(tiny_model(), batch, 0.2, 0.05, 0.0, 0.5, False)
    # V clipped to old +- 0.05: 0.45 and 2.05, against returns 1 and 2
    assert parts["value_loss"].item() == pytest.approx((0.55**2 + 0.05**2) / 2, abs=1e-6)


def test_entropy_bonus_lowers_the_loss():
    plain, _ = ppo_loss(tiny_model(), tiny_batch(), 0.2, None, 0.0, 0.5, False)
    bonus, _ = ppo_loss(tiny_model(), tiny_batch(), 0.2, None, 0.1, 0.5, False)
    entropy = (math.log(2) + (-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))) / 2
    assert plain.item() - bonus.item() == pytest.approx(0.1 * entropy, abs=1e-6)


def test_ppo_learns_cartpole_quickly():  # CI smoke test: random play averages ~22
    env = make_vector_env("CartPole-v1", 8, seed=0)
    config = PPOConfig(n_steps=32, batch_size=256, n_epochs=10, learning_rate=1e-3,
                       gamma=0.98, gae_lambda=0.8)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(20_000, progress=False))
    returns = rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=100), 10)
    assert np.mean(returns) >= 100  # seeds 0-4 give 141 to 473


class ReachTheTarget(gymnasium.Env):
    """One-step episodes: observe a target in [-1, 1], act in [-1, 1], reward -(a - target)^2
    (a policy that ignores the target, acting N(0, 1), averages about -1.3)."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.target = self.np_random.uniform(-1.0, 1.0, 1).astype(np.float32)
        return self.target.copy(), {}

    def step(self, action):
        reward = -float((np.asarray(action)[0] - self.target[0]) ** 2)
        return self.target.copy(), reward, True, False, {}


def test_gaussian_ppo_learns_to_reach_the_target():  # CI smoke test, continuous actions
    env = rl.GymVectorEnv(gymnasium.vector.SyncVectorEnv(
        [ReachTheTarget] * 4, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP), seed=0)
    config = PPOConfig(n_steps=64, batch_size=64, n_epochs=10, learning_rate=3e-3, gamma=0.0)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(8_000, progress=False))
    assert agent.policy.model.log_std.item() < 0.0  # narrower than it started
    returns = rl.evaluate(agent, rl.GymEnv(ReachTheTarget(), seed=1), 50)
    assert np.mean(returns) > -0.05


def test_schedules_decay_linearly_over_the_run():
    env = make_vector_env("CartPole-v1", 2, seed=0)
    config = PPOConfig(n_steps=16, batch_size=32, n_epochs=1, learning_rate=1e-3,
                       learning_rate_schedule="linear", clip_range_schedule="linear",
                       total_steps=128)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(96, progress=False))  # three rollouts of 32
    assert agent.policy.env_steps == 96
    assert agent.policy.optimiser.param_groups[0]["lr"] == pytest.approx(1e-3 * (1 - 96 / 128))


def test_options_run_and_report():
    env = make_vector_env("CartPole-v1", 2, seed=0)
    config = PPOConfig(n_steps=32, batch_size=16, n_epochs=3, clip_range_vf=0.2, ent_coef=0.01,
                       target_kl=1e-6, normalize_states=True)
    agent = make_ppo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(128, progress=False))
    policy = agent.policy
    assert policy.n_updates == 2
    assert set(policy.stats) == {"policy_loss", "value_loss", "entropy", "approx_kl",
                                 "clip_fraction"}
    # the observation statistics follow the states seen (and round-trip in the state dict)
    assert policy.state_rms.count == pytest.approx(128 + 1e-4)
    state = policy.state_dict()
    assert np.allclose(state["state_rms"]["mean"], policy.state_rms.mean)


def test_bad_input_is_refused_at_construction():
    cartpole = make_vector_env("CartPole-v1", 2, seed=0)
    with pytest.raises(ValueError, match="fewer than batch_size=64"):
        make_ppo_agent(cartpole, PPOConfig(n_steps=16, batch_size=64), device="cpu")
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        make_ppo_agent(cartpole, PPOConfig(learning_rate=0.0), device="cpu")
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        PPOConfig(learning_rate=float("inf"))
    with pytest.raises(ValueError, match="ent_coef must be a finite number >= 0, got ent_coef=nan"):
        PPOConfig(ent_coef=float("nan"))
    with pytest.raises(ValueError, match=r"max_grad_norm must be > 0 \(inf: never clip\)"):
        PPOConfig(max_grad_norm=float("-inf"))
    with pytest.raises(ValueError, match="'constant' or 'linear'"):
        make_ppo_agent(cartpole, PPOConfig(clip_range_schedule="cosine"), device="cpu")
    with pytest.raises(ValueError, match="gamma must be in"):
        make_ppo_agent(cartpole, PPOConfig(gamma=1.5), device="cpu")
    dict_actions = gymnasium.wrappers.TransformAction(
        gymnasium.make("CartPole-v1"), lambda a: int(a["push"]),
        gymnasium.spaces.Dict(push=gymnasium.spaces.Discrete(2)))
    with pytest.raises(TypeError, match=r"make_ppo_agent acts in Discrete, MultiDiscrete, "
                                        r"MultiBinary or float Box action spaces, got Dict.*"
                                        r"ActionWrapper"):
        make_ppo_agent(rl.GymEnv(dict_actions), device="cpu")
    text = gymnasium.wrappers.TransformObservation(
        gymnasium.make("CartPole-v1"), lambda o: "x", gymnasium.spaces.Text(4))
    with pytest.raises(TypeError, match="make_ppo_agent reads Box.*FlattenObservation"):
        make_ppo_agent(rl.GymEnv(text), device="cpu")
    with pytest.raises(TypeError, match="state_space and action_space"):
        make_ppo_agent(object(), device="cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            make_ppo_agent(cartpole, device="cuda")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppo_cartpole_reaches_475_at_100k_steps(seed):
    summary = experiments.train("ppo-cartpole", seed=seed, device="cpu", progress=False)
    assert summary["env_steps"] == 100_000
    assert summary["eval_return_mean"] >= 475


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppo_pendulum_reaches_minus_250_within_200k_steps(seed):
    summary = experiments.train("ppo-pendulum", seed=seed, device="cpu", progress=False)
    assert summary["env_steps"] == 200_000
    assert summary["eval_return_mean"] >= -250
