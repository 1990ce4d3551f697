"""benchmarks/atari_memory.py at a small size: it fills dqn-atari's replay (frames stored once,
stacked at sample time), prints what it holds and the resident memory, and refuses bad sizes
with one line and exit 2. (At 1M transitions it needs about 7.5 GB: that run is the
benchmark's, not the suite's.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "atari_memory.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env=ENV, timeout=300)


def test_a_small_replay_is_filled_sampled_and_measured():
    done = run("--library", "stagerl", "--transitions", "2500")
    assert done.returncode == 0, done.stderr
    held = re.search(r"stagerl: ([\d,]+) transitions of 4-frame 84x84 stacks held", done.stdout)
    assert held and int(held[1].replace(",", "")) == 2500, done.stdout
    resident = re.search(r"resident (\d+\.\d+) GB", done.stdout)
    assert resident and 0.0 < float(resident[1]) < 7.5, done.stdout


@pytest.mark.parametrize("args", [("--transitions", "0"), ("--limit-gb", "nan"),
                                  ("--limit-gb", "-1")])
def test_bad_sizes_are_one_line_and_exit_2(args):
    done = run("--library", "stagerl", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "must be positive" in done.stderr
