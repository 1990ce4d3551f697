"""Writing crafted checkpoints as an attacker would (checksums recomputed) and checking that
loading them is refused with one line and leaves every file as it was."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from stagerl.checkpoints import CheckpointError, load


def rewrite(path: Path, tree=None, objects: bytes | None = None, **manifest_changes) -> None:
    """Write ``tree`` (or the bytes ``objects``) as the checkpoint's objects and update the
    manifest's checksums to match; ``manifest_changes`` replace manifest fields."""
    manifest = json.loads((path / "manifest.json").read_text())
    if tree is not None or objects is not None:
        data = json.dumps(tree).encode() if objects is None else objects
        (path / "objects.json").write_bytes(data)
        manifest["files"]["objects.json"] = {"bytes": len(data),
                                             "sha256": hashlib.sha256(data).hexdigest()}
    manifest.update(manifest_changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


def replace_tensors(path: Path, data: bytes) -> None:
    """``data`` as the tensor file, its size and checksum recorded in the manifest."""
    (path / "tensors.pt").write_bytes(data)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"]["tensors.pt"].update(bytes=len(data),
                                           sha256=hashlib.sha256(data).hexdigest())
    (path / "manifest.json").write_text(json.dumps(manifest))


def with_object(path: Path, node) -> None:
    """The checkpoint of :func:`~stagerl.checkpoints.save` with ``node`` as its object (its
    manifest no longer naming the object's type)."""
    rewrite(path, {"dict": {"state_dict": None, "object": node}}, summary={})


def snapshot(root: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def refused(path, *words, root: Path | None = None, **kwargs) -> str:
    """Load ``path``: refused with one line holding ``words``; no file changed or added under
    ``root`` (default: the checkpoint's directory)."""
    root = root or (Path(path) if Path(path).is_dir() else Path(path).parent)
    before = snapshot(root)
    with pytest.raises(CheckpointError) as error:
        load(path, **kwargs)
    message = str(error.value)
    assert "\n" not in message, message
    for word in words:
        assert word in message, message
    assert snapshot(root) == before
    return message
