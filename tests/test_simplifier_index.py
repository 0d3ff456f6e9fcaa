"""The engine's discrimination index (`RuleEngine.applicable`) and the simplifier's choice of
rules by intervals (`_ExprSimplifier._rules_for`) drop only rule attempts that could not rewrite
the term.

Skipping a rule is sound, but a rule dropped wrongly would change results. Oracle: the engine's
own attempt (`RuleEngine._try`) of every dropped rule, which must rewrite nothing, on the terms
the simplifier meets: every subterm of generated maps of the issue 11 families and every term
of their rewrite traces, with the map's variable bounds."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import expressions

from verifidx import parse_map
from verifidx.core.canonical import canon
from verifidx.core.expr import Const, Dim, Expr, FloorDiv, Mod
from verifidx.simplifier.engine import default_simplifier
from verifidx.simplifier.expressions import _ExprSimplifier
from verifidx.simplifier.maps import Simplifier
from verifidx.simplifier.prefilters import _prediction
from verifidx.simplifier.rule_engine import RuleEngine, _Plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from families import FAMILIES  # noqa: E402


def _terms_met(m_text: str) -> tuple[object, list[Expr]]:
    m = parse_map(m_text)
    trace: list = []
    default_simplifier().simplify(m, trace=trace)
    found = {canon(n): None for r in m.results for n in canon(r).walk()}
    for step in trace:
        for e in (step.before, step.after):
            found.update({canon(n): None for n in e.walk()})
    return m, list(found)


def _check_dropped_rules_rewrite_nothing(m, terms: list[Expr]) -> int:  # type: ignore[no-untyped-def]
    engine = default_simplifier().engine
    simp = _ExprSimplifier(engine, m.bounds, dict(m.constraints))
    dropped = 0
    for e in terms:
        rules = engine.expr_rules.get(type(e), [])
        kept = {p.rule for p in engine.applicable(e, simp._rules_for(e))}
        for rule in rules:
            if rule not in kept:
                dropped += 1
                assert engine._try(_Plan(rule), e, simp.bound, None) is None, (rule.name, e)
    return dropped


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(FAMILIES)), st.integers(0, 10**6))
def test_dropped_rules_rewrite_nothing_on_the_families(family: str, seed: int) -> None:
    m, terms = _terms_met(FAMILIES[family](random.Random(seed)))
    _check_dropped_rules_rewrite_nothing(m, terms)


@settings(max_examples=200, deadline=None)
@given(expressions(num_dims=2, num_syms=0, max_leaves=8), st.sampled_from([1, 2, 3, 4, 6, 8]),
       st.integers(-12, 12))
def test_dropped_rules_rewrite_nothing_on_scaled_and_offset_dividends(
        e: Expr, k: int, c: int) -> None:
    """The shapes whose dividend constant the index reads (`x * cA`, `x + cA`)."""
    m = parse_map("(d0, d1) -> (d0), domain: d0 in [-3, 9], d1 in [0, 5]")
    terms = []
    for dividend in (e, e * k, e * k + c, e + c, e * k + c * k, Dim(0) * k + c):
        for op in (FloorDiv, Mod):
            terms.append(canon(op(canon(dividend), Const(k + 1))))
    _check_dropped_rules_rewrite_nothing(m, terms)


def test_the_index_drops_identity_instances_and_checks_something() -> None:
    """`(d0 * 4 + d1) floordiv 3`: div_scaled would read `x * 1` (a rewrite to itself), and
    sum_div_const `x + 0`; both are dropped, and the check above runs on them."""
    m = parse_map("(d0, d1) -> ((d0 * 4 + d1) floordiv 3), domain: d0 in [0, 7], d1 in [0, 3]")
    e = canon(m.results[0])
    engine = default_simplifier().engine
    kept = {p.rule.name for p in engine.applicable(e, engine.expr_rules[FloorDiv])}
    assert "div_scaled" not in kept and "sum_div_const" not in kept
    assert "div_noop" in kept
    assert _check_dropped_rules_rewrite_nothing(m, [e]) > 0
    names = {r.name: r for r in engine.rules}
    assert _prediction(names["div_scaled"]).neutral == {1}  # type: ignore[union-attr]
    assert _prediction(names["sum_mod_const"]).neutral == {0}  # type: ignore[union-attr]
    # `(x * 1) floordiv c1 => x * (1 floordiv c1)` changes the term: 1 is not neutral there
    assert 1 not in _prediction(names["div_multiple"]).neutral  # type: ignore[union-attr]
    # `(d0 * 4 + 8) floordiv 4`: the sum's factor 4 and constant 8 keep both rules
    e2 = canon(FloorDiv(canon(Dim(0) * 4 + 8), Const(4)))
    kept2 = {p.rule.name for p in engine.applicable(e2, engine.expr_rules[FloorDiv])}
    assert {"div_scaled", "sum_div_const"} <= kept2


def test_buckets_are_left_out_only_when_no_remainder_fits_one() -> None:
    """`(d0 * 8 + d1) floordiv 8`: the remainder d1 spans 6 values with d1 in [0, 5] (one
    bucket: the quotient is d0) and 10 with d1 in [0, 9] (two buckets: div_bucket cannot
    apply, and is not tried)."""
    engine = default_simplifier().engine
    for hi, tried in ((5, True), (9, False)):
        m = parse_map(f"(d0, d1) -> ((d0 * 8 + d1) floordiv 8), domain: d0 in [0, 3], "
                      f"d1 in [0, {hi}]")
        e = canon(m.results[0])
        simp = _ExprSimplifier(engine, m.bounds, dict(m.constraints))
        names = {r.name for r in simp._rules_for(e)}
        assert ("div_bucket" in names) is tried
        _check_dropped_rules_rewrite_nothing(m, [e])
        out = default_simplifier().simplify(m)
        assert out.relation() == m.relation()
        assert (str(out.results[0]) == "d0") is tried
    # a constraint on the remainder could narrow it: nothing is left out then
    m = parse_map("(d0, d1) -> ((d0 * 8 + d1) floordiv 8), domain: d0 in [0, 3], d1 in [0, 9], "
                  "d1 + d0 in [0, 20]")
    e = canon(m.results[0])
    simp = _ExprSimplifier(engine, m.bounds, dict(m.constraints))
    assert "div_bucket" in {r.name for r in simp._rules_for(e)}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(-40, 40), st.integers(0, 12), st.integers(2, 16),
       st.integers(-5, 5))
def test_left_out_buckets_rewrite_nothing(a: int, b: int, width: int, k: int, c: int) -> None:
    m = parse_map(f"(d0, d1) -> (d0), domain: d0 in [0, {width}], d1 in [-2, {width // 2}]")
    terms = [canon(op(canon(Dim(0) * a + Dim(1) * b + c), Const(k))) for op in (FloorDiv, Mod)]
    _check_dropped_rules_rewrite_nothing(m, terms)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["digit decompositions", "nested divisions"]), st.integers(0, 10**6),
       st.lists(st.integers(0, 80), min_size=2, max_size=6))
def test_outcomes_remembered_across_maps_are_the_fresh_ones(
        family: str, seed: int, highs: list[int]) -> None:
    """One engine over several maps (its rewrites remembered with the intervals they read,
    `_rewrite_by_reads`) gives each map what an engine that never saw another map gives: the
    same terms under other bounds of d0, which some rules read and others do not."""
    rules = default_simplifier().engine.rules
    shared = Simplifier(RuleEngine(rules))
    text = FAMILIES[family](random.Random(seed))
    for hi in highs:
        m = parse_map(re.sub(r"d0 in \[-?\d+, -?\d+\]", f"d0 in [0, {hi}]", text))
        assert shared.simplify(m) == Simplifier(RuleEngine(rules)).simplify(m), (text, hi)
