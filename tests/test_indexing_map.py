"""IndexingMap operations keep (or change as documented) the relation, checked by enumeration."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import expressions, maps

from verifidx import IndexingMap, compose, parse_map
from verifidx.core.expr import Const, Dim, Symbol
from verifidx.core.interval import Interval


@st.composite
def composable(draw: st.DrawFn) -> tuple[IndexingMap, IndexingMap]:
    first = draw(maps(max_results=2))
    second = draw(maps(num_dims=first.num_results))
    return first, second


@given(composable())
def test_compose_is_relation_composition(pair) -> None:
    first, second = pair
    assume(first.domain_size() * max(1, second.domain_size()) <= 50_000)
    got = compose(first, second)
    r1, r2 = first.relation(), second.relation()
    expected = {(rt2 + rt1, d, res) for rt1, d, mid in r1 for rt2, e, res in r2 if e == mid}
    assert got.relation() == expected


@given(maps(max_syms=3, max_rts=0, max_constraints=3))
def test_remove_unused_symbols_keeps_the_relation(m) -> None:
    assert m.remove_unused_symbols().relation() == m.relation()


@given(maps(max_syms=2, max_rts=0, max_constraints=3), st.integers(1, 4), st.integers(0, 3))
def test_rescale_symbols_keeps_the_relation(m, c, k) -> None:
    assume(m.num_range_vars > 0)
    m = m.add_constraint(Symbol(0) % c, (k, k))
    assert m.rescale_symbols().relation() == m.relation()


@given(maps(max_syms=2, max_rts=1))
def test_convert_symbols_to_dimensions_exposes_them(m) -> None:
    out = m.convert_symbols_to_dimensions()
    assert out.num_dims == m.num_dims + m.num_range_vars + m.num_rt_vars
    expected = {(d + s + rt, r) for d, s, rt, r in m.points()}
    assert {(d, r) for d, _s, _rt, r in out.points()} == expected


def test_xla_composition_orders_symbols_second_first() -> None:
    consumer = parse_map("(d0)[s0] -> (d0, s0), domain: d0 in [0, 9], s0 in [0, 7], "
                         "d0 + s0 in [0, 20], s0 mod 4 in [0, 0]")
    producer = parse_map("(d0, d1)[s0, s1] -> (d1, d0, s1, s0), domain: d0 in [0, 49], "
                         "d1 in [0, 59], s0 in [0, 69], s1 in [0, 19], d0 mod 8 in [0, 0], "
                         "s0 mod 3 in [1, 1]")
    assert str(compose(consumer, producer)) == (
        "(d0)[s0, s1, s2] -> (s2, d0, s1, s0), domain: d0 in [0, 9], s0 in [0, 69], "
        "s1 in [0, 19], s2 in [0, 7], d0 + s2 in [0, 20], d0 mod 8 in [0, 0], "
        "s0 mod 3 in [1, 1], s2 mod 4 in [0, 0]")


def test_remove_unused_never_drops_an_unsatisfiable_constraint() -> None:
    m = parse_map("(d0)[s0] -> (d0), domain: d0 in [0, 3], s0 in [0, 9], s0 mod 16 in [12, 13]")
    out = m.remove_unused_symbols()
    assert out.num_range_vars == 1  # dropping s0 would make an empty map non-empty
    assert out.relation() == m.relation() == set()
    ok = parse_map("(d0)[s0] -> (d0), domain: d0 in [0, 3], s0 in [0, 9], s0 mod 3 in [0, 0]")
    assert ok.remove_unused_symbols().num_range_vars == 0


def test_remove_unused_vars_reports_flags() -> None:
    m = parse_map("(d0, d1, d2, d3, d4)[s0, s1, s2] -> (s0 * 4 + d1 + d3 - 42), domain: "
                  "d0 in [0, 0], d1 in [0, 1], d2 in [0, 2], d3 in [0, 3], d4 in [0, 4], "
                  "s0 in [0, 31], s1 in [0, 63], s2 in [0, 95], s0 * 4 + d1 + d3 in [24, 459], "
                  "s0 + s2 in [0, 512]")
    out, flags = m.remove_unused_vars()
    assert flags == [True, False, True, False, True, False, True, False]
    assert str(out) == ("(d0, d1)[s0, s1] -> (s0 * 4 + d0 + d1 - 42), domain: d0 in [0, 1], "
                        "d1 in [0, 3], s0 in [0, 31], s1 in [0, 95], s0 * 4 + d0 + d1 in "
                        "[24, 459], s0 + s1 in [0, 512]")


def test_constraint_on_a_variable_tightens_its_bounds() -> None:
    m = IndexingMap.identity([10]).add_constraint(Dim(0), Interval(3, 20))
    assert str(m) == "(d0) -> (d0), domain: d0 in [3, 9]"
    assert m.add_constraint(Dim(0) * 0 + 5, (0, 4)).is_known_empty


def test_evaluate_ignores_the_domain() -> None:
    m = parse_map("(d0, d1)[s0, s1] -> (d1, d0, s1, s0), domain: d0 in [0, 3], d1 in [0, 3], "
                  "s0 in [0, 1], s1 in [0, 1]")
    assert m.evaluate([1, 2], [3, 4]) == (2, 1, 4, 3)
    assert m.constraints_satisfied([1, 2], [3, 4])
    assert not m.add_constraint(Symbol(0) % 4, (0, 0)).constraints_satisfied([1, 2], [5, 4])


@st.composite
def constraint_batches(draw: st.DrawFn) -> tuple[IndexingMap, list[tuple[object, object]]]:
    m = draw(maps(max_dims=2, max_syms=1, max_rts=0))
    exprs = st.one_of(
        expressions(m.num_dims, m.num_range_vars, 0, max_leaves=4),
        st.sampled_from(list(m.variables) or [Const(0)]),  # bare variables: their bounds shrink
        st.integers(-3, 3).map(Const),  # constants: decided at once
    )
    # intervals that may be empty, and tuples as well as Interval values
    ivs = st.tuples(st.integers(-6, 9), st.integers(-6, 9)).flatmap(
        lambda t: st.sampled_from([t, Interval(*t)]))
    items = draw(st.lists(st.tuples(exprs, ivs), max_size=5))
    return m, items


@given(constraint_batches())
def test_add_constraints_is_add_constraint_one_by_one(batch) -> None:
    m, items = batch
    one_by_one = m
    for e, iv in items:
        one_by_one = one_by_one.add_constraint(e, iv)
    batched = m.add_constraints(items)
    assert batched.results == one_by_one.results
    assert batched.all_vars == one_by_one.all_vars  # bounds and names
    assert list(batched.constraints.items()) == list(one_by_one.constraints.items())
    assert batched.is_known_empty == one_by_one.is_known_empty
    assert batched.is_undefined == one_by_one.is_undefined


def _first_violation(e) -> str | None:  # type: ignore[no-untyped-def]
    """Independent oracle: the first node in pre-order that a map may not hold."""
    from verifidx.core.expr import Add, CeilDiv, FloorDiv, Max, Min, Mod, Mul, RtVar

    allowed = {Const, Dim, Symbol, RtVar, Add, Mul, FloorDiv, CeilDiv, Mod, Min, Max}
    stack = [e]
    while stack:
        node = stack.pop()
        if type(node) not in allowed:
            return "node"
        if type(node) in (FloorDiv, CeilDiv, Mod) and type(node.rhs) is not Const:
            return "divisor"
        stack.extend(reversed(node.children))
    return None


def _mixed_expressions():  # type: ignore[no-untyped-def]
    from verifidx.core.expr import Add, CeilDiv, FloorDiv, Max, Min, Mod, Mul, Variable
    from verifidx.rules.model import Call, ConstVar, TermVar

    leaves = st.sampled_from([Dim(0), Symbol(1), Const(3), Const(-2), TermVar("x"),
                              ConstVar("c0"), Variable(0), Call("abs", (Dim(1),))])

    def extend(kids):  # type: ignore[no-untyped-def]
        def build(t):  # type: ignore[no-untyped-def]
            op, a, b = t
            try:
                return Add([a, b]) if op is Add else op(a, b)
            except ValueError:  # a divisor that is a constant 0 or negative (mod)
                return a
        ops = st.sampled_from([Add, Mul, FloorDiv, CeilDiv, Mod, Min, Max])
        return st.tuples(ops, kids, kids).map(build)

    return st.recursive(leaves, extend, max_leaves=8)


@given(_mixed_expressions())
def test_check_map_expr_accepts_exactly_the_map_language(e) -> None:
    from verifidx.core.errors import DivisorError
    from verifidx.core.indexing_map import check_map_expr

    expected = _first_violation(e)
    if expected is None:
        check_map_expr(e)
        return
    with pytest.raises(ValueError) as info:
        check_map_expr(e)
    assert isinstance(info.value, DivisorError) == (expected == "divisor")


def test_maps_stay_frozen_values_with_their_own_constructor() -> None:
    import dataclasses
    import pickle

    from verifidx.core.indexing_map import Var

    m = IndexingMap((Dim(0),), (Var(Interval(0, 3)),))
    assert m.constraints == {} and m.range_vars == () and not m.is_known_empty
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.results = ()  # type: ignore[misc]
    other = dataclasses.replace(m, is_known_empty=True)
    assert other.is_known_empty and other.results == m.results
    assert pickle.loads(pickle.dumps(m)) == m
    assert m.constraints is not IndexingMap((Dim(0),), (Var(Interval(0, 3)),)).constraints
    with pytest.raises(ValueError, match="not part of the map language"):
        IndexingMap((Dim(0),), (Var(Interval(0, 3)),), (), (),
                    {object(): Interval(0, 1)})  # type: ignore[dict-item]
