"""docs/atari.md: its Python blocks run as written (one namespace for the page) and print what the
page says they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "atari.md"


def test_the_python_blocks_run_and_print_what_the_page_says(capsys, monkeypatch):
    pytest.importorskip("ale_py", reason="the page needs ale-py: pip install 'stagerl[atari]'")
    pytest.importorskip("cv2", reason="the page needs opencv: pip install 'stagerl[atari]'")
    pytest.importorskip("envpool", reason="the page needs envpool: pip install 'stagerl[envpool]'")
    monkeypatch.setenv("CI", "1")
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 3
    namespace: dict = {"__name__": "docs"}
    printed = []
    for block in blocks:
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
        printed.append(capsys.readouterr().out.strip())
    assert printed[0] == re.search(r"prints\n\n```\n(.*?)\n```", text, re.DOTALL)[1]
    assert printed[1] == "True True" and "prints `True True`" in text
    assert printed[2] == "GymVectorEnv (8, 84, 84) (8,)"
    assert "prints `GymVectorEnv (8, 84, 84) (8,)`" in text


def test_the_page_is_in_the_site_navigation():
    nav = (DOC.parents[1] / "mkdocs.yml").read_text()
    assert "atari.md" in nav
