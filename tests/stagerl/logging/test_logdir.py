"""Log directories: refused when they hold a run, overwritten file by file, named uniquely."""

from __future__ import annotations

import json
import math
import platform

import pytest

from stagerl.logging.logdir import (
    LogdirError,
    check_logdir,
    default_logdir,
    open_logdir,
    versions,
    write_json,
)


def test_a_missing_or_empty_directory_may_be_written(tmp_path):
    assert check_logdir(tmp_path / "new") == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # checking writes nothing
    assert check_logdir(tmp_path) == tmp_path


def test_a_directory_with_anything_in_it_is_refused_and_left_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(LogdirError, match="already exists and is not empty.*--overwrite"):
        open_logdir(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_file_is_refused_even_with_overwrite(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(LogdirError, match="is a file"):
        check_logdir(tmp_path / "f", overwrite=True)


def test_overwrite_removes_the_run_files_and_nothing_else(tmp_path):
    for name in ("config.json", "episodes.csv", "updates.csv", "learning_curve.png",
                 "summary.json", "events.out.tfevents.1.host.1.1", "notes.txt"):
        (tmp_path / name).write_text("old")
    (tmp_path / "checkpoints").mkdir()
    open_logdir(tmp_path, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints", "notes.txt"]


def test_default_logdirs_do_not_collide(tmp_path):
    first = default_logdir("demo", 3, root=tmp_path)
    assert first.parent == tmp_path / "demo" and first.name.endswith("-seed3")
    first.mkdir(parents=True)
    second = default_logdir("demo", 3, root=tmp_path)
    if second.name.startswith(first.name):  # the same second
        assert second.name == first.name + "-2"
    assert second != first


def test_json_is_written_with_plain_values(tmp_path):
    write_json(tmp_path / "x.json", {"a": (1, 2), "b": math.inf, "c": {"d": math.nan}})
    assert json.loads((tmp_path / "x.json").read_text()) == {
        "a": [1, 2], "b": "inf", "c": {"d": "nan"}}


def test_versions_name_the_packages_and_python():
    found = versions()
    assert set(found) == {"stagerl", "torch", "gymnasium", "numpy", "python"}
    assert found["python"] == platform.python_version()
    assert all(isinstance(v, str) for v in found.values())
