"""Differential fuzzing of the map layer against an independent oracle (issue 10).

Each example is one random map (tests/fuzz/fuzz_cases.py) put through verifidx and compared by
full enumeration with tests/fuzz/fuzz_oracle.py, which shares no code with verifidx. The `ci`
profile runs 60 maps per operation, `HYPOTHESIS_PROFILE=thorough` 2,000; `tools/fuzz_maps.py`
runs hundreds of thousands.
"""

from __future__ import annotations

import random

import fuzz_cases
import fuzz_oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st

import verifidx as vx


@pytest.mark.parametrize("op", fuzz_cases.OPERATIONS)
@given(seed=st.integers(0, 2**63 - 1))
def test_operation_agrees_with_enumeration(op: str, seed: int) -> None:
    report = fuzz_cases.Report()
    rng = random.Random(seed)
    fuzz_cases.check(rng, fuzz_cases.generate(rng), report, op)
    assert not report.wrong, report.wrong[0]
    assert not report.crashes, report.crashes[0]


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
