"""The matcher's fast paths propose exactly what its general search proposes, in the same order.

The engine takes the first proposal a rule accepts, so a fast path that changed the order (or
dropped a proposal) would change results. Oracle: the general generators of
`verifidx.rules.matcher` (`_assign` over `_order`, `_match_split`, `_match`), called directly on
the left sides of the rule base and on generated expressions."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import expressions, intervals, quasi_affine

from verifidx import parse_map
from verifidx.core.canonical import canon
from verifidx.core.expr import (
    Add,
    Binary,
    CeilDiv,
    Const,
    Dim,
    Expr,
    FloorDiv,
    Mod,
    Mul,
    Symbol,
    ceildiv,
)
from verifidx.core.interval import Interval, range_of
from verifidx.rules import matcher as m
from verifidx.rules.model import ConstVar, TermVar
from verifidx.simplifier.engine import default_simplifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from families import digits, nested  # noqa: E402


def _patterns() -> list[Expr]:
    out: dict[Expr, None] = {}
    for rule in default_simplifier().engine.rules:
        if isinstance(rule.lhs, Expr):
            for node in rule.lhs.walk():
                out[node] = None
    return list(out)


PATTERNS = _patterns()
SUMS = [p for p in PATTERNS if isinstance(p, Add)]
SCALED_PLUS_REST = [p for p in SUMS if m._scaled_plus_rest(p) is not None]
REPEATS = [p for p in SUMS if m._repeats_dividend(p)]
_x, _c0, _c1 = TermVar("x"), ConstVar("c0"), ConstVar("c1")
#: Plus shapes with a repeated variable, which the rule base does not have today.
RIGID = [p for p in PATTERNS if m._is_rigid(p)] + [
    Mod(FloorDiv(_x, _c0), _c0), Mod(FloorDiv(_x, _c1), Const(3))]
SCALED_DIVISIONS = [p for p in PATTERNS if m._scaled_division(p) is not None]
SPLIT = [p for p in PATTERNS if isinstance(p, (FloorDiv, Mod, CeilDiv)) and isinstance(p.lhs, Add)]

RIGID_SUMS = [p for p in SUMS if m._rigid_parts(p)]
#: Summand patterns with a rigid part (`(x floordiv c0) * c1`, `x mod c0`), plus a bare one
#: and one with a fixed factor, which the rule base may not have.
RIGID_SUMMANDS = [t for p in SUMS for t in p.terms if m._rigid_summand(t) is not None] + [
    FloorDiv(_x, _c0), Mul(Mod(_x, _c1), Const(4)), Mul(FloorDiv(_x, Const(2)), _c0)]


def _generated(text: str) -> list[Expr]:
    """Every subterm of the results of a generated map, canonical."""
    return [canon(n) for r in parse_map(text).results for n in canon(r).walk()]


#: Digit sums, where several divisions of one value meet (what the rigid filter is for).
digit_terms = st.integers(0, 10**6).map(
    lambda seed: _generated(digits(random.Random(seed)) if seed % 3 else
                            nested(random.Random(seed))))
terms = st.one_of(quasi_affine(), expressions(num_dims=3, num_syms=1, max_leaves=10))


def test_the_rule_base_has_each_shape() -> None:
    assert GUIDED and SCALED_PLUS_REST and REPEATS and RIGID and SPLIT and SCALED_DIVISIONS
    assert RIGID_SUMS


def _sum_cases(e: Expr) -> list[Expr]:
    """The sum itself and each sum left after dropping one of its terms."""
    e = canon(e)
    out = [e]
    if isinstance(e, Add):
        out += [canon(Add(e.terms[:i] + e.terms[i + 1:])) if len(e.terms) > 2 else e.terms[1 - i]
                for i in range(len(e.terms))]
    return out


def _check_rigid_filter(e: Expr) -> None:
    for c in _sum_cases(e):
        for p in RIGID_SUMS:
            if not m._rigid_summands_fit(p, c):
                assert _general_sum(p, c) == [], (p, c)


@settings(max_examples=300, deadline=None)
@given(terms)
def test_rigid_summand_filter_drops_only_sums_without_matches(e: Expr) -> None:
    _check_rigid_filter(e)


@settings(max_examples=100, deadline=None)
@given(digit_terms)
def test_rigid_summand_filter_on_digit_sums(found: list[Expr]) -> None:
    for e in found:
        _check_rigid_filter(e)


def _summand_cases(e: Expr) -> list[Expr]:
    """The terms of a sum as `_candidates` sees them (`t`, `t * k`), and the whole."""
    return [m._scaled(b, c) for b, c in m._terms(canon(e)).items()] + [canon(e)]


@settings(max_examples=300, deadline=None)
@given(st.one_of(terms, digit_terms.map(lambda found: found[0])), st.booleans())
def test_rigid_summands_match_as_the_general_matcher(e: Expr, bind: bool) -> None:
    for term in _summand_cases(e):
        if isinstance(term, Add):
            continue
        for p in RIGID_SUMMANDS:
            b: dict[Expr, Expr] = {_c0: Const(3)} if bind else {}
            general = list(m._match(p, term, b))
            fast = m._match_rigid_summand(p, m._rigid_summand(p), term, b)  # type: ignore[arg-type]
            assert [list(x.items()) for x in general] == \
                ([] if fast is None else [list(fast.items())])


@settings(max_examples=200, deadline=None)
@given(st.one_of(terms, digit_terms.map(lambda found: found[0])))
def test_groups_add_nothing_for_rigid_factors(e: Expr) -> None:
    """`_candidates` offers no group of terms to `R * c` (R a division, mod, min or max): the
    general search would only repeat the single terms' bindings, or find none."""
    remaining = m._terms(canon(e))
    for p in RIGID_SUMMANDS:
        if not (isinstance(p, Mul) and isinstance(p.rhs, ConstVar)):
            continue
        direct = {(frozenset(left.items()), frozenset(b.items()))
                  for b, left in m._candidates(p, remaining, {})}
        for g, group in m._factor_groups(remaining):
            inner = m._expr({k: v // g for k, v in group.items()})
            left = {k: v for k, v in remaining.items() if k not in group}
            for b1 in m._match(p.rhs, Const(g), {}):
                for b2 in m._match(p.lhs, inner, b1):
                    assert (frozenset(left.items()), frozenset(b2.items())) in direct


def _general_sum(p: Add, e: Expr) -> list[dict[Expr, Expr]]:
    return list(m._assign(m._order(p.terms, {}), m._terms(e), {}))


@settings(max_examples=300, deadline=None)
@given(terms)
def test_scaled_plus_rest_is_the_general_assignment(e: Expr) -> None:
    e = canon(e)
    for p in SCALED_PLUS_REST:
        splits = m._splits(p, e)
        if splits is not None:
            fast = splits.all()
            assert fast == _general_sum(p, e)
            assert [list(b) for b in fast] == [list(b) for b in _general_sum(p, e)]


GUIDED = [p for p in PATTERNS if m.can_guide(p)]


@settings(max_examples=300, deadline=None)
@given(terms, st.sampled_from([2, 3, 4, 8, -3]), st.sampled_from([1, 2, 3, 4, 6]))
def test_guided_matches_are_the_accepted_matches(e: Expr, k: int, modulus: int) -> None:
    """`guided_matches` gives `match`'s bindings whose constants pass `accept`, in `match`'s
    order, for every guided left side, [split] or not; each with a position that names the
    same bindings whatever `accept` is (the engine shares candidates by it). `accept` here
    is an arbitrary test on the constants (their sum modulo a number)."""

    def accept(constants: dict[Expr, Expr]) -> bool:
        return sum(v.value for v in constants.values() if isinstance(v, Const)) % modulus == 0

    candidates = [canon(e // k), canon(e % abs(k)), canon(ceildiv(e, abs(k))),
                  canon((e * 6 + 3) // k), canon((e * 4 + 2) % 8), canon((e * 4 + 8) // 4)]
    for c in candidates:
        for p in GUIDED:
            for split in (False, True):
                found = m.guided_matches(p, c, accept, split)
                if found is None:
                    continue
                guided = [(i, b.env if isinstance(b, m.SplitMatch) else b) for i, b in found]
                general = list(m.match(p, c, split=split))
                n_split = len(list(m._split_matches(p, c))) if split else 0
                expected = [b for i, b in enumerate(general)
                            if i < n_split or accept({v: b[v] for v in b
                                                      if isinstance(v, ConstVar)})]
                assert [list(b.items()) for _i, b in guided] == \
                    [list(b.items()) for b in expected]
                everything = {i: b.env if isinstance(b, m.SplitMatch) else b
                              for i, b in m.guided_matches(p, c, lambda _c: True, split) or []}
                assert [list(b) for b in everything.values()] == [list(b) for b in general]
                for i, b in guided:
                    assert everything[i] == b


@settings(max_examples=300, deadline=None)
@given(terms, st.sampled_from([2, 3, 5, 8]), st.lists(intervals(), min_size=4, max_size=4))
def test_split_ranges_are_interval_arithmetic_of_the_built_terms(
        e: Expr, k: int, ivs: list[Interval]) -> None:
    """The engine decides a [split] rule's condition on `SplitMatch.linear_range` instead of
    the interval of the built x and y when no constraint is in play; that is exact only if
    both are the same interval. Oracle: `range_of` on the built terms."""
    bounds = {Dim(0): ivs[0], Dim(1): ivs[1], Dim(2): ivs[2], Symbol(0): ivs[3]}
    cache: dict[Expr, Interval] = {}
    for c in (canon(e // k), canon(e % k), canon((e * 7 + 3) // k)):
        for p in SPLIT:
            for split in m._lazy_splits(p, c) or []:
                for var in (split.x, split.y):
                    built = range_of(split.env[var], bounds)
                    assert split.linear_range(var, lambda t: range_of(t, bounds, cache)) \
                        == built


@settings(max_examples=300, deadline=None)
@given(terms)
def test_repeated_dividend_filter_drops_only_sums_without_matches(e: Expr) -> None:
    e = canon(e)
    if m._has_repeated_dividend(e):
        return
    for p in REPEATS:
        assert _general_sum(p, e) == []


@settings(max_examples=300, deadline=None)
@given(terms, st.sampled_from([2, 3, 4, 8, -3]))
def test_rigid_and_split_matches_are_the_general_ones(e: Expr, k: int) -> None:
    candidates = [canon(e), canon(e // k), canon(e % abs(k)), canon((e // k) % 3),
                  canon((e % 8) // 2), canon((e * 6) // k), canon((e * 4 + 2) % 8)]
    for c in candidates:
        for p in RIGID:
            env: dict[Expr, Expr] = {}
            fast = [env] if m._match_rigid(p, c, env) else []
            assert [list(b.items()) for b in fast] == [list(b.items()) for b in m._match(p, c, {})]
        for p in SCALED_DIVISIONS:
            fast = m._match_scaled_division(*m._scaled_division(p), c)  # type: ignore[misc]
            assert [list(b.items()) for b in fast] == \
                [list(b.items()) for b in m._match(p, c, {})]
        for p in SPLIT:
            assert isinstance(p, Binary)
            assert [list(b.items()) for b in m._split_matches(p, c)] == \
                [list(b.items()) for b in m._match_split(p, c, {})]
