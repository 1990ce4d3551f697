"""benchmarks/loop.py runs its three loops and prints its table, with either clock; bad counts
are refused with one line."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load():
    spec = importlib.util.spec_from_file_location("loop_benchmark", ROOT / "benchmarks/loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("clock", ["wall", "cpu"])
def test_the_loop_benchmark_prints_its_table(clock, capsys):
    loop = load()
    assert loop.main(["--steps", "300", "--repeats", "1", "--clock", clock]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"{clock} clock" in out[0] and len(out) == 5
    assert [line.split()[0] for line in out[2:]] == [
        "raw", "run(RandomPolicy(),", "run(Agent(RandomPolicy,"]


@pytest.mark.parametrize("args", [["--steps", "0"], ["--repeats", "-1"]])
def test_bad_counts_are_refused_with_one_line(args, capsys):
    assert load().main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert "must be >= 1" in captured.err
