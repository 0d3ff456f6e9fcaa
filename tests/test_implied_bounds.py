"""Variable intervals implied by linear constraints hold at every point of the domain, and the
simplifier's use of them for the results keeps every map's relation.

Oracle: brute-force enumeration of the box, each constraint evaluated at each point."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from strategies import intervals, quasi_affine

from verifidx.core import implied_bounds as ib
from verifidx.core.expr import Const, Dim, Expr, Symbol, Variable
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval
from verifidx.core.syntax import parse_map
from verifidx.simplifier.engine import simplify

VARS: list[Variable] = [Dim(0), Dim(1), Symbol(0)]


@st.composite
def linear_constraints(draw: st.DrawFn) -> tuple[Expr, Interval]:
    coeffs = draw(st.lists(st.integers(-4, 4), min_size=3, max_size=3))
    e: Expr = Const(draw(st.integers(-5, 5)))
    for v, c in zip(VARS, coeffs):
        e = e + v * c
    return e, draw(intervals(-12, 12, 14))


def _domain(bounds: dict[Variable, Interval], constraints: list[tuple[Expr, Interval]]
            ) -> list[dict[Expr, int]]:
    points = []
    for values in itertools.product(*(range(bounds[v].lo, bounds[v].hi + 1) for v in VARS)):
        env: dict[Expr, int] = dict(zip(VARS, values))
        if all(iv.lo <= e.evaluate(env) <= iv.hi for e, iv in constraints):
            points.append(env)
    return points


@given(st.lists(intervals(-4, 6, 7), min_size=3, max_size=3),
       st.lists(linear_constraints(), min_size=1, max_size=3))
def test_every_domain_point_lies_within_the_implied_bounds(
        ivs: list[Interval], constraints: list[tuple[Expr, Interval]]) -> None:
    bounds = dict(zip(VARS, ivs))
    implied = ib.implied_bounds(bounds, dict(constraints))
    for v in VARS:
        assert bounds[v].lo <= implied[v].lo or implied[v].lo > implied[v].hi
        assert implied[v].hi <= bounds[v].hi or implied[v].lo > implied[v].hi
    for env in _domain(bounds, constraints):
        for v in VARS:
            assert implied[v].lo <= env[v] <= implied[v].hi


@given(st.lists(intervals(-4, 6, 7), min_size=3, max_size=3),
       st.lists(linear_constraints(), min_size=1, max_size=3),
       st.lists(st.integers(-6, 6), min_size=3, max_size=3), st.integers(-9, 9))
def test_a_sum_ranged_through_the_constraints_holds_at_every_domain_point(
        ivs: list[Interval], constraints: list[tuple[Expr, Interval]], coeffs: list[int],
        constant: int) -> None:
    bounds = dict(zip(VARS, ivs))
    linear = ib.linear_constraints(dict(constraints), bounds)
    terms = {v: c for v, c in zip(VARS, coeffs) if c}
    through = ib.linear_range(terms, constant, bounds, linear)
    if through is None:
        return
    for env in _domain(bounds, constraints):
        value = sum(c * env[v] for v, c in terms.items()) + constant
        assert through.lo <= value <= through.hi


def test_a_sum_constraint_ranges_a_sum_that_contains_it() -> None:
    """d0 + d1 + 2 * d2 + d3 + 12 is (d1 + d2) + (d0 + d2 + d3 + 12): [12, 23], where the
    terms' intervals alone give [12, 26] (d1 <= 3 implied), and with it one bucket of 26."""
    bounds: dict[Variable, Interval] = {Dim(0): Interval(0, 3), Dim(1): Interval(0, 3),
                                        Dim(2): Interval(0, 3), Dim(3): Interval(0, 2)}
    linear = ib.linear_constraints({Dim(1) + Dim(2): Interval(0, 3)}, bounds)
    terms = {Dim(0): 1, Dim(1): 1, Dim(2): 2, Dim(3): 1}
    assert ib.linear_range(terms, 12, bounds, linear) == Interval(12, 23)
    m = parse_map("(d0, d1, d2, d3) -> ((d0 * -77 + d1 * 53 + d2 * -50 + d3 * 27 + 38) "
                  "floordiv 26), domain: d0 in [0, 3], d1 in [0, 5], d2 in [0, 3], "
                  "d3 in [0, 2], d2 + d1 in [0, 3]")
    out = simplify(m)
    assert "floordiv" not in str(out.results[0])
    assert out.relation() == m.relation()


@given(st.lists(intervals(-4, 6, 7), min_size=3, max_size=3),
       st.lists(linear_constraints(), min_size=2, max_size=4), st.randoms())
def test_the_implied_bounds_do_not_depend_on_the_order_of_the_constraints(
        ivs: list[Interval], constraints: list[tuple[Expr, Interval]], rnd: object) -> None:
    bounds = dict(zip(VARS, ivs))
    constraints = list(dict(constraints).items())  # one interval per expression, as in a map
    shuffled = list(constraints)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert ib.implied_bounds(bounds, dict(constraints)) == \
        ib.implied_bounds(bounds, dict(shuffled))


def test_a_sum_constraint_bounds_its_variables() -> None:
    bounds: dict[Variable, Interval] = {Dim(0): Interval(0, 5), Dim(1): Interval(-3, -2)}
    implied = ib.implied_bounds(bounds, {Dim(0) + Dim(1): Interval(0, 7)})
    assert implied[Dim(0)] == Interval(2, 5)
    assert implied[Dim(1)] == Interval(-3, -2)


def test_the_results_see_the_implied_bounds_the_domain_stays() -> None:
    """isl removes this division; the remainder fits one bucket only with d0 >= 2."""
    m = parse_map("(d0, d1) -> ((d0 * 103 + d1 * -53 - 107) floordiv 51), "
                  "domain: d0 in [0, 5], d1 in [-3, -2], d0 + d1 in [0, 7]")
    out = simplify(m)
    assert str(out.results[0]) == "d0 * 2 - d1 - 2"
    assert out.dims == m.dims and out.constraints == m.constraints
    assert out.relation() == m.relation()


@given(quasi_affine(), st.lists(intervals(-4, 6, 7), min_size=3, max_size=3),
       st.lists(linear_constraints(), min_size=1, max_size=2))
def test_simplifying_under_linear_constraints_keeps_the_relation(
        e: Expr, ivs: list[Interval], constraints: list[tuple[Expr, Interval]]) -> None:
    m = IndexingMap.build([e], [Var(ivs[0]), Var(ivs[1])], [Var(ivs[2])], [], constraints)
    assert simplify(m).relation() == m.relation()
