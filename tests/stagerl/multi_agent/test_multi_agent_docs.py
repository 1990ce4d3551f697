"""docs/multi_agent.md's Python blocks run as written (one namespace for the page), and the
example scripts and the learning benchmark run (the page's command lines are rows of
tests/test_docs_commands.py)."""

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
    assert printed[2] == "[1. 0. 0. 0.] 1.0"  # FlattenStates, a scored game
    assert printed[3] == "[ 0. -1.] [False  True]"
    assert printed[4:6] == ["True", "2"]
    assert float(printed[6]) > 0.2  # the learner, well above random's -0.30
    assert printed[7:9] == ["True True", "['action', 'legal_actions_mask', "
                                         "'next_legal_actions_mask']"]
    assert printed[9:11] == ["True", "['player_1', 'player_2']"]
    assert printed[11].split() in (["1.0", "-1.0"], ["-1.0", "1.0"], ["0.0", "0.0"])
    assert printed[12] == "False"
    assert len(printed) == 13
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


def test_the_self_play_example_beats_masked_random_in_both_seats():
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "multi_agent_selfplay.py"),
                             "8000"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env={**os.environ, "CI": "1"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("self-play, ") and len(lines) == 3
    for line, seat in zip(lines[1:], ("player_1", "player_2"), strict=True):
        assert line.startswith(f"as {seat} against masked random: win ")
        win = float(line.split("win ")[1].split("%")[0])
        assert win > 50.0  # random against random: 58% as the first player, 29% as the second


def test_the_learning_benchmark_runs_each_experiment_and_prints_its_figures():
    script = ROOT / "benchmarks" / "multi_agent_learning.py"
    result = subprocess.run([sys.executable, str(script), "--seeds", "0", "--steps", "1200",
                             "--games", "10"], capture_output=True, text=True, timeout=300,
                            cwd=ROOT, env={**os.environ, "CI": "1"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[::2]] == [
        "dqn-tictactoe", "ppo-rps", "dqn-tictactoe-selfplay"]
    assert all(line.startswith("  seed 0: 1,200 env steps") for line in lines[1::2])
    assert "player_1 vs evaluation opponent" in lines[5] and "player_2 vs" in lines[5]
    assert "win " in lines[1] and "draw " in lines[1] and "loss " in lines[1]
