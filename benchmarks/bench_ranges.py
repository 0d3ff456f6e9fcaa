"""Issue 37 benchmark: `vx.result_range` next to isl's own `dim_min`/`dim_max` on the same maps.

Run: .venv/bin/python benchmarks/bench_ranges.py [--repeat 5]

For each map: verifidx's whole `result_range` (translation to isl, isl's extremes, the checked
witness of each, the expression in the sizes) and isl answering the same question from its own
text of the map (`isl.Map(text).range()`, then `dim_min`/`dim_max` of every result over the
sizes as parameters and over the whole size box), measured in the same run, medians of CPU
time. Maps with a product of two variables are verifidx's Z3 search alone (isl cannot express
them). The last column checks that both give the same numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

import islpy as isl  # noqa: E402

import verifidx as vx  # noqa: E402
from verifidx.analysis.ranges import parameters, result_range  # noqa: E402
from verifidx.solve import presburger  # noqa: E402

MAPS = {
    "gather [N<=262144, 8960]": (
        "(d0, d1)<N> -> (d0 * 8960 + d1), domain: d0 in [0, 262143], d1 in [0, 8959], "
        "N in [1, 262144], d0 - N in [-262144, -1]"),
    "pointwise 67108864 * x1": (
        "(d0, d1)<X> -> (d0 * 67108864 + d1), domain: d0 in [0, 1023], d1 in [0, 63], "
        "X in [1, 1024], d0 - X in [-1024, -1]"),
    "tiled 3-d, static": (
        "(d0, d1, d2) -> ((d0 * 128 + d1) floordiv 8, (d1 mod 8) * 16 + d2 floordiv 4, "
        "d2 mod 4), domain: d0 in [0, 511], d1 in [0, 127], d2 in [0, 63]"),
    "reshape with two sizes": (
        "(d0, d1, d2)<M, N> -> (d0 * 4096 + d1 * 64 + d2, (d1 + M) floordiv 3), domain: "
        "d0 in [0, 1023], d1 in [0, 63], d2 in [0, 63], M in [1, 64], N in [1, 1024], "
        "d0 - N in [-1024, -1], d1 - M in [-64, -1]"),
    "constrained sum": (
        "(d0, d1)[s0] -> (d0 + d1 * 8 + s0), domain: d0 in [0, 7], d1 in [0, 1023], "
        "s0 in [0, 3], d0 + d1 * 8 in [0, 8191]"),
    "d0 * N (Z3 only)": (
        "(d0)<N> -> (d0 * N), domain: d0 in [0, 65535], N in [1, 65536], "
        "d0 - N in [-65536, -1]"),
}


def _cpu(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out


def _isl_extremes(text: str, results: int) -> list[tuple[int, int]]:
    """isl alone: its own map text, extremes per result over every parameter value."""
    rng = isl.Map(text).range()
    n = rng.dim(isl.dim_type.param)
    flat = rng.move_dims(isl.dim_type.set, rng.dim(isl.dim_type.set), isl.dim_type.param, 0, n)
    out = []
    for i in range(results):
        rng.dim_min(i), rng.dim_max(i)  # the per-size functions, as verifidx asks for them
        lo = flat.dim_min(i).get_pieces()[0][1].get_constant_val().to_python()
        hi = flat.dim_max(i).get_pieces()[0][1].get_constant_val().to_python()
        out.append((lo, hi))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = [("map", "results", "method", "verifidx ms", "isl ms", "ratio", "same")]
    for name, text in MAPS.items():
        m = vx.parse_map(text)
        ours_s, ours = _cpu(lambda m=m: result_range(m), args.repeat)
        numbers = [(r.low.value, r.high.value) for r in ours]  # type: ignore[attr-defined]
        method = ",".join(sorted({r.method for r in ours}))  # type: ignore[attr-defined]
        rel = presburger.run(lambda m=m: presburger.isl_map(m, parameters(m)))
        if rel is None:
            isl_cell, ratio, same = "-", "-", "-"
        else:
            isl_text = str(rel)
            isl_s, theirs = _cpu(lambda t=isl_text, k=m.num_results: _isl_extremes(t, k),
                                 args.repeat)
            isl_cell, ratio = f"{isl_s * 1e3:.2f}", f"{ours_s / isl_s:.1f}x"
            same = "yes" if theirs == numbers else f"NO {theirs}"
        rows.append((name, str(m.num_results), method, f"{ours_s * 1e3:.2f}", isl_cell, ratio,
                     same))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    for k, r in enumerate(rows):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
        if k == 0:
            print("-+-".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
