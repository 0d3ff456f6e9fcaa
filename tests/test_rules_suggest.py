"""`--suggest`: the weakest side condition of a small family that repairs a refuted rule."""

from __future__ import annotations

from verifidx.rules import parse_rule
from verifidx.rules.suggest import candidates, suggest


def test_a_missing_divisibility_and_sign_is_found() -> None:
    s = suggest(parse_rule("(x * c0 + y) floordiv c1 => x * (c0 floordiv c1) + y floordiv c1"))
    assert s.conditions == ["c1 > 0 and c0 mod c1 == 0"]


def test_an_off_by_one_bound_is_repaired_by_the_weakest_bound() -> None:
    s = suggest(parse_rule("x mod c0 => x if lo(x) >= 0 and hi(x) <= c0"))
    assert s.conditions == ["hi(x) < c0"]
    assert "weakest side condition found: if hi(x) < c0" in s.text


def test_a_missing_lower_bound() -> None:
    s = suggest(parse_rule("x floordiv c0 => 0 if c0 > 0 and hi(x) < c0"))
    assert s.conditions == ["lo(x) >= 0"]


def test_contradictions_do_not_count_and_hopeless_rules_say_so() -> None:
    s = suggest(parse_rule("x + 1 => x"))
    assert s.conditions == []
    assert s.text.startswith("no side condition among the")
    # `c0 < 0` would contradict `c0 > 0` and so prove anything: it is never suggested
    s = suggest(parse_rule("x * c0 => x * 2 if c0 > 0"))
    assert all("c0 < 0" not in c for c in s.conditions)


def test_the_family() -> None:
    got = candidates(parse_rule("(x mod c0) mod c1 => x mod c1"))
    assert "c0 > 0" in got and "c1 > 0 and c0 mod c1 == 0" in got
    assert "lo(x) >= 0" in got and "hi(x) < c1" in got
