"""Exact result ranges for every size and 32-bit fit (issue 37, verifidx/analysis/ranges.py).

Oracles: plain Python integer arithmetic on the published overflow boundaries, and brute-force
enumeration over maps this file generates as its own expression trees (evaluated here, printed
to map text for verifidx), at every size of small intervals: never verifidx's evaluator,
simplifier or interval code."""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import verifidx as vx
from verifidx.analysis.ranges import fits, offset_map, parameters, result_range
from verifidx.cli import main
from verifidx.core.interval import Interval

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import fuzz_oracle  # noqa: E402  (shares no code with verifidx)
from strategies import maps  # noqa: E402

INT32_MAX = 2**31 - 1

# a gather from a [262144, 8960] f32 table: rows 0..N-1, N a size
GATHER = ("(d0, d1)<N> -> (d0 * 8960 + d1), domain: d0 in [0, 262143], d1 in [0, 8959], "
          "N in [1, 262144], d0 - N in [-262144, -1]")
GATHER_INDEX = ("(d0, d1)<N> -> (d0, d1), domain: d0 in [0, 262143], d1 in [0, 8959], "
                "N in [1, 262144], d0 - N in [-262144, -1]")
# Inductor's pointwise `67108864 * x1`, x1 < X
POINTWISE = ("(d0)<X> -> (d0 * 67108864), domain: d0 in [0, 1023], X in [1, 1024], "
             "d0 - X in [-1024, -1]")


def _largest_gather_offset(n: int) -> int:
    return (n - 1) * 8960 + 8959


def test_gather_overflows_first_at_the_true_row_count() -> None:
    answer = fits(vx.parse_map(GATHER))
    assert answer.verdict == "overflows"
    first = answer.overflow
    assert first is not None and first.smallest
    n = first.sizes["N"]
    # plain integer arithmetic: the largest offset fits just below and not at N
    assert _largest_gather_offset(n - 1) <= INT32_MAX < _largest_gather_offset(n)
    assert n == 239675  # row 239,674 is the first whose offsets leave int32
    d0, d1 = first.point["d0"], first.point["d1"]
    assert d0 < n and 0 <= d1 < 8960 and d0 * 8960 + d1 == first.value > INT32_MAX


def test_gather_range_is_an_expression_in_the_size() -> None:
    [rr] = result_range(vx.parse_map(GATHER))
    assert rr.exact and rr.method == "isl"
    assert (rr.low.value, rr.high.value) == (0, _largest_gather_offset(262144))
    assert rr.low.text() == "0"
    n = vx.Size("N")
    assert rr.high.expr is not None
    for value in (1, 2, 239675, 262144):
        assert rr.high.expr.evaluate({n: value}) == _largest_gather_offset(value)


def test_layout_offsets_are_what_is_checked() -> None:
    row_major = fits(vx.parse_map(GATHER_INDEX), layout="f32[262144,8960]{1,0}")
    assert row_major.overflow is not None and row_major.overflow.sizes == {"N": 239675}
    # column-major: column 8959 starts at 8959 * 262144 > 2^31 - 1 even for one row
    column_major = fits(vx.parse_map(GATHER_INDEX), layout="f32[262144,8960]{0,1}")
    assert column_major.overflow is not None and column_major.overflow.sizes == {"N": 1}
    assert 8959 * 262144 > INT32_MAX
    # the logical index itself fits
    assert fits(vx.parse_map(GATHER_INDEX)).verdict == "fits"
    # the offset is the layout's formula at the results, every integer index included
    m = offset_map(vx.parse_map("(d0) -> (d0, 3), domain: d0 in [0, 9]"), "f32[4,8]{1,0}")
    assert m.num_results == 1
    assert [m.evaluate([d])[0] for d in (0, 9)] == [3, 9 * 8 + 3]


def test_pointwise_product_wraps_from_x1_32() -> None:
    answer = fits(vx.parse_map(POINTWISE))
    first = answer.overflow
    assert answer.verdict == "overflows" and first is not None and first.smallest
    assert first.sizes == {"X": 33} and first.point == {"d0": 32}
    assert 67108864 * 31 <= INT32_MAX < 67108864 * 32
    unsigned = fits(vx.parse_map(POINTWISE), signed=False)
    assert unsigned.overflow is not None and unsigned.overflow.sizes == {"X": 65}
    assert 67108864 * 63 <= 2**32 - 1 < 67108864 * 64
    static = fits(vx.parse_map("(x1) -> (x1 * 67108864), domain: x1 in [0, 31]"))
    assert static.verdict == "fits"


def test_product_with_a_size_goes_to_the_solver() -> None:
    m = vx.parse_map("(d0)<N> -> (d0 * N), domain: d0 in [0, 65535], N in [1, 65536], "
                     "d0 - N in [-65536, -1]")
    [rr] = result_range(m)
    assert rr.method == "z3" and rr.exact
    assert (rr.low.value, rr.high.value) == (0, 65535 * 65536)
    first = fits(m).overflow
    assert first is not None and first.smallest
    n = first.sizes["N"]
    assert (n - 2) * (n - 1) <= INT32_MAX < (n - 1) * n  # n = 46342
    assert first.point["d0"] * n == first.value > INT32_MAX


def test_constraints_give_the_exact_range_where_intervals_do_not() -> None:
    m = vx.parse_map("(d0, d1) -> (d0 + d1 * 8), domain: d0 in [0, 7], d1 in [0, 1023], "
                     "d0 + d1 * 8 in [0, 8191]")
    assert vx.range_of(m.results[0], m.bounds).hi == 7 + 1023 * 8  # what intervals say
    [rr] = result_range(m)
    assert rr.exact and (rr.low.value, rr.high.value) == (0, 8191)


def test_a_spent_budget_is_an_enclosure_never_exact() -> None:
    m = vx.parse_map("(d0, d1) -> (d0 * d1), domain: d0 in [0, 100000], d1 in [0, 100000], "
                     "d0 + d1 in [0, 100000]")
    [rr] = result_range(m, rlimit=1)
    assert not rr.exact
    assert rr.low.value <= 0 and rr.high.value >= 50000 * 50000  # sound bounds
    answer = fits(m, rlimit=1)
    assert answer.verdict == "unknown" and answer.reason
    assert fits(m).verdict == "overflows"  # with a budget: 50000 * 50000 > 2^31 - 1


def test_parameters_narrow_and_never_widen() -> None:
    m = vx.parse_map(GATHER)
    assert parameters(m) == {"N": Interval(1, 262144)}
    narrow = fits(m, params={"N": Interval(1, 1000)})
    assert narrow.verdict == "fits"
    with pytest.raises(ValueError):
        parameters(m, {"N": Interval(0, 10)})
    with pytest.raises(ValueError):
        parameters(m, {"M": Interval(1, 10)})


def test_empty_domain_fits() -> None:
    m = vx.parse_map("(d0)<N> -> (d0 * 1000000000000), domain: d0 in [0, 9], N in [1, 4], "
                     "d0 - N in [10, 20]")
    [rr] = result_range(m)
    assert rr.low is None and rr.high is None
    assert fits(m).verdict == "fits"


# -- the command line -------------------------------------------------------------------------


def test_cli_exit_codes_and_json(tmp_path, capsys) -> None:
    path = tmp_path / "gather.map"
    path.write_text(GATHER)
    assert main(["range", f"@{path}", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "overflows" and doc["smallest"] == {"N": 239675}
    [r] = doc["results"]
    assert r["min"] == 0 and r["max"] == "-1 + N * 8960" and r["exact"] is True
    assert r["fits"] is False and r["smallest"] == {"N": 239675}
    assert r["witness"]["d0"] * 8960 + r["witness"]["d1"] == r["value"]
    assert main(["range", f"@{path}", "--bits", "64"]) == 0
    assert "fits for every size" in capsys.readouterr().out
    assert main(["range", GATHER_INDEX, "--layout", "f32[262144,8960]{1,0}"]) == 1
    assert "N = 239675 (the smallest sizes)" in capsys.readouterr().out
    assert main(["range", f"@{path}", "--sizes", "N=1:239674"]) == 0  # just below the row
    assert main(["range", f"@{path}", "--sizes", "N=239675:239675"]) == 1
    assert main(["range", f"@{path}", "--sizes", "N=0:10"]) == 2  # wider than declared
    capsys.readouterr()
    hard = "(d0, d1) -> (d0 * d1), domain: d0 in [0, 100000], d1 in [0, 100000]"
    assert main(["range", hard, "--unsigned", "--bits", "40"]) == 0


def test_cli_bad_map_is_one_located_line(tmp_path, capsys) -> None:
    path = tmp_path / "bad.map"
    path.write_text("(d0) -> (d0 +), domain: d0 in [0, 3]")
    assert main(["range", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:1:")
    assert main(["range", "(d0) -> (d0), domain: d0 in [0, 3]", "--bits", "0"]) == 2
    assert main(["range", "(d0) -> (d0), domain: d0 in [0, 3]", "--layout", "f32[4]{0"]) == 2
    assert main(["range", "(d0) -> (d0, d0), domain: d0 in [0, 3]", "--layout", "f32[4]"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and lines[1].startswith("error: --layout:1:")


# -- properties against enumeration -----------------------------------------------------------

SIZES = {"M": (1, 3), "N": (1, 5)}  # sorted by name, as maps keep them
DIMS = [(0, 4), (0, 5)]

# a tree: ("c", k) | ("d", i) | ("z", name) | ("+", a, b) | ("*", a, k) | ("*z", d, name)
#         | ("fd", a, k) | ("mod", a, k) | ("min" | "max", a, b)


def _text(t: tuple) -> str:
    kind = t[0]
    if kind == "c":
        return str(t[1]) if t[1] >= 0 else f"({t[1]})"
    if kind == "d":
        return f"d{t[1]}"
    if kind == "z":
        return t[1]
    if kind == "+":
        return f"({_text(t[1])} + {_text(t[2])})"
    if kind == "*":
        return f"({_text(t[1])} * {t[2]})"
    if kind == "*z":
        return f"(d{t[1]} * {t[2]})"
    if kind in ("fd", "mod"):
        return f"({_text(t[1])} {'floordiv' if kind == 'fd' else 'mod'} {t[2]})"
    return f"{kind}({_text(t[1])}, {_text(t[2])})"


def _eval(t: tuple, d: tuple[int, ...], z: dict[str, int]) -> int:
    kind = t[0]
    if kind == "c":
        return t[1]
    if kind == "d":
        return d[t[1]]
    if kind == "z":
        return z[t[1]]
    if kind == "+":
        return _eval(t[1], d, z) + _eval(t[2], d, z)
    if kind == "*":
        return _eval(t[1], d, z) * t[2]
    if kind == "*z":
        return d[t[1]] * z[t[2]]
    if kind == "fd":
        return _eval(t[1], d, z) // t[2]
    if kind == "mod":
        return _eval(t[1], d, z) % t[2]
    a, b = _eval(t[1], d, z), _eval(t[2], d, z)
    return min(a, b) if kind == "min" else max(a, b)


def _trees(products: bool) -> st.SearchStrategy[tuple]:
    leaves = [st.integers(-5, 5).map(lambda k: ("c", k)),
              st.integers(0, 1).map(lambda i: ("d", i)),
              st.sampled_from(sorted(SIZES)).map(lambda n: ("z", n))]
    if products:  # a size times a dimension: not Presburger, Z3's
        leaves.append(st.tuples(st.just("*z"), st.integers(0, 1), st.sampled_from(sorted(SIZES))))

    def extend(kids: st.SearchStrategy[tuple]) -> st.SearchStrategy[tuple]:
        return st.one_of(
            st.tuples(st.just("+"), kids, kids),
            st.tuples(st.just("*"), kids, st.integers(-4, 4)),
            st.tuples(st.sampled_from(["fd", "mod"]), kids, st.integers(1, 4)),
            st.tuples(st.sampled_from(["min", "max"]), kids, kids))

    return st.recursive(st.one_of(*leaves), extend, max_leaves=5)


@st.composite
def sized_maps(draw: st.DrawFn) -> tuple[str, list[tuple], tuple | None]:
    """Map text over d0, d1 and the sizes M, N; its result trees; an optional constraint tree
    `d0 <= size - 2` (a bound that depends on the sizes, empty at size 1)."""
    products = draw(st.booleans())
    results = draw(st.lists(_trees(products), min_size=1, max_size=2))
    bound = draw(st.one_of(st.none(), st.sampled_from(sorted(SIZES)).map(lambda n: ("z", n))))
    dims = ", ".join(f"d{i} in [{lo}, {hi}]" for i, (lo, hi) in enumerate(DIMS))
    sizes = ", ".join(f"{n} in [{lo}, {hi}]" for n, (lo, hi) in SIZES.items())
    cons = "" if bound is None else f", d0 - {bound[1]} in [-20, -2]"  # empty at size 1
    text = (f"(d0, d1)<M, N> -> ({', '.join(_text(t) for t in results)}), domain: {dims}, "
            f"{sizes}{cons}")
    return text, results, bound


def _all_sizes() -> list[dict[str, int]]:
    names = sorted(SIZES)
    return [dict(zip(names, v)) for v in itertools.product(
        *[range(SIZES[n][0], SIZES[n][1] + 1) for n in names])]


def _points(z: dict[str, int], bound: tuple | None) -> list[tuple[int, ...]]:
    return [d for d in itertools.product(*[range(lo, hi + 1) for lo, hi in DIMS])
            if bound is None or d[0] <= z[bound[1]] - 2]


def _python(expr_text: str, z: dict[str, int]) -> int:
    """verifidx's printed expression in the sizes, read as Python (floor semantics agree)."""
    code = re.sub(r"\bfloordiv\b", "//", expr_text)
    code = re.sub(r"\bmod\b", "%", code)
    assert "ceildiv" not in code
    return int(eval(code, {"min": min, "max": max}, dict(z)))  # noqa: S307 - our own output


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sized_maps())
def test_result_range_matches_enumeration(case) -> None:
    text, results, bound = case
    try:
        m = vx.parse_map(text)
    except vx.ParseError:  # a product the sized grammar refuses after folding
        return
    ranges = result_range(m)
    for i, tree in enumerate(results):
        per_size = {}
        for z in _all_sizes():
            values = [_eval(tree, d, z) for d in _points(z, bound)]
            if values:
                per_size[tuple(z.values())] = (min(values), max(values))
        rr = ranges[i]
        if not per_size:
            assert rr.low is None or not rr.exact
            continue
        lo = min(v[0] for v in per_size.values())
        hi = max(v[1] for v in per_size.values())
        assert rr.low is not None and rr.high is not None
        assert rr.low.value <= lo and rr.high.value >= hi  # always a sound enclosure
        if rr.low.exact:
            assert rr.low.value == lo
        if rr.high.exact:
            assert rr.high.value == hi
        if rr.method == "isl":
            assert rr.exact
        for end, which in ((rr.low, 0), (rr.high, 1)):
            if end.expr is not None:
                for key, v in per_size.items():
                    assert _python(str(end.expr), dict(zip(sorted(SIZES), key))) == v[which]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sized_maps(), st.integers(2, 5), st.booleans())
def test_fits_agrees_with_enumeration(case, bits: int, signed: bool) -> None:
    text, results, bound = case
    try:
        m = vx.parse_map(text)
    except vx.ParseError:
        return
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    overflowing = [z for z in _all_sizes()
                   if any(not lo <= _eval(t, d, z) <= hi
                          for t in results for d in _points(z, bound))]
    answer = fits(m, bits, signed)
    if overflowing:
        assert answer.verdict != "fits"
    if answer.verdict == "fits":
        assert not overflowing
    if answer.verdict == "overflows":
        first = answer.overflow
        assert first is not None and first.sizes in overflowing
        d = (first.point["d0"], first.point["d1"])
        assert d in _points(first.sizes, bound)
        value = _eval(results[first.result], d, first.sizes)
        assert value == first.value and not lo <= value <= hi
        if first.smallest:  # sizes in name order, compared as tuples
            assert tuple(first.sizes.values()) == min(tuple(z.values()) for z in overflowing)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps(max_dims=2, max_syms=2, max_rts=1, max_results=2), st.integers(2, 5))
def test_static_ranges_with_range_and_runtime_variables(m, bits: int) -> None:
    """Range variables are existential and runtime variables universal: a result's range is
    over every tuple of the relation, as the independent oracle enumerates it."""
    relation = fuzz_oracle.relation(fuzz_oracle.parse(str(m)))
    assert relation is not None
    ranges = result_range(m)
    for i, rr in enumerate(ranges):
        values = [res[i] for _rt, _d, res in relation]
        if not values:
            assert rr.low is None or not rr.exact
            continue
        assert rr.low.value <= min(values) and rr.high.value >= max(values)
        if rr.exact:
            assert (rr.low.value, rr.high.value) == (min(values), max(values))
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    overflow = any(not lo <= v <= hi for _rt, _d, res in relation for v in res)
    answer = fits(m, bits)
    assert answer.verdict == ("overflows" if overflow else "fits") or answer.verdict == "unknown"
    if answer.verdict == "overflows":
        first = answer.overflow
        assert first is not None and first.sizes == {} and not lo <= first.value <= hi
        om = fuzz_oracle.parse(str(m))
        point = tuple(first.point.values())  # dims, range variables, runtime variables
        assert all(a <= x <= b for x, (a, b) in zip(point, om.boxes))
        cons, res = fuzz_oracle.compile_map(om)(point)
        assert all(a <= c <= b for c, (_e, a, b) in zip(cons, om.constraints))
        assert res[first.result] == first.value


def test_every_json_key_is_documented(capsys) -> None:
    """docs/contracts.md is the authority on the JSON: each key `range --json` prints is in its
    section."""
    text = (Path(__file__).parents[1] / "docs" / "contracts.md").read_text()
    section = text.split("## Ranges and index widths", 1)[1].split("\n## ", 1)[0]
    printed: set[str] = set()
    for m in (GATHER, "(d0, d1) -> (d0 * d1), domain: d0 in [0, 100000], d1 in [0, 100000]"):
        main(["range", m, "--json"])
        doc = json.loads(capsys.readouterr().out)
        printed |= set(doc) | {k for r in doc["results"] for k in r}
    main(["range", "(d0) -> (d0 * d0), domain: d0 in [0, 100000]", "--json"])  # fits
    printed |= set(json.loads(capsys.readouterr().out))
    missing = {k for k in printed if f'"{k}"' not in section}
    assert not missing, missing
