"""Property: a mutated checkpoint of any algorithm loads as an Agent or is refused with a
CheckpointError, never anything else; loading creates no file and imports no module.

Mutations, drawn by hypothesis (derandomized: the same examples on every run):

* random edits of ``objects.json`` (a value replaced by another JSON value, a crafted node or a
  name of code; a key removed, renamed or added; two subtrees swapped), checksums recomputed;
* random edits of the manifest's fields;
* truncations of any of the three files, with the checksums recomputed or not;
* files swapped between the checkpoints of two algorithms.

A mutation that leaves the data as it was (an equal value put back, the JSON written again)
loads as an agent equal to the original: the same digest of every array, tensor, counter and
rng. Any other that loads gives an Agent that is data again (it encodes as a checkpoint would).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import stagerl as rl
from stagerl.checkpoints import CheckpointError, load, save
from stagerl.checkpoints.graph import encode
from stagerl.experiments.registry import configure, names
from stagerl.experiments.registry import get_experiment as load_experiment

sys.path.insert(0, str(Path(__file__).parent))
import resume_runs  # noqa: E402  (the small settings of every named experiment)

_OVERRIDES = {s["experiment"]: s["overrides"] for s in resume_runs.SETUPS.values()}
_FILES = ("manifest.json", "objects.json", "tensors.pt")


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict:
    """A checkpoint of a small agent of every named experiment, 120 env steps into its run
    (trajectories filled, the off-policy learners updated), and the agent's digest."""
    directory = tmp_path_factory.mktemp("originals")
    found = {}
    for name in names():
        experiment = load_experiment(name)
        config = configure(name, steps=400, **_OVERRIDES.get(name, {}))
        torch.manual_seed(0)
        env = experiment.make_env(config, 0)
        agent = experiment.make_agent(config, env, 0, torch.device("cpu"))
        rl.run(agent, env, rl.StopAfterNSteps(120, progress=False))
        path = save(agent, directory / name)
        found[name] = (path, resume_runs.state_digest(load(path)))
    return found


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """An empty working directory watched for files, and the directories examples go to."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "cwd").mkdir()
    previous = os.getcwd()
    os.chdir(root / "cwd")
    yield root, itertools.count()
    os.chdir(previous)


def _listing(root: Path) -> list:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _recompute(path: Path) -> None:
    """Record the sizes and checksums of objects.json and tensors.pt in the manifest (as the
    author of a crafted file would)."""
    manifest = json.loads((path / "manifest.json").read_text())
    for name in ("objects.json", "tensors.pt"):
        data = (path / name).read_bytes()
        manifest["files"][name].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (path / "manifest.json").write_text(json.dumps(manifest))


def _copy(source: Path, workspace) -> Path:
    root, counter = workspace
    path = root / f"example-{next(counter)}"
    shutil.copytree(source, path)
    return path


def _check_load(path: Path, workspace, original_digest: str | None) -> None:
    """Load ``path``: an Agent or a CheckpointError; no new file anywhere under the workspace
    but the checkpoint itself, no new module."""
    root, _ = workspace
    files, modules = _listing(root), set(sys.modules)
    try:
        loaded = load(path)
    except CheckpointError as error:
        assert "\n" not in str(error)
        event("refused: " + str(error).split(": ", 1)[-1][:40])
        loaded = None
    else:
        event("loaded")
    assert set(sys.modules) == modules, sorted(set(sys.modules) - modules)
    assert _listing(root) == files
    if loaded is not None:
        assert isinstance(loaded, rl.Agent), type(loaded)
        if original_digest is not None:
            assert resume_runs.state_digest(loaded) == original_digest
        else:
            try:
                encode(loaded)  # the agent is data: it encodes as a checkpoint would
            except CheckpointError:
                pass
    shutil.rmtree(path)


# ---- random edits of the object tree ------------------------------------------------------------

_NAMES = ["somemodule:X-v0", "somemodule.X", "os.system", "builtins.eval", "builtins.object",
          "stagerl.envs.gym.GymEnv", "stagerl.envs.gym.gymnasium", "stagerl.cli._Parser",
          "torch.tanh", "torch.load", "numpy.float32", "<f8", "|O8", "<U999999999", "write_text",
          "unlink", "append", "validate", "__class__", "__init__", "0", "1", "999999"]
_NODES = [
    {"list": []}, {"ref": 0}, {"ref": 10**6}, {"obj": "stagerl.envs.gym.GymEnv"},
    {"class": "stagerl.envs.gym.GymEnv"}, {"function": "time.time"},
    {"method": "unlink", "self": {"path": "victim"}},
    {"method": "write_text", "self": {"path": "victim"}},
    {"objects": [], "shape": [10**6, 10**6]}, {"array": "0", "dtype": "<f8", "shape": [10**9]},
    {"scalar": 10**6, "dtype": "|i1"}, {"scalar": 1e300, "dtype": "<f2"},
    {"seed_sequence": {"dict": {"entropy": 1, "spawn_key": {"tuple": []}, "pool_size": 10**9,
                                "n_children_spawned": 0}}},
    {"call": "stagerl.policies.agent.Agent", "args": {"tuple": []}},
    {"call": "stagerl.envs.gym.GymEnv", "args": {"tuple": ["somemodule:X-v0"]}},
    {"defaultdict": {}, "factory": {"class": "stagerl.envs.gym.GymEnv"}},
    {"obj": "gymnasium.envs.registration.EnvSpec", "state": {"dict": {
        "id": "somemodule:X-v0", "entry_point": "somemodule:X"}}},
    {"bit_generator": "PCG64", "state": {"dict": {}}, "seed_seq": None},
    {"torch_generator": "xla", "state": "0"}, {"device": "xla:0"}, {"tensor": "999"},
    {"float": "1e999"}, {"bytes": "!!"}, {"range": [0, 10**18, 1]}, {"deque": [], "maxlen": -1},
]
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
    | st.sampled_from(_NAMES),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["list", "dict", "obj", "state", "id", "ref", "tuple", "array"])
        | st.text(max_size=6), inner, max_size=3),
    max_leaves=6)
_values = st.one_of(_json_values, st.sampled_from(_NODES))


def _locations(tree) -> list:
    """``(container, key)`` of every value in the JSON tree, in a fixed order."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        items = node.items() if type(node) is dict else enumerate(node) if type(node) is list \
            else ()
        for key, child in items:
            found.append((node, key))
            stack.append(child)
    return found


@st.composite
def _edits(draw):
    """``(kind, index, other index, value, key)``: one edit of the tree."""
    kind = draw(st.sampled_from(["replace", "replace", "delete", "rename", "insert", "swap",
                                 "same"]))
    return (kind, draw(st.integers(0, 10**9)), draw(st.integers(0, 10**9)), draw(_values),
            draw(st.sampled_from(_NAMES) | st.text(max_size=8)))


def _apply(tree, edit) -> bool:
    """Apply ``edit`` to ``tree`` in place; whether the data stayed the same."""
    kind, i, j, value, key = edit
    places = _locations(tree)
    container, at = places[i % len(places)]
    if kind == "same":
        container[at] = json.loads(json.dumps(container[at]))
        return True
    if kind == "replace":
        container[at] = value
    elif kind == "delete" and type(container) is dict:
        del container[at]
    elif kind == "rename" and type(container) is dict:
        container[key] = container.pop(at)
    elif kind == "insert" and type(container) is dict:
        container[key] = value
    elif kind == "swap":
        other, where = places[j % len(places)]
        container[at], other[where] = other[where], container[at]
    else:
        container[at] = value
    return False


FUZZ = settings(max_examples=240, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(name=st.sampled_from(sorted(_OVERRIDES) + ["tabular-q-random-walk"]),
       edits=st.lists(_edits(), min_size=1, max_size=3))
def test_an_edited_object_tree_loads_as_an_agent_or_is_refused(originals, workspace, name,
                                                                edits):
    source, digest = originals[name]
    path = _copy(source, workspace)
    tree = json.loads((path / "objects.json").read_text())
    unchanged = all([_apply(tree, edit) for edit in edits])
    (path / "objects.json").write_text(json.dumps(tree, indent=1 if unchanged else None))
    _recompute(path)
    _check_load(path, workspace, digest if unchanged else None)


_MANIFEST_FIELDS = ["format", "format_version", "stagerl_version", "kind", "summary",
                    "hyper_parameters", "info", "types", "versions", "files", "created"]


@settings(FUZZ, max_examples=80)
@given(name=st.sampled_from(["dqn-cartpole", "ppo-cartpole", "sac-pendulum"]),
       field=st.sampled_from(_MANIFEST_FIELDS), value=_values)
def test_an_edited_manifest_loads_as_an_agent_or_is_refused(originals, workspace, name, field,
                                                            value):
    source, _ = originals[name]
    path = _copy(source, workspace)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest[field] = value
    (path / "manifest.json").write_text(json.dumps(manifest))
    _check_load(path, workspace, None)


# ---- truncations and swapped files ----------------------------------------------------------

@settings(FUZZ, max_examples=60)
@given(name=st.sampled_from(sorted(_OVERRIDES)), file=st.sampled_from(_FILES),
       fraction=st.floats(0, 1, exclude_max=True), recompute=st.booleans())
def test_a_truncated_file_is_refused(originals, workspace, name, file, fraction, recompute):
    source, _ = originals[name]
    path = _copy(source, workspace)
    data = (path / file).read_bytes()
    (path / file).write_bytes(data[:int(len(data) * fraction)])
    if recompute and file != "manifest.json":
        _recompute(path)
    with pytest.raises(CheckpointError):
        load(path)
    _check_load(path, workspace, None)


@settings(FUZZ, max_examples=60)
@given(pair=st.permutations(sorted(_OVERRIDES)), files=st.sampled_from(
    [("objects.json",), ("tensors.pt",), ("objects.json", "tensors.pt"), ("manifest.json",)]),
    recompute=st.booleans())
def test_files_swapped_between_algorithms_load_as_an_agent_or_are_refused(
        originals, workspace, pair, files, recompute):
    (first, _), (second, _) = originals[pair[0]], originals[pair[1]]
    path = _copy(first, workspace)
    for file in files:
        shutil.copyfile(second / file, path / file)
    if recompute and files != ("manifest.json",):
        _recompute(path)
    _check_load(path, workspace, None)
