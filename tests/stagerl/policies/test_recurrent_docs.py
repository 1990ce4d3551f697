"""docs/recurrent.md runs as written (one namespace for the page) and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "recurrent.md"


def test_the_python_blocks_run_and_print_what_the_page_says(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 3
    namespace: dict = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] in ("0 (4, 64) ['value']", "1 (4, 64) ['value']")
    assert printed[1] == "[2 3 1] [4 4 0 8 8 8 8 0 0] [ 0 20 50]"
    assert printed[2] == "20 (16,)"
    container = namespace["agent"].trajectory.container
    assert "recurrent_state" in container.keys()
