"""Issue 16 benchmark: graph substitutions of data-movement ops.

Rows:
- proving the shipped substitutions (rules/*.subst) from scratch;
- `verifidx subst generate` at depth 2 over eight ops and ranks 1-3 (counts beside TASO's, and
  how many of the hand-written substitutions it rediscovers);
- `verifidx optimize` on every raw JAX module of tests/data/jax, on 24 generated modules and on a
  12-layer transformer lowered by jax (when jax is installed): median time per module, ops and
  bytes moved before/after. The peer, measured in the same run, is XLA itself (through jax):
  compiling the same module, which runs XLA's own simplification passes.

Run: .venv/bin/python benchmarks/bench_subst.py [--no-generate | --generate-only] [--jobs 2]
Target: optimize under 2 s for the 12-layer model; generation within minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import print_table  # noqa: E402
from hlo_gen import random_module  # noqa: E402

from verifidx.analysis.subst.apply import load_proven, optimize  # noqa: E402
from verifidx.analysis.subst.certificates import prove_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def xla_compile_seconds(text: str) -> float | None:
    try:
        from xla_runner import compile_hlo
    except Exception:  # noqa: BLE001 - jax missing: no peer
        return None
    start = time.perf_counter()
    compile_hlo(text)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-generate", action="store_true")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--jobs", type=int, default=2, help="processes for generation")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    if args.generate_only:
        from verifidx.analysis.subst.generate import DEFAULT_OPS, generate, report
        from verifidx.core.work import Engine

        g = generate(DEFAULT_OPS, 2, compare=[ROOT / "rules"],
                     engine=Engine(processes=args.jobs))
        print("\n".join(line for line in report(g).splitlines() if "new:" not in line))
        return

    start = time.perf_counter()
    proofs = prove_files([ROOT / "rules"], proofs=Path("/tmp/bench_subst_proofs"), force=True,
                         write=True)
    prove_s = time.perf_counter() - start
    proved = sum(r.verdict == "proved" for r in proofs)
    print(f"proving rules/*.subst from scratch: {proved} of {len(proofs)} proved in "
          f"{prove_s:.1f}s")
    subs = load_proven([ROOT / "rules"])

    if not args.no_generate:
        from verifidx.analysis.subst.generate import DEFAULT_OPS, generate, report
        from verifidx.core.work import Engine

        g = generate(DEFAULT_OPS, 2, compare=[ROOT / "rules"],
                     engine=Engine(processes=args.jobs))
        print("\n".join(line for line in report(g).splitlines() if "new:" not in line))

    modules: list[tuple[str, str]] = [(p.name, p.read_text())
                                      for p in sorted((ROOT / "tests/data/jax").glob("*.raw.hlo"))]
    modules += [(f"generated {k}", random_module(k)) for k in range(24)]
    try:
        from xla_runner import transformer_hlo

        big: str | None = transformer_hlo(12)
    except Exception:  # noqa: BLE001 - jax missing: no 12-layer row
        big = None
    if big is not None:
        modules.append(("transformer, 12 layers (jax raw)", big))
    rows = []
    improved = 0
    for name, text in modules:
        times = []
        for _ in range(args.repeat):
            r = optimize(text, name, subs)
            times.append(r.seconds)
        improved += r.ops_after < r.ops_before
        peer = xla_compile_seconds(text)
        rows.append([name, f"{len(text.splitlines())}", f"{r.ops_before} -> {r.ops_after}",
                     f"{r.bytes_before - r.bytes_after}", f"{sum(r.applications.values())}",
                     f"{statistics.median(times) * 1e3:.0f} ms",
                     "n/a" if peer is None else f"{peer * 1e3:.0f} ms"])
    print()
    print_table(["module", "lines", "data-movement ops", "bytes saved", "rewrites",
                 "optimize (median)", "XLA compile (peer)"], rows)
    print(f"\nmodules with data-movement ops removed: {improved} of {len(modules)}")


if __name__ == "__main__":
    main()
