"""The EnvPool backend behind GymVectorEnv: what the Agent and the hooks read is what they read
from gymnasium's vector envs, act by act.

EnvPool draws its own initial states, so the gymnasium side is set to EnvPool's initial state of
each episode (CartPole's dynamics are deterministic); from there both must agree on every field
the Agent stores, at every act, across terminations, truncations and autoresets.
"""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest

import stagerl as rl

envpool = pytest.importorskip(
    "envpool", reason="the EnvPool backend needs envpool: pip install 'stagerl[envpool]'")

from stagerl.envs.envpool import make_envpool_env  # noqa: E402

FIELDS = ("reward", "is_terminated", "is_truncated", "episode_start", "stepped")


def start_like(gym_env, pool_env, lanes):
    """Put EnvPool's current state of ``lanes`` into the gymnasium sub-envs."""
    for lane in lanes:
        gym_env.env.envs[lane].unwrapped.state = pool_env.state[lane].astype(np.float64)
        gym_env.state[lane] = pool_env.state[lane]


def paired(actions, limit, seed=0):
    n = actions.shape[1]
    pool = make_envpool_env("CartPole-v1", num_envs=n, seed=seed, max_episode_steps=limit)
    gym = rl.GymVectorEnv("CartPole-v1", num_envs=n, seed=seed, max_episode_steps=limit)
    pool.reset(), gym.reset()
    start_like(gym, pool, range(n))
    for action in actions:
        pool.act(action), gym.act(action)
        start_like(gym, pool, np.flatnonzero(pool.episode_start))  # a new episode starts alike
        yield pool, gym


def scripted_actions(acts, n=4):
    # lane 0 always pushes right (falls), lane 1 alternates (lasts), the others mix
    t = np.arange(acts)[:, None]
    lanes = np.arange(n)[None, :]
    return np.where(lanes == 0, 1, np.where(lanes == 1, t % 2, (t // (lanes + 1)) % 2))


def test_cartpole_acts_give_the_same_fields_on_both_backends():
    ends = {"terminated": 0, "truncated": 0, "starts": 0}
    for pool, gym in paired(scripted_actions(120), limit=12):
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(pool, name), getattr(gym, name), err_msg=name)
        np.testing.assert_allclose(pool.state, gym.state, atol=1e-5)
        ends["terminated"] += pool.is_terminated.sum()
        ends["truncated"] += pool.is_truncated.sum()
        ends["starts"] += pool.episode_start.sum()
    assert ends["terminated"] > 5 and ends["truncated"] > 5 and ends["starts"] > 10


def test_a_fall_at_the_time_limit_is_terminated_and_truncated_as_in_gymnasium():
    actions = np.ones((40, 1), np.int64)
    fall = next(i for i, (pool, _) in enumerate(paired(actions, limit=500, seed=3))
                if pool.is_terminated[0]) + 1
    seen = [(pool.is_terminated[0], pool.is_truncated[0], gym.is_terminated[0],
             gym.is_truncated[0]) for pool, gym in paired(actions[:fall + 1], limit=fall, seed=3)]
    assert seen[fall - 1] == (True, True, True, True)  # EnvPool alone reports truncated only
    assert seen[fall] == (False, False, False, False)  # the next act only resets


class Scripted(rl.Policy):
    def __init__(self, actions):
        self.actions, self.t = actions, 0


@rl.plan.dispatch
def _plan_scripted(policy: Scripted, env: rl.VectorEnv):
    policy.t += 1
    return policy.actions[policy.t - 1]


def test_the_agent_stores_envpool_lanes_episodes_with_terminal_only_where_terminated():
    class Count(rl.Hook):
        stepped = terminated = 0

    @rl.push.dispatch
    def _count(hook: Count, stage: rl.PostActStage, policy, env):
        hook.stepped += int(env.stepped.sum())
        hook.terminated += int(env.is_terminated.sum())

    actions = scripted_actions(100)
    env = make_envpool_env("CartPole-v1", num_envs=4, seed=0, max_episode_steps=12)
    traces = rl.CircularArraySARTSTraces(capacity=10_000, state=(np.float32, (4,)))
    agent = rl.Agent(Scripted(actions), rl.Trajectory(traces))
    count, lengths = Count(), rl.StepsPerEpisode()
    rl.run(agent, env, rl.StopAfterNSteps(4 * 100, progress=False), count + lengths)
    container = agent.trajectory.container
    rows = container.sampleable_indices()
    assert container.n_lanes == 4 and len(rows) == count.stepped
    assert int(container.take("terminal", rows).sum()) == count.terminated > 0
    assert sum(lengths.steps) == count.stepped and max(lengths.steps) <= 12


def test_envpool_seeds_are_fixed_when_it_is_made():
    a, b = (make_envpool_env("CartPole-v1", num_envs=2, seed=7) for _ in range(2))
    a.reset(), b.reset()
    np.testing.assert_array_equal(a.state, b.state)
    with pytest.raises(ValueError, match="seed=8"):
        a.env.reset(seed=8)


def test_an_envpool_env_cannot_be_pickled_and_says_so():
    env = make_envpool_env("CartPole-v1", num_envs=2, seed=0)
    with pytest.raises(TypeError, match="backend='gymnasium'"):
        pickle.dumps(env)


@pytest.mark.parametrize("kwargs, match", [
    ({"task_id": "NoSuchTask-v0"}, "not an EnvPool task"),
    ({"num_envs": 0}, "num_envs"),
    ({"seed": -1}, "seed"),
    ({"max_episode_steps": 0}, "max_episode_steps"),
    ({"batch_size": 2}, "batch_size"),
])
def test_bad_arguments_are_refused_with_the_value(kwargs, match):
    kwargs = {"task_id": "CartPole-v1", **kwargs}
    with pytest.raises((TypeError, ValueError), match=match):
        make_envpool_env(**kwargs)


def test_atari_on_envpool_with_8_sub_envs():
    pytest.importorskip("ale_py", reason="Atari ids need ale-py: pip install 'stagerl[atari]'")
    from stagerl.envs.atari import make_atari_env

    env = make_atari_env("BreakoutNoFrameskip-v4", num_envs=8, seed=0, backend="envpool")
    env.reset()
    assert env.state.shape == (8, 84, 84) and env.state.dtype == np.uint8
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        env.act(rng.integers(4, size=8))
        assert set(env.reward.tolist()) <= {-1.0, 0.0, 1.0}
        assert (env.info["game_return"] >= 0).all()
        assert not (env.info["game_over"] & ~env.is_terminated).any()
        ends += int(env.is_terminated.sum())
    assert ends >= 8  # lives lost in every lane


def test_without_envpool_the_error_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'stagerl\[envpool\]'"):
        make_envpool_env("CartPole-v1")
