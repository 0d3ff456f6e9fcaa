"""islpy as a peer: the same maps written in isl's syntax (quasi-affine maps only).

Optional: every benchmark runs without islpy and says so in its table.
"""

from __future__ import annotations

from verifidx.core.expr import (
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
)
from verifidx.core.indexing_map import IndexingMap

try:
    import islpy as isl
except ImportError:  # pragma: no cover - optional peer
    isl = None


def _name(v: Expr) -> str:
    prefix = {Dim: "d", Symbol: "s", RtVar: "rt"}[type(v)]  # type: ignore[index]
    return f"{prefix}{v.index}"  # type: ignore[attr-defined]


def isl_expr(e: Expr) -> str | None:
    """isl text of a quasi-affine expression, None if isl cannot express it."""
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, (Dim, Symbol, RtVar)):
        return _name(e)
    if isinstance(e, Add):
        parts = [isl_expr(t) for t in e.terms]
        return None if None in parts else "(" + " + ".join(parts) + ")"  # type: ignore[arg-type]
    if isinstance(e, (Mul, FloorDiv, CeilDiv, Mod, Min, Max)):
        a, b = isl_expr(e.lhs), isl_expr(e.rhs)
        if a is None or b is None:
            return None
        if isinstance(e, Mul):
            if isinstance(e.rhs, Const):
                return f"{e.rhs.value} * ({a})"
            return f"{e.lhs.value} * ({b})" if isinstance(e.lhs, Const) else None
        if not isinstance(e.rhs, Const):
            return None
        c = e.rhs.value
        if c < 0:  # isl divides by positive constants only: x / -c == (-x) / c
            a, b = f"-({a})", str(-c)
        if isinstance(e, FloorDiv):
            return f"floor(({a}) / {b})"
        if isinstance(e, CeilDiv):
            return f"ceil(({a}) / {b})"
        if isinstance(e, Mod):
            return f"(({a}) mod {b})"
        return f"{'min' if isinstance(e, Min) else 'max'}({a}, {b})"
    return None


def isl_text(m: IndexingMap) -> str | None:
    """`[rt] -> { [d] -> [results] : exists s : domain }` or None."""
    if m.is_undefined or m.is_known_empty:
        return None
    dims = [f"d{i}" for i in range(m.num_dims)]
    syms = [f"s{i}" for i in range(m.num_range_vars)]
    rts = [f"rt{i}" for i in range(m.num_rt_vars)]
    results = [isl_expr(r) for r in m.results]
    cons = []
    for v, info in zip(dims + syms + rts, m.all_vars):
        cons.append(f"{info.bounds.lo} <= {v} <= {info.bounds.hi}")
    for e, iv in m.constraints.items():
        t = isl_expr(e)
        if t is None:
            return None
        cons.append(f"{iv.lo} <= {t} <= {iv.hi}")
    if None in results:
        return None
    outs = ", ".join(f"o{i}" for i in range(len(results)))
    cons += [f"o{i} = {r}" for i, r in enumerate(results)]
    body = " and ".join(cons) if cons else "true"
    if syms:
        body = f"exists ({', '.join(syms)} : {body})"
    return f"[{', '.join(rts)}] -> {{ [{', '.join(dims)}] -> [{outs}] : {body} }}"
