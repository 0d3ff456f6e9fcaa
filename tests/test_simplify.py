"""The simplifier: the seed document's examples, XLA's conformance cases, and soundness by
enumeration (the simplified relation is the original one), idempotence, order independence."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import maps, reshape_like_maps

from verifidx import compose, parse_expr, parse_map
from verifidx.core.canonical import canon
from verifidx.core.expr import Dim, Symbol
from verifidx.core.syntax import names_for
from verifidx.simplifier.engine import default_simplifier, expression_range, simplify


def s(text: str, **kw: object) -> str:
    return str(simplify(parse_map(text), **kw))


SEED = [
    ("(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]",
     "(d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14]"),
    ("(d0, d1, d2) -> ((100 * d0 + 10 * d1 + d2) floordiv 100, ((100 * d0 + 10 * d1 + d2) mod "
     "100) floordiv 10, d2 mod 10), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]",
     "(d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"),
    ("(d0, d1, d2) -> ((16 * d0 + 4 * d1 + d2) floordiv 8, (16 * d0 + 4 * d1 + d2) mod 8), "
     "domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]",
     "(d0, d1, d2) -> (2 * d0 + (4 * d1 + d2) floordiv 8, (4 * d1 + d2) mod 8), "
     "domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"),
    ("(d0, d1) -> (-((-11 * d0 - d1 + 109) floordiv 11) + 9), domain: d0 in [0, 9], d1 in [0, 10]",
     "(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 10]"),
]


@pytest.mark.parametrize("given_text,expected", SEED)
def test_seed_document_simplifier_examples(given_text: str, expected: str) -> None:
    assert simplify(parse_map(given_text)) == parse_map(expected)


def _reshape_o2i(out_shape: list[int], in_shape: list[int]):
    """Output->input map of a reshape, written directly: linearise, then delinearise."""
    lin = 0
    for i, n in enumerate(out_shape):
        lin = lin * n + Dim(i) if i else Dim(0)
    results = []
    stride = 1
    for n in reversed(in_shape):
        results.append((lin // stride) % n)
        stride *= n
    from verifidx.core.indexing_map import IndexingMap

    return IndexingMap.build(list(reversed(results)), [(0, n - 1) for n in out_shape])


def test_reshape_reshape_cancels_to_identity() -> None:
    first = _reshape_o2i([10, 10, 10], [50, 20])   # reshape2: [50,20] -> [10,10,10]
    second = _reshape_o2i([50, 20], [10, 10, 10])  # reshape1: [10,10,10] -> [50,20]
    assert str(simplify(compose(first, second))) == (
        "(d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]")


def test_seed_document_constraint_behaviours() -> None:
    # 1. `+ c`, `* k`, `floordiv k` move into the interval
    assert s("(d0) -> (d0), domain: d0 in [0, 99], d0 floordiv 8 + 1 in [6, 12]") == \
        "(d0) -> (d0), domain: d0 in [40, 95]"
    assert s("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 99], s0 in [0, 50], "
             "(d0 + s0) * 3 in [9, 30]") == \
        "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 99], s0 in [0, 50], d0 + s0 in [3, 10]"
    # 2. always-satisfied constraints go
    assert s("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 5], s0 in [1, 3], d0 + s0 in [0, 20]") == \
        "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 5], s0 in [1, 3]"
    # 3. constraint expressions are simplified like results
    assert s("(d0, d1) -> (d0), domain: d0 in [0, 6], d1 in [0, 14], "
             "d0 + d1 floordiv 16 in [0, 3]") == \
        "(d0, d1) -> (d0), domain: d0 in [0, 3], d1 in [0, 14]"


def test_stronger_than_xla_on_emptiness() -> None:
    assert s("(d0) -> (d0), domain: d0 in [0, 99], d0 mod 8 + 5 in [50, 54]") == "KNOWN EMPTY"
    assert s("(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 9], "
             "d0 * 2 + d1 * 4 in [5, 5]") == "KNOWN EMPTY"  # parity: needs more than intervals


def test_exact_range_where_xla_and_sympy_are_loose() -> None:
    m = parse_map("()[s0, s1] -> (s0), domain: s0 in [0, 1023], s1 in [0, 255]")
    e = parse_expr("s0 + 32 * s1 - 32 * (s0 floordiv 32)", names_for(m))
    r = expression_range(m, e)
    assert (r.lo, r.hi) == (0, 8191)


def test_negative_divisor_constraint_is_exact_where_xla_is_not() -> None:
    # XLA's expectation is s0 in [15, 35]; 13 satisfies the constraint and 35 does not.
    out = simplify(parse_map("(d0)[s0] -> (d0), domain: d0 in [0, 99], s0 in [-99, 99], "
                             "s0 floordiv -3 in [-11, -5]"))
    truth = [v for v in range(-99, 100) if -11 <= v // -3 <= -5]
    assert out.range_vars[0].bounds.lo == min(truth) == 13
    assert out.range_vars[0].bounds.hi == max(truth) == 33


def test_point_dimensions_replace_and_preserve() -> None:
    assert s("(d0, d1) -> (d0 + d1), domain: d0 in [5, 5], d1 in [0, 3]") == \
        "(d0, d1) -> (d1 + 5), domain: d0 in [5, 5], d1 in [0, 3]"
    assert s("(d0) -> (d0), domain: d0 in [5, 5]", point_dims="preserve") == \
        "(d0) -> (d0), domain: d0 in [5, 5]"


def test_translation_validation() -> None:
    res = simplify(parse_map(SEED[1][0]), verify=True)
    assert res.verified is True and str(res.map) == SEED[1][1]


def test_trace_names_rules_and_intervals() -> None:
    steps: list = []
    simplify(parse_map(SEED[0][0]), trace=steps)
    names = {st.rule for st in steps}
    assert "mod_noop" in names
    assert any("range(d1)" in st.bounds for st in steps)


def test_rules_fire_only_where_their_conditions_hold() -> None:
    # mod_noop needs the whole range inside [0, c - 1]
    assert s("(d0) -> (d0 mod 16), domain: d0 in [0, 16]") == \
        "(d0) -> (d0 mod 16), domain: d0 in [0, 16]"
    # pulling a multiple out needs divisibility
    assert s("(d0, d1) -> ((d0 * 6 + d1) floordiv 4), domain: d0 in [0, 9], d1 in [0, 9]") == \
        "(d0, d1) -> ((d0 * 6 + d1) floordiv 4), domain: d0 in [0, 9], d1 in [0, 9]"
    # a negative divisor is never merged into a nested division
    assert s("()[s0] -> ((s0 floordiv 2) floordiv -7), domain: s0 in [0, 1233]") == \
        "()[s0] -> (s0 floordiv 2 floordiv -7), domain: s0 in [0, 1233]"


@given(maps(max_syms=2, max_rts=1, max_constraints=2))
def test_simplify_keeps_the_relation_on_random_maps(m) -> None:
    out = default_simplifier().simplify(m)
    assert out.relation() == m.relation(), (str(m), str(out))
    assert default_simplifier().simplify(out) == out, "simplify must be idempotent"


@given(reshape_like_maps())
def test_simplify_keeps_the_relation_on_reshape_like_maps(m) -> None:
    out = default_simplifier().simplify(m)
    assert out.relation() == m.relation(), (str(m), str(out))
    assert default_simplifier().simplify(out) == out, "simplify must be idempotent"


@given(maps(max_syms=2, max_rts=0, max_constraints=3), st.randoms())
def test_result_does_not_depend_on_constraint_order(m, rnd: random.Random) -> None:
    items = list(m.constraints.items())
    rnd.shuffle(items)
    shuffled = m.replace(constraints=dict(items))
    assert default_simplifier().simplify(shuffled) == default_simplifier().simplify(m)


@given(reshape_like_maps(), st.lists(st.integers(-5, 15), min_size=3, max_size=3))
def test_canonical_form_keeps_values(m, point) -> None:
    env = {Dim(0): point[0], Dim(1): point[1], Symbol(0): point[2]}
    for r in m.results:
        assert canon(r).evaluate(env) == r.evaluate(env)


@given(st.data())
def test_generated_instances_agree_with_substitution(data) -> None:
    """The engine builds right sides (and checks left sides) with code generated per pattern;
    on every rule's expressions it gives what substituting the bindings gives (`lo(x)` and
    `hi(x)` replaced by x's interval bounds)."""
    from verifidx.core.errors import EvaluationError
    from verifidx.core.expr import Const
    from verifidx.core.interval import Interval, range_of
    from verifidx.rules.model import Call, ConstVar, TermVar, rule_exprs
    from verifidx.simplifier.instantiate import _instantiate

    checked = 0
    for rule in default_simplifier().engine.rules:
        exprs = rule_exprs(rule)
        leaves = {n for e in exprs for n in e.walk()}
        terms = sorted((n for n in leaves if isinstance(n, TermVar)), key=str)
        env = {v: Dim(i) * data.draw(st.integers(-3, 3)) + data.draw(st.integers(-5, 5))
               for i, v in enumerate(terms)}
        env.update({c: Const(data.draw(st.integers(-9, 9))) for c in leaves
                    if isinstance(c, ConstVar)})
        boxes = {Dim(i): Interval(0, data.draw(st.integers(0, 9))) for i in range(len(terms))}

        def bound(e, boxes=boxes):
            return range_of(e, boxes)

        for pattern in exprs:
            calls = [n for n in pattern.walk() if isinstance(n, Call)]
            if any(c.fn not in ("lo", "hi") or c.args[0] not in env for c in calls):
                continue
            mapping = {**env, **{c: Const(getattr(bound(env[c.args[0]]), c.fn))
                                 for c in calls}}
            try:
                expected: object = pattern.substitute(mapping)
            except EvaluationError:
                expected = EvaluationError
            try:
                got: object = _instantiate(pattern, env, bound)
            except EvaluationError:
                got = EvaluationError
            assert got is expected or got == expected, (rule.name, str(pattern))
            checked += 1
    assert checked > 300


@given(st.data())
def test_condition_checks_agree_with_compiled_conditions(data) -> None:
    """The engine's hot path (`condition_check`: intervals only when reached) accepts a match
    exactly when the table-based `compiled_condition` does; an error counts as a rejection,
    as it does in the engine."""
    from verifidx.core.errors import EvaluationError
    from verifidx.core.expr import Const
    from verifidx.core.interval import Interval, range_of
    from verifidx.rules.model import ConstVar, TermVar, rule_exprs
    from verifidx.simplifier.instantiate import _NoValue
    from verifidx.simplifier.rule_engine import _condition_env, compiled_condition, condition_check

    for rule in default_simplifier().engine.rules:
        leaves = {n for e in rule_exprs(rule) for n in e.walk()}
        terms = sorted((n for n in leaves if isinstance(n, TermVar)), key=str)
        env = {v: Dim(i) for i, v in enumerate(terms)}
        env.update({c: Const(data.draw(st.integers(-20, 20))) for c in leaves
                    if isinstance(c, ConstVar)})
        boxes = {}
        for i in range(len(terms)):
            lo = data.draw(st.integers(-20, 20))
            boxes[Dim(i)] = Interval(lo, lo + data.draw(st.integers(0, 20)))

        def bound(e, boxes=boxes):
            return range_of(e, boxes)

        try:
            eager = compiled_condition(rule)(_condition_env(rule, env, bound))
        except (EvaluationError, _NoValue):
            eager = False
        try:
            fast = condition_check(rule)(env, bound)
        except (EvaluationError, _NoValue):
            fast = False
        assert fast == eager, rule.name


@given(st.data())
def test_compiled_conditions_agree_with_the_interpreter(data) -> None:
    """The simplifier evaluates rule conditions through generated code; same truth values and
    same errors as `evaluate_condition` on random values of constants and bounds."""
    from verifidx.core.errors import EvaluationError
    from verifidx.rules.model import ConstVar, evaluate_condition, rule_exprs
    from verifidx.simplifier.rule_engine import _rule_calls, compiled_condition

    for rule in default_simplifier().engine.rules:
        constants = {n for e in rule_exprs(rule) for n in e.walk() if isinstance(n, ConstVar)}
        keys = [*constants, *_rule_calls(rule)]
        values = {k: data.draw(st.integers(-20, 20)) for k in keys}
        try:
            expected: object = evaluate_condition(rule.condition, values)
        except EvaluationError:
            expected = EvaluationError
        try:
            got: object = compiled_condition(rule)(values)
        except EvaluationError:
            got = EvaluationError
        assert got == expected, rule.name

