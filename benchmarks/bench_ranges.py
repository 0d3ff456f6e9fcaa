"""Issue 37 benchmark: `vx.result_range` next to isl's own `dim_min`/`dim_max` on the same maps.

Run: .venv/bin/python benchmarks/bench_ranges.py [--repeat 5] [--skip-logs] [--limit N]

For each map: verifidx's whole `result_range` (translation to isl, isl's extremes, the checked
witness of each, the expression in the sizes) and isl answering the same question from its own
text of the map (`isl.Map(text).range()`, then `dim_min`/`dim_max` of every result over the
sizes as parameters and over the whole size box), measured in the same run, medians of CPU
time. Maps with a product of two variables are verifidx's Z3 search alone (isl cannot express
them). The last column checks that both give the same numbers.

Then two tables on real inputs. `range --log` on the committed Inductor corpora: per corpus,
verifidx's check of every record (`clients.widths.record_width`: expression and simplification),
isl's `dim_max` of the same maps (the quasi-affine ones), and Inductor's own
`expr_fits_within_32bit` on the same sympy expressions with the same ranges (loop variables and
sizes as value ranges of a shape environment; torch needed), with the verdicts compared:
`inductor wrong` counts expressions Inductor calls fitting where verifidx has a checked
overflow (it should be 0), `inductor unsure` those it cannot call fitting where verifidx proves
they fit. And `indexing --widths` on the 12-layer transformer (every fusion operand's
and output's offset), next to isl's `dim_max` of the same offset maps.
"""

from __future__ import annotations

import argparse
import json
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


DATA = Path(__file__).resolve().parent / "data"
CORPORA = [Path(__file__).resolve().parents[1] / "tests" / "data" / "inductor" /
           "dynamic_roll_scale.jsonl", DATA / "inductor_static.jsonl",
           DATA / "inductor_dynamic.jsonl"]


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    for k, r in enumerate(rows):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
        if k == 0:
            print("-+-".join("-" * w for w in widths))


def _isl_max(m: vx.IndexingMap) -> tuple[float, int | None]:
    """isl's `dim_max` of result 0 over every size (its own text of the map), CPU seconds."""
    rel = presburger.run(lambda: presburger.isl_map(m, parameters(m)))
    if rel is None:
        return 0.0, None
    text = str(rel)
    t = time.process_time()
    try:
        value = _isl_extremes(text, 1)[0][1]
    except (isl.Error, IndexError):
        value = None
    return time.process_time() - t, value


class _Inductor:
    """Inductor's `expr_fits_within_32bit` under a graph handler whose shape environment has
    the record's ranges (None when torch is not importable)."""

    def __init__(self) -> None:
        import torch  # noqa: F401
        from torch._inductor.sizevars import SizeVarAllocator
        from torch._inductor.utils import expr_fits_within_32bit
        from torch._inductor.virtualized import V
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        self.fits, self.V, self.Allocator, self.ShapeEnv = (expr_fits_within_32bit, V,
                                                          SizeVarAllocator, ShapeEnv)

    def check(self, record: dict) -> tuple[float, bool | None]:  # type: ignore[type-arg]
        from torch.utils._sympy.value_ranges import ValueRanges

        from verifidx.clients.sympy_bridge import parse_text, size_interval

        known = set(record["var_ranges"]) | set(record.get("size_ranges") or {})
        try:
            expr = parse_text(record["expr"], known)
            sizes = {k: size_interval(k, v) for k, v in (record.get("size_ranges") or {}).items()}
        except Exception:  # noqa: BLE001  (a record the bridge does not read)
            return 0.0, None
        env = self.ShapeEnv()
        symbols = {str(s): s for s in expr.free_symbols}
        for name, iv in sizes.items():
            if name in symbols:
                env.var_to_range[symbols[name]] = ValueRanges(iv.lo, iv.hi)
        for name, extent in record["var_ranges"].items():
            if name not in symbols:
                continue
            try:
                hi = int(extent)
            except ValueError:  # an extent in the sizes: its largest value (verifidx's range)
                from verifidx.clients.sympy_bridge import from_sympy

                tree = parse_text(str(extent), set(sizes))
                top = result_range(from_sympy(tree, {}, record["size_ranges"]))[0].high
                if top is None:
                    return 0.0, None
                hi = top.value
            env.var_to_range[symbols[name]] = ValueRanges(0, max(hi - 1, 0))

        class Graph:
            aot_mode = False
            sizevars = self.Allocator(env)

        t = time.process_time()
        with self.V.set_graph_handler(Graph()):  # type: ignore[arg-type]
            try:
                answer: bool | None = bool(self.fits(expr))
            except Exception:  # noqa: BLE001  (Inductor's own check failing is a row too)
                answer = None
        return time.process_time() - t, answer


def _logs(limit: int | None) -> None:
    from verifidx.clients.widths import record_width

    try:
        inductor: _Inductor | None = _Inductor()
    except ImportError:
        inductor = None
    rows = [("corpus", "records", "checked", "overflows", "verifidx s", "isl s", "isl same/read",
             "inductor s", "inductor wrong", "inductor unsure")]
    for path in CORPORA:
        lines = [x for x in path.read_text().splitlines() if x.strip()][:limit]
        ours = theirs = peer = 0.0
        checked = over = same = read = wrong = unsure = compared = 0
        for number, line in enumerate(lines, 1):
            t = time.process_time()
            r = record_width(line, source=str(path), line=number)
            ours += time.process_time() - t
            if r.fit is None:
                continue
            checked += 1
            over += r.verdict == "overflows"
            assert r.fit.checked is not None
            secs, value = _isl_max(r.fit.checked)
            theirs += secs
            high = r.fit.ranges[0].high
            read += value is not None
            same += value is not None and high is not None and high.exact and high.value == value
            if inductor is not None and r.kind == "sympy":
                secs, says = inductor.check(json.loads(line))
                peer += secs
                compared += 1
                wrong += says is True and r.fit.verdict == "overflows"
                unsure += says is not True and r.fit.verdict == "fits"
        rows.append((path.name, str(len(lines)), str(checked), str(over), f"{ours:.2f}",
                     f"{theirs:.2f}", f"{same}/{read}", f"{peer:.2f}" if inductor else "-",
                     str(wrong) if inductor else "-", str(unsure) if inductor else "-"))
    _table(rows)


def _transformer() -> None:
    from verifidx.analysis.widths import module_widths

    module = vx.parse_hlo((DATA / "transformer12.opt.hlo").read_text())
    t = time.process_time()
    w = module_widths(module)
    ours = time.process_time() - t
    theirs, same, quasi = 0.0, 0, 0
    for o in w.operands:
        if o.fit is None or o.fit.checked is None:
            continue
        secs, value = _isl_max(o.fit.checked)
        theirs += secs
        high = o.fit.ranges[0].high
        quasi += value is not None
        same += value is not None and high is not None and high.value == value
    verdicts = {v: sum(o.verdict == v for o in w.operands) for v in ("fits", "overflows",
                                                                     "unknown")}
    _table([("module", "maps (reads, stores)", "fits", "overflows", "unknown", "verifidx s",
             "isl s", "isl same"),
            ("transformer12.opt.hlo", str(len(w.operands)), str(verdicts["fits"]),
             str(verdicts["overflows"]), str(verdicts["unknown"]), f"{ours:.2f}",
             f"{theirs:.2f}", f"{same}/{quasi}")])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-logs", action="store_true", help="only the maps and the transformer")
    ap.add_argument("--limit", type=int, default=None, help="the first N records of each log")
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
    _table(rows)
    print()
    _transformer()
    if not args.skip_logs:
        print()
        _logs(args.limit)


if __name__ == "__main__":
    main()
