"""docs/mujoco.md: its Python block runs as written and prints what the page says; the page is in
the site's navigation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "mujoco.md"


def test_the_python_block_runs_and_prints_what_the_page_says(capsys, monkeypatch, tmp_path):
    pytest.importorskip("mujoco", reason="the page needs mujoco: pip install 'stagerl[mujoco]'")
    monkeypatch.chdir(tmp_path)  # the block writes a checkpoint directory where it runs
    text = DOC.read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    exec(compile(block, str(DOC), "exec", dont_inherit=True), {"__name__": "docs"})
    assert capsys.readouterr().out.strip() == "True True" and "prints `True True`" in text
    assert (tmp_path / "hopper-env" / "manifest.json").exists()


def test_the_page_is_in_the_site_navigation():
    nav = (DOC.parents[1] / "mkdocs.yml").read_text()
    assert "mujoco.md" in nav
