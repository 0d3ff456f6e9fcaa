"""`verifidx optimize`: every rewrite translation-validated; XLA (through jax) parses, verifies
and runs the optimized module, which computes what the original computes and never has more
data-movement ops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hlo_gen import random_module

from verifidx import ParseError
from verifidx.analysis.subst.apply import optimize
from verifidx.analysis.subst.parser import parse_substitutions
from verifidx.cli import main
from verifidx.hlo import parse_hlo

REPO = Path(__file__).resolve().parents[1]
RULES = [REPO / "rules"]
JAX_RAW = sorted((REPO / "tests" / "data" / "jax").glob("*.raw.hlo"))


def _interface(text: str) -> tuple[list[str], str]:
    entry = parse_hlo(text).entry
    return ([str(p.shape.without_layout()) for p in entry.parameters],
            str(entry.root.shape.without_layout()))


def _check_result(text: str, source: str):
    result = optimize(text, source, RULES)
    assert result.ops_after <= result.ops_before
    assert _interface(result.text) == _interface(text)
    again = optimize(result.text, source, RULES)  # a fixpoint: nothing applies any more
    assert sum(again.applications.values()) == 0
    assert result.rejected == 0
    return result


def _same_on_xla(original: str, optimized: str) -> None:
    xla = pytest.importorskip("xla_runner")
    for seed in range(2):
        inputs = xla.random_inputs(original, seed)
        before, after = xla.run_hlo(original, inputs), xla.run_hlo(optimized, inputs)
        assert len(before) == len(after)
        for x, y in zip(before, after):
            assert x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.parametrize("path", JAX_RAW, ids=[p.name for p in JAX_RAW])
def test_jax_modules_round_trip_through_xla(path: Path) -> None:
    text = path.read_text()
    result = _check_result(text, str(path))
    _same_on_xla(text, result.text)


def test_jax_modules_lose_data_movement_ops() -> None:
    results = {p.name: optimize(p.read_text(), str(p), RULES) for p in JAX_RAW}
    improved = [n for n, r in results.items() if r.ops_after < r.ops_before]
    assert {"softmax.raw.hlo", "layer_norm.raw.hlo", "mlp.raw.hlo",
            "attention.raw.hlo"} <= set(improved)
    assert results["layer_norm.raw.hlo"].bytes_after < results["layer_norm.raw.hlo"].bytes_before


@pytest.mark.parametrize("seed", range(24))
def test_generated_modules_round_trip_through_xla(seed: int) -> None:
    text = random_module(seed)
    result = _check_result(text, f"gen{seed}")
    _same_on_xla(text, result.text)


def test_twelve_layer_transformer_round_trips_through_xla() -> None:
    xla = pytest.importorskip("xla_runner")
    text = xla.transformer_hlo(12)
    result = optimize(text, "transformer", RULES)
    assert result.ops_after < result.ops_before
    _same_on_xla(text, result.text)


def test_generated_modules_mostly_improve() -> None:
    results = [optimize(random_module(seed), f"gen{seed}", RULES) for seed in range(24)]
    assert sum(r.ops_after < r.ops_before for r in results) >= 20


def test_translation_validation_rejects_an_unproven_rewrite() -> None:
    """A wrong substitution handed to optimize directly (no certificate) never rewrites."""
    (wrong,) = parse_substitutions(
        "subst swap:\n  inputs x[a, b], y[c, b]\n"
        "  slice(concatenate(x, y, dim=0), start=[0, 0], limit=[a, b]) => slice(concatenate(y,"
        " x, dim=0), start=[0, 0], limit=[a, b])\n")
    (removes_op,) = parse_substitutions(
        "subst drop_reverse:\n  inputs x[a, b]\n  reverse(x, dims=[0]) => x\n")
    text = ("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  y = f32[2,3] parameter(1)\n"
            "  c = f32[4,3] concatenate(x, y), dimensions={0}\n"
            "  s = f32[2,3] slice(c), slice={[0:2], [0:3]}\n"
            "  ROOT r = f32[2,3] reverse(s), dimensions={0}\n}\n")
    result = optimize(text, "m", [wrong, removes_op])
    assert sum(result.applications.values()) == 0
    assert result.rejected >= 1 and result.queries >= 1
    assert result.ops_after == result.ops_before == 3
    two_values = next(s for s in parse_substitutions(
        (REPO / "tests" / "data" / "subst_wrong.subst").read_text())
        if s.name == "pad_pad_two_values")
    text = ("HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n  v = f32[] parameter(1)\n"
            "  w = f32[] parameter(2)\n  a = f32[4] pad(x, v), padding=1_0\n"
            "  ROOT b = f32[5] pad(a, w), padding=1_0\n}\n")
    result = optimize(text, "m", [two_values])
    assert sum(result.applications.values()) == 0 and result.rejected == 1


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = REPO / "tests" / "data" / "jax" / "softmax.raw.hlo"
    assert main(["optimize", str(src)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("HloModule")
    assert "data-movement ops 8 -> 2 (6 removed)" in captured.err
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[4,3] parameter(0)\n"
                   "  v = f32[] constant(0)\n  ROOT r = f32[7,3] pad(p, v), padding=1_1x0_0\n}\n")
    assert main(["optimize", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}:5:3: pad 'r' is declared")
    with pytest.raises(ParseError):
        optimize(bad.read_text(), str(bad), RULES)


def test_one_value_bound_to_two_inputs() -> None:
    """concat_concat over x, x, x: the template's inputs x, y, z all bind one instruction."""
    text = ("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
            "  c = f32[4,3] concatenate(x, x), dimensions={0}\n"
            "  ROOT d = f32[6,3] concatenate(c, x), dimensions={0}\n}\n")
    result = optimize(text, "m", RULES)
    assert result.applications["concat_concat"] == 1 and result.rejected == 0
    assert "concatenate(x, x, x), dimensions={0}" in result.text
    _same_on_xla(text, result.text)


def test_a_validation_answers_only_its_own_question() -> None:
    """Two sites that bind the same values with the same shapes but wired differently are two
    questions. A validation cache keyed without the wiring once let the wrong swap below
    through at d2 (concatenate(a, a, b) became concatenate(a, b, a)) because d1's query had
    proven it for concatenate(a, b, b)."""
    (swap,) = parse_substitutions(
        "subst swap_tail:\n  inputs x[a, b], y[c, b], z[e, b]\n"
        "  concatenate(concatenate(x, y, dim=0), z, dim=0) => concatenate(x, z, y, dim=0)\n")
    text = ("HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[2,3] parameter(1)\n"
            "  c1 = f32[4,3] concatenate(a, b), dimensions={0}\n"
            "  d1 = f32[6,3] concatenate(c1, b), dimensions={0}\n"
            "  c2 = f32[4,3] concatenate(a, a), dimensions={0}\n"
            "  d2 = f32[6,3] concatenate(c2, b), dimensions={0}\n"
            "  ROOT r = (f32[6,3], f32[6,3]) tuple(d1, d2)\n}\n")
    result = optimize(text, "m", [swap])
    assert [(a.instruction, a.substitution) for a in result.applied] == [("d1", "swap_tail")]
    (rejection,) = result.rejections
    assert rejection.instruction == "d2" and "the maps to input a differ" in rejection.reason
    assert "concatenate(c2, b)" in result.text and result.queries == 2
