"""Issue 6 benchmark: fusion indexing at scale and on real JAX modules.

Rows: a 1,000-instruction chain of elementwise, transpose and reshape ops; a diamond lattice with
2^20 paths from root to parameter; every fusion of the JAX modules in tests/data/jax (time per
fusion) and each whole module. Each is measured with verifidx's proven deduplication and, as the
peer in the same run, with XLA's textual deduplication (`--textual-dedup`).

Run: .venv/bin/python benchmarks/bench_fusion.py
Targets: chain and lattice under 2 s and 500 MB each; each whole JAX module under 20 s.
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import print_table  # noqa: E402

from verifidx.analysis import computation_maps as cm  # noqa: E402
from verifidx.hlo import parse_hlo  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def chain_hlo(n: int) -> str:
    lines = ["HloModule chain", "ENTRY e {", "  x0 = f32[8,16] parameter(0)"]
    shape = (8, 16)
    for i in range(n - 1):
        kind = i % 3
        if kind == 0:
            lines.append(f"  x{i + 1} = f32[{shape[0]},{shape[1]}] exponential(x{i})")
        elif kind == 1:
            shape = (shape[1], shape[0])
            lines.append(f"  x{i + 1} = f32[{shape[0]},{shape[1]}] transpose(x{i}), "
                         "dimensions={1,0}")
        else:
            shape = (shape[1], shape[0]) if i % 2 else shape
            lines.append(f"  x{i + 1} = f32[{shape[0]},{shape[1]}] reshape(x{i})")
    lines[-1] = "  ROOT" + lines[-1][1:]
    return "\n".join(lines) + "\n}\n"


def diamond_hlo(depth: int) -> str:
    from test_fusion import diamond_hlo as make

    return make(depth)


def measure(text: str, prove: bool) -> tuple[float, float, int]:
    """(seconds, peak MiB, number of maps) for all root->parameter maps of the entry."""
    cm.set_proven_dedup(prove)
    module = parse_hlo(text)
    tracemalloc.start()
    start = time.perf_counter()
    ci = cm.computation_indexing(module, module.entry, "out2in")
    took = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return took, peak, sum(len(v) for v in ci.maps.values())


def jax_rows(prove: bool) -> list[list[str]]:
    cm.set_proven_dedup(prove)
    rows = []
    for path in sorted((ROOT / "tests" / "data" / "jax").glob("*.opt.hlo")):
        module = parse_hlo(path.read_text(), str(path))
        start = time.perf_counter()
        per_fusion = []
        for comp in cm.reported_computations(module):
            t0 = time.perf_counter()
            cm.computation_indexing(module, comp, "out2in")
            per_fusion.append(time.perf_counter() - t0)
        whole = time.perf_counter() - start
        rows.append([path.name, str(len(per_fusion)),
                     f"{statistics.median(per_fusion) * 1e3:.1f} ms", f"{whole:.2f} s"])
    return rows


def main() -> None:
    from verifidx.simplifier.engine import default_simplifier

    default_simplifier()
    rows = []
    for name, text in (("chain of 1000 ops", chain_hlo(1000)),
                       ("diamond, 2^20 paths", diamond_hlo(20))):
        for prove, label in ((True, "verifidx (proven dedup)"), (False, "textual dedup (XLA)")):
            took, peak, n = measure(text, prove)
            rows.append([name, label, f"{took:.2f} s", f"{peak:.0f} MiB", str(n)])
    print("fusion indexing at scale (targets: < 2 s, < 500 MB)")
    print_table(["computation", "mode", "time", "peak memory", "maps"], rows)
    for prove, label in ((True, "verifidx, proven dedup"), (False, "textual dedup (XLA)")):
        print(f"\nJAX modules, {label} (target: each module < 20 s)")
        print_table(["module", "computations", "median per computation", "whole module"],
                    jax_rows(prove))
    cm.set_proven_dedup(True)


if __name__ == "__main__":
    main()
