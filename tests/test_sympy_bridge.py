"""The sympy bridge, operator by operator, against the independent evaluator of
tests/inductor_oracle.py on random points; to_sympy round trips; what is refused and how."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("sympy")

from inductor_oracle import evaluate  # noqa: E402

from verifidx.clients.sympy_bridge import (  # noqa: E402
    count_divisions,
    evaluate_sympy,
    from_sympy,
    parse_text,
    size_interval,
    size_name,
    symbol_name,
    to_sympy,
)
from verifidx.core.errors import ParseError, UnsupportedError  # noqa: E402
from verifidx.core.expr import is_size_name  # noqa: E402
from verifidx.core.indexing_map import SIZE_MAX, IndexingMap  # noqa: E402
from verifidx.simplifier.equality import equal  # noqa: E402

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
    ("FloorDiv(x0, x1)", "neither an integer constant nor a size expression"),
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


# -- size symbols --------------------------------------------------------------------------------

SIZES = {"s0": ("2", "int_oo"), "s53": ("3", "40"), "ps0": ("1", "9")}
SIZED_RANGES = {"x0": "s0", "x1": "4", "x2": "s0*s53"}
KNOWN = set(SIZED_RANGES) | set(SIZES)


@pytest.mark.parametrize("name, size", [("s0", "s0_"), ("s53", "s53_"), ("d3", "d3_"),
                                        ("rt1", "rt1_"), ("ps0", "ps0"), ("u7", "u7"),
                                        ("N", "N"), ("n_", "n__"), ("in", "in_"),
                                        ("domain", "domain_")])
def test_size_names_are_legal_and_map_back(name: str, size: str) -> None:
    assert size_name(name) == size
    assert is_size_name(size_name(name))
    assert symbol_name(size_name(name)) == name


@given(st.lists(st.from_regex(r"[A-Za-z_][A-Za-z_0-9]{0,5}", fullmatch=True), min_size=2,
                max_size=6, unique=True))
def test_size_names_are_a_bijection(names: list[str]) -> None:
    sized = [size_name(n) for n in names]
    assert len(set(sized)) == len(names)
    assert all(is_size_name(z) for z in sized)
    assert [symbol_name(z) for z in sized] == names


def _sized_text(draw: st.DrawFn, depth: int = 0) -> str:
    """A random Inductor-style term over loop variables x0 < s0, x1 < 4, x2 < s0*s53: linear in
    the loop variables with size-monomial coefficients, divisions and moduli by constants or
    by sizes (positive at every size), Min/Max, and size expressions such as (s0//2)."""
    size = draw(st.sampled_from(["s0", "s53", "ps0", "(s0//2) + 1", "s0*s53", "(s53 - 2)"]))
    leaf = draw(st.sampled_from(["x0", "x1", "x2", "3", "s0", "s53*x1", "s0*x0 + x1",
                                 "2*ps0*x1", "x0 + s0*x1"]))
    if depth >= 2:
        return leaf
    a = _sized_text(draw, depth + 1)
    b = _sized_text(draw, depth + 1)
    form = draw(st.sampled_from(["leaf", "sum", "scaled", "floordiv", "mod", "modidx",
                                 "min", "ceil", "pymod"]))
    k = draw(st.integers(1, 5))
    return {"leaf": leaf, "sum": f"{a} + {b}", "scaled": f"{k}*{size}*({a})",
            "floordiv": f"FloorDiv({a}, {size})",
            "mod": f"ModularIndexing({a}, {size}, {k})" if "-" not in a else f"({a})//{k}",
            "modidx": f"ModularIndexing({a}, {k}, {size})" if "-" not in a else a,
            "min": f"Min({a}, {b} + {size})", "ceil": f"CeilDiv({a}, {size})",
            "pymod": f"PythonMod({a} - {size}, {size})"}[form]


@st.composite
def sized_cases(draw: st.DrawFn) -> tuple[str, dict[str, int], list[dict[str, int]]]:
    text = _sized_text(draw)
    sizes = {"s0": draw(st.integers(2, 9)), "s53": draw(st.integers(3, 40)),
             "ps0": draw(st.integers(1, 9))}
    points = []
    for _ in range(5):
        point = dict(sizes)
        point.update({"x0": draw(st.integers(0, sizes["s0"] - 1)),
                      "x1": draw(st.integers(0, 3)),
                      "x2": draw(st.integers(0, sizes["s0"] * sizes["s53"] - 1))})
        points.append(point)
    return text, sizes, points


def _sympy_term(text: str) -> Any:
    """The text as sympy's own arithmetic (floor, Mod, Min, Max: every dividend of a modulus
    here is nonnegative, where C's and Python's % agree), evaluated by `subs`: a second
    oracle, independent of the parser and of the map."""
    import sympy

    def floor_div(a: Any, b: Any) -> Any:
        return sympy.floor(a / b)

    names = {"FloorDiv": floor_div, "CeilDiv": lambda a, b: sympy.ceiling(a / b),
             "ModularIndexing": lambda x, d, m: sympy.Mod(floor_div(x, d), m),
             "PythonMod": sympy.Mod, "Min": sympy.Min, "Max": sympy.Max}
    names.update({n: sympy.Symbol(n) for n in KNOWN})
    # `(s0//2)` and `(a)//k`, as the generator writes them, spelled as calls for sympify
    text = re.sub(r"\(([^()]*)\)//([0-9]+)", r"FloorDiv(\1, \2)", text)
    return sympy.sympify(re.sub(r"\(([^()]*)//([0-9]+)\)", r"FloorDiv(\1, \2)", text),
                         locals=names)


@given(sized_cases())
def test_sized_reading_agrees_with_integer_evaluation(
        case: tuple[str, dict[str, int], list[dict[str, int]]]) -> None:
    """Random size-symbol expressions at random sizes and points: the map, and to_sympy's text
    of it, against the independent evaluator (Python integers on the text)."""
    text, sizes, points = case
    m = from_sympy(parse_text(text, KNOWN), SIZED_RANGES, SIZES)
    back = str(to_sympy(m))
    named = {symbol_name(z.name): z.name for z in m.sizes}
    by_sympy = _sympy_term(text)
    for point in points:
        want = evaluate(text, point)
        assert by_sympy.subs(point) == want, (text, point)  # sympy's own arithmetic agrees
        at = {named[k]: v for k, v in sizes.items() if k in named}
        assert m.evaluate([point[v] for v in SIZED_RANGES], sizes=at) == (want,), (text, point)
        assert m.constraints_satisfied([point[v] for v in SIZED_RANGES], sizes=at)
        assert evaluate(back, point) == want, (text, back, point)


@pytest.mark.parametrize("text", [
    "x0 + s0*x1 + s0*s53*x2", "ModularIndexing(x0 + s0*x1, 1, s0)",
    "FloorDiv(x0 + s0*x1, s0)", "ModularIndexing(x2, s0, s53) + ModularIndexing(x2, 1, s0)",
    "4*x1*(((s53 - 1)//2)) + x0", "Min(x0, (s0//2))",
])
def test_sized_simplification_is_the_same_function(text: str) -> None:
    m = from_sympy(parse_text(text, KNOWN), SIZED_RANGES, SIZES)
    simple = m.simplify()
    back = str(to_sympy(simple))
    rng = random.Random(text)
    for _ in range(200):
        point = {"s0": rng.randint(2, 30), "s53": rng.randint(3, 40), "ps0": rng.randint(1, 9)}
        point.update(x0=rng.randrange(point["s0"]), x1=rng.randrange(4),
                     x2=rng.randrange(point["s0"] * point["s53"]))
        assert evaluate(back, point) == evaluate(text, point), (text, back, point)


def test_sized_extents_are_constraints() -> None:
    m = from_sympy(parse_text("x2", KNOWN), SIZED_RANGES, SIZES)
    assert [z.name for z in m.sizes] == ["s0_", "s53_"]  # those used (here by the extents)
    assert [(z.bounds.lo, z.bounds.hi) for z in m.sizes] == [(1 + 1, SIZE_MAX), (3, 40)]
    assert m.dims[2].bounds.hi == SIZE_MAX * 40 - 1
    for s0, s53, x2, inside in [(2, 3, 5, True), (2, 3, 6, False), (7, 40, 279, True)]:
        assert m.constraints_satisfied([0, 0, x2], sizes={"s0_": s0, "s53_": s53}) is inside
    assert str(to_sympy(m, sizes={})) == "x2"
    declared = from_sympy(parse_text("x1", KNOWN), {"x1": 4}, SIZES, declare=["ps0"])
    assert [z.name for z in declared.sizes] == ["ps0"]


def test_to_sympy_uses_the_size_symbols_given() -> None:
    import sympy

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    m = from_sympy(parse_text("x0 + s0*x1", KNOWN), SIZED_RANGES, SIZES)
    out = to_sympy(m, sizes={"s0": s0})
    assert s0 in out.free_symbols
    assert equal(from_sympy(out, SIZED_RANGES, SIZES), m).holds is True


@pytest.mark.parametrize("text, ranges, why", [
    ("x0 + indirect0*s0", {"indirect0": ("0", "int_oo")},
     r"indirect index symbols not yet supported: indirect0\*s0"),
    ("x0 + tmp4", {"tmp4": ("0", "int_oo")}, "indirect index symbols not yet supported: "),
    ("FloorDiv(x0, s53 - 3)", {}, r"may be 0 or negative at some sizes.*FloorDiv\(x0, s53 - 3\)"),
    ("ModularIndexing(x0, 1, u0)", {"u0": ("0", "int_oo")}, "the size u0 may be 0"),
    ("s0*x0*x1", {}, "product of loop variables beside size symbols"),
    ("FloorDiv(x0, x1 + s0)", {}, "neither an integer constant nor a size expression"),
])
def test_sized_unsupported_names_the_subterm(text: str, ranges: dict[str, tuple[str, str]],
                                             why: str) -> None:
    sizes = {**SIZES, **ranges}
    with pytest.raises(UnsupportedError, match=why):
        from_sympy(parse_text(text, KNOWN | set(ranges)), SIZED_RANGES, sizes)


@pytest.mark.parametrize("ranges, what", [
    ({"x0": "s7"}, "symbol s7 has no range"),
    ({"x0": "s0 +"}, "the extent of x0"),
])
def test_sized_extents_bad_input(ranges: dict[str, str], what: str) -> None:
    with pytest.raises(ParseError, match=what):
        from_sympy(parse_text("x0", {"x0"}), ranges, SIZES)


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


def test_sized_simplification_finds_a_point_without_the_solver(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The simplifier's emptiness check samples sizes with the points: a map whose extents
    depend on sizes is shown non-empty at some sizes by evaluation, not by a Z3 query per
    expression (which cost most of the time of a dynamic expression's first sight)."""
    from verifidx.solve import smt

    def no_solver(*args: object, **kwargs: object) -> object:
        raise AssertionError("Z3's emptiness query was asked")

    monkeypatch.setattr(smt, "is_empty", no_solver)
    m = from_sympy(parse_text("x0 + s0*x1 + s0*s53*x2", KNOWN), SIZED_RANGES, SIZES)
    simple = m.simplify()
    assert not simple.is_known_empty and simple.constraints


@pytest.mark.parametrize("text, ranges", [
    ("ModularIndexing(x0 + s0*x1, 1, s0)", {"x0": "s0", "x1": "4"}),
    ("FloorDiv(x0 + s0*x1, s0) - x1 + x0", {"x0": "s0", "x1": "4"}),
    ("ModularIndexing(x0, 1, s0) + s0*FloorDiv(x0, s0)", {"x0": "4*s0"}),
    ("ModularIndexing(x0, 4, s0)", {"x0": "4*s0"}),
    # quotient and remainder under a common size factor, as Inductor recombines them
    ("x1 + 4*s0*ModularIndexing(x0, 1, 4) + 16*s0*ModularIndexing(x0, 4, s53)",
     {"x0": "4*s53", "x1": "4"}),
    ("s0**2*ModularIndexing(x0, 1, 4) + 4*s0**2*ModularIndexing(x0, 4, s53)",
     {"x0": "4*s53"}),
])
def test_sized_simplification_removes_what_the_ranges_allow(text: str,
                                                            ranges: dict[str, str]) -> None:
    """Inductor's everyday dynamic forms lose their divisions for every size (products read
    with the loop variable first, so that the rules over sizes match them)."""
    m = from_sympy(parse_text(text, KNOWN), ranges, SIZES)
    simple = m.simplify()
    assert count_divisions(simple.results[0]) < count_divisions(m.results[0])
    assert equal(m, simple).holds is True


@pytest.mark.parametrize("bounds, interval", [
    (("2", "int_oo"), (2, SIZE_MAX)), ((3, 40), (3, 40)), (("1", "oo"), (1, SIZE_MAX)),
    (("4294967296", "int_oo"), (4294967296, 4294967296)),
])
def test_size_ranges(bounds: tuple[object, object], interval: tuple[int, int]) -> None:
    iv = size_interval("s0", bounds)
    assert (iv.lo, iv.hi) == interval


@pytest.mark.parametrize("bounds, error, what", [
    (("0", "int_oo"), UnsupportedError, "may be 0"),
    (("5", "4"), UnsupportedError, "empty range"),
    (("int_oo", "int_oo"), ParseError, "integers"),
    (("2",), ParseError, r"\[lo, hi\]"),
])
def test_size_ranges_refused(bounds: tuple[object, ...], error: type[Exception], what: str
                             ) -> None:
    with pytest.raises(error, match=what):
        size_interval("s0", bounds)


def test_maps_over_one_loop_nest_read_as_alone() -> None:
    """The bridge reads the loop and size ranges once per nest: each map is the one a first
    reading gives, sizes used by the expression alone included, in any order."""
    from verifidx.clients import sympy_bridge

    ranges = {"x0": "s0", "x1": "4", "x2": "s0*s53"}
    texts = ["x0 + s0*x1", "ModularIndexing(x2, 1, s0)", "x0*ps0 + x1", "s53*x0 + x2", "7"]
    first = []
    for text in texts:
        sympy_bridge._DOMAINS.clear()
        first.append(from_sympy(parse_text(text, KNOWN), ranges, SIZES))
    for order in (texts, texts[::-1]):
        for text in order:
            m = from_sympy(parse_text(text, KNOWN), ranges, SIZES)
            want = first[texts.index(text)]
            assert m == want and str(m) == str(want)
            assert [z.name for z in m.sizes] == [z.name for z in want.sizes]
            built = IndexingMap.build(m.results, m.dims, constraints=m.constraints.items(),
                                      sizes=m.sizes)
            assert built == m and str(built) == str(m)
    assert [z.name for z in first[2].sizes] == ["ps0", "s0_", "s53_"]


def test_a_subterm_read_in_one_nest_is_read_anew_in_another() -> None:
    """Readers of one nest share their reads of subterms (one sympy object per term); the
    same objects in a nest with the loop variables in another order, or beside a size the
    nest does not have, read as a first reading gives."""
    from verifidx.clients import sympy_bridge

    term = parse_text("s0*x1 + 3*x0", KNOWN)
    wider = parse_text("ps0*x2 + s0*x1 + 3*x0", KNOWN)  # the same `s0*x1` object inside
    nests = [{"x0": "s0", "x1": "4", "x2": "2"}, {"x1": "4", "x0": "s0", "x2": "2"}]
    first = {}
    for i, ranges in enumerate(nests):
        for j, tree in enumerate((term, wider)):
            sympy_bridge._DOMAINS.clear()
            first[i, j] = from_sympy(tree, ranges, SIZES)
    assert first[0, 0].results != first[1, 0].results  # x1 is d1, then d0
    for order in ([(0, 0), (1, 0), (0, 1), (1, 1)], [(1, 1), (0, 1), (1, 0), (0, 0)]):
        for i, j in order:
            m = from_sympy((term, wider)[j], nests[i], SIZES)
            assert m == first[i, j] and str(m) == str(first[i, j])


def test_sympy_extents_that_differ_never_share_a_nest() -> None:
    """Nests are found again by what the reader reads of their sympy extents (names,
    integers, classes, argument order), never by sympy's `==`: every extent below, each
    alone and then all in turn, gives the map a first reading gives."""
    from verifidx.clients import sympy_bridge

    known = {"x0", "x1", "s0", "s1", "s53"}
    sizes = {"s0": ["2", "int_oo"], "s1": ["3", "9"], "s53": ["1", "64"]}
    extents = ["s0", "s1", "s0*s53", "s1*s53", "2*s0", "s0 + 1", "(s0//2)", "4",
               "Max(1, s0)", "Min(s0, s1)", "s0**2", "s0 + s1"]
    parsed = [parse_text(e, known) for e in extents]
    first = []
    for extent in parsed:
        sympy_bridge._DOMAINS.clear()
        first.append(from_sympy(parse_text("x0 + x1", known), {"x0": extent, "x1": 3}, sizes))
    assert len({str(m) for m in first}) == len(extents)
    for _ in range(2):
        for extent, want in zip(parsed, first):
            m = from_sympy(parse_text("x0 + x1", known), {"x0": extent, "x1": 3}, sizes)
            assert m == want and str(m) == str(want)


def test_a_result_outside_the_sized_grammar_is_refused_over_a_known_nest() -> None:
    """A nest read before checks each new result as a first reading does."""
    from verifidx.clients import sympy_bridge

    sympy_bridge._DOMAINS.clear()
    ranges = {"x0": "s0", "x1": "4"}
    from_sympy(parse_text("x0 + s0*x1", KNOWN), ranges, SIZES)
    with pytest.raises(UnsupportedError, match="product of loop variables"):
        from_sympy(parse_text("x0*x1 + s0*x1", KNOWN), ranges, SIZES)
    with pytest.raises(UnsupportedError, match="divisor"):
        from_sympy(parse_text("FloorDiv(x0, x1 + s0)", KNOWN), ranges, SIZES)
