"""Issue 10: each wrong result, crash and unknown the differential fuzzer found, as a test."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import verifidx as vx
from verifidx.core.expr import (
    MAX_DEPTH,
    Const,
    Dim,
    FloorDiv,
    Mod,
    Symbol,
    add,
    floordiv,
    minimum,
    mod,
    mul,
)
from verifidx.core.indexing_map import IndexingMap, compose
from verifidx.core.interval import range_of
from verifidx.rules import parse_rule
from verifidx.rules.base import UnprovenLawWarning, gate_laws
from verifidx.rules.model import ConstVar
from verifidx.simplifier.maps import Simplifier, checked_residue_bounds, checked_residue_merge
from verifidx.simplifier.rule_engine import RuleEngine
from verifidx.solve.smt import equal, is_empty

REPO = Path(__file__).resolve().parents[1]

# -- 1. merging mod constraints ---------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "(d0) -> (d0), domain: d0 in [0, 6], d0 mod 2 in [0, 0], d0 mod 3 in [0, 0], "
    "d0 mod 6 in [1, 5]",
    "(d0, d1)[s0] -> (min((s0 * 3), (s0 * 3))), domain: d0 in [2, 5], d1 in [-2, 2], "
    "s0 in [-1, 15], (d1 mod 3) in [2, 2], (d1 mod 12) in [4, 5], (d0) in [1, 4], "
    "(d1 mod 4) in [3, 3]",
])
def test_merging_mod_constraints_keeps_an_empty_map_empty(text: str) -> None:
    m = vx.parse_map(text)
    assert not m.relation()  # empty by enumeration
    trace: list = []
    out = vx.simplify(m, trace=trace)
    assert not out.relation()
    assert any(step.rule == "mod_constraints_merge" for step in trace)


def test_a_merge_intersects_with_the_constraint_already_there() -> None:
    m = vx.parse_map("(d0) -> (d0), domain: d0 in [0, 40], d0 mod 2 in [0, 0], "
                     "d0 mod 3 in [0, 0], d0 mod 6 in [0, 3]")
    out = m.simplify()
    assert out.relation() == m.relation() == {((), (d,), (d,)) for d in range(0, 37, 6)}


@given(st.integers(1, 13), st.integers(-2, 14), st.integers(1, 13), st.integers(-2, 14))
def test_checked_residue_merge_is_exact(m1: int, r1: int, m2: int, r2: int) -> None:
    got = checked_residue_merge(m1, r1, m2, r2)
    assert got is not False  # small periods are always checked
    for v in range(-200, 200):
        both = v % m1 == r1 and v % m2 == r2
        assert both == (got is not None and v % got[0] == got[1]), (v, got)


@given(st.integers(-20, 20), st.integers(-1, 25), st.integers(1, 9), st.integers(-1, 9))
def test_checked_residue_bounds_keep_every_point(lo: int, width: int, m: int, r: int) -> None:
    iv = vx.Interval(lo, lo + width)
    tight = checked_residue_bounds(iv, m, r)
    if iv.is_empty:
        assert tight is None  # nothing to tighten
        return
    assert tight is not None
    keep = [x for x in range(iv.lo, iv.hi + 1) if x % m == r]
    if keep:
        assert (tight.lo, tight.hi) == (keep[0], keep[-1])
    else:
        assert tight.is_empty

# -- 2. caches keyed by id() --------------------------------------------------------------------


def test_compiled_conditions_never_belong_to_a_dead_rule() -> None:
    m = vx.parse_map("(d0, d1) -> (max(d0, d1)), domain: d0 in [0, 3], d1 in [5, 9]")
    for _ in range(40):
        engine = RuleEngine([parse_rule("rule min_left: min(x, y) => x if hi(x) <= lo(y)")])
        del engine
        gc.collect()
        rule = parse_rule("rule max_left: max(x, y) => x if lo(x) >= hi(y)")
        out = Simplifier(RuleEngine([rule]), decide_emptiness=False).simplify(m)
        assert out.results != (Dim(0),)  # what min_left's condition would have allowed
        assert out.relation() == m.relation()


def test_no_cache_in_the_package_is_keyed_by_id() -> None:
    import verifidx.simplifier.rule_engine as simp

    rule = parse_rule("rule keyed: max(x, y) => x if lo(x) >= hi(y)")
    simp.compiled_condition(rule), simp.condition_check(rule), simp._rule_calls(rule)
    assert rule in simp._CONDITIONS and rule in simp._CHECKS and rule in simp._CALLS
    assert all(not isinstance(k, int) for k in simp._CONDITIONS)
    assert all(not isinstance(k, int) for k in simp._CHECKS)
    assert all(not isinstance(k, int) for k in simp._CALLS)

# -- 3. divisors are constants -------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "(d0, d1) -> (max(d0 floordiv d1, 5)), domain: d0 in [0, 3], d1 in [0, 3]",
    "(d0, d1) -> ((d0 floordiv d1) * 0), domain: d0 in [0, 3], d1 in [0, 3]",
    "(d0, d1) -> (d0 floordiv d1 - d0 floordiv d1), domain: d0 in [0, 3], d1 in [0, 3]",
    "(d0) -> (min(-3, d0 mod d0)), domain: d0 in [-4, 0]",
    "()[s0] -> ((-3 mod s0) mod 1), domain: s0 in [0, 3]",
    "(d0) -> (1 mod d0), domain: d0 in [0, 0]",
    "(d0) -> (d0 mod -3), domain: d0 in [0, 3]",
    "(d0) -> (d0 floordiv 0), domain: d0 in [0, 3]",
    "(d0) -> (d0 mod 0), domain: d0 in [0, 3]",
])
def test_a_divisor_that_is_not_a_valid_constant_is_a_parse_error(text: str) -> None:
    with pytest.raises(vx.ParseError, match="integer constant as the divisor of"):
        vx.parse_map(text)


def test_the_python_api_enforces_the_same_contract() -> None:
    with pytest.raises(vx.DivisorError):
        IndexingMap.build([Mod(Dim(0), Const(-3))], [(0, 9)])
    with pytest.raises(vx.DivisorError):
        IndexingMap.build([Dim(0)], [(0, 9)], constraints=[(Dim(0) % Dim(0), (0, 0))])
    with pytest.raises(vx.DivisorError):
        IndexingMap.build([floordiv(Dim(0), Symbol(0))], [(0, 9)], [(1, 3)])
    with pytest.raises(vx.DivisorError):  # a rule's constant is no divisor of a map
        IndexingMap((FloorDiv(Dim(0), ConstVar("c0")),), (vx.Var(vx.Interval(0, 3)),))


def test_with_constant_divisors_every_term_is_defined_so_laws_may_drop_it() -> None:
    m = vx.parse_map("(d0) -> ((d0 floordiv 3) * 0, d0 floordiv 3 - d0 floordiv 3), "
                     "domain: d0 in [-4, 4]")
    assert m.simplify().relation() == m.relation()

# -- 4. canonical laws need their certificates ----------------------------------------------------


def test_a_refuted_canonical_law_is_never_applied(tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "rules")
    shutil.copytree(REPO / "proofs", tmp_path / "proofs")
    cert = tmp_path / "proofs" / "canonical.json"
    doc = json.loads(cert.read_text())
    doc["rules"]["like_terms"]["verdict"] = "refuted"
    cert.write_text(json.dumps(doc))
    text = "(d0) -> (d0 * 100 + d0 * 200), domain: d0 in [0, 3]"
    try:
        with pytest.warns(UnprovenLawWarning, match="like_terms"):
            on = gate_laws(tmp_path / "rules")
        assert "like_terms" not in on
        out = vx.parse_map(text).simplify()
        assert "300" not in str(out)
        assert out.relation() == vx.parse_map(text).relation()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the bundled base must be fully proven
            gate_laws()
    assert str(vx.parse_map(text).simplify()) == "(d0) -> (d0 * 300), domain: d0 in [0, 3]"


def test_every_law_of_the_bundled_base_is_on() -> None:
    from verifidx.core import laws

    assert laws.ON.enabled() == set(laws.NAMES) and laws.ON.canonical_sums


def test_prove_still_runs_when_a_law_is_unproven(tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "rules")
    (tmp_path / "proofs").mkdir()  # no certificate at all
    code = ("import sys, verifidx.rules.base as b; b.gate_laws(sys.argv[1]); "
            "from verifidx.cli import main; "
            "sys.exit(main(['prove', sys.argv[1] + '/canonical.rules', '--no-write']))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "rules")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "like_terms: proved" in out.stdout

# -- crashes ---------------------------------------------------------------------------------


def _deepest(step) -> vx.Expr:  # type: ignore[no-untyped-def]
    e: vx.Expr = Dim(0)
    while True:
        try:
            e = step(e)
        except vx.DepthError:
            return e


STEPS = {
    "mod_div": lambda e: mod(add(mul(e, 3), 1), 7) if e.depth % 2 else floordiv(add(e, 1), 2),
    "min_neg": lambda e: minimum(add(e, Symbol(0)), 5) if e.depth % 2 else mul(e, -1),
    "product": lambda e: add(mul(e, Dim(0)), Symbol(0)),
}


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_every_walker_handles_the_maximum_depth(kind: str) -> None:
    e = _deepest(STEPS[kind])
    assert e.depth >= MAX_DEPTH - 1
    m = IndexingMap.build([e], [(0, 5)], [(0, 3)], constraints=[(e, (-100, 100))])
    text = str(m)
    assert vx.parse_map(text) == m
    s = m.simplify()
    assert s.relation() == m.relation()
    assert is_empty(m).holds is False
    assert equal(m, s).holds is not False
    assert compose(IndexingMap.build([Dim(0)], [(0, 5)]), m).relation() == m.relation()
    assert range_of(e, m.bounds).lo <= m.evaluate([2], [1])[0] <= range_of(e, m.bounds).hi


@pytest.mark.parametrize("text", [
    "(d0) -> (" + "-(" * 198 + "d0" + ")" * 198 + "), domain: d0 in [0, 3]",
    "(d0) -> (" + "(" * 300 + "d0" + ")" * 300 + "), domain: d0 in [0, 3]",
    "(d0) -> (d0" + " mod 7" * 80 + "), domain: d0 in [0, 3]",
    "(d0) -> (" + "min(" * 100 + "d0" + ", 1)" * 100 + "), domain: d0 in [0, 3]",
])
def test_too_deep_input_is_a_parse_error_with_a_position(text: str) -> None:
    with pytest.raises(vx.ParseError, match=f"nested at most {MAX_DEPTH} levels") as info:
        vx.parse_map(text)
    assert info.value.line == 1 and info.value.column > 1


def test_the_issues_99_level_chain_is_rejected_not_crashed() -> None:
    e = "d0"
    for i in range(99):
        e = f"({e} * 3 + 1) mod 7" if i % 2 == 0 else f"({e} + 1) floordiv 2"
    with pytest.raises(vx.ParseError, match="nested"):
        vx.parse_map(f"(d0) -> ({e}), domain: d0 in [0, 3]")


def test_the_cli_reports_depth_on_one_line(capsys) -> None:
    from verifidx.cli import main

    text = "(d0) -> (" + "-(" * 198 + "d0" + ")" * 198 + "), domain: d0 in [0, 3]"
    assert main(["simplify", text]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: <") and "nested at most" in err and err.count("\n") == 1


def test_products_keep_their_grouping_when_printed() -> None:
    d0, d1, d2 = Dim(0), Dim(1), Dim(2)
    m = IndexingMap.build([d0 * (d1 * d2), (d0 * d1) * d2], [(0, 3)] * 3)
    assert str(m).startswith("(d0, d1, d2) -> (d0 * (d1 * d2), d0 * d1 * d2)")
    assert vx.parse_map(str(m)) == m

# -- incomplete ------------------------------------------------------------------------------


def test_equal_finds_a_counterexample_in_a_large_range_box() -> None:
    f = vx.parse_map("(d0, d1)[s0] -> (s0 * -3), domain: d0 in [-1, 1], d1 in [-2, -2], "
                     "s0 in [-2, 4292]")
    g = vx.parse_map("(d0, d1)[s0] -> ((s0 + 1) * -3), domain: d0 in [-1, 1], d1 in [-2, -2], "
                     "s0 in [-2, 4292]")
    v = equal(f, g)
    assert v.holds is False and v.counterexample is not None
    point = v.counterexample
    value = f.evaluate([point["d0"], point["d1"]], [point["s0"]])
    # no range value of g gives that result at those dimensions
    assert all(g.evaluate([point["d0"], point["d1"]], [s])[0] != value[0]
               for s in range(-2, 4293))
    assert equal(f, f.replace(range_vars=f.range_vars)).holds is True


def test_constraints_that_become_one_expression_keep_both_bounds() -> None:
    # fuzzer, seed 2211, case ~790,000: `d0 * 2` and `d0 + d0` have one canonical form, and the
    # canonical comparison kept only the second bound, so equal() said "structurally identical"
    # of two maps that differ at d0 = -3
    text = ("(d0)[s0] -> (s0 * 16 * (d0 floordiv -4), (d0 ceildiv 2) * s0), "
            "domain: d0 in [-3, 4], s0 in [6, 7], {extra}d0 + d0 in [-6, 0]")
    loose = vx.parse_map(text.format(extra=""))
    tight = vx.parse_map(text.format(extra="d0 * 2 in [-4, 5], "))
    verdict = vx.equal(loose, tight)
    assert verdict.holds is False
    assert verdict.counterexample is not None and verdict.counterexample["d0"] == -3
    assert vx.equal(tight, tight.simplify()).holds is True
    # the helper every re-keying of constraints goes through intersects on a collision
    from verifidx.core.canonical import canon
    from verifidx.core.indexing_map import merged_constraints
    from verifidx.core.interval import Interval

    d0 = Dim(0)
    merged = merged_constraints([(canon(add(d0, d0)), Interval(-6, 0)),
                                 (canon(mul(d0, 2)), Interval(-4, 5))])
    assert list(merged.values()) == [Interval(-4, 0)]
