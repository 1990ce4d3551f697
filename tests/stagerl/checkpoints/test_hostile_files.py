"""Checkpoints crafted to run code, import modules, write or remove files, or exhaust memory:
each refused with one CheckpointError line naming the file and what is wrong, nothing written,
nothing imported. The checksums are recomputed each time: whoever writes objects.json writes
the manifest that records its checksum."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import stagerl as rl
from stagerl.checkpoints import CheckpointError, load, register, save

sys.path.insert(0, str(Path(__file__).parent))
from crafted import refused, replace_tensors, rewrite, with_object  # noqa: E402

WALK = "stagerl.envs.random_walk.RandomWalk1D"


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    return save(rl.RandomWalk1D(), tmp_path / "env")


def _walk_state(**extra) -> dict:
    state = {"n": 7, "start": 3, "rewards": {"tuple": [-1.0, 1.0]}, "state": 3}
    return {"dict": {**state, **extra}}


@pytest.fixture
def evil_module(tmp_path, monkeypatch) -> Path:
    """``somemodule`` on the path: importing it writes a marker file (returned)."""
    marker = tmp_path / "imported"
    (tmp_path / "somemodule.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                            "class X: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield marker
    sys.modules.pop("somemodule", None)


# ---- what the file would have run while loading ------------------------------------------------


def test_a_state_that_sets_append_to_path_write_text_writes_nothing(checkpoint, tmp_path):
    target = tmp_path / "site-packages" / "evil.pth"
    target.parent.mkdir()
    with_object(checkpoint, {"obj": WALK, "state": _walk_state(
        append={"method": "write_text", "self": {"path": str(target)}}),
        "items": {"list": ["import os; os.system('echo pwned')"]}})
    refused(checkpoint, "env", root=tmp_path)
    assert not target.exists()


def test_list_items_are_only_for_real_lists(checkpoint):
    with_object(checkpoint, {"obj": WALK, "state": _walk_state(), "items": {"list": [1]}})
    refused(checkpoint, "list items for a RandomWalk1D")
    with_object(checkpoint, {"obj": WALK, "state": _walk_state(), "dict_items": {"dict": {}}})
    refused(checkpoint, "dict items for a RandomWalk1D")


def test_a_state_may_set_only_the_attributes_its_class_declares(checkpoint):
    with_object(checkpoint, {"obj": WALK, "state": _walk_state(append=1)})
    refused(checkpoint, "the state of RandomWalk1D holds append, which RandomWalk1D does not "
                        "declare")
    with_object(checkpoint, {"obj": WALK, "state": _walk_state(validate={"list": []})})
    refused(checkpoint, "holds validate")  # a name the loop looks up on a policy
    with_object(checkpoint, {"obj": WALK, "state": {"dict": {"__class__": 1}}})
    refused(checkpoint, "holds __class__")


def test_a_registered_class_named_as_append_cannot_make_gymnasium_import_a_module(
        checkpoint, evil_module):
    with_object(checkpoint, {"obj": WALK, "state": _walk_state(
        append={"class": "stagerl.envs.gym.GymEnv"}), "items": {"list": ["somemodule:X-v0"]}})
    refused(checkpoint, "RandomWalk1D")
    with_object(checkpoint, {"call": "stagerl.envs.gym.GymEnv",
                             "args": {"tuple": ["somemodule:X-v0"]}})
    refused(checkpoint, "'stagerl.envs.gym.GymEnv' is not rebuilt from arguments")
    assert not evil_module.exists() and "somemodule" not in sys.modules


def _spec(**changes) -> dict:
    fields = {"id": "CartPole-v1",
              "entry_point": "gymnasium.envs.classic_control.cartpole:CartPoleEnv",
              "reward_threshold": 475.0, "nondeterministic": False, "max_episode_steps": 500,
              "order_enforce": True, "disable_env_checker": False, "kwargs": {"dict": {}},
              "additional_wrappers": {"tuple": []},
              "vector_entry_point": "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
              "namespace": None, "name": "CartPole", "version": 1}
    return {"obj": "gymnasium.envs.registration.EnvSpec", "state": {"dict": {**fields,
                                                                            **changes}}}


@pytest.mark.parametrize("changes, words", [
    ({"id": "somemodule:X-v0"}, ["'somemodule:X-v0' names a module to import"]),
    ({"entry_point": "somemodule:X"}, ["entry point 'somemodule:X' is not the one gymnasium"]),
    ({"id": "NotRegistered-v0"}, ["'NotRegistered-v0' is not registered with gymnasium"]),
    ({"additional_wrappers": {"tuple": [{"obj": "gymnasium.envs.registration.WrapperSpec",
                                         "state": {"dict": {
                                             "name": "W", "entry_point": "somemodule:W",
                                             "kwargs": None}}}]}},
     ["WrapperSpec whose entry point 'somemodule:W'"]),
])
def test_an_env_spec_naming_another_module_is_refused(checkpoint, evil_module, changes, words):
    with_object(checkpoint, _spec(**changes))
    refused(checkpoint, *words)
    assert not evil_module.exists()


def test_an_env_spec_of_a_registered_id_loads(checkpoint):
    import gymnasium

    with_object(checkpoint, _spec())
    assert load(checkpoint) == gymnasium.spec("CartPole-v1")


@pytest.mark.parametrize("owner", [{"path": "VICTIM"}, {"list": []}, {"dict": {}},
                                   {"class": "builtins.int"}])
def test_a_bound_method_of_anything_but_a_registered_object_is_refused(checkpoint, tmp_path,
                                                                       owner):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    owner = json.loads(json.dumps(owner).replace("VICTIM", str(victim)))
    with_object(checkpoint, {"list": [{"method": "unlink", "self": owner}]})
    refused(checkpoint, "which is not a registered component", root=tmp_path)
    assert victim.read_text() == "keep me"


def test_a_bound_method_must_be_one_its_class_defines(checkpoint):
    with_object(checkpoint, {"method": "reset", "self": {"obj": WALK, "state": _walk_state()}})
    method = load(checkpoint)
    assert method.__func__ is rl.RandomWalk1D.reset and isinstance(method.__self__,
                                                                    rl.RandomWalk1D)
    for name, words in (("no_such_method", "which has none"), ("__init__", "method name"),
                        ("n", "which has none")):
        with_object(checkpoint, {"method": name, "self": {"obj": WALK, "state": _walk_state()}})
        refused(checkpoint, *words)


def test_a_defaultdict_factory_must_be_a_plain_type(checkpoint):
    with_object(checkpoint, {"defaultdict": {}, "factory": {"class": WALK}})
    refused(checkpoint, "a defaultdict's factory must be a plain type")


def test_a_torch_module_with_hooks_or_foreign_submodules_is_refused(tmp_path):
    import torch

    path = save(torch.nn.Sequential(torch.nn.Linear(2, 2)), tmp_path / "net")
    text = (path / "objects.json").read_text()
    hook = {"method": "reset", "self": {"obj": WALK, "state": _walk_state()}}
    rewrite(path, json.loads(text.replace('"_forward_hooks":{"odict":{}}',
                                          '"_forward_hooks":{"odict":{"0":' + json.dumps(hook)
                                          + "}}", 1)))
    refused(path, "hooks (_forward_hooks): code run at every call")
    rewrite(path, json.loads(text.replace('"_modules":{"dict":{"0":',
                                          '"_modules":{"dict":{"1":' + json.dumps(hook)
                                          + ',"0":', 1)))
    refused(path, "gives a Sequential _modules that are not all Modules")


# ---- malformed files that escaped as raw Python errors -----------------------------------------


def _nested(depth: int) -> dict:
    node = 1
    for _ in range(depth):
        node = {"list": [node]}
    return node


@pytest.mark.parametrize("depth, words", [
    (65, ["env: malformed checkpoint: values nest deeper than 64 levels"]),
    (900, ["objects.json nests too deeply"]), (100_000, ["objects.json nests too deeply"]),
])
def test_deeply_nested_objects_are_refused(checkpoint, depth, words):
    rewrite(checkpoint, objects=b'{"list":[' * depth + b"1" + b"]}" * depth)
    refused(checkpoint, *words)


def test_nesting_up_to_the_limit_loads(checkpoint):
    with_object(checkpoint, _nested(63))
    assert load(checkpoint) is not None


def test_an_object_of_another_type_than_the_manifest_says_is_refused(checkpoint):
    rewrite(checkpoint, {"dict": {"state_dict": None, "object": {"list": []}}})
    refused(checkpoint, "it holds a builtins.list, its manifest says "
                        "stagerl.envs.random_walk.RandomWalk1D")


@pytest.mark.parametrize("depth", [20, 100_000])
def test_a_deeply_nested_manifest_is_refused(checkpoint, depth):
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    text = json.dumps(manifest).replace('"info": null', '"info": ' + '{"a":' * depth + "1"
                                        + "}" * depth)
    (checkpoint / "manifest.json").write_text(text)
    refused(checkpoint, "manifest.json", "nest")


@pytest.mark.parametrize("node, words", [
    ({"scalar": 1000, "dtype": "|i1"}, ["1000 is outside the range of int8 (-128 to 127)"]),
    ({"scalar": -1, "dtype": "<u8"}, ["-1 is outside the range of uint64"]),
    ({"scalar": 2**70, "dtype": "<i8"}, ["outside the range of int64"]),
    ({"scalar": 1e10, "dtype": "<f2"}, ["10000000000.0 is outside the range of float16"]),
    ({"scalar": "x", "dtype": "<i4"}, ["'x' is not a int32 value"]),
])
def test_a_scalar_outside_its_dtype_is_refused(checkpoint, node, words):
    with_object(checkpoint, node)
    refused(checkpoint, *words)


@pytest.mark.parametrize("node, words", [
    ({"objects": [], "shape": [10**6, 10**6, 10**6]}, ["0 values for an array of objects of "
                                                        "shape [1000000, 1000000, 1000000]"]),
    ({"objects": [1, 2], "shape": [2**62, 2**62, 0, 5]}, ["2 values for an array of objects"]),
    ({"seed_sequence": {"dict": {"entropy": 1, "spawn_key": {"tuple": []},
                                 "pool_size": 10**9, "n_children_spawned": 0}}},
     ["SeedSequence pool_size 1000000000"]),
])
def test_absurd_sizes_are_refused_before_anything_is_allocated(checkpoint, node, words):
    with_object(checkpoint, node)
    refused(checkpoint, *words)


@pytest.mark.parametrize("shape, words", [
    ([2**40, 2**40], ["array of 6 values declared with shape [1099511627776, 1099511627776]"]),
    ([2**32, 2**32, 0], ["array of 6 values declared with shape"]),
    ([1] * 40, ["array shape"]), ([-6], ["array shape"]),
])
def test_an_array_of_another_shape_than_its_tensor_is_refused(tmp_path, shape, words):
    import numpy as np

    path = save(np.arange(6.0), tmp_path / "array")
    with_object(path, {"array": "0", "dtype": "<f8", "shape": shape})
    refused(path, *words)


def test_a_compressed_tensor_file_is_refused_before_it_is_expanded(checkpoint):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\0" * 10_000_000)
    replace_tensors(checkpoint, buffer.getvalue())
    refused(checkpoint, "tensors.pt cannot be read as plain tensors", "is compressed")


@pytest.mark.parametrize("text, words", [
    (b'{"list":[NaN]}', ["not valid JSON", "NaN is not a JSON number"]),
    (b'{"list":[1e999]}', ["not valid JSON", "does not fit a float"]),
    (b'{"list":[1' + b"0" * 5000 + b"]}", ["not valid JSON"]),
    (b'{"list":[1], "dict": {}}', ["a 'list' value with the keys ['dict']"]),
    (b'{"obj":"' + WALK.encode() + b'","state":{"dict":{}},"new_args":{"tuple":[]}}',
     ["'obj' value with the keys ['new_args']"]),
    (b'{"list":[{"ref": 0}]}', ["a reference to 0, which is not defined before it"]),
    (b'\xff\xfe', ["not valid JSON"]),
])
def test_malformed_objects_are_one_line(checkpoint, text, words):
    rewrite(checkpoint, objects=text)
    refused(checkpoint, *words)


@pytest.mark.parametrize("changes, words", [
    ({"kind": "script"}, ["kind must be 'object' or 'experiment'"]),
    ({"summary": {"env_steps": -5}}, ["summary.env_steps must be a count, got -5"]),
    ({"summary": {"env_id": ["a"]}}, ["summary.env_id must be a string"]),
    ({"run_me": "now"}, ["the field 'run_me' is not one stagerl writes"]),
    ({"files": {"objects.json": {"bytes": 1, "sha256": "x"}}}, ["files must list the sizes"]),
    ({"info": [1]}, ["info must be an object or null"]),
])
def test_a_manifest_out_of_schema_is_refused(checkpoint, changes, words):
    rewrite(checkpoint, **changes)
    refused(checkpoint, *words)


def test_the_manifests_nan_literals_are_refused(checkpoint):
    text = (checkpoint / "manifest.json").read_text().replace('"info": null', '"info": NaN')
    (checkpoint / "manifest.json").write_text(text)
    refused(checkpoint, "manifest.json is not valid JSON", "NaN is not a JSON number")


# ---- saving: what loading would refuse is not written ------------------------------------------


class MyPolicy(rl.Policy):
    """A user's policy, not registered."""


def test_saving_a_users_policy_names_the_class_and_the_call_that_registers_it(tmp_path):
    agent = rl.Agent(MyPolicy(), rl.Trajectory(rl.CircularArraySARTSTraces(capacity=8)))
    with pytest.raises(CheckpointError) as error:
        save(agent, tmp_path / "agent")
    assert str(error.value) == (
        f"cannot save agent.policy: {__name__}.MyPolicy is not a registered component; call "
        "stagerl.checkpoints.register(MyPolicy) if its state is plain data")
    assert not (tmp_path / "agent").exists()


@register
class Counter(rl.Hook):
    def __init__(self):
        self.count = 0


def test_an_attribute_set_from_outside_a_class_is_refused_when_saving_with_the_fix(tmp_path):
    counter = Counter()
    counter.extra = 1
    with pytest.raises(CheckpointError, match=r"Counter holds extra, which its code never sets.*"
                                              r"register\(Counter, state=\(\.\.\.\)\)"):
        save(counter, tmp_path / "counter")
    register(Counter, state=("extra",))
    assert load(save(counter, tmp_path / "counter")).extra == 1


# ---- in a fresh process: nothing the file names is imported ------------------------------------


def test_loading_crafted_files_imports_no_module(checkpoint, evil_module):
    with_object(checkpoint, {"list": [{"obj": "somemodule.X"}, {"class": "somemodule.X"},
                                      {"function": "somemodule.X"}, _spec(id="somemodule:X-v0")]})
    script = textwrap.dedent(f"""
        import sys
        from stagerl.checkpoints import CheckpointError, load
        try:
            load({str(checkpoint)!r})
        except CheckpointError as error:
            print(error)
        print("somemodule" in sys.modules)
    """)
    env = {"PYTHONPATH": f"{evil_module.parent}:{Path(rl.__file__).parents[1]}"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True, env=env).stdout.splitlines()
    assert "'somemodule.X', which is not a registered component" in out[0]
    assert out[1] == "False" and not evil_module.exists()
