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
    [0, b - 1]) over `n` points; only called on total expressions, so no divisor is 0 or a bad
    modulus."""
    out = _broadcast_eval(e, env)
    return out if out.shape == (n,) else np.broadcast_to(out, (n,))


def _broadcast_eval(e: Expr, env: dict[Expr, np.ndarray]) -> np.ndarray:
    """`evaluate` with numpy broadcasting: constants stay scalars, and variables may be arrays
    of any shapes that broadcast together (a column of points against a row of range values)."""
    if isinstance(e, Const):
        return np.int64(e.value)  # type: ignore[return-value]
    if isinstance(e, Variable):
        return env[e]
    if isinstance(e, Add):
        out = _broadcast_eval(e.terms[0], env)
        for t in e.terms[1:]:
            out = out + _broadcast_eval(t, env)
        return out
    a = _broadcast_eval(e.lhs, env)  # type: ignore[attr-defined]
    b = _broadcast_eval(e.rhs, env)  # type: ignore[attr-defined]
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


#: Fractions of each variable's interval behind every sample: a row of 0 (the lower corner), a
#: row of 1 (the upper corner, clamped to the upper end), then seeded uniform draws in [0, 1)
#: (seeded once: the same points on every run).
_DRAWS: list[np.ndarray] = []


def sample(m: IndexingMap, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`count` points of m's box, one row of all m's variables each: every variable at its
    lower end, at its upper end, then seeded uniform points; with the mask of the rows in m's
    domain and m's results at each row (one column per result). None when int64 is not
    exact for m over its box, or an expression is partial."""
    boxes = [info.bounds for info in m.all_vars]
    if m.is_undefined or m.is_known_empty or any(iv.is_empty for iv in boxes) or \
            not exact_over_box(m):
        return None
    if not _DRAWS or _DRAWS[0].shape[0] < count or _DRAWS[0].shape[1] < len(boxes):
        draws = np.random.default_rng(0).random((max(count, 512), max(len(boxes), 8)))
        draws[0], draws[1] = 0.0, 1.0
        _DRAWS[:] = [draws]
    lo = np.array([iv.lo for iv in boxes], dtype=np.int64)
    hi = np.array([iv.hi for iv in boxes], dtype=np.int64)
    # |lo|, |hi| < 2^62 (`exact_over_box`): the float stays in int64 before the clamp
    points = np.minimum(lo + (_DRAWS[0][:count, :len(boxes)] * (hi - lo + 1.0)).astype(np.int64),
                        hi)
    env: dict[Expr, np.ndarray] = {v: points[:, i] for i, v in enumerate(m.variables)}
    n = len(points)
    keep = np.ones(n, dtype=bool)
    for e, iv in m.constraints.items():
        value = evaluate(e, env, n)
        keep &= (value >= iv.lo) & (value <= iv.hi)
    results = np.empty((n, m.num_results), dtype=np.int64)
    for j, r in enumerate(m.results):
        results[:, j] = evaluate(r, env, n)
    return points, keep, results


def unrelated(m: IndexingMap, dims: np.ndarray, rts: np.ndarray, results: np.ndarray
              ) -> np.ndarray | None:
    """For a map without range variables: the mask of rows (dims, rts, results) that m does
    not relate (outside its box or domain, or other results); None when that is not exact.
    A row outside m's box is in the mask whatever int64 makes of it, so exactness over the
    box is enough."""
    n = len(results)
    if m.num_range_vars or m.is_undefined:
        return None
    if m.is_known_empty:
        return np.ones(n, dtype=bool)
    if not exact_over_box(m):
        return None
    columns = [*dims.T, *rts.T]
    env: dict[Expr, np.ndarray] = dict(zip(m.variables, columns))
    inside = np.ones(n, dtype=bool)
    for c, info in zip(columns, m.all_vars):
        inside &= (c >= info.bounds.lo) & (c <= info.bounds.hi)
    for e, iv in m.constraints.items():
        value = evaluate(e, env, n)
        inside &= (value >= iv.lo) & (value <= iv.hi)
    for j, e in enumerate(m.results):
        inside &= evaluate(e, env, n) == results[:, j]
    return ~inside


def exact_over_box(m: IndexingMap) -> bool:
    """Every expression of m is total and its int64 evaluation exact over m's whole box."""
    exprs = (*m.results, *m.constraints)
    if not all(e.is_total for e in exprs):
        return False
    bound: dict[Expr, int] = {v: max(abs(info.bounds.lo), abs(info.bounds.hi))
                              for v, info in zip(m.variables, m.all_vars)}
    return all(x < _SAFE for x in bound.values()) and \
        all(_magnitude(e, bound) < _SAFE for e in exprs)


def relates(m: IndexingMap, dims: Sequence[int], rts: Sequence[int],
            result: Sequence[int]) -> list[int] | bool | None:
    """Whether `m` relates (`dims`, `rts`) to `result`: a list of range-variable values that
    gives it, False when none does (every point of the range box evaluated), None when that
    was not checked (box too large, a value too large for exact int64, a partial expression)."""
    return relates_many(m, [(dims, rts, result)])[0]


Tuple = tuple[Sequence[int], Sequence[int], Sequence[int]]


def relates_many(m: IndexingMap, tuples: Sequence[Tuple], witness: bool = True
                 ) -> list[list[int] | bool | None]:
    """`relates` for several (dims, rts, result) tuples, in one vectorised pass over the range
    box (maps without range variables are evaluated directly). With `witness=False` a related
    tuple answers True instead of range values confirmed in Python integers (for callers that
    act only on False)."""
    answers: list[list[int] | bool | None] = [None] * len(tuples)
    if m.is_undefined:
        return answers
    exprs = (*m.results, *m.constraints)
    if not all(e.is_total for e in exprs):
        return answers
    nd, nr = m.num_dims, m.num_range_vars
    todo: list[int] = []
    for k, (dims, rts, result) in enumerate(tuples):
        if len(dims) != nd or len(rts) != m.num_rt_vars or len(result) != m.num_results:
            continue
        if m.is_known_empty or not all(
                x in info.bounds for x, info in zip([*dims, *rts], (*m.dims, *m.rt_vars))):
            answers[k] = False
        elif nr == 0:  # exact Python integers, no box
            answers[k] = [] if m.constraints_satisfied(dims, rts) and \
                tuple(m.evaluate(dims, rts)) == tuple(result) else False
        else:
            todo.append(k)
    if not todo:
        return answers
    n = 1
    for info in m.range_vars:
        if info.bounds.is_empty:
            for k in todo:
                answers[k] = False
            return answers
        n *= info.bounds.size
    p = len(todo)
    if n * p > MEMBERSHIP_POINTS:
        return answers
    bound: dict[Expr, int] = {}
    for i, v in enumerate(m.variables):
        b = m.all_vars[i].bounds
        bound[v] = max(abs(b.lo), abs(b.hi))
    if any(abs(x) >= _SAFE for k in todo for x in tuples[k][2]) or \
            any(_magnitude(e, bound) >= _SAFE for e in exprs):
        return answers
    axes = [np.arange(v.bounds.lo, v.bounds.hi + 1, dtype=np.int64) for v in m.range_vars]
    grids = axes if nr == 1 else [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]
    # points down the first axis, range values along the second: (p, 1) against (1, n)
    env: dict[Expr, np.ndarray] = {}
    for i, v in enumerate(m.variables):
        if nd <= i < nd + nr:
            env[v] = grids[i - nd][None, :]
        else:
            column = [tuples[k][0][i] if i < nd else tuples[k][1][i - nd - nr] for k in todo]
            env[v] = np.array(column, dtype=np.int64)[:, None]
    hit = np.ones((p, n), dtype=bool)
    for e, iv in m.constraints.items():
        value = _broadcast_eval(e, env)
        hit &= (value >= iv.lo) & (value <= iv.hi)
    for j, e in enumerate(m.results):
        want = np.array([tuples[k][2][j] for k in todo], dtype=np.int64)[:, None]
        hit &= _broadcast_eval(e, env) == want
    first = hit.argmax(axis=1)  # the first hit of each row (0 in a row without one)
    for row, k in enumerate(todo):
        i = int(first[row])
        if not hit[row, i]:
            answers[k] = False
            continue
        if not witness:
            answers[k] = True
            continue
        values = [int(grids[r][i]) for r in range(nr)]
        # one exact evaluation in Python integers confirms the vectorised answer
        dims, rts, result = tuples[k]
        syms = [*values, *rts]
        if m.constraints_satisfied(dims, syms) and tuple(m.evaluate(dims, syms)) == \
                tuple(result):
            answers[k] = values
    return answers
