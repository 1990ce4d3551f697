"""The manifest's fixed schema: each field stagerl writes, with its type; nothing else.

Code reads the manifest before anything else is loaded (the command line takes the experiment,
its seed, its hyper-parameters and the env id from it), so every field is checked here first:
a manifest whose fields have other types or that has fields stagerl never writes is refused
with one line naming the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stagerl.checkpoints.registry import CheckpointError

__all__ = ["check_manifest"]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEXT = ("format", "stagerl_version", "created")
_SUMMARY_TEXT = ("type", "policy", "env", "env_id", "reason", "scored_by")
_SUMMARY_COUNTS = ("num_envs", "env_steps")
_SUMMARY_FLAGS = ("best", "stopped")


def check_manifest(manifest: dict, where: Path) -> None:
    """Refuse a manifest that does not have stagerl's fields with stagerl's types."""
    def refuse(field: str, what: str) -> None:
        raise CheckpointError(f"{where}: {field} {what}; not a manifest stagerl wrote")

    known = {"format", "format_version", "stagerl_version", "kind", "created", "summary",
             "hyper_parameters", "info", "types", "versions", "files"}
    unknown = sorted(k for k in manifest if k not in known)
    if unknown:
        refuse(f"the field {unknown[0][:40]!r}", "is not one stagerl writes")
    for name in _TEXT:
        if name in manifest and not isinstance(manifest[name], str):
            refuse(name, f"must be a string, got {_shown(manifest[name])}")
    if manifest.get("kind") not in ("object", "experiment"):
        refuse("kind", f"must be 'object' or 'experiment', got {_shown(manifest.get('kind'))}")
    for name in ("hyper_parameters", "info"):
        if not isinstance(manifest.get(name), (dict, type(None))):
            refuse(name, f"must be an object or null, got {_shown(manifest[name])}")
    types = manifest.get("types", [])
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        refuse("types", "must be a list of type names")
    versions = manifest.get("versions", {})
    if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
        refuse("versions", "must map packages to version strings")
    _check_summary(manifest.get("summary", {}), refuse)
    _check_files(manifest.get("files"), refuse)


def _check_summary(summary: Any, refuse: Any) -> None:
    if not isinstance(summary, dict):
        refuse("summary", f"must be an object, got {_shown(summary)}")
    for name in _SUMMARY_TEXT:
        if name in summary and not isinstance(summary[name], str):
            refuse(f"summary.{name}", f"must be a string, got {_shown(summary[name])}")
    for name in _SUMMARY_COUNTS:
        value = summary.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            refuse(f"summary.{name}", f"must be a count, got {_shown(value)}")
    for name in _SUMMARY_FLAGS:
        if not isinstance(summary.get(name, False), bool):
            refuse(f"summary.{name}", f"must be true or false, got {_shown(summary[name])}")
    bases = summary.get("policy_bases", [])
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        refuse("summary.policy_bases", "must be a list of class names")
    recent = summary.get("recent_return")
    if recent is not None and (isinstance(recent, bool) or not isinstance(
            recent, (int, float, str))):
        refuse("summary.recent_return", f"must be a number, got {_shown(recent)}")


def _check_files(files: Any, refuse: Any) -> None:
    names = {"objects.json": {"bytes", "sha256"}, "tensors.pt": {"bytes", "sha256", "tensors"}}
    if not isinstance(files, dict) or set(files) != set(names):
        refuse("files", "must list the sizes and checksums of objects.json and tensors.pt")
    for name, keys in names.items():
        entry = files[name]
        if not isinstance(entry, dict) or set(entry) != keys:
            refuse(f"files[{name!r}]", f"must hold {sorted(keys)}")
        for key in keys - {"sha256"}:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                refuse(f"files[{name!r}].{key}", f"must be a count, got {_shown(value)}")
        if not isinstance(entry["sha256"], str) or not _SHA256.fullmatch(entry["sha256"]):
            refuse(f"files[{name!r}].sha256", "must be 64 hex digits")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
