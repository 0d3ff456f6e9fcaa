"""Timing helpers shared by the benchmarks: medians over repeats, a plain-text table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Median wall time of `number` calls, over `repeat` rounds, per call."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def fmt_us(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds >= 1e-2:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
