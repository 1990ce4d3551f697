"""save and load: every kind of value comes back as it was, shared objects stay shared, envs in
the middle of an episode and agents continue exactly as the originals, and what is not data is
refused where it is held."""

from __future__ import annotations

import collections
import json
import math
import random

import gymnasium
import numpy as np
import pytest
import torch

import stagerl as rl
from stagerl.checkpoints import CheckpointError, load, read_manifest, register, save
from stagerl.checkpoints.graph import encode
from stagerl.checkpoints.rebuild import rebuild


@register(state=("a", "b", "array", "same_array", "me", "x", "f", "file", "loss"))
class Holder:
    """A registered test class that holds what it is given (its attributes are set from
    keywords, so it declares their names when it registers)."""

    def __init__(self, **values):
        self.__dict__.update(values)


def round_trip(obj):
    encoded = encode(obj)
    json.loads(json.dumps(encoded.tree, allow_nan=False))  # strict JSON
    return rebuild(encoded.tree, encoded.tensors)


def same_bits(a, b) -> bool:
    return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and \
        a.tobytes() == b.tobytes()


# ---- values ---------------------------------------------------------------------------------


def test_plain_values_come_back_with_their_types_and_exact_bits():
    values = {
        "ints": [0, -1, 2**100], "floats": [0.1, -0.0, 1e-310, math.inf, -math.inf],
        "text": "ünïcode", "none": None, "flags": (True, False), "complex": 1.5 - 2j,
        "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "set": {3, 1, 2},
        "frozenset": frozenset({"a"}), "slice": slice(1, None, 2), "range": range(2, 9, 3),
        "odict": collections.OrderedDict(b=1, a=2), "deque": collections.deque([1, 2], maxlen=3),
        "defaultdict": collections.defaultdict(list, {"k": [1]}), "int keys": {1: "a", (2, 3): "b"},
        "types": [int, np.float32, type(np.dtype("int8"))],
        "clock": __import__("time").perf_counter,
    }
    back = round_trip(values)
    assert back == values
    assert [type(v) for v in back.values()] == [type(v) for v in values.values()]
    assert math.copysign(1.0, back["floats"][1]) == -1.0
    assert back["deque"].maxlen == 3 and back["defaultdict"].default_factory is list
    assert list(back["odict"]) == ["b", "a"]
    assert math.isnan(round_trip(math.nan))


def _objects(*values):
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def test_numpy_values_keep_dtype_shape_order_flags_and_bits():
    frozen = np.arange(6.0).reshape(2, 3)
    frozen.flags.writeable = False
    values = [np.float32(0.1), np.int64(-5), np.uint64(2**64 - 1), np.bool_(True), np.float16(3.5),
              np.complex64(1 + 2j), np.str_("s"), np.bytes_(b"b"), np.dtype(">f8"), np.zeros(()),
              np.arange(12, dtype=np.uint16).reshape(3, 4), np.asfortranarray(np.ones((3, 2))),
              np.arange(10)[::3], frozen, np.zeros((0, 4), np.float32), np.array([b"ab", b"c"]),
              np.array(["x", "yz"]), np.arange(4, dtype=">i4"), _objects(None, np.zeros(2))]
    back = round_trip(values)
    for before, after in zip(values, back[:-1], strict=False):
        assert type(after) is type(before)
        if isinstance(before, np.ndarray):
            assert same_bits(after, before)
            assert after.flags.f_contiguous == before.flags.f_contiguous or before.ndim < 2
            assert after.flags.writeable == before.flags.writeable
        else:
            assert after == before and np.asarray(after).dtype == np.asarray(before).dtype
    assert back[-1][0] is None and same_bits(back[-1][1], np.zeros(2))


def test_rngs_continue_their_streams():
    numpy_rng = np.random.default_rng(7)
    numpy_rng.random(3)
    legacy = np.random.RandomState(3)
    legacy.rand(2)
    python_rng = random.Random(5)
    torch_rng = torch.Generator().manual_seed(11)
    torch.rand(2, generator=torch_rng)
    back = round_trip([numpy_rng, legacy, python_rng, torch_rng, numpy_rng.bit_generator])
    assert back[0].bit_generator is back[4]  # shared, as in the original
    assert back[0].random() == numpy_rng.random()
    assert back[0].bit_generator.seed_seq.entropy == 7  # spawn() too goes on the same way
    assert back[0].spawn(1)[0].random() == numpy_rng.spawn(1)[0].random()
    assert back[1].rand() == legacy.rand()
    assert back[2].random() == python_rng.random()
    assert torch.equal(torch.rand(3, generator=back[3]), torch.rand(3, generator=torch_rng))


def test_tensors_keep_parameters_gradients_views_and_sharing():
    layer = torch.nn.Linear(3, 2)
    layer(torch.ones(1, 3)).sum().backward()
    optimiser = torch.optim.Adam(layer.parameters(), lr=0.1)
    optimiser.step()
    base = torch.arange(6.0)
    view = base[2:5]
    back_layer, back_optimiser, back_base, back_view, dtype, device, size = round_trip(
        [layer, optimiser, base, view, torch.float16, torch.device("cpu"), torch.Size([2, 3])])
    assert isinstance(back_layer.weight, torch.nn.Parameter)
    assert torch.equal(back_layer.weight, layer.weight)
    assert torch.equal(back_layer.weight.grad, layer.weight.grad)
    assert back_optimiser.param_groups[0]["params"][0] is back_layer.weight
    assert back_optimiser.state[back_layer.weight]["exp_avg"].equal(
        optimiser.state[layer.weight]["exp_avg"])
    back_base[3] = 100.0  # the view still looks into its base
    assert back_view.tolist() == [2.0, 100.0, 4.0]
    assert (dtype, device, size) == (torch.float16, torch.device("cpu"), torch.Size([2, 3]))


def test_shared_objects_and_cycles_stay_shared():
    shared = [1, 2]
    holder = Holder(a=shared, b=shared, array=np.zeros(3))
    holder.me = holder
    holder.same_array = holder.array
    back = round_trip(holder)
    assert back.a is back.b and back.me is back and back.same_array is back.array
    tree = encode(holder).tree
    assert json.dumps(tree).count('"ref"') == 3


def test_the_same_state_gives_the_same_file(tmp_path):
    buffer = rl.CircularArrayBuffer(4, (2,), np.float32)  # holds sets of types and dtypes
    save(buffer, tmp_path / "one")
    save(buffer, tmp_path / "two")
    one, two = (tmp_path / name / "objects.json" for name in ("one", "two"))
    assert one.read_bytes() == two.read_bytes()


# ---- what is not data --------------------------------------------------------------------------


class NotRegistered:
    pass


@pytest.mark.parametrize("value, words", [
    (Holder(x=NotRegistered()), ["obj.x", "NotRegistered", "is not a registered component",
                                 "stagerl.checkpoints.register(NotRegistered)"]),
    (Holder(f=lambda x: x), ["obj.f", "function", "code, not data"]),
    (Holder(file=open(__file__)), ["obj.file", "TextIOWrapper"]),
    (Holder(a=_objects(object())), ["obj.a[0]", "builtins.object"]),
])
def test_what_is_not_data_is_refused_naming_where_it_is_held(value, words):
    with pytest.raises(CheckpointError) as error:
        encode(value)
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_tensor_still_tracked_by_autograd_is_refused():
    weight = torch.ones(2, requires_grad=True)
    with pytest.raises(CheckpointError, match="tracked by autograd; store it detached"):
        encode(Holder(loss=(weight * 2).sum()))


def test_an_env_whose_state_is_not_data_is_refused_naming_the_envs_that_are():
    pytest.importorskip("Box2D")
    with pytest.raises(CheckpointError, match="LunarLander keeps its state in objects"):
        encode(rl.GymEnv("LunarLander-v3", seed=0))


def test_an_async_vector_env_is_refused_with_the_fix(tmp_path):
    env = rl.GymVectorEnv("CartPole-v1", num_envs=2, seed=0, vectorization_mode="async")
    try:
        with pytest.raises(CheckpointError, match="vectorization_mode='sync'"):
            save(env, tmp_path / "env")
    finally:
        env.close()
    assert not (tmp_path / "env").exists()


def test_save_refuses_to_write_over_anything_that_is_not_a_checkpoint(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="is not a checkpoint; nothing was written"):
        save(rl.RandomWalk1D(), tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no temporary left behind
    save(rl.RandomWalk1D(n=5), tmp_path / "ckpt")
    save(rl.RandomWalk1D(n=9), tmp_path / "ckpt")  # a checkpoint is replaced
    assert load(tmp_path / "ckpt").n == 9


# ---- envs in the middle of an episode ------------------------------------------------------------

SINGLE_ENVS = ["CartPole-v1", "Acrobot-v1", "Pendulum-v1", "MountainCar-v0",
               "MountainCarContinuous-v0", "FrozenLake-v1", "CliffWalking-v1", "Taxi-v4",
               "Blackjack-v1"]


def _drive(env, actions):
    """Act with ``actions`` (resetting at episode ends); every observation, reward and flag."""
    seen = []
    for action in actions:
        env.act(action)
        seen.append((np.asarray(env.state).tobytes(), np.asarray(env.reward).tobytes(),
                     np.asarray(env.is_terminated).tobytes(),
                     np.asarray(env.is_truncated).tobytes()))
        if not isinstance(env, rl.VectorEnv) and (env.is_terminated or env.is_truncated):
            env.reset()
            seen.append(np.asarray(env.state).tobytes())
    return seen


@pytest.mark.parametrize("env_id", SINGLE_ENVS)
def test_a_gymnasium_env_saved_mid_episode_continues_exactly(env_id, tmp_path):
    env = rl.GymEnv(env_id, seed=3)
    space = env.action_space
    space.seed(4)
    actions = [space.sample() for _ in range(300)]
    env.reset()
    _drive(env, actions[:7])
    copy = load(save(env, tmp_path / "env"))
    assert type(copy.env.unwrapped) is type(env.env.unwrapped)
    assert _drive(copy, actions[7:]) == _drive(env, actions[7:])


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "FrozenLake-v1"])
def test_a_sync_vector_env_saved_mid_run_continues_exactly(env_id, mode, tmp_path):
    autoreset = getattr(gymnasium.vector.AutoresetMode, {"NextStep": "NEXT_STEP",
                                                          "SameStep": "SAME_STEP"}[mode])
    env = rl.GymVectorEnv(env_id, num_envs=3, seed=5, vector_kwargs={"autoreset_mode": autoreset})
    env.reset()
    env.action_space.seed(6)
    actions = [env.action_space.sample() for _ in range(150)]
    _drive(env, actions[:20])
    copy = load(save(env, tmp_path / "env"))
    assert _drive(copy, actions[20:]) == _drive(env, actions[20:])
    assert same_bits(copy.final_state, env.final_state)


def test_stagerls_own_envs_continue_exactly(tmp_path):
    for env in (rl.RandomWalk1D(n=9), rl.FixedLengthEnv(length=6, time_limit=4)):
        env.reset()
        env.act(1)
        copy = load(save(env, tmp_path / type(env).__name__))
        actions = [1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1]
        assert _drive(copy, actions) == _drive(env, actions)


# ---- agents -----------------------------------------------------------------------------------


def _tabular_parts():
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5),
                             rl.EpsilonGreedyExplorer(0.1, decay_steps=300, rng=1))
    trajectory = rl.Trajectory(rl.CircularArraySARTSTraces(capacity=32),
                               rl.BatchSampler(4, rng=2), rl.InsertSampleRatioController())
    return rl.Agent(policy, trajectory), rl.RandomWalk1D()


def _columns(agent):
    container = agent.trajectory.container
    return {k: np.asarray(container[k]).tobytes() for k in container.keys()}


def test_a_loaded_agent_and_env_continue_exactly_as_the_originals(tmp_path):
    agent, env = _tabular_parts()
    rl.run(agent, env, rl.StopAfterNSteps(100, progress=False))
    copy = load(save(agent, tmp_path / "agent"))
    env_copy = load(save(env, tmp_path / "env"))
    assert isinstance(copy, rl.Agent[rl.QBasedPolicy, rl.Trajectory])
    for a, e in ((agent, env), (copy, env_copy)):
        rl.run(a, e, rl.StopAfterNSteps(150, progress=False))
    assert _columns(copy) == _columns(agent)
    assert same_bits(copy.policy.learner.approximator.table,
                     agent.policy.learner.approximator.table)


def test_without_the_trajectory_an_agent_keeps_its_policy_and_learns_from_a_new_episode(tmp_path):
    agent, env = _tabular_parts()
    rl.run(agent, env, rl.StopAfterNSteps(100, progress=False))
    path = save(agent, tmp_path / "agent", include_trajectory=False)
    copy = load(path)
    assert len(copy.trajectory) == 0 and len(agent.trajectory) > 0
    assert same_bits(copy.policy.learner.approximator.table,
                     agent.policy.learner.approximator.table)
    rl.run(copy, rl.RandomWalk1D(), rl.StopAfterNSteps(20, progress=False))
    assert len(copy.trajectory) > 0


def test_the_manifest_says_what_the_checkpoint_holds(tmp_path):
    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent

    env = rl.GymEnv("CartPole-v1", seed=0)
    agent = make_dqn_agent(env, DQNConfig(total_steps=100, net_arch=(8,)), seed=0)
    manifest = read_manifest(save(agent, tmp_path / "dqn", info={"seed": 0}))
    assert manifest["format"] == "stagerl-checkpoint" and manifest["format_version"] == 1
    assert manifest["summary"]["policy"] == "stagerl.algorithms.dqn.policy.DQNPolicy"
    assert manifest["hyper_parameters"]["net_arch"] == [8]
    assert manifest["info"] == {"seed": 0}
    assert "torch.optim.adam.Adam" in manifest["types"]
    assert set(manifest["files"]) == {"objects.json", "tensors.pt"}


def _sac_agent(device):
    from stagerl.algorithms import SACConfig, make_sac_agent

    env = rl.GymEnv("Pendulum-v1", seed=0)
    config = SACConfig(net_arch=(8,), learning_starts=10, batch_size=4, buffer_size=50)
    agent = make_sac_agent(env, config, seed=0, device=device)
    rl.run(agent, env, rl.StopAfterNSteps(30, progress=False))
    return agent


def test_map_location_moves_the_policy_with_its_tensors(tmp_path):
    agent = _sac_agent("cpu")
    copy = load(save(agent, tmp_path / "sac"), map_location="cpu")
    assert copy.policy.device == torch.device("cpu")
    assert rl.evaluate(copy, rl.GymEnv("Pendulum-v1", seed=1), 1) == rl.evaluate(
        agent, rl.GymEnv("Pendulum-v1", seed=1), 1)
    with pytest.raises(TypeError, match="map_location must be a device name"):
        load(tmp_path / "sac", map_location={"cuda:0": "cpu"})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_checkpoint_written_on_a_gpu_loads_on_the_cpu(tmp_path):
    agent = _sac_agent("cuda")
    path = save(agent, tmp_path / "sac")
    same = load(path)
    assert same.policy.generator.device.type == "cuda"
    copy = load(path, map_location="cpu")
    assert copy.policy.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in copy.policy.actor.parameters())
    assert copy.policy.generator.device.type == "cpu"
    rl.evaluate(copy, rl.GymEnv("Pendulum-v1", seed=1), 1)


def test_the_state_dict_is_read_alone_when_the_classes_have_changed(tmp_path):
    import hashlib

    from stagerl.algorithms.dqn import DQNConfig, make_dqn_agent
    from stagerl.checkpoints import load_state_dict

    def agent():
        env = rl.GymEnv("CartPole-v1", seed=0)
        return make_dqn_agent(env, DQNConfig(total_steps=300, net_arch=(8,),
                                             learning_starts=50, train_freq=20), seed=0), env

    trained, env = agent()
    rl.run(trained, env, rl.StopAfterNSteps(300, progress=False))
    path = save(trained, tmp_path / "dqn")
    # A later stagerl renamed the policy class: the objects no longer load ...
    objects = (path / "objects.json").read_text().replace(
        "stagerl.algorithms.dqn.policy.DQNPolicy", "stagerl.algorithms.dqn.policy.RenamedPolicy")
    (path / "objects.json").write_text(objects)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"]["objects.json"].update(bytes=len(objects.encode()),
                                             sha256=hashlib.sha256(objects.encode()).hexdigest())
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="RenamedPolicy"):
        load(path)
    # ... but the weights do, into a policy built anew.
    fresh, _ = agent()
    fresh.load_state_dict(load_state_dict(path))
    for key, value in trained.policy.network.state_dict().items():
        assert torch.equal(fresh.policy.network.state_dict()[key], value)
