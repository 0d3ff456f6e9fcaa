"""Proving a substitution: both graphs compose to the same map for every allowed shape.

For each rank of the variadic size lists (1..`max_rank`) and each assignment of the named
permutations (an *instance*), the obligation is one query over the sizes as integer variables:

    sizes >= 1  and  conditions  and  the left graph is well formed
      ==>  the right graph is well formed, both output shapes are equal, and at every output
           index both graphs read the same element of the same input (or the same pad scalar).

Each instance is tried in turn, with deterministic budgets only (the same verdict on every
machine and under any load, so that `verifidx check` can run the same steps again):

1. Z3 on the query with every size unbounded, under the resource limit `rlimit`;
2. when Z3 gives up (products and divisions by symbolic sizes in reshapes are non-linear):
   every assignment with sizes in [1, M] and other parameters in [-M, M] evaluated with plain
   integers (M = `enum_bound`), when there are at most ENUMERATION_LIMIT assignments;
3. else Z3 on the query with `size <= N` added (N = `bound`), under `bounded_rlimit`.

Strength says which held for the weakest instance: `all sizes[, ranks <= R]` or `sizes <= M[,
ranks <= R]`. The proof lists, per instance, the step that proved it (an `Obligation`, with
the query text for Z3 steps): that is what the certificate stores and the gate re-runs. Only
unsat answers prove; a sat answer is a counterexample whose reads are re-evaluated with plain
integers before it is reported. This module builds terms through `verifidx.solve.smt_terms` and runs
queries through the rule prover's script runner: it never imports Z3.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifidx.analysis.subst.model import Node, SizeList, Substitution, evaluate, names_in
from verifidx.analysis.subst.semantics import INTS, SOLVER, Backend, Graph, IllFormed
from verifidx.rules.prover import ScriptRun
from verifidx.solve import smt_terms

PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"
DEFAULT_MAX_RANK = 3
DEFAULT_BOUND = 8
DEFAULT_ENUM_BOUND = 4
#: Z3 resource units (deterministic; about 2-3 million a second on one core) of the unbounded
#: query of one instance, and of the bounded one.
DEFAULT_RLIMIT = 1_000_000
DEFAULT_BOUNDED_RLIMIT = 5_000_000
#: The wall-clock net of a Z3 call: None is the rule prover's `safety_net_ms` of its budget, far
#: above it (a net for a runaway process, never a budget; an answer it cuts short is unknown).
DEFAULT_TIMEOUT_MS: int | None = None
#: The enumeration runs only up to this many assignments per instance (4^9 = 262,144: nine
#: sizes up to 4, e.g. three reshaped rank-3 shapes).
ENUMERATION_LIMIT = 300_000

#: How an instance was proven: Z3 (`bound` None: every size; else sizes <= bound), exhaustive
#: evaluation of sizes <= bound, or nothing to prove (the left side is ill formed at these ranks).
Z3_METHOD, ENUMERATION, VACUOUS = "z3", "enumeration", "ill-formed left side"


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


@dataclass(frozen=True)
class Obligation:
    """One instance and the step that proved it (`smtlib`: the query, for Z3 steps, and
    `rlimit`: the resource limit it answered unsat within, which the gate gives it again)."""

    ranks: tuple[tuple[str, int], ...]
    perms: tuple[tuple[str, tuple[int, ...]], ...]
    method: str
    bound: int | None = None
    smtlib: str = field(default="", repr=False)
    rlimit: int | None = None

    @staticmethod
    def of(inst: Instance, method: str, bound: int | None = None, smtlib: str = "",
           rlimit: int | None = None) -> Obligation:
        return Obligation(tuple((k, len(v)) for k, v in inst.lists.items()),
                          tuple(inst.perms.items()), method, bound, smtlib, rlimit)

    @property
    def key(self) -> tuple[object, ...]:
        """Which instance (ranks and permutations)."""
        return (self.ranks, self.perms)

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"ranks": dict(self.ranks),
                                  "perms": {k: list(v) for k, v in self.perms},
                                  "method": self.method}
        if self.bound is not None:
            doc["bound"] = self.bound
        if self.smtlib:
            doc["smtlib"] = self.smtlib
        if self.rlimit is not None:
            doc["rlimit"] = self.rlimit
        return doc

    @staticmethod
    def from_json(doc: object) -> Obligation:
        """Raises ValueError (or KeyError, TypeError) on a malformed entry."""
        if not isinstance(doc, dict):
            raise ValueError("an obligation is an object")
        ranks = tuple((str(k), int(v)) for k, v in doc["ranks"].items())
        perms = tuple((str(k), tuple(int(x) for x in v)) for k, v in doc["perms"].items())
        bound, rlimit = doc.get("bound"), doc.get("rlimit")
        if any(v is not None and not isinstance(v, int) for v in (bound, rlimit)):
            raise ValueError("bound and rlimit are integers")
        return Obligation(ranks, perms, str(doc["method"]), bound, str(doc.get("smtlib", "")),
                          rlimit)


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
    obligations: list[Obligation] = field(default_factory=list, repr=False)
    max_rank: int = DEFAULT_MAX_RANK
    recheck: str | None = None  # check: "re-run" (now) or "cache" (re-run on this machine before)

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


def describe(inst: Instance) -> str:
    """`ranks {a: 2}, permutations {p: [1, 0]}`: which instance, in messages and queries."""
    ranks = ", ".join(f"{k}: {len(v)}" for k, v in inst.lists.items())
    perms = ", ".join(f"{k}: {list(v)}" for k, v in inst.perms.items())
    return f"ranks {{{ranks}}}, permutations {{{perms}}}"


class _Obligation:
    """The query of one instance, with the variables needed to read a model back."""

    def __init__(self, sub: Substitution, inst: Instance, bound: int | None) -> None:
        b = SOLVER
        self.sub, self.inst, self.bound = sub, inst, bound
        self.names = _all_names(sub, inst.lists)
        self.env = {n: smt_terms.int_var(n) for n in self.names}
        sizes = _size_names(sub, inst.lists)
        premises: list[Any] = [self.env[n] >= 1 for n in self.names if n in sizes]
        if bound is not None:
            premises += [self.env[n] <= bound if n in sizes else
                         b.and_(self.env[n] >= -bound, self.env[n] <= bound)
                         for n in self.names]
        premises += [_compare(c.op, evaluate(c.lhs, self.env), evaluate(c.rhs, self.env))
                     for c in sub.conditions]
        self.left = Graph(b, self.env, inst.lists, sub.input_shapes, inst.perms)
        self.right = Graph(b, self.env, inst.lists, sub.input_shapes, inst.perms)
        premises += self.left.well_formed(sub.lhs)
        self.premises = premises
        out = self.left.shape(sub.lhs)
        self.index = [smt_terms.int_var(f"i{k}") for k in range(len(out))]
        self.in_domain = b.and_(*[b.and_(i >= 0, i < n) for i, n in zip(self.index, out)])
        try:
            rwf = self.right.well_formed(sub.rhs)
            rshape = self.right.shape(sub.rhs)
        except IllFormed as err:
            self.static_failure: str | None = f"the right side is ill formed: {err}"
            self.goal_fails: Any = b.true
            return
        self.static_failure = None
        if len(rshape) != len(out):
            self.static_failure = (f"the right side has rank {len(rshape)}, the left side "
                                   f"{len(out)}")
            self.goal_fails = b.true
            return
        differ: list[Any] = []
        for gl, sl, jl in self.left.read(sub.lhs, self.index):
            for gr, sr, jr in self.right.read(sub.rhs, self.index):
                same = b.and_(*[x == y for x, y in zip(jl, jr)]) if sl == sr else b.false
                differ.append(b.and_(gl, gr, b.not_(same)))
        self.goal_fails = b.or_(b.not_(b.and_(*rwf)) if rwf else b.false,
                                b.or_(*[x != y for x, y in zip(out, rshape)]),
                                b.and_(self.in_domain, b.or_(*differ)))

    def query(self) -> str:
        """The SMT-LIB2 script: satisfiable exactly when the two sides differ at this instance
        (within the bound, if any)."""
        within = "all sizes" if self.bound is None else f"sizes <= {self.bound}"
        header = (f"verifidx substitution {self.sub.name}: {describe(self.inst)}, {within}\n"
                  f"{self.sub.normalized_text}\n"
                  "unsat = the two sides read the same elements wherever the left one is "
                  "well formed")
        return smt_terms.query_text([*self.premises, self.goal_fails], header)

    def check(self, rlimit: int, timeout_ms: int | None
              ) -> tuple[str, dict[str, int] | None, str]:
        """Run the query under the resource limit: (answer, model values when sat, query)."""
        text = self.query()
        run = ScriptRun(rlimit, timeout_ms)
        answers = run.run(text)
        if answers == ["sat"]:
            names = [*self.names, *(f"i{k}" for k in range(len(self.index)))]
            values = smt_terms.parse_values(run.query(f"(get-value ({' '.join(names)}))")) \
                if names else {}
            if all(n in values for n in names):
                return "sat", values, text
            return "unknown", None, text
        return (answers[0] if answers == ["unsat"] else "unknown"), None, text


def obligation_query(sub: Substitution, inst: Instance, bound: int | None) -> str | None:
    """The query of one instance, rebuilt from the substitution's text (None: the left side is
    ill formed at these ranks, nothing to prove). `verifidx check` compares it with the
    certificate's and runs it again."""
    try:
        return _Obligation(sub, inst, bound).query()
    except IllFormed:
        return None


def _counterexample(ob: _Obligation, vals_and_index: Mapping[str, int]
                    ) -> Counterexample | None:
    """Read the model back and re-evaluate both graphs with plain integers (None: the model
    does not survive re-evaluation)."""
    sub, inst = ob.sub, ob.inst
    vals = {n: vals_and_index[n] for n in ob.names}
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
    idx = tuple(vals_and_index[f"i{k}"] for k in range(len(ob.index)))
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


def enumeration_size(sub: Substitution, inst: Instance, bound: int) -> int:
    """How many assignments `exhaustive` evaluates at this bound."""
    sizes = _size_names(sub, inst.lists)
    total = 1
    for n in _all_names(sub, inst.lists):
        total *= bound if n in sizes else 2 * bound + 1
    return total


def _candidates(sub: Substitution, inst: Instance, names: Sequence[str],
                ranges: Sequence[range]) -> Iterator[tuple[int, ...]] | None:
    """The assignments, in `itertools.product` order, at which the conditions and the left
    side's well-formedness hold, decided for all of them at once: the graph's shape code runs
    once over numpy arrays of Python integers (exact, as plain integers are), one element per
    assignment. An assignment where a division by zero occurs is kept, for the plain-integer
    evaluation to decide. None: the left side is ill formed at these ranks."""
    import numpy as np

    if not names:
        return iter([()])
    mesh = np.meshgrid(*[np.arange(r.start, r.stop, dtype=np.int64) for r in ranges],
                       indexing="ij")  # C order: the order of itertools.product
    columns = [m.ravel().astype(object) for m in mesh]
    env = {n: c for n, c in zip(names, columns)}
    by_zero: list[Any] = []

    def nonzero(b: Any) -> Any:
        zero = b == 0
        if np.any(zero):
            by_zero.append(zero)
            return np.where(zero, 1, b)
        return b

    arrays = Backend(True, False, lambda *c: np.logical_and.reduce([True, True, *c]),
                     lambda *c: np.logical_or.reduce([False, False, *c]), np.logical_not,
                     np.where, lambda a, b: a // nonzero(b), lambda a, b: a % nonzero(b))
    holds: list[Any] = [_compare(c.op, evaluate(c.lhs, env), evaluate(c.rhs, env))
                        for c in sub.conditions]
    try:
        holds += Graph(arrays, env, inst.lists, sub.input_shapes, inst.perms
                       ).well_formed(sub.lhs)
    except IllFormed:
        return None
    keep = np.ones(len(columns[0]), dtype=bool)
    for h in holds:
        keep &= np.asarray(np.broadcast_to(h, keep.shape), dtype=bool)
    for z in by_zero:
        keep |= np.asarray(z, dtype=bool)
    return (tuple(int(c[k]) for c in columns) for k in np.flatnonzero(keep))


def exhaustive(sub: Substitution, inst: Instance, bound: int,
               limit: int = ENUMERATION_LIMIT) -> bool | Counterexample | None:
    """Every assignment with sizes in [1, bound] and other parameters in [-bound, bound],
    evaluated with plain integers at every output index: True (no difference), a
    counterexample, or None when there are more than `limit` assignments. Deterministic (no
    clock, no solver): `verifidx check` runs it again. The assignments where the conditions
    or the left side's well-formedness fail are sorted out first, all at once (`_candidates`);
    the others are evaluated one by one."""
    names = _all_names(sub, inst.lists)
    sizes = _size_names(sub, inst.lists)
    if enumeration_size(sub, inst, bound) > limit:
        return None
    ranges = [range(1, bound + 1) if n in sizes else range(-bound, bound + 1) for n in names]
    candidates = _candidates(sub, inst, names, ranges)
    if candidates is None:
        return True
    for values in candidates:
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


def strength_of(sub: Substitution, obligations: Sequence[Obligation], max_rank: int) -> str:
    """`all sizes` when every instance was proven without a bound, else the smallest bound;
    with `, ranks <= R` when the substitution has variadic shapes."""
    bounds = [o.bound for o in obligations if o.method != VACUOUS and o.bound is not None]
    sizes = f"sizes <= {min(bounds)}" if bounds else "all sizes"
    return sizes + (f", ranks <= {max_rank}" if _variadic_names(sub) else "")


def prove(sub: Substitution, max_rank: int = DEFAULT_MAX_RANK, bound: int = DEFAULT_BOUND,
          timeout_ms: int | None = DEFAULT_TIMEOUT_MS, enum_bound: int = DEFAULT_ENUM_BOUND,
          rlimit: int = DEFAULT_RLIMIT, bounded_rlimit: int = DEFAULT_BOUNDED_RLIMIT
          ) -> SubstProof:
    """Prove or refute one substitution (see the module docstring for the strength).

    Every budget is deterministic: Z3 resource limits (`rlimit` for the unbounded query of an
    instance, `bounded_rlimit` for the bounded one) and a count of assignments for the
    enumeration; `timeout_ms` is only a safety net per Z3 call (an answer it cuts short is
    unknown), so the same substitution gives the same verdict and certificate everywhere."""
    start = time.perf_counter()
    obligations: list[Obligation] = []

    def done(verdict: str, **kw: Any) -> SubstProof:
        return SubstProof(sub.name, sub.file, sub.line, verdict,
                          seconds=time.perf_counter() - start, instances=len(obligations),
                          obligations=obligations, max_rank=max_rank, **kw)

    def refuted(cx: Counterexample) -> SubstProof:
        return done(REFUTED, counterexample=cx, message=str(cx))

    for inst in instances(sub, max_rank):
        try:
            ob = _Obligation(sub, inst, None)
        except IllFormed:  # the left side is ill formed at these ranks: nothing to prove
            obligations.append(Obligation.of(inst, VACUOUS))
            continue
        answer, model, text = ob.check(rlimit, timeout_ms)
        if answer == "unsat":
            obligations.append(Obligation.of(inst, Z3_METHOD, None, text, rlimit))
            continue
        if answer == "unknown":
            found = exhaustive(sub, inst, enum_bound)
            if found is True:
                obligations.append(Obligation.of(inst, ENUMERATION, enum_bound))
                continue
            if isinstance(found, Counterexample):
                obligations.append(Obligation.of(inst, ENUMERATION, enum_bound))
                return refuted(found)
            ob = _Obligation(sub, inst, bound)
            answer, model, text = ob.check(bounded_rlimit, timeout_ms)
            if answer == "unsat":
                obligations.append(Obligation.of(inst, Z3_METHOD, bound, text, bounded_rlimit))
                continue
        if answer == "sat":
            assert model is not None
            cx = _counterexample(ob, model)
            if cx is None:
                return done(UNKNOWN, message=f"{describe(inst)}: a solver counterexample "
                                             "failed re-evaluation")
            return refuted(cx)
        return done(UNKNOWN, message=f"Z3 could not decide {describe(inst)} within its "
                                     f"resource limit, even with sizes <= {bound}, and the "
                                     f"enumeration of sizes <= {enum_bound} has more than "
                                     f"{ENUMERATION_LIMIT} assignments")
    if not obligations or all(o.method == VACUOUS for o in obligations):
        return done(UNKNOWN, message="no rank makes the left side well formed")
    by_method = Counter(o.method if o.method == VACUOUS else
                        f"{o.method}, {'all sizes' if o.bound is None else f'sizes <= {o.bound}'}"
                        for o in obligations)
    how = "; ".join(f"{n} by {m}" for m, n in sorted(by_method.items()))
    count = len(obligations)
    return done(PROVED, strength=strength_of(sub, obligations, max_rank),
                message=f"{count} instance{'s' * (count != 1)} (ranks and permutations): "
                        f"{how}")


def generation_prover(enum_bound: int) -> Callable[[Substitution], SubstProof]:
    """The generator's prover: resource limits only (the wall-clock net is `prove`'s safety
    net, far above them), so that its verdicts do not depend on the machine's load."""
    return functools.partial(_prove_or_unknown, enum_bound=enum_bound)


def _prove_or_unknown(sub: Substitution, enum_bound: int) -> SubstProof:
    """The prover; an exception inside it counts as unknown (never as proven)."""
    try:
        return prove(sub, timeout_ms=None, enum_bound=enum_bound)
    except (ArithmeticError, IllFormed, KeyError) as err:
        return SubstProof(sub.name, sub.file, sub.line, UNKNOWN,
                          message=f"the prover failed: {type(err).__name__}: {err}")
