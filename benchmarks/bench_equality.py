"""Map equality, verifidx against isl, on generated families of equal and unequal pairs.

Run: .venv/bin/python benchmarks/bench_equality.py [--pairs N] [--repeat R]
Target (issue 25): `vx.equal` at most isl's time on every family, 0 wrong, 0 unknown where isl
decides. Both tools run in this process, interleaved per pair, timed in CPU time
(`time.thread_time`); isl's time includes reading its text (`isl.Map(text)`, the text written
beforehand by `isl_peer.isl_text`), verifidx's includes everything `vx.equal` does. A row shows the
median over pairs of each pair's median, and the spread (10th-90th percentile of the pair
medians) in brackets. Rows print as they finish.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from common import fmt_us  # noqa: E402
from isl_peer import isl, isl_text  # noqa: E402

from verifidx import parse_map  # noqa: E402
from verifidx.core.indexing_map import IndexingMap  # noqa: E402
from verifidx.simplifier.equality import equal as vx_equal  # noqa: E402

Pair = tuple[IndexingMap, IndexingMap, bool]


def _rewritten(rng: random.Random) -> Pair:
    """Range-free: a linear map against the same map through floordiv/mod (equal)."""
    a, b = rng.randint(2, 64), rng.randint(2, 64)
    f = f"(d0, d1) -> (d0 * {b} + d1), domain: d0 in [0, {a - 1}], d1 in [0, {b - 1}]"
    g = (f"(d0, d1) -> ((d0 * {b} + d1) floordiv {b} * {b} + (d0 * {b} + d1) mod {b}), "
         f"domain: d0 in [0, {a - 1}], d1 in [0, {b - 1}]")
    return parse_map(f), parse_map(g), True


def _rewritten_off(rng: random.Random) -> Pair:
    f, g, _ = _rewritten(rng)
    return f, g.replace(results=(g.results[0] + 1,)), False


def _split(rng: random.Random, k: int, m: int, miss: str) -> Pair:
    """(d0)[s0, s1] -> (d0 * k * m + s1 * m + s0) against one range variable over k * m
    values (equal), one value short or shifted by one (unequal)."""
    n = rng.randint(1, 8)
    f = (f"(d0)[s0, s1] -> (d0 * {k * m} + s1 * {m} + s0), domain: d0 in [0, {n - 1}], "
         f"s0 in [0, {m - 1}], s1 in [0, {k - 1}]")
    hi = k * m - 1 - (miss == "short")
    shift = " + 1" if miss == "shift" else ""
    g = f"(d0)[s0] -> (d0 * {k * m} + s0{shift}), domain: d0 in [0, {n - 1}], s0 in [0, {hi}]"
    return parse_map(f), parse_map(g), miss == "none"


def _delinearised(rng: random.Random, k: int, m: int, miss: str) -> Pair:
    """(d0)[s0, s1] -> (d0, s1, s0) against (d0)[s] -> (d0, s floordiv m, s mod m)."""
    n = rng.randint(1, 8)
    f = (f"(d0)[s0, s1] -> (d0, s1, s0), domain: d0 in [0, {n - 1}], s0 in [0, {m - 1}], "
         f"s1 in [0, {k - 1}]")
    hi = k * m - 1 - (miss == "short")
    s = "(s0 + 1)" if miss == "shift" else "s0"
    g = (f"(d0)[s0] -> (d0, {s} floordiv {m}, {s} mod {m}), domain: d0 in [0, {n - 1}], "
         f"s0 in [0, {hi}]")
    return parse_map(f), parse_map(g), miss == "none"


def _boxed(small: bool, miss: str) -> Callable[[random.Random], Pair]:
    def make(rng: random.Random) -> Pair:
        k, m = (rng.randint(2, 8), rng.randint(2, 8)) if small else \
            (rng.randint(32, 96), rng.randint(32, 96))
        build = _split if rng.random() < 0.5 else _delinearised
        return build(rng, k, m, rng.choice(["short", "shift"]) if miss == "any" else miss)
    return make


FAMILIES: list[tuple[str, Callable[[random.Random], Pair]]] = [
    ("range-free, equal", _rewritten),
    ("range-free, unequal", _rewritten_off),
    ("small box (<= 64), equal", _boxed(True, "none")),
    ("small box (<= 64), unequal", _boxed(True, "any")),
    ("large box (1k-9k), equal", _boxed(False, "none")),
    ("large box (1k-9k), unequal", _boxed(False, "any")),
]


def _cpu(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return statistics.median(times)


def _spread(xs: list[float]) -> str:
    if len(xs) < 3:
        return ""
    q = statistics.quantiles(xs, n=10)
    return f"[{fmt_us(q[0])}-{fmt_us(q[-1])}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20, help="pairs per family")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per pair and tool")
    args = ap.parse_args()
    if isl is None:
        sys.exit("islpy is not installed (pip install islpy): no peer to compare with")
    vx_equal(*_rewritten(random.Random(0))[:2])  # load numpy, islpy, the simplifier once
    print(f"{'family':28} {'pairs':>5}  {'verifidx (CPU)':>30}  {'isl (CPU)':>30}  ratio  "
          f"wrong unknown")
    worst = 0.0
    for name, make in FAMILIES:
        rng = random.Random(name)
        ours, theirs, wrong, unknown = [], [], 0, 0
        for _ in range(args.pairs):
            f, g, same = make(rng)
            a, b = isl_text(f), isl_text(g)
            assert a and b
            verdict = vx_equal(f, g).holds
            isl_says = isl.Map(a).is_equal(isl.Map(b))
            assert isl_says == same, (name, str(f), str(g))
            wrong += verdict is not None and verdict != same
            unknown += verdict is None
            for _ in range(args.repeat):  # interleaved, one run each, per pair
                ours.append(_cpu(lambda f=f, g=g: vx_equal(f, g), 1))
                theirs.append(_cpu(lambda a=a, b=b: isl.Map(a).is_equal(isl.Map(b)), 1))
        per_pair = [(statistics.median(ours[i:i + args.repeat]),
                     statistics.median(theirs[i:i + args.repeat]))
                    for i in range(0, len(ours), args.repeat)]
        mine = [p[0] for p in per_pair]
        peer = [p[1] for p in per_pair]
        ratio = statistics.median(mine) / statistics.median(peer)
        worst = max(worst, ratio)
        print(f"{name:28} {len(per_pair):5}  "
              f"{fmt_us(statistics.median(mine)) + ' ' + _spread(mine):>30}  "
              f"{fmt_us(statistics.median(peer)) + ' ' + _spread(peer):>30}  {ratio:5.2f}  "
              f"{wrong:5} {unknown:7}", flush=True)
    print(f"worst ratio verifidx/isl: {worst:.2f} (target <= 1)")


if __name__ == "__main__":
    main()
