"""Presburger decisions through isl: equality and emptiness of quasi-affine maps, range variables
kept existential instead of enumerated.

A map whose expressions are quasi-affine (sums, products with a constant, floordiv/ceildiv by a
nonzero constant, mod by a positive constant, min, max) denotes a Presburger relation, and isl
(through islpy) decides equality and emptiness of those exactly, whatever the size of the range
box. The translation is written per verifidx's semantics: isl's `floor(x / c)` and `x mod c`
round towards -infinity for a positive constant `c`, which is verifidx's floordiv and mod; a
negative divisor is rewritten `x floordiv -c == (-x) floordiv c` (ceildiv alike). Anything else
(a product of two variables, a non-constant divisor) is not translated: the caller falls back
to Z3.

Answers are True, False or None. None covers "not expressible", "islpy is not installed" and
"isl stopped at its operation budget" (`MAX_OPERATIONS`, a count of isl's own steps, so the
verdict does not depend on machine load). A False from `equal` is not a certificate; the
caller turns it into one with `difference_point` and checks that point by evaluation.

Sizes (issue 23, not in the expression language yet) are meant to enter as isl parameters:
`equal(f, g, sizes={"N": Interval(1, 1 << 31)})` decides the equality for every value of the
parameters in their intervals (isl parameters are universally quantified in `is_equal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .expr import Add, CeilDiv, Const, Dim, Expr, FloorDiv, Max, Min, Mod, Mul, RtVar, Symbol
from .indexing_map import IndexingMap
from .interval import Interval

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


def _name(v: Expr) -> str:
    if isinstance(v, Dim):
        return f"d{v.index}"
    if isinstance(v, Symbol):
        return f"s{v.index}"
    assert isinstance(v, RtVar)
    return f"r{v.index}"


def expr_text(e: Expr) -> str | None:
    """isl's text of a quasi-affine expression, or None when it is not quasi-affine."""
    if isinstance(e, Const):
        return f"({e.value})"
    if isinstance(e, (Dim, Symbol, RtVar)):
        return _name(e)
    if isinstance(e, Add):
        parts = []
        for t in e.terms:
            p = expr_text(t)
            if p is None:
                return None
            parts.append(p)
        return "(" + " + ".join(parts) + ")"
    if not isinstance(e, (Mul, FloorDiv, CeilDiv, Mod, Min, Max)):
        return None
    a, b = expr_text(e.lhs), expr_text(e.rhs)
    if a is None or b is None:
        return None
    if isinstance(e, Mul):
        if isinstance(e.rhs, Const):
            return f"({e.rhs.value} * {a})"
        if isinstance(e.lhs, Const):
            return f"({e.lhs.value} * {b})"
        return None
    if isinstance(e, (Min, Max)):
        return f"{'min' if isinstance(e, Min) else 'max'}({a}, {b})"
    if not isinstance(e.rhs, Const) or e.rhs.value == 0:
        return None
    c = e.rhs.value
    if isinstance(e, Mod):
        return f"({a} mod {c})" if c > 0 else None
    if c < 0:
        a, c = f"(-{a})", -c
    return f"{'floor' if isinstance(e, FloorDiv) else 'ceil'}({a} / {c})"


def map_text(m: IndexingMap, sizes: Sizes | None = None) -> str | None:
    """isl's text of the map's relation, `[sizes] -> { [dims, rts] -> [results] : exists
    (range vars : domain) }`, or None when some expression is not quasi-affine. Runtime
    variables are input coordinates (the relation is over every runtime value)."""
    if m.is_undefined:
        return None
    params = list(sizes or {})
    inputs = [_name(v) for v in m.variables if not isinstance(v, Symbol)]
    outputs = [f"o{i}" for i in range(m.num_results)]
    cons = [f"{iv.lo} <= {p} <= {iv.hi}" for p, iv in (sizes or {}).items()]
    if m.is_known_empty:
        cons.append("1 = 0")
    for v, info in zip(m.variables, m.all_vars):
        cons.append(f"{info.bounds.lo} <= {_name(v)} <= {info.bounds.hi}")
    for e, iv in m.constraints.items():
        t = expr_text(e)
        if t is None:
            return None
        cons.append(f"{iv.lo} <= {t} <= {iv.hi}")
    for o, r in zip(outputs, m.results):
        t = expr_text(r)
        if t is None:
            return None
        cons.append(f"{o} = {t}")
    body = " and ".join(cons) if cons else "true"
    if m.num_range_vars:
        names = ", ".join(f"s{i}" for i in range(m.num_range_vars))
        body = f"exists ({names} : {body})"
    return (f"[{', '.join(params)}] -> {{ [{', '.join(inputs)}] -> [{', '.join(outputs)}] : "
            f"{body} }}")


def _read(text: str) -> Any:
    return _isl.Map.read_from_str(_ctx, text)


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


def equal(f: IndexingMap, g: IndexingMap, sizes: Sizes | None = None) -> bool | None:
    """Whether the two relations are equal for every value of the sizes in their intervals
    (and every runtime value); None when isl cannot say (see the module docstring)."""
    if _context() is None:
        return None
    a, b = map_text(f, sizes), map_text(g, sizes)
    if a is None or b is None:
        return None
    return _run(lambda: bool(_read(a).is_equal(_read(b))))  # type: ignore[no-any-return]


def difference_point(f: IndexingMap, g: IndexingMap) -> tuple[list[int], list[int]] | None:
    """A tuple of f's relation that g's lacks, as (dims + rts, results), or None (no such
    tuple, or isl could not say). The caller checks it by evaluation before believing it."""
    if _context() is None:
        return None
    a, b = map_text(f), map_text(g)
    if a is None or b is None:
        return None

    def sample() -> tuple[list[int], list[int]] | None:
        diff = _read(a).subtract(_read(b))
        if diff.is_empty():
            return None
        point = diff.wrap().sample_point()
        values = [point.get_coordinate_val(_isl.dim_type.set, i).to_python()
                  for i in range(diff.dim(_isl.dim_type.in_) + diff.dim(_isl.dim_type.out))]
        split = diff.dim(_isl.dim_type.in_)
        return values[:split], values[split:]

    return _run(sample)  # type: ignore[no-any-return]


def is_empty(m: IndexingMap, sizes: Sizes | None = None) -> bool | None:
    """Whether the map's domain has no point for any size; None when isl cannot say."""
    if _context() is None:
        return None
    a = map_text(m, sizes)
    if a is None:
        return None
    return _run(lambda: bool(_read(a).is_empty()))  # type: ignore[no-any-return]
