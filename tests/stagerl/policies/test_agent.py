"""Agent(policy, trajectory): its default pushes, truncation, SARTSA completion, the traces it
fills, reproducibility."""

import gymnasium
import numpy as np
import pytest

import stagerl as rl


def _cartpole_agent(capacity=100, sampler=None):
    traces = rl.CircularArraySARTSTraces(capacity=capacity, state=(np.float32, (4,)))
    return rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces, sampler))


def test_agent_is_an_instance_of_its_inferred_parametric_type():
    agent = _cartpole_agent()
    assert isinstance(agent, rl.Agent[rl.RandomPolicy, rl.Trajectory])
    assert isinstance(agent, rl.Agent[rl.RandomPolicy, object])
    assert not isinstance(agent, rl.Agent[rl.QBasedPolicy, object])
    assert isinstance(agent, rl.Policy)


def test_policy_and_trajectory_are_read_only():
    agent = _cartpole_agent()
    with pytest.raises(AttributeError):
        agent.policy = rl.RandomPolicy()
    with pytest.raises(AttributeError):
        agent.trajectory = None


def test_a_trajectory_without_push_is_refused_with_the_fix():
    with pytest.raises(TypeError, match="CircularArraySARTSTraces"):
        rl.Agent(rl.RandomPolicy(), object())


def test_time_limited_gym_episode_stores_its_last_step_bootstrapped_and_samples_it():
    # CartPole cut at 3 steps by gymnasium's TimeLimit: episodes end truncated, never terminated
    # (a pole never falls within 3 steps).
    env = rl.GymEnv("CartPole-v1", seed=0, max_episode_steps=3)
    agent = _cartpole_agent(sampler=rl.BatchSampler(2000, rng=0))
    hook = rl.run(agent, env, rl.StopAfterNEpisodes(4, progress=False), rl.StepsPerEpisode())
    assert hook.steps == [3, 3, 3, 3]

    container = agent.trajectory.container
    # 4 episodes of 3 steps: 4 * 4 states; boundary rows 3, 7, 11 are padding; the last state
    # (row 15) has no transition yet.
    assert len(container) == 15
    assert container.sampleable_inds.astype(int).tolist() == [1, 1, 1, 0] * 3 + [1, 1, 1, 0]
    assert not container["terminal"].any()  # truncated, so stored as a normal transition
    assert container.step_numbers.tolist() == [1, 2, 3, 4] * 4

    batch = agent.trajectory.sample()
    rows = set()
    for s, s2 in zip(batch["state"], batch["next_state"], strict=True):
        i = int(np.flatnonzero((container["state"] == s).all(axis=1))[0])
        rows.add(i)
        np.testing.assert_array_equal(container["next_state"][i], s2)
    assert {2, 6, 10, 14} <= rows  # each episode's truncated last step is sampled
    assert not rows & {3, 7, 11}  # a boundary row never is
    assert not batch["terminal"].any()


def test_terminated_episode_stores_terminal_true_on_its_last_step_only():
    env = rl.FixedLengthEnv(length=3)
    traces = rl.CircularArraySARTSTraces(capacity=20)
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces))
    rl.run(agent, env, rl.StopAfterNEpisodes(2, progress=False))
    assert agent.trajectory.container["terminal"].tolist() == [0, 0, 1, 0, 0, 0, 1]
    assert agent.trajectory.container["state"].tolist() == [0, 1, 2, 3, 0, 1, 2]
    assert agent.trajectory.container["next_state"].tolist() == [1, 2, 3, 0, 1, 2, 3]


def test_sartsa_agent_completes_every_episode_with_the_action_planned_at_its_final_state():
    class Alternating(rl.Policy):
        def __init__(self):
            self.n = 0

    @rl.plan.dispatch
    def plan(policy: Alternating, env: rl.Env):
        policy.n += 1
        return policy.n % 2

    traces = rl.CircularArraySARTSATraces(capacity=20)
    agent = rl.Agent(Alternating(), rl.Trajectory(traces))
    rl.run(agent, rl.FixedLengthEnv(length=2), rl.StopAfterNEpisodes(2, progress=False))
    container = agent.trajectory.container
    # plans: 1, 0 (steps of episode 1), 1 (its final state), 0, 1 (episode 2), 0 (final)
    # One action multiplex: the completion (the plan at episode 1's final state) is row 1's
    # next_action and so shows as row 2's action, row 2 being the boundary row.
    assert container["action"].tolist() == [1, 0, 1, 0, 1]
    assert container["next_action"].tolist() == [0, 1, 0, 1, 0]
    assert container.sampleable_inds.astype(int).tolist() == [1, 1, 0, 1, 1, 0]
    assert agent.policy.n == 6  # one plan more per episode, at its final state


def test_same_seed_gives_the_same_learning_run_twice():
    def learning_run(seed):
        learner = rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5)
        explorer = rl.EpsilonGreedyExplorer(0.1, decay_steps=200, rng=seed)
        traces = rl.CircularArraySARTSTraces(capacity=50)
        agent = rl.Agent(rl.QBasedPolicy(learner, explorer),
                         rl.Trajectory(traces, rl.BatchSampler(8, rng=seed)))
        hook = rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(500, progress=False),
                      rl.TotalRewardPerEpisode())
        return hook.rewards, learner.approximator.table.copy()

    rewards_a, table_a = learning_run(3)
    rewards_b, table_b = learning_run(3)
    rewards_c, _ = learning_run(4)
    assert rewards_a == rewards_b
    np.testing.assert_array_equal(table_a, table_b)
    assert rewards_a != rewards_c


# ---- episodes ended by a time limit count as finished episodes ------------------------------


def test_truncated_episodes_count_as_finished_for_an_episode_controller_on_one_env():
    # FixedLengthEnv(10, time_limit=3): every episode is cut at 3 steps, none terminates.
    controller = rl.EpisodeSampleRatioController(ratio=1.0, threshold=1)
    trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=100), controller=controller)
    agent = rl.Agent(rl.RandomPolicy(rng=0), trajectory)
    rl.run(agent, rl.FixedLengthEnv(10, time_limit=3), rl.StopAfterNEpisodes(5, progress=False))
    assert controller.n_episodes == 5
    assert not trajectory.container["terminal"].any()  # still bootstrapped transitions
    assert "truncated" not in trajectory.keys()  # the controller's alone: not stored


def test_truncated_episodes_of_every_sub_env_count_as_finished():
    # CartPole cut at 5 steps: each sub-env's episodes end truncated (a pole stands 5 steps).
    env = rl.GymVectorEnv("CartPole-v1", num_envs=3, seed=0, max_episode_steps=5)
    controller = rl.EpisodeSampleRatioController()
    traces = rl.CircularArraySARTSTraces(capacity=300, state=(np.float32, (4,)))
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces, controller=controller))
    steps = rl.StepsPerEpisode()
    rl.run(agent, env, rl.StopAfterNSteps(3 * 22, progress=False), steps)
    # NEXT_STEP autoreset: the acts 1-5, 7-11, 13-17 are steps (6, 12, 18 only reset), so 22
    # acts finish 3 episodes per sub-env, and the stop cuts a fourth after 4 steps.
    assert controller.n_episodes == 9
    assert steps.steps == [5] * 9 + [4] * 3


def test_bare_traces_are_wrapped_in_a_trajectory_so_no_sample_crosses_an_episode():
    traces = rl.CircularArraySARTSTraces(capacity=64)
    agent = rl.Agent(rl.RandomPolicy(rng=0), traces)
    assert isinstance(agent.trajectory, rl.Trajectory)
    assert agent.trajectory.container.traces is traces
    rl.run(agent, rl.FixedLengthEnv(4), rl.StopAfterNSteps(40, progress=False))
    batch = rl.BatchSampler(512, rng=0).sample(agent.trajectory.container)
    # FixedLengthEnv's states count the steps: a transition inside an episode goes one up.
    np.testing.assert_array_equal(batch["next_state"], batch["state"] + 1)


# ---- Policy.to moves what a torch policy holds -----------------------------------------------


def test_policy_to_moves_modules_optimiser_state_tensors_and_approximators_by_default():
    import torch

    class Reinforce(rl.Policy):  # a user's policy that does not override to()
        def __init__(self):
            self.net = torch.nn.Linear(4, 2)
            self.optimiser = torch.optim.Adam(self.net.parameters())
            self.log_std = torch.nn.Parameter(torch.zeros(2))
            self.baseline = torch.zeros(3)
            self.critic = rl.Approximator(torch.nn.Linear(4, 1), torch.optim.SGD(
                torch.nn.Linear(1, 1).parameters(), lr=0.1))
            self.buffers = [torch.ones(2), {"x": torch.ones(1)}]

    policy = Reinforce()
    policy.net(torch.ones(1, 4)).sum().backward()
    policy.optimiser.step()  # Adam now has state tensors
    moved = []
    real_to = torch.Tensor.to

    def spy(self, *args, **kwargs):
        moved.append(args[0] if args else kwargs.get("device"))
        return real_to(self, *args, **kwargs)

    torch.Tensor.to = spy
    try:
        assert policy.to("cpu") is policy
    finally:
        torch.Tensor.to = real_to
    # the two Adam moments, the baseline, the parameter, both list entries (one in a dict)
    assert sum(isinstance(d, torch.device) and d.type == "cpu" for d in moved) >= 6
    assert isinstance(policy.log_std, torch.nn.Parameter)
    assert policy.baseline.device.type == "cpu"


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_policy_to_cuda_moves_everything_there():
    import torch

    class Holder(rl.Policy):
        def __init__(self):
            self.net = torch.nn.Linear(4, 2)
            self.optimiser = torch.optim.Adam(self.net.parameters())
            self.tensor = torch.zeros(3)

    policy = Holder()
    policy.net(torch.ones(1, 4)).sum().backward()
    policy.optimiser.step()
    policy.to("cuda")
    assert next(policy.net.parameters()).is_cuda and policy.tensor.is_cuda
    state = policy.optimiser.state[next(policy.net.parameters())]
    assert state["exp_avg"].is_cuda


# ---- traces the Agent knows are filled when the trajectory has them --------------------------


def _scripted_lane(length=2):
    from scripted_envs import scripted_env

    return rl.GymEnv(scripted_env(0, length))  # terminated after 2 steps, then truncated after 3


def test_the_default_agent_fills_a_truncated_trace_with_every_step():
    env = _scripted_lane()
    traces = rl.CircularArraySARTSTraces(capacity=50, env=env, extra={"truncated": (np.bool_, ())})
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces))
    rl.run(agent, env, rl.StopAfterNEpisodes(4, progress=False))
    c = agent.trajectory.container
    rows = c.sampleable_indices()
    steps = [(int(s[1]), int(s2[2])) for s, s2 in zip(c.take("state", rows),
                                                        c.take("next_state", rows), strict=True)]
    # (episode, t after the step): episodes 0, 2 terminate at t = 2; 1, 3 are cut at t = 3
    assert steps == [(0, 1), (0, 2), (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (3, 2),
                     (3, 3)]
    assert c.take("truncated", rows).tolist() == [False, False, False, False, True] * 2
    assert c.take("terminal", rows).tolist() == [False, True, False, False, False] * 2


def test_the_default_agent_fills_legal_action_masks_with_every_state():
    class Corridor(rl.Env):
        """States 0..3; left is illegal at 0; the episode ends at 3."""

        action_space = gymnasium.spaces.Discrete(2)
        state_space = gymnasium.spaces.Discrete(4)

        def reset(self):
            self._s = 0

        def act(self, action):
            self._s = max(self._s + (1 if action else -1), 0)

        state = property(lambda self: self._s)
        reward = property(lambda self: 0.0)
        is_terminated = property(lambda self: self._s == 3)
        legal_actions_mask = property(lambda self: np.array([self._s > 0, True]))

    traces = rl.CircularArraySLARTTraces(capacity=50, env=Corridor())
    agent = rl.Agent(rl.RandomPolicy(rng=1), rl.Trajectory(traces))
    rl.run(agent, Corridor(), rl.StopAfterNEpisodes(2, progress=False))
    c = agent.trajectory.container
    rows = c.sampleable_indices()
    for name, state in (("legal_actions_mask", "state"),
                        ("next_legal_actions_mask", "next_state")):
        masks, states = c.take(name, rows), c.take(state, rows)
        assert masks.tolist() == [[s > 0, True] for s in states.tolist()]
    assert (c.take("action", rows)[c.take("state", rows) == 0] == 1).all()  # only legal moves


def test_a_legal_actions_mask_trace_needs_the_env_to_give_masks():
    traces = rl.CircularArraySLARTTraces(capacity=10, legal_actions_mask=(np.bool_, (2,)))
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces))
    with pytest.raises(TypeError, match="RandomWalk1D has no legal_actions_mask"):
        rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(3, progress=False))
    assert len(agent.trajectory.container.step_numbers) == 0  # nothing half-stored


def test_given_extra_values_win_over_the_ones_the_agent_knows():
    env = _scripted_lane()
    traces = rl.CircularArraySARTSTraces(capacity=50, env=env, extra={"truncated": (np.bool_, ())})
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces))
    env.reset()
    rl.push(agent, rl.PreEpisodeStage(), env)
    env.act(0)
    rl.record_step(agent, env, 0, truncated=True)
    assert agent.trajectory.container["truncated"].tolist() == [True]


@pytest.mark.parametrize("vector", [False, True])
def test_record_step_refuses_extra_values_for_the_traces_the_agent_fills(vector):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0) if vector else \
        rl.GymEnv("CartPole-v1", seed=0)
    traces = rl.CircularArraySARTSTraces(capacity=8, state=(np.float32, (4,)),
                                         action=(np.int64, ()))
    agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(traces))
    env.reset()
    rl.push(agent, rl.PreEpisodeStage(), env)
    action = rl.plan(agent, env)
    env.act(action)
    with pytest.raises(TypeError, match=r"\['reward'\] in extra"):
        rl.record_step(agent, env, action, reward=0.0)
    assert len(agent.trajectory) == 0  # nothing written
    rl.record_step(agent, env, action)
    assert len(agent.trajectory) == (2 if vector else 1)
