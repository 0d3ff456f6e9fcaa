"""Canonical sums: the shortcut for sums already in canonical form never changes the result."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from strategies import expressions

from verifidx.core import canonical
from verifidx.core.canonical import (
    _already_canonical,
    canon,
    canonical_product,
    canonical_sum,
    from_linear,
    linear_form,
)
from verifidx.core.expr import Add, Const, Dim, Expr, Mul, Symbol, add, mul

d0, d1, s0 = Dim(0), Dim(1), Symbol(0)


def _rebuilt(e: Expr) -> Expr:
    coeffs, constant = linear_form(e)
    return from_linear(coeffs, constant)


@given(st.lists(st.one_of(expressions(max_leaves=5).map(canon), st.integers(-3, 3).map(Const),
                          st.tuples(expressions(max_leaves=3).map(canon),
                                    st.integers(-3, 3)).map(lambda t: Mul(t[0], Const(t[1])))),
                min_size=2, max_size=5))
def test_a_sum_taken_as_canonical_is_its_own_canonical_form(terms: list[Expr]) -> None:
    # any order, repeated bases, zero or unit coefficients, several constants: the shortcut
    # must say yes only where rebuilding the sum from its linear form gives the same node
    node = Add(terms)
    if _already_canonical(node):
        assert _rebuilt(node) is node
    for t in terms:
        if isinstance(t, Mul) and _already_canonical(t):
            assert _rebuilt(t) is t


@given(expressions(max_leaves=10))
def test_canon_is_idempotent_and_keeps_values(e: Expr) -> None:
    c = canon(e)
    assert canon(c) is c
    for x, y, z in itertools.product(range(-2, 3), range(0, 3), range(-1, 2)):
        env = {d0: x, d1: y, s0: z}
        assert c.evaluate(env) == e.evaluate(env)


@given(st.lists(st.one_of(expressions(max_leaves=5), st.integers(-3, 3).map(Const)),
                min_size=1, max_size=5))
def test_a_sum_built_canonical_is_what_canon_makes_of_it(terms: list[Expr]) -> None:
    """`canonical_sum` records its result as canonical: canon, with that record forgotten,
    must give the same node for it and for the sum as written."""
    out = canonical_sum(terms)
    canonical._CANON.clear()
    assert canon(out) is out
    assert canon(add(*terms)) is out


@given(st.one_of(expressions(max_leaves=4), st.integers(-3, 3).map(Const)),
       st.one_of(expressions(max_leaves=4), st.integers(-3, 3).map(Const)), st.booleans())
def test_a_product_built_canonical_is_what_canon_makes_of_it(a: Expr, b: Expr,
                                                           canonical_factors: bool) -> None:
    """`canonical_product` records its result as canonical, from canonical factors or not."""
    if canonical_factors:
        a, b = canon(a), canon(b)
    out = canonical_product(a, b)
    canonical._CANON.clear()
    assert canon(out) is out
    assert canon(mul(a, b)) is out


def test_the_shortcut_takes_canonical_sums_and_refuses_the_others() -> None:
    assert _already_canonical(canon(d0 * 3 + d1 - 4))
    assert not _already_canonical(Add((d1, d0)))  # out of order
    assert not _already_canonical(Add((Const(2), d0)))  # constant first
    assert not _already_canonical(Add((Mul(d0, Const(2)), Mul(d0, Const(3)))))  # like terms
    assert _rebuilt(Add((Mul(d0, Const(2)), Mul(d0, Const(3))))) is Mul(d0, Const(5))
    assert not _already_canonical(Mul(d0, Const(1)))


def test_linear_form_is_remembered_but_each_caller_owns_its_dict() -> None:
    """`linear_form` caches per term; a caller that edits the dict it got (the matcher adds
    the constant under `Const(1)`) must not change what the next caller gets."""
    e = canon(Dim(0) * 3 + Dim(1) * -2 + 7)
    first, constant = linear_form(e)
    first[Const(1)] = constant
    first[Dim(0)] = 99
    assert linear_form(e) == ({Dim(0): 3, Dim(1): -2}, 7)
