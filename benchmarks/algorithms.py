"""Algorithms side by side with Stable-Baselines3 and hand-written loops: speed and returns.

Each section lives in ``benchmarks/algorithm_runs/<section>.py`` and prints its own table: for
every seed the runs of the same work are interleaved (stagerl, then its peers), and the table
shows medians of env-steps/s, the median of the per-seed speed ratios, and the final
evaluation returns.

    python benchmarks/algorithms.py                       # every section, seeds 0 1 2
    python benchmarks/algorithms.py --only dqn --seeds 0  # one section, one seed
    python benchmarks/algorithms.py --quick               # tiny runs: checks that it all works
    python benchmarks/algorithms.py --only dqn:rl-zoo --seeds 0 1 2 3 4 5 6 7 8 9
                                                          # one part of a section, ten seeds

A section may have parts (``--only dqn:rl-zoo``, ``--only dqn:rl-zoo+cleanrl``); each section's
docstring names its own.

Sections need the ``bench`` extra (``make bench`` installs it).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

# Run as a script, this folder comes first on sys.path, and its trajectories.py benchmark would
# shadow the trajectories package that stagerl imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_RUNS = _HERE / "algorithm_runs"


def sections() -> dict[str, Path]:
    return {p.stem: p for p in sorted(_RUNS.glob("*.py")) if p.stem != "common"}


def load(path: Path):
    sys.path.insert(0, str(_RUNS))  # sections import common.py
    spec = importlib.util.spec_from_file_location(f"algorithm_runs.{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    found = sections()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(found),
                        help=f"comma-separated sections (default all: {', '.join(found)}), "
                             "each optionally with parts: section:part+part")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--quick", action="store_true", help="tiny runs (a smoke check)")
    args = parser.parse_args(argv)
    status = 0
    chosen = []
    for item in args.only.split(","):
        name, _, parts = item.partition(":")
        if name not in found:
            parser.error(f"unknown section {name!r}; the sections are {', '.join(found)}")
        section = load(found[name])
        known = getattr(section, "PARTS", None)
        if parts and known is None:
            parser.error(f"section {name!r} has no parts; use --only {name}")
        wanted = parts.split("+") if parts else None
        for part in wanted or []:
            if part not in known:
                parser.error(f"section {name!r} has no part {part!r}; its parts are "
                             f"{', '.join(known)}")
        chosen.append((section, wanted))
    for section, wanted in chosen:
        options = {} if wanted is None else {"parts": wanted}
        status |= section.main(args.seeds, args.quick, **options) or 0
    return status


if __name__ == "__main__":
    sys.exit(main())
