"""The termination check: a documented reduction order, markers, and the rule base."""

from __future__ import annotations

import pytest

from verifidx.rules import load_rule_base, parse_rules
from verifidx.rules.order import classify


def order(text: str) -> str:
    rule = parse_rules(text if text.startswith("rule") else "rule r: " + text)[0]
    return classify(rule).verdict


@pytest.mark.parametrize("text", [
    "x mod c0 => x",                                      # fewer divisions
    "c0 + c1 => c0 + c1",                                 # the right side is computed
    "(x * c0 + y) floordiv c1 => x * (c0 floordiv c1) + y floordiv c1",  # division depth
    "x * c0 + x * c1 => x * (c0 + c1)",                   # weight
    "x + x => x * 2",                                     # a sum weighs more than a product
    "c0 * x => x * c0",                                   # constants to the right
    "x mod c0 => x - (lo(x) floordiv c0) * c0",           # lo(x) is a constant at the match
    "e floordiv c0 in [c1, c2] => e in [c1 * c0, c2 * c0 + c0 - 1]",
    "rule r [ordered]: x + y => y + x",                   # permutative, ordered rewriting
])
def test_reducing(text: str) -> None:
    assert order(text) == "reducing"


@pytest.mark.parametrize("text", [
    "x + y => y + x",                                     # permutative without [ordered]
    "x * c0 => c0 * x",                                   # constants to the left
    "x mod c0 => x - (x floordiv c0) * c0",               # duplicates x
    "x * 2 => x + x",
    "(x + y) * c0 => x * c0 + y * c0",                    # an expansion, unmarked
    "x floordiv c0 + y => (x + y * c0) floordiv c0",      # moves y under a division
    "rule r [ordered]: x * 1 => x * 1 + 0",               # [ordered] but growing
    "rule r [expand]: x * c0 => x * c0 + x * 0",          # [expand] but cannot terminate
])
def test_violates(text: str) -> None:
    assert order(text) == "violates"


def test_expansion_phase_rules_are_checked_by_interpretation() -> None:
    assert order("rule d [expand]: (x + y) * c0 => x * c0 + y * c0") == "expansion"
    assert order("rule d [expand]: (x + y) * z => x * z + y * z") == "expansion"
    assert order("rule d [expand]: x mod c0 => x - (x floordiv c0) * c0") == "violates"
    # ... unless the engine only tries it and keeps the outcome when it is smaller
    rule = parse_rules("rule d [trial]: x mod c0 => x - (x floordiv c0) * c0")[0]
    assert rule.expansion and rule.trial and classify(rule).verdict == "expansion"


def test_reasons_are_given() -> None:
    r = parse_rules("rule r: x * 2 => x + x")[0]
    res = classify(r)
    assert res.verdict == "violates" and "more" in res.reason
    assert "more often" in classify(parse_rules("rule r: x mod c0 => x - x floordiv c0 * c0")[0]
                                    ).reason


def test_every_rule_of_the_rule_base_is_reducing_or_a_checked_expansion() -> None:
    for rule in load_rule_base():
        got = classify(rule)
        assert got.verdict in ("reducing", "expansion"), (rule.name, got.reason)
        assert (got.verdict == "expansion") == (rule.expansion and got.verdict != "reducing")
