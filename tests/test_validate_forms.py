"""`verifidx validate` on every record form of docs/inductor.md, malformed lines among them
(issue 38): one verdict per line and never the end of the report; `Where` read as a case split,
its verdicts checked against brute force; divisions counted in the expression alone; a modulus
shown nonnegative by the extents; a missing sympy said as a pip install line."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sympy")

from inductor_oracle import evaluate  # noqa: E402

from verifidx.cli import main  # noqa: E402
from verifidx.clients.sympy_bridge import from_sympy, parse_text  # noqa: E402
from verifidx.clients.validation import validate_record  # noqa: E402
from verifidx.core.errors import UnsupportedError  # noqa: E402
from verifidx.core.indexing_map import SIZE_MAX  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT / "tests" / "data" / "inductor" / "dynamic_roll_scale.jsonl"


def _rec(expr: str, ranges: dict[str, str], result: str,
         sizes: dict[str, list[str]] | None = None) -> str:
    return json.dumps({"expr": expr, "var_ranges": ranges, "size_ranges": sizes or {},
                       "result": result})


def _points(record: dict[str, Any], rng: random.Random, count: int) -> list[dict[str, int]]:
    """All points of small static loops, else random sizes near their lower ends and random
    points of the loops at those sizes."""
    out = []
    for _ in range(count):
        sizes = {}
        for name, (lo, hi) in record["size_ranges"].items():
            top = SIZE_MAX if hi == "int_oo" else int(hi)
            sizes[name] = rng.randint(int(lo), min(top, int(lo) + 9))
        extents = {k: evaluate(v, sizes) for k, v in record["var_ranges"].items()}
        out.append({**sizes, **{k: rng.randrange(e) for k, e in extents.items()}})
    return out


#: Where (torch.roll's form under dynamic=True, and compound conditions): (expr, ranges,
#: sizes, result); the oracle says which are right.
WHERE = [
    ("Where(x0 < 1, x0 + 7, x0 - 1)", {"x0": "8"}, {}, "ModularIndexing(x0 + 7, 1, 8)"),
    ("Where(x0 < 1, x0 + 7, x0 - 1)", {"x0": "8"}, {}, "x0 + 7"),
    ("Where(x0 < 1, x0, 0)", {"x0": "5"}, {}, "0"),
    ("Where(x0 < 1, x0, 0)", {"x0": "5"}, {}, "x0"),
    ("Where(x0 < 1, x0 + s0 - 1, x0 - 1)", {"x0": "s0"}, {"s0": ["2", "int_oo"]},
     "Mod(x0 + s0 - 1, s0)"),
    ("Where(x0 < 1, x0 + s0 - 1, x0 - 1)", {"x0": "s0"}, {"s0": ["2", "int_oo"]},
     "Where(x0 < 1, s0, x0 - 1)"),
    ("Where((x0 < 2) & (x1 >= 1), x0, x1)", {"x0": "4", "x1": "3"}, {},
     "Where(~((x0 < 2) & (x1 >= 1)), x1, x0)"),
    ("Where(Eq(x0, 3), 0, x0)", {"x0": "6"}, {}, "Where(Ne(x0, 3), x0, 0)"),
    ("Where((x0 < 2) | (x0 > 4), 1, 2)", {"x0": "6"}, {}, "Where(x0 < 2, 1, 2)"),
    ("x0", {"x0": "8"}, {}, "Where(x0 < 4, x0, 3)"),
    ("Where(x0 < 3, Where(x1 < 2, x0, x1), 5)", {"x0": "6", "x1": "4"}, {},
     "Where(x1 < 2, Where(x0 < 3, x0, 5), Where(x0 >= 3, 5, x1))"),
]


@pytest.mark.parametrize("expr, ranges, sizes, result", WHERE)
def test_where_is_a_case_split_that_agrees_with_brute_force(
        expr: str, ranges: dict[str, str], sizes: dict[str, list[str]], result: str) -> None:
    line = _rec(expr, ranges, result, sizes)
    record = json.loads(line)
    v = validate_record(line)
    points = _points(record, random.Random(line), 400)
    differ = [p for p in points if evaluate(expr, p) != evaluate(result, p)]
    if v.verdict == "refuted":
        point = v.counterexample
        assert point is not None
        assert evaluate(expr, point) == v.expr_value != v.result_value == evaluate(result,
                                                                                    point)
    else:  # every pair here is decided: a right one proved (and then no point differs)
        assert v.verdict == "proved", v.reason
        assert not differ, differ[:3]


def test_float_literals_are_read_or_unsupported_per_record(tmp_path: Path,
                                                          capsys: Any) -> None:
    """Interpolation by a scale factor: TruncToInt(1.5*ToFloat(s0)) extents (was: exit 2 at
    the float, nothing reported). Exact in doubles it is read; a float elsewhere, or a
    product that may round, is unsupported."""
    sizes = {"s0": ["2", "int_oo"]}
    lines = [_rec("x0", {"x0": "TruncToInt(1.5*ToFloat(s0))"}, "x0", sizes),
             _rec("ModularIndexing(x0, 1, s0)", {"x0": "TruncToInt(1.5*ToFloat(s0))"}, "x0",
                  sizes),
             _rec("x0", {"x0": "TruncToInt(0.1*ToFloat(s0))"}, "x0", sizes),
             _rec("2.0*x0", {"x0": "4"}, "2*x0"),
             _rec("x0", {"x0": "4"}, "x0")]
    path = tmp_path / "floats.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert main(["validate", str(path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [r["verdict"] for r in doc["records"]] == [
        "proved", "refuted", "unsupported", "unsupported", "proved"]
    cex = doc["records"][1]["counterexample"]  # x0 reaches s0 below 1.5 * s0
    assert cex["s0"] <= cex["x0"] < math.trunc(1.5 * cex["s0"])
    assert "inexact" in doc["records"][2]["reason"]
    assert "non-integer" in doc["records"][3]["reason"]


@pytest.mark.parametrize("scale", ["1.5", "2.0", "0.75", "1.25", "3.0", "0.1", "2.5"])
def test_a_float_scale_extent_is_the_double_truncation_at_every_size(scale: str) -> None:
    """The extent read from TruncToInt(c*ToFloat(s0)) has, at each size, exactly as many
    points as C's cast of the double product gives (Python's floats are doubles); 0.1, 53
    bits of mantissa, times sizes up to 300 may round: refused."""
    if scale == "0.1":
        with pytest.raises(UnsupportedError, match="inexact"):
            from_sympy(parse_text("x0", {"x0", "s0"}), {"x0": "TruncToInt(0.1*ToFloat(s0))"},
                       {"s0": ["3", "300"]})
        return
    m = from_sympy(parse_text("x0", {"x0", "s0"}), {"x0": f"TruncToInt({scale}*ToFloat(s0))"},
                   {"s0": ["3", "300"]})
    for s in range(3, 301):
        count = sum(1 for x in range(m.dims[0].bounds.hi + 1)
                    if m.constraints_satisfied([x], sizes={"s0_": s}))
        assert count == math.trunc(float(scale) * float(s)), (scale, s)


def test_divisions_are_counted_in_the_expression_not_the_extents() -> None:
    """The extent `(2*s0)//2` is a constraint with a division that verifidx's simplification
    removes; the expression `x0` has none on any side, so verifidx keeps no fewer."""
    v = validate_record(_rec("x0", {"x0": "((2*s0)//2)"}, "x0", {"s0": ["1", "64"]}))
    assert v.verdict == "proved"
    assert v.divisions == {"expr": 0, "result": 0, "verifidx": 0}
    assert v.fewer_divisions is False
    w = validate_record(_rec("ModularIndexing(x0, 1, s0)", {"x0": "((2*s0)//2)"}, "x0",
                             {"s0": ["1", "64"]}))
    assert w.verdict == "proved"
    assert w.divisions == {"expr": 1, "result": 0, "verifidx": 0}


def test_a_modulus_the_extent_shows_nonnegative_is_read() -> None:
    """Mod(s0 - x0 - 1, s0) with x0 < s0: the extent's constraint x0 - s0 <= -1 makes the
    dividend nonnegative (bounds alone give s0 - x0 - 1 >= 1 - (2^31 - 2) - 1)."""
    ranges, sizes = {"x0": "s0"}, {"s0": ["2", "int_oo"]}
    v = validate_record(_rec("Mod(s0 - x0 - 1, s0)", ranges, "s0 - x0 - 1", sizes))
    assert v.verdict == "proved", v.reason
    record = json.loads(_rec("Mod(s0 - x0 - 1, s0)", ranges, "s0 - x0 - 1", sizes))
    assert v.simplified is not None
    for p in _points(record, random.Random(4), 300):  # and verifidx's simplification
        assert evaluate(v.simplified, p) == evaluate("Mod(s0 - x0 - 1, s0)", p)
    # one less and the dividend is -1 at x0 = s0 - 1: still refused
    w = validate_record(_rec("Mod(s0 - x0 - 2, s0)", ranges, "s0 - x0 - 2", sizes))
    assert w.verdict == "unsupported" and "may be negative" in w.reason
    # the same through a loop nest's product extent
    z = validate_record(_rec("ModularIndexing(s0*s1 - x1 - 1, s1, s0)", {"x1": "s0*s1"},
                             "FloorDiv(s0*s1 - x1 - 1, s1)",
                             {"s0": ["2", "int_oo"], "s1": ["2", "int_oo"]}))
    assert z.verdict == "proved", z.reason


#: Every record form of docs/inductor.md, then malformed lines: (line, verdict or None for
#: any verdict but error).
MIXED = [
    (_rec("ModularIndexing(x0 + 64*x1, 4, 16)", {"x0": "64", "x1": "8"}, "(x0//4)"),
     "proved"),
    (_rec("ModularIndexing(x0, 1, 16)", {"x0": "17"}, "x0"), "refuted"),
    (_rec("FloorDiv(x0 + s0*x1, s0)", {"x0": "s0", "x1": "4"}, "x1", {"s0": ["2", "int_oo"]}),
     "proved"),
    (_rec("x0 + s0*indirect0", {"x0": "8"}, "x0 + s0*indirect0",
          {"s0": ["2", "int_oo"], "indirect0": ["0", "int_oo"]}), "unsupported"),
    (_rec("FloorDiv(s27, 2*FloorDiv(s27, 4))", {"x0": "4"}, "2", {"s27": ["2", "int_oo"]}),
     "unsupported"),
    (_rec("x0", {"x0": "s0"}, "x0", {"s0": ["0", "int_oo"]}), "unsupported"),
    (_rec("IntTrueDiv(x0, 2)", {"x0": "4"}, "x0"), "unsupported"),
    (_rec("floor(x0/2) + ceiling(x1/3)", {"x0": "8", "x1": "9"},
          "FloorDiv(x0, 2) + CeilDiv(x1, 3)"), "proved"),
    (_rec("Min(x0, 15) + Max(x1, 0) + Identity(x1) + PythonMod(x0, 4) + x0 % 4 + x1**2",
          {"x0": "16", "x1": "4"}, "x0 + 2*x1 + 2*ModularIndexing(x0, 1, 4) + x1**2"),
     "proved"),
    (_rec("Where(x0 < 1, x0 + 3, x0 - 1)", {"x0": "4"}, "ModularIndexing(x0 + 3, 1, 4)"),
     "proved"),
    (_rec("x0", {"x0": "TruncToInt(2.0*ToFloat(s0))"}, "x0", {"s0": ["2", "int_oo"]}),
     "proved"),
    (_rec("x0", {"x0": "TruncToInt(2.0*ToFloat(s0) + 1)"}, "x0", {"s0": ["2", "int_oo"]}),
     "unsupported"),
    (json.dumps({"input": "(d0) -> (d0 mod 8), domain: d0 in [0, 7]",
                 "output": "(d0) -> (d0), domain: d0 in [0, 7]"}), "proved"),
    (json.dumps({"input": "(d0)<N> -> (d0 mod N), domain: d0 in [0, 63], N in [2, 64], "
                          "d0 - N in [-64, -1]",
                 "output": "(d0)<N> -> (d0), domain: d0 in [0, 63], N in [2, 64], "
                           "d0 - N in [-64, -1]"}), "proved"),
    ("not json at all", "error"),
    ("[1, 2]", "error"),
    ('{"expr": "x0", "result": "x0"}', "error"),
    (_rec("x0 +* 3", {"x0": "4"}, "x0"), "error"),
    (_rec("Foo(x0)", {"x0": "4"}, "x0"), "error"),
    (_rec("x0 + y", {"x0": "4"}, "x0"), "error"),
    (_rec("x0", {"x0": "s7"}, "x0"), "error"),
    (_rec("x0 < 1", {"x0": "4"}, "x0"), "error"),
    (_rec("Where(x0, 1, 0)", {"x0": "4"}, "x0"), "error"),
    (json.dumps({"expr": "x0", "var_ranges": {"x0": "s0"}, "size_ranges": {"s0": "28"},
                 "result": "x0"}), "error"),
    (json.dumps({"input": "(d0) -> (d0 mod )", "output": "(d0) -> (d0)"}), "error"),
    ('{"expr": "x0", "var_ranges": {"x0": "4"}, "result": "x0"', "error"),
]


def test_a_log_of_every_form_and_malformed_lines_gives_one_verdict_per_line(
        tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n\n".join(line for line, _ in MIXED) + "\n")  # blank lines between
    assert main(["validate", str(path), "--format", "json"]) == 1  # a refutation first
    doc = json.loads(capsys.readouterr().out)
    assert [r["line"] for r in doc["records"]] == [1 + 2 * k for k in range(len(MIXED))]
    for r, (line, verdict) in zip(doc["records"], MIXED):
        assert r["verdict"] == verdict, (line, r["reason"])
        if verdict == "error":
            assert r["reason"] and isinstance(r["column"], int), r
    assert doc["summary"]["error"] == sum(v == "error" for _, v in MIXED)
    # text: one line per error record, file:line:column first
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    errors = [ln for ln in out if ": error: " in ln]
    assert len(errors) == doc["summary"]["error"]
    first = next(k for k, (_, v) in enumerate(MIXED) if v == "error")
    assert errors[0].startswith(f"{path}:{1 + 2 * first}:1: error: expected a JSON object")
    # without the refuted line: exit 2, the malformed lines are bad input
    path.write_text("\n".join(line for line, v in MIXED if v != "refuted") + "\n")
    assert main(["validate", str(path), "--format", "junit"]) == 2
    assert 'errors="12"' in capsys.readouterr().out


def test_the_committed_corpora_validate_without_an_abort(capsys: Any) -> None:
    for log in (ROOT / "benchmarks" / "data").glob("inductor_*.jsonl"):
        assert main(["validate", str(log), "--format", "json"]) == 0, log
        doc = json.loads(capsys.readouterr().out)
        lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
        assert len(doc["records"]) == len(lines)
        assert doc["summary"]["error"] == 0 and doc["summary"]["refuted"] == 0


def test_a_fresh_dynamic_capture_of_roll_and_scale_factors_validates(capsys: Any) -> None:
    """tools/capture_inductor.py --dynamic --model roll --model scale_factor (torch 2.13 CPU):
    no record is an error or refuted, every record with a float or a Where gets a verdict of
    its own, and each proved record agrees with the oracle at random sizes and points."""
    assert main(["validate", str(CAPTURE), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    lines = [ln for ln in CAPTURE.read_text().splitlines() if ln.strip()]
    assert len(doc["records"]) == len(lines)
    special = [k for k, ln in enumerate(lines) if "Where" in ln or "ToFloat" in ln]
    assert special  # the capture has the forms of issue 38
    for k in special:
        assert doc["records"][k]["verdict"] in ("proved", "unsupported"), doc["records"][k]
    assert doc["summary"]["error"] == 0 and doc["summary"]["refuted"] == 0
    rng = random.Random(38)
    for r, ln in zip(doc["records"], lines):
        if r["verdict"] != "proved":
            continue
        record = json.loads(ln)
        for p in _points(record, rng, 20):
            assert evaluate(record["expr"], p) == evaluate(record["result"], p)


def test_a_sympy_log_without_sympy_is_a_pip_install_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(_rec("x0", {"x0": "4"}, "x0") + "\n")
    code = ("import sys; sys.modules['sympy'] = None\n"  # `import sympy` raises ImportError
            "from verifidx.cli import main\n"
            f"sys.exit(main(['validate', {str(path)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: {path}:1: ")
    assert "pip install 'verifidx[sympy]'" in done.stderr
    assert "internal error" not in done.stderr
