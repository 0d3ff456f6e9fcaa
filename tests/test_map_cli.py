"""`verifidx map compose` and MLIR `affine_map` text with bounds, from the command line.

The oracle for composition is the fuzzer's independent reader and enumerator
(tests/fuzz/fuzz_oracle.py, which imports nothing of verifidx)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz import fuzz_oracle as oracle
from tests.strategies import maps
from verifidx.cli import main
from verifidx.core.syntax import print_affine_map, print_map


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _relation(text: str) -> set | None:  # type: ignore[type-arg]
    try:
        return oracle.relation(oracle.parse(text))
    except oracle.Undefined:
        return None


@st.composite
def composable(draw: st.DrawFn) -> tuple[str, str]:
    first = draw(maps(max_results=2, minmax=False))
    second = draw(maps(num_dims=first.num_results, minmax=False))
    return print_map(first), print_map(second)


@settings(max_examples=40, deadline=None)
@given(composable())
def test_compose_is_the_relation_of_first_then_second(pair: tuple[str, str]) -> None:
    first, second = pair
    rel1, rel2 = _relation(first), _relation(second)
    if rel1 is None or rel2 is None:  # an operation undefined inside a domain: no relation
        return
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # capsys is function-scoped, not per example
        code = main(["map", "compose", first, second, "--json"])
    assert code == 0
    composed = json.loads(out.getvalue())["map"]
    got = _relation(composed)
    assert got == oracle.compose_relation(rel1, rel2), (first, second, composed)


def test_compose_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    transpose = "(d0, d1) -> (d1, d0), domain: d0 in [0, 9], d1 in [0, 4]"
    linear = "(d0, d1) -> (d0 * 10 + d1), domain: d0 in [0, 4], d1 in [0, 9]"
    code, out, _ = run(["map", "compose", transpose, linear], capsys)
    assert code == 0
    composed = out.strip()
    expected = {((), (a, b), (b * 10 + a,)) for a in range(10) for b in range(5)}
    assert _relation(composed) == expected
    code, out, _ = run(["map", "compose", transpose, linear, "--json"], capsys)
    assert code == 0 and json.loads(out) == {"map": composed}


def test_compose_simplify_uses_proven_rules(capsys: pytest.CaptureFixture[str]) -> None:
    split = "(d0) -> (d0 floordiv 4, d0 mod 4), domain: d0 in [0, 15]"
    join = "(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 3], d1 in [0, 3]"
    code, out, _ = run(["map", "compose", split, join, "--simplify"], capsys)
    assert code == 0
    assert out.strip() == "(d0) -> (d0), domain: d0 in [0, 15]"
    code, out, _ = run(["map", "compose", split, join], capsys)
    assert "floordiv" in out  # without --simplify the composition is printed as composed


def test_compose_mismatch_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["map", "compose", "(d0) -> (d0), domain: d0 in [0, 3]",
                          "(d0, d1) -> (d0), domain: d0 in [0, 3], d1 in [0, 3]"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == "error: cannot compose: first map has 1 results, second has 2 dims"


def test_affine_map_bounds_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["map", "print", "affine_map<(d0)[s0] -> (d0 + s0)>",
                        "--dim-sizes", "10", "--symbol-sizes", "4"], capsys)
    assert code == 0
    assert out.strip() == "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 9], s0 in [0, 3]"
    code, out, _ = run(["map", "eval", "affine_map<(d0, d1) -> (d1, d0)>", "--dim-sizes", "3,5",
                        "--dims", "2,4", "--json"], capsys)
    assert code == 0
    assert json.loads(out)["results"] == [4, 2] and json.loads(out)["in_domain"] is True


@pytest.mark.parametrize("flags, needed", [(["--dim-sizes", "10"], "needs 1 sizes"),
                                           (["--dim-sizes", "10,3", "--symbol-sizes", "2"],
                                            "needs 1 sizes"),
                                           (["--dim-sizes", "0", "--symbol-sizes", "2"],
                                            "at least 1")])
def test_affine_map_sizes_that_do_not_fit(flags: list[str], needed: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["map", "print", "affine_map<(d0)[s0] -> (d0 + s0)>", *flags], capsys)
    assert code == 2 and out == "" and needed in err and len(err.strip().splitlines()) == 1


def test_affine_map_without_bounds_says_how_to_give_them(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    code, _, err = run(["map", "print", "affine_map<(d0)[s0] -> (d0 + s0)>"], capsys)
    assert code == 2
    assert "1:1: an affine_map has no bounds" in err and "--dim-sizes" in err


def test_mlir_output_keeps_the_domain_and_reads_back(capsys: pytest.CaptureFixture[str]) -> None:
    text = "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 9], s0 in [0, 3], d0 + s0 in [0, 5]"
    code, out, _ = run(["map", "print", "--mlir", text], capsys)
    assert code == 0
    mlir = out.strip()
    assert mlir == ("affine_map<(d0)[s0] -> (d0 + s0)>  "
                    "// domain: d0 in [0, 9], s0 in [0, 3], d0 + s0 in [0, 5]")
    code, out, _ = run(["map", "print", mlir], capsys)
    assert code == 0 and out.strip() == text


def test_affine_domain_errors_point_into_the_original_text(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    code, _, err = run(["map", "print", "affine_map<(d0) -> (d0)>  // domain: d0 in [0, x]"],
                       capsys)
    assert code == 2
    assert err.strip() == "error: <argument>:1:48: expected an integer, found 'x'"


@settings(max_examples=60, deadline=None)
@given(maps(max_rts=0, minmax=False))
def test_affine_text_with_domain_round_trips(m) -> None:  # type: ignore[no-untyped-def]
    if m.is_undefined or m.is_known_empty:
        return
    from verifidx import parse_map

    back = parse_map(print_affine_map(m, domain=True))
    assert print_map(back) == print_map(m)
