"""Differential fuzzing of the map layer against an independent oracle (issues 10 and 38).

Each example is one random map (tests/fuzz/fuzz_cases.py; with sizes, tests/fuzz/fuzz_sized.py)
put through verifidx and compared by full enumeration with tests/fuzz/fuzz_oracle.py, which
shares no code with verifidx; a map with sizes is compared at several assignments of its sizes.
The `ci` profile runs 60 maps per operation and kind, derandomized (the same maps on every
run), `HYPOTHESIS_PROFILE=thorough` 2,000; `tools/fuzz_maps.py` runs hundreds of thousands.
"""

from __future__ import annotations

import random

import fuzz_cases
import fuzz_oracle
import fuzz_sized
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import verifidx as vx


@pytest.mark.parametrize("op", fuzz_cases.OPERATIONS)
@settings(derandomize=True)
@given(seed=st.integers(0, 2**63 - 1))
def test_operation_agrees_with_enumeration(op: str, seed: int) -> None:
    report = fuzz_cases.Report()
    rng = random.Random(seed)
    fuzz_cases.check(rng, fuzz_cases.generate(rng), report, op)
    assert not report.wrong, report.wrong[0]
    assert not report.crashes, report.crashes[0]


@pytest.mark.parametrize("op", fuzz_sized.OPERATIONS)
@settings(derandomize=True)
@given(seed=st.integers(0, 2**63 - 1))
def test_operation_with_sizes_agrees_with_enumeration_at_each_size(op: str, seed: int) -> None:
    report = fuzz_cases.Report()
    rng = random.Random(seed)
    fuzz_sized.check(rng, fuzz_sized.generate(rng), report, op)
    assert not report.wrong, report.wrong[0]
    assert not report.crashes, report.crashes[0]


def test_the_fuzzer_finds_a_simplification_true_at_one_size_only(monkeypatch) -> None:
    """The sized harness can fail: a simplifier that reads a size as its lower end (right at
    that size, wrong at the others) is caught, and so is one that forgets a constraint."""
    real = vx.IndexingMap.simplify

    def at_lowest(self, point_dims: str = "replace"):  # type: ignore[no-untyped-def]
        out = real(self, point_dims)
        moving = [z for z in out.sizes if z.bounds.lo < z.bounds.hi]
        if not moving:
            return out
        low = {vx.Size(moving[0].name): vx.Const(moving[0].bounds.lo)}
        return out.replace(results=tuple(r.substitute(low) for r in out.results))

    def forgetful(self, point_dims: str = "replace"):  # type: ignore[no-untyped-def]
        out = real(self, point_dims)
        return out.replace(constraints={}) if out.sizes and out.constraints else out

    for planted in (at_lowest, forgetful):
        monkeypatch.setattr(vx.IndexingMap, "simplify", planted)
        report = fuzz_cases.Report()
        rng = random.Random(5)
        for _ in range(150):
            fuzz_sized.check(rng, fuzz_sized.generate(rng), report, "simplify")
            if report.wrong:
                break
        assert any("simplify changed the relation at sizes" in w for w in report.wrong), \
            planted.__name__


def test_the_fuzzer_finds_a_false_equality_with_sizes(monkeypatch) -> None:
    """An `equal` that answers True for maps with sizes whenever they agree at the smallest
    sizes is caught."""
    real = vx.equal

    def hasty(f, g, timeout_ms: int = 2000):  # type: ignore[no-untyped-def]
        if f.sizes and f.sizes == g.sizes:
            low = {z.name: z.bounds.lo for z in f.sizes}
            if real(f.with_sizes(low), g.with_sizes(low), timeout_ms).holds:
                return vx.Verdict(True, message="planted")
        return real(f, g, timeout_ms)

    monkeypatch.setattr(vx, "equal", hasty)
    report = fuzz_cases.Report()
    rng = random.Random(11)
    for _ in range(200):
        fuzz_sized.check(rng, fuzz_sized.generate(rng), report, "equal")
        if report.wrong:
            break
    assert any("equal said True" in w for w in report.wrong)


def test_the_fuzzer_finds_a_planted_wrong_simplification(monkeypatch) -> None:
    """The harness can fail: a simplifier that forgets a constraint is caught."""
    real = vx.IndexingMap.simplify

    def forgetful(self, point_dims: str = "replace"):  # type: ignore[no-untyped-def]
        out = real(self, point_dims)
        return out.replace(constraints={}) if out.constraints else out

    monkeypatch.setattr(vx.IndexingMap, "simplify", forgetful)
    report = fuzz_cases.Report()
    rng = random.Random(5)
    for _ in range(300):
        fuzz_cases.check(rng, fuzz_cases.generate(rng), report, "simplify")
    assert any("simplify changed the relation" in w for w in report.wrong)


def test_the_oracle_reads_what_verifidx_prints() -> None:
    text = ("(d0, d1)[s0]{rt0} -> (-d0 mod 3 + s0 * -2, min(d1 floordiv -2, max(s0, rt0)) "
            "ceildiv 2), domain: d0 in [-3, 3], d1 in [0, 5], s0 in [0, 2], rt0 in [1, 2], "
            "d0 + s0 in [-2, 4], d1 mod 4 in [1, 1]")
    m = vx.parse_map(text)
    om = fuzz_oracle.parse(text)
    expected = set()
    for d0 in range(-3, 4):
        for d1 in range(6):
            for s0 in range(3):
                for rt0 in (1, 2):
                    if -2 <= d0 + s0 <= 4 and d1 % 4 == 1:
                        a = (-d0) % 3 + s0 * -2
                        b = -((-min(d1 // -2, max(s0, rt0))) // 2)
                        expected.add(((rt0,), (d0, d1), (a, b)))
    assert fuzz_oracle.relation(om) == expected
    assert fuzz_oracle.relation(fuzz_oracle.parse(str(m))) == expected


def test_the_oracle_reads_any_depth() -> None:
    e = "d0"
    for i in range(400):
        e = f"({e} * 3 + 1) mod 7" if i % 2 else f"-({e} + 1) floordiv 2"
    om = fuzz_oracle.parse(f"(d0) -> ({e}), domain: d0 in [0, 3]")
    assert fuzz_oracle.depth(om.results[0]) > 400
    assert len(fuzz_oracle.relation(om)) == 4


def test_the_oracle_reads_a_family_one_size_at_a_time() -> None:
    text = ("(d0, d1)<N, M> -> (d0 * N + d1, (d0 + M) floordiv N), domain: d0 in [0, 3], "
            "d1 in [0, 5], N in [1, 4], M in [2, 2], d1 - N in [-2147483647, -1], "
            "N - M in [-1, 1]")
    m = vx.parse_map(text)
    for om in (fuzz_oracle.parse(text), fuzz_oracle.parse(str(m))):
        assert sorted(om.sizes) == [("M", 2, 2), ("N", 1, 4)]
        for n in range(1, 5):
            expected = {((), (d0, d1), (d0 * n + d1, (d0 + 2) // n)) for d0 in range(4)
                        for d1 in range(6) if d1 < n and abs(n - 2) <= 1}
            assert fuzz_oracle.relation(om, sizes={"N": n, "M": 2}) == expected
    with pytest.raises(fuzz_oracle.OracleError):
        fuzz_oracle.relation(fuzz_oracle.parse(text), sizes={"N": 5, "M": 2})


@pytest.mark.parametrize("divisor, status", [
    ("N", "valid"), ("(N * M)", "valid"), ("(N + 1)", "valid"), ("(M - 1)", "valid"),
    ("(-2)", "valid"), ("(N - 1)", "invalid"), ("(N - M)", "invalid"), ("d0", "invalid"),
    ("0", "invalid"), ("(N * N - N)", "invalid"), ("(N * N - N + 1)", "unclear")])
def test_the_oracle_classifies_divisors_of_maps_with_sizes(divisor: str, status: str) -> None:
    """Valid: positive on the naive interval (`M - 1` over M in [2, 3] is [1, 2]); invalid:
    below 1 at some size, or over an index variable; unclear: positive at every size but not
    on the naive interval (`N * N - N + 1` is 1, 3, 7, 13, its interval [-2, 16])."""
    om = fuzz_oracle.parse(f"(d0)<N, M> -> (d0 floordiv {divisor}), domain: d0 in [0, 3], "
                           f"N in [1, 4], M in [2, 3]")
    grid = fuzz_oracle.size_points(om, 100)
    assert grid is not None and len(grid) == 8
    assert fuzz_oracle.divisor_status(om, grid) == status
