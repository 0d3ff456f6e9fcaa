"""Differential fuzzing of verifidx's map layer, for long local runs.

    .venv/bin/python tools/fuzz_maps.py --cases 200000 --seed 1 [--sized 0.5] [--op simplify]

Random maps (tests/fuzz/fuzz_cases.py; with sizes, tests/fuzz/fuzz_sized.py, a `--sized`
fraction of the cases) go through verifidx and through an independent oracle
(tests/fuzz/fuzz_oracle.py: its own parser, evaluator and enumerator); every answer is compared
by full enumeration, maps with sizes at several assignments of their sizes. Prints progress and
each wrong result as it is found, then the cases run, the count per operation, the wrong
results and the crashes, and a last line `cases: N, wrong: W, crashes: C, unknown: U, seconds:
S`; exit 1 if there is any wrong result or crash. `--jobs 1` (the default) runs in this
process.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))

import fuzz_cases  # noqa: E402
import fuzz_sized  # noqa: E402


def _chunk(args: tuple[int, int, str | None, float]) -> fuzz_cases.Report:
    seed, cases, op, sized = args
    report = fuzz_cases.Report()
    rng = random.Random(seed)
    for _ in range(cases):
        if rng.random() < sized:
            fuzz_sized.check(rng, fuzz_sized.generate(rng), report, op)
        else:
            fuzz_cases.check(rng, fuzz_cases.generate(rng), report, op)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=1_000, help="cases per work unit")
    ap.add_argument("--op", choices=fuzz_cases.OPERATIONS, help="only this operation")
    ap.add_argument("--sized", type=float, default=0.5,
                    help="fraction of the cases that are maps with sizes (0 to 1)")
    args = ap.parse_args(argv)
    units = []
    left, k = args.cases, 0
    while left > 0:
        n = min(args.chunk, left)
        units.append((args.seed * 1_000_003 + k, n, args.op, args.sized))
        left -= n
        k += 1
    total = fuzz_cases.Report()
    start = time.time()
    pool = ProcessPoolExecutor(max_workers=args.jobs) if args.jobs > 1 else None
    reports = pool.map(_chunk, units) if pool else map(_chunk, units)
    for rep in reports:
        total.merge(rep)
        for w in rep.wrong:
            print("WRONG", w, file=sys.stderr, flush=True)
        for c in rep.crashes:
            print("CRASH", c, file=sys.stderr, flush=True)
        print(f"{total.cases} cases, {len(total.wrong)} wrong, {len(total.crashes)} crashes, "
              f"{total.unknown} unknown, {time.time() - start:.0f} s", file=sys.stderr,
              flush=True)
    if pool:
        pool.shutdown()
    print(f"cases run: {total.cases}")
    print(f"wrong results: {len(total.wrong)}")
    print(f"crashes: {len(total.crashes)}")
    for key, n in sorted(total.counts.items()):
        print(f"  {key}: {n}")
    for w in total.wrong:
        print("WRONG", w)
    for c in total.crashes:
        print("CRASH", c)
    print(f"cases: {total.cases}, wrong: {len(total.wrong)}, crashes: {len(total.crashes)}, "
          f"unknown: {total.unknown}, seconds: {time.time() - start:.0f}")
    return 1 if total.wrong or total.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
