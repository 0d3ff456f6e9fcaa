"""Interval evaluation is sound: every value at a defined point lies in the computed range."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from strategies import expressions, intervals

from verifidx.core.errors import EvaluationError
from verifidx.core.expr import Dim, Symbol, ceildiv, floordiv, mod
from verifidx.core.interval import Interval, range_of

d0, d1, s0 = Dim(0), Dim(1), Symbol(0)


@given(expressions(2, 1, 0, max_leaves=10), intervals(), intervals(), intervals())
def test_range_is_sound(e, a: Interval, b: Interval, c: Interval) -> None:
    bounds = {d0: a, d1: b, s0: c}
    r = range_of(e, bounds)
    for x, y, z in itertools.product(range(a.lo, a.hi + 1), range(b.lo, b.hi + 1),
                                     range(c.lo, c.hi + 1)):
        try:
            v = e.evaluate({d0: x, d1: y, s0: z})
        except EvaluationError:
            continue
        assert r.lo <= v <= r.hi, (str(e), r, (x, y, z), v)


@given(intervals(-20, 20, 15), intervals(-5, 5, 6))
def test_division_by_a_variable_is_sound(a: Interval, b: Interval) -> None:
    for e in (floordiv(d0, d1), mod(d0, d1)):
        r = range_of(e, {d0: a, d1: b})
        for x in range(a.lo, a.hi + 1):
            for y in range(b.lo, b.hi + 1):
                try:
                    v = e.evaluate({d0: x, d1: y})
                except EvaluationError:
                    continue
                assert v in r


@given(intervals(-20, 20, 15), intervals(-5, 5, 6))
def test_division_by_any_constant_is_sound(a: Interval, b: Interval) -> None:
    """Divisors are constants (docs/semantics.md); every nonzero one, negative included."""
    for y in range(b.lo, b.hi + 1):
        if y == 0:
            continue
        for e in (floordiv(d0, y), ceildiv(d0, y), *([mod(d0, y)] if y > 0 else [])):
            r = range_of(e, {d0: a})
            for x in range(a.lo, a.hi + 1):
                assert e.evaluate({d0: x}) in r, (str(e), x, r)


def test_mod_and_div_within_one_period_are_exact() -> None:
    assert range_of(mod(d0, 8), {d0: Interval(10, 13)}) == Interval(2, 5)
    assert range_of(mod(d0, 8), {d0: Interval(6, 9)}) == Interval(0, 7)
    assert range_of(floordiv(d0, 8), {d0: Interval(-9, 17)}) == Interval(-2, 2)
    assert range_of(d0 * d0, {d0: Interval(-3, 2)}) == Interval(0, 9)


def test_empty_intervals_propagate() -> None:
    empty = Interval(1, 0)
    assert range_of(d0 + d1, {d0: empty, d1: Interval(0, 5)}).is_empty
    assert range_of(mod(d0, d1), {d0: Interval(0, 5), d1: Interval(-3, 0)}).is_empty
    assert range_of(mod(d0, 4), {d0: Interval(3, 2)}).is_empty
    assert range_of(floordiv(d0, -2), {d0: Interval(3, 2)}).is_empty


@given(st.integers(-100, 100), st.integers(0, 20))
def test_interval_membership(lo: int, width: int) -> None:
    iv = Interval(lo, lo + width)
    assert lo in iv and lo + width in iv and lo - 1 not in iv and iv.size == width + 1


@given(st.lists(st.integers(-9, 9), min_size=3, max_size=3), st.integers(-20, 20),
       st.sampled_from(["sum", "floordiv", "ceildiv"]), st.integers(-7, 7).filter(bool),
       intervals(), intervals(), intervals())
def test_sums_of_distinct_variables_and_their_quotients_are_exact(
        coeffs: list[int], constant: int, shape: str, divisor: int, a: Interval, b: Interval,
        c: Interval) -> None:
    # each variable once: interval arithmetic reaches both ends, and a quotient by a constant
    # is monotone, so the computed range is the exact one (the simplifier relies on it)
    e = d0 * coeffs[0] + d1 * coeffs[1] + s0 * coeffs[2] + constant
    if shape != "sum":
        e = (floordiv if shape == "floordiv" else ceildiv)(e, divisor)
    values = [e.evaluate({d0: x, d1: y, s0: z})
              for x, y, z in itertools.product(range(a.lo, a.hi + 1), range(b.lo, b.hi + 1),
                                               range(c.lo, c.hi + 1))]
    assert range_of(e, {d0: a, d1: b, s0: c}) == Interval(min(values), max(values))
