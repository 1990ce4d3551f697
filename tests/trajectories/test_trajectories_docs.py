"""docs/trajectories.md: its Python examples run as written, one namespace for the whole page,
and print what the page says they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "trajectories.md"


def test_the_python_blocks_run_and_print_what_the_page_says(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 3
    namespace: dict = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    assert capsys.readouterr().out.splitlines() == [
        "(64, 4) [1. 1. 1. 1.]",
        "('state', 'next_state', 'action', 'reward', 'terminal', 'log_prob', 'value', "
        "'truncated')",
        "hidden 1000",
        "[2] [3] [1, 0]",
    ]


def test_the_refusal_the_page_quotes():
    from trajectories import CircularArrayBuffer, CircularArraySARTSATraces, Traces

    with pytest.raises(ValueError, match=r"trace 'hidden' holds 1000 frames but the "
                                         r"multiplexed traces hold up to 1002"):
        CircularArraySARTSATraces(1000) + Traces(hidden=CircularArrayBuffer(1000, (8,)))
    assert "holds 1000 frames but the multiplexed traces hold up to 1002" in " ".join(
        DOC.read_text().split())
