"""The on-policy policies act through a numpy forward pass on the CPU; it must give what the
torch forward pass gives, on the same weights and inputs, whatever happened to the weights, and
act through torch wherever it does not apply."""

from __future__ import annotations

import copy
import pickle

import gymnasium
import numpy as np
import pytest
import torch

import stagerl as rl
from stagerl.algorithms.on_policy import PPOConfig, make_ppo_agent, make_vector_env
from stagerl.algorithms.on_policy.networks import ActorCritic
from stagerl.algorithms.on_policy.rollout import read_rollout, time_major

SPACES = {
    "discrete": gymnasium.spaces.Discrete(3),
    "box": gymnasium.spaces.Box(-1.0, 1.0, (2,)),
    "multidiscrete": gymnasium.spaces.MultiDiscrete([2, 3]),
    "multibinary": gymnasium.spaces.MultiBinary(3),
}


def assert_same_as_torch(model: ActorCritic, states: np.ndarray) -> None:
    fast = model.numpy_act_outputs(states)
    general = model.act_outputs(torch.as_tensor(states))
    assert fast is not None
    for a, b in zip(fast, general, strict=True):
        if b is None:
            assert a is None
        else:
            assert a.shape == b.shape and a.dtype == b.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("space", SPACES.values(), ids=SPACES.keys())
@pytest.mark.parametrize("activation", [torch.nn.Tanh, torch.nn.ReLU], ids=["tanh", "relu"])
def test_the_numpy_pass_gives_the_torch_pass_outputs(space, activation):
    torch.manual_seed(0)
    model = ActorCritic(5, space, (16, 8), activation=activation, log_std_init=-0.5)
    states = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32) * 3
    assert_same_as_torch(model, states)
    assert_same_as_torch(model, states[:1])


@pytest.mark.parametrize("space", SPACES.values(), ids=SPACES.keys())
def test_the_numpy_pass_follows_the_weights_through_steps_loads_copies_and_pickles(space):
    torch.manual_seed(0)
    model = ActorCritic(4, space, (8,))
    states = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    before = model.numpy_act_outputs(states)[2].copy()
    optimiser = torch.optim.Adam(model.flat_parameters(), lr=0.1, fused=True)
    actions = torch.as_tensor(np.stack([space.sample() for _ in range(3)]))
    log_prob, _ = model.log_prob_entropy(torch.as_tensor(states), actions)
    (-(log_prob.mean()) + model.value(torch.as_tensor(states)).pow(2).mean()).backward()
    optimiser.step()  # in place: the views see it
    assert not np.allclose(model.numpy_act_outputs(states)[2], before)
    assert_same_as_torch(model, states)
    other = ActorCritic(4, space, (8,))
    model.load_state_dict(other.state_dict())
    assert_same_as_torch(model, states)
    np.testing.assert_allclose(model.numpy_act_outputs(states)[0],
                               other.numpy_act_outputs(states)[0], rtol=1e-6)
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert_same_as_torch(copied, states)
        with torch.no_grad():
            copied.flat_parameters()[0].add_(1.0)  # the copy's weights are its own
        assert_same_as_torch(copied, states)
        assert_same_as_torch(model, states)
    model.actor[0].weight.data = torch.randn_like(model.actor[0].weight)  # memory of its own
    assert_same_as_torch(model, states)
    model.double()  # other flat tensors, which numpy does not read: torch acts
    assert model.numpy_act_outputs(states) is None
    model.float()
    assert_same_as_torch(model, states)


def test_where_the_numpy_pass_does_not_apply_it_says_so():
    model = ActorCritic(4, SPACES["discrete"], (8,), activation=torch.nn.SiLU)
    assert model.numpy_act_outputs(np.zeros((2, 4), np.float32)) is None  # an activation
    model = ActorCritic(4, SPACES["discrete"], (8,))
    assert model.numpy_act_outputs(np.zeros((2, 4), np.float64)) is None  # not float32
    assert model.numpy_act_outputs(np.zeros((2, 2, 2), np.float32)) is None  # not flat


@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalised"])
def test_a_vector_run_acts_and_stores_what_the_torch_pass_gives(normalize):
    env = make_vector_env("CartPole-v1", num_envs=4, seed=0)
    agent = make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=32, n_epochs=1,
                                          normalize_states=normalize), seed=0, device="cpu")
    policy = agent.policy
    if normalize:
        policy.state_rms.update(np.random.default_rng(0).standard_normal((50, 4)) * 2 + 1)
    env.reset()
    for _ in range(5):
        states = env.state
        fast = policy.act_outputs(states)
        general = policy.model.act_outputs(policy.states_tensor(states))
        assert fast[1] is None and general[1] is None  # no log_std: a categorical
        for i in (0, 2):
            np.testing.assert_allclose(fast[i], general[i], rtol=1e-5, atol=1e-6)
        action, stored, log_prob, value = policy.sample(states, env.single_action_space)
        z = general[0] - general[0].max(axis=1, keepdims=True)
        torch_log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        np.testing.assert_allclose(log_prob, torch_log_probs[np.arange(4), action], atol=1e-6)
        np.testing.assert_allclose(value, general[2], rtol=1e-5, atol=1e-6)
        env.act(action)


def test_the_same_seed_gives_the_same_run_through_the_numpy_pass():
    def run() -> list:
        env = make_vector_env("CartPole-v1", num_envs=2, seed=3)
        agent = make_ppo_agent(env, PPOConfig(n_steps=16, batch_size=16, n_epochs=2), seed=3,
                               device="cpu")
        rl.run(agent, env, rl.StopAfterNSteps(80, progress=False))  # 2 rollouts learned
        assert agent.policy.n_updates == 2
        return [p.detach().clone() for p in agent.policy.model.parameters()]

    for x, y in zip(run(), run(), strict=True):
        assert torch.equal(x, y)


@pytest.mark.parametrize("counts", [[3, 3, 3], [3, 1, 2], [0, 2, 0]],
                         ids=["full", "uneven", "some"])
def test_the_time_major_grid_puts_each_transition_at_its_row_and_lane(counts):
    # The full rollout's transpose and the general scatter give the same grid.
    counts = np.array(counts)
    lane = np.repeat(np.arange(3), counts)
    t = np.concatenate([np.arange(c) for c in counts])
    values = np.random.default_rng(0).standard_normal((len(t), 2, 2)).astype(np.float32)
    expected = np.full((counts.max(), 3, 2, 2), -7.0, dtype=np.float32)
    for i in range(len(t)):
        expected[t[i], lane[i]] = values[i]
    got = time_major(values, t, lane, counts, fill=-7.0)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)


def test_a_full_rollouts_batch_holds_the_rows_the_general_selection_gives():
    env = make_vector_env("CartPole-v1", num_envs=3, seed=0)
    agent = make_ppo_agent(env, PPOConfig(n_steps=8, batch_size=24, n_epochs=1), seed=0,
                           device="cpu")
    policy, seen = agent.policy, {}
    policy.update = lambda batch: seen.setdefault("batch", batch)
    learn = policy.learn

    def read_then_learn(container):
        seen["rollout"] = read_rollout(container, policy)  # before it is learned and cleared
        learn(container)

    policy.learn = read_then_learn
    rl.run(agent, env, rl.StopAfterNSteps(24, progress=False))
    rollout = seen["rollout"]
    rows = rollout["valid"]
    assert rows.all() and set(seen["batch"]) == set(rollout) | {"advantage", "return"}
    for name, value in seen["batch"].items():
        if name in ("advantage", "return"):
            continue  # added by postprocess, not read from the container
        expected = rollout[name][rows] if name != "state" else policy.states_tensor(
            rollout["state"][rows])
        np.testing.assert_array_equal(np.asarray(value), np.asarray(expected), err_msg=name)
