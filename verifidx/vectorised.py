"""Exact evaluation of map expressions over many points at once (numpy), and the membership test
that checks a counterexample without a solver.

A refutation of map equality is a tuple that one map relates and the other does not. The first
half is one evaluation; the second says that *no* value of the other map's range variables gives
the tuple, which this module checks by evaluating the other map over its whole range box at that
point (vectorised, so a box of thousands of points costs one pass per expression node).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .expr import Add, CeilDiv, Const, Expr, FloorDiv, Max, Min, Mod, Mul, Variable
from .indexing_map import IndexingMap

#: Largest range box (points) that `relates` enumerates for one tuple.
MEMBERSHIP_POINTS = 1 << 20


def evaluate(e: Expr, env: dict[Expr, np.ndarray], n: int) -> np.ndarray:
    """Vectorised evaluation with the semantics of the map language (floor rounding, mod in
    [0, b - 1]); only called on total expressions, so no divisor is 0 or a bad modulus."""
    if isinstance(e, Const):
        return np.full(n, e.value, dtype=np.int64)
    if isinstance(e, Variable):
        return env[e]
    if isinstance(e, Add):
        out = evaluate(e.terms[0], env, n)
        for t in e.terms[1:]:
            out = out + evaluate(t, env, n)
        return out
    a, b = evaluate(e.lhs, env, n), evaluate(e.rhs, env, n)  # type: ignore[attr-defined]
    if isinstance(e, Mul):
        return a * b
    if isinstance(e, FloorDiv):
        return np.floor_divide(a, b)
    if isinstance(e, CeilDiv):
        return -np.floor_divide(-a, b)
    if isinstance(e, Mod):
        return np.mod(a, b)
    if isinstance(e, Min):
        return np.minimum(a, b)
    if isinstance(e, Max):
        return np.maximum(a, b)
    raise TypeError(f"cannot evaluate {type(e).__name__}")


#: int64 arithmetic is exact while every intermediate value stays below this magnitude.
_SAFE = 1 << 62


def _magnitude(e: Expr, bound: dict[Expr, int]) -> int:
    """An upper bound on |value| of `e` and of every subexpression, given |variable| bounds."""
    if isinstance(e, Const):
        return abs(e.value)
    if isinstance(e, Variable):
        return bound[e]
    if isinstance(e, Add):
        return sum(_magnitude(t, bound) for t in e.terms)
    a, b = _magnitude(e.lhs, bound), _magnitude(e.rhs, bound)  # type: ignore[attr-defined]
    if isinstance(e, Mul):
        return a * b
    if isinstance(e, (FloorDiv, CeilDiv)):
        return a + 1  # |floor(a / b)| <= |a| for |b| >= 1, and negation of -a
    return max(a, b)  # mod (in [0, b - 1]), min, max


def relates(m: IndexingMap, dims: Sequence[int], rts: Sequence[int],
            result: Sequence[int]) -> list[int] | bool | None:
    """Whether `m` relates (`dims`, `rts`) to `result`: a list of range-variable values that
    gives it, False when none does (every point of the range box evaluated), None when that
    was not checked (box too large, a value too large for exact int64, a partial expression)."""
    if m.is_undefined or len(dims) != m.num_dims or len(rts) != m.num_rt_vars \
            or len(result) != m.num_results:
        return None
    if m.is_known_empty:
        return False
    nd, nr = m.num_dims, m.num_range_vars
    fixed = [*dims, *rts]
    if not all(x in info.bounds for x, info in zip(fixed, (*m.dims, *m.rt_vars))):
        return False
    exprs = (*m.results, *m.constraints)
    if not all(e.is_total for e in exprs):
        return None
    n = 1
    for info in m.range_vars:
        if info.bounds.is_empty:
            return False
        n *= info.bounds.size
    if n > MEMBERSHIP_POINTS:
        return None
    bound: dict[Expr, int] = {}
    for i, v in enumerate(m.variables):
        b = m.all_vars[i].bounds
        bound[v] = max(abs(b.lo), abs(b.hi))
    if any(abs(x) >= _SAFE for x in result) or \
            any(_magnitude(e, bound) >= _SAFE for e in exprs):
        return None
    axes = [np.arange(v.bounds.lo, v.bounds.hi + 1, dtype=np.int64) for v in m.range_vars]
    grids = [g.ravel() for g in np.meshgrid(*axes, indexing="ij")] if axes else []
    env: dict[Expr, np.ndarray] = {}
    variables = m.variables
    for i, v in enumerate(variables):
        if i < nd:
            env[v] = np.full(n, dims[i], dtype=np.int64)
        elif i < nd + nr:
            env[v] = grids[i - nd]
        else:
            env[v] = np.full(n, rts[i - nd - nr], dtype=np.int64)
    hit = np.ones(n, dtype=bool)
    for e, iv in m.constraints.items():
        value = evaluate(e, env, n)
        hit &= (value >= iv.lo) & (value <= iv.hi)
    for e, want in zip(m.results, result):
        hit &= evaluate(e, env, n) == want
    where = np.flatnonzero(hit)
    if not len(where):
        return False
    i = int(where[0])
    witness = [int(grids[k][i]) for k in range(nr)]
    # one exact evaluation in Python integers confirms the vectorised answer
    syms = [*witness, *rts]
    if m.constraints_satisfied(dims, syms) and tuple(m.evaluate(dims, syms)) == tuple(result):
        return witness
    return None
