"""`verifidx validate`: seeded wrong simplifications refuted with counterexamples that the
independent integer evaluator confirms, right ones proved, the output formats, exit codes and
bad input (one line, exit 2)."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("sympy")

from inductor_oracle import evaluate  # noqa: E402

from verifidx.cli import main  # noqa: E402
from verifidx.clients.sympy_bridge import parse_text  # noqa: E402
from verifidx.clients.validation import validate_record  # noqa: E402
from verifidx.core.errors import ParseError  # noqa: E402

RIGHT = [
    ("ModularIndexing(x0, 1, 16) + 16*(x0//16)", {"x0": "64"}, "x0"),
    ("ModularIndexing(x0 + 64*x1, 4, 16)", {"x0": "64", "x1": "300000"},
     "(x0//4)"),
    ("ModularIndexing(x0, 1, 64)", {"x0": "64"}, "x0"),
    ("FloorDiv(x0 + 8*x1, 8)", {"x0": "8", "x1": "5"}, "x1"),
    ("Min(x0, 15)", {"x0": "16"}, "x0"),
]

#: (what was seeded, expr, var_ranges, a wrong result)
WRONG = [
    ("dropped ModularIndexing", "ModularIndexing(x0, 1, 16) + 16*x1",
     {"x0": "64", "x1": "4"}, "x0 + 16*x1"),
    ("dropped ModularIndexing (large box)", "ModularIndexing(x0 + 100000*x1, 4, 16)",
     {"x0": "100000", "x1": "100000"}, "(x0//4)"),
    ("off-by-one divisor", "ModularIndexing(x0, 4, 16)", {"x0": "64"},
     "ModularIndexing(x0, 5, 16)"),
    ("off-by-one divisor (large box)", "FloorDiv(x0 + 7*x1, 7)",
     {"x0": "7", "x1": "1000000"}, "FloorDiv(x0 + 7*x1, 8)"),
    ("wrong range", "ModularIndexing(x0, 1, 16)", {"x0": "17"}, "x0"),
    ("wrong range (large box)", "ModularIndexing(x0 + 17*x1, 1, 17)",
     {"x0": "18", "x1": "100000"}, "x0"),
]


def _line(expr: str, ranges: dict[str, str], result: str) -> str:
    return json.dumps({"expr": expr, "var_ranges": ranges, "result": result})


@pytest.mark.parametrize("expr, ranges, result", RIGHT)
def test_right_simplifications_are_proved(expr: str, ranges: dict[str, str], result: str
                                          ) -> None:
    v = validate_record(_line(expr, ranges, result))
    assert v.verdict == "proved", v.reason
    assert v.divisions["verifidx"] <= v.divisions["result"]


@pytest.mark.parametrize("seeded, expr, ranges, result", WRONG)
def test_seeded_wrong_simplifications_are_refuted(seeded: str, expr: str,
                                                  ranges: dict[str, str], result: str) -> None:
    v = validate_record(_line(expr, ranges, result))
    assert v.verdict == "refuted", (seeded, v.reason)
    point = v.counterexample
    assert point is not None and set(point) == set(ranges)
    assert all(0 <= point[k] < int(e) for k, e in ranges.items())
    # the independent evaluator confirms both printed values, and that they differ
    assert evaluate(expr, point) == v.expr_value
    assert evaluate(result, point) == v.result_value
    assert v.expr_value != v.result_value


def test_xla_map_pairs() -> None:
    ok = validate_record(json.dumps({
        "input": "(d0) -> (d0 mod 16 + (d0 floordiv 16) * 16), domain: d0 in [0, 63]",
        "output": "(d0) -> (d0), domain: d0 in [0, 63]"}))
    assert ok.verdict == "proved" and ok.divisions == {"expr": 2, "result": 0, "verifidx": 0}
    bad = validate_record(json.dumps({
        "input": "(d0, d1) -> (d0 mod 16 + d1 * 4), domain: d0 in [0, 31], d1 in [0, 3]",
        "output": "(d0, d1) -> (d0 + d1 * 4), domain: d0 in [0, 31], d1 in [0, 3]"}))
    assert bad.verdict == "refuted"
    d0, d1 = bad.counterexample["d0"], bad.counterexample["d1"]
    assert bad.expr_value == [d0 % 16 + d1 * 4] and bad.result_value == [d0 + d1 * 4]
    assert bad.expr_value != bad.result_value


def test_too_deep_is_unsupported_or_bad_input() -> None:
    """Deeper than maps hold: unsupported; deeper than the parser reads: an error record with
    the column (never Python's RecursionError), signs and `~` nested like parentheses."""
    nested = "FloorDiv(" * 80 + "x0" + ", 2)" * 80
    v = validate_record(json.dumps({"expr": nested, "var_ranges": {"x0": "8"}, "result": "0"}))
    assert v.verdict == "unsupported" and "levels" in v.reason
    deeper = "FloorDiv(" * 300 + "x0" + ", 2)" * 300
    v = validate_record(json.dumps({"expr": deeper, "var_ranges": {"x0": "8"}, "result": "0"}),
                        "log", 3)
    assert v.verdict == "error" and "nested deeper" in v.reason and v.column == 1 + 9 * 101
    for text in ("(-" * 300 + "x0" + ")" * 300, "-" * 3000 + "x0",
                 "Where(" + "~(" * 300 + "x0 < 1" + ")" * 300 + ", 1, 0)"):
        with pytest.raises(ParseError, match="nested deeper"):
            parse_text(text)


#: Inductor's dynamic forms, right: (expr, var_ranges, size_ranges, result).
RIGHT_SIZED = [
    ("ModularIndexing(x0 + s0*x1, 1, s0)", {"x0": "s0", "x1": "4"}, {"s0": ["2", "int_oo"]},
     "x0"),
    ("FloorDiv(x0 + s0*x1, s0)", {"x0": "s0", "x1": "4"}, {"s0": ["2", "int_oo"]}, "x1"),
    ("ModularIndexing(x1, 1, s0*s53)", {"x1": "s0*s53"},
     {"s0": ["2", "int_oo"], "s53": ["3", "64"]}, "x1"),
    ("s0*s53*(ModularIndexing(x1, 1, 2)) + s0*(ModularIndexing(x1, 2, s53))",
     {"x1": "2*s53"}, {"s0": ["2", "int_oo"], "s53": ["2", "int_oo"]},
     "s0*s53*(ModularIndexing(x1, 1, 2)) + s0*((x1//2))"),
    # the result drops the only use of s0: both sides still quantify over it
    ("ModularIndexing(x0, 1, s0)", {"x0": "3"}, {"s0": ["3", "10"]}, "x0"),
]

#: (what was seeded, expr, var_ranges, size_ranges, a wrong result)
WRONG_SIZED = [
    ("dropped ModularIndexing by a size", "ModularIndexing(x0 + 4*x1, 1, s0)",
     {"x0": "4", "x1": "s0"}, {"s0": ["2", "int_oo"]}, "x0 + 4*x1"),
    ("off-by-one size divisor", "FloorDiv(x0 + s0*x1, s0)", {"x0": "s0", "x1": "4"},
     {"s0": ["2", "int_oo"]}, "FloorDiv(x0 + s0*x1, s0 + 1)"),
    ("wrong range (extent s0 + 1 treated as s0)", "ModularIndexing(x0, 1, s0)",
     {"x0": "s0 + 1"}, {"s0": ["5", "int_oo"]}, "x0"),
    ("wrong size range (s0 >= 3 assumed)", "ModularIndexing(x0, 1, s0)", {"x0": "3"},
     {"s0": ["2", "10"]}, "x0"),
    ("size coefficient swapped", "x0 + s0*x1 + s0*s53*x2",
     {"x0": "s0", "x1": "s53", "x2": "3"}, {"s0": ["2", "int_oo"], "s53": ["2", "int_oo"]},
     "x0 + s53*x1 + s0*s53*x2"),
    ("digits of a size product merged in the wrong base",
     "s0*(ModularIndexing(q1, s0*s27, s53)) + (ModularIndexing(q1, s27, s0))",
     {"q1": "s0*s27*s53"}, {"s0": ["2", "int_oo"], "s27": ["2", "int_oo"],
                            "s53": ["2", "int_oo"]}, "(q1//s0)"),
]


def _sized_line(expr: str, ranges: dict[str, str], sizes: dict[str, list[str]],
                result: str) -> str:
    return json.dumps({"expr": expr, "var_ranges": ranges, "size_ranges": sizes,
                       "result": result})


@pytest.mark.parametrize("expr, ranges, sizes, result", RIGHT_SIZED)
def test_right_dynamic_simplifications_are_proved(expr: str, ranges: dict[str, str],
                                                  sizes: dict[str, list[str]], result: str
                                                  ) -> None:
    v = validate_record(_sized_line(expr, ranges, sizes, result))
    assert v.verdict == "proved", v.reason


@pytest.mark.parametrize("seeded, expr, ranges, sizes, result", WRONG_SIZED)
def test_seeded_wrong_dynamic_simplifications_are_refuted(
        seeded: str, expr: str, ranges: dict[str, str], sizes: dict[str, list[str]],
        result: str) -> None:
    v = validate_record(_sized_line(expr, ranges, sizes, result))
    assert v.verdict == "refuted", (seeded, v.reason)
    point = v.counterexample
    assert point is not None and set(point) == set(ranges) | set(sizes)
    for name, (lo, hi) in sizes.items():  # every size in its range
        assert int(lo) <= point[name] <= (2**31 - 1 if hi == "int_oo" else int(hi))
    # the loop point inside the extents at those sizes, both values confirmed independently
    assert all(0 <= point[k] < evaluate(e, point) for k, e in ranges.items())
    assert evaluate(expr, point) == v.expr_value
    assert evaluate(result, point) == v.result_value
    assert v.expr_value != v.result_value


#: The record of the dynamic corpus (`tools/capture_inductor.py --dynamic`, torch 2.13 on CPU)
#: where Inductor merges two digits of a product of sizes: with q1 < s0*s27*s53 the mod by s53
#: vanishes, and (q1 // (s0*s27)) * s0 + (q1 // s27) mod s0 is q1 // s27.
DIGITS_OF_A_SIZE_PRODUCT = (
    '{"expr": "q0*s0*s27*s53 + s0*s53*(ModularIndexing(q1, 1, s27)) + '
    's0*(ModularIndexing(q1, s0*s27, s53)) + (ModularIndexing(q1, s27, s0))", '
    '"var_ranges": {"q0": "2", "q1": "s0*s27*s53"}, "size_ranges": {"s0": ["2", "int_oo"], '
    '"s27": ["2", "int_oo"], "s53": ["2", "int_oo"]}, '
    '"result": "q0*s0*s27*s53 + s0*s53*(ModularIndexing(q1, 1, s27)) + ((q1//s27))"}')


def test_digits_of_a_size_product_proved_with_inductors_reach() -> None:
    v = validate_record(DIGITS_OF_A_SIZE_PRODUCT)
    assert v.verdict == "proved", v.reason
    assert v.reason.startswith("identical after proven simplification")
    assert v.divisions["verifidx"] <= v.divisions["result"] < v.divisions["expr"]
    # the claim, and verifidx's own simplification, against the independent evaluator
    record = json.loads(DIGITS_OF_A_SIZE_PRODUCT)
    assert v.simplified is not None
    rng = random.Random(24)
    for _ in range(300):
        sizes = {name: rng.randint(2, 9) for name in record["size_ranges"]}
        point = {**sizes, "q0": rng.randrange(2),
                 "q1": rng.randrange(evaluate(record["var_ranges"]["q1"], sizes))}
        expected = evaluate(record["expr"], point)
        assert evaluate(record["result"], point) == expected
        assert evaluate(v.simplified, point) == expected


def test_xla_map_pairs_with_sizes() -> None:
    head = "(d0, d1)<N> -> "
    domain = ", domain: d0 in [0, 63], d1 in [0, 7], N in [2, 64], d0 - N in [-64, -1]"
    right = json.dumps({"input": head + "((d0 + d1 * N) mod N)" + domain,
                        "output": head + "(d0)" + domain})
    assert validate_record(right).verdict == "proved"
    wrong = json.dumps({"input": head + "((d0 + d1 * N) floordiv N)" + domain,
                        "output": head + "((d0 + d1 * N) floordiv (N + 1))" + domain})
    v = validate_record(wrong)
    assert v.verdict == "refuted" and v.counterexample is not None
    n, d0, d1 = (v.counterexample[k] for k in ("N", "d0", "d1"))
    assert 2 <= n <= 64 and 0 <= d0 < n and 0 <= d1 <= 7
    assert v.expr_value == [(d0 + d1 * n) // n] and v.result_value == [(d0 + d1 * n) // (n + 1)]
    assert v.expr_value != v.result_value


def test_indirect_indices_are_unsupported_not_errors() -> None:
    v = validate_record(json.dumps({"expr": "x0 + s0*indirect0", "var_ranges": {"x0": "8"},
                                    "size_ranges": {"s0": ["2", "int_oo"],
                                                    "indirect0": ["0", "int_oo"]},
                                    "result": "x0 + s0*indirect0"}))
    assert v.verdict == "unsupported"
    assert v.reason.startswith("indirect index symbols not yet supported: indirect0*s0")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    lines = [_line(*RIGHT[0]), _line(*WRONG[0][1:]),
             json.dumps({"expr": "x0 + tmp3", "var_ranges": {"x0": "4"},
                         "size_ranges": {"tmp3": ["0", "int_oo"]}, "result": "x0 + tmp3"}),
             _sized_line(*WRONG_SIZED[1][1:]),
             "",
             json.dumps({"input": "(d0) -> (d0 mod 8), domain: d0 in [0, 7]",
                         "output": "(d0) -> (d0), domain: d0 in [0, 7]"})]
    path = tmp_path / "inductor.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_json_format_one_record_per_line_in_order(log: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(log), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(r["line"], r["verdict"]) for r in doc["records"]] == [
        (1, "proved"), (2, "refuted"), (3, "unsupported"), (4, "refuted"), (6, "proved")]
    assert doc["records"][1]["counterexample"] == {"x0": 16, "x1": 0} or \
        doc["records"][1]["counterexample"]["x0"] >= 16
    assert doc["records"][0]["counterexample"] is None
    sized = doc["records"][3]  # sizes first, then the loop variables, re-evaluated
    assert list(sized["counterexample"])[0] == "s0" and "s0 = " in sized["reason"]
    point = sized["counterexample"]
    assert evaluate(WRONG_SIZED[1][1], point) == sized["expr_value"] != sized["result_value"]
    fewer = sum(r["fewer_divisions"] is True for r in doc["records"])
    assert sized["divisions"]["verifidx"] == 0  # FloorDiv(x0 + s0*x1, s0) is x1 for every s0
    assert doc["summary"] == {"proved": 2, "refuted": 2, "unknown": 0, "unsupported": 1,
                              "error": 0, "fewer_divisions": fewer}


def test_text_junit_github(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(log)]) == 1
    out = capsys.readouterr().out
    assert f"{log}:2: refuted" in out and "counterexample: x0 = " in out
    assert "5 records: 2 proved, 2 refuted, 0 unknown, 1 unsupported" in out
    assert f"{log}:4: refuted" in out and "counterexample: s0 = " in out
    assert main(["validate", str(log), "--format", "junit"]) == 1
    root = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    cases = root.findall(".//testcase")
    assert [c.get("line") for c in cases] == ["1", "2", "3", "4", "6"]
    assert cases[1].find("failure") is not None and cases[2].find("skipped") is not None
    assert main(["validate", str(log), "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"::error file={log},line=2,")
    assert lines[1].startswith(f"::error file={log},line=4,")
    assert len(lines) == 3


def test_all_proved_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text("\n".join(_line(*r) for r in RIGHT) + "\n")
    assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize("line, where, what", [
    ('{"expr": "x0 +* 3", "var_ranges": {"x0": "4"}, "result": "x0"}', "2:5",
     "expr: expected an integer"),
    ('{"expr": "x0", "var_ranges": {"x0": "4"}, "result": "Foo(x0)"}', "2:1",
     "result: unknown function Foo"),
    ('{"expr": "x0 + y", "var_ranges": {"x0": "4"}, "result": "x0"}', "2:6",
     "symbol y has no range"),
    ('{"expr": "x0", "var_ranges": {"x0": "4"}, "result": "x0"', "2:57", "expected a JSON"),
    ('{"expr": "x0", "result": "x0"}', "2:1", "expected the field 'var_ranges'"),
    ('{"input": "(d0) -> (d0 mod )", "output": "(d0) -> (d0)"}', "2:17", "input: expected"),
    ('[1, 2]', "2:1", "expected a JSON object"),
    ('{"expr": "x0", "var_ranges": {"x0": "s7"}, "result": "x0"}', "2:1",
     "the extent of x0: symbol s7 has no range"),
    ('{"expr": "x0", "var_ranges": {"x0": "s0"}, "size_ranges": {"s0": "28"}, "result": "x0"}',
     "2:1", "expected the range of s0 as [lo, hi]"),
    ('{"expr": "x0", "var_ranges": {"x0": "s0"}, "size_ranges": {"s0": ["2", "lots"]}, '
     '"result": "x0"}', "2:1", "expected the range of s0 as integers (int_oo above)"),
])
def test_bad_input_is_an_error_record_not_the_end(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  line: str, where: str, what: str) -> None:
    """A malformed line is one `error` record with its line and column; the records before
    and after it are still validated; exit 2 (bad input, nothing refuted)."""
    path = tmp_path / "bad.jsonl"
    path.write_text(_line(*RIGHT[0]) + "\n" + line + "\n" + _line(*RIGHT[1]) + "\n")
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out
    assert f"{path}:1: proved" in out and f"{path}:3: proved" in out
    errors = [ln for ln in out.splitlines() if ": error: " in ln]
    assert len(errors) == 1 and errors[0].startswith(f"{path}:{where}: error: ")
    assert what in errors[0]
    assert main(["validate", str(path), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [r["verdict"] for r in doc["records"]] == ["proved", "error", "proved"]
    line_no, column = where.split(":")
    assert (doc["records"][1]["line"], doc["records"][1]["column"]) == (2, int(column))
    assert doc["summary"]["error"] == 1


def test_a_refuted_map_record_prints_its_point_and_results_as_map_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    path = tmp_path / "maps.jsonl"
    path.write_text(json.dumps({"input": "(d0) -> (d0 mod 8), domain: d0 in [0, 15]",
                                "output": "(d0) -> (d0), domain: d0 in [0, 15]"}) + "\n")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "{" not in out and "[" not in out.split("verifidx:")[0], out  # no dict, no list
    found = re.search(r"counterexample: d0 = (\d+): input gives \((\d+)\), result gives "
                      r"\((\d+)\)", out)
    assert found is not None, out
    d0, given, result = map(int, found.groups())
    assert (given, result) == (d0 % 8, d0) and given != result
