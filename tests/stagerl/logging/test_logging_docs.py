"""docs/logging.md: its Python examples run as written, one namespace for the whole page."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "logging.md"


def test_the_python_blocks_run(capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")  # no progress bar in the test log
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "docs"}
    for block in blocks:
        if "explorer.epsilon" in block:  # a fragment of an algorithm's code
            continue
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    printed = capsys.readouterr().out
    assert "[('losses/td_loss', 0.5, None)]" in printed
    assert namespace["hook"].best >= 10
