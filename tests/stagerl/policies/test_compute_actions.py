"""compute_actions: one inference call for every policy, one observation or a batch, without
an env: the same decision plan makes, the extra per-step data, and clear refusals."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import stagerl as rl
from stagerl.core.dispatch import MissingMethodError


def _families():
    from stagerl.algorithms import (
        DRQNConfig,
        PPOConfig,
        RecurrentPPOConfig,
        SACConfig,
        TD3Config,
        make_drqn_agent,
        make_ppo_agent,
        make_recurrent_ppo_agent,
        make_sac_agent,
        make_td3_agent,
    )
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

    cartpole = rl.GymEnv("CartPole-v1", seed=0)
    pendulum = rl.GymEnv("Pendulum-v1", seed=0)
    tabular = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2)),
                              rl.EpsilonGreedyExplorer(0.1, rng=0))
    return {
        "DQNPolicy": (make_dqn_agent(cartpole, DQNConfig(total_steps=100), device="cpu"),
                      cartpole, {"q_values"}),
        "PPOPolicy": (make_ppo_agent(cartpole, PPOConfig(n_steps=8, batch_size=8),
                                     device="cpu"), cartpole, {"log_prob", "value"}),
        "SACPolicy": (make_sac_agent(pendulum, SACConfig(learning_starts=0), device="cpu"),
                      pendulum, set()),
        "TD3Policy": (make_td3_agent(pendulum, TD3Config(learning_starts=0), device="cpu"),
                      pendulum, set()),
        "QBasedPolicy": (rl.Agent(tabular, rl.Trajectory(rl.CircularArraySARTSTraces(4))),
                         rl.RandomWalk1D(), {"values"}),
        "RecurrentPPOPolicy": (make_recurrent_ppo_agent(
            cartpole, RecurrentPPOConfig(n_steps=8, batch_size=8), device="cpu"), cartpole,
            {"log_prob", "value"}),
        "DRQNPolicy": (make_drqn_agent(cartpole, DRQNConfig(total_steps=100), device="cpu"),
                       cartpole, {"q_values"}),
    }


FAMILIES = list(_families())


@pytest.mark.parametrize("name", FAMILIES)
def test_one_observation_gives_the_action_plan_gives_and_a_batch_one_per_observation(name):
    agent, env, extra_names = _families()[name]
    env.reset()
    observation = env.state
    with rl.deterministic(agent):
        planned = rl.plan(agent, env)
    one = rl.compute_actions(agent, observation, deterministic=True)
    assert np.array_equal(np.asarray(one.actions), np.asarray(planned))
    assert type(one.actions) is type(planned) or isinstance(planned, np.ndarray)
    batch = rl.compute_actions(agent, np.stack([np.asarray(observation)] * 3),
                               one.state if one.state is None else np.stack([one.state] * 3) * 0,
                               deterministic=True)
    assert len(batch.actions) == 3
    # A batch of one and of three may sum in another order: equal to float32 precision.
    assert np.allclose(np.asarray(batch.actions[0], float), np.asarray(one.actions, float),
                       atol=1e-5)
    sampled = rl.compute_actions(agent, observation)
    assert set(sampled.extra) == extra_names
    recurrent = isinstance(agent.policy, rl.RecurrentPolicy)
    assert (one.state is not None) == recurrent
    if recurrent:
        assert one.state.shape == agent.policy.recurrent_state_shape


@pytest.mark.parametrize("name", FAMILIES)
def test_an_observation_of_another_shape_is_refused_naming_both_shapes(name):
    agent, env, _ = _families()[name]
    wrong = np.zeros((2, 3, 5))
    with pytest.raises(ValueError, match=r"takes one observation of shape .* got an array of "
                                         r"shape \(2, 3, 5\)"):
        rl.compute_actions(agent, wrong)


@pytest.mark.parametrize("name", [n for n in FAMILIES if not n.startswith(("Recurrent", "DRQN"))])
def test_a_memoryless_policy_given_a_state_says_it_keeps_none(name):
    agent, env, _ = _families()[name]
    env.reset()
    with pytest.raises(ValueError, match="keeps no state between steps"):
        rl.compute_actions(agent, env.state, np.zeros(3))


def test_a_frame_stacking_dqn_carries_its_stack_as_the_state():
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

    agent = make_dqn_agent(rl.GymEnv("CartPole-v1"), DQNConfig(total_steps=10, stack_size=3),
                           device="cpu")
    frames = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = rl.compute_actions(agent, frames[0], deterministic=True)
    assert out.state.tolist() == [frames[0].tolist()] * 3  # the first frame fills the stack
    out = rl.compute_actions(agent, frames[1], out.state, deterministic=True)
    out = rl.compute_actions(agent, frames[2], out.state, deterministic=True)
    assert out.state.tolist() == frames.tolist()
    with pytest.raises(ValueError, match="stacks of the last 3 frames"):
        rl.compute_actions(agent, frames[0], np.zeros((2, 4)))


def test_a_random_policy_draws_from_its_space_a_list_being_a_batch():
    policy = rl.RandomPolicy(gymnasium.spaces.Box(-1.0, 1.0, (2,)), rng=0)
    assert rl.compute_actions(policy, np.zeros(7)).actions.shape == (2,)
    assert rl.compute_actions(policy, [np.zeros(7)] * 4).actions.shape == (4, 2)
    with pytest.raises(ValueError, match=r"RandomPolicy\(action_space=env.action_space\)"):
        rl.compute_actions(rl.RandomPolicy(), np.zeros(7))


def test_compute_actions_counts_no_env_step():
    agent, env, _ = _families()["DQNPolicy"]
    env.reset()
    rl.compute_actions(agent, env.state)
    assert agent.policy.env_steps == 0


class NoActions(rl.Policy):
    pass


def test_a_policy_without_a_method_is_told_what_to_define_and_bad_arguments_are_refused():
    with pytest.raises(MissingMethodError, match=r"define one with "
                                                 r"@stagerl.compute_actions.dispatch"):
        rl.compute_actions(NoActions(), np.zeros(3))
    with pytest.raises(TypeError, match="needs a stagerl policy"):
        rl.compute_actions("policy", np.zeros(3))
    with pytest.raises(TypeError, match="deterministic must be True or False"):
        rl.compute_actions(NoActions(), np.zeros(3), deterministic="yes")


# ---- the loop's acting and evaluation are compute_actions ------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_plan_draws_what_compute_actions_draws_from_the_same_rng_state(name):
    """What acts in the run loop (and in a rollout worker, which runs the loop) and
    compute_actions are one decision: from copies of a policy, sampled step by step along an
    episode (a recurrent policy's state carried by hand from ``None``), the same actions."""
    import copy

    agent, env, _ = _families()[name]
    twin = copy.deepcopy(agent)
    env.reset()
    state, steps = None, 0
    while not (env.is_terminated or env.is_truncated) and steps < 40:
        observation = env.state
        planned = rl.plan(agent.policy, env)
        computed = rl.compute_actions(twin, observation, state)
        state = computed.state
        assert np.array_equal(np.asarray(planned), np.asarray(computed.actions)), steps
        env.act(planned)
        steps += 1
    assert steps >= 3


def _deployed_returns(agent, env, episodes):
    """The returns of a deployment loop: compute_actions on each observation, deterministic,
    the state carried from ``None`` at each episode's start."""
    returns = []
    for _ in range(episodes):
        env.reset()
        state, total = None, 0.0
        while not (env.is_terminated or env.is_truncated):
            actions, state, _ = rl.compute_actions(agent, env.state, state, deterministic=True)
            env.act(actions)
            total += float(env.reward)
        returns.append(total)
    return returns


@pytest.mark.parametrize("name", FAMILIES)
def test_evaluate_scores_what_a_compute_actions_loop_scores(name):
    """rl.evaluate acts as deployment code does: its returns are those of a loop of
    deterministic compute_actions calls on an env seeded alike (memory from each episode's
    start, for the recurrent policies)."""
    agent, env, _ = _families()[name]
    twin_env = _families()[name][1]  # built as env is, with the same seed
    evaluated = rl.evaluate(agent, env, episodes=3)
    assert evaluated == _deployed_returns(agent, twin_env, 3)


class LeftThreeTimes(rl.RecurrentPolicy):
    """Counts its steps: left while the count is below 3, then right; so in a RandomWalk1D
    (start 3 of 7) an episode begun from a count of 0 ends on the left (-1), one begun from a
    count carried over ends on the right (+1)."""

    recurrent_state_shape = (1,)


@rl.compute_actions.dispatch
def _compute_actions_left_three_times(policy: LeftThreeTimes, observations, state,
                                      deterministic):
    from stagerl.core.actions import as_batch, checked_state, one_or_batch

    batch, single = as_batch(observations, (), "LeftThreeTimes")
    state = checked_state("LeftThreeTimes", state, (1,), len(batch), single,
                          policy.initial_state)
    return one_or_batch((state[:, 0] >= 3).astype(np.int64), state + 1, {}, single)


def test_evaluate_starts_a_recurrent_policys_memory_at_each_episode_as_deployment_code_does():
    assert rl.evaluate(LeftThreeTimes(), rl.RandomWalk1D(), episodes=3) == [-1.0] * 3
    assert _deployed_returns(LeftThreeTimes(), rl.RandomWalk1D(), 3) == [-1.0] * 3


# ---- a multi-agent policy: each player through its own policy ----------------------------------


def test_a_multi_agent_policy_answers_per_player_each_with_its_own_memory():
    from stagerl.multi_agent import MultiAgentPolicy, RockPaperScissors

    space = gymnasium.spaces.Discrete(3)
    policy = MultiAgentPolicy({"random": rl.RandomPolicy(space, rng=0), "counter":
                               LeftThreeTimes()}, {"player_0": "random", "player_1": "counter"})
    observations = {"player_0": 3, "player_1": 3}
    out, actions = rl.compute_actions(policy, observations), []
    for _ in range(3):
        actions.append(out.actions["player_1"])
        out = rl.compute_actions(policy, observations, out.state)
    assert actions == [0, 0, 0] and out.actions["player_1"] == 1  # its count went on
    assert out.state["player_0"] is None and out.state["player_1"].tolist() == [4.0]
    assert out.actions["player_0"] in (0, 1, 2) and out.extra == {"player_0": {},
                                                                  "player_1": {}}
    # bound to a game, the players' policies are the game's
    policy.bind(RockPaperScissors())
    assert rl.compute_actions(policy, {"player_1": 3}, deterministic=True).actions == {
        "player_1": 0}
    with pytest.raises(ValueError, match=r"no policy for player 'player_9'"):
        rl.compute_actions(policy, {"player_9": 3})
    with pytest.raises(TypeError, match=r"takes a dict \{player: observation"):
        rl.compute_actions(policy, np.zeros(3))
    with pytest.raises(ValueError, match=r"state names players \['player_0'\]"):
        rl.compute_actions(policy, {"player_1": 3}, {"player_0": None})


# ---- Dict and Tuple observations: read leaf by leaf, as plan reads them ----------------------


def _nested_agents(tuple_observations: bool):
    from gymnasium import spaces
    from nested_envs import DictObservationEnv

    from stagerl.algorithms import PPOConfig, SACConfig, make_ppo_agent, make_sac_agent

    discrete = rl.GymEnv(DictObservationEnv(tuple_observations=tuple_observations), seed=0)
    box = rl.GymEnv(DictObservationEnv(tuple_observations=tuple_observations,
                                       action_space=spaces.Box(-1.0, 1.0, (2,))), seed=0)
    return {
        "PPOPolicy": (make_ppo_agent(discrete, PPOConfig(n_steps=8, batch_size=8), seed=0,
                                     device="cpu"), discrete),
        "SACPolicy": (make_sac_agent(box, SACConfig(learning_starts=0, net_arch=(16, 16)),
                                     seed=0, device="cpu"), box),
    }


@pytest.mark.parametrize("tuple_observations", [False, True], ids=["dict", "tuple"])
@pytest.mark.parametrize("name", ["PPOPolicy", "SACPolicy"])
def test_nested_observations_give_the_actions_plan_gives_one_or_a_batch(name,
                                                                         tuple_observations):
    import copy

    from trajectories.nested import tree_map

    agent, env = _nested_agents(tuple_observations)[name]
    twin = copy.deepcopy(agent)
    env.reset()
    observation = env.state
    with rl.deterministic(agent):
        planned = rl.plan(agent, env)
    one = rl.compute_actions(twin, observation, deterministic=True)
    assert np.array_equal(np.asarray(one.actions), np.asarray(planned))
    batch = rl.compute_actions(twin, tree_map(lambda leaf: np.stack([leaf] * 3), observation),
                               deterministic=True)
    assert len(batch.actions) == 3
    assert np.allclose(np.asarray(batch.actions, float),
                       np.asarray([one.actions] * 3, float), atol=1e-5)
    # Sampling: the loop's draw and compute_actions' draw from copies of the policy agree.
    drawn = rl.compute_actions(twin, observation)
    assert np.array_equal(np.asarray(drawn.actions), np.asarray(rl.plan(agent.policy, env)))


def test_a_nested_observation_with_missing_keys_or_mixed_batch_sizes_is_refused():
    agent, env = _nested_agents(False)["PPOPolicy"]
    env.reset()
    observation = env.state
    with pytest.raises(ValueError, match=r"as a dict with the keys \['frame', 'position'\]"):
        rl.compute_actions(agent, {"frame": observation["frame"]})
    mixed = {"frame": np.stack([observation["frame"]] * 2), "position": observation["position"]}
    with pytest.raises(ValueError, match="every part of a dict or tuple observation holds one "
                                         "observation or a batch of the same size"):
        rl.compute_actions(agent, mixed)
    with pytest.raises(ValueError, match=r"\['frame'\] takes one observation of shape \(3, 4\)"):
        rl.compute_actions(agent, {"frame": np.zeros(5), "position": observation["position"]})
