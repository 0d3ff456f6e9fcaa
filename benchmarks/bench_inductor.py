"""Issue 24 benchmark: Inductor's own index simplification against verifidx's, per expression
of a captured corpus, in the same process.

For each distinct record of the corpus: Inductor's `SizeVarAllocator._simplify_with_ranges` on
the expression rebuilt with torch's classes (a fresh allocator each time, so its cache is
cold) against verifidx's first sight of it (read the sympy tree, simplify with proven rules),
each timed in wall and CPU time (this thread); divisions left by each side; every read record
validated (`verifidx.clients.validation`). Records over size symbols are reported apart: Inductor
sees each size symbol with its range in the allocator's shape environment.

The corpus: `--log FILE` (tools/capture_inductor.py writes it); by default the corpora
committed in benchmarks/data/ (captured with torch 2.13.0 CPU from the capture tool's seven
models, one compile each: `inductor_static.jsonl`, or `inductor_dynamic.jsonl` with
`--dynamic`, the capture under torch.compile(dynamic=True)), so that a run needs no compile;
`--capture` compiles the built-in models (one module) and uses what they give instead.
`--compile` also times the whole compile of the built-in models (one module; dynamic=True with
`--dynamic`) with stock Inductor and with `verifidx.clients.inductor.install("simplify")`.

Run: .venv/bin/python benchmarks/bench_inductor.py [--dynamic] [--log FILE | --capture]
     [--compile]
Targets (issue 24): divisions left at most Inductor's on every expression verifidx reads, at
most a tenth of Inductor's time per expression (median), every read record proved (no unknown
on static shapes).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import fmt_us, print_table  # noqa: E402

from verifidx.clients.sympy_bridge import count_divisions, from_sympy, parse_text  # noqa: E402
from verifidx.clients.validation import validate_record  # noqa: E402
from verifidx.core.errors import UnsupportedError  # noqa: E402
from verifidx.core.native import build  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The committed corpora, by --dynamic (regenerate: tools/capture_inductor.py [--dynamic]).
CORPORA = {False: ROOT / "benchmarks" / "data" / "inductor_static.jsonl",
           True: ROOT / "benchmarks" / "data" / "inductor_dynamic.jsonl"}


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("capture_inductor",
                                                  ROOT / "tools" / "capture_inductor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_expr(node: Any, symbols: dict[str, Any]) -> Any:
    """The parsed stand-in tree rebuilt with torch's classes and Inductor's symbols (loop
    variables nonnegative, sizes positive, as Inductor makes them)."""
    from torch.utils._sympy import functions as f

    if node.is_Symbol:
        return symbols.setdefault(str(node), _symbol(str(node)))
    if not node.args:
        return node
    args = [_torch_expr(a, symbols) for a in node.args]
    name = type(node).__name__
    if hasattr(f, name) and name not in ("Min", "Max"):
        return getattr(f, name)(*args)
    return node.func(*args)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log", help="JSON lines from tools/capture_inductor.py (default: the "
                                 "committed corpus, benchmarks/data/inductor_*.jsonl)")
    p.add_argument("--capture", action="store_true",
                   help="compile the built-in models and use what they give (not the corpus)")
    p.add_argument("--dynamic", action="store_true",
                   help="the dynamic=True corpus (or capture, or whole compile)")
    p.add_argument("--model", default="together",
                   help="the capture tool's model to compile with --capture (default: together)")
    p.add_argument("--compile", action="store_true", help="also time whole compiles")
    p.add_argument("--rows", type=int, default=15, help="per-expression rows to print")
    args = p.parse_args()
    import torch  # noqa: F401 - torch's classes for Inductor's side
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    tool = _tool()
    if args.capture:
        lines = list(dict.fromkeys(json.dumps(r) for r in
                                   tool.capture(*tool.build(args.model),
                                                dynamic=args.dynamic)))
    else:
        log = Path(args.log) if args.log else CORPORA[args.dynamic]
        lines = list(dict.fromkeys(ln for ln in log.read_text().splitlines() if ln.strip()))
        print(f"corpus: {log}")
    if not lines:
        raise SystemExit("error: nothing captured")
    _warm_up(SizeVarAllocator(ShapeEnv()))
    rows: list[Row] = []
    skipped: dict[bool, int] = {False: 0, True: 0}
    reasons: dict[str, int] = {}
    for line in lines:
        r = json.loads(line)
        sized = bool(r["size_ranges"])
        known = set(r["var_ranges"]) | set(r["size_ranges"])
        tree = parse_text(r["expr"], known)
        symbols: dict[str, Any] = {}
        texpr = _torch_expr(tree, symbols)
        ranges = {symbols.setdefault(k, _symbol(k)):
                  int(v) if v.isdigit() else _torch_expr(parse_text(v, known), symbols)
                  for k, v in r["var_ranges"].items()}
        alloc = _allocator(r["size_ranges"], symbols)
        start, cpu = time.perf_counter(), time.thread_time()
        inductor_out = alloc._simplify_with_ranges(texpr, ranges)
        t_inductor = time.perf_counter() - start, time.thread_time() - cpu
        # both sides get the loop ranges as Inductor hands them over (the hook receives them
        # so): symbols to sympy extents (the text is parsed first)
        extents = {parse_text(k, known): int(v) if v.isdigit() else parse_text(v, known)
                   for k, v in r["var_ranges"].items()}
        try:
            start, cpu = time.perf_counter(), time.thread_time()
            m = from_sympy(tree, extents, r["size_ranges"]).simplify()
            t_verifidx = time.perf_counter() - start, time.thread_time() - cpu
            theirs = from_sympy(parse_text(str(inductor_out), known), r["var_ranges"],
                                r["size_ranges"])
        except UnsupportedError as err:
            skipped[sized] += 1
            reason = str(err).split(":")[0]
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        v = validate_record(json.dumps({**r, "result": str(inductor_out)}))
        rows.append(Row(r["expr"], sized, *t_inductor, *t_verifidx,
                        count_divisions(theirs.results[0]), count_divisions(m.results[0]),
                        v.verdict, v.seconds))
    if not rows:
        raise SystemExit("error: no record could be read")
    rows.sort(key=lambda row: -row.inductor)
    print_table(["expression (slowest for Inductor first)", "sizes", "inductor", "verifidx",
                 "div inductor", "div verifidx", "verdict"],
                [(row.expr[:56], "yes" if row.sized else "", fmt_us(row.inductor),
                  fmt_us(row.verifidx), str(row.div_inductor), str(row.div_verifidx),
                  row.verdict) for row in rows[:max(1, args.rows)]])
    print(f"\n{len(lines)} distinct records, {len(rows)} read, {sum(skipped.values())} "
          f"unsupported {reasons}")
    ok = True
    for sized, label in ((False, "static"), (True, "dynamic (size symbols)")):
        part = [row for row in rows if row.sized is sized]
        if part or skipped[sized]:
            ok = _report(label, part, skipped[sized], sized) and ok
    if args.compile:
        _compiles(tool, args.dynamic)
    return 0 if ok else 1


class Row(NamedTuple):
    expr: str
    sized: bool
    inductor: float  # Inductor's _simplify_with_ranges, seconds (wall)
    inductor_cpu: float  # the same, CPU seconds of this thread
    verifidx: float  # verifidx's first sight (read + simplify), seconds (wall)
    verifidx_cpu: float
    div_inductor: int
    div_verifidx: int
    verdict: str
    validation: float  # the validator on Inductor's result, seconds


def _report(label: str, rows: list[Row], skipped: int, sized: bool) -> bool:
    """One part's summary and targets; False when reach fails or a record is refuted (or
    unknown on static shapes)."""
    print(f"\n{label}: {len(rows) + skipped} records, {len(rows)} read, {skipped} unsupported")
    if not rows:
        return True
    verdicts = {k: sum(1 for row in rows if row.verdict == k)
                for k in ("proved", "refuted", "unknown", "unsupported")}
    fewer = sum(1 for row in rows if row.div_verifidx < row.div_inductor)
    worse = sum(1 for row in rows if row.div_verifidx > row.div_inductor)
    ratios = [row.verifidx / row.inductor for row in rows]
    med_c = statistics.median(row.validation for row in rows)
    for clock, ours, theirs in (("wall", "verifidx", "inductor"),
                                ("cpu", "verifidx_cpu", "inductor_cpu")):
        mine = [getattr(row, ours) for row in rows]
        inductor = [getattr(row, theirs) for row in rows]
        # a CPU clock may tick coarser than a short call: the ratio of medians beside the
        # median of ratios
        per = [a / b for a, b in zip(mine, inductor) if b > 0]
        print(f"  median per expression ({clock}): Inductor "
              f"{fmt_us(statistics.median(inductor))}, verifidx {fmt_us(statistics.median(mine))};"
              f" median ratio verifidx/Inductor "
              f"{statistics.median(per) if per else float('nan'):.3f}, total "
              f"{sum(mine) / sum(inductor):.3f}")
    print(f"  median validation of Inductor's result (wall): {fmt_us(med_c)}")
    print(f"  divisions: verifidx fewer on {fewer}, equal on {len(rows) - fewer - worse}, "
          f"more on {worse}; verdicts on Inductor's results: {verdicts}")
    ratio = statistics.median(ratios)
    print(f"  targets: reach at least Inductor's on every read expression: "
          f"{'met' if worse == 0 else 'NOT met'}; every read record proved: "
          f"{'met' if verdicts['proved'] == len(rows) else 'NOT met'}; median time at most a "
          f"tenth of Inductor's: {'met' if ratio <= 0.1 else 'NOT met'} ({ratio:.3f}, "
          f"{build().describe()} core)")
    return worse == 0 and verdicts["refuted"] == 0 and (sized or verdicts["unknown"] == 0)


def _warm_up(alloc: Any) -> None:
    """Once-per-process costs out of the per-expression times: verifidx loads its rule base
    at the first simplification, Inductor its helpers at its first call."""
    tree = parse_text("ModularIndexing(w0 + 7*w1, 1, 7) + FloorDiv(w1, 3)", {"w0", "w1"})
    from_sympy(tree, {"w0": 7, "w1": 9}).simplify()
    symbols: dict[str, Any] = {}
    texpr = _torch_expr(tree, symbols)
    alloc._simplify_with_ranges(texpr, {symbols["w0"]: 7, symbols["w1"]: 9})


def _symbol(name: str) -> Any:
    import sympy

    if name[:1] == "s" and name[1:].isdigit():
        return sympy.Symbol(name, integer=True, positive=True)
    return sympy.Symbol(name, integer=True, nonnegative=True)


def _allocator(size_ranges: dict[str, list[str]], symbols: dict[str, Any]) -> Any:
    """A fresh allocator whose shape environment knows each size symbol's range."""
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.utils._sympy.numbers import int_oo
    from torch.utils._sympy.value_ranges import ValueRanges

    alloc = SizeVarAllocator(ShapeEnv())
    for name, (lo, hi) in size_ranges.items():
        ends = [int_oo if b == "int_oo" else int(b) for b in (lo, hi)]
        alloc.shape_env.var_to_range[symbols.setdefault(name, _symbol(name))] = ValueRanges(
            *ends)
    return alloc


def _compiles(tool: Any, dynamic: bool) -> None:
    import torch

    from verifidx.clients import inductor

    times = {}
    for mode in ("stock", "simplify", "stock again"):
        model, inputs = tool.build("together")
        torch._dynamo.reset()
        if mode == "simplify":
            stats = inductor.install("simplify")
        start = time.perf_counter()
        try:
            with torch.no_grad(), torch.compiler.config.patch(force_disable_caches=True):
                torch.compile(model, dynamic=dynamic)(*inputs)
        finally:
            inductor.uninstall()
        times[mode] = time.perf_counter() - start
    print(f"whole compile of the built-in models (dynamic={dynamic}): stock "
          f"{times['stock']:.1f} s, simplify mode {times['simplify']:.1f} s, stock again "
          f"{times['stock again']:.1f} s "
          f"({stats.replaced} of {stats.calls} results replaced; Inductor's simplification "
          f"{stats.inductor_seconds:.2f} s, verifidx {stats.verifidx_seconds:.2f} s)")


if __name__ == "__main__":
    sys.exit(main())
