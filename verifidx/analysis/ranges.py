"""Exact ranges of a map's results for every size, and whether they fit an index type (issue 37).

Compilers choose 32-bit index arithmetic when they believe every index fits; this module proves
it or finds where it breaks. `result_range(m)` gives, per result, the minimum and maximum over
the map's domain (dims, range and runtime variables in their intervals, the constraints) for
every value of the map's parameters; `fits(m, bits, signed)` decides whether every result lies
in the type's range at every point and every parameter value, and otherwise names the smallest
parameters at which one does not, with a point checked by exact evaluation.

Parameters are the universally quantified names of a map, each with its interval
(`Parameters`): today its sizes (issue 23); value symbols (issue 36) are the same kind of
thing and enter through `parameters`, the one place that lists them.

How each answer is found, cheapest proof first:
1. isl (`presburger`), for quasi-affine maps: the parameters are isl parameters, `dim_max` /
   `dim_min` give each extreme as a piecewise quasi-affine function of them. A single piece
   valid at every parameter value is the extreme as an expression (`8960*N - 1`); the extreme
   over the whole parameter box is a number. The overflow set's parameters, lexicographically
   minimised (isl's `lexmin`, in the order of the map's sizes), are the smallest sizes.
2. Z3 (a product of variables, `d0 * N`): a proven-bound search. A witness point attains a
   value; the solver is asked for a point above a bound halfway to the interval enclosure; an
   unsat lowers the bound, a model raises the witness. An extreme is exact only when the two
   meet. Smallest sizes are searched the same way, size by size. Every query has a resource
   budget (`RLIMIT`, Z3's deterministic count), never a clock; unknown leaves an enclosure.
3. Interval arithmetic (`interval.range_of`), always: the enclosure both searches start from,
   and the answer (exact=False) when neither solver decides.

Every point reported (the witness of an extreme, of an overflow) is checked by evaluating the
map exactly at it; a model that fails that check ends the search with an enclosure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import lcm
from typing import Any

from ..core.errors import EvaluationError
from ..core.expr import Const, Dim, Expr, Size, Variable, add, floordiv, mul
from ..core.indexing_map import IndexingMap
from ..core.interval import Interval, range_of
from ..solve import presburger, smt, smt_terms

#: Universally quantified parameters by name, each with its interval: sizes, value symbols.
Parameters = Mapping[str, Interval]

#: Z3 resource units of each solver query (about a tenth of a second of one core).
RLIMIT = 500_000
#: Solver queries one search (an extreme, or the smallest sizes of one result) may ask.
MAX_QUERIES = 100


def parameters(m: IndexingMap, given: Parameters | None = None) -> dict[str, Interval]:
    """The map's universally quantified parameters with their intervals, in the map's order:
    its sizes (issue 23). Value symbols (issue 36) join here, and everything below reads
    parameters only from this mapping. `given` narrows intervals (a shape environment's
    ranges); it may not widen one, nor name a parameter the map lacks."""
    declared = {z.name: z.bounds for z in m.sizes}
    out = dict(declared)
    for name, iv in (given or {}).items():
        own = declared.get(name)
        if own is None:
            raise ValueError(f"the map has no parameter {name!r}")
        if iv.is_empty or iv.lo < own.lo or iv.hi > own.hi:
            raise ValueError(f"{name} in {iv} is not inside its declared interval {own}")
        out[name] = iv
    return out


def _leaf(name: str) -> Variable:
    """The expression leaf a parameter stands for in results and constraints: a size. (Value
    symbols, issue 36, give theirs here; presburger translates a leaf of `parameters` to the isl
    parameter of that name, and `IndexingMap.evaluate(sizes=...)` / `with_sizes` bind it.)"""
    return Size(name)


def type_range(bits: int, signed: bool = True) -> Interval:
    """The values of an integer type of `bits` bits."""
    if bits < 1:
        raise ValueError(f"an integer type has at least 1 bit, not {bits}")
    return Interval(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else \
        Interval(0, (1 << bits) - 1)


@dataclass(frozen=True)
class Extreme:
    """One end of a result's range. `value`: over every parameter value (a number); `expr`: the
    extreme as an expression in the parameters, exact at each of them (isl gave one piece), or
    None; `exact`: attained by a checked point and proven (else `value` is a sound bound)."""

    value: int
    exact: bool
    expr: Expr | None = None

    def text(self) -> str:
        """The expression where there is one in the parameters, else the number."""
        if self.expr is not None and self.expr.variable_set():
            return str(self.expr)
        return str(self.value)


@dataclass(frozen=True)
class ResultRange:
    """The range of one result (`low`, `high`: None when the domain is empty for every
    parameter value) and which procedure gave it (`isl`, `z3`, `intervals`)."""

    result: int
    low: Extreme | None
    high: Extreme | None
    method: str
    note: str = ""

    @property
    def exact(self) -> bool:
        return all(x is None or x.exact for x in (self.low, self.high))

    def within(self, iv: Interval) -> bool:
        """Proven inside `iv` (an enclosure inside is a proof too)."""
        return self.low is None or (iv.lo <= self.low.value and self.high is not None
                                    and self.high.value <= iv.hi)


@dataclass(frozen=True)
class Overflow:
    """A result outside the type's range: at parameters `sizes` (the lexicographically smallest
    when `smallest`), the point `point` (variables by name) gives it `value` (evaluated)."""

    result: int
    sizes: dict[str, int]
    smallest: bool
    point: dict[str, int]
    value: int


@dataclass(frozen=True)
class Fit:
    """`fits`'s answer: `verdict` "fits" (proven for every parameter value), "overflows" (with
    `overflow`) or "unknown" (`reason`); per result its range, whether it fits and where not."""

    verdict: str
    bits: int
    signed: bool
    ranges: tuple[ResultRange, ...]
    result_fits: tuple[bool | None, ...]
    overflows: tuple[Overflow | None, ...]
    reason: str = ""
    #: the map whose results were checked (under `layout`, the offset map)
    checked: IndexingMap | None = None

    @property
    def type_range(self) -> Interval:
        return type_range(self.bits, self.signed)

    @property
    def overflow(self) -> Overflow | None:
        """The overflow at the lexicographically smallest parameters over all results (its
        `smallest` holds only when every result was decided and each search proved its own)."""
        found = [o for o in self.overflows if o is not None]
        if not found:
            return None
        first = min(found, key=lambda o: tuple(o.sizes.values()))
        proven = all(o.smallest for o in found) and None not in self.result_fits
        return first if proven == first.smallest else Overflow(
            first.result, first.sizes, proven, first.point, first.value)


# -- the public entry points ------------------------------------------------------------------


def result_range(m: IndexingMap, params: Parameters | None = None, *, rlimit: int = RLIMIT
                 ) -> list[ResultRange]:
    """Per result, its minimum and maximum over the domain for every parameter value (see the
    module docstring for how, and what `exact` means)."""
    ps = parameters(m, params)
    _check(m)
    enclosures = _enclosures(m, ps)
    found = presburger.run(lambda: _isl_ranges(m, ps))
    if found is not None:
        return [_checked_isl(m, ps, i, lo, hi) for i, (lo, hi) in enumerate(found)]
    solver = _Solver(m, ps, rlimit)
    return [_z3_range(solver, i, iv) for i, iv in enumerate(enclosures)]


def fits(m: IndexingMap, bits: int = 32, signed: bool = True, *,
         layout: Any = None, params: Parameters | None = None, rlimit: int = RLIMIT) -> Fit:
    """Whether every result of `m` lies in the range of a `bits`-bit integer at every point of
    the domain and every parameter value. With `layout` (a shape with a layout, `f32[262144,
    8960]{1,0}`, as `verifidx.hlo.layout` reads it), the map's results are a logical index into
    that shape and the value checked is its physical offset (`offset_map`)."""
    if layout is not None:
        m = offset_map(m, layout)
    ranges, verdicts, overflows, reason = _decide(m, type_range(bits, signed), params, rlimit)
    verdict = "overflows" if False in verdicts else "unknown" if None in verdicts else "fits"
    return Fit(verdict, bits, signed, ranges, verdicts, overflows, reason, m)


@dataclass(frozen=True)
class Bounds:
    """`in_bounds`'s answer: `verdict` "in bounds" (proven wherever the mask holds, for every
    parameter value), "out of bounds" (with `violation`: the smallest parameters, a checked
    point and the index's value there) or "unknown" (`reason`); `range` is the index's range
    on the masked domain, `extent` the bound as given."""

    verdict: str
    extent: Expr
    range: ResultRange
    violation: Overflow | None
    reason: str = ""


def in_bounds(m: IndexingMap, extent: Expr | int,
              mask: Sequence[tuple[Expr, Interval]] = (), *, params: Parameters | None = None,
              rlimit: int = RLIMIT) -> Bounds:
    """Whether `0 <= m's one result < extent` at every point of the domain where the `mask`
    constraints hold (a load's `xmask = xindex < xnumel`: `xindex - xnumel in [-inf, -1]`),
    for every parameter value; `extent` is a number or an expression in the map's sizes (the
    buffer's element count). The check is one `fits`-style decision over the two results
    `index` and `extent - 1 - index`, both of which must be non-negative."""
    if m.num_results != 1:
        raise ValueError(f"in_bounds checks one index; the map has {m.num_results} results")
    bound = Const(extent) if isinstance(extent, int) else extent
    if not bound.variable_set() <= {_leaf(name) for name in parameters(m)}:
        raise ValueError(f"the extent {bound} may use only the map's sizes")
    masked = m.add_constraints(list(mask)) if mask else m
    index = masked.results[0]
    both = masked.with_results((index, add(bound, -1, mul(-1, index))))
    ps = parameters(both, params)
    top = max(0, *(iv.hi for iv in _enclosures(both, ps)))
    ranges, verdicts, overflows, reason = _decide(both, Interval(0, top), ps, rlimit)
    own = ranges[0]
    found = [o for o in overflows if o is not None]
    if found:
        first = min(found, key=lambda o: tuple(o.sizes.values()))
        value = masked.evaluate(*_split(masked, first.point), first.sizes or None)[0]
        proven = all(o.smallest for o in found) and None not in verdicts
        return Bounds("out of bounds", bound, own,
                      Overflow(0, first.sizes, proven, first.point, value), reason)
    return Bounds("unknown" if None in verdicts else "in bounds", bound, own, None, reason)


def _split(m: IndexingMap, point: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """A named point (as `_point` gives it) as the map's dims and symbols."""
    from ..core.syntax import variable_names

    names = variable_names(m)
    values = [point[names[v]] for v in m.variables]
    return values[:m.num_dims], values[m.num_dims:]


def _decide(m: IndexingMap, target: Interval, params: Parameters | None, rlimit: int
            ) -> tuple[tuple[ResultRange, ...], tuple[bool | None, ...],
                       tuple[Overflow | None, ...], str]:
    """Per result of `m`: its range, whether it stays inside `target` for every parameter
    value (None: undecided), the overflow at the smallest parameters where not, and the
    reasons of the undecided."""
    ps = parameters(m, params)
    ranges = result_range(m, ps, rlimit=rlimit)
    verdicts: list[bool | None] = []
    overflows: list[Overflow | None] = []
    reasons: list[str] = []
    solver: _Solver | None = None
    for rr in ranges:
        if rr.within(target):
            verdicts.append(True)
            overflows.append(None)
            continue
        holds: bool | None = None
        over, why = None, ""
        if rr.method == "isl":
            holds, over, why = _isl_overflow(m, ps, rr.result, target)
        if holds is None:
            solver = solver or _Solver(m, ps, rlimit)
            holds, over, why = _z3_overflow(solver, rr.result, target)
        if holds is True and _witnessed_outside(rr, target):
            holds, why = None, "the search found no overflow, yet an extreme outside the type's " \
                               "range is attained at a checked point"
        verdicts.append(holds)
        overflows.append(over)
        if holds is None:
            reasons.append(f"result {rr.result}: {why}")
    return tuple(ranges), tuple(verdicts), tuple(overflows), "; ".join(reasons)


def _witnessed_outside(rr: ResultRange, target: Interval) -> bool:
    """An exact extreme (attained at a checked point) outside `target`: evidence against a
    "fits", which is then never reported."""
    return any(end is not None and end.exact and end.value not in target
               for end in (rr.low, rr.high))


def offset_map(m: IndexingMap, layout: Any) -> IndexingMap:
    """`m` with its results replaced by the one physical offset (in elements) that `layout`'s
    formula gives at them (`verifidx.hlo.layout`'s offset, before simplification, so it holds at
    every integer index: an index outside the shape is checked too, never dropped)."""
    from ..hlo.layout import as_tiled_shape

    shape = as_tiled_shape(layout)
    if shape.rank != m.num_results:
        raise ValueError(f"the map has {m.num_results} results; the shape {shape} has rank "
                         f"{shape.rank}")
    offset = shape.offset_map(tidy=False).results[0]
    return m.with_results((offset.substitute({Dim(k): r for k, r in enumerate(m.results)}),))


# -- shared -----------------------------------------------------------------------------------


def _check(m: IndexingMap) -> None:
    if m.is_undefined:
        raise ValueError("an UNDEFINED map has no range")


def _enclosures(m: IndexingMap, ps: Parameters) -> list[Interval]:
    """Interval arithmetic's sound range of each result (constraints unused)."""
    bounds: dict[Variable, Interval] = dict(m.bounds)
    bounds.update({_leaf(name): iv for name, iv in ps.items()})
    cache: dict[Expr, Interval] = {}
    return [range_of(r, bounds, cache) for r in m.results]


def _point(m: IndexingMap, ps: Parameters, sizes: Mapping[str, int], values: Sequence[int],
           result: int) -> tuple[dict[str, int], int] | None:
    """The named point and the result's value there, when `values` (dims, range, runtime
    variables) is a point of the domain at `sizes` by exact evaluation; else None."""
    from ..core.syntax import variable_names

    if set(sizes) != set(ps) or any(sizes[k] not in iv for k, iv in ps.items()):
        return None
    if len(values) != len(m.all_vars) or not all(
            x in info.bounds for x, info in zip(values, m.all_vars)):
        return None
    nd = m.num_dims
    try:
        if not m.constraints_satisfied(values[:nd], values[nd:], dict(sizes)):
            return None
        value = m.evaluate(values[:nd], values[nd:], dict(sizes))[result]
    except (EvaluationError, ZeroDivisionError):
        return None
    names = variable_names(m)
    return {names[v]: x for v, x in zip(m.variables, values)}, value


# -- isl: quasi-affine maps -------------------------------------------------------------------


def _isl_ranges(m: IndexingMap, ps: Parameters
                ) -> list[tuple[Extreme | None, Extreme | None]] | None:
    """isl's extremes of every result, or None when the map is not quasi-affine."""
    import islpy as isl

    rel = presburger.isl_map(m, ps)
    if rel is None:
        return None
    rng = rel.range()
    ctx = rng.get_ctx()
    n_params = rng.dim(isl.dim_type.param)
    box = isl.Set.universe(rng.get_space().params())
    for k, iv in enumerate(ps.values()):
        box = box.lower_bound_val(isl.dim_type.param, k, isl.Val.read_from_str(ctx, str(iv.lo)))
        box = box.upper_bound_val(isl.dim_type.param, k, isl.Val.read_from_str(ctx, str(iv.hi)))
    # the parameters as set dimensions: extremes over the whole box are constants
    flat = rng.move_dims(isl.dim_type.set, rng.dim(isl.dim_type.set), isl.dim_type.param, 0,
                         n_params)
    if flat.is_empty():
        return [(None, None)] * m.num_results
    names = list(ps)
    out: list[tuple[Extreme | None, Extreme | None]] = []
    for i in range(m.num_results):
        ends = []
        for over_box, per_size in ((flat.dim_min(i), rng.dim_min(i)),
                                   (flat.dim_max(i), rng.dim_max(i))):
            value = _constant(over_box)
            if value is None:
                return None
            expr = _single_piece(per_size, box, names) if n_params else None
            ends.append(Extreme(value, True, expr))
        out.append((ends[0], ends[1]))
    return out


def _constant(pw: Any) -> int | None:
    """The value of a piecewise function without parameters (one constant piece)."""
    pieces = pw.get_pieces()
    if len(pieces) != 1:
        return None
    aff = pieces[0][1]
    value = Fraction(str(aff.get_constant_val()))
    if value.denominator != 1 or any(
            not aff.get_coefficient_val(t, k).is_zero()
            for t in (_dim("in_"), _dim("div")) for k in range(aff.dim(t))):
        return None
    return int(value)


def _dim(name: str) -> Any:
    import islpy as isl

    return getattr(isl.dim_type, name)


def _single_piece(pw: Any, box: Any, names: Sequence[str]) -> Expr | None:
    """The function as an expression in the parameters when it is one piece defined on the
    whole parameter box; else None."""
    pieces = pw.get_pieces()
    if len(pieces) != 1 or not box.is_subset(pieces[0][0]):
        return None
    aff = pieces[0][1]
    num, den = _numerator(aff, names, aff.dim(_dim("div")))
    return num if den == 1 else floordiv(num, den)  # integer-valued: the floor is exact


def _numerator(aff: Any, names: Sequence[str], divs: int) -> tuple[Expr, int]:
    """(e, d) with aff == e / d, e an expression with integer coefficients: isl's integer
    divisions (the first `divs` of its local space; a division refers only to earlier ones)
    become floordivs of their own numerators."""
    param, div = _dim("param"), _dim("div")
    leaves: list[tuple[Fraction, Expr]] = []
    for k, name in enumerate(names):
        leaves.append((Fraction(str(aff.get_coefficient_val(param, k))), _leaf(name)))
    for k in range(divs):
        c = Fraction(str(aff.get_coefficient_val(div, k)))
        if c:
            num, den = _numerator(aff.get_div(k), names, k)
            leaves.append((c, floordiv(num, den)))
    constant = Fraction(str(aff.get_constant_val()))
    d = lcm(constant.denominator, *[c.denominator for c, _ in leaves])
    terms = [mul(int(c * d), e) for c, e in leaves if c]
    return add(int(constant * d), *terms), d


def _checked_isl(m: IndexingMap, ps: Parameters, i: int, low: Extreme | None,
                 high: Extreme | None) -> ResultRange:
    """isl's extremes with a witness that attains each, checked by evaluation; an extreme no
    checked point attains is kept as a bound (isl proved it) but not called exact."""
    out = []
    for end in (low, high):
        if end is not None and _attained(m, ps, i, end.value) is None:
            end = Extreme(end.value, False, end.expr)
        out.append(end)
    note = "" if all(e is None or e.exact for e in out) else "no checked point attains isl's value"
    return ResultRange(i, out[0], out[1], "isl", note)


def _attained(m: IndexingMap, ps: Parameters, i: int, value: int
              ) -> tuple[dict[str, int], int] | None:
    found = presburger.sample(m.add_constraint(m.results[i], Interval.point(value)), ps)
    if found is None:
        return None
    at, values = found
    point = _point(m, ps, at, values, i)
    return point if point is not None and point[1] == value else None


#: What a check of one result gives: fits (True: proven; False: the overflow; None: unknown,
#: with the reason).
Decision = tuple[bool | None, Overflow | None, str]


def _isl_overflow(m: IndexingMap, ps: Parameters, i: int, target: Interval) -> Decision:
    """The lexicographically smallest parameters at which result i leaves `target` (isl's
    lexmin of the overflow set's parameters) and a checked point there; fits when that set is
    empty."""
    enclosure = _enclosures(m, ps)[i]
    sides = [Interval(target.hi + 1, max(target.hi + 1, enclosure.hi)),
             Interval(min(target.lo - 1, enclosure.lo), target.lo - 1)]

    def smallest() -> dict[str, int] | str:
        import islpy as isl

        found = None
        for side in sides:
            rel = presburger.isl_map(m.add_constraint(m.results[i], side), ps)
            if rel is None:
                return "not quasi-affine"
            p = rel.params()
            found = p if found is None else found.union(p)
        if found is None or found.is_empty():
            return "empty"
        n = found.dim(isl.dim_type.param)
        flat = found.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
        point = flat.lexmin().sample_point()
        return {name: point.get_coordinate_val(isl.dim_type.set, k).to_python()
                for k, name in enumerate(ps)}

    at = presburger.run(smallest)
    if at == "empty":
        return True, None, ""
    if not isinstance(at, dict):
        return None, None, "isl did not decide"
    at_sizes = m.with_sizes(at)
    for side in sides:
        found = presburger.sample(at_sizes.add_constraint(at_sizes.results[i], side), {})
        if found is None:
            continue
        point = _point(m, ps, at, found[1], i)
        if point is not None and point[1] not in target:
            return False, Overflow(i, at, True, point[0], point[1]), ""
    return None, None, f"isl's smallest parameters {at} gave no checked point"


# -- Z3: the proven-bound search --------------------------------------------------------------


class _Solver:
    """The map's domain over solver integers (parameters in their intervals), and queries
    whose models come back as checked points."""

    def __init__(self, m: IndexingMap, ps: Parameters, rlimit: int) -> None:
        self.map, self.params, self.rlimit = m, ps, rlimit
        self.vars = [smt_terms.int_var(f"{v.prefix}{v.index}") for v in m.variables]
        self.sizes = {name: smt_terms.int_var(f"size_{name}") for name in ps}
        env: dict[Expr, Any] = dict(zip(m.variables, self.vars))
        env.update({_leaf(name): x for name, x in self.sizes.items()})
        enc = smt.Encoder(env)
        conds = []
        for x, info in zip(self.vars, m.all_vars):
            conds += [x >= info.bounds.lo, x <= info.bounds.hi]
        for name, iv in ps.items():
            conds += [self.sizes[name] >= iv.lo, self.sizes[name] <= iv.hi]
        for e, iv in m.constraints.items():
            t = enc(e)
            conds += [t >= iv.lo, t <= iv.hi]
        self.results = [enc(r) for r in m.results]
        self.member = smt_terms.and_(*conds, *enc.defined)
        if m.is_known_empty:
            self.member = smt_terms.FALSE
        self.queries = 0

    def ask(self, result: int, *extra: Any) -> tuple[str, Any]:
        """("unsat", None), ("sat", (sizes, named point, value)) with the point checked by
        evaluation, or ("unknown", why)."""
        self.queries += 1
        s = smt_terms.Solver(self.rlimit)
        s.add(self.member, *extra)
        answer = str(s.check())
        if answer == "unsat":
            return "unsat", None
        if answer != "sat":
            return "unknown", f"Z3 answered {answer} ({s.reason_unknown()})"
        model = s.model()

        def value(x: Any) -> int:
            return model.eval(x, model_completion=True).as_long()  # type: ignore[no-any-return]

        sizes = {name: value(x) for name, x in self.sizes.items()}
        point = _point(self.map, self.params, sizes, [value(x) for x in self.vars], result)
        if point is None:
            return "unknown", "Z3's model failed the check by evaluation"
        return "sat", (sizes, point[0], point[1])


def _z3_range(solver: _Solver, i: int, enclosure: Interval) -> ResultRange:
    answer, found = solver.ask(i)
    if answer == "unsat":
        return ResultRange(i, None, None, "z3", "the domain is empty for every parameter value")
    if answer != "sat":
        return ResultRange(i, Extreme(enclosure.lo, False), Extreme(enclosure.hi, False),
                           "intervals", found)
    attained = found[2]
    low = _search(solver, i, -1, -attained, -enclosure.lo)
    high = _search(solver, i, 1, attained, enclosure.hi)
    exact = low.exact and high.exact
    return ResultRange(i, low, high, "z3", "" if exact else "Z3 did not close the search; "
                                                          "the open end is an enclosure")


def _search(solver: _Solver, i: int, sign: int, best: int, bound: int) -> Extreme:
    """The maximum of `sign * result`: `best` is attained at a checked point and `bound` is
    proven (intervals, then each unsat); halve the gap until they meet or a query fails."""
    term = solver.results[i] if sign > 0 else -solver.results[i]
    for _ in range(MAX_QUERIES):
        if best >= bound:
            break
        mid = best + (bound - best + 1) // 2
        answer, found = solver.ask(i, term >= mid)
        if answer == "unsat":
            bound = mid - 1
        elif answer == "sat" and sign * found[2] >= mid:
            best = sign * found[2]
        else:
            break
    # a checked witness above a "proven" bound would be a solver fault: keep the witness, not exact
    return Extreme(sign * max(best, bound), best == bound)


def _z3_overflow(solver: _Solver, i: int, target: Interval) -> Decision:
    """A checked point where result i leaves `target`, at parameters minimised one by one in
    their order (each a bisection of solver queries); `smallest` when every step was decided."""
    r = solver.results[i]
    outside = smt_terms.or_(r < target.lo, r > target.hi)
    answer, found = solver.ask(i, outside)
    if answer == "unsat":
        return True, None, ""
    if answer != "sat":
        return None, None, found
    fixed: list[Any] = []
    proven = True
    for name, iv in solver.params.items():
        x = solver.sizes[name]
        lo, hi = iv.lo, found[0][name]
        for _ in range(MAX_QUERIES):
            if lo >= hi:
                break
            mid = (lo + hi) // 2
            answer, better = solver.ask(i, outside, *fixed, x <= mid)
            if answer == "sat":
                found, hi = better, better[0][name]
            elif answer == "unsat":
                lo = mid + 1
            else:
                break
        if lo < hi:
            proven = False
            break
        fixed.append(x == hi)
    sizes, point, value = found
    return False, Overflow(i, sizes, proven, point, value), ""
