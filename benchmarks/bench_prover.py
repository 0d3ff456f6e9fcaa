"""Prover benchmark: cold proving of the rule base, warm check, time to a counterexample.

    .venv/bin/python benchmarks/bench_prover.py [--jobs 2] [--mutants]

Targets (issue #3): any file of about 30 rules cold under 40 s with -j 2 on 2 cores, the whole
rule base cold under 60 s, a warm `verifidx check` under 2 s, the median time to a
counterexample under 1 s. Times are wall-clock seconds of the real command lines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the console script's entry point, run in a fresh interpreter
VERIFIDX = [sys.executable, "-c", "import sys; from verifidx.cli import main; sys.exit(main())"]


def timed(args: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    return time.perf_counter() - start, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--mutants", action="store_true", help="also prove the rule base's mutants")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests"))
    from verifidx.rules import load_rule_file, prove_rules
    from verifidx.rules.parser import rule_files

    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as proofs:
        j = str(args.jobs)
        for f in rule_files([REPO / "rules"]):
            n = len(load_rule_file(f))
            secs, code = timed([*VERIFIDX, "prove", "--force", "--no-write", "-j", j,
                                str(f.relative_to(REPO))])
            rows.append((f"cold prove {f.name} ({n} rules, -j {j})", f"{secs:.2f} s",
                         "target < 40 s" if code == 0 else f"exit {code}"))
        secs, code = timed([*VERIFIDX, "prove", "--force", "--proofs", proofs, "-j", j])
        rows.append((f"cold prove rules/ (-j {j})", f"{secs:.2f} s",
                     "target < 60 s" if code == 0 else f"exit {code}"))
        # check re-runs every query: cold with an empty proof cache, then warm
        os.environ["VERIFIDX_CACHE_DIR"] = str(Path(proofs) / "cache")
        secs, code = timed([*VERIFIDX, "check", "--proofs", proofs, "-j", j])
        rows.append((f"cold check rules/ (-j {j}, empty proof cache)", f"{secs:.2f} s",
                     "every query re-run" if code == 0 else f"exit {code}"))
        warm = []
        for _ in range(5):
            secs, code = timed([*VERIFIDX, "check", "--proofs", proofs])
            warm.append(secs)
        rows.append(("warm check rules/ (median of 5)", f"{statistics.median(warm):.2f} s",
                     "target < 2 s" if code == 0 else f"exit {code}"))

    data = REPO / "tests" / "rules_data"
    for name, want in (("good_rules.rules", "proved"), ("bad_rules.rules", "refuted")):
        rules = load_rule_file(data / name)
        start = time.perf_counter()
        results = prove_rules(rules, jobs=args.jobs)
        wall = time.perf_counter() - start
        counts = Counter(r.verdict for r in results)
        rows.append((f"{name}: {len(rules)} rules, -j {args.jobs}", f"{wall:.2f} s",
                     ", ".join(f"{n} {v}" for v, n in counts.most_common())))
        if want == "refuted":
            times = [r.seconds for r in results if r.verdict == "refuted"]
            rows.append(("median time to a counterexample", f"{statistics.median(times):.3f} s",
                         f"max {max(times):.2f} s; target < 1 s"))
        else:
            strengths = Counter(r.strength for r in results if r.verdict == "proved")
            rows.append(("good rules by strength", "",
                         ", ".join(f"{n} {s}" for s, n in strengths.most_common())))

    if args.mutants:
        from test_rules_mutation import all_mutants

        found = all_mutants()
        start = time.perf_counter()
        results = prove_rules([m for _, m in found], jobs=args.jobs)
        counts = Counter((kind, r.verdict) for (kind, _), r in zip(found, results))
        took = f"{time.perf_counter() - start:.1f} s"
        rows.append((f"{len(found)} mutants of the rule base", took,
                     ", ".join(f"{k}/{v} {n}" for (k, v), n in sorted(counts.items()))))

    width = max(len(r[0]) for r in rows)
    for label, value, note in rows:
        print(f"{label:<{width}}  {value:>9}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
