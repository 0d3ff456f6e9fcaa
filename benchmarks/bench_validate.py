"""Issue 36 benchmark: validating every pass of XLA's pipeline on the 12-layer transformer of
tools/dump_jax_transformer.py, beside XLA's compile of it, in the same run.

A child process compiles the model with jax (CPU backend) twice: once plain (XLA's compile CPU
time, `lower` excluded) and once with `--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*` (the
snapshots verifidx reads; writing them costs XLA extra). Then this process validates every
snapshot that changed against the one before (`verifidx.clients.xla_dump.validate_dump`, no
execution) and prints CPU seconds (`time.process_time`, this process's threads) side by side,
with the verdicts.

Run: .venv/bin/python benchmarks/bench_validate.py [--layers N] [--timeout-ms MS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

# Imported before the clock starts, as jax is before XLA's compile is timed (the child's
# compile time excludes jax's import and lowering); islpy is loaded by verifidx on first use.
import islpy  # noqa: E402,F401
from common import print_table  # noqa: E402

import verifidx.clients.translation  # noqa: E402,F401
import verifidx.core.vectorised  # noqa: E402,F401  (numpy)
import verifidx.solve.presburger  # noqa: E402,F401
from verifidx.clients.xla_dump import VERDICTS, validate_dump  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
sys.path.insert(0, {tools!r})
import dump_jax_transformer as t
text, lower_s, compile_s = t.compiled({layers})
print(json.dumps({{"compile_cpu": compile_s, "lower_cpu": lower_s, "chars": len(text)}}))
"""


def xla_compile(layers: int, dump: str | None) -> dict[str, float]:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if dump is not None:
        env["XLA_FLAGS"] = f"--xla_dump_to={dump} --xla_dump_hlo_pass_re=.*"
    code = CHILD.format(tools=str(REPO / "tools"), layers=layers)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--timeout-ms", type=int, default=2000)
    args = ap.parse_args()
    plain = xla_compile(args.layers, None)
    with tempfile.TemporaryDirectory(prefix="verifidx-bench-dump-") as dump:
        dumped = xla_compile(args.layers, dump)
        start, wall = time.process_time(), time.perf_counter()
        modules = validate_dump(dump, timeout_ms=args.timeout_ms)
        cpu, wall = time.process_time() - start, time.perf_counter() - wall
    model = [m for m in modules if "transformer" in m.name] or modules
    rows = []
    for m in model:
        counts = Counter(p.verdict for p in m.passes)
        rows.append([m.name, str(len(m.passes)), *(str(counts.get(v, 0)) for v in VERDICTS),
                     f"{sum(p.seconds for p in m.passes):.2f}"])
    print_table(["module", "passes", *VERDICTS, "verifidx CPU s"], rows)
    print()
    slow = sorted((p for m in model for p in m.passes), key=lambda p: -p.seconds)[:5]
    print_table(["slowest passes", "verdict", "CPU s"],
                [[p.name, p.verdict, f"{p.seconds:.2f}"] for p in slow])
    print()
    unknown = Counter(p.reason or next((q.reason for q in p.validation.pairs
                                        if q.verdict == "unknown"), "")
                      for m in model for p in m.passes if p.verdict == "unknown")
    for reason, n in unknown.most_common(5):
        print(f"unknown x{n}: {reason[:110]}")
    print_table(["measure", "CPU s"], [
        ["XLA compile (jax .compile(), no dump)", f"{plain['compile_cpu']:.2f}"],
        ["XLA compile with the per-pass dump", f"{dumped['compile_cpu']:.2f}"],
        [f"verifidx: every pass of {len(modules)} modules validated", f"{cpu:.2f}"],
        ["  (wall)", f"{wall:.2f}"],
    ])
    ratio = cpu / plain["compile_cpu"] if plain["compile_cpu"] else float("inf")
    print(f"verifidx / XLA compile: {ratio:.2f}x CPU")


if __name__ == "__main__":
    main()
