"""What SAC's and TD3's policies share: time-limited episodes stored bootstrapped, the agent's
checks naming the algorithm, and the policy's repr."""

import pytest
from continuous_support import one_torch_thread  # noqa: F401 (an autouse fixture)

import stagerl as rl
from stagerl.algorithms.off_policy.sac import SACConfig, make_sac_agent
from stagerl.algorithms.off_policy.td3 import TD3Config, make_td3_agent

ALGORITHMS = {"sac": (make_sac_agent, SACConfig), "td3": (make_td3_agent, TD3Config)}


def small_agent(name, env, **overrides):
    make_agent, config_class = ALGORITHMS[name]
    settings = {"learning_starts": 50, "batch_size": 32, "net_arch": (16,), **overrides}
    return make_agent(env, config_class(**settings), seed=0, device="cpu")


@pytest.mark.parametrize("name", ALGORITHMS)
def test_time_limited_episodes_are_stored_bootstrapped(name):
    env = rl.GymEnv("Pendulum-v1", seed=0, max_episode_steps=5)
    agent = small_agent(name, env)
    hook = rl.run(agent, env, rl.StopAfterNSteps(12, progress=False), rl.StepsPerEpisode())
    assert hook.steps == [5, 5, 2]
    container = agent.trajectory.container
    assert int(container.sampleable_inds.sum()) == 12  # every step, the truncated ones too
    assert not container["terminal"].any()  # truncation is no terminal: they bootstrap


@pytest.mark.parametrize("name, algorithm", [("sac", "SAC"), ("td3", "TD3")])
def test_an_env_of_other_shapes_is_refused_naming_the_algorithm_and_its_maker(name, algorithm):
    agent = small_agent(name, rl.GymEnv("Pendulum-v1"))
    with pytest.raises(ValueError) as error:
        agent.validate(rl.GymEnv("MountainCarContinuous-v0"))
    assert str(error.value) == (
        f"this {algorithm} policy acts on states (3,) with actions (1,), the env has (2,) and "
        f"(1,); build the policy for this env with make_{name}_agent(env, ...)")


@pytest.mark.parametrize("name, config", [("sac", "SACConfig"), ("td3", "TD3Config")])
def test_a_config_of_another_kind_is_refused_naming_the_maker(name, config):
    make_agent, _ = ALGORITHMS[name]
    with pytest.raises(TypeError) as error:
        make_agent(rl.GymEnv("Pendulum-v1"), {"learning_rate": 1e-3}, device="cpu")
    assert str(error.value) == f"make_{name}_agent needs a {config}, got dict"


def test_repr_names_the_policy_and_the_settings_that_differ_from_the_defaults():
    assert repr(small_agent("sac", rl.GymEnv("Pendulum-v1")).policy) == (
        "SACPolicy(learning_starts=50, batch_size=32, net_arch=(16,), device='cpu')")
    assert repr(small_agent("td3", rl.GymEnv("Pendulum-v1"), gamma=0.9).policy) == (
        "TD3Policy(learning_starts=50, batch_size=32, gamma=0.9, net_arch=(16,), device='cpu')")
