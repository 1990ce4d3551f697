"""The trajectories package imports one way: no module imports one that imports it back (also
inside a function), the lane modules import downward only, and nothing imports stagerl or
gymnasium."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANES_ORDER = ["trajectories.lanes.base", "trajectories.lanes.ring_reads",
               "trajectories.lanes.ring_edits", "trajectories.lanes.rings",
               "trajectories.lanes.per_lane", "trajectories.lanes.factory", "trajectories.lanes"]


def graph():
    modules = {}
    for path in (ROOT / "trajectories").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    edges = {}
    for name, path in modules.items():
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    out.add(target)
        edges[name] = out
    return edges


def test_no_module_imports_one_that_imports_it_back():
    edges = graph()

    def reaches(start, goal, seen):
        for nxt in edges[start]:
            if nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen)):
                return True
        return False

    circles = sorted(name for name in edges if reaches(name, name, set()))
    assert not circles, circles


def test_the_lane_modules_import_downward_only():
    edges = graph()
    for i, name in enumerate(LANES_ORDER):
        lanes = {t for t in edges[name] if t.startswith("trajectories.lanes")}
        assert lanes <= set(LANES_ORDER[:i]), (name, lanes)
    assert not any("trajectories" in targets or "trajectories.lanes" in targets
                   for name, targets in edges.items() if name not in ("trajectories",
                                                                      "trajectories.lanes"))


def test_trajectories_imports_neither_gymnasium_nor_stagerl():
    code = ("import sys, trajectories, trajectories.lanes; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('gymnasium', 'stagerl')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
