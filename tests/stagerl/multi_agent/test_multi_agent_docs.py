"""docs/multi_agent.md runs as written (one namespace for the page), and the example script
learns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "multi_agent.md"


def test_the_python_blocks_run(capsys, monkeypatch):
    pytest.importorskip("pettingzoo")
    monkeypatch.setenv("CI", "1")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 8
    namespace: dict = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    printed = capsys.readouterr().out.splitlines()
    rates = eval(printed[0])  # noqa: S307  (the page's own print of a dict)
    assert abs(rates["win"] - 0.585) < 0.05 and abs(rates["draw"] - 0.127) < 0.04
    assert printed[1] == "[1 1 1 1 0 1 1 1 1]"
    assert printed[2] == "[ 0. -1.] [False  True]"
    assert printed[3:5] == ["True", "2"]
    assert float(printed[5]) > 0.2  # the learner, well above random's -0.30
    assert printed[6].split() in (["1.0", "-1.0"], ["-1.0", "1.0"], ["0.0", "0.0"])
    assert printed[7] == "False"
    assert namespace["shared"].trajectory.container.n_lanes == 2


def test_the_example_script_learns_to_beat_a_random_first_player():
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "multi_agent_tictactoe.py"),
                             "5000"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env={**os.environ, "CI": "1"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    first, last = (float(line.split(":")[-1]) for line in (lines[0], lines[4]))
    assert first < -0.2 and last > 0.2  # random play scores -0.30 as the second player
    assert lines[-1].startswith("win ") and lines[-1].endswith("over 5000 games")
