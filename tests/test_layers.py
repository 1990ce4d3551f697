"""The import graph: no module imports one that imports it back, and layers point one way.

Every import counts, also one inside a function. The layers, lowest first (a module may import
its own package and the layers below it; siblings on one layer never import each other):

    trajectories            experience storage, never imports stagerl
    stagerl.utils           returns, distributions, devices, networks
    stagerl.core            the loop and the interfaces it is defined over (Policy, Env,
                            VectorEnv, Hook, Stage, dispatch, hooks, conditions, episodes)
    stagerl.envs | stagerl.policies | stagerl.logging
    stagerl.checkpoints     saving and loading any of the above as data
    stagerl                 the public API (stagerl/__init__.py)
    stagerl.algorithms
    stagerl.distributed     rollout workers on Ray and the learner they feed
    stagerl.experiments
    stagerl.cli
    stagerl.__main__        python -m stagerl
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = [
    ["trajectories"],
    ["stagerl.utils"],
    ["stagerl.core"],
    ["stagerl.envs", "stagerl.policies", "stagerl.logging"],
    ["stagerl.checkpoints"],
    ["stagerl"],
    ["stagerl.algorithms"],
    ["stagerl.distributed"],
    ["stagerl.experiments"],
    ["stagerl.cli"],
    ["stagerl.__main__"],
]


def _modules() -> dict[str, Path]:
    found = {}
    for package in ("stagerl", "trajectories"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> tuple[int, str]:
    best = None
    for rank, layer in enumerate(LAYERS):
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > len(best[1]):
                    best = (rank, prefix)
    assert best is not None, f"{module} is in no layer; add it to LAYERS in {__file__}"
    return best


def test_no_module_imports_one_that_imports_it_back():
    graph = _graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert not cycles, f"modules that import each other (directly or round about): {cycles}"


def test_every_import_points_down_the_layers_or_stays_in_its_package():
    upward = []
    for module, targets in _graph().items():
        rank, layer = _layer(module)
        for target in targets:
            target_rank, target_layer = _layer(target)
            if target_layer == layer:
                continue  # inside one package: only cycles are forbidden there
            if target_rank >= rank:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that point up or sideways:\n" + "\n".join(sorted(upward))


def test_the_known_wrong_ways_are_gone():
    graph = _graph()
    assert not any(t.startswith("stagerl") for t in graph["trajectories.trajectory"])
    assert "stagerl.policies.agent" not in graph["stagerl.core.stage_calls"]
    assert not any(t.startswith("stagerl.policies") for m, ts in graph.items()
                   if m.startswith("stagerl.envs") for t in ts)
