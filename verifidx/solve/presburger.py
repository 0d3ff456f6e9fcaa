"""Presburger decisions through isl: equality and emptiness of quasi-affine maps, range variables
kept existential instead of enumerated.

A map whose expressions are quasi-affine (sums, products with a constant, floordiv/ceildiv by a
nonzero constant, mod by a positive constant, min, max) denotes a Presburger relation, and isl
(through islpy) decides equality and emptiness of those exactly, whatever the size of the range
box. The translation (built through isl's API, not its text) follows verifidx's semantics:
isl's floor of `x / c` and `x mod c` round towards -infinity for a positive constant `c`, which
is verifidx's floordiv and mod; a negative divisor is rewritten `x floordiv -c == (-x) floordiv
c` (ceildiv alike). Anything else
(a product of two variables, a non-constant divisor) is not translated: the caller falls back
to Z3.

Answers are True, False or None. None covers "not expressible", "islpy is not installed" and
"isl stopped at its operation budget" (`MAX_OPERATIONS`, a count of isl's own steps, so the
verdict does not depend on machine load). A False from `equal` is not a certificate; the
caller takes the tuple of the difference that `decide` samples and checks it by evaluation.

Sizes (docs/semantics.md, Sizes) enter as isl parameters: `equal(f, g, sizes={"N":
Interval(1, 1 << 31)})` decides the equality for every value of the parameters in their
intervals (isl parameters are universally quantified in `is_equal`). A size is translated where
the map is linear in it (`d0 - N`, an offset `N`); a product with a size (`d0 * N`) or a
division by one is not Presburger, and is left to Z3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
)
from ..core.indexing_map import IndexingMap
from ..core.interval import Interval

#: isl's operation budget per decision (isl counts its own steps; deterministic).
MAX_OPERATIONS = 2_000_000

#: Universally quantified parameters by name, each with its interval (issue 23's sizes).
Sizes = Mapping[str, Interval]

_isl: Any = None
_ctx: Any = None


def _context() -> Any:
    """islpy and one isl context, loaded on first use; None when islpy is missing."""
    global _isl, _ctx
    if _ctx is None:
        try:
            import islpy
        except ImportError:  # pragma: no cover - islpy is a dependency; a stripped install
            return None
        _isl, _ctx = islpy, islpy.Context()
    return _ctx


def available() -> bool:
    """Whether islpy can be loaded."""
    return _context() is not None


def _val(c: int) -> Any:
    """isl's integer of any size (`int_from_si` takes a C long)."""
    if -(1 << 62) < c < 1 << 62:
        return _isl.Val.int_from_si(_ctx, c)
    return _isl.Val.read_from_str(_ctx, str(c))


class _Builder:
    """Builds isl objects for one map through isl's API (no text to parse: building is about
    three times cheaper than `isl.Map(text)`). Variables are the set dimensions dims, range
    variables, runtime variables in the map's order; sizes are the parameters."""

    def __init__(self, m: IndexingMap, sizes: Sizes) -> None:
        isl = _isl
        self.space = isl.Space.set_alloc(_ctx, len(sizes), len(m.variables))
        for i, name in enumerate(sizes):
            self.space = self.space.set_dim_name(isl.dim_type.param, i, name)
        self.ls = isl.LocalSpace.from_space(self.space)
        self.zero = isl.Aff.zero_on_domain(self.ls)
        self.var = {v: isl.PwAff.from_aff(isl.Aff.var_on_domain(self.ls, isl.dim_type.set, i))
                    for i, v in enumerate(m.variables)}
        self.params = [isl.PwAff.from_aff(isl.Aff.var_on_domain(self.ls, isl.dim_type.param, i))
                       for i in range(len(sizes))]
        self.param_of = dict(zip(sizes, self.params))

    def val(self, c: int) -> Any:
        return _val(c)

    def const(self, c: int) -> Any:
        return _isl.PwAff.from_aff(self.zero.set_constant_val(self.val(c)))

    def expr(self, e: Expr) -> Any:
        """isl's piecewise quasi-affine function of `e`, or None when `e` is not one."""
        if isinstance(e, Const):
            return self.const(e.value)
        if isinstance(e, (Dim, Symbol, RtVar)):
            return self.var[e]
        if isinstance(e, Size):  # a parameter; None when the caller did not declare it
            return self.param_of.get(e.name)
        if isinstance(e, Add):
            out = None
            for t in e.terms:
                x = self.expr(t)
                if x is None:
                    return None
                out = x if out is None else out.add(x)
            return out
        if isinstance(e, Mul):
            k, x = (e.rhs, e.lhs) if isinstance(e.rhs, Const) else (e.lhs, e.rhs)
            if not isinstance(k, Const):
                return None
            a = self.expr(x)
            return None if a is None else a.scale_val(self.val(k.value))
        if not isinstance(e, (FloorDiv, CeilDiv, Mod, Min, Max)):
            return None
        a = self.expr(e.lhs)
        if a is None:
            return None
        if isinstance(e, (Min, Max)):
            b = self.expr(e.rhs)
            if b is None:
                return None
            return a.min(b) if isinstance(e, Min) else a.max(b)
        if not isinstance(e.rhs, Const) or e.rhs.value == 0:
            return None
        c = e.rhs.value
        if isinstance(e, Mod):  # isl's mod by a positive constant lies in [0, c - 1]
            return a.mod_val(self.val(c)) if c > 0 else None
        if c < 0:  # x floordiv -c == (-x) floordiv c, ceildiv alike
            a, c = a.neg(), -c
        q = a.scale_down_val(self.val(c))
        return q.floor() if isinstance(e, FloorDiv) else q.ceil()

    def within(self, x: Any, iv: Interval) -> Any:
        return x.ge_set(self.const(iv.lo)).intersect(x.le_set(self.const(iv.hi)))


def isl_map(m: IndexingMap, sizes: Sizes | None = None) -> Any:
    """isl's map of m's relation, `[sizes] -> { [dims, rts] -> [results] : exists range vars
    : domain }`, or None when some expression is not quasi-affine (or islpy is missing).
    Runtime variables are input coordinates: the relation is over every runtime value."""
    full = _with_range_vars(m, sizes)
    return None if full is None else \
        full.project_out(_isl.dim_type.in_, m.num_dims, m.num_range_vars)


def _with_range_vars(m: IndexingMap, sizes: Sizes | None) -> Any:
    """`{ [dims, range vars, rts] -> [results] : domain }`: the map before its range
    variables are made existential (a tuple's witness is sampled from it)."""
    if m.is_undefined or _context() is None:
        return None
    sizes = sizes or {}
    b = _Builder(m, sizes)
    domain = _isl.Set.universe(b.space)
    if m.is_known_empty:
        domain = _isl.Set.empty(b.space)
    for x, iv in zip(b.params, sizes.values()):
        domain = domain.intersect(b.within(x, iv))
    for i, info in enumerate(m.all_vars):
        domain = domain.lower_bound_val(_isl.dim_type.set, i, b.val(info.bounds.lo))
        domain = domain.upper_bound_val(_isl.dim_type.set, i, b.val(info.bounds.hi))
    for e, iv in m.constraints.items():
        x = b.expr(e)
        if x is None:
            return None
        domain = domain.intersect(b.within(x, iv))
    relation = _isl.Map.from_domain(domain)
    for r in m.results:
        x = b.expr(r)
        if x is None:
            return None
        relation = relation.flat_range_product(_isl.Map.from_pw_aff(x))
    return relation.intersect_domain(domain)


def _run(decide: Any) -> Any:
    """Runs `decide()` under the operation budget; None when isl stops or fails."""
    _ctx.reset_operations()
    _ctx.set_max_operations(MAX_OPERATIONS)
    try:
        return decide()
    except _isl.Error:
        return None
    finally:
        _ctx.set_max_operations(0)


def run(decide: Any) -> Any:
    """`decide()`, isl calls built on `isl_map`, under the operation budget: for analyses that
    ask isl their own questions (`verifidx.analysis.ranges`); None when isl stops, fails or is
    missing."""
    return None if _context() is None else _run(decide)


def _pair(f: IndexingMap, g: IndexingMap, sizes: Sizes | None) -> tuple[Any, Any] | None:
    """Both maps in isl, under the budget (building simplifies too); None if either fails."""
    if _context() is None:
        return None
    both = _run(lambda: (isl_map(f, sizes), isl_map(g, sizes)))
    if both is None or both[0] is None or both[1] is None:
        return None
    return both  # type: ignore[no-any-return]


@dataclass
class Difference:
    """A tuple of one relation that the other lacks, as isl samples it (not a certificate)."""

    which: str  # "first" (f, or the lhs union) or "second"
    fixed: list[int]  # dims, then runtime values
    result: list[int]
    sizes: dict[str, int]  # the sizes' values at which the relations differ
    index: int = -1  # the map of that side that relates the tuple (-1: none found)
    range_values: list[int] | None = None  # that map's range variables giving the tuple


def decide(f: IndexingMap, g: IndexingMap, sizes: Sizes | None = None
           ) -> tuple[bool | None, Difference | None]:
    """Equality of the two relations for every value of the sizes in their intervals (and
    every runtime value), and when they differ a tuple of the difference, isl's sample (not a
    certificate: the caller checks it by evaluation). (None, None) when isl cannot say (see the
    module docstring). Each difference `f - g`, `g - f` is computed once: its emptiness is the
    inclusion and its sample the tuple."""
    return decide_unions([f], [g], sizes)


def decide_unions(lhs: Sequence[IndexingMap], rhs: Sequence[IndexingMap],
                  sizes: Sizes | None = None) -> tuple[bool | None, Difference | None]:
    """`decide` for the union of the `lhs` maps' relations against the union of the `rhs`
    maps' (all of one shape, each side non-empty); the difference names "first" for lhs."""
    if _context() is None or not lhs or not rhs:
        return None, None

    def build(maps: Sequence[IndexingMap]) -> tuple[list[Any], Any] | None:
        full, union = [], None
        for m in maps:
            x = _with_range_vars(m, sizes)
            if x is None:
                return None
            full.append(x)
            y = x.project_out(_isl.dim_type.in_, m.num_dims, m.num_range_vars)
            union = y if union is None else union.union(y)
        return full, union

    sides = _run(lambda: (build(lhs), build(rhs)))
    if sides is None or sides[0] is None or sides[1] is None:
        return None, None
    (full_l, union_l), (full_r, union_r) = sides

    def run() -> tuple[bool, Difference | None]:
        for which, a, b, maps, full in (("first", union_l, union_r, lhs, full_l),
                                        ("second", union_r, union_l, rhs, full_r)):
            diff = a.subtract(b)
            if not diff.is_empty():
                found = Difference(which, *_sample(diff))
                _witness(found, maps, full)
                return False, found
        return True, None

    answer = _run(run)
    return (None, None) if answer is None else answer  # type: ignore[no-any-return]


def _sample(diff: Any) -> tuple[list[int], list[int], dict[str, int]]:
    point = diff.wrap().sample_point()
    split = diff.dim(_isl.dim_type.in_)
    values = [point.get_coordinate_val(_isl.dim_type.set, i).to_python()
              for i in range(split + diff.dim(_isl.dim_type.out))]
    sizes = {diff.get_dim_name(_isl.dim_type.param, i):
             point.get_coordinate_val(_isl.dim_type.param, i).to_python()
             for i in range(diff.dim(_isl.dim_type.param))}
    return values[:split], values[split:], sizes


def _witness(found: Difference, maps: Sequence[IndexingMap], full: Sequence[Any]) -> None:
    """Sets which map relates the tuple and with which range values (isl's sample of that
    map with everything else fixed), so the caller evaluates one point instead of a box."""
    for index, (m, relation) in enumerate(zip(maps, full)):
        nd, nr = m.num_dims, m.num_range_vars
        fixed = relation
        for i, x in enumerate(found.fixed):
            fixed = fixed.fix_val(_isl.dim_type.in_, i if i < nd else i + nr, _val(x))
        for j, y in enumerate(found.result):
            fixed = fixed.fix_val(_isl.dim_type.out, j, _val(y))
        for name, x in found.sizes.items():
            fixed = fixed.fix_val(_isl.dim_type.param,
                                  fixed.find_dim_by_name(_isl.dim_type.param, name), _val(x))
        if fixed.is_empty():
            continue
        point = fixed.wrap().sample_point()
        found.index = index
        found.range_values = [point.get_coordinate_val(_isl.dim_type.set, nd + k).to_python()
                              for k in range(nr)]
        return


def equal(f: IndexingMap, g: IndexingMap, sizes: Sizes | None = None) -> bool | None:
    """Whether the two relations are equal for every value of the sizes in their intervals
    (and every runtime value); None when isl cannot say (see the module docstring)."""
    both = _pair(f, g, sizes)
    if both is None:
        return None
    return _run(lambda: bool(both[0].is_equal(both[1])))  # type: ignore[no-any-return]


def included(f: IndexingMap, g: IndexingMap, sizes: Sizes | None = None) -> bool | None:
    """Whether f's relation is a subset of g's for every value of the sizes in their intervals
    (and every runtime value); None when isl cannot say."""
    both = _pair(f, g, sizes)
    if both is None:
        return None
    return _run(lambda: bool(both[0].is_subset(both[1])))  # type: ignore[no-any-return]


def is_empty(m: IndexingMap, sizes: Sizes | None = None) -> bool | None:
    """Whether the map's domain has no point for any size; None when isl cannot say."""
    if _context() is None:
        return None
    return _run(lambda: _emptiness(m, sizes))  # type: ignore[no-any-return]


def sample(m: IndexingMap, sizes: Sizes | None = None
           ) -> tuple[dict[str, int], list[int]] | None:
    """A point of the map's domain (every variable: dims, range, runtime) and the sizes at
    which it is one, as isl samples it (not a certificate: the caller evaluates it); None when
    the domain is empty for every size or isl cannot say."""
    if _context() is None:
        return None

    def run() -> tuple[dict[str, int], list[int]] | None:
        full = _with_range_vars(m, sizes)
        if full is None:
            return None
        domain = full.domain()
        if domain.is_empty():
            return None
        point = domain.sample_point()
        values = [point.get_coordinate_val(_isl.dim_type.set, i).to_python()
                  for i in range(domain.dim(_isl.dim_type.set))]
        at = {domain.get_dim_name(_isl.dim_type.param, i):
              point.get_coordinate_val(_isl.dim_type.param, i).to_python()
              for i in range(domain.dim(_isl.dim_type.param))}
        return at, values

    return _run(run)  # type: ignore[no-any-return]


def _emptiness(m: IndexingMap, sizes: Sizes | None) -> bool | None:
    relation = isl_map(m, sizes)
    return None if relation is None else bool(relation.is_empty())
