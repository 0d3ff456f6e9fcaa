"""The only module that talks to Z3 (besides the rule prover): an exact encoding of the semantics.

Z3's integer `/` and `%` are Euclidean. For a positive divisor Euclidean and floor division agree,
so `a floordiv b` is encoded as `a / b` when b > 0 and `(-a) / (-b)` when b < 0, with `b != 0`
recorded as a definedness condition; `a mod b` is `a % b` with `b > 0` recorded. A query never
treats an undefined operation as having a value: maps that may divide by zero inside their domain
get an `unknown` verdict that says where.

Answers are `Verdict`s: `holds` is True only with a proof (an unsat answer), False only with a
concrete counterexample that verifidx re-evaluated itself, and None for timeouts and unknowns.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import z3

from .errors import EvaluationError
from .expr import (
    Add,
    CeilDiv,
    Const,
    Dim,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    RtVar,
    Symbol,
    Variable,
)
from .indexing_map import IndexingMap

DEFAULT_TIMEOUT_MS = 2000
#: Range-variable boxes up to this many points are expanded into disjunctions (complete and
#: quantifier-free); larger ones use a quantified query under the timeout.
EXPANSION_LIMIT = 4096


@dataclass
class Verdict:
    """Outcome of a solver question. `holds` is True (proven), False (refuted) or None."""

    holds: bool | None
    counterexample: dict[str, int] | None = None
    lhs_value: object = None
    rhs_value: object = None
    message: str = ""
    seconds: float = 0.0
    #: Prints the query whose unsat answer is the proof (Z3's `Solver.sexpr`), called only when
    #: `smtlib` is read: printing costs a tenth of a decision and is rarely wanted.
    query: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    @property
    def smtlib(self) -> str:
        """The SMT-LIB2 text of the proving query ("" when the verdict needed no solver)."""
        return "" if self.query is None else self.query()

    def __bool__(self) -> bool:
        return self.holds is True

    @property
    def label(self) -> str:
        return {True: "holds", False: "fails", None: "unknown"}[self.holds]


class Encoder:
    """Translates expressions to Z3 terms, collecting the conditions under which they are
    defined."""

    def __init__(self, env: Mapping[Expr, z3.ArithRef]) -> None:
        self.env = env
        self.defined: list[z3.BoolRef] = []
        self._cache: dict[Expr, z3.ArithRef] = {}

    def __call__(self, e: Expr) -> z3.ArithRef:
        hit = self._cache.get(e)
        if hit is None:
            hit = self._encode(e)
            self._cache[e] = hit
        return hit

    def _encode(self, e: Expr) -> z3.ArithRef:
        if isinstance(e, Const):
            return z3.IntVal(e.value)
        bound = self.env.get(e)
        if bound is not None:  # variables, and whatever leaves a caller binds (rule patterns)
            return bound
        if isinstance(e, Variable):
            raise KeyError(f"no Z3 variable for {e}")
        if isinstance(e, Add):
            return z3.Sum([self(t) for t in e.terms])
        a, b = self(e.lhs), self(e.rhs)  # type: ignore[attr-defined]
        if isinstance(e, Mul):
            return a * b
        if isinstance(e, Min):
            return z3.If(a <= b, a, b)
        if isinstance(e, Max):
            return z3.If(a >= b, a, b)
        rhs = e.rhs  # type: ignore[attr-defined]
        if isinstance(e, Mod):
            if not isinstance(rhs, Const):
                self.defined.append(b > 0)
            return a % b
        if isinstance(e, FloorDiv):
            return self.floor_div(a, b, rhs)
        if isinstance(e, CeilDiv):
            return -self.floor_div(-a, b, rhs)
        raise TypeError(f"cannot encode {type(e).__name__}")

    def floor_div(self, a: z3.ArithRef, b: z3.ArithRef, rhs: Expr) -> z3.ArithRef:
        if isinstance(rhs, Const):
            return a / b if rhs.value > 0 else (-a) / (-b)
        self.defined.append(b != 0)
        return z3.If(b > 0, a / b, (-a) / (-b))


class _MapEncoding:
    """A map's membership predicate and results over given Z3 variables."""

    def __init__(self, m: IndexingMap, env: Mapping[Expr, z3.ArithRef]) -> None:
        self.map = m
        self.enc = Encoder(env)
        self.results = [self.enc(r) for r in m.results]
        conds: list[z3.BoolRef] = []
        for v, info in zip(m.variables, m.all_vars):
            x = env[v]
            conds += [x >= info.bounds.lo, x <= info.bounds.hi]
        for e, iv in m.constraints.items():
            x = self.enc(e)
            conds += [x >= iv.lo, x <= iv.hi]
        self.member = z3.And(conds) if conds else z3.BoolVal(True)
        if m.is_known_empty:
            self.member = z3.BoolVal(False)


def _vars(m: IndexingMap, prefix: str, shared: Mapping[Expr, z3.ArithRef] | None = None
          ) -> dict[Expr, z3.ArithRef]:
    env: dict[Expr, z3.ArithRef] = dict(shared or {})
    for v in m.variables:
        if v not in env:
            env[v] = z3.Int(f"{prefix}{v.prefix}{v.index}")
    return env


def _solver(timeout_ms: int) -> z3.Solver:
    s = z3.Solver()
    s.set("timeout", int(timeout_ms))
    return s


def _value(model: z3.ModelRef, x: z3.ArithRef) -> int:
    return model.eval(x, model_completion=True).as_long()  # type: ignore[no-any-return]


def _named_point(m: IndexingMap, model: z3.ModelRef, env: Mapping[Expr, z3.ArithRef]
                 ) -> dict[str, int]:
    from .syntax import variable_names

    names = variable_names(m)
    return {names[v]: _value(model, env[v]) for v in m.variables}


def is_empty(m: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether the map's domain has no point. `holds=False` comes with a witness point."""
    start = time.perf_counter()
    if m.is_undefined:
        return Verdict(None, message="an UNDEFINED map has no domain")
    if m.is_known_empty or any(v.bounds.is_empty for v in m.all_vars):
        return Verdict(True, message="known empty", seconds=time.perf_counter() - start)
    env = _vars(m, "")
    enc = _MapEncoding(m, env)
    s = _solver(timeout_ms)
    s.add(enc.member)
    r = s.check()
    took = time.perf_counter() - start
    if r == z3.unsat:
        return Verdict(True, seconds=took, query=s.sexpr)
    if r == z3.sat:
        model = s.model()
        values = [_value(model, env[v]) for v in m.variables]
        nd, ns = m.num_dims, m.num_range_vars + m.num_rt_vars
        point = _named_point(m, model, env)
        # re-check with our own evaluator before reporting
        dims, syms = values[:nd], values[nd : nd + ns]
        if not m.constraints_satisfied(dims, syms) or not all(
            x in info.bounds for x, info in zip(values, m.all_vars)
        ):
            return Verdict(None, message="solver witness failed re-evaluation", seconds=took)
        return Verdict(False, point, lhs_value=m.evaluate(dims, syms),
                       message="the domain has a point", seconds=took)
    return Verdict(None, message=f"solver answered {r} ({s.reason_unknown()})", seconds=took)


def _shape_mismatch(f: IndexingMap, g: IndexingMap) -> str | None:
    if f.num_dims != g.num_dims:
        return f"different numbers of dimensions ({f.num_dims} vs {g.num_dims})"
    if f.num_rt_vars != g.num_rt_vars:
        return f"different numbers of runtime variables ({f.num_rt_vars} vs {g.num_rt_vars})"
    if f.num_results != g.num_results:
        return f"different numbers of results ({f.num_results} vs {g.num_results})"
    return None


def equal(f: IndexingMap, g: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether `f` and `g` denote the same relation, for every value of the runtime variables.

    Range variables are existential, so maps that differ by renaming, reordering or rescaling
    them are equal. Decided exactly for range boxes up to EXPANSION_LIMIT points (the
    existential becomes a finite disjunction); beyond that a quantified query runs under the
    timeout and may answer unknown. Never answers True without an unsat proof."""
    start = time.perf_counter()
    if f.is_undefined or g.is_undefined:
        same = f.is_undefined and g.is_undefined
        return Verdict(True if same else None,
                       message="both UNDEFINED" if same else "an UNDEFINED map has no relation")
    if f == g:
        return Verdict(True, message="structurally identical", seconds=time.perf_counter() - start)
    mismatch = _shape_mismatch(f, g)
    if mismatch:
        f_empty, g_empty = is_empty(f, timeout_ms), is_empty(g, timeout_ms)
        if f_empty.holds and g_empty.holds:
            return Verdict(True, message="both empty", seconds=time.perf_counter() - start)
        if f_empty.holds is None or g_empty.holds is None:
            return Verdict(None, message=f"{mismatch}; emptiness undecided")
        return Verdict(False, message=mismatch, seconds=time.perf_counter() - start)
    if f.num_range_vars == g.num_range_vars and f.num_range_vars <= 4:
        for perm in itertools.permutations(range(f.num_range_vars)):
            v = _equal_under_pairing(f, g, perm, timeout_ms)
            if v.holds:
                v.seconds = time.perf_counter() - start
                return v
    for a, b, which in ((f, g, "first"), (g, f, "second")):
        v = _included(a, b, which, timeout_ms)
        if v.holds is not True:
            v.seconds = time.perf_counter() - start
            return v
    return Verdict(True, message="each relation contains the other",
                   seconds=time.perf_counter() - start)


def _equal_under_pairing(f: IndexingMap, g: IndexingMap, perm: Sequence[int], timeout_ms: int
                         ) -> Verdict:
    """Sufficient check: with g's range variable perm[i] set to f's i-th, both maps have the
    same domain and results. Quantifier-free."""
    env_f = _vars(f, "")
    shared: dict[Expr, z3.ArithRef] = {v: env_f[v] for v in f.variables
                                       if not isinstance(v, Symbol)}
    for i, j in enumerate(perm):
        shared[Symbol(j)] = env_f[Symbol(i)]
    env_g = _vars(g, "g_", shared)
    ef, eg = _MapEncoding(f, env_f), _MapEncoding(g, env_g)
    differ = z3.Or([a != b for a, b in zip(ef.results, eg.results)] or [z3.BoolVal(False)])
    s = _solver(timeout_ms)
    s.add(z3.Or(ef.member != eg.member, z3.And(ef.member, differ)))
    r = s.check()
    if r == z3.unsat:
        return Verdict(True, message="equal under a pairing of range variables",
                       query=s.sexpr)
    return Verdict(None)


def includes(a: IndexingMap, b: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether every tuple of a's relation is in b's (holds=False comes with a tuple of a that
    b lacks). Used for over-approximation checks: `includes(exact, map)`."""
    mismatch = _shape_mismatch(a, b)
    if mismatch:
        return Verdict(None, message=mismatch)
    return _included(a, b, "first", timeout_ms)


def _included(a: IndexingMap, b: IndexingMap, which: str, timeout_ms: int) -> Verdict:
    """Is every tuple of a's relation in b's? Refutation gives a concrete tuple."""
    env_a = _vars(a, "a_")
    shared: dict[Expr, z3.ArithRef] = {v: env_a[v] for v in a.variables
                                       if isinstance(v, (Dim, RtVar))}
    ea = _MapEncoding(a, env_a)
    s = _solver(timeout_ms)
    s.add(ea.member)
    box = 1
    for info in b.range_vars:
        box *= info.bounds.size
    if b.num_range_vars == 0 or box <= EXPANSION_LIMIT:
        ranges = [range(i.bounds.lo, i.bounds.hi + 1) for i in b.range_vars]
        for values in itertools.product(*ranges):
            env_b = dict(shared)
            env_b.update({Symbol(k): z3.IntVal(x) for k, x in enumerate(values)})
            eb = _MapEncoding(b, env_b)
            hit = z3.And(eb.member, *[x == y for x, y in zip(ea.results, eb.results)])
            s.add(z3.Not(hit))
    else:
        found = _cheap_counterexample(a, b, which, timeout_ms)
        if found is not None:
            return found
        bound = [z3.Int(f"b_s{k}") for k in range(b.num_range_vars)]
        env_b = dict(shared)
        env_b.update({Symbol(k): x for k, x in enumerate(bound)})
        eb = _MapEncoding(b, env_b)
        hit = z3.And(eb.member, *[x == y for x, y in zip(ea.results, eb.results)])
        s.add(z3.ForAll(bound, z3.Not(hit)))
    r = s.check()
    if r == z3.unsat:
        return Verdict(True, query=s.sexpr)
    if r == z3.sat:
        return _counterexample(a, b, which, s.model(), env_a)
    return Verdict(None, message=f"solver answered unknown ({s.reason_unknown()})")


#: Points of `a` tried before a quantified inclusion query (corners, then random samples).
CHEAP_SEARCH_POINTS = 64


def _cheap_counterexample(a: IndexingMap, b: IndexingMap, which: str, timeout_ms: int
                          ) -> Verdict | None:
    """Before a quantified query (b's range box is too large to expand): try points of `a` --
    the corners of its box (range variables at their extremes), then random points -- evaluated
    exactly, and ask a quantifier-free question for each: does `b` relate the same runtime and
    dimension values to the same results for some range values? unsat is a proven
    counterexample; anything else moves on."""
    import random

    if a.is_known_empty:
        return None
    boxes = [info.bounds for info in a.all_vars]
    rng = random.Random(0)
    corners = itertools.islice(itertools.product(*[sorted({iv.lo, iv.hi}) for iv in boxes]),
                               CHEAP_SEARCH_POINTS // 2)
    randoms = (tuple(rng.randint(iv.lo, iv.hi) for iv in boxes)
               for _ in range(CHEAP_SEARCH_POINTS // 2))
    nd, nr = a.num_dims, a.num_range_vars
    budget = max(50, timeout_ms // CHEAP_SEARCH_POINTS)
    for point in itertools.chain(corners, randoms):
        dims, syms = point[:nd], point[nd:]
        if not a.constraints_satisfied(dims, syms):
            continue
        result = a.evaluate(dims, syms)
        env_b: dict[Expr, z3.ArithRef] = {Dim(i): z3.IntVal(x) for i, x in enumerate(dims)}
        env_b.update({RtVar(i): z3.IntVal(x) for i, x in enumerate(point[nd + nr:])})
        env_b.update({Symbol(k): z3.Int(f"b_s{k}") for k in range(b.num_range_vars)})
        eb = _MapEncoding(b, env_b)
        s = _solver(budget)
        s.add(eb.member, *[x == y for x, y in zip(eb.results, result)])
        if s.check() != z3.unsat:
            continue
        from .syntax import variable_names

        names = variable_names(a)
        named = {names[v]: x for v, x in zip(a.variables, point)}
        other = "second" if which == "first" else "first"
        lhs, rhs = (result, None) if which == "first" else (None, result)
        return Verdict(False, named, lhs_value=lhs, rhs_value=rhs,
                       message=f"the {which} map relates {named} to {result}; the {other} "
                               f"map does not (checked at that point)")
    return None


def _counterexample(a: IndexingMap, b: IndexingMap, which: str, model: z3.ModelRef,
                    env_a: Mapping[Expr, z3.ArithRef]) -> Verdict:
    values = [_value(model, env_a[v]) for v in a.variables]
    nd, nr = a.num_dims, a.num_range_vars
    dims, syms = values[:nd], values[nd:]
    rts = values[nd + nr :]
    result = a.evaluate(dims, syms)
    point = _named_point(a, model, env_a)
    # Re-check with the evaluator: the tuple must be absent from b (when b's range box is small).
    b_value: object = None
    box = 1
    for info in b.range_vars:
        box *= info.bounds.size
    if box <= EXPANSION_LIMIT and not b.is_known_empty:
        ranges = [range(i.bounds.lo, i.bounds.hi + 1) for i in b.range_vars]
        for svals in itertools.product(*ranges):
            bsyms = [*svals, *rts]
            if all(x in i.bounds for x, i in zip([*dims, *bsyms], b.all_vars)):
                try:
                    if b.constraints_satisfied(dims, bsyms):
                        got = b.evaluate(dims, bsyms)
                        if got == result:
                            return Verdict(None, message="solver counterexample failed "
                                                         "re-evaluation")
                        if b.num_range_vars == 0:
                            b_value = got
                except EvaluationError:
                    continue
    other = "second" if which == "first" else "first"
    where = "outside its domain" if b_value is None else f"gives {b_value}"
    msg = (f"the {which} map relates {point} to {result}; the {other} map does not "
           f"({where})")
    lhs, rhs = (result, b_value) if which == "first" else (b_value, result)
    return Verdict(False, point, lhs_value=lhs, rhs_value=rhs, message=msg)


# -- unions of maps, as relations ----------------------------------------------------------------


def equal_relations(lhs: Sequence[IndexingMap], rhs: Sequence[IndexingMap],
                    timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether the union of the `lhs` maps' relations equals the union of the `rhs` maps'.

    An op that reads through several pieces (concatenate, pad) has one map per piece, so two
    graphs agree exactly when their unions do, even when the pieces are cut differently. Every
    tuple of every map must lie in some map of the other side; each inclusion is one query
    whose range-variable boxes are expanded up to EXPANSION_LIMIT points (else quantified under
    the timeout). A refutation names the map it came from (`lhs[i]`/`rhs[i]`) and a tuple."""
    start = time.perf_counter()
    sides = (list(lhs), list(rhs))
    for side in sides:
        for m in side:
            if m.is_undefined:
                return Verdict(None, message="an UNDEFINED map has no relation")
            # every map term is defined everywhere: maps divide by constants (docs/semantics.md)
    live = tuple([m for m in side if not m.is_known_empty] for side in sides)
    shapes = {(m.num_dims, m.num_rt_vars, m.num_results) for side in live for m in side}
    if len(shapes) > 1:
        return Verdict(None, message="the maps differ in their numbers of dimensions, runtime "
                                     "variables or results")
    for which, mine, theirs in (("lhs", sides[0], live[1]), ("rhs", sides[1], live[0])):
        for i, m in enumerate(mine):
            if m.is_known_empty:
                continue
            v = _included_in_union(m, theirs, f"{which}[{i}]", timeout_ms)
            if v.holds is not True:
                v.seconds = time.perf_counter() - start
                return v
    return Verdict(True, message="each union contains the other",
                   seconds=time.perf_counter() - start)


def _included_in_union(a: IndexingMap, bs: Sequence[IndexingMap], which: str, timeout_ms: int
                       ) -> Verdict:
    """Is every tuple of a's relation in the relation of some map of `bs`?"""
    env_a = _vars(a, "a_")
    shared: dict[Expr, z3.ArithRef] = {v: env_a[v] for v in a.variables
                                       if isinstance(v, (Dim, RtVar))}
    ea = _MapEncoding(a, env_a)
    s = _solver(timeout_ms)
    s.add(ea.member)
    for k, b in enumerate(bs):
        box = 1
        for info in b.range_vars:
            box *= info.bounds.size
        if box <= EXPANSION_LIMIT:
            ranges = [range(i.bounds.lo, i.bounds.hi + 1) for i in b.range_vars]
            for values in itertools.product(*ranges):
                env_b = dict(shared)
                env_b.update({Symbol(j): z3.IntVal(x) for j, x in enumerate(values)})
                eb = _MapEncoding(b, env_b)
                s.add(z3.Not(z3.And(eb.member, *[x == y for x, y in
                                                 zip(ea.results, eb.results)])))
        else:
            bound = [z3.Int(f"b{k}_s{j}") for j in range(b.num_range_vars)]
            env_b = dict(shared)
            env_b.update({Symbol(j): x for j, x in enumerate(bound)})
            eb = _MapEncoding(b, env_b)
            s.add(z3.ForAll(bound, z3.Not(z3.And(eb.member, *[x == y for x, y in
                                                              zip(ea.results, eb.results)]))))
    r = s.check()
    if r == z3.unsat:
        return Verdict(True, query=s.sexpr)
    if r != z3.sat:
        return Verdict(None, message=f"solver answered unknown ({s.reason_unknown()})")
    model = s.model()
    found = [_value(model, env_a[v]) for v in a.variables]
    nd, nr = a.num_dims, a.num_range_vars
    dims, syms, rts = found[:nd], found[nd:], found[nd + nr:]
    result = a.evaluate(dims, syms)
    # Re-check with verifidx's own evaluator: no map of the other side may relate the point
    # to the same result (checked where the other side's range boxes are small).
    for b in bs:
        box = 1
        for info in b.range_vars:
            box *= info.bounds.size
        if box > EXPANSION_LIMIT:
            return Verdict(None, message="counterexample not re-checked (range box too large)")
        for svals in itertools.product(*[range(i.bounds.lo, i.bounds.hi + 1)
                                         for i in b.range_vars]):
            bsyms = [*svals, *rts]
            if not all(x in i.bounds for x, i in zip([*dims, *bsyms], b.all_vars)):
                continue
            try:
                if b.constraints_satisfied(dims, bsyms) and b.evaluate(dims, bsyms) == result:
                    return Verdict(None, message="solver counterexample failed re-evaluation")
            except EvaluationError:
                continue
    point = _named_point(a, model, env_a)
    other = "rhs" if which.startswith("lhs") else "lhs"
    return Verdict(False, point, lhs_value=result if which.startswith("lhs") else None,
                   rhs_value=result if which.startswith("rhs") else None,
                   message=f"{which} relates {point} to {result}; no map of the {other} does")
