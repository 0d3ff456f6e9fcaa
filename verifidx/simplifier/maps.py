"""The map-level phases (after XLA's IndexingMap::Simplify):
1. constraints to a fixpoint: each constraint expression is simplified, constraint rules move
   `+c`, `*k`, `floordiv k` into the interval, constraints on a bare variable tighten its bounds,
   always-true constraints go, impossible ones make the map KNOWN EMPTY, `x mod c in [k, k]`
   constraints on one variable merge (Chinese remainder) and tighten its bounds;
2. point dimensions (`d in [k, k]`) become constants (unless `point_dims="preserve"`);
3. range variables pinned by a constraint (`s1 - d0 in [0, 0]`) are substituted away
   (`substitute_pinned`);
4. results are simplified with constraint-aware ranges (`expressions`).

Two steps work on several constraints at once, which no rule can state: merging
`x mod a = i`, `x mod b = j` into one constraint modulo lcm(a, b) (intersected with any
constraint already there), and tightening a variable's bounds to the nearest values that satisfy
its mod constraint. Each instance is proven where it is made, by checking every residue of one
period (exact, since both sides are periodic), and shows in `--trace`. Emptiness is decided by
Z3 only when intervals and sampling cannot tell and constraints remain (`decide_emptiness`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from ..core.canonical import canon, from_linear, linear_form
from ..core.errors import EvaluationError
from ..core.expr import Const, Dim, Expr, Mod, Size, Symbol, Variable, release_if_grown
from ..core.implied_bounds import implied_bounds
from ..core.indexing_map import IndexingMap, Var, merge_residues
from ..core.interval import Interval, range_of
from ..rules.matcher import kinds
from .expressions import _FUEL, _ExprSimplifier
from .rule_engine import RuleEngine, Step, _Domain

#: Domains remembered per engine (`Simplifier._domain`) before the table is emptied.
_DOMAIN_LIMIT: Final = 20_000


#: Largest period over which a merge of mod constraints is checked point by point.
MERGE_PERIOD_LIMIT: Final = 1 << 16


def checked_residue_merge(m1: int, r1: int, m2: int, r2: int
                          ) -> tuple[int, int] | None | Literal[False]:
    """(M, R) such that, for every integer v, `v mod m1 == r1 and v mod m2 == r2` iff
    `v mod M == R`; None when no v satisfies both; False when the instance was not proven
    (period over MERGE_PERIOD_LIMIT). The candidate comes from the Chinese remainder theorem;
    it is then proven by checking every residue of the common period L = lcm(m1, m2, M),
    which decides the claim because both sides depend only on v mod L."""
    period = math.lcm(m1, m2)
    if period > MERGE_PERIOD_LIMIT:
        return False
    if not (0 <= r1 < m1 and 0 <= r2 < m2):
        candidate = None  # a residue out of range: no v satisfies it
    else:
        candidate = merge_residues(m1, r1, m2, r2)
    if candidate is not None:
        period = math.lcm(period, candidate[0])
    for v in range(period):
        left = v % m1 == r1 and v % m2 == r2
        right = candidate is not None and v % candidate[0] == candidate[1]
        if left != right:
            return False
    return candidate


def checked_residue_bounds(iv: Interval, modulus: int, residue: int) -> Interval | None:
    """The smallest interval inside `iv` holding every x of `iv` with x mod modulus ==
    residue (empty if none), or None when the modulus is over MERGE_PERIOD_LIMIT. Every value
    cut off is checked to violate the residue, so the variable keeps exactly its points."""
    if iv.is_empty or modulus > MERGE_PERIOD_LIMIT:
        return None
    lo = iv.lo
    while lo <= iv.hi and lo % modulus != residue:
        lo += 1
        if lo - iv.lo > modulus:
            return Interval(1, 0)  # a full period without the residue: none has it
    hi = iv.hi
    while hi >= lo and hi % modulus != residue:
        hi -= 1
    return Interval(lo, hi) if lo <= hi else Interval(1, 0)


@dataclass
class Simplifier:
    """Simplifies whole maps with one rule engine (reuse it: it indexes the rules once)."""

    engine: RuleEngine
    decide_emptiness: bool = True
    emptiness_timeout_ms: int = 200
    #: The search over alternatives at sums (see `_ExprSimplifier._root_first`).
    root_first: bool = True

    def simplify(self, m: IndexingMap, point_dims: str = "replace",
                 trace: list[Step] | None = None) -> IndexingMap:
        release_if_grown()  # a safe point to bound memory (verifidx.core.expr)
        if m.is_undefined or m.is_known_empty:
            return m
        if m.sizes:
            return self._simplify_with_sizes(m, point_dims, trace)
        return self._simplify(m, point_dims, trace)

    def _simplify_with_sizes(self, m: IndexingMap, point_dims: str, trace: list[Step] | None
                             ) -> IndexingMap:
        """A map with sizes (docs/semantics.md, Sizes): a size's interval enters every
        interval the conditions read, and a size expression binds a rule's constant only
        where the condition holds for every size (`_rewrite_with_sizes`), so each instance
        holds for every size. A result outside the grammar of maps with sizes (a rule that
        multiplies two index variables, a divisor not shown positive) leaves the map as it
        was, and the trace says so."""
        steps: list[Step] | None = [] if trace is not None else None
        try:
            out = self._simplify(m, point_dims, steps)
        except ValueError as err:  # DivisorError too: the map check of the result
            if trace is not None:
                why = {z.name: z.bounds for z in m.sizes}
                trace.extend(Step(f"{SIZES_NOT_SIMPLIFIED} ({err})", r, r, why)
                             for r in m.results)
            return m
        if trace is not None and steps is not None:
            trace.extend(steps)
        return out

    def _simplify(self, m: IndexingMap, point_dims: str, trace: list[Step] | None
                  ) -> IndexingMap:
        division_free = True
        for r in m.results:
            if kinds(r):
                division_free = False
                break
        # what the rounds below make of m's domain, where that is known already
        first = self._domain(m) if trace is None and m.constraints and m.sizes else None
        settled_key = (self.decide_emptiness, self.emptiness_timeout_ms)
        if division_free:
            if first is not None:
                base = first.settled.get(settled_key)
                if base is not None:
                    return base.with_results(tuple([canon(r) for r in m.results]), m)
            elif not m.constraints and not _has_point_dim(m):
                # the rounds leave such a map's domain as it is, and no rule reads its results
                m = m._mark_empty()
                return m if m.is_known_empty else m.with_results(
                    tuple([canon(r) for r in m.results]), m)
        rounds = 0
        for _ in range(8):  # tightened bounds can make points, points simplify constraints
            rounds += 1
            before = m
            m, settled = self._constraints_to_fixpoint(m, trace)
            if m.is_known_empty:
                return m
            fixed = m
            if point_dims == "replace":
                m = self._replace_point_dims(m)
            m = substitute_pinned(m, trace)
            if m is fixed and settled:
                break  # another round would reach this same fixpoint again
            if m == before:
                break
        # maps with sizes only: a static map's domain is rarely seen twice (the static path
        # is left as it was)
        domain = self._domain(m) if trace is None and m.constraints and m.sizes else None
        if domain is None:
            bounds = _result_bounds(m)
        else:
            if domain.result_bounds is None:
                domain.result_bounds = _result_bounds(m)
            bounds = domain.result_bounds
        simp = _ExprSimplifier(self.engine, bounds, dict(m.constraints), trace,
                               root_first=self.root_first)
        if m.sizes:
            simp.sizes = simp.bounds
        if domain is not None:
            simp.domain = domain.token
        results = tuple(simp(r) for r in m.results)
        out = m.with_results(results)  # checks only the results that changed
        if out.constraints and self.decide_emptiness and self._empty(out, domain):
            return out.replace(is_known_empty=True)
        if first is not None and rounds == 1 and settled and not _has_point_dim(m):
            # one round, no point dimension: the domain's outcome whatever the results, and
            # division-free results come out as their canonical forms
            first.settled[settled_key] = out
        return out

    def _domain(self, m: IndexingMap) -> _Domain:
        """The engine's record of m's domain, made on first sight; found through the map's
        domain memo when m shares its domain with a map seen before (`with_results`)."""
        memo = m.domain_memo()
        hit = memo.get(self.engine)
        if isinstance(hit, _Domain):
            return hit
        key = _domain_key(m)
        hit = self.engine.domains.get(key)
        if hit is None:
            if len(self.engine.domains) > _DOMAIN_LIMIT:
                self.engine.domains.clear()
            self.engine.domain_tokens += 1
            hit = self.engine.domains[key] = _Domain(self.engine.domain_tokens)
        memo[self.engine] = hit
        return hit

    def _empty(self, m: IndexingMap, domain: _Domain | None) -> bool:
        """`_surely_empty`, once per domain and budget."""
        if domain is None:
            return self._surely_empty(m)
        hit = domain.empty.get(self.emptiness_timeout_ms)
        if hit is None:
            hit = domain.empty[self.emptiness_timeout_ms] = self._surely_empty(m)
        return hit

    # constraints
    def _constraints_to_fixpoint(self, m: IndexingMap, trace: list[Step] | None
                                 ) -> tuple[IndexingMap, bool]:
        """The constraints simplified until a round changes nothing (True), or as far as 32
        rounds go (False)."""
        if not m.constraints:
            return m._mark_empty(), True  # what a round over no constraints gives
        if trace is not None or not m.sizes:
            return self._constraint_rounds(m, trace)
        domain = self._domain(m)
        if domain.fixpoint is None:
            domain.fixpoint = self._constraint_rounds(m, None)
        out, settled = domain.fixpoint
        # the rounds never read the results and carry them unchanged
        return (out if out.results is m.results else out.with_results(m.results, m)), settled

    def _constraint_rounds(self, m: IndexingMap, trace: list[Step] | None
                           ) -> tuple[IndexingMap, bool]:
        for _ in range(32):
            before = m
            simp = _ExprSimplifier(self.engine, m.bounds, {}, trace)
            if m.sizes:
                simp.sizes = simp.bounds
            new = IndexingMap(m.results, m.dims, m.range_vars, m.rt_vars, {}, m.is_known_empty,
                              False, m.sizes)
            for e, iv in m.constraints.items():
                e2, iv2 = simp(e), iv
                for _fuel in range(_FUEL):
                    step = self.engine.rewrite_constraint(e2, iv2, simp.bound, trace)
                    if step is None:
                        break
                    e2, iv2 = simp(step[0]), step[1]
                r = range_of(e2, new.bounds)
                if not r.is_empty and iv2.contains(r):
                    continue  # always satisfied
                if r.intersect(iv2).is_empty and not r.is_empty:
                    return new.replace(is_known_empty=True), True
                new = new.add_constraint(e2, iv2)
                if new.is_known_empty:
                    return new, True
            new = self._merge_mod_constraints(new, trace)
            if new.is_known_empty or new == before:
                return new, True
            m = new
        return m, False

    def _merge_mod_constraints(self, m: IndexingMap, trace: list[Step] | None) -> IndexingMap:
        """`x mod a in [i, i]` and `x mod b in [j, j]` become one constraint modulo lcm(a, b)
        (Chinese remainder), intersected with any constraint already on that expression; a
        variable's bounds shrink to the nearest values with the right residue.

        No rule can state a fact about two constraints, so each instance is proven where it is
        made: both memberships depend only on `x mod L` (L the lcm of the moduli), so checking
        every residue in [0, L) decides the equivalence exactly (`checked_residue_merge`).
        Instances with L over `MERGE_PERIOD_LIMIT` are left alone. Each step is traced."""
        residues: dict[Expr, list[tuple[Expr, int, int]]] = {}
        for e, iv in m.constraints.items():
            if isinstance(e, Mod) and isinstance(e.rhs, Const) and iv.is_point:
                residues.setdefault(e.lhs, []).append((e, e.rhs.value, iv.lo))
        out = m
        for x, items in residues.items():
            modulus, residue = items[0][1], items[0][2]
            if len(items) > 1:
                merged_all = True
                for _e, mi, ri in items[1:]:
                    merged = checked_residue_merge(modulus, residue, mi, ri)
                    if merged is False:
                        merged_all = False
                        break
                    if merged is None:
                        if trace is not None:
                            trace.append(Step("mod_constraints_merge", items[0][0], Const(0), {
                                f"{e}": Interval(ri, ri) for e, _m, ri in items}))
                        return out.replace(is_known_empty=True)
                    modulus, residue = merged
                if not merged_all:
                    continue
                cons = {e: iv for e, iv in out.constraints.items()
                        if e not in {item[0] for item in items}}
                target = Mod(x, Const(modulus))
                out = out.replace(constraints=cons).add_constraint(target, (residue, residue))
                if trace is not None:
                    trace.append(Step("mod_constraints_merge", items[0][0], target, {
                        **{f"{e}": Interval(ri, ri) for e, _m, ri in items},
                        "becomes": Interval(residue, residue)}))
                if out.is_known_empty:
                    return out
                now = out.constraints.get(target)
                if now is None or not now.is_point:
                    continue
                residue = now.lo
            if isinstance(x, Variable) and type(x) is not Size:  # a size's interval stays
                info = out.var_info(x)
                tight = checked_residue_bounds(info.bounds, modulus, residue)
                if tight is not None and tight != info.bounds:
                    if trace is not None:
                        trace.append(Step("mod_constraint_bounds", x, x, {
                            f"{x} mod {modulus} in [{residue}, {residue}]: {x}": info.bounds,
                            "becomes": tight}))
                    out = out._with_var(x, Var(tight, info.name))
                    if tight.is_empty:
                        return out.replace(is_known_empty=True)
        return out._mark_empty()

    # point dimensions
    @staticmethod
    def _replace_point_dims(m: IndexingMap) -> IndexingMap:
        sub: dict[Expr, Expr] = {
            Dim(i): Const(v.bounds.lo) for i, v in enumerate(m.dims) if v.bounds.is_point
        }
        if not sub:
            return m
        out = m.replace(results=tuple(canon(r.substitute(sub)) for r in m.results),
                        constraints={})
        for e, iv in m.constraints.items():
            out = out.add_constraint(canon(e.substitute(sub)), iv)
        return out

    # emptiness
    def _surely_empty(self, m: IndexingMap) -> bool:
        """Interval reasoning failed to decide; try sample points, then a bounded Z3 query.
        In a map with sizes a sample also gives each size a value: a point at some sizes
        shows that the map is not empty at every size."""
        ranges = [v.bounds for v in m.all_vars] + [z.bounds for z in m.sizes]
        samples = itertools.islice(
            itertools.product(*[sorted({r.lo, r.hi, (r.lo + r.hi) // 2}) for r in ranges]), 64)
        nd, nv = m.num_dims, len(m.all_vars)
        names = [z.name for z in m.sizes]
        for point in samples:
            try:
                if m.constraints_satisfied(point[:nd], point[nd:nv],
                                           dict(zip(names, point[nv:])) if names else None):
                    return False
            except EvaluationError:
                continue
        from ..solve.smt import is_empty

        return is_empty(m, self.emptiness_timeout_ms).holds is True


# pinned range variables
def substitute_pinned(m: IndexingMap, trace: list[Step] | None = None) -> IndexingMap:
    """Each range variable that a constraint pins to a value of the other variables,
    `a * s + rest in [k, k]` with a = 1 or -1 and s not in `rest`, is substituted away:
    s := a * (k - rest) in the results and the other constraints, s's interval becomes a
    constraint on that value (left out when intervals show it holds), the pinning constraint
    goes, and s is removed (the range variables after it renumbered down by one).

    Exact: s is existential, and the constraint holds for exactly one integer s at each point
    (its coefficient is 1 or -1), which the value names; so a point of the other variables is
    in the domain, with the same results, iff that value lies in s's interval and satisfies
    the other constraints. Dimensions and runtime variables are never eliminated: both are
    parameters of the relation (a runtime variable is a value read from data, so `rt0 - d0 in
    [0, 0]` says the point exists only where the data holds d0; substituting rt0 := d0 would
    claim it for every value). They appear in values instead (`s0 - d0 in [0, 0]`: s0 := d0).
    In a map with sizes, only linear values (sums of variables and sizes) are substituted.

    Costs one pass over the constraints when none pins a range variable."""
    if not m.constraints or not m.range_vars or m.is_known_empty or m.is_undefined:
        return m
    for _ in range(m.num_range_vars):
        found = _pinned(m)
        if found is None:
            return m
        pin, s, value = found
        out = _eliminate(m, pin, s, value)
        if out is None:
            return m
        if trace is not None:
            trace.append(Step("pinned_range_variable", s, value, {
                f"{pin}": m.constraints[pin], f"{s}": m.range_vars[s.index].bounds}))
        m = out
        if m.is_known_empty or not m.constraints or not m.range_vars:
            return m
    return m


def _pinned(m: IndexingMap) -> tuple[Expr, Symbol, Expr] | None:
    """The first constraint of m that pins a range variable, the variable (the last one,
    when several could go) and its value; None when none does."""
    sized = bool(m.sizes)
    for e, iv in m.constraints.items():
        if iv.lo != iv.hi:
            continue
        coeffs, constant = linear_form(e)
        if len(coeffs) < 2:
            continue  # a bare variable: its bounds, which the constraint rounds set
        best: Symbol | None = None
        for b, c in coeffs.items():
            if (c == 1 or c == -1) and type(b) is Symbol and (best is None or
                                                              b.index > best.index):
                if all(o is b or b not in o.variable_set() for o in coeffs):
                    best = b
        if best is None:
            continue
        if sized and not all(isinstance(o, Variable) for o in coeffs):
            continue  # maps with sizes: linear values only
        a = coeffs.pop(best)
        value = from_linear({o: -a * c for o, c in coeffs.items()}, a * (iv.lo - constant))
        # the value solves the constraint: e with s := value is identically k
        if linear_form(canon(e.substitute({best: value}))) != ({}, iv.lo):
            continue
        return e, best, value
    return None


def _eliminate(m: IndexingMap, pin: Expr, s: Symbol, value: Expr) -> IndexingMap | None:
    """m with s := value, s's interval a constraint on value, `pin` dropped and s removed;
    None when the substituted map is outside the grammar (of maps with sizes)."""
    sub: dict[Expr, Expr] = {s: value}
    items: list[tuple[Expr, Interval]] = [
        (canon(e.substitute(sub)) if s in e.variable_set() else e, iv)
        for e, iv in m.constraints.items() if e != pin]
    bound = m.range_vars[s.index].bounds
    if not bound.contains(range_of(value, m.bounds)):
        items.append((value, bound))
    results = tuple([canon(r.substitute(sub)) if s in r.variable_set() else r
                     for r in m.results])
    try:
        out = m.replace(results=results, constraints={}).add_constraints(items)
        if out.is_known_empty:
            return out
        gone: set[Variable] = {s}
        return out._drop(gone, {})
    except ValueError:  # DivisorError too: a result the grammar of maps with sizes rejects
        return None


def _has_point_dim(m: IndexingMap) -> bool:
    """Whether `_replace_point_dims` has anything to replace."""
    return any(v.bounds.is_point for v in m.dims)


def _domain_key(m: IndexingMap) -> tuple[object, ...]:
    """Everything of m but its results, as flat hashable values (custom names and
    provenance included: the maps handed back keep them)."""
    parts: list[object] = [m.is_known_empty, m.is_undefined]
    for table in (m.dims, m.range_vars, m.rt_vars):
        parts.append(len(table))
        for v in table:
            parts += (v.bounds.lo, v.bounds.hi, v.name)
    parts.append(len(m.constraints))
    for e, iv in m.constraints.items():
        parts += (e, iv.lo, iv.hi)
    for z in m.sizes:
        parts += (z.name, z.bounds.lo, z.bounds.hi, z.provenance)
    return tuple(parts)


#: The trace entry of a map with sizes that the simplifier gave back as it was.
SIZES_NOT_SIMPLIFIED: Final = "left as is: the result is outside the grammar of maps with sizes"


def _result_bounds(m: IndexingMap) -> Mapping[Variable, Interval]:
    """The variable intervals the rules read while simplifying the results: the domain's,
    tightened by what its linear constraints imply (`implied_bounds`). Never used for the
    constraints themselves, which would then justify their own removal."""
    if not m.constraints:
        return m.bounds
    tight = implied_bounds(m.bounds, m.constraints)
    if any(iv.lo > iv.hi for iv in tight.values()):
        return m.bounds  # contradictory: emptiness is decided elsewhere
    return tight
