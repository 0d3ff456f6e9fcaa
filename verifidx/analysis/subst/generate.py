"""TASO-style generation of substitutions, decided by map equality and proven.

1. Enumerate every graph of up to `depth` ops over the inputs of each rank 1..3
   (`verifidx.analysis.subst.enumeration`: `x`, `y`, `z` of that rank's shape, a scalar `v`; a menu
   of attributes per op: every permutation, every subset of dimensions to reverse, every
   factorization to reshape to, edge and strided slices, edge paddings, broadcasts adding a
   dimension, concatenations with fresh inputs).
2. Fingerprint each graph by its composed map on these shapes (numpy over element ids) and
   group equal fingerprints into classes.
3. Candidates: every graph of a class against its simplest member (the other pairs follow by
   transitivity); pruned when a renaming of inputs of a kept one, when both sides share a
   subgraph (an instance of a smaller substitution), or when both sides have as many ops.
4. Candidates with the same skeleton are generalized together into shape-parametric
   substitutions and proven (`verifidx.analysis.subst.generalize`); failing that, proven at the
   concrete shapes.
5. Prune substitutions whose text another one already has, and those subsumed by a more
   general one (every instance of their group is an instance of the other).
6. Rediscovery (`verifidx.analysis.subst.instances`): a hand-written substitution is rediscovered
when
   one proven generated substitution has every sampled instance of it at the generator's
   shapes; a miss says why (an op outside `ops`, no instance at these shapes, or an instance
   no generated substitution has).

Counts are reported beside TASO's (743 substitutions from 44 axioms, 25 blacklisted by hand).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from verifidx.analysis.subst.enumeration import (
    RANK_SHAPES,
    Evaluator,
    enumerate_graphs,
    fingerprint_of,
    inp,
    input_shapes,
)
from verifidx.analysis.subst.generalize import GROUP_PROOFS, Outcome, Pair, skeleton
from verifidx.analysis.subst.instances import Instance, has_instance, sample
from verifidx.analysis.subst.items import group_item, group_outcome, run_group
from verifidx.analysis.subst.model import Node, Substitution
from verifidx.core.errors import UnsupportedError
from verifidx.core.work import Engine, Progress, run

SUPPORTED = ("transpose", "reshape", "slice", "concatenate", "reverse", "pad", "broadcast",
             "copy")
DEFAULT_OPS = SUPPORTED
GENERATION_ENUM_BOUND = 3


@dataclass
class Rediscovery:
    name: str
    by: str | None  # the generated substitution that has every sampled instance
    instances: int = 0
    covered: int = 0  # sampled instances some generated substitution has
    reason: str = ""


@dataclass
class Generated:
    ops: list[str]
    depth: int
    ranks: list[int]
    graphs: int = 0
    classes: int = 0
    candidates: int = 0
    pruned_transitive: int = 0
    pruned_renaming: int = 0
    pruned_common: int = 0
    pruned_same_size: int = 0
    groups: int = 0
    instances_generalized: int = 0
    proven_general: int = 0
    proven_concrete: int = 0
    refuted: int = 0
    unknown: int = 0
    proofs: int = 0
    pruned_duplicate: int = 0
    pruned_subsumed: int = 0
    proven: list[Substitution] = field(default_factory=list)
    kept: list[Substitution] = field(default_factory=list)
    covers: dict[str, list[Instance]] = field(default_factory=dict)
    rediscovered: list[Rediscovery] = field(default_factory=list)
    instances_of_shipped: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    slowest: list[str] = field(default_factory=list)  # the groups with the most prover calls
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process and its local pool (not Dask workers)
    engine: str = "this process"

    @property
    def rediscovered_count(self) -> int:
        return sum(r.by is not None for r in self.rediscovered)

    def text(self) -> str:
        return "\n\n".join(s.normalized_text for s in self.kept) + "\n"

    def to_json(self) -> dict[str, object]:
        skip = {"proven", "kept", "covers", "rediscovered"}
        out: dict[str, object] = {k: v for k, v in self.__dict__.items() if k not in skip}
        out["kept"] = [s.normalized_text for s in self.kept]
        out["proven"] = len(self.proven)
        out["rediscovered"] = [dataclasses.asdict(r) for r in self.rediscovered]
        out["rediscovered_count"] = self.rediscovered_count
        return out


def fingerprint(n: Node, rank: int = 3) -> tuple[object, ...]:
    """The composed map of a concrete graph over the inputs of `rank`: its output shape and
    the input element read at every output index."""
    return fingerprint_of(Evaluator(input_shapes(rank))(n))


def _rename(n: Node, mapping: dict[str, str]) -> Node:
    if n.op == "input":
        return Node("input", name=mapping.get(n.name, n.name))
    return Node(n.op, tuple(_rename(a, mapping) for a in n.args), n.attrs)


def _canonical(lhs: Node, rhs: Node) -> str:
    order = [n.name for n in (*lhs.nodes(), *rhs.nodes()) if n.op == "input" and n.name != "v"]
    mapping = dict(zip(dict.fromkeys(order), ("x", "y", "z")))
    return f"{_rename(lhs, mapping)} => {_rename(rhs, mapping)}"


def _common_subgraph(lhs: Node, rhs: Node) -> bool:
    ops_l = {n for n in lhs.nodes() if n.op != "input"}
    return any(n in ops_l for n in rhs.nodes() if n.op != "input")


PREFERRED = ("input", "reshape", "broadcast", "transpose", "slice", "reverse", "concatenate",
             "pad", "copy")
"""Between graphs with as many ops, the right side is the one whose ops come first here
(a one-op pair like broadcast => reshape is kept in that direction; longer ones are dropped)."""


def _simplicity(n: Node) -> tuple[int, list[int], str]:
    return n.op_count(), [PREFERRED.index(m.op) for m in n.nodes()][::-1], str(n)


def candidate_pairs(ops: Sequence[str], depth: int, rank: int, out: Generated) -> list[Pair]:
    """Steps 1-3 at one rank."""
    graphs = enumerate_graphs(ops, depth, rank)
    out.graphs += len(graphs)
    ev = Evaluator(input_shapes(rank))
    classes: dict[tuple[object, ...], list[Node]] = {}
    for g in [inp("x"), inp("y"), inp("z"), *graphs]:
        classes.setdefault(fingerprint_of(ev(g)), []).append(g)
    seen: set[str] = set()
    pairs: list[Pair] = []
    for members in classes.values():
        k = len(members)
        if k < 2:
            continue
        out.classes += 1
        out.candidates += k * (k - 1) // 2
        out.pruned_transitive += k * (k - 1) // 2 - (k - 1)
        members.sort(key=_simplicity)
        rep = members[0]
        for g in members[1:]:
            key = _canonical(g, rep)
            if key in seen:
                out.pruned_renaming += 1
            elif _common_subgraph(g, rep):
                out.pruned_common += 1
            elif g.op_count() < rep.op_count() or (g.op_count() == rep.op_count() > 1):
                out.pruned_same_size += 1
            else:
                seen.add(key)
                pairs.append((g, rep))
    return pairs


def _body(sub: Substitution) -> str:
    return sub.normalized_text.split("\n", 1)[1]


def _ops_tree(n: Node) -> str:
    return n.op if n.op == "input" else f"{n.op}({','.join(_ops_tree(a) for a in n.args)})"


def generate(ops: Sequence[str], depth: int, compare: Sequence[str | Path] = (),
             log: TextIO | None = None, engine: Engine | None = None,
             ranks: Iterable[int] = (1, 2, 3), enum_bound: int = GENERATION_ENUM_BOUND,
             group_proofs: int = GROUP_PROOFS, progress: bool = False,
             per_group: bool = False) -> Generated:
    """The groups are work items (`verifidx.analysis.subst.items`) run on `engine`; what is kept is
    the same wherever they ran. `progress`: a bar of the groups done on stderr; `per_group`:
    a line on `log` for each group as it completes (in order)."""
    unknown = [o for o in ops if o not in SUPPORTED]
    if unknown:
        raise UnsupportedError(f"generation over {unknown[0]} is not yet supported (supported: "
                               f"{', '.join(SUPPORTED)})")
    ranks = sorted(set(ranks))
    if not ranks or not set(ranks) <= set(RANK_SHAPES):
        raise UnsupportedError(f"generation ranks are {', '.join(map(str, RANK_SHAPES))}")
    start = time.perf_counter()
    t0 = os.times()
    cpu0 = t0.user + t0.system + t0.children_user + t0.children_system
    engine = engine or Engine()
    out = Generated(list(ops), depth, ranks, engine=engine.describe())
    tasks: list[tuple[list[Pair], int, str]] = []
    for rank in ranks:
        groups: dict[tuple[str, str], list[Pair]] = {}
        for pair in candidate_pairs(ops, depth, rank, out):
            groups.setdefault((skeleton(pair[0]), skeleton(pair[1])), []).append(pair)
        for k, pairs in enumerate(groups.values()):
            tasks.append((pairs, rank, f"r{rank}g{k}"))
            out.instances_generalized += len(pairs)
    out.groups = len(tasks)
    if log:
        print(f"generate: {out.graphs} graphs, {out.classes} classes with equal maps, "
              f"{out.instances_generalized} candidates in {out.groups} groups to generalize "
              f"and prove ({engine.describe()})", file=log, flush=True)
    items = [group_item(pairs, rank, name, enum_bound, group_proofs)
             for pairs, rank, name in tasks]
    outcomes: list[Outcome] = []
    with Progress(len(tasks), "generate", progress) as bar:
        for done in run(run_group, items, engine, bar):
            pairs, _rank, name = tasks[done.index]
            o = group_outcome(done.text, done.error, pairs, name)
            outcomes.append(o)
            if log and per_group:
                bar.echo(_group_line(name, pairs, o), file=log)
    found: list[tuple[Substitution, list[Pair], int]] = []
    slow = sorted(zip(outcomes, tasks), key=lambda ot: -ot[0].proofs)[:5]
    out.slowest = [f"{t[2]} {o.proofs} prover calls, {o.seconds:.1f}s: {t[0][0][0]} => "
                   f"{t[0][0][1]}" for o, t in slow]
    for (_pairs, rank, _name), o in zip(tasks, outcomes):
        out.proven_general += len(o.general)
        out.proven_concrete += len(o.concrete)
        out.refuted += o.refuted
        out.unknown += o.unknown
        out.proofs += o.proofs
        out.failures += o.failures
        found += [(s, ps, rank) for s, ps in (*o.general, *o.concrete)]
    _collect(found, out)
    if compare:
        out.rediscovered, out.instances_of_shipped = _rediscover(compare, out)
    out.seconds = time.perf_counter() - start
    t = os.times()
    out.cpu_seconds = t.user + t.system + t.children_user + t.children_system - cpu0
    return out


def _group_line(name: str, pairs: list[Pair], o: Outcome) -> str:
    return (f"{name}: {len(o.general)} general, {len(o.concrete)} concrete, {o.refuted} refuted, "
            f"{o.unknown} unknown; {o.proofs} prover calls, {o.seconds:.1f}s; "
            f"{len(pairs)} candidate{'s' * (len(pairs) != 1)}, e.g. {pairs[0][0]} => "
            f"{pairs[0][1]}")


def _collect(found: list[tuple[Substitution, list[Pair], int]], out: Generated) -> None:
    """Name, deduplicate and prune by subsumption (step 5)."""
    by_text: dict[str, tuple[Substitution, list[Instance]]] = {}
    for sub, pairs, rank in found:
        shapes = input_shapes(rank)
        insts = [Instance(lhs, rhs, shapes) for lhs, rhs in pairs]
        hit = by_text.get(_body(sub))
        if hit is not None:
            out.pruned_duplicate += 1
            hit[1].extend(insts)
            continue
        name = f"gen{len(by_text) + 1}"
        by_text[_body(sub)] = (dataclasses.replace(sub, name=name), insts)
    out.proven = [s for s, _i in by_text.values()]
    out.covers = {s.name: insts for s, insts in by_text.values()}
    # most general first: variadic shapes, fewer conditions, shape-parametric sizes
    def generality(s: Substitution) -> tuple[int, int, int, str]:
        variadic = any(sh.variadic for _n, sh in s.inputs)
        concrete = any(isinstance(e, int) for _n, sh in s.inputs for e in sh.items)
        return (not variadic, concrete, len(s.conditions), s.name)

    order = sorted(out.proven, key=generality)
    by_tree: dict[str, list[Substitution]] = {}
    for s in order:
        by_tree.setdefault(_ops_tree(s.lhs), []).append(s)
    kept: list[Substitution] = []
    dropped: set[str] = set()
    for s in reversed(order):  # least general first: drop it if another one has its instances
        others = [t for t in by_tree[_ops_tree(s.lhs)] if t is not s and t.name not in dropped]
        insts = out.covers[s.name]
        if any(all(has_instance(t, i) for i in insts) for t in others):
            dropped.add(s.name)
            out.pruned_subsumed += 1
        else:
            kept.append(s)
    out.kept = sorted(kept, key=lambda s: int(s.name[3:]))


def _rediscover(paths: Sequence[str | Path], out: Generated
                ) -> tuple[list[Rediscovery], list[str]]:
    from verifidx.analysis.subst.parser import load_substitution_file, substitution_files

    hand = [s for f in substitution_files(paths) for s in load_substitution_file(f)]
    by_tree: dict[str, list[Substitution]] = {}
    kept_names = {s.name for s in out.kept}
    for s in sorted(out.proven, key=lambda s: s.name not in kept_names):
        by_tree.setdefault(_ops_tree(s.lhs), []).append(s)
    results: list[Rediscovery] = []
    for h in hand:
        outside = sorted({n.op for n in (*h.lhs.nodes(), *h.rhs.nodes())
                          if n.op != "input"} - set(out.ops))
        if outside:
            results.append(Rediscovery(h.name, None, reason=f"uses {', '.join(outside)}, "
                                                            "not among the generated ops"))
            continue
        if h.lhs.op_count() > out.depth:
            results.append(Rediscovery(h.name, None, reason=f"its left side has "
                                                            f"{h.lhs.op_count()} ops, more "
                                                            f"than depth {out.depth}"))
            continue
        insts = [i for i in sample(h) if all(len(s) in (0, *out.ranks)
                                             for s in i.shapes.values())]
        if not insts:
            results.append(Rediscovery(h.name, None, reason="no instance at the generator's "
                                                            "input shapes"))
            continue
        cands = by_tree.get(_ops_tree(h.lhs), [])
        by = next((g.name for g in cands if all(has_instance(g, i) for i in insts)), None)
        covered = [i for i in insts if any(has_instance(g, i) for g in cands)]
        r = Rediscovery(h.name, by, len(insts), len(covered))
        if by is None:
            missing = next(i for i in insts if i not in covered) if len(covered) < len(insts) \
                else None
            r.reason = (f"{len(covered)} of {len(insts)} sampled instances have a generated "
                        "substitution, none has all" +
                        (f"; e.g. no generated substitution has {missing}" if missing else ""))
        results.append(r)
    shipped = [g.name for g in out.kept
               if any(all(has_instance(h, i) for i in out.covers[g.name]) for h in hand)]
    return results, shipped


def report(g: Generated) -> str:
    taso = ("TASO (SOSP'19): 743 substitutions from 44 hand-written operator axioms, 25 "
            "blacklisted by hand; here: no axioms, every kept substitution proven by map "
            "equality")
    shapes = "; ".join(f"rank {r}: x, y, z: f32{list(RANK_SHAPES[r])}" for r in g.ranks)
    lines = [
        f"ops: {', '.join(g.ops)}; depth {g.depth}; inputs {shapes}; v: f32[]",
        f"graphs enumerated:                    {g.graphs}",
        f"classes with equal maps (>1 graph):   {g.classes}",
        f"candidate pairs:                      {g.candidates}",
        f"  pruned, implied by transitivity:     {g.pruned_transitive}",
        f"  pruned, input renaming:              {g.pruned_renaming}",
        f"  pruned, common subgraph:             {g.pruned_common}",
        f"  pruned, sides of equal size:         {g.pruned_same_size}",
        f"  left, generalized in groups:         {g.instances_generalized} in {g.groups} "
        "groups",
        f"proven, shape-parametric:             {g.proven_general}",
        f"proven, these shapes only:            {g.proven_concrete}",
        f"refuted:                              {g.refuted}",
        f"unknown:                              {g.unknown}",
        f"prover calls:                         {g.proofs}",
        f"  pruned, same text as another:        {g.pruned_duplicate}",
        f"  pruned, subsumed by a general one:   {g.pruned_subsumed}",
        f"kept:                                 {len(g.kept)}",
        f"time:                                 {g.seconds:.1f}s wall, {g.cpu_seconds:.1f}s "
        f"CPU ({g.engine})",
        taso,
    ]
    if g.rediscovered:
        lines.append(f"hand-written substitutions rediscovered: {g.rediscovered_count} of "
                     f"{len(g.rediscovered)}")
        for r in g.rediscovered:
            if r.by:
                kept = "" if r.by in {s.name for s in g.kept} else " (subsumed, not kept)"
                lines.append(f"  {r.name}: by {r.by}{kept} ({r.instances} sampled instances)")
            else:
                lines.append(f"  {r.name}: missed: {r.reason}")
        lines.append(f"kept substitutions that are instances of a hand-written one: "
                     f"{len(g.instances_of_shipped)} of {len(g.kept)}")
    by_name = {s.name: s for s in g.proven}
    for r in g.rediscovered:
        if r.by:
            lines.append(f"  {r.name} <- {by_name[r.by].normalized_text.split(chr(10), 1)[1]}"
                         .replace("\n", "; "))
    for s in g.kept:
        if s.name not in g.instances_of_shipped:
            lines.append("  new: " + _body(s).replace("\n", "; "))
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(report(generate(DEFAULT_OPS, 2, log=sys.stderr, engine=Engine(processes=2))))


__all__ = ["SUPPORTED", "Generated", "Rediscovery", "fingerprint", "generate", "report"]
