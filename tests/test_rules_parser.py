"""Rule files: the baseline syntax, raw (unfolded) patterns, and errors with file:line:col."""

from __future__ import annotations

import pytest

from verifidx import ParseError
from verifidx.core.expr import Add, Const, FloorDiv, Mod, Mul
from verifidx.core.syntax import print_expr
from verifidx.rules import load_rule_base, parse_rule, parse_rules
from verifidx.rules.model import BoolOp, Call, Compare, ConstVar, Membership, Not, TermVar, Truth
from verifidx.rules.parser import parse_condition

ISSUE_EXAMPLE = """\
# comment
rule mod_noop: x mod c0 => x
  if c0 > 0 and lo(x) >= 0 and hi(x) < c0
rule div_split: (x * c0 + y) floordiv c1 => x * (c0 floordiv c1) + y floordiv c1
  if c1 > 0 and c0 mod c1 == 0
rule cons_shift: e + c0 in [c1, c2] => e in [c1 - c0, c2 - c0]
"""


def test_the_issue_example_parses_to_the_model() -> None:
    mod_noop, div_split, cons_shift = parse_rules(ISSUE_EXAMPLE, "mod.rules")
    x, c0 = TermVar("x"), ConstVar("c0")
    assert mod_noop.name == "mod_noop" and mod_noop.kind == "expr"
    assert (mod_noop.file, mod_noop.line) == ("mod.rules", 2)
    assert mod_noop.lhs is Mod(x, c0) and mod_noop.rhs is x
    assert mod_noop.condition == BoolOp("and", (
        Compare(">", c0, Const(0)), Compare(">=", Call("lo", [x]), Const(0)),
        Compare("<", Call("hi", [x]), c0)))
    assert div_split.line == 4
    assert print_expr(div_split.rhs) == "x * (c0 floordiv c1) + y floordiv c1"
    assert cons_shift.kind == "constraint"
    assert isinstance(cons_shift.lhs, Membership) and isinstance(cons_shift.rhs, Membership)
    assert cons_shift.condition == Truth(True)


def test_patterns_are_not_folded() -> None:
    r = parse_rule("x + 0 => x")
    assert isinstance(r.lhs, Add) and r.lhs.terms == (TermVar("x"), Const(0))
    assert parse_rule("x * 1 => x").lhs is Mul(TermVar("x"), Const(1))
    assert parse_rule("c0 floordiv 1 => c0").lhs is FloorDiv(ConstVar("c0"), Const(1))
    # a written subtraction of a literal is the constant -1, as in folded expressions
    assert parse_rule("x - 1 + 1 => x").lhs is Add([TermVar("x"), Const(-1), Const(1)])
    # sums are n-ary: both groupings are the same tree
    assert parse_rule("(x + y) + z => x").lhs is parse_rule("x + (y + z) => x").lhs


def test_normalized_text_ignores_layout_and_comments() -> None:
    a = parse_rules("rule r: x mod c0 => x   # why\n   if c0 > 0 and lo(x) >= 0\n")[0]
    b = parse_rules("rule r:   x mod c0 => x\nif c0 > 0   and lo(x) >= 0")[0]
    assert a.normalized_text == b.normalized_text == \
        "rule r: x mod c0 => x if c0 > 0 and lo(x) >= 0"


def test_several_if_lines_are_joined_by_and() -> None:
    r = parse_rules("rule r: x mod c0 => x\n if c0 > 0\n if lo(x) >= 0 and hi(x) < c0\n")[0]
    assert isinstance(r.condition, BoolOp) and r.condition.op == "and"
    assert len(r.condition.args) == 3


def test_condition_grammar() -> None:
    c = parse_condition("not (c0 > 0 or c1 > 0) and (c0 + 1) * 2 >= gcd(c0, c1)")
    assert isinstance(c, BoolOp) and c.op == "and"
    assert isinstance(c.args[0], Not) and isinstance(c.args[0].arg, BoolOp)
    assert c.args[0].arg.op == "or"
    assert isinstance(c.args[1], Compare) and c.args[1].op == ">="
    chain = parse_condition("0 <= c0 < c1")
    assert chain == BoolOp("and", (Compare("<=", Const(0), ConstVar("c0")),
                                   Compare("<", ConstVar("c0"), ConstVar("c1"))))
    assert parse_condition("true") == Truth(True)
    assert isinstance(parse_condition("abs(c0) == lcm(c0, 1)"), Compare)
    assert isinstance(parse_condition("min(c0, c1) != max(c0, c1)"), Compare)


def test_markers() -> None:
    r = parse_rules("rule d [expand]: (x + y) * c0 => x * c0 + y * c0\n"
                    "rule c [ordered]: x + y => y + x\n"
                    "rule both [expand, ordered]: x + y => y + x")
    assert [(x.expansion, x.ordered) for x in r] == [(True, False), (False, True),
                                                     (True, True)]


def test_right_sides_compute_with_constants_and_bounds() -> None:
    r = parse_rule("x floordiv c0 => lo(x) floordiv c0 if c0 > 0")
    assert r.rhs is FloorDiv(Call("lo", [TermVar("x")]), ConstVar("c0"))
    r = parse_rule("(x * c0) floordiv c1 => x floordiv (c1 floordiv gcd(c0, c1)) if c1 > 0")
    assert any(isinstance(n, Call) and n.fn == "gcd" for n in r.rhs.walk())  # type: ignore[union-attr]


BAD = [
    ("rule a: x => x", 1, 9, "left side must be an operation"),
    ("rule a: x mod c0 => y", 1, 21, "'y' does not occur on the left side"),
    ("rule a: x mod c0 => x\n  if z > 0", 2, 6, "'z' does not occur on the left side"),
    ("rule a: x mod c0 => x\n  if x > 0", 2, 6, "only through lo() and hi()"),
    ("rule a: lo(x) + 1 => x", 1, 9, "not patterns"),
    ("rule a: x mod c0 => x if c0 = 0", 1, 29, "unexpected character '='"),
    ("rule a: x + y in [c0, c1] => x", 1, 30, "both sides must be"),
    ("rule a: x mod c0 => x\nrule a: x + 0 => x", 2, 6, "already defined on line 1"),
    ("rule a [bogus]: x + 0 => x", 1, 9, "expected a marker"),
    ("rule a: x + 0 => x if foo(x) > 0", 1, 23, "unknown function 'foo'"),
    ("rule a: x + 0 => X", 1, 18, "term variables are lower-case"),
    ("rule a: x + c0 in [c1 + 1, c2] => x in [c1, c2]", 1, 9, "must be constants"),
    ("rule a: x + c0 in [c1, c2] => x in [c1, c2 + x]", 1, 31, "constants, lo() and hi()"),
    ("rule a: x + 0 => x if c0 > ", 1, 28, "expected an expression, found end of input"),
    ("rule a: x + 0 => x if", 1, 22, "expected an expression"),
    ("rule a: x + 0 => x x", 1, 20, "expected 'if', the next 'rule'"),
    ("rule a: x + 0 => x\n\n  if (lo(x) > 0", 3, 16, "expected ')'"),
    ("rule if: x + 0 => x", 1, 6, "expected the rule's name"),
    ("x + 0 => x", 1, 1, "expected 'rule'"),
    ("rule a: x + in => x", 1, 13, "keyword 'in'"),
    ("rule a: gcd(c0, c1) + x => x", 1, 9, "not patterns"),
    ("rule a: min(x, y, x) => x", 1, 9, "min takes two operands"),
    ("rule a: x + 0 => x if lo(x, x) > 0", 1, 23, "lo takes 1 operand"),
    # divisors are constants (docs/semantics.md): Halide #4689's `x / x => 1` cannot be written
    ("rule b_div_self: x floordiv x => 1", 1, 29, "as the divisor of floordiv, found 'x'"),
    ("rule a: x mod (y + 1) => x", 1, 15, "as the divisor of mod"),
    ("rule a: c0 floordiv x => 0", 1, 21, "as the divisor of floordiv"),
    ("rule a: x mod 0 => x", 1, 15, "expected a positive integer constant or a constant of"),
]


@pytest.mark.parametrize(("text", "line", "col", "message"), BAD)
def test_errors_name_file_line_and_column(text: str, line: int, col: int, message: str
                                          ) -> None:
    with pytest.raises(ParseError) as info:
        parse_rules(text, "bad.rules")
    err = info.value
    assert message in err.message
    assert (err.source, err.line, err.column) == ("bad.rules", line, col), str(err)
    assert str(err).startswith(f"bad.rules:{line}:{col}: ")


def test_the_rule_base_parses_with_unique_names() -> None:
    rules = load_rule_base()
    assert len(rules) >= 25
    assert len({r.name for r in rules}) == len(rules)
    files = {r.file.replace("\\", "/").rsplit("/", 1)[-1] for r in rules}
    assert files == {"canonical.rules", "ceildiv.rules", "constraints.rules", "floordiv.rules",
                     "minmax.rules",
                     "mod.rules", "mul.rules", "sum.rules"}


def test_duplicate_names_across_files_are_rejected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.rules").write_text("rule r: x + 0 => x\n")
    (tmp_path / "b.rules").write_text("\nrule r: x * 1 => x\n")
    with pytest.raises(ParseError, match=r"already defined in .*a\.rules:1") as info:
        load_rule_base([tmp_path])
    assert info.value.line == 2
