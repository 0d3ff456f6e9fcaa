"""Expressions: interning, exact integer semantics, and the few laws the constructors fold."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import expressions

from verifidx.core.errors import DepthError, DivisorError, EvaluationError
from verifidx.core.expr import (
    Add,
    CeilDiv,
    Const,
    Dim,
    Expr,
    FloorDiv,
    Mod,
    Mul,
    Symbol,
    add,
    add_fold,
    add_node,
    ceildiv,
    const_node,
    floordiv,
    maximum,
    minimum,
    mod,
    mul,
    mul_node,
)

d0, d1, s0 = Dim(0), Dim(1), Symbol(0)


def test_interning_makes_equal_expressions_identical() -> None:
    assert (d0 + 2 * d1) is (d0 + d1 * 2)
    assert floordiv(d0, 8) is floordiv(Dim(0), Const(8))
    assert hash(mod(d0, 3)) == hash(mod(d0, 3))


@given(st.integers(-10**30, 10**30), expressions(2, 1, 1, max_leaves=4),
       st.integers(1, 9).map(Const), st.lists(expressions(2, 1, 1, max_leaves=3),
                                                     min_size=2, max_size=4))
def test_the_interned_node_helpers_give_the_node_the_class_gives(
        value: int, a: Expr, b: Expr, terms: list[Expr]) -> None:
    """`const_node`, `mul_node` and `add_node` find a node in the intern table by hand: the
    same node as the class call, whether built before or not (the other operations' nodes,
    under other keys, are never found instead)."""
    for first in (True, False):  # the helper builds the node, or the class does
        c = const_node(value) if first else Const(value)
        assert c is (Const(value) if first else const_node(value))
        assert type(c) is Const and c.value == value
    # the other operations' nodes over the same operands exist first
    others = [op(a, b) for op in (FloorDiv, Mod, CeilDiv)] + [Add([a, b])]
    assert mul_node(a, b) is Mul(a, b) and type(mul_node(a, b)) is Mul
    assert mul_node(b, a) is Mul(b, a) and all(mul_node(a, b) is not o for o in others)
    assert add_node(terms) is Add(terms) and add_node(tuple(terms)) is Add(terms)
    assert type(add_node(terms)) is Add and list(add_node(terms).children) == terms


def test_pickle_keeps_interning() -> None:
    e = floordiv(d0 * 4 + s0, 3)
    assert pickle.loads(pickle.dumps(e)) is e


def test_floor_semantics_on_negative_values() -> None:
    e, m, c = floordiv(d0, 4), mod(d0, 4), ceildiv(d0, 4)
    assert [e.evaluate({d0: v}) for v in (-5, -4, -1, 0, 3, 4)] == [-2, -1, -1, 0, 0, 1]
    assert [m.evaluate({d0: v}) for v in (-5, -4, -1, 0, 3, 4)] == [3, 0, 3, 0, 3, 0]
    assert [c.evaluate({d0: v}) for v in (-5, -4, -1, 0, 3, 4)] == [-1, -1, 0, 0, 1, 1]
    assert floordiv(d0, -4).evaluate({d0: 5}) == -2
    assert floordiv(d0, -4).evaluate({d0: -5}) == 1


def test_undefined_operations_raise() -> None:
    with pytest.raises(EvaluationError):
        floordiv(d0, 0)
    with pytest.raises(EvaluationError):
        mod(d0, -2)
    with pytest.raises(EvaluationError):
        mod(d0, s0).evaluate({d0: 3, s0: 0})
    with pytest.raises(EvaluationError):
        floordiv(d0, s0).evaluate({d0: 3, s0: 0})
    with pytest.raises(EvaluationError):
        d0.evaluate({})


def test_constructors_fold_only_the_stated_laws() -> None:
    assert add(d0, 0) is d0
    assert add(1, d0, 2).terms == (Const(3), d0)  # type: ignore[attr-defined]
    assert mul(3, d0) is mul(d0, 3)
    assert mul(mul(d0, 3), -2) is mul(d0, -6)
    assert mul(d0, 1) is d0 and mul(d0, 0) is Const(0)
    assert mul(floordiv(d0, s0), 0) is not Const(0)  # not total: keeps the division
    assert mul(floordiv(d0, 4), 0) is Const(0)  # a constant divisor: the term is total
    assert floordiv(d0, 1) is d0 and mod(d0, 1) is Const(0)
    assert isinstance(add(add(d0, d1), s0), Add) and len(add(add(d0, d1), s0).terms) == 3  # type: ignore[attr-defined]
    assert isinstance(d0 * s0, Mul)
    assert (d0 - d0) is not Const(0)  # like terms are the simplifier's job, not the constructor's


# An independent reference: a tiny tree language evaluated directly in Python.
_LEAF = st.one_of(st.integers(-30, 30).map(lambda c: ("c", c)), st.sampled_from([("d0",), ("d1",)]))


def _tree(children: st.SearchStrategy[tuple]) -> st.SearchStrategy[tuple]:
    return st.one_of(
        st.tuples(st.just("+"), children, children),
        st.tuples(st.just("-"), children, children),
        st.tuples(st.just("*c"), children, st.integers(-7, 7)),
        st.tuples(st.just("//"), children, st.integers(-7, 7).filter(bool)),
        st.tuples(st.just("cdiv"), children, st.integers(-7, 7).filter(bool)),
        st.tuples(st.just("%"), children, st.integers(1, 7)),
        st.tuples(st.just("min"), children, children),
        st.tuples(st.just("max"), children, children),
        st.tuples(st.just("neg"), children),
    )


TREES = st.recursive(_LEAF, _tree, max_leaves=10)


def build(t: tuple):
    op = t[0]
    if op == "c":
        return Const(t[1])
    if op in ("d0", "d1"):
        return Dim(int(op[1]))
    a = build(t[1])
    if op == "neg":
        return -a
    if op == "+":
        return a + build(t[2])
    if op == "-":
        return a - build(t[2])
    if op == "*c":
        return a * t[2]
    if op == "//":
        return a // t[2]
    if op == "cdiv":
        return ceildiv(a, t[2])
    if op == "%":
        return a % t[2]
    return (minimum if op == "min" else maximum)(a, build(t[2]))


def reference(t: tuple, x: int, y: int) -> int:
    op = t[0]
    if op == "c":
        return t[1]
    if op == "d0":
        return x
    if op == "d1":
        return y
    a = reference(t[1], x, y)
    if op == "neg":
        return -a
    if op in ("+", "-", "min", "max"):
        b = reference(t[2], x, y)
        return {"+": a + b, "-": a - b, "min": min(a, b), "max": max(a, b)}[op]
    c = t[2]
    if op == "*c":
        return a * c
    if op == "//":
        return a // c  # Python's // is floor division
    if op == "cdiv":
        return -((-a) // c)
    return a % c  # Python's % takes the divisor's sign; here c > 0


@given(TREES, st.integers(-50, 50), st.integers(-50, 50))
def test_evaluation_matches_python_integers(tree: tuple, x: int, y: int) -> None:
    assert build(tree).evaluate({d0: x, d1: y}) == reference(tree, x, y)


@pytest.mark.parametrize("build", [
    lambda: mod(d0, 0), lambda: mod(d0, -3), lambda: floordiv(d0, 0), lambda: ceildiv(d0, 0),
    lambda: Mod(d0, Const(-3)), lambda: CeilDiv(d0, Const(0)), lambda: FloorDiv(d0, Const(0)),
    lambda: d0 % 0, lambda: Mod(d0, Add([Const(1), Const(-3)])),
])
def test_a_constant_divisor_must_be_valid(build) -> None:
    """Issue 10, item 3: every constructor rejects an invalid constant divisor (raw classes
    too)."""
    with pytest.raises(DivisorError, match="divisor of"):
        build()


@pytest.mark.parametrize("build", [
    lambda: floordiv(d0, s0), lambda: ceildiv(d0, d1), lambda: mod(d0, d0), lambda: d0 % s0,
    lambda: FloorDiv(d0, d1), lambda: FloorDiv(d0, add(d1, 1)),
])
def test_maps_divide_by_constants_only(build) -> None:
    """A variable divisor is an expression (XLA's tile constraints have them), never part of a
    map: with constant divisors every term of a map is defined everywhere, so no law or rule
    can erase an undefined point."""
    from verifidx.core.indexing_map import IndexingMap

    e = build()
    with pytest.raises(DivisorError, match="must be an integer constant"):
        IndexingMap.build([e], [(0, 3), (1, 3)], [(1, 3)])
    with pytest.raises(DivisorError, match="must be an integer constant"):
        IndexingMap.build([d0], [(0, 3), (1, 3)], [(1, 3)], constraints=[(e, (0, 1))])


def test_negative_floor_divisors_are_fine() -> None:
    assert floordiv(d0, -3).evaluate({d0: 7}) == -3 and ceildiv(d0, -3).evaluate({d0: 7}) == -2


# raw sums (built without folding) carry zeros and several constants: `add` merges them
_RAW_SUMS = st.sampled_from([Add([d0, Const(0)]), Add([Const(2), d1, Const(-2)]),
                             Add([Const(0), Const(0)]), Add([d0, Const(3)]), Add([Const(-1), s0])])
_FOLD_TERMS = st.lists(
    st.one_of(st.integers(-3, 3).map(Const), expressions(max_leaves=4), st.just(Const(0)),
              _RAW_SUMS),
    min_size=1, max_size=6)


def _literal_fold(terms: list[Expr]) -> Expr:
    total = terms[0]
    for t in terms[1:]:
        total = add(total, t)
    return total


@given(_FOLD_TERMS)
def test_add_fold_is_the_term_by_term_sum(terms: list[Expr]) -> None:
    assert add_fold(terms[0], terms[1:]) is _literal_fold(terms)


@given(_FOLD_TERMS, st.sets(st.sampled_from(["add_assoc", "fold_add", "add_comm", "add_zero"])))
def test_add_fold_is_the_term_by_term_sum_whichever_laws_hold(terms: list[Expr],
                                                              off: set[str]) -> None:
    from verifidx.core import laws

    before = laws.ON.enabled()
    laws.set_enabled(before - off)
    try:
        assert add_fold(terms[0], terms[1:]) is _literal_fold(terms)
    finally:
        laws.set_enabled(before)


def _deep(depth: int) -> Expr:
    e: Expr = d0
    while e.depth < depth:
        e = floordiv(e, 2)
    return e


def _outcome(build):  # type: ignore[no-untyped-def]
    try:
        return build()
    except DepthError as err:
        return ("DepthError", err.depth)


@given(st.lists(st.one_of(st.sampled_from([_deep(62), _deep(63), _deep(64), d1]),
                          st.integers(-2, 2).map(Const)), min_size=1, max_size=5))
def test_add_fold_raises_where_the_term_by_term_sum_raises(terms: list[Expr]) -> None:
    # a partial sum deeper than MAX_DEPTH raises, even where a later term would cancel it
    assert _outcome(lambda: add_fold(terms[0], terms[1:])) == _outcome(lambda: _literal_fold(terms))


def test_add_fold_keeps_the_order_a_parser_gives() -> None:
    three = Const(3)
    assert add_fold(three, [Const(-3), d1, Const(2)]) is add(d1, 2)
    assert add(3, -3, d1, 2) is add(Const(2), d1)  # not a fold: the constant stays in front


@pytest.mark.parametrize("lhs, rhs", [(5, d0), (d0, 5), ([1], d0), (d0, None), (True, d0)])
def test_binary_nodes_take_expressions_only(lhs: object, rhs: object) -> None:
    for node in (Mul, FloorDiv, Mod, CeilDiv):
        with pytest.raises(TypeError, match="operands must be expressions"):
            node(lhs, rhs)  # type: ignore[arg-type]


def test_negation_and_divisions_fold_as_before() -> None:
    from verifidx.core.expr import neg

    assert neg(Const(4)) is Const(-4) and neg(4) is Const(-4) and neg(mul(d0, -3)) is mul(d0, 3)
    assert neg(d0) is Mul(d0, Const(-1))
    for divide in (floordiv, ceildiv, mod):
        with pytest.raises(DivisorError):
            divide(d0, 0)
    with pytest.raises(DivisorError):
        mod(d0, -2)
    assert floordiv(7, -2) is Const(-4) and ceildiv(7, -2) is Const(-3) and mod(-7, 3) is Const(2)
    assert floordiv(d0, 1) is d0 and ceildiv(d0, 1) is d0 and mod(d0, 1) is Const(0)
