"""Issue 2 benchmark: parse+print, compose, interval evaluation and Z3 equality on the conformance
maps, with islpy (parse+print, equality) as the peer when it is installed.

Run: .venv/bin/python benchmarks/bench_maps.py
Targets: parse+print of a typical map under 100 us; equality of two range-free maps under 20 ms.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fmt_us, median_seconds, print_table  # noqa: E402
from isl_peer import isl, isl_text  # noqa: E402

from verifidx import compose, parse_map  # noqa: E402
from verifidx.equality import equal as vx_equal  # noqa: E402
from verifidx.expr import Add, Const, Mul  # noqa: E402
from verifidx.smt import equal  # noqa: E402
from verifidx.syntax import print_map  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def conformance_maps() -> list[str]:
    path = ROOT.parent / "shared" / "conformance" / "xla" / "cases.json"
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


def main() -> None:
    texts = conformance_maps()
    maps = [parse_map(t) for t in texts]
    rows = []

    pp = [median_seconds(lambda t=t: print_map(parse_map(t)), repeat=5, number=20) for t in texts]
    isl_pp = None
    if isl is not None:
        isl_texts = [s for s in (isl_text(m) for m in maps) if s]
        isl_pp = statistics.median(
            median_seconds(lambda s=s: str(isl.Map(s)), repeat=5, number=20) for s in isl_texts)
    rows.append(["parse + print", str(len(texts)), fmt_us(statistics.median(pp)), fmt_us(isl_pp),
                 "< 100 us"])

    pairs = [(m, m) for m in maps if m.num_results == m.num_dims and not m.is_known_empty]
    comp = [median_seconds(lambda a=a, b=b: compose(a, b), number=20) for a, b in pairs]
    rows.append(["compose (m with itself)", str(len(pairs)), fmt_us(statistics.median(comp)),
                 "", ""])

    ranges = [median_seconds(lambda m=m: [m.range_of(r) for r in m.results], number=50)
              for m in maps if not m.is_known_empty]
    rows.append(["interval evaluation", str(len(ranges)), fmt_us(statistics.median(ranges)),
                 "", ""])

    free = [m for m in maps if m.num_range_vars == 0 and not m.is_known_empty and m.results]
    eq = []
    for m in free:
        other = rewritten(m)
        assert equal(m, other).holds is True
        eq.append(median_seconds(lambda m=m, o=other: equal(m, o), repeat=3))
    isl_eq = None
    if isl is not None:
        isl_pairs = [(isl_text(m), isl_text(rewritten(m))) for m in free]
        isl_eq = statistics.median(
            median_seconds(lambda a=a, b=b: isl.Map(a).is_equal(isl.Map(b)), repeat=3)
            for a, b in isl_pairs if a and b)
    rows.append(["Z3 equality, range-free", str(len(free)), fmt_us(statistics.median(eq)),
                 fmt_us(isl_eq), "< 20 ms"])
    same = [(m, rewritten(m)) for m in free]
    cheap = [median_seconds(lambda a=a, b=b: vx_equal(a, b), repeat=3) for a, b in same]
    rows.append(["vx.equal (cheap first), range-free", str(len(free)),
                 fmt_us(statistics.median(cheap)), fmt_us(isl_eq), "< isl"])
    # a pair that differs only after evaluation: canonical forms differ, so the decision is
    # enumeration (small boxes) or Z3
    shifted = [(m, m.replace(results=tuple(Add((r, Const(0 if i else 1)))
                                           for i, r in enumerate(m.results)))) for m in free]
    differ = [median_seconds(lambda a=a, b=b: vx_equal(a, b), repeat=3) for a, b in shifted]
    isl_differ = None
    if isl is not None:
        isl_pairs2 = [(isl_text(a), isl_text(b)) for a, b in shifted]
        isl_differ = statistics.median(
            median_seconds(lambda a=a, b=b: isl.Map(a).is_equal(isl.Map(b)), repeat=3)
            for a, b in isl_pairs2 if a and b)
    rows.append(["vx.equal, maps that differ", str(len(shifted)),
                 fmt_us(statistics.median(differ)), fmt_us(isl_differ), "< isl"])

    print(f"verifidx map layer on {len(texts)} conformance maps (medians per map)")
    print_table(["operation", "maps", "verifidx", "islpy (peer)", "target"], rows)
    if isl is None:
        print("islpy is not installed: peer column n/a (pip install islpy)")


if __name__ == "__main__":
    main()
