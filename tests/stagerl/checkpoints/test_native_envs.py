"""MuJoCo and Atari envs as data: a copy and a checkpoint go on exactly as the original (physics
or emulator, rng, spaces, wrapper counters), on single and vector envs; a crafted state is
refused before anything uses it (an id to import, a file path, a state of the wrong size, bytes
the ALE cannot parse)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from crafted import refused, rewrite

import stagerl as rl
from stagerl.checkpoints import load, save
from stagerl.envs.native_state import NativeEnvState, env_as_data

pytest.importorskip("mujoco")
pytest.importorskip("ale_py")


def atari(num_envs=1):
    from stagerl.envs.atari import make_atari_env

    return make_atari_env("BreakoutNoFrameskip-v4", num_envs=num_envs, seed=0)


MAKERS = {
    "halfcheetah": lambda: rl.GymEnv("HalfCheetah-v5", seed=0),
    "hopper x2": lambda: rl.GymVectorEnv("Hopper-v5", num_envs=2, seed=0),
    "breakout": atari,
    "breakout x2": lambda: atari(2),
}


def advance(env, steps):
    for _ in range(steps):
        env.act(env.action_space.sample())
        if not isinstance(env, rl.VectorEnv) and (env.is_terminated or env.is_truncated):
            env.reset()


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("how", ["checkpoint", "deepcopy"])
def test_a_copy_goes_on_exactly_as_the_original(name, how, tmp_path):
    env = MAKERS[name]()
    env.reset()
    advance(env, 120)
    other = load(save(env, tmp_path / "env")) if how == "checkpoint" else copy.deepcopy(env)
    for _ in range(200):
        a, b = env.action_space.sample(), other.action_space.sample()
        np.testing.assert_array_equal(a, b)  # the spaces' generators go on too
        env.act(a)
        other.act(b)
        np.testing.assert_array_equal(env.state, other.state)
        np.testing.assert_array_equal(env.reward, other.reward)
        assert np.array_equal(env.is_terminated, other.is_terminated)
        if not isinstance(env, rl.VectorEnv) and (env.is_terminated or env.is_truncated):
            env.reset()
            other.reset()
            np.testing.assert_array_equal(env.state, other.state)  # the no-ops drawn alike


def test_saving_leaves_the_env_as_it_was():
    env = rl.GymEnv("Hopper-v5", seed=0)
    env.reset()
    chain = env.env
    data = env_as_data(chain)
    assert data is not chain and isinstance(data.env.env.env, NativeEnvState)
    assert type(chain.unwrapped).__name__ == "HopperEnv"  # the live chain untouched
    env.act(env.action_space.sample())


def _saved(tmp_path):
    env = rl.GymEnv("Hopper-v5", seed=0)
    env.reset()
    path = save(env, tmp_path / "env")
    return path, json.loads((path / "objects.json").read_text())


def _native_node(tree):
    """The NativeEnvState node of a saved Hopper GymEnv's tree."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("obj", "").endswith("NativeEnvState"):
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    (node,) = found
    return node["state"]["dict"]


@pytest.mark.parametrize("field, value, words", [
    ("env_id", "os:Hopper-v5", ("names a module to import",)),
    ("env_id", "NotAnEnv-v0", ("not registered with gymnasium",)),
    ("env_id", "CartPole-v1", ("'CartPole-v1' is not a mujoco env",)),
    ("kind", "lua", ("unknown kind 'lua'",)),
])
def test_a_crafted_id_or_kind_is_refused(field, value, words, tmp_path):
    path, tree = _saved(tmp_path)
    _native_node(tree)[field] = value
    rewrite(path, tree)
    refused(path, *words)


def test_a_file_path_in_the_keyword_arguments_is_refused(tmp_path):
    path, tree = _saved(tmp_path)
    kwargs = _native_node(tree)["kwargs"]["dict"]
    kwargs["xml_file"] = "/etc/passwd"
    rewrite(path, tree)
    refused(path, "xml_file='/etc/passwd'", "is not one a checkpoint may set")


def test_a_physics_state_of_the_wrong_size_is_refused(tmp_path):
    env = rl.GymEnv("Hopper-v5", seed=0)
    env.reset()
    data = env_as_data(env.env)
    inner = data
    while not isinstance(inner, NativeEnvState):
        inner = inner.env
    inner.physics = inner.physics[:-1]
    with pytest.raises(ValueError, match=r"Hopper-v5 has a state of \d+ float64s"):
        inner.build()
    inner.kind, inner.env_id = "ale", "BreakoutNoFrameskip-v4"
    inner.kwargs = {"game": "breakout", "frameskip": 1}
    inner.action_space, inner.observation_space = atari().env.unwrapped.action_space, \
        atari().env.unwrapped.observation_space
    inner.physics = np.frombuffer(b"not an ALE state" * 8, dtype=np.uint8).copy()
    with pytest.raises(ValueError, match="the ALE refused the saved state"):
        inner.build()
