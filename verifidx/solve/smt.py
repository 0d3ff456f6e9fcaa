"""The only module that talks to Z3 (besides the rule prover): an exact encoding of the semantics.

Z3's integer `/` and `%` are Euclidean. For a positive divisor Euclidean and floor division agree,
so `a floordiv b` is encoded as `a / b` when b > 0 and `(-a) / (-b)` when b < 0, with `b != 0`
recorded as a definedness condition; `a mod b` is `a % b` with `b > 0` recorded. A query never
treats an undefined operation as having a value: maps that may divide by zero inside their domain
get an `unknown` verdict that says where.

Answers are `Verdict`s: `holds` is True only with a proof (an unsat answer, or isl's decision of
Presburger arithmetic through `presburger`), False only with a concrete counterexample that
verifidx re-evaluated itself, and None for spent budgets and unknowns.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import z3

from ..core.errors import EvaluationError
from ..core.expr import (
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
    Size,
    Symbol,
    Variable,
)
from ..core.indexing_map import IndexingMap, merge_sizes
from ..core.interval import Interval
from ..core.syntax import print_point, print_values, variable_names
from . import smt_terms
from .smt_terms import RLIMIT_PER_MS

if TYPE_CHECKING:
    from .presburger import Difference

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


def _solver(timeout_ms: int) -> smt_terms.Solver:
    """A solver whose budget is Z3's deterministic resource count (`rlimit`), so that the same
    query gets the same verdict under any machine load."""
    return smt_terms.Solver(int(timeout_ms) * RLIMIT_PER_MS)


def _value(model: z3.ModelRef, x: z3.ArithRef) -> int:
    return model.eval(x, model_completion=True).as_long()  # type: ignore[no-any-return]


def _named_point(m: IndexingMap, model: z3.ModelRef, env: Mapping[Expr, z3.ArithRef]
                 ) -> dict[str, int]:
    names = variable_names(m)
    return {names[v]: _value(model, env[v]) for v in m.variables}


def is_empty(m: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether the map's domain has no point. `holds=False` comes with a witness point."""
    start = time.perf_counter()
    if m.is_undefined:
        return Verdict(None, message="an UNDEFINED map has no domain")
    if m.is_known_empty or any(v.bounds.is_empty for v in m.all_vars):
        return Verdict(True, message="known empty", seconds=time.perf_counter() - start)
    if m.sizes:
        return _timed(_is_empty_with_sizes(m, timeout_ms), start)
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


def equal(f: IndexingMap, g: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS, *,
          quick: bool = True) -> Verdict:
    """Whether `f` and `g` denote the same relation, for every value of the runtime variables.

    Range variables are existential, so maps that differ by renaming, reordering or rescaling
    them are equal. In order: a counterexample found by sampling points and checked by exact
    evaluation (no solver); isl's decision of Presburger arithmetic for quasi-affine maps
    (`presburger`, no enumeration of range variables; a "differ" from isl is turned into a
    tuple and checked by evaluation too); Z3 for what isl cannot express or decide within its
    budget (range boxes up to EXPANSION_LIMIT points expanded, larger ones quantified).
    `quick=False` skips the first two (a caller that ran `quick_equal` already). Never answers
    True without a decision procedure's proof."""
    start = time.perf_counter()
    if f.is_undefined or g.is_undefined:
        same = f.is_undefined and g.is_undefined
        return Verdict(True if same else None,
                       message="both UNDEFINED" if same else "an UNDEFINED map has no relation")
    if f == g:
        return Verdict(True, message="structurally identical", seconds=time.perf_counter() - start)
    if f.sizes or g.sizes:
        return _timed(_equal_with_sizes(f, g, timeout_ms), start)
    mismatch = _shape_mismatch(f, g)
    if mismatch:
        f_empty, g_empty = is_empty(f, timeout_ms), is_empty(g, timeout_ms)
        if f_empty.holds and g_empty.holds:
            return Verdict(True, message="both empty", seconds=time.perf_counter() - start)
        if f_empty.holds is None or g_empty.holds is None:
            return Verdict(None, message=f"{mismatch}; emptiness undecided")
        return Verdict(False, message=mismatch, seconds=time.perf_counter() - start)
    v = quick_equal(f, g, timeout_ms) if quick else None
    if v is not None:
        v.seconds = time.perf_counter() - start
        return v
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


def quick_equal(f: IndexingMap, g: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS
                ) -> Verdict | None:
    """The decisions that enumerate nothing: isl's decision and a sampled counterexample checked
    by evaluation. None when neither decides (maps isl cannot express, isl's budget spent), or
    when the maps are UNDEFINED or differ in shape (`equal` answers those).

    Sampling comes first, as far as it is cheap: SAMPLED_POINTS points of one map (corners,
    then seeded uniform points, one numpy pass) checked against the other when that one has no
    range variables, and against a map with range variables only the two corners and only for
    a range box up to QUICK_BOX points (a numpy pass over the box per check, which equal pairs
    pay for nothing). Then isl, whose
    "differ" brings a tuple of the difference (with isl's range values for the map that has
    it) that one evaluation checks. When isl cannot decide, the remaining samples are tried."""
    if f.is_undefined or g.is_undefined or _shape_mismatch(f, g):
        return None
    if f.sizes or g.sizes:  # universal over sizes: `equal` takes the sized path
        return None
    found = _sampled_counterexample(f, g, quick=True)
    if found is None:  # (a Verdict is truthy only when it holds)
        found = _presburger_equal(f, g, timeout_ms)
    if found is None and (f.num_range_vars or g.num_range_vars):
        found = _sampled_counterexample(f, g)
    return found


#: Points of each map tried by `_sampled_counterexample` against a map without range
#: variables: the two corners, then seeded uniform points, all in one numpy pass over both maps.
SAMPLED_POINTS = 256
#: Against a map with range variables each point costs a pass over that map's range box: the
#: points are this budget over the box (at least 4, at most SAMPLED_POINTS).
SAMPLED_RANGE_BUDGET = 1 << 14
#: Largest range box that `quick_equal` checks sampled corners against before asking isl.
QUICK_BOX = 2048
#: Points tried, in exact Python integers, where int64 is not exact for a map's box.
SAMPLED_POINTS_EXACT = 4


def _sample_points(m: IndexingMap, count: int) -> list[tuple[int, ...]]:
    """Up to `count` points of m's box in Python integers: all variables at their lower ends,
    at their upper ends, then seeded random points (the same points on every run)."""
    import random

    boxes = [info.bounds for info in m.all_vars]
    points = [tuple(iv.lo for iv in boxes), tuple(iv.hi for iv in boxes)]
    rng = random.Random(len(boxes))
    points += [tuple(rng.randint(iv.lo, iv.hi) for iv in boxes) for _ in range(count - 2)]
    return points[:count]


def _sampled_counterexample(f: IndexingMap, g: IndexingMap, quick: bool = False
                            ) -> Verdict | None:
    """A tuple that one map relates and the other does not, found at sampled points of the
    one (`_unrelated_samples`) and confirmed exactly: the one map evaluated in Python integers
    gives the tuple, and the other relates it to nothing (evaluated in Python integers, or,
    with range variables, at every point of its range box where int64 is exact). None when the
    samples find nothing (or cannot be checked). `quick=True` limits the checks against a map
    with range variables as `quick_equal` says."""
    from ..core.vectorised import relates

    # without range variables, on one box and one domain, the first map's points cover both
    # directions: a point of that domain where the results differ is one either way
    same = f.num_range_vars == g.num_range_vars == 0 and f.all_vars == g.all_vars and \
        f.constraints == g.constraints
    for a, b, which in ((f, g, "first"), (g, f, "second"))[:1 if same else 2]:
        if a.is_known_empty or any(info.bounds.is_empty for info in a.all_vars):
            continue
        if not all(e.is_total for e in (*a.results, *a.constraints)):
            return None
        if b.num_range_vars == 0:
            count = SAMPLED_POINTS
        elif quick:
            if _box_size(b) > QUICK_BOX:
                continue
            count = 2
        else:
            count = min(SAMPLED_POINTS, max(4, SAMPLED_RANGE_BUDGET // max(_box_size(b), 1)))
        nd, nr = a.num_dims, a.num_range_vars
        for values, sampled in _unrelated_samples(a, b, count):
            dims, syms, rts = values[:nd], values[nd:], values[nd + nr:]
            if not (all(x in info.bounds for x, info in zip(values, a.all_vars))
                    and a.constraints_satisfied(dims, syms)):
                continue
            result = tuple(a.evaluate(dims, syms))
            if result != tuple(sampled):
                continue
            if b.num_range_vars == 0 and relates(b, dims, rts, result) is not False:
                continue
            return refutation(a, b, which, values, result)
    return None


def _unrelated_samples(a: IndexingMap, b: IndexingMap, count: int
                       ) -> list[tuple[list[int], list[int]]]:
    """Sampled points of a's domain (all of a's variables) with a's results there, where b
    relates (dims, runtime values, results) to nothing; at most three, for the caller to
    confirm. `count` points evaluated by numpy where int64 is exact over a's box, else (or
    for so few) SAMPLED_POINTS_EXACT points in Python integers."""
    import numpy as np

    from ..core.vectorised import relates_many, sample, unrelated

    nd, nr = a.num_dims, a.num_range_vars
    drawn = sample(a, count) if count > SAMPLED_POINTS_EXACT else None
    if drawn is None:  # a few points: Python integers cost less than numpy's setup
        kept = [list(p) for p in _sample_points(a, min(count, SAMPLED_POINTS_EXACT))
                if a.constraints_satisfied(p[:nd], p[nd:])]
        values = [list(a.evaluate(p[:nd], p[nd:])) for p in kept]
    else:
        points, keep, results = drawn
        if b.num_range_vars == 0:
            miss = unrelated(b, points[:, :nd], points[:, nd + nr:], results)
            if miss is not None:
                rows = np.flatnonzero(keep & miss)[:3]
                return list(zip(points[rows].tolist(), results[rows].tolist()))
        rows = np.flatnonzero(keep)
        kept, values = points[rows].tolist(), results[rows].tolist()
    answers = relates_many(b, [(p[:nd], p[nd + nr:], r) for p, r in zip(kept, values)],
                           witness=False)
    return [(p, r) for p, r, answer in zip(kept, values, answers) if answer is False][:3]


def _box_size(m: IndexingMap) -> int:
    size = 1
    for info in m.range_vars:
        size *= max(info.bounds.size, 0)
    return size


def _presburger_equal(f: IndexingMap, g: IndexingMap, timeout_ms: int) -> Verdict | None:
    """isl's decision (None when isl cannot express the maps or stops at its budget). "Equal"
    is isl's proof; "differ" is reported only with isl's tuple of the difference checked by
    evaluation (or, for a range box too large to evaluate, by a quantifier-free unsat answer
    at that tuple); None when the tuple does not check out."""
    from ..core.vectorised import relates
    from . import presburger

    same, difference = presburger.decide(f, g)
    if same:
        return Verdict(True, message="isl decided the relations equal (Presburger arithmetic)")
    if difference is None:
        return None
    which, fixed, result = difference.which, difference.fixed, difference.result
    a, b = (f, g) if which == "first" else (g, f)
    nd = a.num_dims
    dims, rts = fixed[:nd], fixed[nd:]
    witness = _checked_witness(a, dims, rts, result, difference.range_values)
    if witness is None:
        return None
    related = relates(b, dims, rts, result)
    if related is None and not _relates_by_solver(b, dims, rts, result, timeout_ms):
        related = False
    if related is False:
        return refutation(a, b, which, [*dims, *witness, *rts], tuple(result))
    return None  # isl's tuple did not check out: Z3 decides


def _checked_witness(a: IndexingMap, dims: Sequence[int], rts: Sequence[int],
                     result: Sequence[int], hint: Sequence[int] | None) -> list[int] | None:
    """Range values of `a` that give `result` at (dims, rts), checked by exact evaluation:
    isl's `hint` when it checks out, else found by evaluating a's range box; None if neither."""
    from ..core.vectorised import relates

    if hint is not None and len(hint) == a.num_range_vars:
        values = [*dims, *hint, *rts]
        syms = [*hint, *rts]
        if all(x in info.bounds for x, info in zip(values, a.all_vars)) and \
                a.constraints_satisfied(dims, syms) and \
                tuple(a.evaluate(dims, syms)) == tuple(result):
            return list(hint)
    found = relates(a, dims, rts, result)
    return found if isinstance(found, list) else None


def _relates_by_solver(b: IndexingMap, dims: Sequence[int], rts: Sequence[int],
                       result: Sequence[int], timeout_ms: int) -> bool:
    """False only when Z3 proves (unsat) that no range values of b give `result` at the
    point; True otherwise (related, or not shown to be unrelated)."""
    env: dict[Expr, z3.ArithRef] = {Dim(i): z3.IntVal(x) for i, x in enumerate(dims)}
    env.update({RtVar(i): z3.IntVal(x) for i, x in enumerate(rts)})
    env.update({Symbol(k): z3.Int(f"b_s{k}") for k in range(b.num_range_vars)})
    eb = _MapEncoding(b, env)
    s = _solver(timeout_ms)
    s.add(eb.member, *[x == y for x, y in zip(eb.results, result)])
    return s.check() != z3.unsat


def refutation(a: IndexingMap, b: IndexingMap, which: str, values: list[int],
                result: tuple[int, ...]) -> Verdict:
    """The verdict for a checked tuple: `a` relates the point `values` (all of a's variables)
    to `result`, `b` relates its dims and runtime values to no such result."""
    names = variable_names(a)
    point = {names[v]: x for v, x in zip(a.variables, values)}
    nd, nr = a.num_dims, a.num_range_vars
    dims, rts = values[:nd], values[nd + nr:]
    b_value: tuple[int, ...] | None = None
    if b.num_range_vars == 0 and not b.is_known_empty and all(
            x in info.bounds for x, info in zip([*dims, *rts], b.all_vars)) and \
            b.constraints_satisfied(dims, rts):
        b_value = b.evaluate(dims, rts)
    other = "second" if which == "first" else "first"
    where = (f"gives {print_values(b_value)}" if b_value is not None else
             "no value of its range variables gives it" if b.num_range_vars else
             "outside its domain")
    lhs, rhs = (result, b_value) if which == "first" else (b_value, result)
    return Verdict(False, point, lhs_value=lhs, rhs_value=rhs,
                   message=f"the {which} map relates {print_point(point)} to "
                           f"{print_values(result)}; the {other} map does not ({where})")


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
        how = ("the same domain and results at every point" if not perm else
               "the same domain and results with the first map's range variables "
               + ", ".join(f"s{i}" for i in range(len(perm))) + " as the second's "
               + ", ".join(f"s{j}" for j in perm))
        return Verdict(True, message=how, query=s.sexpr)
    return Verdict(None)


def includes(a: IndexingMap, b: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether every tuple of a's relation is in b's (holds=False comes with a tuple of a that
    b lacks). Used for over-approximation checks: `includes(exact, map)`."""
    mismatch = _shape_mismatch(a, b)
    if mismatch:
        return Verdict(None, message=mismatch)
    if a.sizes or b.sizes:
        return _includes_with_sizes(a, b, timeout_ms)
    return _included(a, b, "first", timeout_ms)


def _includes_with_sizes(a: IndexingMap, b: IndexingMap, timeout_ms: int) -> Verdict:
    """Inclusion for every size in the intervals (True), or refuted at sizes where the static
    maps are shown not included (False); maps whose common sizes have the same intervals."""
    if not _same_shared_sizes(a, b):
        return Verdict(None, message=_SIZES_NOT_YET.format(
            what="inclusion with different intervals for one size"))
    a, b = a.replace(sizes=merge_sizes(a.sizes, b.sizes)), b.replace(
        sizes=merge_sizes(b.sizes, a.sizes))
    v = _included_with_sizes(a, b, _size_env(a))
    if v is None:
        return Verdict(True, message="every tuple of the first is in the second, for every size "
                                     "in its interval")
    if v.counterexample is None:
        return v
    at = {z.name: v.counterexample[z.name] for z in a.sizes}
    static = includes(a.with_sizes(at), b.with_sizes(at), timeout_ms)
    if static.holds is False:
        return Verdict(False, {**at, **(static.counterexample or {})},
                       message=f"at sizes {print_point(at)}: {static.message}")
    return Verdict(None, message=f"the solver found sizes {print_point(at)} where the first may "
                                 f"relate a tuple the second does not; not confirmed there "
                                 f"({static.label})")


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
        names = variable_names(a)
        named = {names[v]: x for v, x in zip(a.variables, point)}
        other = "second" if which == "first" else "first"
        lhs, rhs = (result, None) if which == "first" else (None, result)
        return Verdict(False, named, lhs_value=lhs, rhs_value=rhs,
                       message=f"the {which} map relates {print_point(named)} to "
                               f"{print_values(result)}; the {other} map does not (checked "
                               "at that point)")
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
    b_value: tuple[int, ...] | None = None
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
    where = "outside its domain" if b_value is None else f"gives {print_values(b_value)}"
    msg = (f"the {which} map relates {print_point(point)} to {print_values(result)}; the "
           f"{other} map does not ({where})")
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
            if m.sizes:
                return Verdict(None, message=_SIZES_NOT_YET.format(what="equality of unions"))
            # every map term is defined everywhere: maps divide by constants (docs/semantics.md)
    live = tuple([m for m in side if not m.is_known_empty] for side in sides)
    shapes = {(m.num_dims, m.num_rt_vars, m.num_results) for side in live for m in side}
    if len(shapes) > 1:
        return Verdict(None, message="the maps differ in their numbers of dimensions, runtime "
                                     "variables or results")
    v = _presburger_unions(sides[0], sides[1], timeout_ms)
    if v is not None:
        v.seconds = time.perf_counter() - start
        return v
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


def _presburger_unions(lhs: Sequence[IndexingMap], rhs: Sequence[IndexingMap], timeout_ms: int
                       ) -> Verdict | None:
    """isl's decision on the two unions: "equal" is isl's proof; "differ" is reported only
    with isl's tuple checked by evaluation (some map of one side gives it, no map of the other
    does); None otherwise (Z3 decides)."""
    from ..core.vectorised import relates
    from . import presburger

    same, difference = presburger.decide_unions(lhs, rhs)
    if same:
        return Verdict(True, message="isl decided the unions equal (Presburger arithmetic)")
    if difference is None:
        return None
    which, fixed, result = difference.which, difference.fixed, difference.result
    mine, theirs, side = (lhs, rhs, "lhs") if which == "first" else (rhs, lhs, "rhs")
    for i, a in enumerate(mine):
        nd = a.num_dims
        dims, rts = fixed[:nd], fixed[nd:]
        hint = difference.range_values if i == difference.index else None
        witness = _checked_witness(a, dims, rts, result, hint)
        if witness is None:
            continue
        for b in theirs:
            related = relates(b, dims, rts, result)
            if related is None and not _relates_by_solver(b, dims, rts, result, timeout_ms):
                related = False
            if related is not False:
                return None  # isl's tuple did not check out: Z3 decides
        names = variable_names(a)
        point = {names[v]: x for v, x in zip(a.variables, [*dims, *witness, *rts])}
        other = "rhs" if side == "lhs" else "lhs"
        value = tuple(result)
        return Verdict(False, point, lhs_value=value if side == "lhs" else None,
                       rhs_value=value if side == "rhs" else None,
                       message=f"{side}[{i}] relates {print_point(point)} to "
                               f"{print_values(value)}; no map of the {other} does")
    return None


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
                   message=f"{which} relates {print_point(point)} to {print_values(result)}; "
                           f"no map of the {other} does")


# -- maps with sizes (docs/semantics.md, Sizes) ---------------------------------------------------
#
# A size is universally quantified: a claim holds for every size in its interval or is not made.
# In a refutation query (satisfiable exactly when the claim fails) the sizes are free variables
# bounded by their intervals, shared by both maps: unsat proves the claim for every size. A
# model names sizes where it may fail; the refutation is reported only when the static question
# about both maps instantiated at those sizes (`with_sizes`) refutes it too. Products of sizes
# with variables are nonlinear for Z3, which may answer unknown: that is None, never proven.
# Budgets are Z3 resource limits, so a verdict never depends on the machine's load.

#: Z3 resource limit of each query about maps with sizes.
SIZED_RLIMIT = 2_000_000
_SIZES_NOT_YET = "{what} of maps with sizes is not yet supported"


def _timed(v: Verdict, start: float) -> Verdict:
    v.seconds = time.perf_counter() - start
    return v


def _size_env(m: IndexingMap) -> dict[Expr, z3.ArithRef]:
    return {Size(z.name): z3.Int(f"size_{z.name}") for z in m.sizes}


def _sized_solver(m: IndexingMap, sizes: Mapping[Expr, z3.ArithRef]) -> smt_terms.Solver:
    s = smt_terms.Solver(SIZED_RLIMIT)
    for z in m.sizes:
        x = sizes[Size(z.name)]
        s.add(x >= z.bounds.lo, x <= z.bounds.hi)
    return s


def _sizes_of(model: z3.ModelRef, m: IndexingMap, sizes: Mapping[Expr, z3.ArithRef]
              ) -> dict[str, int]:
    return {z.name: _value(model, sizes[Size(z.name)]) for z in m.sizes}


def _unknown(s: smt_terms.Solver, r: z3.CheckSatResult) -> Verdict:
    return Verdict(None, message=f"solver answered {r} ({s.reason_unknown()}) for maps with "
                                 f"sizes")


def _is_empty_with_sizes(m: IndexingMap, timeout_ms: int) -> Verdict:
    """Empty for every size in its interval (True), or a point at sizes the static check
    confirms (False)."""
    from . import presburger

    intervals = _size_intervals(m)
    if presburger.is_empty(m, intervals) is True:
        return Verdict(True, message="empty for every size in its interval (isl, Presburger "
                                     "arithmetic with the sizes as parameters)")
    found = presburger.sample(m, intervals)
    if found is not None and set(found[0]) == set(intervals):
        at, values = found
        point = _checked_point(m.with_sizes(at), values)
        if point is not None:
            return Verdict(False, {**at, **point},
                           message=f"at sizes {print_point(at)}: the domain has a point")
    sizes = _size_env(m)
    env = _vars(m, "", sizes)
    s = _sized_solver(m, sizes)
    s.add(_MapEncoding(m, env).member)
    r = s.check()
    if r == z3.unsat:
        return Verdict(True, message="empty for every size in its interval", query=s.sexpr)
    if r != z3.sat:
        return _unknown(s, r)
    at = _sizes_of(s.model(), m, sizes)
    static = is_empty(m.with_sizes(at), timeout_ms)
    if static.holds is False:
        return Verdict(False, {**at, **(static.counterexample or {})},
                       lhs_value=static.lhs_value,
                       message=f"at sizes {print_point(at)}: {static.message}")
    return Verdict(None, message=f"the solver found sizes {print_point(at)} where the domain "
                                 f"may have a point; not confirmed at those sizes "
                                 f"({static.label})")


def _checked_point(m: IndexingMap, values: Sequence[int]) -> dict[str, int] | None:
    """`values` (dims, range, runtime variables) named, when they are a point of the static
    map `m`'s domain by evaluation; else None."""
    nd = m.num_dims
    if len(values) != len(m.all_vars) or not all(
            x in info.bounds for x, info in zip(values, m.all_vars)):
        return None
    try:
        if not m.constraints_satisfied(values[:nd], values[nd:]):
            return None
    except EvaluationError:
        return None
    names = variable_names(m)
    return {names[v]: x for v, x in zip(m.variables, values)}


def _size_intervals(m: IndexingMap) -> dict[str, Interval]:
    return {z.name: z.bounds for z in m.sizes}


#: Small sizes at which `_equal_with_sizes` looks for a difference before a universal query.
PROBE_SIZES = (1, 2, 3)


def _probe_sizes(m: IndexingMap, found: Difference | None) -> list[dict[str, int]]:
    """Assignments of the sizes where a difference is looked for with static maps: isl's
    (when it sampled one), then every size at each of PROBE_SIZES (clipped to its interval).
    A difference found there is checked like any static one, so it refutes soundly."""
    out = [dict(found.sizes)] if found is not None and set(found.sizes) == {
        z.name for z in m.sizes} else []
    for v in PROBE_SIZES:
        at = {z.name: min(max(v, z.bounds.lo), z.bounds.hi) for z in m.sizes}
        if at not in out:
            out.append(at)
    return out


def _same_shared_sizes(f: IndexingMap, g: IndexingMap) -> bool:
    table = {z.name: z.bounds for z in f.sizes}
    return all(table.get(z.name, z.bounds) == z.bounds for z in g.sizes)


def _equal_with_sizes(f: IndexingMap, g: IndexingMap, timeout_ms: int) -> Verdict:
    """Equal for every size in the intervals (True), or different at sizes where the static
    maps are shown to differ (False). Decided for maps whose common sizes have the same
    intervals: a size one map does not declare is one it does not depend on, so both are
    read over all the sizes of either."""
    if f.sizes != g.sizes and _same_shared_sizes(f, g):
        f, g = f.replace(sizes=merge_sizes(f.sizes, g.sizes)), \
            g.replace(sizes=merge_sizes(g.sizes, f.sizes))
    if f.sizes != g.sizes:
        def text(m: IndexingMap) -> str:
            return ", ".join(f"{z.name} in {z.bounds}" for z in m.sizes) or "none"

        return Verdict(None, message=f"the maps declare different sizes ({text(f)} vs "
                                     f"{text(g)}): equality is decided for the same sizes only")
    if _shape_mismatch(f, g):
        return Verdict(None, message=_SIZES_NOT_YET.format(
            what=f"equality with {_shape_mismatch(f, g)}"))
    from . import presburger

    decided, found = presburger.decide(f, g, _size_intervals(f))
    if decided is True:
        return Verdict(True, message="equal for every size in its interval (isl, Presburger "
                                     "arithmetic with the sizes as parameters)")
    for at in _probe_sizes(f, found):
        static = equal(f.with_sizes(at), g.with_sizes(at), timeout_ms)
        if static.holds is False:
            return Verdict(False, {**at, **(static.counterexample or {})},
                           lhs_value=static.lhs_value, rhs_value=static.rhs_value,
                           message=f"at sizes {print_point(at)}: {static.message}")
    sizes = _size_env(f)
    for a, b, which in ((f, g, "first"), (g, f, "second")):
        v = _included_with_sizes(a, b, sizes)
        if v is None:
            continue
        if v.counterexample is None:
            return v
        at = {z.name: v.counterexample[z.name] for z in f.sizes}
        static = equal(f.with_sizes(at), g.with_sizes(at), timeout_ms)
        if static.holds is False:
            return Verdict(False, {**at, **(static.counterexample or {})},
                           lhs_value=static.lhs_value, rhs_value=static.rhs_value,
                           message=f"at sizes {print_point(at)}: {static.message}")
        return Verdict(None, message=f"the solver found sizes {print_point(at)} where the "
                                     f"{which} map may relate a tuple the other does not; not "
                                     f"confirmed at those sizes ({static.label})")
    return Verdict(True, message="equal for every size in its interval")


def _included_with_sizes(a: IndexingMap, b: IndexingMap, sizes: Mapping[Expr, z3.ArithRef]
                         ) -> Verdict | None:
    """None when every tuple of a's relation is in b's at every size; else a Verdict: unknown,
    or one whose counterexample holds the sizes of the solver's model (to be confirmed)."""
    env_a = _vars(a, "a_", sizes)
    shared: dict[Expr, z3.ArithRef] = {v: env_a[v] for v in a.variables
                                       if isinstance(v, (Dim, RtVar))}
    shared.update(sizes)
    ea = _MapEncoding(a, env_a)
    s = _sized_solver(a, sizes)
    s.add(ea.member)
    box = 1
    for info in b.range_vars:
        box *= info.bounds.size
    if box <= EXPANSION_LIMIT:
        for values in itertools.product(*[range(i.bounds.lo, i.bounds.hi + 1)
                                          for i in b.range_vars]):
            env_b = dict(shared)
            env_b.update({Symbol(k): z3.IntVal(x) for k, x in enumerate(values)})
            eb = _MapEncoding(b, env_b)
            s.add(z3.Not(z3.And(eb.member, *[x == y for x, y in zip(ea.results, eb.results)])))
    else:
        bound = [z3.Int(f"b_s{k}") for k in range(b.num_range_vars)]
        env_b = dict(shared)
        env_b.update({Symbol(k): x for k, x in enumerate(bound)})
        eb = _MapEncoding(b, env_b)
        s.add(z3.ForAll(bound, z3.Not(z3.And(eb.member, *[x == y for x, y in
                                                          zip(ea.results, eb.results)]))))
    r = s.check()
    if r == z3.unsat:
        return None
    if r != z3.sat:
        return _unknown(s, r)
    return Verdict(None, _sizes_of(s.model(), a, sizes))


def _formula_leaves(f: tuple) -> frozenset[Expr]:
    """The variables of a `for_all_sizes` formula."""
    if f[0] == "truth":
        return frozenset()
    if f[0] == "not":
        return _formula_leaves(f[1])
    if f[0] in ("and", "or"):
        return frozenset().union(*[_formula_leaves(g) for g in f[1]])
    return f[2].variable_set() | f[3].variable_set()


#: Answers of `for_all_sizes`, by the formula and the sizes' intervals (both hashable values).
_FOR_ALL: dict[tuple[object, ...], tuple[bool | None, str]] = {}


def for_all_sizes(formula: tuple, sizes: Mapping[Variable, Interval]
                  ) -> tuple[bool | None, str]:
    """Whether a formula over sizes and integers (`("cmp", op, lhs, rhs)`, `("not", f)`,
    `("and" | "or", (f, ...))`, `("truth", b)`: a rule's condition at a match site,
    `verifidx.rules.sizes`) is true and defined for every size in its interval: True when
    Z3 proves it (unsat of its negation), False with the sizes where it fails, None when Z3
    cannot tell under the resource limit. The message says which."""
    # only the sizes the formula mentions: the others range over nonempty intervals on
    # their own, so they change neither the answer nor the key (one query for every map)
    used = _formula_leaves(formula)
    items = sorted((v.name, iv.lo, iv.hi) for v, iv in sizes.items()
                   if isinstance(v, Size) and v in used)
    key = (formula, tuple(items))
    hit = _FOR_ALL.get(key)
    if hit is not None:
        return hit
    env: dict[Expr, z3.ArithRef] = {Size(name): z3.Int(f"size_{name}") for name, _, _ in items}
    enc = Encoder(env)

    def encode(f: tuple) -> z3.BoolRef:
        kind = f[0]
        if kind == "truth":
            return z3.BoolVal(bool(f[1]))
        if kind == "not":
            return z3.Not(encode(f[1]))
        if kind in ("and", "or"):
            parts = [encode(g) for g in f[1]]
            return z3.And(parts) if kind == "and" else z3.Or(parts)
        _, op, lhs, rhs = f
        a, b = enc(lhs), enc(rhs)
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                ">=": a >= b}[op]

    try:
        claim = encode(formula)
    except (KeyError, TypeError) as err:  # a leaf that is not a size
        return None, f"not encodable: {err}"
    s = smt_terms.Solver(SIZED_RLIMIT)
    for name, lo, hi in items:
        x = env[Size(name)]
        s.add(x >= lo, x <= hi)
    s.add(z3.Not(z3.And(claim, *enc.defined)))
    r = s.check()
    if r == z3.unsat:
        out: tuple[bool | None, str] = (True, "Z3, unsat")
    elif r == z3.sat:
        model = s.model()
        at = {name: _value(model, env[Size(name)]) for name, _, _ in items}
        out = (False, f"Z3: fails at {', '.join(f'{k} = {v}' for k, v in at.items())}")
    else:
        out = (None, f"Z3 answered unknown ({s.reason_unknown()})")
    if len(_FOR_ALL) > 10_000:
        _FOR_ALL.clear()
    _FOR_ALL[key] = out
    return out
