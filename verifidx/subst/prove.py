"""Proving a substitution: both graphs compose to the same map for every allowed shape.

For each rank of the variadic size lists (1..`max_rank`) and each assignment of the named
permutations, the obligation is one Z3 query over the sizes as integer variables:

    sizes >= 1  and  conditions  and  the left graph is well formed
      ==>  the right graph is well formed, both output shapes are equal, and at every output
           index both graphs read the same element of the same input (or the same pad scalar).

The `all sizes` attempt leaves every size unbounded; products and divisions by symbolic sizes
(reshape) make it non-linear. When Z3 gives up, every assignment with sizes in [1, M] and
other parameters in [-M, M] is evaluated exhaustively with plain integers (M = `enum_bound`,
when there are at most ENUMERATION_LIMIT assignments), else Z3 gets the query again with
`size <= N` added. Strength says which held: `all sizes, ranks <= R` or `sizes <= M, ranks <=
R` (the smaller bound of the two attempts). Only unsat answers prove; a sat answer is a
counterexample whose reads are re-evaluated with plain integers before it is reported.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import z3

from verifidx.subst.model import Node, SizeList, Substitution, evaluate, names_in
from verifidx.subst.semantics import INTS, Z3, Graph, IllFormed

PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"
DEFAULT_MAX_RANK = 3
DEFAULT_BOUND = 8
DEFAULT_TIMEOUT_MS = 4000
DEFAULT_ENUM_BOUND = 4
FIRST_TRY_MS = 500
ENUMERATION_LIMIT = 300_000


@dataclass
class Counterexample:
    """Shapes and values where the two graphs differ: an output index and what each side reads
    there (`(input, index)`, or None when that side is ill formed)."""

    sizes: dict[str, int]
    perms: dict[str, tuple[int, ...]]
    shapes: dict[str, tuple[int, ...]]
    index: tuple[int, ...] | None
    lhs_read: tuple[str, tuple[int, ...]] | None
    rhs_read: tuple[str, tuple[int, ...]] | None
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"sizes": self.sizes, "perms": {k: list(v) for k, v in self.perms.items()},
                "shapes": {k: list(v) for k, v in self.shapes.items()},
                "index": None if self.index is None else list(self.index),
                "lhs_read": None if self.lhs_read is None else
                [self.lhs_read[0], list(self.lhs_read[1])],
                "rhs_read": None if self.rhs_read is None else
                [self.rhs_read[0], list(self.rhs_read[1])],
                "reason": self.reason}

    def __str__(self) -> str:
        shapes = ", ".join(f"{k}: {list(v)}" for k, v in self.shapes.items())
        values = [f"{k} = {v}" for k, v in self.sizes.items()]
        values += [f"{k} = {list(v)}" for k, v in self.perms.items()]
        text = f"at shapes {shapes} ({', '.join(values)}): {self.reason}"
        if self.index is not None:
            def side(r: tuple[str, tuple[int, ...]] | None) -> str:
                return "nothing" if r is None else f"{r[0]}{list(r[1])}"
            text += (f"; output index {list(self.index)}: the left side reads "
                     f"{side(self.lhs_read)}, the right side reads {side(self.rhs_read)}")
        return text


@dataclass
class SubstProof:
    name: str
    file: str
    line: int
    verdict: str
    strength: str | None = None
    counterexample: Counterexample | None = None
    message: str = ""
    seconds: float = 0.0
    instances: int = 0
    smtlib: str = field(default="", repr=False)

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "name": self.name,
                "verdict": self.verdict, "strength": self.strength,
                "counterexample": None if self.counterexample is None
                else self.counterexample.to_json(),
                "message": self.message, "seconds": round(self.seconds, 3),
                "instances": self.instances}


@dataclass(frozen=True)
class Instance:
    """A substitution at fixed ranks and permutations."""

    lists: Mapping[str, tuple[str, ...]]
    perms: Mapping[str, tuple[int, ...]]


def _variadic_names(sub: Substitution) -> list[str]:
    found: list[str] = []
    for _n, s in sub.inputs:
        if s.variadic and s.variadic not in found:
            found.append(s.variadic)
    for node in (*sub.lhs.nodes(), *sub.rhs.nodes()):
        for _k, v in node.attrs:
            if isinstance(v, SizeList) and v.variadic and v.variadic not in found:
                found.append(v.variadic)
    return found


def _perm_ranks(sub: Substitution, lists: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """The rank each named permutation acts on (from the left side's transposes)."""
    dummy = {n: 1 for n in _all_names(sub, lists)}
    ranks: dict[str, int] = {}
    g = Graph(INTS, dummy, lists, sub.input_shapes, {})
    for node in sub.lhs.nodes():
        if node.op == "transpose" and isinstance(node.attr("perm"), str):
            ranks[node.attr("perm")] = len(g.shape(node.args[0]))  # type: ignore[index]
            g = Graph(INTS, dummy, lists, sub.input_shapes,
                      {p: tuple(range(r)) for p, r in ranks.items()})
    for p in sub.perms:
        ranks.setdefault(p, 0)
    return ranks


def instances(sub: Substitution, max_rank: int = DEFAULT_MAX_RANK) -> Iterator[Instance]:
    variadic = _variadic_names(sub)
    for ranks in itertools.product(range(1, max_rank + 1), repeat=len(variadic)):
        lists = {v: tuple(f"{v}{k}" for k in range(r)) for v, r in zip(variadic, ranks)}
        try:
            prank = _perm_ranks(sub, lists)
        except (IllFormed, KeyError):
            continue
        names = list(sub.perms)
        choices = [list(itertools.permutations(range(prank[p]))) for p in names]
        for chosen in itertools.product(*choices):
            yield Instance(lists, dict(zip(names, chosen)))


def _all_names(sub: Substitution, lists: Mapping[str, tuple[str, ...]]) -> list[str]:
    names: list[str] = []

    def add(e: object) -> None:
        for n in sorted(names_in(e)):  # type: ignore[arg-type]
            if n not in names:
                names.append(n)

    def add_list(s: SizeList) -> None:
        if s.variadic:
            for n in lists[s.variadic]:
                if n not in names:
                    names.append(n)
        for e in s.items:
            add(e)

    for _n, s in sub.inputs:
        add_list(s)
    for node in (*sub.lhs.nodes(), *sub.rhs.nodes()):
        for _k, v in node.attrs:
            if isinstance(v, SizeList):
                add_list(v)
    for c in sub.conditions:
        add(c.lhs)
        add(c.rhs)
    return names


def _size_names(sub: Substitution, lists: Mapping[str, tuple[str, ...]]) -> set[str]:
    """Names that are sizes (of inputs, or of reshape/broadcast targets): at least 1."""
    out: set[str] = set()
    for _n, s in sub.inputs:
        out |= set(lists.get(s.variadic, ())) if s.variadic else set()
        for e in s.items:
            if isinstance(e, str):
                out.add(e)
    for node in sub.lhs.nodes():
        if node.op in ("reshape", "broadcast"):
            target = node.attr("shape")
            assert isinstance(target, SizeList)
            s = target
            out |= set(lists.get(s.variadic, ())) if s.variadic else \
                {e for e in s.items if isinstance(e, str)}
    return out


def _compare(op: str, a: Any, b: Any) -> Any:
    return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
            "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[op]()


class _Obligation:
    """The query of one instance, with the variables needed to read a model back."""

    def __init__(self, sub: Substitution, inst: Instance, bound: int | None) -> None:
        self.sub, self.inst = sub, inst
        self.names = _all_names(sub, inst.lists)
        self.env = {n: z3.Int(n) for n in self.names}
        sizes = _size_names(sub, inst.lists)
        premises: list[Any] = [self.env[n] >= 1 for n in self.names if n in sizes]
        if bound is not None:
            premises += [self.env[n] <= bound if n in sizes else
                         z3.And(self.env[n] >= -bound, self.env[n] <= bound)
                         for n in self.names]
        premises += [_compare(c.op, evaluate(c.lhs, self.env), evaluate(c.rhs, self.env))
                     for c in sub.conditions]
        self.left = Graph(Z3, self.env, inst.lists, sub.input_shapes, inst.perms)
        self.right = Graph(Z3, self.env, inst.lists, sub.input_shapes, inst.perms)
        premises += self.left.well_formed(sub.lhs)
        self.premises = premises
        out = self.left.shape(sub.lhs)
        self.index = [z3.Int(f"i{k}") for k in range(len(out))]
        self.in_domain = z3.And([z3.And(i >= 0, i < n) for i, n in zip(self.index, out)])
        try:
            rwf = self.right.well_formed(sub.rhs)
            rshape = self.right.shape(sub.rhs)
        except IllFormed as err:
            self.static_failure: str | None = f"the right side is ill formed: {err}"
            self.goal_fails: Any = z3.BoolVal(True)
            return
        self.static_failure = None
        if len(rshape) != len(out):
            self.static_failure = (f"the right side has rank {len(rshape)}, the left side "
                                   f"{len(out)}")
            self.goal_fails = z3.BoolVal(True)
            return
        differ: list[Any] = []
        for gl, sl, jl in self.left.read(sub.lhs, self.index):
            for gr, sr, jr in self.right.read(sub.rhs, self.index):
                same = z3.And([a == b for a, b in zip(jl, jr)]) if sl == sr else \
                    z3.BoolVal(False)
                differ.append(z3.And(gl, gr, z3.Not(same)))
        self.goal_fails = z3.Or(z3.Not(z3.And(rwf)) if rwf else z3.BoolVal(False),
                                z3.Or([a != b for a, b in zip(out, rshape)] or
                                      [z3.BoolVal(False)]),
                                z3.And(self.in_domain, z3.Or(differ or [z3.BoolVal(False)])))

    def check(self, timeout_ms: int) -> tuple[Any, z3.Solver]:
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*self.premises, self.goal_fails)
        return s.check(), s


def _counterexample(ob: _Obligation, model: z3.ModelRef) -> Counterexample | None:
    """Read the model back and re-evaluate both graphs with plain integers (None: the model
    does not survive re-evaluation)."""
    sub, inst = ob.sub, ob.inst
    vals = {n: model.eval(ob.env[n], model_completion=True).as_long() for n in ob.names}
    left = Graph(INTS, vals, inst.lists, sub.input_shapes, inst.perms)
    right = Graph(INTS, vals, inst.lists, sub.input_shapes, inst.perms)
    shapes = {n: tuple(left.sizes(s)) for n, s in sub.inputs}
    perms = dict(inst.perms)
    if not all(left.well_formed(sub.lhs)):
        return None
    if ob.static_failure is not None:
        return Counterexample(vals, perms, shapes, None, None, None, ob.static_failure)
    if not all(right.well_formed(sub.rhs)):
        return Counterexample(vals, perms, shapes, None, None, None,
                              "the right side is ill formed at these shapes")
    ls, rs = tuple(left.shape(sub.lhs)), tuple(right.shape(sub.rhs))
    if ls != rs:
        return Counterexample(vals, perms, shapes, None, None, None,
                              f"the output shapes differ ({list(ls)} vs {list(rs)})")
    idx = tuple(model.eval(i, model_completion=True).as_long() for i in ob.index)
    lr, rr = read_at(left, sub.lhs, idx), read_at(right, sub.rhs, idx)
    if lr == rr:
        return None
    return Counterexample(vals, perms, shapes, idx, lr, rr, "the two sides read different "
                                                           "elements")


def read_at(g: Graph, node: Node, idx: tuple[int, ...]) -> tuple[str, tuple[int, ...]]:
    """The (input, index) a concrete graph reads at an output index."""
    hits = [(src, tuple(j)) for guard, src, j in g.read(node, list(idx)) if guard]
    if len(hits) != 1:
        raise IllFormed(f"{len(hits)} pieces cover output index {list(idx)}")
    return hits[0]


def _exhaustive(sub: Substitution, inst: Instance, bound: int,
                limit: int = ENUMERATION_LIMIT) -> bool | Counterexample | None:
    """Every assignment with sizes in [1, bound] and other parameters in [-bound, bound],
    evaluated with plain integers at every output index: True (no difference), a
    counterexample, or None when there are more than `limit` assignments."""
    names = _all_names(sub, inst.lists)
    sizes = _size_names(sub, inst.lists)
    ranges = [range(1, bound + 1) if n in sizes else range(-bound, bound + 1) for n in names]
    total = 1
    for r in ranges:
        total *= len(r)
    if total > limit:
        return None
    for values in itertools.product(*ranges):
        env = dict(zip(names, values))
        if not all(_compare(c.op, evaluate(c.lhs, env), evaluate(c.rhs, env))
                   for c in sub.conditions):
            continue
        left = Graph(INTS, env, inst.lists, sub.input_shapes, inst.perms)
        try:
            if not all(left.well_formed(sub.lhs)):
                continue
            out = tuple(left.shape(sub.lhs))
        except IllFormed:
            return True
        right = Graph(INTS, env, inst.lists, sub.input_shapes, inst.perms)
        shapes = {n: tuple(left.sizes(s)) for n, s in sub.inputs}
        try:
            ok = all(right.well_formed(sub.rhs))
        except IllFormed as err:
            return Counterexample(env, dict(inst.perms), shapes, None, None, None,
                                  f"the right side is ill formed: {err}")
        if not ok:
            return Counterexample(env, dict(inst.perms), shapes, None, None, None,
                                  "the right side is ill formed at these shapes")
        if tuple(right.shape(sub.rhs)) != out:
            return Counterexample(env, dict(inst.perms), shapes, None, None, None,
                                  f"the output shapes differ ({list(out)} vs "
                                  f"{list(right.shape(sub.rhs))})")
        for idx in itertools.product(*[range(n) for n in out]):
            lr, rr = read_at(left, sub.lhs, idx), read_at(right, sub.rhs, idx)
            if lr != rr:
                return Counterexample(env, dict(inst.perms), shapes, idx, lr, rr,
                                      "the two sides read different elements")
    return True


def prove(sub: Substitution, max_rank: int = DEFAULT_MAX_RANK, bound: int = DEFAULT_BOUND,
          timeout_ms: int = DEFAULT_TIMEOUT_MS, enum_bound: int = DEFAULT_ENUM_BOUND
          ) -> SubstProof:
    """Prove or refute one substitution (see the module docstring for the strength)."""
    start = time.perf_counter()
    result = SubstProof(sub.name, sub.file, sub.line, PROVED)
    bounds_used: list[int] = []
    count = 0
    has_variadic = bool(_variadic_names(sub))
    smt = ""
    for inst in instances(sub, max_rank):
        count += 1
        try:
            ob = _Obligation(sub, inst, None)
        except IllFormed:
            continue  # the left side is ill formed at this rank: nothing to prove
        answer, solver = ob.check(min(timeout_ms, FIRST_TRY_MS))
        if answer == z3.unknown:
            cx_or_ok = _exhaustive(sub, inst, enum_bound)
            if cx_or_ok is True:
                bounds_used.append(enum_bound)
                continue
            if isinstance(cx_or_ok, Counterexample):
                return SubstProof(sub.name, sub.file, sub.line, REFUTED,
                                  counterexample=cx_or_ok, message=str(cx_or_ok),
                                  seconds=time.perf_counter() - start, instances=count)
            ob = _Obligation(sub, inst, bound)
            answer, solver = ob.check(timeout_ms)
            bounds_used.append(bound)
        if answer == z3.sat:
            cx = _counterexample(ob, solver.model())
            if cx is None:
                return SubstProof(sub.name, sub.file, sub.line, UNKNOWN,
                                  message="a solver counterexample failed re-evaluation",
                                  seconds=time.perf_counter() - start, instances=count)
            return SubstProof(sub.name, sub.file, sub.line, REFUTED, counterexample=cx,
                              message=str(cx), seconds=time.perf_counter() - start,
                              instances=count)
        if answer != z3.unsat:
            return SubstProof(sub.name, sub.file, sub.line, UNKNOWN,
                              message=f"Z3 could not decide ranks "
                                      f"{ {k: len(v) for k, v in inst.lists.items()} }, "
                                      f"permutations {dict(inst.perms)} even with sizes <= "
                                      f"{bound} ({solver.reason_unknown()})",
                              seconds=time.perf_counter() - start, instances=count)
        if not smt:
            smt = solver.sexpr()
    if count == 0:
        return SubstProof(sub.name, sub.file, sub.line, UNKNOWN,
                          message="no rank makes the left side well formed",
                          seconds=time.perf_counter() - start)
    sizes = f"sizes <= {min(bounds_used)}" if bounds_used else "all sizes"
    ranks = f", ranks <= {max_rank}" if has_variadic else ""
    result.strength = sizes + ranks
    result.seconds = time.perf_counter() - start
    result.instances = count
    result.smtlib = smt
    result.message = f"{count} instance{'s' * (count != 1)} (ranks and permutations)"
    return result
