"""The Python examples of the algorithm pages run as written (the long trainings shortened):
docs/algorithms/index.md, dqn.md and sac_td3.md (on_policy.md has its own test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stagerl.experiments import torch_threads

DOCS = Path(__file__).resolve().parents[3] / "docs" / "algorithms"
#: The training lengths written in the pages, and the shorter ones the test runs.
SHORTER = {"50_000": "1_500", "20_000": "300"}


@pytest.mark.parametrize("page", ["index.md", "dqn.md", "sac_td3.md"])
def test_the_pages_python_examples_run(page):
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.DOTALL)
    assert blocks
    namespace: dict = {"__name__": page}
    with torch_threads():
        for block in blocks:
            for written, shorter in SHORTER.items():
                block = block.replace(written, shorter)
            exec(compile(block, str(DOCS / page), "exec", dont_inherit=True), namespace)
