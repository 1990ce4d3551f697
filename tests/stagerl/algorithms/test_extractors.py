"""Feature extractors: the built-ins compute what their docstrings say (pixels scaled inside the
network, a Dict's leaves each through its own extractor, concatenated in order), ``"auto"`` picks
the right one per space, and a factory of the user's own is what every algorithm reads its
observations through, shared between actor and critic or one each as asked, trained by the
updates on a vector env. A factory that is not one, or gives the wrong shape, is refused naming
the maker.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

import stagerl as rl
from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
from stagerl.algorithms.extractors import (
    CombinedExtractor,
    Flatten,
    NatureCNN,
    extractor_factory,
    features_dim,
)
from stagerl.algorithms.off_policy import SACConfig, TD3Config, make_sac_agent, make_td3_agent
from stagerl.algorithms.on_policy import (
    A2CConfig,
    A3CConfig,
    ERWRConfig,
    PPOConfig,
    REPSConfig,
    TRPOConfig,
    VPGConfig,
    make_a2c_agent,
    make_a3c_agent,
    make_erwr_agent,
    make_ppo_agent,
    make_reps_agent,
    make_trpo_agent,
    make_vpg_agent,
)
from stagerl.algorithms.on_policy.rollout import read_rollout

IMAGE = spaces.Box(0, 255, (4, 84, 84), np.uint8)


# ---- the built-ins --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(84, 84), (4, 84, 84), (2, 3, 84, 84)])
def test_the_nature_cnn_scales_uint8_pixels_inside_the_network(shape):
    cnn = NatureCNN(spaces.Box(0, 255, shape, np.uint8), features_dim=16)
    pixels = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (3, *shape), np.uint8))
    out = cnn(pixels)
    assert out.shape == (3, 16) and cnn.features_dim == 16
    torch.testing.assert_close(out, cnn(pixels.float() / 255.0), rtol=0, atol=0)
    channels = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    assert cnn.cnn[0].in_channels == channels  # every axis but the frame's is a channel


def test_the_nature_cnn_gives_the_plain_layouts_features_and_gradients_in_channels_last():
    # It convolves in channels last (faster on the CPU): the general NCHW pass, through the
    # same layers on a contiguous float copy, gives the same features and gradients.
    torch.manual_seed(0)
    cnn = NatureCNN(IMAGE, features_dim=16)
    pixels = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (5, 4, 84, 84), np.uint8))
    out = cnn(pixels)
    out.square().sum().backward()
    fast = [p.grad.clone() for p in cnn.parameters()]
    cnn.zero_grad()
    plain = pixels.float().div(255.0).contiguous()
    assert plain.is_contiguous() and not plain.is_contiguous(memory_format=torch.channels_last)
    general = cnn.linear(cnn.cnn(plain))
    general.square().sum().backward()
    torch.testing.assert_close(out, general, rtol=1e-5, atol=1e-6)
    for a, p in zip(fast, cnn.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-5)


def test_the_nature_cnn_refuses_vectors_naming_the_mlp_extractor():
    with pytest.raises(ValueError, match=r"at least 36x36 .* shape \(8,\); use the 'mlp'"):
        NatureCNN(spaces.Box(-1.0, 1.0, (8,)))


def test_the_combined_extractor_concatenates_each_leafs_features_in_the_space_order():
    space = spaces.Dict(frame=spaces.Box(0, 255, (36, 36), np.uint8),
                        n=spaces.Discrete(3, start=1),
                        speed=spaces.Box(-1.0, 1.0, (2,)))
    torch.manual_seed(0)
    extractor = CombinedExtractor(space, cnn_features=5)
    assert [type(p) for p in extractor.parts] == [NatureCNN, Flatten, Flatten]
    frame = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (2, 36, 36), np.uint8))
    x = {"speed": torch.tensor([[0.5, -0.25], [1.0, 0.0]]), "n": torch.tensor([3, 1]),
         "frame": frame}
    out = extractor(x)
    assert out.shape == (2, 5 + 3 + 2) == (2, extractor.features_dim)
    torch.testing.assert_close(out[:, :5], extractor.parts[0](frame), rtol=0, atol=0)
    assert out[:, 5:].tolist() == [[0.0, 0.0, 1.0, 0.5, -0.25], [1.0, 0.0, 0.0, 1.0, 0.0]]
    # a Tuple the same way, in its order; a nested Dict gets a combined extractor of its own
    nested = CombinedExtractor(spaces.Tuple((spaces.MultiBinary(2), spaces.Dict(
        a=spaces.MultiDiscrete([2, 2])))))
    assert isinstance(nested.parts[1], CombinedExtractor) and nested.features_dim == 2 + 4
    assert nested((torch.tensor([[1, 0]]), {"a": torch.tensor([[1, 0]])})).tolist() == \
        [[1.0, 0.0, 0.0, 1.0, 1.0, 0.0]]


@pytest.mark.parametrize("space, name, built", [
    (spaces.Dict(a=spaces.Box(-1.0, 1.0, (2,))), "auto", CombinedExtractor),
    (spaces.Tuple((spaces.Discrete(2),)), "auto", CombinedExtractor),
    (IMAGE, "auto", NatureCNN),
    (spaces.Box(0, 255, (8, 8), np.uint8), "auto", Flatten),  # too small for the CNN
    (spaces.Discrete(4), "auto", Flatten),
    (spaces.Box(-1.0, 1.0, (3,)), "auto", None),  # the MLP reads it as it is
    (spaces.Box(-1.0, 1.0, (2, 3)), "mlp", Flatten),
    (IMAGE, "mlp", Flatten),
    (IMAGE, "nature_cnn", NatureCNN),
])
def test_auto_and_the_names_build_the_extractor_the_docs_say(space, name, built):
    assert extractor_factory(name, space) is built


# ---- a factory of the user's own in every algorithm ------------------------------------------


class Body(nn.Module):
    """A user's extractor: one linear layer over the flat observation; it says no
    ``features_dim`` (measured), and notes the spaces it is built for."""

    built_for: list = []

    def __init__(self, space):
        super().__init__()
        Body.built_for.append(space)
        self.linear = nn.Linear(int(np.prod(space.shape)), 7)

    def forward(self, x):
        return torch.tanh(self.linear(x.float().reshape(x.shape[0], -1)))


def bodies(policy):
    """The distinct ``Body`` instances the policy's trained (not target) networks hold."""
    found = {}
    for name in ("model", "network", "actor", "critic"):
        module = getattr(policy, name, None)
        if isinstance(module, nn.Module):
            found.update({id(m): m for m in module.modules() if isinstance(m, Body)})
    return list(found.values())


def parameters(modules):
    return [p.detach().clone() for m in modules for p in m.parameters()]


DISCRETE = [
    (make_ppo_agent, PPOConfig(n_steps=16, batch_size=16, n_epochs=2, learning_rate=1e-2)),
    (make_a2c_agent, A2CConfig(n_steps=8, learning_rate=1e-2)),
    (make_vpg_agent, VPGConfig(episodes_per_update=2, max_episode_steps=30)),
    (make_trpo_agent, TRPOConfig(n_steps=32, batch_size=32)),
    (make_erwr_agent, ERWRConfig(episodes_per_update=2, max_episode_steps=30)),
    (make_reps_agent, REPSConfig(episodes_per_update=2, max_episode_steps=30)),
    (make_a3c_agent, A3CConfig(n_steps=8, learning_rate=1e-2)),
    (make_dqn_agent, DQNConfig(total_steps=400, learning_starts=40, buffer_size=100,
                               batch_size=16, train_freq=1, target_update_interval=50,
                               net_arch=(16,))),
]
CONTINUOUS = [
    (make_sac_agent, SACConfig(learning_starts=16, batch_size=8, net_arch=(16,))),
    (make_td3_agent, TD3Config(learning_starts=16, batch_size=8, net_arch=(16,),
                               policy_delay=1)),
]


def _name(case):
    return case[0].__name__


@pytest.mark.parametrize("make, config", DISCRETE + CONTINUOUS, ids=map(_name, DISCRETE +
                                                                          CONTINUOUS))
def test_every_algorithm_reads_states_through_the_users_extractor_and_trains_it(make, config):
    env_id = "CartPole-v1" if (make, config) in DISCRETE else "Pendulum-v1"
    env = rl.GymVectorEnv(env_id, num_envs=2, seed=0)
    Body.built_for = []
    agent = make(env, config, seed=0, device="cpu", features_extractor=Body)
    assert Body.built_for and all(s == env.single_state_space for s in Body.built_for)
    found = bodies(agent.policy)
    assert found, "the policy's networks hold no extractor of the user's"
    before = parameters(found)
    rl.run(agent, env, rl.StopAfterNSteps(40 if (make, config) in CONTINUOUS else 100,
                                          progress=False))
    after = parameters(found)
    assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True)), \
        "an update left the user's extractor as it was"
    assert all(torch.isfinite(p).all() for p in after)


SHARING = [
    (make_ppo_agent, PPOConfig(n_steps=16, batch_size=16, n_epochs=1)),
    (make_a2c_agent, A2CConfig(n_steps=8)),
    (make_trpo_agent, TRPOConfig(n_steps=32, batch_size=32)),
    *CONTINUOUS,
]


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("make, config", SHARING, ids=map(_name, SHARING))
def test_the_extractor_is_shared_between_actor_and_critic_or_one_each_as_asked(make, config,
                                                                             share):
    import dataclasses

    config = dataclasses.replace(config, share_features_extractor=share)
    continuous = make in (make_sac_agent, make_td3_agent)
    env = rl.GymVectorEnv("Pendulum-v1" if continuous else "CartPole-v1", num_envs=2, seed=0)
    agent = make(env, config, seed=0, device="cpu", features_extractor=Body)
    found = bodies(agent.policy)
    assert len(found) == (1 if share else 2)
    if continuous:  # the critics' extractor is the actor's, or their own
        actor_body = [m for m in agent.policy.actor.modules() if isinstance(m, Body)]
        assert len(actor_body) == 1
        assert (agent.policy.critic.extractor is actor_body[0]) == share
    else:
        model = agent.policy.model
        assert model.shares_extractor == share and model.extractor in found
        assert (model.critic_extractor is None) == share
    before = parameters(found)
    rl.run(agent, env, rl.StopAfterNSteps(40 if continuous else 100, progress=False))
    for body, old in zip(found, [before[2 * i:2 * i + 2] for i in range(len(found))],
                         strict=True):  # each extractor learns (weight and bias)
        assert any(not torch.equal(p, q) for p, q in zip(old, body.parameters(), strict=True))


def test_a_pixel_env_gets_the_nature_cnn_everywhere_by_default():
    env = rl.GymEnv(gymnasium.wrappers.TimeLimit(PixelEnv(), 20), seed=0)
    ppo = make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=8, n_epochs=1), device="cpu")
    assert isinstance(ppo.policy.model.extractor, NatureCNN)
    dqn = make_dqn_agent(env, DQNConfig(total_steps=10, buffer_size=10, learning_starts=5),
                         device="cpu")
    assert any(isinstance(m, NatureCNN) for m in dqn.policy.network.modules())
    rl.run(ppo, env, rl.StopAfterNSteps(16, progress=False))
    assert ppo.policy.n_updates == 2
    assert ppo.trajectory.container["state"].dtype == np.uint8  # a byte a pixel up to the CNN


def test_the_learning_batch_of_stacked_frames_is_channels_last_with_the_same_pixels():
    env = rl.GymEnv(gymnasium.wrappers.TimeLimit(PixelEnv((2, 36, 36)), 20), seed=0)
    agent = make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=4, n_epochs=2), device="cpu")
    policy, seen = agent.policy, {}
    update, learn = policy.update, policy.learn
    policy.update = lambda batch: (seen.setdefault("batch", batch), update(batch))

    def read_then_learn(container):
        seen["rollout"] = read_rollout(container, policy)  # before it is learned and cleared
        learn(container)

    policy.learn = read_then_learn
    rl.run(agent, env, rl.StopAfterNSteps(8, progress=False))
    state, rollout = seen["batch"]["state"], seen["rollout"]
    assert state.dtype == torch.uint8 and state.is_contiguous(memory_format=torch.channels_last)
    general = torch.as_tensor(rollout["state"][rollout["valid"]])  # NCHW, the same pixels
    assert general.is_contiguous() and state.shape == (8, 2, 36, 36)
    assert torch.equal(state, general)
    assert policy.n_updates == 1


class PixelEnv(gymnasium.Env):
    """36×36 grey frames (the smallest the Nature CNN reads), two actions."""

    action_space = spaces.Discrete(2)

    def __init__(self, shape: tuple = (36, 36)):
        self.observation_space = spaces.Box(0, 255, shape, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.integers(0, 256, self.observation_space.shape, dtype=np.uint8), {}

    def step(self, action):
        frame = self.np_random.integers(0, 256, self.observation_space.shape, dtype=np.uint8)
        return frame, float(action), False, False, {}


# ---- bad factories ------------------------------------------------------------------------


class ThreeAxes(nn.Module):
    def forward(self, x):
        return x.float().reshape(x.shape[0], 1, -1)


MAKERS = [make_ppo_agent, make_a2c_agent, make_vpg_agent, make_trpo_agent]


@pytest.mark.parametrize("make", MAKERS + [make_dqn_agent, make_sac_agent, make_td3_agent],
                         ids=lambda m: m.__name__)
@pytest.mark.parametrize("factory, error, words", [
    (nn.Linear(4, 4), TypeError, "takes a factory .* not a module"),
    (lambda space: "not a module", TypeError, "must return a torch.nn.Module, got str"),
    (42, TypeError, "must be a built-in's name .* or a factory"),
    (lambda space: ThreeAxes(), ValueError, r"\(batch, features\)"),
])
def test_a_factory_that_is_not_one_is_refused_naming_the_fix(make, factory, error, words):
    continuous = make in (make_sac_agent, make_td3_agent)
    env = rl.GymVectorEnv("Pendulum-v1" if continuous else "CartPole-v1", num_envs=2, seed=0)
    config = DQNConfig(total_steps=10) if make is make_dqn_agent else None
    with pytest.raises(error, match=words):
        if config is None:
            make(env, seed=0, device="cpu", features_extractor=factory)
        else:
            make(env, config, seed=0, device="cpu", features_extractor=factory)


@pytest.mark.parametrize("config_class", [PPOConfig, A2CConfig, VPGConfig, TRPOConfig,
                                          DQNConfig, SACConfig, TD3Config])
@pytest.mark.parametrize("bad", ["resnet", "", "NatureCNN"])
def test_a_name_that_is_no_built_in_is_refused_naming_the_choices(config_class, bad):
    with pytest.raises(ValueError, match=r"features_extractor must be 'auto' or 'mlp' or "
                                         r"'nature_cnn' or 'combined', got features_extractor="):
        config_class(features_extractor=bad)


def test_features_dim_is_measured_when_a_module_does_not_say_it():
    space = spaces.Box(-1.0, 1.0, (3, 2))
    assert features_dim(Body(space), space) == 7
    with pytest.raises(ValueError, match=r"must return \(batch, features\), got \(1, 1, 6\)"):
        features_dim(ThreeAxes(), space)
