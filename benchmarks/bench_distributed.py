"""The cost and the gain of running work items on Dask (`verifidx.core.work`).

    python benchmarks/bench_distributed.py [--rules N] [--workers 1,2] [--subst-groups N]

Measures, in one invocation, four workloads in this process (one item after the other, each
timed) and on local clusters of 1 and 2 worker processes: `prove` of the rule base (rule text
in, ProofResult out), `check` of its certificates (SMT-LIB2 query in, Z3's answers out),
batch indexing of the JAX corpus (HLO text in, JSON record out) and `generate`, the first
`--subst-groups` depth-2 groups of substitution generation (candidate pairs in, proven
substitutions out). It prints the wall times, the
speedup, the cluster's start-up, and its overhead per item ((1 worker - in process) / items).

Then a PROJECTION, computed from the per-item times measured above, not a measurement: a
2,000-rule base (this rule base's proof times, repeated in order) and depth-3 substitution
generation (per-group times of a sample of depth-2 groups, measured here, times the number of
depth-3 groups, counted here by enumeration) on 16 and 64 workers, scheduled greedily in input
order with the measured overhead per item. It ignores the network and data transfer of a real
cluster, and a few long items bound the makespan from below whatever the worker count.
"""

from __future__ import annotations

import argparse
import heapq
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's verifidx

from verifidx.analysis.subst.items import run_group
from verifidx.cli.batch import file_key, index_item, options_of
from verifidx.core.work import Engine, run
from verifidx.rules.items import prove_item, recheck_item, rule_item
from verifidx.rules.parser import default_rule_dir
from verifidx.rules.prover import PROVED, ProverConfig, recheck_query_for
from verifidx.rules.results import budgeted
from verifidx.rules.store import load_files, result_from_entry
from verifidx.solve.smt_terms import safety_net_ms

REPO = Path(__file__).resolve().parents[1]
Task = Callable[[str], str]


def timed_in_process(task: Task, items: Sequence[str]) -> tuple[float, list[float]]:
    per: list[float] = []
    start = time.perf_counter()
    for item in items:
        t = time.perf_counter()
        task(item)
        per.append(time.perf_counter() - t)
    return time.perf_counter() - start, per


def timed_on(task: Task, items: Sequence[str], engine: Engine) -> float:
    start = time.perf_counter()
    outcomes = list(run(task, items, engine))
    failed = [o for o in outcomes if o.error]
    if failed:
        print(f"  warning: {len(failed)} items failed: {failed[0].error}", file=sys.stderr)
    return time.perf_counter() - start


def makespan(times: Sequence[float], workers: int, overhead: float) -> float:
    """Greedy list scheduling in input order (what a scheduler without time estimates does)."""
    free = [0.0] * workers
    for t in times:
        heapq.heapreplace(free, free[0] + t + overhead)
    return max(free)


def rule_items(limit: int | None) -> tuple[list[str], list[str]]:
    files = load_files([default_rule_dir()], None)
    rules = [r for rf in files for r in rf.rules][:limit]
    config = ProverConfig()
    prove = [rule_item(r, config) for r in rules]
    check = []
    entries = {(rf.path, r.name): rf.entries.get(r.name) for rf in files for r in rf.rules}
    for rf in files:
        for r in rf.rules:
            if r not in rules:
                continue
            entry = entries[(rf.path, r.name)]
            if not entry or entry.get("verdict") != PROVED:
                continue
            res = result_from_entry(r, entry)
            seed = entry.get("seed", 0)
            q = recheck_query_for(r, res.strategy, res.strength, seed if isinstance(seed, int)
                                  else -1)
            rlimit = entry.get("rlimit")
            if q is not None and isinstance(rlimit, int):  # what `check` runs: the budget too
                net = safety_net_ms(rlimit * q.count("(check-sat"))
                check.append(json.dumps({"query": budgeted(q, rlimit), "timeout_ms": net}))
    return prove, check


def index_items() -> list[str]:
    options = options_of()
    out = []
    for p in sorted((REPO / "tests" / "data" / "jax").glob("*.hlo")):
        out.append(json.dumps({"file": p.name, "key": file_key(p.read_bytes(), options),
                               "text": p.read_text(), "options": options}))
    return out


def subst_groups(n: int) -> tuple[list[str], int, int]:
    """The first `n` depth-2 groups (rank 2) as work items, and the number of groups at depth 2
    and 3 (ranks 1-3)."""
    from verifidx.analysis.subst.generalize import GROUP_PROOFS, skeleton
    from verifidx.analysis.subst.generate import (
        DEFAULT_OPS,
        GENERATION_ENUM_BOUND,
        Generated,
        candidate_pairs,
    )
    from verifidx.analysis.subst.items import group_item

    def groups(depth: int, rank: int) -> list[tuple[list, int, str]]:
        found: dict[tuple[str, str], list] = {}
        for pair in candidate_pairs(DEFAULT_OPS, depth, rank,
                                    Generated(list(DEFAULT_OPS), depth, [rank])):
            found.setdefault((skeleton(pair[0]), skeleton(pair[1])), []).append(pair)
        return [(pairs, rank, f"r{rank}g{k}") for k, pairs in enumerate(found.values())]

    items = [group_item(pairs, rank, name, GENERATION_ENUM_BOUND, GROUP_PROOFS)
             for pairs, rank, name in groups(2, 2)[:n]]
    count2 = sum(len(groups(2, r)) for r in (1, 2, 3))
    count3 = sum(len(groups(3, r)) for r in (1, 2, 3))
    return items, count2, count3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", type=int, help="only the first N rules of the rule base")
    ap.add_argument("--workers", default="1,2", help="local cluster sizes (default 1,2)")
    ap.add_argument("--subst-groups", type=int, default=12,
                    help="depth-2 groups of the generate workload and the depth-3 "
                         "projection (0: skip both)")
    args = ap.parse_args()
    from distributed import LocalCluster

    prove, check = rule_items(args.rules)
    workloads: dict[str, tuple[Task, list[str]]] = {
        "prove": (prove_item, prove), "check": (recheck_item, check),
        "index": (index_item, index_items())}
    if args.subst_groups:
        group_items, g2, g3 = subst_groups(args.subst_groups)
        workloads["generate"] = (run_group, group_items)
    single: dict[str, tuple[float, list[float]]] = {}
    for name, (task, items) in workloads.items():
        single[name] = timed_in_process(task, items)
        print(f"{name}: {len(items)} items in process: {single[name][0]:.2f}s", flush=True)
    sizes = [int(w) for w in args.workers.split(",")]
    wall: dict[tuple[str, int], float] = {}
    startup: dict[int, float] = {}
    for w in sizes:
        t = time.perf_counter()
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster:
            engine = Engine(scheduler=cluster.scheduler_address)
            list(run(index_item, workloads["index"][1][:w], engine))  # workers import verifidx
            startup[w] = time.perf_counter() - t
            for name, (task, items) in workloads.items():
                wall[(name, w)] = timed_on(task, items, engine)
                print(f"{name}: {w} worker(s): {wall[(name, w)]:.2f}s", flush=True)
    print()
    print("| workload | items | in process | " +
          " | ".join(f"{w} worker{'s' * (w > 1)}" for w in sizes) +
          " | speedup (most workers) | overhead per item (1 worker) |")
    print("| --- " * (5 + len(sizes)) + "|")
    overhead: dict[str, float] = {}
    for name, (_task, items) in workloads.items():
        base = single[name][0]
        overhead[name] = (wall[(name, 1)] - base) / len(items) if 1 in sizes and items else 0.0
        cols = " | ".join(f"{wall[(name, w)]:.2f}s" for w in sizes)
        print(f"| {name} | {len(items)} | {base:.2f}s | {cols} | "
              f"{base / wall[(name, sizes[-1])]:.2f}x | {overhead[name] * 1e3:.0f} ms |")
    print("\ncluster start-up (workers started and verifidx imported): " +
          ", ".join(f"{w} worker{'s' * (w > 1)} {s:.1f}s" for w, s in startup.items()))

    print("\nPROJECTION (computed from the per-item times above, not measured):")
    per_rule = single["prove"][1]
    base2000 = [per_rule[i % len(per_rule)] for i in range(2000)]
    over = max(overhead["prove"], 0.0)
    print(f"  2,000-rule base, this base's proof times repeated (mean "
          f"{statistics.mean(per_rule):.2f}s, longest {max(per_rule):.1f}s), "
          f"{over * 1e3:.0f} ms overhead per item:")
    print(f"    1 process: {sum(base2000) / 60:.1f} min")
    for w in (16, 64):
        print(f"    {w} workers: {makespan(base2000, w, over) / 60:.1f} min "
              f"(no better than the longest rule, {max(per_rule):.1f}s)")
    if args.subst_groups:
        per_group = single["generate"][1]
        mean = statistics.mean(per_group)
        print(f"  depth-3 substitution generation: {g3} groups (depth 2: {g2}); a depth-2 "
              f"group took {mean:.2f}s on average ({len(per_group)} timed), assumed the same "
              f"at depth 3:")
        times = [mean] * g3
        print(f"    1 process: {sum(times) / 60:.0f} min")
        over = max(overhead["generate"], 0.0)
        for w in (16, 64):
            print(f"    {w} workers: {makespan(times, w, over) / 60:.1f} min")


if __name__ == "__main__":
    main()
