"""A checkpoint on disk: a directory of three files, written atomically, read with checks.

::

    step-000010000/
      manifest.json   what it is: format version, stagerl version, component types, summary,
                      hyper-parameters, and the size and SHA-256 of the two files below
      objects.json    the object tree (types by registered name, numbers, strings, references)
      tensors.pt      every array and tensor: ``torch.save`` of a flat dict of plain tensors,
                      read back with ``torch.load(weights_only=True)``

A checkpoint is written into a temporary directory beside its destination and renamed into
place, so a crash leaves either the old checkpoint or the new one, never half of one. Reading
checks, in this order, that the manifest exists and parses, that it is a stagerl checkpoint of a
format this version reads, that both files exist with the size and checksum it records; each
failure is one line naming the file and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from stagerl.checkpoints.manifest import check_manifest
from stagerl.checkpoints.registry import CheckpointError

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "OBJECTS", "TENSORS", "write", "read",
           "find", "latest", "is_checkpoint", "read_manifest", "step_directories"]

FORMAT = "stagerl-checkpoint"
#: The format this version writes and the newest it reads.
FORMAT_VERSION = 1
MANIFEST, OBJECTS, TENSORS = "manifest.json", "objects.json", "tensors.pt"
#: A manifest larger or deeper than this is not one stagerl wrote.
MAX_MANIFEST_BYTES, MAX_MANIFEST_DEPTH = 1 << 20, 12
_FILES = (MANIFEST, OBJECTS, TENSORS)
_STEP = re.compile(r"step-([0-9]+)")
_CHUNK = 1 << 20


class _HashingWriter:
    """A file that hashes and counts what is written through it (torch.save writes in order)."""

    def __init__(self, file: Any) -> None:
        self.file, self.sha256, self.size = file, hashlib.sha256(), 0

    def write(self, data: Any) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.file.write(data)

    def flush(self) -> None:
        self.file.flush()


def write(path: str | Path, manifest: dict, tree: Any, tensors: dict) -> Path:
    """Write a checkpoint directory at ``path`` (replacing a checkpoint already there, never
    anything else); returns the path."""
    import torch

    path = Path(path)
    if path.exists() and not is_checkpoint(path):
        raise CheckpointError(f"{path} exists and is not a checkpoint; nothing was written "
                              "(choose another path or remove it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        objects = json.dumps(tree, separators=(",", ":"), allow_nan=False).encode()
        (temporary / OBJECTS).write_bytes(objects)
        with open(temporary / TENSORS, "wb") as file:
            writer = _HashingWriter(file)
            torch.save(tensors, writer)
        manifest = {**manifest, "files": {
            OBJECTS: {"bytes": len(objects), "sha256": hashlib.sha256(objects).hexdigest()},
            TENSORS: {"bytes": writer.size, "sha256": writer.sha256.hexdigest(),
                      "tensors": len(tensors)},
        }}
        text = json.dumps(manifest, indent=2, allow_nan=False) + "\n"
        (temporary / MANIFEST).write_text(text)
        _replace(temporary, path)
    finally:
        if temporary.exists():
            _remove_checkpoint(temporary)
    return path


def _replace(new: Path, path: Path) -> None:
    if not path.exists():
        os.replace(new, path)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
    old.rmdir()
    os.replace(path, old)
    os.replace(new, path)
    _remove_checkpoint(old)


def _remove_checkpoint(path: Path) -> None:
    """Remove a checkpoint directory: its own files only, then the directory if empty."""
    for name in _FILES:
        (path / name).unlink(missing_ok=True)
    try:
        path.rmdir()
    except OSError:
        pass  # something else is in there: leave it


def remove(path: Path) -> None:
    """Remove the checkpoint at ``path`` (only if it is one; only its own files)."""
    if is_checkpoint(path):
        _remove_checkpoint(path)


def is_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a directory holding a checkpoint's manifest."""
    return (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> dict:
    """The checked manifest of the checkpoint at ``path`` (files not read)."""
    path = Path(path)
    where = path / MANIFEST
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is a file, not a checkpoint directory"
        raise CheckpointError(f"{path} {what}")
    if not where.is_file():
        raise CheckpointError(f"{path} is not a checkpoint: it has no {MANIFEST}")
    if where.stat().st_size > MAX_MANIFEST_BYTES:
        raise CheckpointError(f"{where} is {where.stat().st_size:,} bytes; a manifest is a few "
                              f"kB (at most {MAX_MANIFEST_BYTES:,}): not a stagerl checkpoint")
    try:
        manifest = parse_json(where.read_bytes(), where, MAX_MANIFEST_DEPTH)
    except CheckpointError as error:
        raise CheckpointError(f"{error}; the file is truncated or damaged") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a stagerl checkpoint: its {MANIFEST} does not say "
                              f"format {FORMAT!r}")
    version = manifest.get("format_version")
    if type(version) is not int or version < 1:
        raise CheckpointError(f"{where} has no valid format_version (got {version!r})")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{path} was written in checkpoint format {version} by stagerl "
            f"{str(manifest.get('stagerl_version', '?'))[:40]}; this stagerl reads format "
            f"{FORMAT_VERSION} and older: upgrade stagerl to load it")
    check_manifest(manifest, where)
    return manifest


def read(path: str | Path, map_location: Any = None) -> tuple[dict, Any, dict]:
    """``(manifest, object tree, tensors)`` of the checkpoint at ``path``, every check passed."""
    import torch

    path = Path(path)
    manifest = read_manifest(path)
    for name in _FILES[1:]:
        _check_file(path / name, manifest["files"][name])
    tree = parse_json((path / OBJECTS).read_bytes(), path / OBJECTS, None)
    _check_zip(path / TENSORS)
    try:
        tensors = torch.load(path / TENSORS, map_location=map_location, weights_only=True)
    except Exception as error:  # weights_only refusals, zip errors, devices missing
        hint = "; it was written on a GPU: pass map_location='cpu'" if "CUDA" in str(error) \
            and map_location is None else ""
        raise CheckpointError(f"{path / TENSORS} cannot be read as plain tensors: "
                              f"{_first_line(error)}{hint}") from None
    if not isinstance(tensors, dict) or not all(
            type(k) is str and type(v) is torch.Tensor for k, v in tensors.items()):
        raise CheckpointError(f"{path / TENSORS} does not hold a flat dict of tensors")
    if len(tensors) != manifest["files"][TENSORS]["tensors"]:
        raise CheckpointError(f"{path / TENSORS} holds {len(tensors)} tensors, the manifest "
                              f"records {manifest['files'][TENSORS]['tensors']}")
    return manifest, tree, tensors


def parse_json(data: bytes, where: Path, max_depth: int | None) -> Any:
    """``data`` as JSON, as stagerl writes it: UTF-8, finite numbers only (no ``NaN`` or
    ``Infinity``, no ``1e999``), nested at most ``max_depth`` levels (the parser's own limit
    otherwise); :class:`CheckpointError` naming ``where`` for anything else."""
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant,
                           parse_float=_finite_float)
    except RecursionError:
        raise CheckpointError(f"{where} nests too deeply to be a stagerl checkpoint") from None
    except (UnicodeDecodeError, ValueError) as error:  # JSONDecodeError is a ValueError
        raise CheckpointError(f"{where} is not valid JSON ({error.__class__.__name__}: "
                              f"{_first_line(error)})") from None
    if max_depth is not None and _depth(value) > max_depth:
        raise CheckpointError(f"{where} nests deeper than {max_depth} levels")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} does not fit a float")
    return value


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if type(item) is dict:
            stack.extend((v, depth + 1) for v in item.values())
        elif type(item) is list:
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _check_zip(where: Path) -> None:
    """The tensor file as ``torch.save`` writes it: a zip archive of stored (uncompressed)
    entries whose sizes add up to no more than the file, so that reading it allocates no more
    than the file holds (a compressed entry could expand to any size)."""
    size = where.stat().st_size
    try:
        with zipfile.ZipFile(where) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise CheckpointError(f"{where} cannot be read as plain tensors: it is not a zip "
                              f"archive of tensors ({_first_line(error)})") from None
    total = 0
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED or entry.file_size != entry.compress_size:
            raise CheckpointError(f"{where} cannot be read as plain tensors: its entry "
                                  f"{entry.filename[:80]!r} is compressed (torch.save stores "
                                  "entries as they are)")
        total += entry.file_size
    if total > size or len(entries) > size // 30 + 1:
        raise CheckpointError(f"{where} cannot be read as plain tensors: its entries add up to "
                              f"more than the file holds")


def _check_file(where: Path, expected: dict) -> None:
    if not where.is_file():
        raise CheckpointError(f"{where} is missing; the checkpoint is incomplete")
    size = where.stat().st_size
    if size != expected.get("bytes"):
        word = "truncated" if isinstance(expected.get("bytes"), int) and \
            size < expected["bytes"] else "changed"
        raise CheckpointError(f"{where} is {word}: {size} bytes, the manifest records "
                              f"{expected.get('bytes')}")
    digest = hashlib.sha256()
    with open(where, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != expected.get("sha256"):
        raise CheckpointError(f"{where} was changed after it was written: its SHA-256 does not "
                              "match the manifest's")


def step_directories(directory: str | Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of the ``step-N`` checkpoints in ``directory``, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for child in directory.iterdir():
        match = _STEP.fullmatch(child.name)
        if match and is_checkpoint(child):
            found.append((int(match.group(1)), child))
    return sorted(found)


def latest(directory: str | Path) -> Path:
    """The newest ``step-N`` checkpoint in ``directory``."""
    found = step_directories(directory)
    if not found:
        raise CheckpointError(f"no checkpoint in {directory} (no step-N directory with a "
                              f"{MANIFEST})")
    return found[-1][1]


def find(path: str | Path) -> Path:
    """The checkpoint ``path`` points to: a checkpoint directory itself, the newest in a
    directory of checkpoints, or the newest in a log directory's ``checkpoints/``."""
    path = Path(path)
    if is_checkpoint(path):
        return path
    if not path.exists():
        raise CheckpointError(f"{path} does not exist")
    if not path.is_dir():
        raise CheckpointError(f"{path} is not a checkpoint (a checkpoint is a directory with a "
                              f"{MANIFEST})")
    for directory in (path, path / "checkpoints"):
        if step_directories(directory):
            return latest(directory)
    raise CheckpointError(f"no checkpoint at {path}: it is not a checkpoint directory (no "
                          f"{MANIFEST}), and neither it nor {path / 'checkpoints'} holds step-N "
                          "checkpoints")


def _first_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:200] or type(error).__name__


def copy_files(source: Path, destination: Path) -> None:
    """Make ``destination`` a copy of the checkpoint ``source`` (hard links where possible),
    atomically, replacing a checkpoint there."""
    if destination.exists() and not is_checkpoint(destination):
        raise CheckpointError(f"{destination} exists and is not a checkpoint; nothing was written")
    temporary = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".tmp",
                                      dir=destination.parent))
    try:
        for name in _FILES:
            try:
                os.link(source / name, temporary / name)
            except OSError:
                shutil.copy2(source / name, temporary / name)
        _replace(temporary, destination)
    finally:
        if temporary.exists():
            _remove_checkpoint(temporary)
