"""Equality without enumerating range variables: isl's translation is the map's relation, its
verdicts agree with brute force and with Z3, and `smt.equal` decides pairs with range boxes of
thousands of points (equal ones by isl's proof, unequal ones with a tuple checked by evaluation).
"""

from __future__ import annotations

import islpy as isl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import map_pairs, maps
from test_smt import _check_counterexample

from verifidx import parse_map
from verifidx.core.expr import Dim, Symbol, add, floordiv, mod, mul
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval
from verifidx.solve import presburger
from verifidx.solve.smt import equal


def _isl_relation(m: IndexingMap) -> set[tuple[tuple[int, ...], ...]]:
    """The points isl finds in the translated relation, as m.relation() writes them."""
    relation = presburger.isl_map(m)
    assert relation is not None
    out: set[tuple[tuple[int, ...], ...]] = set()
    nd, nrt = m.num_dims, m.num_rt_vars

    def add_point(p: isl.Point) -> None:
        values = [p.get_coordinate_val(isl.dim_type.set, i).to_python()
                  for i in range(nd + nrt + m.num_results)]
        out.add((tuple(values[nd:nd + nrt]), tuple(values[:nd]), tuple(values[nd + nrt:])))

    relation.wrap().foreach_point(add_point)
    return out


@given(maps(max_syms=2, max_rts=1, max_constraints=2))
def test_translation_is_the_relation(m) -> None:
    assert _isl_relation(m) == m.relation()


@given(map_pairs(max_syms=2, max_rts=1))
def test_isl_decides_like_brute_force(pair) -> None:
    f, g = pair
    assert presburger.equal(f, g) == (f.relation() == g.relation())


@given(maps(max_syms=2, max_rts=1, max_constraints=3))
def test_isl_emptiness_is_brute_force(m) -> None:
    assert presburger.is_empty(m) == (not m.relation())


@settings(max_examples=30)
@given(map_pairs(max_syms=1, max_rts=1, max_constraints=1))
def test_isl_agrees_with_z3(pair) -> None:
    f, g = pair
    z3 = equal(f, g, quick=False)  # the Z3 path alone (range boxes expanded)
    if z3.holds is not None:
        assert presburger.equal(f, g) == z3.holds


def _box(n: int) -> Var:
    return Var(Interval(0, n - 1))


@st.composite
def large_pairs(draw: st.DrawFn) -> tuple[IndexingMap, IndexingMap, bool]:
    """A map with range variables (s1, s0) over a box of thousands of points against the same
    relation written with one range variable, or a near miss of it."""
    k, m = draw(st.integers(8, 96)), draw(st.integers(8, 96))
    d0, s0, s1 = Dim(0), Symbol(0), Symbol(1)
    n = draw(st.integers(1, 4))
    split = draw(st.booleans())
    if split:  # linearised: d0 * k * m + s1 * m + s0
        f = IndexingMap.build([add(mul(d0, k * m), mul(s1, m), s0)], [_box(n)],
                              [_box(m), _box(k)], [], [])
        g_result = add(mul(d0, k * m), Symbol(0))
    else:  # delinearised: (s1, s0) against (s floordiv m, s mod m)
        f = IndexingMap.build([d0, s1, s0], [_box(n)], [_box(m), _box(k)], [], [])
        g_result = None
    miss = draw(st.sampled_from(["none", "short", "shift"]))
    size = k * m - (1 if miss == "short" else 0)
    shift = 1 if miss == "shift" else 0
    s = add(Symbol(0), shift)
    results = [g_result.substitute({Symbol(0): s})] if g_result is not None else \
        [d0, floordiv(s, m), mod(s, m)]
    g = IndexingMap.build(results, [_box(n)], [_box(size)], [], [])
    return f, g, miss == "none"


@settings(max_examples=25, deadline=None)
@given(large_pairs(), st.booleans())
def test_large_range_boxes_are_decided(case, swap) -> None:
    f, g, same = case
    if swap:
        f, g = g, f
    v = equal(f, g)
    assert v.holds is same, v.message
    if same:
        assert "isl" in v.message
    else:
        _check_counterexample(v, f, g)


def test_a_box_of_a_hundred_thousand_points() -> None:
    """Regression: Z3's quantified query answered unknown here (box too large to expand)."""
    f = parse_map("(d0)[s0, s1, s2] -> (d0 * 100000 + s2 * 1000 + s1 * 10 + s0), domain: "
                  "d0 in [0, 7], s0 in [0, 9], s1 in [0, 99], s2 in [0, 99]")
    g = parse_map("(d0)[s0] -> (d0 * 100000 + s0), domain: d0 in [0, 7], s0 in [0, 99999]")
    assert equal(f, g).holds is True
    h = parse_map("(d0)[s0] -> (d0 * 100000 + s0), domain: d0 in [0, 7], s0 in [0, 99998]")
    v = equal(f, h)
    assert v.holds is False
    point = v.counterexample
    assert point is not None and v.lhs_value == f.evaluate([point["d0"]], [point[f"s{i}"]
                                                                          for i in range(3)])
    assert v.lhs_value[0] % 100000 == 99999  # the one value h cannot reach


def test_not_quasi_affine_goes_to_z3() -> None:
    f = parse_map("(d0, d1) -> (d0 * d1), domain: d0 in [0, 3], d1 in [0, 3]")
    g = parse_map("(d0, d1) -> (d1 * d0), domain: d0 in [0, 3], d1 in [0, 3]")
    assert presburger.isl_map(f) is None and presburger.equal(f, g) is None
    assert equal(f, g).holds is True


def test_budget_exhausted_is_unknown_not_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    f = parse_map("(d0)[s0] -> (d0 * 8 + s0), domain: d0 in [0, 3], s0 in [0, 7]")
    g = parse_map("(d0)[s0, s1] -> (d0 * 8 + s1 * 4 + s0), domain: d0 in [0, 3], "
                  "s0 in [0, 3], s1 in [0, 1]")
    monkeypatch.setattr(presburger, "MAX_OPERATIONS", 1)
    assert presburger.equal(f, g) is None
    assert equal(f, g).holds is True  # Z3 decides instead
    monkeypatch.undo()
    assert presburger.equal(f, g) is True


def test_sizes_are_parameters() -> None:
    """The seam for symbolic sizes: parameters with their intervals, quantified universally."""
    f = parse_map("(d0) -> (d0), domain: d0 in [0, 7]")
    relation = presburger.isl_map(f, {"N": Interval(1, 64)})
    assert relation is not None
    expected = isl.Set.read_from_str(relation.get_ctx(), "[N] -> { : 1 <= N <= 64 }")
    assert relation.params().is_equal(expected)
    assert presburger.equal(f, f, {"N": Interval(1, 64)}) is True
    g = parse_map("(d0) -> (d0), domain: d0 in [0, 6]")
    same, difference = presburger.decide(f, g, {"N": Interval(1, 64)})
    assert same is False and difference is not None
    assert (difference.which, difference.fixed, difference.result) == ("first", [7], [7])
    assert 1 <= difference.sizes["N"] <= 64 and difference.index == 0


def test_huge_constants_are_exact() -> None:
    f = parse_map(f"(d0) -> (d0 * {1 << 70} + 3), domain: d0 in [0, 3]")
    g = parse_map(f"(d0) -> (d0 * {1 << 70} + 2), domain: d0 in [0, 3]")
    assert presburger.equal(f, f) is True and presburger.equal(f, g) is False
    assert equal(f, g).holds is False
    # with range variables: isl's tuple is beyond int64, so Z3 checks it at that point
    f = parse_map(f"(d0)[s0] -> (d0 * {1 << 70} + s0), domain: d0 in [0, 3], s0 in [0, 3]")
    g = parse_map(f"(d0)[s0] -> (d0 * {1 << 70} + s0), domain: d0 in [0, 3], s0 in [0, 2]")
    same, difference = presburger.decide(f, g)
    assert same is False and difference is not None and difference.result[0] > 1 << 70
    v = equal(f, g)
    assert v.holds is False and v.lhs_value[0] % (1 << 70) == 3


def test_unions_of_large_boxes() -> None:
    """`vx.equal` on lists (`smt.equal_relations`): two pieces with range boxes of 4,096 points
    each against one map, decided by isl; a missing value is a checked counterexample."""
    import verifidx as vx

    low = parse_map("(d0)[s0] -> (d0 * 8192 + s0), domain: d0 in [0, 3], s0 in [0, 4095]")
    high = parse_map("(d0)[s0, s1] -> (d0 * 8192 + s1 * 64 + s0 + 4096), domain: "
                     "d0 in [0, 3], s0 in [0, 63], s1 in [0, 63]")
    whole = parse_map("(d0)[s0] -> (d0 * 8192 + s0), domain: d0 in [0, 3], s0 in [0, 8191]")
    v = vx.equal([low, high], [whole])
    assert v.holds is True and "isl" in v.message
    short = parse_map("(d0)[s0] -> (d0 * 8192 + s0), domain: d0 in [0, 3], s0 in [0, 8190]")
    v = vx.equal([low, high], [short])
    assert v.holds is False and v.message.startswith("lhs[1]")
    point = v.counterexample
    value = high.evaluate([point["d0"]], [point["s0"], point["s1"]])
    assert value == v.lhs_value and value[0] % 8192 == 8191


# -- sizes as isl parameters (docs/semantics.md, Sizes) -----------------------------------------

CUT = "(d0)<N> -> (d0), domain: d0 in [0, 15], N in [1, 16], d0 - N in [-16, -1]"


def _intervals(m: IndexingMap) -> dict[str, Interval]:
    return {z.name: z.bounds for z in m.sizes}


@pytest.mark.parametrize("other, same", [
    # the same relation written otherwise: equal at every size
    ("(d0)<N> -> (d0), domain: d0 in [0, 15], N in [1, 16], N - d0 in [1, 16]", True),
    # the whole box: equal only at N = 16
    ("(d0)<N> -> (d0), domain: d0 in [0, 15], N in [1, 16]", False),
    # an offset by the size
    ("(d0)<N> -> (d0 + N - N), domain: d0 in [0, 15], N in [1, 16], d0 - N in [-16, -1]",
     True),
])
def test_isl_decides_for_every_size(other: str, same: bool) -> None:
    f, g = parse_map(CUT), parse_map(other)
    decided, found = presburger.decide(f, g, _intervals(f))
    assert decided is same
    if not same:  # the sampled difference is a real one, at the sizes isl names
        assert found is not None and set(found.sizes) == {"N"}
        at = found.sizes
        assert equal(f.with_sizes(at), g.with_sizes(at)).holds is False
    # and the solver layer agrees, refuting only with checked sizes
    v = equal(f, g)
    assert v.holds is same
    if not same:
        assert v.counterexample is not None and v.counterexample["N"] < 16


def test_a_product_with_a_size_is_left_to_z3() -> None:
    m = parse_map("(d0, d1)<N> -> (d0 * N + d1), domain: d0 in [0, 3], d1 in [0, 15], "
                  "N in [1, 16], d1 - N in [-16, -1]")
    assert presburger.decide(m, m.replace(results=(Dim(0),)), _intervals(m)) == (None, None)
    assert presburger.sample(m, _intervals(m)) is None


def test_a_sampled_point_is_a_point_at_its_sizes() -> None:
    m = parse_map("(d0)[s0]<N> -> (d0 + s0), domain: d0 in [0, 15], s0 in [0, 3], "
                  "N in [2, 9], d0 + s0 - N in [0, 0]")
    found = presburger.sample(m, _intervals(m))
    assert found is not None
    at, values = found
    fixed = m.with_sizes(at)
    assert fixed.constraints_satisfied(values[:1], values[1:])
    empty = parse_map("(d0)<N> -> (d0), domain: d0 in [0, 15], N in [1, 4], d0 - N in [5, 20], "
                      "d0 in [0, 3]")
    assert presburger.sample(empty, _intervals(empty)) is None
    assert presburger.is_empty(empty, _intervals(empty)) is True
