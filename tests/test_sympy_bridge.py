"""The sympy bridge, operator by operator, against the independent evaluator of
tests/inductor_oracle.py on random points; to_sympy round trips; what is refused and how."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("sympy")

from inductor_oracle import evaluate  # noqa: E402

from verifidx.errors import ParseError, UnsupportedError  # noqa: E402
from verifidx.sympy_bridge import (  # noqa: E402
    count_divisions,
    evaluate_sympy,
    from_sympy,
    parse_text,
    to_sympy,
)

RANGES = {"x0": 37, "x1": 12, "x2": 5}

#: One case per operator (and the shapes Inductor prints), over nonnegative and signed terms.
CASES = [
    "FloorDiv(x0, 4)", "(x0//6)", "FloorDiv(x0 - 20, 3)", "FloorDiv(3*x1 - x0, -4)",
    "CleanDiv(4*x1, 2)", "CeilDiv(x0, 8)", "CeilDiv(x0 - 17, 5)",
    "ModularIndexing(x0, 1, 8)", "ModularIndexing(x0 + 37*x1, 4, 6)",
    "(ModularIndexing(x0, 3, 5))", "PythonMod(x0 - 18, 7)", "PythonMod(x0, 16)",
    "Mod(x0 + x2, 3)", "x0 % 5", "(x0 - 9) % 4", "x0 // 3 + x1 // 2",
    "Identity(x0 + 1)", "(x0 + 2*x1)", "floor(x0/16)", "floor(x0/6 + x1/4)",
    "ceiling(x0/6)", "ceiling((x0 - 20)/7)", "Min(x0, 5)", "Min(x0, x1, 7)",
    "Max(x0 - 10, 0)", "Max(x0, 2*x1, x2 + 30)", "x1**2 + x0*x2", "-x0 + 3*x1 - 2",
    "16*FloorDiv(x0, 16) + ModularIndexing(x0, 1, 16)",
    "ModularIndexing(FloorDiv(x0, 2) + 5*x1, 3, 4) + Min(Max(x0, x1), 20)",
]


def _points(rng: random.Random, n: int) -> list[dict[str, int]]:
    return [{v: rng.randrange(e) for v, e in RANGES.items()} for _ in range(n)]


@pytest.mark.parametrize("text", CASES)
def test_reading_agrees_with_integer_evaluation(text: str) -> None:
    m = from_sympy(parse_text(text, set(RANGES)), RANGES)
    rng = random.Random(text)
    for point in _points(rng, 200):
        want = evaluate(text, point)
        assert m.evaluate([point[v] for v in RANGES]) == (want,), (text, point)


@pytest.mark.parametrize("text", CASES)
def test_to_sympy_writes_the_same_function(text: str) -> None:
    m = from_sympy(parse_text(text, set(RANGES)), RANGES)
    for e in (m, m.simplify()):
        back = str(to_sympy(e))
        rng = random.Random(back)
        for point in _points(rng, 100):
            assert evaluate(back, point) == evaluate(text, point), (text, back, point)


@pytest.mark.parametrize("text", CASES)
def test_counterexample_evaluator_agrees(text: str) -> None:
    expr = parse_text(text, set(RANGES))
    for point in _points(random.Random(1), 50):
        assert evaluate_sympy(expr, point) == evaluate(text, point)


def test_sympy_objects_read_directly() -> None:
    import sympy

    x0, x1 = sympy.symbols("x0 x1", integer=True, nonnegative=True)
    e = sympy.floor(x0 / 8) + sympy.Mod(x1, 3) + sympy.Min(x0, x1) + x0 // 5
    m = from_sympy(e, {x0: 40, x1: sympy.Integer(9)})
    for a in range(40):
        for b in range(9):
            assert m.evaluate([a, b]) == (a // 8 + b % 3 + min(a, b) + a // 5,)
    assert [v.name for v in m.dims] == ["x0", "x1"]
    assert [(v.bounds.lo, v.bounds.hi) for v in m.dims] == [(0, 39), (0, 8)]


def test_division_count() -> None:
    m = from_sympy(parse_text("ModularIndexing(x0, 4, 8) + FloorDiv(x1, 2) + x2", set(RANGES)),
                   RANGES)
    assert count_divisions(m.results[0]) == 3


@pytest.mark.parametrize("text, why", [
    ("ModularIndexing(x0 - 3, 1, 4)", "may be negative"),  # C's % and Python's differ there
    ("Mod(x0 - 40, 3)", "may be negative"),
    ("FloorDiv(x0, x1)", "not an integer constant"),
    ("PythonMod(x0, -3)", "not positive"),
    ("ModularIndexing(x0, -2, 3)", "not positive"),  # x0 // -2 <= 0: C's % would differ
    ("x0/2", "non-integer"),
    ("IntTrueDiv(x0, 2)", "no counterpart"),
    ("FloorDiv(x0, 0)", "nonzero"),
    ("x0**x1", "natural number"),
])
def test_unsupported_names_the_subterm(text: str, why: str) -> None:
    with pytest.raises(UnsupportedError, match=why):
        from_sympy(parse_text(text, set(RANGES)), RANGES)


def test_size_symbols_are_not_yet_supported() -> None:
    sizes = {"s0": ("2", "int_oo"), "s1": ("1", "64")}
    with pytest.raises(UnsupportedError, match=r"size symbols not yet supported: s0\*x1"):
        from_sympy(parse_text("x0 + s0*x1", {"x0", "x1", "s0"}), RANGES, sizes)
    with pytest.raises(UnsupportedError, match=r"size symbols not yet supported: .*FloorDiv"):
        from_sympy(parse_text("FloorDiv(x0, s1)", {"x0", "s1"}), {"x0": 8}, sizes)
    with pytest.raises(UnsupportedError, match="size symbols not yet supported: s0"):
        from_sympy(parse_text("x0", {"x0"}), {"x0": "s0"}, sizes)


@pytest.mark.parametrize("text, column, what", [
    ("x0 +* 3", 5, "expected an integer"),
    ("Foo(x0)", 1, "unknown function Foo"),
    ("x0 + y", 6, "symbol y has no range"),
    ("ModularIndexing(x0, 2)", 1, "takes 3 arguments"),
    ("(x0 + 1", 8, r"expected '\)'"),
    ("x0 $ 2", 4, "expected an integer, a name"),
    ("x0 + int_oo", 6, "a finite term"),
])
def test_bad_text_has_a_column(text: str, column: int, what: str) -> None:
    with pytest.raises(ParseError, match=what) as err:
        parse_text(text, set(RANGES), "log.jsonl", 7)
    assert (err.value.line, err.value.column) == (7, column)


def test_text_is_never_evaluated_as_python() -> None:
    with pytest.raises(ParseError):
        parse_text("__import__('os').system('true')", set(RANGES))
