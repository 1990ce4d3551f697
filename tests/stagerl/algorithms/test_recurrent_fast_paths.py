"""The recurrent learners' faster paths against the general ones on the same inputs: a gradient
step by Adam's fused kernel called directly and the lean gradient clip against torch's
``clip_grad_norm_`` and ``optimiser.step()``, bit for bit, on vector envs whose lanes' episodes
end at different steps (and whose replay rings wrap); acting after learning reads the learned
weights."""

import copy

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

import stagerl as rl
from stagerl.algorithms import (
    DRQNConfig,
    RecurrentPPOConfig,
    make_drqn_agent,
    make_recurrent_ppo_agent,
)
from stagerl.algorithms.adam_step import adam_step
from stagerl.algorithms.dqn import recurrent as drqn_module
from stagerl.algorithms.dqn.recurrent import drqn_update
from stagerl.algorithms.on_policy import read_rollout
from stagerl.algorithms.on_policy import recurrent as ppo_module


def _env(limits, mode=AutoresetMode.NEXT_STEP):
    def make(limit):
        return lambda: TimeLimit(gymnasium.make("CartPole-v1"), max_episode_steps=limit)

    return rl.GymVectorEnv(SyncVectorEnv([make(k) for k in limits], autoreset_mode=mode), seed=0)


def _general_path(module):
    """torch's own clip and ``optimiser.step()`` in place of the lean clip and ``adam_step``."""
    patch = pytest.MonkeyPatch()
    patch.setattr(module, "adam_step", lambda optimiser: optimiser.step())
    patch.setattr(module, "clip_grad_norm", torch.nn.utils.clip_grad_norm_)
    return patch


def _same_weights_and_adam_state(a, b, optimiser_a, optimiser_b):
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(optimiser_a.state[p][key], optimiser_b.state[q][key]), key


def _drqn_trained_on_wrapped_lanes(**settings):
    """A DRQN agent on 3 sub-envs (episodes cut at 6, 9 and 11 steps) after 600 env steps of
    a 40-row-a-lane ring (wrapped many times), learning from step 90."""
    config = DRQNConfig(**{**dict(
        total_steps=600, learning_starts=90, buffer_size=120, sequence_length=6, burn_in=2,
        batch_size=8, rnn_hidden_size=16, net_arch=(16,), target_update_interval=60,
        max_grad_norm=0.5), **settings})
    env = _env((6, 9, 11))
    agent = make_drqn_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(600, progress=False))
    assert agent.policy.n_updates > 100
    container = agent.trajectory.container
    assert container.lane_lengths() == [40, 40, 40]  # each lane's ring full, and wrapped:
    assert agent.trajectory.controller.n_inserted > 4 * container.capacity
    return agent


@pytest.mark.parametrize("settings", [{}, {"rnn": "gru", "double": False, "loss": "mse",
                                           "max_grad_norm": None, "burn_in": 0}])
def test_drqn_steps_by_adams_kernel_as_by_the_optimisers_step_to_the_bit(settings):
    agent = _drqn_trained_on_wrapped_lanes(**settings)
    assert agent.policy.optimiser.defaults["fused"] is True
    fast, general = copy.deepcopy(agent.policy), copy.deepcopy(agent.policy)
    trajectory = agent.trajectory
    for _ in range(5):
        batch = trajectory.sampler.sample(trajectory.container)
        drqn_update(fast, batch)
        with _general_path(drqn_module).context():
            drqn_update(general, batch)
        assert torch.equal(fast.loss, general.loss)
    _same_weights_and_adam_state(fast.network, general.network, fast.optimiser,
                                 general.optimiser)
    assert not torch.equal(next(fast.network.parameters()),
                           next(agent.policy.network.parameters()))


def _ppo_collected(config, limits=(5, 7, 9, 13)):
    env = _env(limits, AutoresetMode.SAME_STEP)
    agent = make_recurrent_ppo_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(3 * config.n_steps * len(limits) - len(limits),
                                          progress=False))
    assert agent.policy.n_updates == 2  # Adam's state exists; a third rollout is collected
    return agent


@pytest.mark.parametrize("settings", [
    {"max_grad_norm": 0.05},
    {"rnn": "gru", "shared_rnn": True, "net_arch": (8,), "normalize_states": True},
    {"rnn_prev_action": True, "max_grad_norm": float("inf"), "target_kl": 0.001},
])
def test_recurrent_ppo_updates_by_adams_kernel_as_by_the_optimisers_step_to_the_bit(settings):
    config = RecurrentPPOConfig(n_steps=16, batch_size=16, n_epochs=3, max_seq_len=5,
                                rnn_hidden_size=8, **settings)
    agent = _ppo_collected(config)
    policy = agent.policy
    assert policy.optimiser.defaults["fused"] is True
    rollout = policy.postprocess(read_rollout(agent.trajectory.container, policy))
    seqs = policy.batch_of(rollout)
    fast, general = copy.deepcopy(policy), copy.deepcopy(policy)
    fast.update(seqs)
    with _general_path(ppo_module).context():
        general.update(seqs)
    assert fast.stats == general.stats
    _same_weights_and_adam_state(fast.model, general.model, fast.optimiser, general.optimiser)
    assert not torch.equal(next(fast.model.parameters()), next(policy.model.parameters()))


def test_recurrent_ppo_acts_with_the_weights_it_learned():
    config = RecurrentPPOConfig(n_steps=16, batch_size=16, n_epochs=2, rnn_hidden_size=8,
                                ortho_init=False)
    policy = _ppo_collected(config).policy
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    state = rng.normal(size=(5, *policy.model.recurrent_state_shape)).astype(np.float32)
    out, _, value, new_state = policy.model.act_outputs(x, state)
    with torch.no_grad():
        t_out, t_value, t_state = policy.model.unroll(torch.as_tensor(x)[:, None],
                                                      torch.as_tensor(state))
    np.testing.assert_allclose(out, t_out[:, 0].numpy(), atol=1e-5)
    np.testing.assert_allclose(value, t_value[:, 0].numpy(), atol=1e-5)
    np.testing.assert_allclose(new_state, t_state.numpy(), atol=1e-5)


def test_drqn_acts_with_the_weights_it_learned():
    network = _drqn_trained_on_wrapped_lanes().policy.network
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    state = rng.normal(size=(5, *network.recurrent_state_shape)).astype(np.float32)
    q, new_state = network.step(x, state)
    with torch.no_grad():
        t_q, t_state = network.unroll(torch.as_tensor(x)[:, None], torch.as_tensor(state))
    np.testing.assert_allclose(q, t_q[:, 0].numpy(), atol=1e-5)
    np.testing.assert_allclose(new_state, t_state.numpy(), atol=1e-5)


def test_a_checkpoint_of_the_unfused_adam_loads_and_steps_as_it_did():
    config = RecurrentPPOConfig(n_steps=8, batch_size=16, n_epochs=2, rnn_hidden_size=8)
    old = _ppo_collected(config).policy
    old.optimiser = torch.optim.Adam(old.model.parameters(), lr=config.learning_rate,
                                     eps=1e-5)  # as earlier versions built it
    generator = torch.Generator().manual_seed(2)
    for _ in range(2):
        for p in old.model.parameters():
            p.grad = torch.randn(p.shape, generator=generator)
        old.optimiser.step()
    state = old.state_dict()
    assert not state["optimiser"]["param_groups"][0]["fused"]
    new = make_recurrent_ppo_agent(_env((5, 7, 9, 13), AutoresetMode.SAME_STEP), config,
                                   seed=1, device="cpu").policy
    assert new.optimiser.defaults["fused"] is True
    new.load_state_dict(copy.deepcopy(state))  # as from a file: no tensor shared with `old`
    _same_weights_and_adam_state(old.model, new.model, old.optimiser, new.optimiser)
    for theirs, ours in zip(old.model.parameters(), new.model.parameters(), strict=True):
        theirs.grad = torch.randn(theirs.shape, generator=generator)
        ours.grad = theirs.grad.clone()
    old.optimiser.step()
    adam_step(new.optimiser)  # the loaded run goes on with the state (and the kernel) it saved
    _same_weights_and_adam_state(old.model, new.model, old.optimiser, new.optimiser)
