"""Every examples/*.ipynb runs top to bottom, and is stored without outputs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


@pytest.fixture(autouse=True)
def _quiet_kernel(monkeypatch):
    # The kernel inherits the environment: no progress bars, and a headless-safe matplotlib
    # default in case a notebook does not select the inline backend itself.
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    monkeypatch.setenv("STAGERL_NOTEBOOK_STEPS", "3000")  # a few seconds, not a real training


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    if path.name == "quickstart.ipynb":  # the learning curve is drawn inline
        outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
        assert any("image/png" in o.get("data", {}) for o in outputs)
        assert any("evaluation return" in o.get("text", "") for o in outputs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} is stored with outputs; clear them (jupyter nbconvert "
                "--clear-output --inplace)"
            )


def test_the_notebooks_users_are_pointed_to_are_all_here():
    # The README and the docs send users to these; a rename must not silently drop them.
    assert {p.name for p in NOTEBOOKS} >= {"custom_policy.ipynb", "quickstart.ipynb"}
