"""Differential fuzzing of verifidx's map layer, for long local runs.

    .venv/bin/python tools/fuzz_maps.py --cases 200000 --seed 1 [--jobs 2] [--op simplify]

Random maps (tests/fuzz/fuzz_cases.py) go through verifidx and through an independent oracle
(tests/fuzz/fuzz_oracle.py: its own parser, evaluator and enumerator); every answer is compared
by full enumeration. Prints the cases run, the count per operation, the wrong results and the
crashes; exit 1 if there is any wrong result or crash.
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


def _chunk(args: tuple[int, int, str | None]) -> fuzz_cases.Report:
    seed, cases, op = args
    report = fuzz_cases.Report()
    rng = random.Random(seed)
    for _ in range(cases):
        fuzz_cases.check(rng, fuzz_cases.generate(rng), report, op)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=2_000, help="cases per work unit")
    ap.add_argument("--op", choices=fuzz_cases.OPERATIONS, help="only this operation")
    args = ap.parse_args(argv)
    units = []
    left, k = args.cases, 0
    while left > 0:
        n = min(args.chunk, left)
        units.append((args.seed * 1_000_003 + k, n, args.op))
        left -= n
        k += 1
    total = fuzz_cases.Report()
    start = time.time()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for rep in pool.map(_chunk, units):
            total.merge(rep)
            print(f"{total.cases} cases, {len(total.wrong)} wrong, {len(total.crashes)} "
                  f"crashes, {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    print(f"cases run: {total.cases}")
    print(f"wrong results: {len(total.wrong)}")
    print(f"crashes: {len(total.crashes)}")
    for key, n in sorted(total.counts.items()):
        print(f"  {key}: {n}")
    for w in total.wrong:
        print("WRONG", w)
    for c in total.crashes:
        print("CRASH", c)
    return 1 if total.wrong or total.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
