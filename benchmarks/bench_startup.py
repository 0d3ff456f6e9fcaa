"""Issue 25 benchmark: what one question costs a fresh process, next to isl answering it.

Run: .venv/bin/python benchmarks/bench_startup.py [--repeat 7] [--source DIR]

Whole processes, in turn within every round (CPU time from each child's rusage, wall time
beside it, medians and spread over the rounds):

- `python -c "import verifidx"`, and the CPU time of the import alone as the child measures it;
- `verifidx simplify MAP` end to end (`python -m verifidx.cli simplify MAP`);
- isl's whole-process query: python imports islpy, parses the same map and simplifies it
  (`coalesce`), and prints it.

Targets (issue 25): the import at most a quarter of what it was (0.45 s CPU), `verifidx
simplify` at most twice isl's process. `--source DIR` runs the verifidx found in DIR (another
checkout), for before/after comparisons on the same machine state.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from common import Timing, fmt_us, run_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MAP = "(d0, d1) -> (d0 * 4 + d1 floordiv 8, d1 mod 8), domain: d0 in [0, 15], d1 in [0, 31]"
ISL_MAP = ("{ [d0, d1] -> [4d0 + floor(d1/8), d1 mod 8] : 0 <= d0 <= 15 and 0 <= d1 <= 31 }")
IMPORT = ("import time\nt = time.process_time()\nimport verifidx\n"
          "print(time.process_time() - t)")
ISL = f"import islpy as isl\nprint(isl.Map({ISL_MAP!r}).coalesce())"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--source", default=str(ROOT), help="the checkout whose verifidx runs")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=args.source)
    py = sys.executable
    runs = {"import verifidx": [py, "-c", IMPORT],
            "verifidx simplify MAP": [py, "-m", "verifidx.cli", "simplify", MAP],
            "isl: import, parse, coalesce, print": [py, "-c", ISL]}
    timings = {name: Timing() for name in runs}
    inside: list[float] = []
    for argv in runs.values():  # once, unmeasured: bytecode caches, disk
        run_process(argv, Timing(), env, args.source)
    for _ in range(args.repeat):
        for name, argv in runs.items():
            code, out, _ = run_process(argv, timings[name], env, args.source)
            if code != 0:
                raise SystemExit(f"{name} failed (exit {code})")
            if name == "import verifidx":
                inside.append(float(out.split()[-1]))
    print(f"whole processes, {args.repeat} rounds, verifidx from {args.source}")
    for name, t in timings.items():
        print(f"  {name:38s} {t.text()}, peak {t.peak_kib // 1024} MiB", flush=True)
    print(f"  {'import verifidx, inside the process':38s} {fmt_us(statistics.median(inside))} "
          f"cpu (target <= {fmt_us(0.45 / 4)})")
    isl = timings["isl: import, parse, coalesce, print"].median_cpu
    simplify = timings["verifidx simplify MAP"].median_cpu
    print(f"  verifidx simplify / isl process: {simplify / isl:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
