"""docs/checkpoints.md: its Python examples run as written, one namespace for the whole page."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "checkpoints.md"


def test_the_python_blocks_run(capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")  # no progress bar in the test log
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 3
    namespace: dict = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["stagerl.policies.q_based.QBasedPolicy",
                       "['best', 'step-000000100', 'step-000000200', 'step-000000250']",
                       "refused: cannot save Counter: Counter holds extra",
                       "1"]

