"""What the algorithm benchmark sections share: timing, medians and the table they print."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    """``run()``'s result and its wall-clock seconds."""
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


def median_ratio(numerators: list[float], denominators: list[float]) -> float:
    """The median of per-seed ratios (not the ratio of medians)."""
    return statistics.median(a / b for a, b in zip(numerators, denominators, strict=True))


def print_table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    """A plain-text table; floats get one decimal unless small."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"
        return str(value)

    table = [header] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print(f"\n{title}")
    for i, row in enumerate(table):
        print("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in
                        enumerate(zip(row, widths, strict=True))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
