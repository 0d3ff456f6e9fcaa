"""Issue 2 benchmark: parse+print, compose, interval evaluation and equality on the conformance
maps, with islpy (parse+print, equality) as the peer when it is installed.

Run: .venv/bin/python benchmarks/bench_maps.py [--repeat N]
Targets: parse+print of a typical map under 100 us; equality of two range-free maps under 20 ms.

Conformance maps the parser refuses (symbolic divisors, which maps may not hold) are skipped
and counted. Per map, verifidx and isl run in turn in every round (`common.interleaved`); a
row is the median over maps of the per-map medians of CPU time (this thread), with the wall
time beside it. Each row prints as soon as it is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from common import Timing, fmt_us, interleaved  # noqa: E402
from isl_peer import isl, isl_text  # noqa: E402

from verifidx import ParseError, compose, parse_map  # noqa: E402
from verifidx.core.expr import Add, Const, Mul  # noqa: E402
from verifidx.core.syntax import print_map  # noqa: E402
from verifidx.simplifier.equality import equal as vx_equal  # noqa: E402
from verifidx.solve.smt import equal  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def conformance_maps() -> list[str]:
    path = ROOT / "tests" / "data" / "conformance" / "xla" / "cases.json"
    texts: list[str] = []
    for case in json.loads(path.read_text()):
        for t in [case.get("input_map"), *(case.get("input_maps") or {}).values()]:
            if isinstance(t, str) and t.strip().startswith("(") and "operand id" not in t:
                texts.append(t)
    return texts


def rewritten(m):
    """The same map with every result written differently (reversed sum, `* 1`), unfolded."""
    def other(e):
        if isinstance(e, Add):
            return Add(tuple(reversed(e.terms)))
        return Mul(e, Const(1))
    return m.replace(results=tuple(other(r) for r in m.results))


def _row(name: str, cases: list[dict[str, Callable[[], object]]], repeat: int, number: int,
         target: str) -> None:
    """Measure every case (tools interleaved), print the row at once."""
    per_tool: dict[str, list[Timing]] = {}
    for tools in cases:
        for tool, t in interleaved(tools, repeat, number).items():
            per_tool.setdefault(tool, []).append(t)

    def cell(tool: str) -> str:
        ts = per_tool.get(tool)
        if not ts:
            return "n/a"
        cpu = statistics.median(t.median_cpu for t in ts)
        wall = statistics.median(t.median_wall for t in ts)
        spread = statistics.median(t.spread for t in ts)
        return f"{fmt_us(cpu)} cpu ±{spread:.0%} ({fmt_us(wall)} wall)"

    ratio = ""
    if per_tool.get("isl") and per_tool.get("vx"):
        vx = statistics.median(t.median_cpu for t in per_tool["vx"])
        ratio = f"  vx/isl {vx / statistics.median(t.median_cpu for t in per_tool['isl']):.2f}"
    print(f"{name:38s} {len(cases):4d}  vx {cell('vx'):40s} isl {cell('isl'):40s}"
          f"{ratio}  target {target}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="rounds per case")
    args = ap.parse_args()
    texts, maps, refused = [], [], 0
    for t in conformance_maps():
        try:
            maps.append(parse_map(t))
            texts.append(t)
        except ParseError:
            refused += 1
    print(f"verifidx map layer on {len(texts)} conformance maps ({refused} skipped: the parser "
          f"refuses them, e.g. symbolic divisors); median over maps of per-map medians",
          flush=True)
    if isl is None:
        print("islpy is not installed: peer column n/a (pip install islpy)", flush=True)
    r = args.repeat

    def with_isl(tools: dict[str, Callable[[], object]], *isl_texts: str | None
                 ) -> dict[str, Callable[[], object]]:
        if isl is not None and all(isl_texts):
            if len(isl_texts) == 1:
                tools["isl"] = lambda s=isl_texts[0]: str(isl.Map(s))
            else:
                tools["isl"] = lambda a=isl_texts[0], b=isl_texts[1]: \
                    isl.Map(a).is_equal(isl.Map(b))
        return tools

    _row("parse + print", [with_isl({"vx": lambda t=t: print_map(parse_map(t))}, isl_text(m))
                           for t, m in zip(texts, maps)], r, 20, "< 100 us")

    pairs = [m for m in maps if m.num_results == m.num_dims and not m.is_known_empty]
    _row("compose (m with itself)", [{"vx": lambda m=m: compose(m, m)} for m in pairs], r, 20,
         "")
    _row("interval evaluation", [{"vx": lambda m=m: [m.range_of(e) for e in m.results]}
                                 for m in maps if not m.is_known_empty], r, 50, "")

    free = [m for m in maps if m.num_range_vars == 0 and not m.is_known_empty and m.results]
    same = [(m, rewritten(m)) for m in free]
    for a, b in same:
        assert equal(a, b).holds is True
    _row("Z3 equality, range-free", [with_isl({"vx": lambda a=a, b=b: equal(a, b)},
                                              isl_text(a), isl_text(b)) for a, b in same],
         max(3, r // 2), 1, "< 20 ms")
    _row("vx.equal (cheap first), range-free",
         [with_isl({"vx": lambda a=a, b=b: vx_equal(a, b)}, isl_text(a), isl_text(b))
          for a, b in same], max(3, r // 2), 1, "< isl")
    # differs only after evaluation: canonical forms differ, so enumeration or Z3 decides
    shifted = [(m, m.replace(results=tuple(Add((e, Const(0 if i else 1)))
                                           for i, e in enumerate(m.results)))) for m in free]
    _row("vx.equal, maps that differ",
         [with_isl({"vx": lambda a=a, b=b: vx_equal(a, b)}, isl_text(a), isl_text(b))
          for a, b in shifted], max(3, r // 2), 1, "< isl")


if __name__ == "__main__":
    main()
