"""Variable and sum intervals implied by a map's linear constraints.

A constraint `d0 + d1 in [0, 7]` with `d1 in [-3, -2]` leaves `d0` only the values in [2, 10]
at the points of the domain; with `d0 in [0, 5]`, the simplifier may use [2, 5] for `d0` when it
evaluates a rule's side conditions. That is sound because a map's results only matter at the
points of its domain, and every such point satisfies every constraint: for a constraint
`sum(c_i * v_i) + k in [a, b]`, each term `c_j * v_j` equals the constraint's value minus the
other terms, so it lies in `[a - k - hi(rest), b - k - lo(rest)]` by interval arithmetic, and
`v_j` in that interval divided by `c_j` (rounded inwards, since `v_j` is an integer). The map's
own domain is left as written: only the intervals the rules read get tighter.

The same reasoning ranges a linear sum through a constraint: `d0 + d1 + 2 * d2` is
`(d1 + d2) + (d0 + d2)`, so with `d1 + d2 in [0, 3]` it lies in `[0, 3]` plus the interval of
`d0 + d2`, often tighter than the sum of its terms' intervals (`linear_range`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .canonical import linear_form, order_key
from .expr import Const, Expr, Variable, ceil_div, floor_div
from .interval import Interval, scaled_sum_range

#: Rounds of propagation (each round tightens with the intervals of the previous one).
ROUNDS: Final = 4


#: A constraint `sum(c_i * v_i) in [lo, hi]` over variables (its constant moved to the ends).
LinearConstraint = tuple[dict[Expr, int], int, int]


def linear_constraints(constraints: Mapping[Expr, Interval],
                       bounds: Mapping[Variable, Interval]) -> list[LinearConstraint]:
    """The constraints that are linear sums of variables of `bounds`, in the canonical order
    of their expressions: propagation stops after `ROUNDS`, so the order it visits them in
    must not depend on the order the map lists them in."""
    linear = []
    for e in sorted(constraints, key=order_key):
        iv = constraints[e]
        coeffs, constant = linear_form(e)
        if coeffs and all(isinstance(v, Variable) and v in bounds for v in coeffs):
            linear.append((coeffs, iv.lo - constant, iv.hi - constant))
    return linear


def linear_range(coeffs: dict[Expr, int], constant: int,
                 bounds: Mapping[Variable, Interval], linear: list[LinearConstraint]
                 ) -> Interval | None:
    """An interval of `sum(coeffs[v] * v) + constant` at the points of the domain, through
    each constraint that shares a variable with it: the sum is `t * g + rest` with `g` the
    constraint's sum and `t` the integer that cancels a shared variable, so it lies in `t`
    times the constraint's interval plus the interval of `rest`. The intersection of those
    intervals; None when no constraint applies or a variable has no bounds."""
    out: Interval | None = None
    for g, lo, hi in linear:
        for v, c in coeffs.items():
            d = g.get(v, 0)
            if not d or c % d:
                continue
            t = c // d
            r = _rest_range(coeffs, g, t, bounds)
            if r is None:
                return None
            through = Interval(r.lo + constant + min(lo * t, hi * t),
                               r.hi + constant + max(lo * t, hi * t))
            out = through if out is None else out.intersect(through)
    return out


def _rest_range(coeffs: dict[Expr, int], g: dict[Expr, int], t: int,
                bounds: Mapping[Variable, Interval]) -> Interval | None:
    """`scaled_sum_range` of `coeffs - t * g` (terms whose coefficient cancels left out),
    without building that dict: this runs for every linear term the simplifier bounds."""
    lo = hi = 0
    for w, a in coeffs.items():
        k = a - t * g.get(w, 0)
        if k:
            r = _term_range(w, bounds)
            if r is None:
                return None
            lo, hi = (lo + r.lo * k, hi + r.hi * k) if k > 0 else (lo + r.hi * k, hi + r.lo * k)
    for w, b in g.items():
        if w not in coeffs:
            k = -t * b
            if k:
                r = _term_range(w, bounds)
                if r is None:
                    return None
                lo, hi = (lo + r.lo * k, hi + r.hi * k) if k > 0 else \
                    (lo + r.hi * k, hi + r.lo * k)
    return Interval(lo, hi)


def _term_range(w: Expr, bounds: Mapping[Variable, Interval]) -> Interval | None:
    """The range `scaled_sum_range` gives one base: a constant's value, a variable's bounds;
    None when missing or empty."""
    if isinstance(w, Const):
        return Interval(w.value, w.value)
    r = bounds.get(w) if isinstance(w, Variable) else None
    return None if r is None or r.lo > r.hi else r


def implied_bounds(bounds: Mapping[Variable, Interval], constraints: Mapping[Expr, Interval]
                   ) -> dict[Variable, Interval]:
    """`bounds` intersected with what the linear constraints imply (an empty interval when
    they contradict); the same mapping's content when nothing is implied."""
    linear = linear_constraints(constraints, bounds)
    out = dict(bounds)
    if not linear:
        return out
    for _round in range(ROUNDS):
        changed = False
        for coeffs, lo, hi in linear:
            if any(out[w].lo > out[w].hi for w in coeffs):  # type: ignore[index]
                return out
            for v, c in coeffs.items():
                rest = scaled_sum_range({w: d for w, d in coeffs.items() if w is not v},
                                        out.get)  # type: ignore[arg-type]
                assert rest is not None  # every variable has a non-empty interval here
                # c * v in [lo - rest.hi, hi - rest.lo]
                t_lo, t_hi = lo - rest.hi, hi - rest.lo
                if c > 0:
                    v_lo, v_hi = ceil_div(t_lo, c), floor_div(t_hi, c)
                else:
                    v_lo, v_hi = ceil_div(t_hi, c), floor_div(t_lo, c)
                old = out[v]  # type: ignore[index]
                new = Interval(max(old.lo, v_lo), min(old.hi, v_hi))
                if new != old:
                    out[v] = new  # type: ignore[index]
                    changed = True
                    if new.lo > new.hi:
                        return out
        if not changed:
            break
    return out
