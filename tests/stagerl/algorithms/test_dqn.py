"""DQN's update math pinned on tiny networks, its acting, every option, copies and bad input."""

import copy
import pickle

import gymnasium
import numpy as np
import pytest
import torch
from torch import nn

import stagerl as rl
from stagerl.algorithms.dqn import (
    DQNConfig,
    DQNPolicy,
    clip_grad_norm,
    dqn_update,
    learn_burst,
    make_dqn_agent,
    project_distribution,
    td_target,
)
from stagerl.algorithms.dqn.networks import NumpyQNetwork, ObservationEncoder, QNetwork, mlp_body
from stagerl.algorithms.dqn.replay import (
    BurstSampler,
    as_tensors,
    importance_weights,
    make_dqn_trajectory,
)

CPU = torch.device("cpu")


def tiny_policy(weight, bias=(0.0, 0.0), **settings):
    """Q(s) = weight @ s + bias on a 1-d state: no hidden layer, two actions, Adam lr 0.1 (for
    C51, ``weight`` has one row per action and atom)."""
    config = DQNConfig(total_steps=1_000, gamma=0.5, learning_rate=0.1, **settings)
    n_atoms = config.n_atoms if config.distributional else 1
    network = QNetwork(nn.Flatten(), len(weight[0]), 2, n_atoms=n_atoms, v_min=config.v_min,
                       v_max=config.v_max)
    with torch.no_grad():
        network.advantage.weight.copy_(torch.tensor(weight))
        network.advantage.bias.copy_(torch.tensor(bias))
    return DQNPolicy(network, config, device="cpu")


def batch_of(state, action, reward, next_state, terminal, **more):
    rows = dict(state=np.array(state, np.float32), action=np.array(action),
                reward=np.array(reward, np.float32), next_state=np.array(next_state, np.float32),
                terminal=np.array(terminal), **more)
    return as_tensors(rows, CPU)


def one_step():  # s=1 -a=0, r=1-> s'=2, not terminal
    return batch_of([[1.0]], [0], [1.0], [[2.0]], [False])


# ---- one update, pinned ----------------------------------------------------------------------


def test_td_target_bootstraps_from_the_target_networks_best_action():
    policy = tiny_policy([[1.0], [2.0]])  # Q(s) = [s, 2s]: Q(2) = [2, 4]
    assert td_target(policy, one_step()).tolist() == [3.0]  # 1 + 0.5 * 4


def test_one_dqn_update_moves_the_taken_actions_value_towards_the_target():
    policy = tiny_policy([[1.0], [2.0]])
    dqn_update(policy, one_step())
    # Q(1, 0) = 1 against the target 3: Huber loss 1.5, gradient -1 on w0 and b0; Adam's first
    # step moves each parameter with a gradient by the learning rate (0.1), the others not.
    assert policy.loss.item() == 1.5
    weight, bias = policy.network.advantage.weight, policy.network.advantage.bias
    assert weight[:, 0].tolist() == pytest.approx([1.1, 2.0], abs=1e-6)
    assert bias.tolist() == pytest.approx([0.1, 0.0], abs=1e-6)
    assert policy.target.advantage.weight[:, 0].tolist() == [1.0, 2.0]  # not before env steps


def test_mse_loss_and_gradient_clipping():
    policy = tiny_policy([[1.0], [2.0]], loss="mse", max_grad_norm=None)
    dqn_update(policy, one_step())
    assert policy.loss.item() == 4.0  # (1 - 3) ** 2


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_gradient_clipping_matches_torchs(max_norm):
    torch.manual_seed(0)
    ours, theirs = nn.Linear(3, 2), nn.Linear(3, 2)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(5, 3)
    for net in (ours, theirs):
        net(x).pow(2).sum().backward()
    clip_grad_norm(list(ours.parameters()), max_norm)
    nn.utils.clip_grad_norm_(theirs.parameters(), max_norm)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, rtol=1e-6, atol=0)


def test_terminal_transition_does_not_bootstrap():
    policy = tiny_policy([[1.0], [2.0]])
    batch = batch_of([[1.0], [1.0]], [0, 0], [1.0, 1.0], [[2.0], [2.0]], [True, False])
    assert td_target(policy, batch).tolist() == [1.0, 3.0]


def test_double_dqn_target_rates_the_online_networks_choice_with_the_target_network():
    policy = tiny_policy([[1.0], [2.0]], double=True)  # online Q(2) = [2, 4]: picks action 1
    with torch.no_grad():
        policy.target.advantage.weight.copy_(torch.tensor([[3.0], [1.0]]))  # target Q(2) = [6, 2]
    assert td_target(policy, one_step()).tolist() == [2.0]  # 1 + 0.5 * Q_target(2, 1)
    plain = tiny_policy([[1.0], [2.0]])
    with torch.no_grad():
        plain.target.advantage.weight.copy_(torch.tensor([[3.0], [1.0]]))
    assert td_target(plain, one_step()).tolist() == [4.0]  # 1 + 0.5 * max Q_target(2)


def test_without_a_target_network_the_online_network_bootstraps():
    took_1 = batch_of([[1.0]], [1], [1.0], [[2.0]], [False])  # Q(1, 1) = 2 against 3
    policy, with_target = tiny_policy([[1.0], [2.0]], target_network=False), tiny_policy(
        [[1.0], [2.0]])
    assert policy.target is None
    for each in (policy, with_target):
        assert td_target(each, took_1).tolist() == [3.0]
        dqn_update(each, took_1)  # w1 and b1 up by 0.1: Q(2, 1) = 4.3
    assert td_target(policy, took_1).tolist() == pytest.approx([3.15], abs=1e-6)
    assert td_target(with_target, took_1).tolist() == [3.0]


def n_step_episode(terminal_last: bool):
    """One episode: states 0, 1, 2, 3 (as 1-d floats), rewards 1, 2, 4."""
    trajectory = make_dqn_trajectory((np.float32, (1,)), n_batches=1, batch_size=64,
                                     buffer_size=10, train_freq=1, learning_starts=0, n_step=2,
                                     gamma=0.5, rng=0)
    trajectory.push(state=np.array([0.0]))
    for s, r in ((1, 1.0), (2, 2.0), (3, 4.0)):
        trajectory.push(state=np.array([float(s)]), action=0, reward=r,
                        terminal=terminal_last and s == 3)
    burst = trajectory.sample()
    return as_tensors(burst.rows, CPU)


def test_n_step_target_sums_discounted_rewards_and_bootstraps_with_gamma_to_the_steps_summed():
    policy = tiny_policy([[1.0], [2.0]], n_step=2)  # max Q(s') = 2 s'
    batch = n_step_episode(terminal_last=False)
    targets = dict(zip(batch["state"][:, 0].tolist(), td_target(policy, batch).tolist(),
                       strict=True))
    # row 0: 1 + .5 * 2 + .25 * Q(2); row 1: 2 + .5 * 4 + .25 * Q(3);
    # row 2 is the newest: one step, 4 + .5 * Q(3) (the episode goes on: bootstrapped)
    assert targets == {0.0: 3.0, 1.0: 5.5, 2.0: 7.0}


def test_n_step_target_stops_at_a_terminal_state():
    policy = tiny_policy([[1.0], [2.0]], n_step=2)
    batch = n_step_episode(terminal_last=True)
    targets = dict(zip(batch["state"][:, 0].tolist(), td_target(policy, batch).tolist(),
                       strict=True))
    assert targets == {0.0: 3.0, 1.0: 4.0, 2.0: 4.0}


def test_c51_projection_splits_shifted_atoms_between_neighbours():
    support = torch.tensor([-1.0, 0.0, 1.0])
    probs = torch.tensor([[0.2, 0.3, 0.5]] * 4)
    reward = torch.tensor([0.5, 0.5, 5.0, -0.5])
    bootstrap = torch.tensor([0.5, 0.0, 0.5, 1.0])  # the second row is terminal
    projected = project_distribution(probs, reward, bootstrap, support)
    assert np.allclose(projected.numpy(), [
        [0.0, 0.35, 0.65],   # atoms land on 0, 0.5, 1
        [0.0, 0.5, 0.5],     # everything at the reward 0.5
        [0.0, 0.0, 1.0],     # clamped at v_max
        [0.35, 0.4, 0.25],   # -1.5 (clamped to -1), -0.5, 0.5
    ], atol=1e-6)


def test_c51_update_minimises_the_cross_entropy_to_the_projected_target():
    config = dict(distributional=True, n_atoms=3, v_min=-1.0, v_max=1.0)
    policy = tiny_policy([[0.0]] * 6, bias=[0.0] * 6, **config)  # all logits 0
    batch = batch_of([[1.0]], [0], [0.5], [[2.0]], [False])
    # next distribution uniform: Z' atoms land on 0, .5, 1 -> [0, 1/3 + 1/6, 1/6 + 1/3]
    assert td_target(policy, batch)[0].tolist() == pytest.approx([0.0, 0.5, 0.5])
    dqn_update(policy, batch)
    assert policy.loss.item() == pytest.approx(np.log(3.0))  # -sum m log(1/3)
    # d loss / d logit = 1/3 - m: action 0's first logit down, the other two up, by lr
    assert policy.network.advantage.bias.tolist() == pytest.approx(
        [-0.1, 0.1, 0.1, 0.0, 0.0, 0.0], abs=1e-6)


def test_importance_weights_scale_each_rows_loss():
    assert importance_weights(np.array([1.0, 4.0, 16.0]), beta=0.5).tolist() == [1.0, 0.5, 0.25]
    assert importance_weights(np.array([1.0, 4.0]), beta=0.0).tolist() == [1.0, 1.0]
    policy = tiny_policy([[1.0], [2.0]])
    batch = batch_of([[1.0], [1.0]], [0, 0], [1.0, 1.0], [[2.0], [2.0]], [False, False],
                     priority=np.array([1.0, 4.0]))  # as_tensors' beta 1: weights 1 and 1/4
    errors = dqn_update(policy, batch)
    assert policy.loss.item() == (1.5 + 1.5 * 0.25) / 2
    assert errors.tolist() == [2.0, 2.0]


def test_beta_is_annealed_from_beta0_to_one_over_the_run():
    policy = tiny_policy([[1.0], [2.0]], prioritized=True, beta0=0.4)  # 1,000 steps
    seen = []
    for steps in (0, 500, 1_000, 5_000):
        policy.env_steps = steps
        seen.append(policy.beta)
    assert seen == pytest.approx([0.4, 0.7, 1.0, 1.0])


def test_priorities_are_written_back_and_new_rows_enter_with_the_highest():
    policy = tiny_policy([[1.0], [2.0]], prioritized=True, alpha=0.5)
    trajectory = make_dqn_trajectory((np.float32, (1,)), n_batches=2, batch_size=4,
                                     buffer_size=8, train_freq=1, learning_starts=0,
                                     prioritized=True, rng=0)
    trajectory.push(state=np.array([1.0]))
    trajectory.push(state=np.array([2.0]), action=0, reward=1.0, terminal=False)
    learn_burst(policy, trajectory.sample(), trajectory)
    # |TD error| 2 on the first batch; 1.8 on the second, after one step (Q(1, 0) = 1.1 + 0.1)
    assert trajectory.container["priority"].tolist() == pytest.approx([1.8**0.5], abs=1e-5)
    layer = trajectory.container.traces
    assert layer.default_priority == pytest.approx(2.0**0.5, abs=1e-5)
    trajectory.push(state=np.array([3.0]), action=1, reward=0.0, terminal=False)
    assert trajectory.container["priority"][-1] == pytest.approx(2.0**0.5, abs=1e-5)


# ---- acting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dueling", [False, True])
@pytest.mark.parametrize("n_atoms", [1, 5])
@pytest.mark.parametrize("space", [
    gymnasium.spaces.Box(-1, 1, (3,)),
    gymnasium.spaces.Discrete(5, start=2),
    gymnasium.spaces.Box(0, 255, (2, 3), dtype=np.uint8),
])
def test_numpy_acting_copy_gives_the_torch_networks_values_and_actions(dueling, n_atoms, space):
    torch.manual_seed(0)
    encoder = ObservationEncoder.for_space(space)
    in_features = 5 if isinstance(space, gymnasium.spaces.Discrete) else int(np.prod(space.shape))
    network = QNetwork(mlp_body(in_features, (16, 8)), 8, 3, encoder, dueling, n_atoms, -2.0, 2.0)
    fast = NumpyQNetwork.of(network)
    space.seed(0)
    states = np.stack([space.sample() for _ in range(32)])
    with torch.no_grad():
        expected = network.q_values(torch.as_tensor(states)).numpy()
    assert np.allclose(fast.q_values(states, single=False), expected, atol=1e-5)
    assert (fast.q_values(states, single=False).argmax(1) == expected.argmax(1)).all()
    assert np.allclose(fast.q_values(states[0]), expected[0], atol=1e-5)


@pytest.mark.parametrize("widths", [(16, 8), (1, 1)])  # (1, 1): weights of one row/column
def test_numpy_copy_holds_its_own_weights_until_refreshed(widths):
    torch.manual_seed(0)
    network = QNetwork(mlp_body(3, widths), widths[-1], 2)
    fast = NumpyQNetwork.of(network)
    copies = [(w.copy(), b.copy()) for w, b in fast.hidden + [fast.advantage]]
    linears = [m for m in network.body if isinstance(m, torch.nn.Linear)] + [network.advantage]
    for (w, b), linear in zip(copies, linears, strict=True):  # the weights, transposed, exactly
        assert w.flags.c_contiguous and w.tobytes() == linear.weight.detach().numpy().T.tobytes()
        assert b.tobytes() == linear.bias.detach().numpy().tobytes()
    state = np.array([0.5, -1.0, 2.0], np.float32)
    before = fast.q_values(state)
    with torch.no_grad():
        for linear in linears:  # a gradient step changes the weights in place
            linear.weight.mul_(-2.0)
    assert fast.q_values(state).tobytes() == before.tobytes()  # still the copy's values
    fast.refresh()
    with torch.no_grad():
        assert np.allclose(fast.q_values(state), network.q_values(torch.as_tensor(state[None]))[0],
                           atol=1e-5)


def test_numpy_copy_is_refreshed_after_learning():
    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_dqn_agent(env, small_config(), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
    policy = agent.policy
    state = np.array([0.1, -0.2, 0.03, 0.4], np.float32)
    with torch.no_grad():
        expected = policy.network.q_values(torch.as_tensor(state[None]))[0].numpy()
    assert np.allclose(policy.q_values(state), expected, atol=1e-5)
    policy.acting_network = None  # act through torch instead: the same values
    assert np.allclose(policy.q_values(state), expected, atol=1e-6)


class FixedState(rl.Env):
    """An env that stays at one state (for acting tests)."""

    state, reward, is_terminated = None, 0.0, False
    action_space = gymnasium.spaces.Discrete(2)
    state_space = gymnasium.spaces.Box(-10, 10, (1,))

    def __init__(self, state):
        self.state = state

    def reset(self):
        pass

    def act(self, action):
        pass


def test_epsilon_greedy_draws_as_the_explorer_does_and_skips_the_forward_when_exploring():
    policy = tiny_policy([[1.0], [2.0]], exploration_fraction=0.5, learning_starts=0)
    explorer = copy.deepcopy(policy.explorer)
    env = FixedState(np.array([1.0], np.float32))
    values = policy.q_values(env.state)
    ours = [rl.plan(policy, env) for _ in range(600)]
    theirs = [explorer.plan(values) for _ in range(600)]
    assert ours == theirs and policy.explorer.step == explorer.step == 601
    assert 0 in ours and 1 in ours and policy.env_steps == 600


def test_random_actions_before_learning_starts():
    policy = tiny_policy([[1.0], [2.0]], exploration_initial_eps=0.0, exploration_final_eps=0.0,
                         learning_starts=100)
    env = FixedState(np.array([1.0], np.float32))
    first = [rl.plan(policy, env) for _ in range(100)]
    then = [rl.plan(policy, env) for _ in range(100)]
    assert 0 in first and set(then) == {1}


def test_deterministic_acting_is_greedy_and_draws_nothing():
    policy = tiny_policy([[1.0], [2.0]])
    env = FixedState(np.array([1.0], np.float32))
    before = (policy.explorer.rng.bit_generator.state, policy.explorer.step, policy.env_steps)
    with rl.deterministic(policy):
        assert [rl.plan(policy, env) for _ in range(20)] == [1] * 20
    assert (policy.explorer.rng.bit_generator.state, policy.explorer.step,
            policy.env_steps) == before


def test_actions_carry_the_spaces_start():
    env = rl.GymEnv(gymnasium.wrappers.TimeLimit(ShiftedActions(), 20), seed=0)
    agent = make_dqn_agent(env, small_config(learning_starts=50, train_freq=25), device="cpu")
    hook = rl.run(agent, env, rl.StopAfterNSteps(200, progress=False), ActionsSeen())
    assert set(hook.actions) == {-1, 0}
    assert agent.trajectory.controller.n_sampled > 0


class ShiftedActions(gymnasium.Env):
    """Actions -1 and 0 (Discrete(2, start=-1)); state 0, reward -action."""

    observation_space = gymnasium.spaces.Box(-1, 1, (1,))
    action_space = gymnasium.spaces.Discrete(2, start=-1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        assert action in (-1, 0)
        return np.zeros(1, np.float32), float(-action), False, False, {}


class ActionsSeen(rl.Hook):
    def __init__(self):
        self.actions = []


@rl.push.dispatch
def _record_action(hook: ActionsSeen, stage: rl.PostActStage, policy: object, env: object):
    hook.actions.append(int(env.last_action))


# ---- every option, on a real env -------------------------------------------------------------


def small_config(**settings):
    base = dict(total_steps=2_000, learning_starts=100, train_freq=50, gradient_steps=3,
                batch_size=16, buffer_size=1_000, target_update_interval=40, net_arch=(16,),
                learning_rate=1e-3)
    return DQNConfig(**{**base, **settings})


RAINBOW = dict(double=True, dueling=True, n_step=3, prioritized=True, distributional=True,
               n_atoms=11, v_min=0.0, v_max=50.0)


@pytest.mark.parametrize("settings", [
    {}, {"target_network": False}, {"tau": 0.5}, {"double": True}, {"dueling": True},
    {"n_step": 3}, {"prioritized": True}, {"distributional": True, "v_min": 0.0, "v_max": 50.0},
    {"loss": "mse", "max_grad_norm": None}, {"stack_size": 3}, {"gradient_steps": -1},
    RAINBOW, {**RAINBOW, "stack_size": 2},
], ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "plain")
def test_every_option_builds_acts_and_learns(settings):
    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_dqn_agent(env, small_config(**settings), seed=0, device="cpu")
    before = [p.detach().clone() for p in agent.policy.network.parameters()]
    rl.run(agent, env, rl.StopAfterNSteps(400, progress=False))
    bursts = (400 - 150) // 50 + 1  # the first burst after 150 transitions (>100, every 50)
    adam = agent.policy.q.optimiser.state_dict()["state"][0]
    per_burst = 50 if settings.get("gradient_steps") == -1 else 3
    assert int(adam["step"]) == bursts * per_burst
    after = list(agent.policy.network.parameters())
    assert all(torch.isfinite(p).all() for p in after)
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    returns = rl.evaluate(agent, rl.GymEnv("CartPole-v1", seed=1), episodes=2)
    assert all(r > 0 for r in returns)


@pytest.mark.parametrize("space", ["discrete", "image", "multibinary"])
def test_observation_spaces(space):
    env = rl.GymEnv(gymnasium.wrappers.TimeLimit(ObservationsOf(space), 30), seed=0)
    agent = make_dqn_agent(env, small_config(stack_size=2), seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(300, progress=False))
    assert agent.trajectory.controller.n_sampled == 4
    assert agent.policy.acting_network is not None


class ObservationsOf(gymnasium.Env):
    """Reward 1 for action 1; observations of a chosen kind that follow the step count."""

    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, kind):
        self.kind = kind
        self.observation_space = {
            "discrete": gymnasium.spaces.Discrete(40),
            "image": gymnasium.spaces.Box(0, 255, (4, 4), dtype=np.uint8),
            "multibinary": gymnasium.spaces.MultiBinary(6),
        }[kind]
        self.t = 0

    def _obs(self):
        if self.kind == "discrete":
            return self.t
        if self.kind == "image":
            return np.full((4, 4), self.t * 5, np.uint8)
        return np.array([(self.t >> i) & 1 for i in range(6)], np.int8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(action), False, False, {}


def test_a_body_network_replaces_the_mlp():
    env = rl.GymEnv("CartPole-v1", seed=0)
    body = nn.Sequential(nn.Linear(4, 12), nn.Tanh())
    agent = make_dqn_agent(env, small_config(), seed=0, device="cpu", body=body)
    assert agent.policy.network.body is body and agent.policy.acting_network is None
    rl.run(agent, env, rl.StopAfterNSteps(200, progress=False))
    assert agent.trajectory.controller.n_sampled == 2


def test_bursts_follow_train_freq_after_learning_starts_as_sb3():
    env = rl.GymEnv("CartPole-v1", seed=0)
    config = small_config(learning_starts=1_000, train_freq=256, gradient_steps=2,
                          total_steps=2_000)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(2_000, progress=False))
    # SB3 trains after every 256 collected steps once more than 1,000 were taken: at 1024,
    # 1280, 1536, 1792
    assert int(agent.policy.q.optimiser.state_dict()["state"][0]["step"]) == 8


class TargetWeights(rl.Hook):
    def __init__(self):
        self.changed_at, self.last = [], None


@rl.push.dispatch
def _watch_target(hook: TargetWeights, stage: rl.PostActStage, policy: object, env: object):
    weight = policy.policy.target.advantage.weight.detach().clone()
    if hook.last is not None and not torch.equal(weight, hook.last):
        hook.changed_at.append(policy.policy.env_steps)
    hook.last = weight


def test_target_network_follows_every_target_update_interval_env_steps():
    env = rl.GymEnv("CartPole-v1", seed=0)
    config = small_config(learning_starts=0, train_freq=7, gradient_steps=1,
                          target_update_interval=25)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    hook = rl.run(agent, env, rl.StopAfterNSteps(130, progress=False), TargetWeights())
    assert hook.changed_at == [25, 50, 75, 100, 125]


def test_a_hard_target_update_of_an_unchanged_network_is_skipped():
    policy = tiny_policy([[1.0], [2.0]], target_update_interval=1)
    with torch.no_grad():
        policy.target.advantage.weight.fill_(5.0)  # would be overwritten by a copy
    policy.env_steps = 1
    policy.update_target_if_due()
    assert policy.target.advantage.weight[0, 0].item() == 5.0 and policy.target_updates == 1
    dqn_update(policy, one_step())
    policy.env_steps = 2
    policy.update_target_if_due()
    assert policy.target.advantage.weight[:, 0].tolist() == pytest.approx([1.1, 2.0])


def test_polyak_target_blends_by_tau():
    policy = tiny_policy([[1.0], [2.0]], tau=0.25, target_update_interval=1)
    dqn_update(policy, one_step())  # online w0 1.1
    policy.env_steps = 1
    policy.update_target_if_due()
    assert policy.target.advantage.weight[0, 0].item() == pytest.approx(0.75 + 0.25 * 1.1)


def test_epsilon_falls_over_the_exploration_fraction_of_env_steps_on_vector_envs():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4, seed=0)
    config = small_config(total_steps=800, exploration_fraction=0.5, learning_starts=0)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    explorer = agent.policy.explorer
    assert explorer.epsilon_at(50) == pytest.approx(1.0 - 0.5 * 0.95)  # 200 of 400 env steps
    assert explorer.epsilon_at(100) == pytest.approx(0.05)


# ---- copies, state, seeds, devices -----------------------------------------------------------


def parameters(agent):
    return [p.detach().clone() for p in agent.policy.network.parameters()]


def trained(seed=0, steps=400, **settings):
    env = rl.GymEnv("CartPole-v1", seed=seed)
    agent = make_dqn_agent(env, small_config(**settings), seed=seed, device="cpu")
    rl.run(agent, env, rl.StopAfterNSteps(steps, progress=False))
    return agent, env


@pytest.mark.parametrize("settings", [{}, RAINBOW, {"learning_rate_schedule": "linear"}])
def test_copies_continue_exactly_as_the_original(settings):
    agent, env = trained(**settings)
    copied = copy.deepcopy((agent, env))
    pickled = pickle.loads(pickle.dumps((agent, env)))
    for a, e in ((agent, env), copied, pickled):
        rl.run(a, e, rl.StopAfterNSteps(300, progress=False))
    for other, _ in (copied, pickled):
        assert all(torch.equal(a, b) for a, b in zip(parameters(agent), parameters(other),
                                                     strict=True))
        assert other.policy.explorer.step == agent.policy.explorer.step


def test_state_dict_round_trip():
    agent, _ = trained()
    state = agent.state_dict()
    other = make_dqn_agent(rl.GymEnv("CartPole-v1"), small_config(), seed=5, device="cpu")
    other.load_state_dict(copy.deepcopy(state))
    assert all(torch.equal(a, b) for a, b in zip(parameters(agent), parameters(other),
                                                 strict=True))
    assert torch.equal(agent.policy.target.advantage.weight, other.policy.target.advantage.weight)
    states = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    assert np.array_equal(other.policy.q_values(states, single=False),
                          agent.policy.q_values(states, single=False))
    assert other.policy.env_steps == 400 and other.policy.explorer.step == 401
    assert other.policy.explorer.rng.random() == agent.policy.explorer.rng.random()


def test_same_seed_same_run_and_another_seed_another():
    first, second, third = trained(seed=3)[0], trained(seed=3)[0], trained(seed=4)[0]
    assert all(torch.equal(a, b) for a, b in zip(parameters(first), parameters(second),
                                                 strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(parameters(first), parameters(third),
                                                     strict=True))


def test_building_an_agent_leaves_torchs_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    make_dqn_agent(rl.GymEnv("CartPole-v1"), small_config(), seed=0, device="cpu")
    assert torch.equal(torch.rand(3), expected)


def test_to_cpu_keeps_learning_and_returns_the_policy():
    agent, env = trained()
    assert agent.policy.to("cpu") is agent.policy and agent.policy.device == CPU
    rl.run(agent, env, rl.StopAfterNSteps(100, progress=False))


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
@pytest.mark.parametrize("settings", [{}, RAINBOW])
def test_learns_on_cuda_and_moves_back(settings):
    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_dqn_agent(env, small_config(**settings), seed=0, device="cuda")
    assert all(p.is_cuda for p in agent.policy.network.parameters())
    assert all(p.is_cuda for p in agent.policy.target.parameters())
    rl.run(agent, env, rl.StopAfterNSteps(400, progress=False))
    moments = [v for s in agent.policy.q.optimiser.state.values() for v in s.values()]
    assert all(m.is_cuda for m in moments)
    agent.policy.to("cpu")
    moments = [v for s in agent.policy.q.optimiser.state.values() for v in s.values()]
    assert not any(m.is_cuda for m in moments)
    rl.run(agent, env, rl.StopAfterNSteps(200, progress=False))
    agent.policy.to("cuda")
    rl.run(agent, env, rl.StopAfterNSteps(200, progress=False))


@needs_cuda
def test_cuda_and_cpu_agents_share_state_dicts():
    agent, _ = trained()
    other = make_dqn_agent(rl.GymEnv("CartPole-v1"), small_config(), seed=5, device="cuda")
    other.load_state_dict(agent.state_dict())
    states = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    assert np.allclose(other.policy.q_values(states, single=False),
                       agent.policy.q_values(states, single=False), atol=1e-5)


# ---- bad input -------------------------------------------------------------------------------


def test_cuda_without_cuda_is_refused_at_construction():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="no CUDA device"):
        make_dqn_agent(rl.GymEnv("CartPole-v1"), small_config(), device="cuda")


def test_continuous_actions_are_refused_naming_the_alternatives():
    with pytest.raises(TypeError, match="continuous.*SAC or TD3.*PPO"):
        make_dqn_agent(rl.GymEnv("Pendulum-v1"), small_config())


def test_multi_discrete_actions_and_unknown_observations_are_refused():
    class Odd(gymnasium.Env):
        observation_space = gymnasium.spaces.Text(4)
        action_space = gymnasium.spaces.Discrete(2)

    with pytest.raises(TypeError, match="DQN takes Box.*got Text.*FlattenObservation"):
        make_dqn_agent(rl.GymEnv(Odd()), small_config())
    Odd.observation_space = gymnasium.spaces.Box(0, 1, (2,))
    Odd.action_space = gymnasium.spaces.MultiDiscrete([2, 2])
    with pytest.raises(TypeError, match=r"DQN needs a Discrete action space, got "
                                        r"MultiDiscrete\(\[2 2\]\); .*PPO.*ActionWrapper"):
        make_dqn_agent(rl.GymEnv(Odd()), small_config())


def test_prioritized_replay_with_a_vector_env_is_refused():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2)
    with pytest.raises(ValueError, match="prioritized replay is not supported with a vector"):
        make_dqn_agent(env, small_config(prioritized=True))


def test_a_buffer_too_small_for_the_frame_stack_is_refused():
    env = rl.GymVectorEnv("CartPole-v1", num_envs=4)
    with pytest.raises(ValueError, match="raise buffer_size"):
        make_dqn_agent(env, small_config(buffer_size=8, stack_size=4))


@pytest.mark.parametrize("settings, error, match", [
    ({"gamma": 1.5}, ValueError, "gamma must be in"),
    ({"batch_size": 0}, ValueError, "batch_size must be an int >= 1"),
    ({"batch_size": 2.0}, TypeError, "batch_size expects int"),
    ({"gradient_steps": 0}, ValueError, "or -1"),
    ({"tau": 0.0}, ValueError, "tau must be in"),
    ({"learning_rate": -1.0}, ValueError, "learning_rate must be a finite number > 0"),
    ({"learning_rate": float("inf")}, ValueError, "learning_rate must be a finite number"),
    ({"max_grad_norm": float("nan")}, ValueError, r"max_grad_norm must be > 0 \(inf: never"),
    ({"loss": "l1"}, ValueError, "loss must be"),
    ({"net_arch": (64, 0)}, ValueError, "net_arch"),
    ({"double": "yes"}, TypeError, "double expects bool"),
    ({"distributional": True, "n_atoms": 1}, ValueError, "n_atoms must be an int >= 2"),
    ({"v_min": float("-inf")}, ValueError, "v_min must be a finite number"),
    ({"distributional": True, "v_min": 1.0, "v_max": 1.0}, ValueError, "v_min must be below"),
    ({"distributional": True, "loss": "mse"}, ValueError, "cross-entropy"),
    ({"max_grad_norm": 0.0}, ValueError, "max_grad_norm"),
    ({"exploration_fraction": 2.0}, ValueError, "exploration_fraction"),
])
def test_bad_settings_are_refused_at_construction(settings, error, match):
    with pytest.raises(error, match=match):
        DQNConfig(**settings)


def test_a_run_length_is_needed_and_other_arguments_are_checked():
    env = rl.GymEnv("CartPole-v1")
    with pytest.raises(ValueError, match="total_steps"):
        make_dqn_agent(env, DQNConfig())
    with pytest.raises(TypeError, match="DQNConfig"):
        make_dqn_agent(env, {"learning_rate": 1e-3})
    with pytest.raises(ValueError, match="seed"):
        make_dqn_agent(env, small_config(), seed=-1)
    with pytest.raises(ValueError, match=r"\(batch, features\)"):
        make_dqn_agent(env, small_config(), body=nn.Unflatten(1, (2, 2)))


def test_burst_sampler_checks_its_arguments():
    with pytest.raises(ValueError, match="n_batches"):
        BurstSampler(0, 32)


class StepSizes(rl.Hook):
    """Adam's step size after each burst, with the env steps taken when it was set."""

    def __init__(self):
        self.seen, self.steps_done = [], 0


@rl.push.dispatch
def _watch_step_size(hook: StepSizes, stage: rl.PostActStage, policy: object, env: object):
    optimiser = policy.policy.q.optimiser
    state = optimiser.state_dict()["state"]
    steps_done = int(state[0]["step"]) if state else 0
    if steps_done != hook.steps_done:
        hook.seen.append((policy.policy.env_steps, optimiser.param_groups[0]["lr"]))
        hook.steps_done = steps_done


def test_a_linear_step_size_falls_to_zero_over_the_run_and_is_set_before_each_burst():
    env = rl.GymEnv("CartPole-v1", seed=0)
    config = small_config(learning_rate=1e-3, learning_rate_schedule="linear", learning_starts=0,
                          train_freq=50, gradient_steps=1, total_steps=200)
    agent = make_dqn_agent(env, config, seed=0, device="cpu")
    hook = rl.run(agent, env, rl.StopAfterNSteps(200, progress=False), StepSizes())
    assert hook.seen == [(50, pytest.approx(7.5e-4)), (100, pytest.approx(5e-4)),
                         (150, pytest.approx(2.5e-4)), (200, 0.0)]


def test_a_constant_step_size_stays_and_an_unknown_schedule_is_refused():
    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_dqn_agent(env, small_config(learning_rate=1e-3, learning_starts=0, train_freq=50,
                                             gradient_steps=1, total_steps=200), seed=0,
                           device="cpu")
    hook = rl.run(agent, env, rl.StopAfterNSteps(200, progress=False), StepSizes())
    assert [lr for _, lr in hook.seen] == [1e-3] * 4
    refusal = ("learning_rate_schedule must be 'constant' or 'linear', got "
               "learning_rate_schedule='cosine'")
    with pytest.raises(ValueError, match=refusal):
        DQNConfig(learning_rate_schedule="cosine")
