"""Bad checkpoints: each refused with one line naming what is wrong, nothing written; a file
crafted to name code (an unregistered class, a function, a module) builds and imports nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import stagerl as rl
from stagerl.checkpoints import CheckpointError, find, load, read_manifest, resume, save


def _agent():
    policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(7, 2), gamma=0.9, lr=0.5),
                             rl.EpsilonGreedyExplorer(0.1, decay_steps=300, rng=1))
    agent = rl.Agent(policy, rl.Trajectory(rl.CircularArraySARTSTraces(capacity=32)))
    rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(40, progress=False))
    return agent


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    return save(_agent(), tmp_path / "agent")


def _snapshot(root: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(path, *words, **kwargs) -> str:
    """Load ``path``: refused with one line holding ``words``; no file changed or added."""
    root = Path(path) if Path(path).is_dir() else Path(path).parent
    before = _snapshot(root)
    with pytest.raises(CheckpointError) as error:
        load(path, **kwargs)
    message = str(error.value)
    assert "\n" not in message, message
    for word in words:
        assert word in message, message
    assert _snapshot(root) == before
    return message


def rewrite(path: Path, tree=None, **manifest_changes) -> None:
    """Write ``tree`` as the checkpoint's objects and update the manifest's checksums to match
    (as someone crafting a file would)."""
    manifest = json.loads((path / "manifest.json").read_text())
    if tree is not None:
        data = json.dumps(tree).encode()
        (path / "objects.json").write_bytes(data)
        manifest["files"]["objects.json"] = {"bytes": len(data),
                                             "sha256": hashlib.sha256(data).hexdigest()}
    manifest.update(manifest_changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


# ---- damaged and foreign files ---------------------------------------------------------------


def test_a_truncated_tensor_file_is_refused(checkpoint):
    tensors = checkpoint / "tensors.pt"
    tensors.write_bytes(tensors.read_bytes()[:100])
    _refused(checkpoint, "tensors.pt is truncated: 100 bytes, the manifest records")


def test_a_truncated_objects_file_is_refused(checkpoint):
    objects = checkpoint / "objects.json"
    objects.write_bytes(objects.read_bytes()[:-10])
    _refused(checkpoint, "objects.json is truncated")


def test_a_truncated_manifest_is_refused(checkpoint):
    manifest = checkpoint / "manifest.json"
    manifest.write_text(manifest.read_text()[:40])
    _refused(checkpoint, "manifest.json is not valid JSON", "truncated or damaged")


def test_a_checkpoint_with_a_file_missing_is_refused(checkpoint):
    (checkpoint / "tensors.pt").unlink()
    _refused(checkpoint, "tensors.pt is missing; the checkpoint is incomplete")


def test_a_file_from_a_newer_format_is_refused_with_the_fix(checkpoint):
    rewrite(checkpoint, format_version=2, stagerl_version="9.0")
    _refused(checkpoint, "written in checkpoint format 2 by stagerl 9.0",
             "reads format 1 and older: upgrade stagerl")


def test_objects_edited_by_hand_are_refused_by_their_checksum(checkpoint):
    objects = checkpoint / "objects.json"
    text = objects.read_text()
    edited = text.replace('"lr":0.5', '"lr":0.9')
    assert edited != text and len(edited) == len(text)
    objects.write_text(edited)
    _refused(checkpoint, "objects.json was changed after it was written",
             "SHA-256 does not match")


def test_tensors_edited_by_hand_are_refused_by_their_checksum(checkpoint):
    tensors = checkpoint / "tensors.pt"
    data = bytearray(tensors.read_bytes())
    data[-30] ^= 0xFF
    tensors.write_bytes(bytes(data))
    _refused(checkpoint, "tensors.pt was changed after it was written")


def test_what_is_not_a_checkpoint_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text('{"name": "a package"}')
    _refused(tmp_path / "notes.txt", "notes.txt is not a checkpoint")
    _refused(tmp_path / "missing", "missing does not exist")
    _refused(tmp_path, "no checkpoint at", "no manifest.json", "checkpoints holds step-N")
    _refused(tmp_path / "other", "is not a stagerl checkpoint")


def test_a_tensor_file_that_pickles_objects_is_refused_without_running_them(tmp_path):
    import torch

    path = save(rl.RandomWalk1D(), tmp_path / "env")
    torch.save({"0": torch.zeros(1), "evil": Path("x")}, path / "tensors.pt")
    data = (path / "tensors.pt").read_bytes()
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"]["tensors.pt"].update(bytes=len(data),
                                           sha256=hashlib.sha256(data).hexdigest())
    (path / "manifest.json").write_text(json.dumps(manifest))
    _refused(path, "tensors.pt cannot be read as plain tensors")


# ---- another algorithm or env --------------------------------------------------------------


def test_a_checkpoint_of_another_algorithm_is_refused_before_loading(checkpoint):
    _refused(checkpoint, "holds policy 'QBasedPolicy', expected 'DQNPolicy'; nothing was loaded",
             expect={"policy": "DQNPolicy"})
    assert isinstance(load(checkpoint, expect={"policy": rl.QBasedPolicy}), rl.Agent)
    assert load(checkpoint, expect={"policy": "Policy"})  # a base class matches too


def test_a_checkpoint_of_another_env_or_experiment_is_refused(tmp_path):
    from stagerl.checkpoints import CheckpointSchedule, ResumableExperiment

    agent = rl.Agent(rl.RandomPolicy(rng=0),
                     rl.Trajectory(rl.CircularArraySARTSTraces(capacity=8, env=rl.GymEnv(
                         "CartPole-v1"))))
    ResumableExperiment(agent, rl.GymEnv("CartPole-v1", seed=0),
                        rl.StopAfterNSteps(10, progress=False), None,
                        checkpoints=CheckpointSchedule(5, tmp_path / "checkpoints"),
                        info={"experiment": "random-cartpole"}).run()
    _refused(tmp_path, "holds env_id 'CartPole-v1', expected 'Acrobot-v1'",
             expect={"env_id": "Acrobot-v1"})
    _refused(tmp_path, "holds experiment 'random-cartpole', expected 'dqn-cartpole'",
             expect={"experiment": "dqn-cartpole"})
    with pytest.raises(CheckpointError, match="expected 'Acrobot-v1'"):
        resume(tmp_path, expect={"env_id": "Acrobot-v1"})
    assert find(tmp_path).name == "step-000000010"


def test_resume_refuses_a_checkpoint_of_a_single_object(checkpoint):
    with pytest.raises(CheckpointError, match="saved with save\\(\\), not a whole experiment"):
        resume(checkpoint)


# ---- crafted files ---------------------------------------------------------------------------


def _tree(path: Path) -> dict:
    return json.loads((path / "objects.json").read_text())


@pytest.mark.parametrize("node, words", [
    ({"obj": "os.system"}, ["'os.system'", "not a registered component (no module outside"]),
    ({"call": "subprocess.Popen", "args": {"tuple": ["touch pwned"]}}, ["'subprocess.Popen'"]),
    ({"obj": "stagerl.envs.gym.sys"}, ["'stagerl.envs.gym.sys'"]),
    ({"obj": "stagerl.cli._Parser"}, ["'stagerl.cli._Parser'"]),
    ({"function": "stagerl.experiments.runner.run"}, ["function 'stagerl.experiments.runner.run'"]),
    ({"function": "os.system"}, ["function 'os.system'"]),
    ({"class": "builtins.eval"}, ["class 'builtins.eval'"]),
    ({"method": "__class__", "self": {"obj": "stagerl.envs.random_walk.RandomWalk1D"}},
     ["method name '__class__'"]),
    ({"array": "0", "dtype": "|O8", "shape": [1]}, ["'|O8' is not a plain dtype"]),
    ({"bit_generator": "Evil", "state": None}, ["unknown bit generator 'Evil'"]),
    ({"call": "stagerl.envs.gym.GymEnv", "args": {"tuple": ["LunarLander-v3"]}},
     ["'stagerl.envs.gym.GymEnv' is not rebuilt from arguments"]),
])
def test_a_crafted_file_naming_code_is_refused(checkpoint, node, words):
    rewrite(checkpoint, {"list": [node]})
    _refused(checkpoint, *words)
    assert not Path("pwned").exists()


def test_loading_a_crafted_file_imports_nothing_it_names(checkpoint):
    # In a fresh process: the module the file names must not even be imported.
    rewrite(checkpoint, {"list": [{"obj": "antigravity.Fly"}, {"function": "this.s"}]})
    script = textwrap.dedent(f"""
        import sys
        from stagerl.checkpoints import CheckpointError, load
        try:
            load({str(checkpoint)!r})
        except CheckpointError as error:
            print(error)
        print("antigravity" in sys.modules, "this" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert "'antigravity.Fly', which is not a registered component" in out[0]
    assert out[1] == "False False"


def test_a_crafted_capacity_cannot_put_code_into_a_generated_push(checkpoint, tmp_path):
    tree = _tree(checkpoint)
    text = json.dumps(tree)
    marker = tmp_path / "pwned"
    crafted = f"0 or __import__('os').system('touch {marker}')"
    assert '"_cap":' in text
    at = text.index('"_cap":') + len('"_cap":')
    end = text.index(",", at)
    rewrite(checkpoint, json.loads(text[:at] + json.dumps(crafted) + text[end:]))
    agent = load(checkpoint)  # data: nothing runs while loading
    with pytest.raises(TypeError):
        rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(5, progress=False))
    assert not marker.exists()


def test_a_manifest_is_readable_and_checked_without_the_files(checkpoint):
    manifest = read_manifest(checkpoint)
    assert manifest["kind"] == "object" and manifest["summary"]["type"].endswith("Agent")
