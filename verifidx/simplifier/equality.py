"""Map equality, cheapest decision first: structure, enumeration of small domains, isl, Z3.

Layer: with the simplifier (it asks the proven simplifier whether two maps become identical),
above `smt`, whose `equal` stays the solver path.

`equal(f, g)` keeps the contract of `verifidx.solve.smt.equal` (a Verdict whose `holds` is True only
when proven, False with a concrete counterexample, None when undecided) and tries, in order:
1. identical maps, or maps whose results and constraints have the same canonical form;
2. exact enumeration of both relations when every expression is total, both boxes are
   small and neither map has sizes: numpy evaluates each expression over the whole box at
   once, and the two relations, as sets of (runtime values, dimensions, results) rows, are
   compared; a row in one set only is a counterexample;
3. `smt.quick_equal`: a sampled counterexample checked by evaluation, then isl's decision of
   Presburger arithmetic (`presburger`), for boxes of any size;
4. maps that become identical under the proven simplifier (maps isl cannot express);
5. Z3 (`smt.equal`), which also owns the undefined-operation and shape-mismatch answers.
"""

from __future__ import annotations

import time

import numpy as np

from ..core.canonical import canon
from ..core.expr import Expr
from ..core.indexing_map import IndexingMap, merged_constraints
from ..core.syntax import print_point, print_values, variable_names
from ..core.vectorised import evaluate as _evaluate
from ..solve.smt import DEFAULT_TIMEOUT_MS, Verdict, refutation
from ..solve.smt import equal as smt_equal
from ..solve.smt import quick_equal as smt_quick_equal

#: Largest box (points per map) decided by enumeration: range-free maps are compared point by
#: point (cheap); with range variables the relations are projected and compared as sets, which
#: costs more than isl's decision beyond a few hundred points.
ENUMERATION_POINTS = 1 << 16
ENUMERATION_POINTS_WITH_RANGE = 64


def equal(f: IndexingMap, g: IndexingMap, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """Whether `f` and `g` denote the same relation (see the module docstring for the order)."""
    start = time.perf_counter()
    if f.is_undefined or g.is_undefined:
        return smt_equal(f, g, timeout_ms)
    if f == g or _canonical(f) == _canonical(g):
        return Verdict(True, message="structurally identical", seconds=time.perf_counter() - start)
    # sizes are universally quantified: no enumeration (a box of points is one size's)
    verdict = None if f.sizes or g.sizes else _by_enumeration(f, g)
    if verdict is None:
        verdict = smt_quick_equal(f, g, timeout_ms)
    if verdict is None:
        from .engine import default_simplifier  # same layer; loaded only when needed

        simp = default_simplifier()
        if simp.simplify(f) == simp.simplify(g):
            every = "; with sizes, its condition held at every size in range" \
                if f.sizes or g.sizes else ""
            verdict = Verdict(True, message="identical after proven simplification (every "
                                            f"rewrite an instance of a proven rule{every})")
        else:
            return smt_equal(f, g, timeout_ms, quick=False)
    verdict.seconds = time.perf_counter() - start
    return verdict


def _canonical(m: IndexingMap) -> IndexingMap:
    if m.is_known_empty:
        return m
    return m.replace(results=tuple(canon(r) for r in m.results),
                     constraints=merged_constraints((canon(e), iv)
                                                    for e, iv in m.constraints.items()))


# -- enumeration -------------------------------------------------------------------------------


def _enumerable(m: IndexingMap) -> bool:
    if m.is_known_empty:
        return True
    limit = ENUMERATION_POINTS_WITH_RANGE if m.num_range_vars else ENUMERATION_POINTS
    if m.domain_size() > limit:
        return False
    return all(e.is_total for e in (*m.results, *m.constraints))


def _by_enumeration(f: IndexingMap, g: IndexingMap) -> Verdict | None:
    if (f.num_dims, f.num_rt_vars, f.num_results) != (g.num_dims, g.num_rt_vars,
                                                       g.num_results):
        return None
    if not (_enumerable(f) and _enumerable(g)):
        return None
    if _same_domain(f, g):
        return _pointwise(f, g)
    rows_f, rows_g = _rows(f), _rows(g)
    only_f = _difference(rows_f, rows_g)
    if only_f is not None:
        return _counterexample(f, g, only_f, "first")
    only_g = _difference(rows_g, rows_f)
    if only_g is not None:
        return _counterexample(g, f, only_g, "second")
    return Verdict(True, message=f"equal by enumeration ({len(rows_f)} tuples)")


def _same_domain(f: IndexingMap, g: IndexingMap) -> bool:
    """No range variables, the same box and the same constraints: the relations are equal
    exactly when the results agree at every point of the (shared) domain."""
    return (f.num_range_vars == g.num_range_vars == 0 and not f.is_known_empty
            and not g.is_known_empty and f.all_vars == g.all_vars
            and _canonical(f).constraints == _canonical(g).constraints)


def _pointwise(f: IndexingMap, g: IndexingMap) -> Verdict:
    env, n = _box(f)
    keep = _satisfied(f, env, n)
    differ = np.zeros(n, dtype=bool)
    for a, b in zip(f.results, g.results):
        differ |= _evaluate(a, env, n) != _evaluate(b, env, n)
    bad = np.flatnonzero(differ & keep)
    if not len(bad):
        return Verdict(True, message=f"equal by enumeration ({int(keep.sum())} points)")
    i = int(bad[0])
    values = [int(env[v][i]) for v in f.variables]
    nd = f.num_dims
    dims, rts = values[:nd], values[nd:]
    result = f.evaluate(dims, rts)
    names = variable_names(f)
    point = dict(zip((names[v] for v in f.variables), values))
    other = g.evaluate(dims, rts)
    return Verdict(False, point, lhs_value=result, rhs_value=other,
                   message=f"the first map relates {print_point(point)} to "
                           f"{print_values(result)}; the second map does not (gives "
                           f"{print_values(other)})")


def _box(m: IndexingMap) -> tuple[dict[Expr, np.ndarray], int]:
    axes = [np.arange(v.bounds.lo, v.bounds.hi + 1, dtype=np.int64) for v in m.all_vars]
    grids = np.meshgrid(*axes, indexing="ij") if axes else []
    env: dict[Expr, np.ndarray] = {v: grid.ravel() for v, grid in zip(m.variables, grids)}
    return env, grids[0].size if grids else 1


def _satisfied(m: IndexingMap, env: dict[Expr, np.ndarray], n: int) -> np.ndarray:
    keep = np.ones(n, dtype=bool)
    for e, iv in m.constraints.items():
        value = _evaluate(e, env, n)
        keep &= (value >= iv.lo) & (value <= iv.hi)
    return keep


def _rows(m: IndexingMap) -> np.ndarray:
    """The relation as unique rows (runtime values, dimensions, results), range variables
    projected away."""
    width = m.num_rt_vars + m.num_dims + m.num_results
    if m.is_known_empty or any(v.bounds.is_empty for v in m.all_vars):
        return np.zeros((0, width), dtype=np.int64)
    env, n = _box(m)
    keep = _satisfied(m, env, n)
    nd, nr = m.num_dims, m.num_range_vars
    columns = [env[v] for v in m.variables[nd + nr:]] + [env[v] for v in m.variables[:nd]]
    columns += [_evaluate(r, env, n) for r in m.results]
    if not columns:
        return np.zeros((1 if keep.any() else 0, 0), dtype=np.int64)
    table = np.stack(columns, axis=1)[keep]
    return np.unique(table, axis=0)


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """A row of `a` that is not in `b`, or None."""
    if len(a) == 0:
        return None
    if len(b) == 0:
        return a[0]
    if a.shape[1] == 0:
        return None
    joined = np.concatenate([b, a])
    _, first, counts = np.unique(joined, axis=0, return_index=True, return_counts=True)
    lonely = first[(counts == 1) & (first >= len(b))]
    return joined[lonely.min()] if len(lonely) else None


def _counterexample(a: IndexingMap, b: IndexingMap, row: np.ndarray, which: str) -> Verdict:
    nrt, nd = a.num_rt_vars, a.num_dims
    rts, dims = [int(x) for x in row[:nrt]], [int(x) for x in row[nrt:nrt + nd]]
    result = tuple(int(x) for x in row[nrt + nd:])
    syms: list[int] = []
    if a.num_range_vars:  # a witness for the range variables (the box is small)
        syms = next(list(s) for d, s, rt, res in a.points()
                    if list(d) == dims and list(rt) == rts and res == result)
    return refutation(a, b, which, [*dims, *syms, *rts], result)


__all__ = ["ENUMERATION_POINTS", "ENUMERATION_POINTS_WITH_RANGE", "equal"]
