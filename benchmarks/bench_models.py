"""Issue 25 benchmark: `verifidx indexing` on whole models next to XLA compiling the same
models, whole process against whole process, in the same run.

Run: .venv/bin/python benchmarks/bench_models.py [--layers 1,2,4,8,12,24] [--repeat 1]

The models are the transformer of tools/dump_jax_transformer.py with 1, 2, 4, ... layers
(jax is in the `bench` extra). Per size, each round runs in turn, each as its own process:

- XLA: python builds the model with jax and runs `jax.jit(f).lower(...).compile()`; the
  child reports the CPU time (all its threads) of `lower` and of `compile`, and the parent
  reads the whole child's CPU time from its rusage;
- `verifidx indexing MODEL --json` (deduplication by proof) and, with `--textual-dedup`,
  XLA's textual deduplication: whole-process CPU time, wall time and peak memory.

CPU time is the figure to compare (a shared machine's load shows in wall time); medians over
the rounds, with their spread. Rows print as they are measured, so a killed run keeps its
figures; the growth of verifidx's time with the instruction count closes the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from common import Timing, run_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "dump_jax_transformer.py"


def xla_child(layers: int, out: Path) -> None:
    """In the child: compile the model, write its optimized HLO, print the CPU seconds."""
    sys.path.insert(0, str(TOOL.parent))
    from dump_jax_transformer import compiled  # jax loads here, in the child only

    text, lower, compile_ = compiled(layers)
    out.write_text(text)
    print(json.dumps({"lower": lower, "compile": compile_}))


def instructions(path: Path) -> int:
    from verifidx.hlo import parse_hlo

    module = parse_hlo(path.read_text())
    return sum(len(c.instructions) for c in module.computations.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="1,2,4,8,12,24")
    ap.add_argument("--repeat", type=int, default=1, help="rounds per model")
    ap.add_argument("--no-proven", action="store_true", help="skip proven deduplication")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "verifidx-models"),
                    help="where the models' HLO is written")
    ap.add_argument("--source", default=str(ROOT), help="the checkout whose verifidx runs")
    ap.add_argument("--xla-child", nargs=2, metavar=("LAYERS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.xla_child:
        xla_child(int(args.xla_child[0]), Path(args.xla_child[1]))
        return
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=args.source)
    vx = [sys.executable, "-m", "verifidx.cli", "indexing"]
    modes = {"textual": ["--textual-dedup"]} if args.no_proven else \
        {"proven": [], "textual": ["--textual-dedup"]}
    print(f"{'layers':>6} {'instr':>6}  {'XLA compile cpu':>15} {'XLA process cpu':>15}  "
          + "  ".join(f"{'vx ' + m + ' cpu':>24} {'wall':>8} {'MiB':>5}" for m in modes)
          + "  vx proven / XLA compile", flush=True)
    grown: dict[str, list[tuple[int, float]]] = {m: [] for m in modes}
    for layers in [int(x) for x in args.layers.split(",")]:
        model = folder / f"transformer{layers}.opt.hlo"
        xla, compile_cpu = Timing(), []
        vxt = {m: Timing() for m in modes}
        count = 0
        for _ in range(args.repeat):
            code, out, _ = run_process([sys.executable, __file__, "--xla-child", str(layers),
                                        str(model)], xla, env)
            if code != 0:
                raise SystemExit(f"jax failed to compile the {layers}-layer model")
            compile_cpu.append(json.loads(out.splitlines()[-1])["compile"])
            count = count or instructions(model)
            for m, extra in modes.items():
                code, _, _ = run_process([*vx, str(model), "--json", *extra], vxt[m], env,
                                         args.source)
                if code != 0:
                    raise SystemExit(f"verifidx indexing failed on {model} ({m})")
        compile_median = sorted(compile_cpu)[len(compile_cpu) // 2]
        cells = "  ".join(f"{vxt[m].median_cpu:>14.2f} s ±{vxt[m].spread:>4.0%}     "
                          f"{vxt[m].median_wall:>7.1f}s {vxt[m].peak_kib // 1024:>5}"
                          for m in modes)
        ratio = f"{vxt['proven'].median_cpu / compile_median:.2f}" if "proven" in vxt else ""
        print(f"{layers:>6} {count:>6}  {compile_median:>13.2f} s {xla.median_cpu:>13.2f} s  "
              f"{cells}  {ratio}", flush=True)
        for m in modes:
            grown[m].append((count, vxt[m].median_cpu))
    for m, points in grown.items():
        if len(points) < 2:
            continue
        (n0, t0), (n1, t1) = points[0], points[-1]
        slope = math.log(t1 / t0) / math.log(n1 / n0) if n1 != n0 and t0 > 0 else float("nan")
        per = ", ".join(f"{1e3 * t / n:.2f}" for n, t in points)
        print(f"growth ({m}): time ~ instructions^{slope:.2f} from {n0} to {n1} instructions "
              f"(whole process, start-up included); ms per instruction: {per}", flush=True)


if __name__ == "__main__":
    main()
