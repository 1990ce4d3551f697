"""save and load: any object made of registered components, as a checkpoint directory."""

from __future__ import annotations

import copy
import dataclasses
import importlib.metadata
import platform
import sys
import time
from pathlib import Path
from typing import Any

import stagerl.checkpoints.files as files
from stagerl.checkpoints.graph import encode_parts
from stagerl.checkpoints.rebuild import rebuild
from stagerl.checkpoints.registry import CheckpointError
from stagerl.core.env import Env
from stagerl.core.policy import Policy
from stagerl.policies.agent import Agent

__all__ = ["save", "load", "load_state_dict", "read", "describe", "check_expected",
           "manifest_for", "config_differences", "state_dict_of"]


def save(obj: Any, path: str | Path, include_trajectory: bool = True, *,
         info: dict | None = None) -> Path:
    """Save ``obj`` (an Agent, a policy, an env, a trajectory, a hook: anything made of
    registered components) as a checkpoint directory at ``path``; returns the path.

    The directory holds ``manifest.json`` (format and stagerl versions, the component types,
    the policy's hyper-parameters, checksums), ``objects.json`` (the objects, by registered type
    name) and ``tensors.pt`` (every array and tensor); see ``docs/checkpoints.md``. Nothing in
    it is pickled. An existing checkpoint at ``path`` is replaced atomically; any other existing
    file or directory there is refused.

    Args:
        obj: what to save.
        path: the checkpoint directory to write.
        include_trajectory: for an Agent, ``False`` saves it with an empty copy of its
            trajectory (the policy alone: for evaluation, or for training from a new episode).
        info: plain data (JSON) to keep in the manifest, e.g. the experiment's name and seed.

    Raises:
        CheckpointError: something in ``obj`` is not data (a function, an open file, an
            unregistered class), named by where ``obj`` holds it; or ``path`` is taken.

    Example:
        >>> import tempfile, stagerl as rl
        >>> from stagerl.checkpoints import load, save
        >>> agent = rl.Agent(rl.RandomPolicy(rng=0), rl.Trajectory(
        ...     rl.CircularArraySARTSTraces(capacity=8)))
        >>> _ = rl.run(agent, rl.RandomWalk1D(), rl.StopAfterNSteps(5, progress=False))
        >>> path = save(agent, tempfile.mkdtemp() + "/agent")
        >>> copy = load(path)
        >>> actions = agent.trajectory.container["action"]
        >>> bool((copy.trajectory.container["action"] == actions).all())
        True
    """
    from stagerl.core.run import Experiment

    if isinstance(obj, Experiment):
        raise TypeError("save(experiment) cannot continue exactly from an arbitrary moment; run "
                        "it as a stagerl.checkpoints.ResumableExperiment and pass it checkpoints="
                        "stagerl.checkpoints.CheckpointSchedule(...): it saves at the one point "
                        "that continues exactly")
    if not isinstance(include_trajectory, bool):
        raise TypeError(f"include_trajectory must be a bool, got {include_trajectory!r}")
    if not include_trajectory and isinstance(obj, Agent):
        obj = Agent(obj.policy, emptied(obj.trajectory))
    label = _label(obj)
    encoded = encode_parts([("state_dict", f"{label}.state_dict()", state_dict_of(obj)),
                            ("object", label, obj)])
    manifest = manifest_for("object", describe(obj), encoded.types, info)
    return files.write(path, manifest, encoded.tree, encoded.tensors)


def state_dict_of(obj: Any) -> Any:
    """A policy's (an Agent's) ``state_dict()``, kept beside the objects: plain data that a
    later stagerl, whose classes may have changed, can still read (:func:`load_state_dict`)."""
    return obj.state_dict() if isinstance(obj, Policy) else None


def load(path: str | Path, *, map_location: Any = None, expect: dict | None = None) -> Any:
    """The object saved at ``path`` (for a checkpoint of a whole experiment, its policy: the
    Agent); loading builds only registered components and runs nothing named in the file.

    ``path`` may also be a directory of checkpoints or a log directory: its newest checkpoint
    is loaded. ``map_location`` (``"cpu"`` for a checkpoint written on a GPU) moves the tensors
    there and calls the policy's ``to`` (a torch generator of another kind of device starts a new
    stream, seeded from its saved state).
    ``expect`` names what the checkpoint must hold, checked before anything is built:
    ``{"policy": "DQNPolicy", "env_id": "CartPole-v1", "experiment": "dqn-cartpole"}`` (a
    policy matches its class name or a base class's).

    Raises:
        CheckpointError: a truncated, damaged, edited (checksum), newer-format or foreign file,
            a checkpoint of another policy or env than ``expect`` says, or one naming a class
            that is not registered; the message is one line naming what is wrong.
    """
    manifest, root = read(path, map_location=map_location, expect=expect)
    obj = root["policy"] if manifest.get("kind") == "experiment" else root["object"]
    saved = (manifest.get("summary") or {}).get("type")
    built = _name(Agent if isinstance(obj, Agent) else type(obj))
    if saved is not None and built != saved:
        raise CheckpointError(f"{files.find(path)}: malformed checkpoint (it holds a {built}, "
                              f"its manifest says {saved})")
    return obj


def load_state_dict(path: str | Path, *, map_location: Any = None) -> dict:
    """The ``state_dict()`` of the policy saved at ``path`` (an experiment's too), read from
    plain data only: for a policy built anew, ``policy.load_state_dict(...)``, also when the
    checkpoint was written by another stagerl version whose classes differ.

    Example:
        >>> import tempfile, stagerl as rl
        >>> from stagerl.checkpoints import load_state_dict, save
        >>> policy = rl.QBasedPolicy(rl.TDLearner(rl.TabularQApproximator(3, 2)),
        ...                          rl.EpsilonGreedyExplorer(0.1, rng=0))
        >>> state = load_state_dict(save(policy, tempfile.mkdtemp() + "/q"))
        >>> sorted(state) == sorted(policy.state_dict())
        True
    """
    path = files.find(path)
    manifest, tree, tensors = files.read(path, map_location)
    try:
        node = tree["dict"]["state_dict"]
    except (KeyError, TypeError):
        raise CheckpointError(f"{path}: malformed checkpoint (no state_dict)") from None
    state = _rebuilt(path, manifest, node, tensors, map_location)
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} holds no policy: its state_dict is {state!r}")
    return state


def read(path: str | Path, *, map_location: Any = None,
         expect: dict | None = None) -> tuple[dict, Any]:
    """``(manifest, root)`` of the checkpoint at (or newest under) ``path``: the root is a dict,
    ``{"state_dict", "object"}`` for :func:`save`'s checkpoints, the experiment's parts
    (``policy``, ``env``, ``stop_condition``, ``hook``...) for a ResumableExperiment's."""
    if map_location is not None and not isinstance(map_location, str) and \
            type(map_location).__name__ != "device":
        raise TypeError(f"map_location must be a device name such as 'cpu' or a torch.device, "
                        f"got {map_location!r}")
    path = files.find(path)
    manifest = files.read_manifest(path)
    check_expected(path, manifest, expect)
    manifest, tree, tensors = files.read(path, map_location)
    root = _rebuilt(path, manifest, tree, tensors, map_location)
    if not isinstance(root, dict) or not ({"object"} <= set(root) or {"policy"} <= set(root)):
        raise CheckpointError(f"{path}: malformed checkpoint (no object at its root)")
    if map_location is not None:
        policy = root.get("policy", root.get("object"))
        if isinstance(policy, Policy):  # its to() moves what the file did not: a device
            policy.to(map_location)  # attribute, generators, acting copies
    return manifest, root


def _rebuilt(path: Path, manifest: dict, tree: Any, tensors: dict, map_location: Any) -> Any:
    try:
        return rebuild(tree, tensors, map_location)
    except CheckpointError as error:  # its values shown in part: a crafted one may be huge
        text = str(error) if len(str(error)) <= 400 else str(error)[:397] + "..."
        raise CheckpointError(f"{path}: {text}{_version_note(manifest)}") from None
    except Exception as error:  # anything a malformed tree makes a registered class raise
        raise CheckpointError(f"{path}: malformed checkpoint ({type(error).__name__}: "
                              f"{' '.join(str(error).split())[:200]}){_version_note(manifest)}"
                              ) from None


def _version_note(manifest: dict) -> str:
    written = manifest.get("stagerl_version")
    if written is not None and written != stagerl_version():
        return f" (written by stagerl {written}, this is {stagerl_version()})"
    return ""


def emptied(trajectory: Any) -> Any:
    """A copy of ``trajectory`` with nothing stored (its sampler and controller kept)."""
    empty = copy.deepcopy(trajectory)
    container = getattr(empty, "container", empty)
    clear = getattr(container, "clear", None)
    if not callable(clear):
        raise CheckpointError(f"include_trajectory=False needs a trajectory that can be "
                              f"cleared; {type(container).__name__} has no clear()")
    clear()
    return empty


# -- what the manifest says -------------------------------------------------------------------

def stagerl_version() -> str:
    try:
        return importlib.metadata.version("stagerl")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def manifest_for(kind: str, summary: dict, types: list, info: dict | None) -> dict:
    """The manifest of a checkpoint (its ``files`` entry is added when written)."""
    versions = {"python": platform.python_version()}
    for module in ("numpy", "torch", "gymnasium"):
        if module in sys.modules:
            versions[module] = getattr(sys.modules[module], "__version__", "?")
    return {
        "format": files.FORMAT,
        "format_version": files.FORMAT_VERSION,
        "stagerl_version": stagerl_version(),
        "kind": kind,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "summary": summary,
        "hyper_parameters": summary.pop("hyper_parameters", None),
        "info": jsonable(info) if info is not None else None,
        "types": types,
        "versions": versions,
    }


def describe(obj: Any = None, env: Any = None) -> dict:
    """What the manifest says about ``obj`` (its type; for a policy or an Agent, the inner
    policy's type, its base classes and its ``config`` dataclass) and an env (its type, its
    gymnasium id and number of sub-envs)."""
    summary: dict[str, Any] = {}
    if obj is not None:
        summary["type"] = _name(Agent if isinstance(obj, Agent) else type(obj))
    inner = obj.policy if isinstance(obj, Agent) else obj
    if isinstance(obj, Agent) or _is_policy(obj):
        summary["policy"] = _name(type(inner))
        summary["policy_bases"] = [_name(c) for c in type(inner).__mro__[1:] if c is not object]
        config = getattr(inner, "config", None)
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            summary["hyper_parameters"] = jsonable(dataclasses.asdict(config))
    if env is None and _is_env(obj):
        env = obj
    if env is not None:
        summary["env"] = _name(type(env))
        env_id = env_id_of(env)
        if env_id is not None:
            summary["env_id"] = env_id
        num_envs = getattr(env, "num_envs", None)
        if isinstance(num_envs, int):
            summary["num_envs"] = num_envs
    return summary


def env_id_of(env: Any) -> str | None:
    """The gymnasium id of a stagerl env's gymnasium env, if it has one."""
    spec = getattr(getattr(env, "env", None), "spec", None)
    env_id = getattr(spec, "id", None)
    return env_id if isinstance(env_id, str) else None


def check_expected(path: Path, manifest: dict, expect: dict | None) -> None:
    """Refuse a checkpoint whose summary differs from ``expect`` (one line per first miss)."""
    if not expect:
        return
    if not isinstance(expect, dict):
        raise TypeError(f"expect must be a dict such as {{'policy': 'DQNPolicy'}}, got {expect!r}")
    summary = dict(manifest.get("summary") or {})
    summary.setdefault("kind", manifest.get("kind"))
    info = manifest.get("info") or {}
    if "experiment" in info:
        summary.setdefault("experiment", info["experiment"])
    for key, wanted in expect.items():
        if isinstance(wanted, type):
            wanted = wanted.__name__
        have = summary.get(key)
        if key == "policy":
            names = [have, *summary.get("policy_bases", [])]
            if any(n == wanted or (isinstance(n, str) and n.rsplit(".", 1)[-1] == wanted)
                   for n in names if n is not None):
                continue
            have = have.rsplit(".", 1)[-1] if isinstance(have, str) else have
        elif have == wanted:
            continue
        raise CheckpointError(f"{path} holds {key} {have!r}, expected {wanted!r}; nothing was "
                              "loaded")


def config_differences(saved: dict | None, wanted: dict, ignore: tuple = ()) -> dict:
    """``{key: (saved value, wanted value)}`` for the keys whose values differ between two
    configurations (dicts of hyper-parameters, compared as JSON data: a tuple equals the list
    the manifest holds), leaving out ``ignore``.

    Example:
        >>> config_differences({"lr": 0.5, "net_arch": [64, 64], "steps": 10},
        ...                    {"lr": 0.3, "net_arch": (64, 64), "steps": 20}, ignore=("steps",))
        {'lr': (0.5, 0.3)}
    """
    saved, wanted = jsonable(saved or {}), jsonable(wanted)
    keys = [k for k in dict.fromkeys([*saved, *wanted]) if k not in ignore]
    return {k: (saved.get(k), wanted.get(k)) for k in keys if saved.get(k) != wanted.get(k)}


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (tuples as lists, other objects as their repr)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return repr(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_policy(obj: Any) -> bool:
    return isinstance(obj, Policy)


def _is_env(obj: Any) -> bool:
    return isinstance(obj, Env)


def _label(obj: Any) -> str:
    if isinstance(obj, Agent):
        return "agent"
    return "policy" if _is_policy(obj) else type(obj).__name__
