"""Issue 11: floordiv and mod of sums reach isl's forms, with proven rules only.

Oracles: isl's results for the five examples of the issue (written out, as isl prints them),
brute-force enumeration of the relation for the generated families, and the arithmetic of
quotient and remainder for the matcher's `[split]` proposals."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifidx import parse_expr, parse_map
from verifidx.core.canonical import canon
from verifidx.rules.matcher import match
from verifidx.rules.parser import parse_rules
from verifidx.simplifier.engine import default_simplifier
from verifidx.simplifier.maps import Simplifier
from verifidx.simplifier.rule_engine import RuleEngine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from families import FAMILIES, digits  # noqa: E402

ISSUE_EXAMPLES = [
    ("(d0, d1) -> ((d0 * 97 + d1) floordiv 32), domain: d0 in [0, 7], d1 in [0, 20]",
     "(d0, d1) -> (d0 * 3), domain: d0 in [0, 7], d1 in [0, 20]"),
    ("(d0) -> ((d0 floordiv 8) * 8 + ((d0 mod 8) floordiv 2) * 2 + (d0 mod 8) mod 2), "
     "domain: d0 in [0, 63]",
     "(d0) -> (d0), domain: d0 in [0, 63]"),
    ("(d0, d1) -> (-((d0 * -65 - d1 * 3 + 850) floordiv 64)), domain: d0 in [0, 5], d1 in [0, 3]",
     "(d0, d1) -> (d0 - 13), domain: d0 in [0, 5], d1 in [0, 3]"),
    ("(d0, d1) -> ((d0 * 33 + d1 * 2 + 5) mod 32), domain: d0 in [0, 3], d1 in [0, 4]",
     "(d0, d1) -> (d1 * 2 + d0 + 5), domain: d0 in [0, 3], d1 in [0, 4]"),
    ("(d0, d1, d2) -> ((d0 * 130 + d1 * 64 + d2) floordiv 64, (d0 * 130 + d1 * 64 + d2) mod 64),"
     " domain: d0 in [0, 3], d1 in [0, 1], d2 in [0, 55]",
     "(d0, d1, d2) -> (d0 * 2 + d1, d0 * 2 + d2), domain: d0 in [0, 3], d1 in [0, 1], "
     "d2 in [0, 55]"),
]


@pytest.mark.parametrize("text,isl_form", ISSUE_EXAMPLES)
def test_issue_examples_reach_isl(text: str, isl_form: str) -> None:
    m = parse_map(text)
    out = m.simplify()
    assert str(out) == isl_form
    assert out.relation() == m.relation()


def _split_bindings(dividend: str, k: int) -> list[dict[str, int | str]]:
    rule = parse_rules("rule t [split]: (x * c0 + y) floordiv c0 => x\n  if c0 > 0\n")[0]
    lhs = rule.lhs
    e = canon(parse_expr(f"({dividend}) floordiv {k}"))
    return [{str(v): str(b[v]) for v in b} for b in match(lhs, e, split=True)]  # type: ignore


def test_split_proposals_are_exact_quotient_remainder_pairs() -> None:
    found = _split_bindings("d0 * 97 + d1 * -3 + 5", 32)
    xs = {b["x"] for b in found}
    # 97 = 3 * 32 + 1 = 4 * 32 - 31 and -3 = 0 * 32 - 3 = -1 * 32 + 29: the balanced split
    # (remainders 1 and -3), then one term rounded the other way at a time
    assert [b["x"] for b in found[:1]] == ["d0 * 3"]
    assert xs == {"d0 * 3", "d0 * 4", "d0 * 3 - d1"}
    d0, d1 = parse_expr("d0"), parse_expr("d1")
    for b in found:
        x, y = parse_expr(str(b["x"])), parse_expr(str(b["y"]))
        for v0 in range(-3, 4):
            for v1 in range(-3, 4):
                env = {d0: v0, d1: v1}
                assert x.evaluate(env) * 32 + y.evaluate(env) == 97 * v0 - 3 * v1 + 5


def test_split_is_only_proposed_for_marked_rules_and_matching_divisors() -> None:
    rule = parse_rules("rule t: (x * c0 + y) floordiv c0 => x\n  if c0 > 0\n")[0]
    e = canon(parse_expr("(d0 * 97 + d1) floordiv 32"))
    assert list(match(rule.lhs, e)) == []  # type: ignore[arg-type]
    mod_rule = parse_rules("rule t [split]: (x * c0 + y) mod c0 => y\n  if c0 > 0\n")[0]
    assert list(match(mod_rule.lhs, e, split=True)) == []  # type: ignore[arg-type]


def test_bucket_rule_needs_one_bucket() -> None:
    # 63 d0 + 61 d1 + 18 spans several buckets of 64 whichever way the coefficients round,
    # except the split that leaves -d0 - 3 d1 + 850: one bucket only for the right bounds.
    narrow = parse_map("(d0, d1) -> ((d0 * -65 - d1 * 3 + 850) floordiv 64), "
                       "domain: d0 in [0, 5], d1 in [0, 3]")
    wide = parse_map("(d0, d1) -> ((d0 * -65 - d1 * 3 + 850) floordiv 64), "
                     "domain: d0 in [0, 5], d1 in [0, 30]")
    assert str(narrow.simplify().results[0]) == "-d0 + 13"
    assert "floordiv" in str(wide.simplify().results[0])
    assert wide.simplify().relation() == wide.relation()


def _without_root_first() -> Simplifier:
    """The same rules, with the search over alternatives switched off."""
    engine = RuleEngine(default_simplifier().engine.rules)
    simp = Simplifier(engine)
    simp.root_first = False
    return simp


@pytest.mark.parametrize("levels", [2, 3, 4])
def test_digit_decompositions_recombine(levels: int) -> None:
    rnd = random.Random(levels)
    reached = reached_without = total = 0
    plain = _without_root_first()
    while total < 40:
        text = digits(rnd)
        if text.count("* ") + 1 < levels:
            continue
        m = parse_map(text)
        out = m.simplify()
        assert out.relation() == m.relation()
        total += 1
        reached += "floordiv" not in str(out) and "mod" not in str(out)
        reached_without += not any(w in str(plain.simplify(m)) for w in ("floordiv", "mod"))
    assert reached == total
    assert reached_without <= reached


def test_local_minimum_needs_root_first() -> None:
    # A generated 4-level decomposition of x = 8 * d0 + d1: simplifying the summands first
    # turns `x mod 12`-style digits into `d1 mod 4` and `(d0 mod 12) ...`, which no rule at the
    # sum can recombine; trying the sum root first reaches x.
    text = ("(d0, d1) -> ((((d0 * 8 + d1) mod 96) floordiv 12) * 12 + (((d0 * 8 + d1) mod 768) "
            "floordiv 96) * 96 + (((d0 * 8 + d1) mod 12) floordiv 4) * 4 + (((d0 * 8 + d1) "
            "floordiv 1) mod 4)), domain: d0 in [0, 95], d1 in [0, 7]")
    m = parse_map(text)
    assert "mod" in str(_without_root_first().simplify(m))
    assert str(default_simplifier().simplify(m)) == (
        "(d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 95], d1 in [0, 7]")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(FAMILIES)), st.randoms(use_true_random=False))
def test_families_sound_and_idempotent(family: str, rnd: random.Random) -> None:
    m = parse_map(FAMILIES[family](rnd))
    out = m.simplify()
    assert out.relation() == m.relation()
    assert out.simplify() == out


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False))
def test_constraint_order_does_not_matter(rnd: random.Random) -> None:
    text = FAMILIES["quasi-affine sums"](rnd)
    head, _, domain = text.partition(", domain: ")
    items = re.split(r"(?<=\]), ", domain)
    shuffled = items[:]
    rnd.shuffle(shuffled)
    a = parse_map(text).simplify()
    b = parse_map(f"{head}, domain: {', '.join(shuffled)}").simplify()
    assert a == b


def test_rule_file_order_does_not_matter() -> None:
    rules = default_simplifier().engine.rules
    forward, backward = Simplifier(RuleEngine(rules)), Simplifier(RuleEngine(rules[::-1]))
    rnd = random.Random(7)
    for family, gen in FAMILIES.items():
        for _ in range(25):
            m = parse_map(gen(rnd))
            a, b = forward.simplify(m), backward.simplify(m)
            assert a.relation() == b.relation() == m.relation(), family
            div = ("floordiv", "mod")
            assert sum(str(a).count(w) for w in div) == sum(str(b).count(w) for w in div), (
                family, str(a), str(b))


def test_rule_base_size_and_bounded_share() -> None:
    """Issue 11: at least 150 rules with current proofs, at most 15% of them bounded."""
    rules = default_simplifier().engine.rules
    bounded = [r.name for r in rules if r.max_constant is not None]
    assert len(rules) >= 150
    assert len(bounded) <= 0.15 * len(rules), bounded
