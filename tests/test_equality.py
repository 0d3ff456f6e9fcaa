"""vx.equal: the cheap paths agree with brute force and with Z3, and keep the Verdict contract
(counterexamples are real tuples of one relation missing from the other)."""

from __future__ import annotations

from hypothesis import given, settings
from strategies import map_pairs, maps
from test_smt import _check_counterexample

import verifidx as vx
from verifidx import parse_map
from verifidx.simplifier.equality import equal
from verifidx.solve.smt import equal as smt_equal


def test_vx_equal_is_the_cheap_first_decision() -> None:
    f = parse_map("(d0) -> (d0), domain: d0 in [0, 7]")
    g = parse_map("(d0) -> ((d0 floordiv 8) * 8 + d0 mod 8), domain: d0 in [0, 7]")
    assert "enumeration" in vx.equal(f, g).message
    assert vx.equal([f], [g]).holds is True  # lists are unions (smt.equal_relations)


@given(map_pairs(max_syms=2, max_rts=1))
def test_equal_agrees_with_enumeration(pair) -> None:
    f, g = pair
    v = equal(f, g)
    assert v.holds is not None, v.message
    assert v.holds == (f.relation() == g.relation())
    if v.holds is False:
        _check_counterexample(v, f, g)


@settings(max_examples=40)
@given(map_pairs(max_syms=1, max_rts=1))
def test_equal_agrees_with_z3(pair) -> None:
    f, g = pair
    ours, z3 = equal(f, g), smt_equal(f, g)
    if z3.holds is not None and ours.holds is not None:
        assert ours.holds == z3.holds


@given(maps(max_syms=2, max_rts=1, max_constraints=2))
def test_a_map_equals_its_simplification(m) -> None:
    assert equal(m, m.simplify()).holds is True


def test_each_path_answers() -> None:
    f = parse_map("(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 7], d1 in [0, 3]")
    g = parse_map("(d0, d1) -> ((d0 * 4 + d1) floordiv 4 * 4 + d1), "
                  "domain: d0 in [0, 7], d1 in [0, 3]")
    assert "structurally" in equal(f, f).message
    assert "enumeration" in equal(f, g).message
    wrong = parse_map("(d0, d1) -> (d0 * 4 + d1 + 1), domain: d0 in [0, 7], d1 in [0, 3]")
    v = equal(f, wrong)
    assert v.holds is False
    _check_counterexample(v, f, wrong)
    big_f = parse_map("(d0, d1) -> (d0 * 1024 + d1), domain: d0 in [0, 4095], d1 in [0, 1023]")
    big_g = parse_map("(d0, d1) -> ((d0 * 1024 + d1) floordiv 1024 * 1024 + d1 mod 1024), "
                      "domain: d0 in [0, 4095], d1 in [0, 1023]")
    v = equal(big_f, big_g)
    assert v.holds is True and "enumeration" not in v.message
    big_wrong = parse_map("(d0, d1) -> (d0 * 1024 + d1 mod 1000), "
                          "domain: d0 in [0, 4095], d1 in [0, 1023]")
    v = equal(big_f, big_wrong)
    assert v.holds is False and v.counterexample is not None


def test_sampling_refutes_a_difference_at_one_point_in_nine() -> None:
    # beyond isl (a product) and Z3 (nonlinear mod) by default; 4 samples missed it
    f = parse_map("(d0, d1) -> ((d0 * d1) mod 3), domain: d0 in [0, 300], d1 in [0, 300]")
    g = parse_map("(d0, d1) -> ((d0 mod 3) * (d1 mod 3)), domain: d0 in [0, 300], "
                  "d1 in [0, 300]")
    for decide in (equal, smt_equal):
        v = decide(f, g)
        assert v.holds is False, v.message
        d0, d1 = v.counterexample["d0"], v.counterexample["d1"]
        assert 0 <= d0 <= 300 and 0 <= d1 <= 300
        assert (d0 * d1) % 3 != (d0 % 3) * (d1 % 3)  # the point differs, by plain arithmetic
        assert (v.lhs_value, v.rhs_value) == (((d0 * d1) % 3,), ((d0 % 3) * (d1 % 3),))


@given(map_pairs(max_syms=2, max_rts=1))
def test_a_sampled_counterexample_is_a_real_one(pair) -> None:
    from verifidx.solve.smt import _sampled_counterexample

    f, g = pair
    for quick in (True, False):
        v = _sampled_counterexample(f, g, quick=quick)
        if v is not None:
            assert v.holds is False
            _check_counterexample(v, f, g)  # against both relations, enumerated


def test_sampling_never_refutes_through_int64_overflow() -> None:
    # at d0 = 2^62, d0 * 8 wraps around in int64: the maps are equal all the same
    from verifidx.solve.smt import _sampled_counterexample

    for hi in (1 << 60, 1 << 62, (1 << 63) - 1):
        f = parse_map(f"(d0, d1) -> ((d0 * 8) floordiv 8 + d1), domain: d0 in [0, {hi}], "
                      "d1 in [0, 3]")
        g = parse_map(f"(d0, d1) -> (d0 + d1), domain: d0 in [0, {hi}], d1 in [0, 3]")
        assert _sampled_counterexample(f, g) is None
        assert _sampled_counterexample(f, g, quick=True) is None
        assert equal(f, g).holds is not False
