"""Issue 15 benchmark: tile propagation for every fusion of a 12-layer transformer compiled by JAX.

benchmarks/data/transformer12.opt.hlo comes from tools/dump_jax_transformer.py (JAX's CPU
backend). For each fusion instruction, its fused computation is analysed (symbolic tiles of every
value) and tiled with the first candidate tiling (powers of two, XLA's candidates) whose sizes are
at most 16 and satisfy the constraints, largest first. Two rows per measure: proofs off
(`prove=False`, the derivation alone) and proofs on (Z3 soundness and exactness for every tile,
the proof cache cleared before each fusion so that nothing is reused across fusions). Fusions
that cannot be tiled are counted with their reason.

Run: .venv/bin/python benchmarks/bench_tiling.py [--module PATH] [--limit N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from common import print_table  # noqa: E402

from verifidx.analysis.tiling import proof  # noqa: E402
from verifidx.analysis.tiling.coalescing import outer_fusions  # noqa: E402
from verifidx.analysis.tiling.propagation import TilingError, analyze, propagate  # noqa: E402
from verifidx.hlo import parse_hlo  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "benchmarks" / "data" / "transformer12.opt.hlo"
MAX_TILE = 16


def choose_tiling(sym) -> tuple[int, ...] | None:  # type: ignore[no-untyped-def]
    dims = sym.contracting_dims + sym.output_dims
    best = None
    for t in sym.valid_tilings():
        if all(x <= MAX_TILE or x == d for x, d in zip(t, dims)) and all(x <= 64 for x in t):
            if best is None or sum(t) > sum(best):
                best = t
    return best


def fusion_computations(module) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(inst.name, inst.called_computations[0]) for inst in outer_fusions(module)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", type=Path, default=DEFAULT)
    ap.add_argument("--limit", type=int, default=0, help="only the first N fusions")
    args = ap.parse_args()
    module = parse_hlo(args.module.read_text(), str(args.module))
    fusions = fusion_computations(module)
    if args.limit:
        fusions = fusions[: args.limit]
    off: list[float] = []
    on: list[float] = []
    verdicts: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    tiles = 0
    for _name, comp in fusions:
        try:
            start = time.perf_counter()
            sym = analyze(module, comp)
            sizes = choose_tiling(sym)
            if sizes is None:
                failures["no valid tiling with sizes <= 16"] += 1
                continue
            propagate(module, comp, sizes, prove=False, analysis=sym)
            off.append(time.perf_counter() - start)
        except TilingError as err:
            failures[str(err).split(": ", 1)[-1].split(":")[0]] += 1
            continue
        proof.clear_cache()
        start = time.perf_counter()
        sym = analyze(module, comp)
        tiled = propagate(module, comp, sizes, prove=True, analysis=sym)
        on.append(time.perf_counter() - start)
        tiles += len(tiled.instructions)
        verdicts.update(f"sound {t.proof.verdict}" for t in tiled.instructions)
        verdicts.update("by enumeration" for t in tiled.instructions
                        for p in (t.proof, t.exactness) if p.message.startswith("exhaustive"))
        verdicts.update(f"exact {t.exactness.verdict}" for t in tiled.instructions)

    def row(label: str, times: list[float]) -> list[str]:
        if not times:
            return [label, "0", "n/a", "n/a", "n/a"]
        return [label, str(len(times)), f"{statistics.median(times) * 1e3:.1f} ms",
                f"{max(times) * 1e3:.1f} ms", f"{sum(times):.2f} s"]

    print(f"module: {args.module.name}, {len(fusions)} fusions, {tiles} tiles")
    print_table(["propagation", "fusions tiled", "median per fusion", "max", "total"],
                [row("proofs off", off), row("proofs on (Z3, cold)", on)])
    print("verdicts:", ", ".join(f"{k}: {v}" for k, v in sorted(verdicts.items())))
    if failures:
        print("not tiled:", ", ".join(f"{k}: {v}" for k, v in failures.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
