"""`verifidx indexing` at the edges of size: a root tuple of thousands of elements costs time
linear in its width, and dimensions or element counts that do not fit XLA's int64 are refused
with their position (issue 22)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from verifidx.analysis.computation_maps import computation_indexing
from verifidx.cli import main
from verifidx.hlo import parse_hlo


def wide_tuple(n: int) -> str:
    lines = ["HloModule m", "ENTRY e {", "  p = f32[4] parameter(0)"]
    lines += [f"  a{k} = f32[4] negate(p)" for k in range(n)]
    lines.append("  ROOT t = (" + ", ".join(["f32[4]"] * n) + ") tuple("
                 + ", ".join(f"a{k}" for k in range(n)) + ")")
    return "\n".join(lines) + "\n}\n"


def calls(n: int) -> int:
    """Python function calls made to compute all maps of a root tuple of width n (a count,
    not a time: the same on a busy machine)."""
    computation_indexing(*_entry(wide_tuple(n)))  # warm the simplifier's caches
    module, entry = _entry(wide_tuple(n))
    count = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        ci = computation_indexing(module, entry, "out2in")
    finally:
        sys.setprofile(None)
    assert len(ci.outputs) == n and all(ci.maps_for(o, 0) for o in range(n))
    return count


def _entry(text: str):  # type: ignore[no-untyped-def]
    module = parse_hlo(text)
    return module, module.entry


def test_a_wide_root_tuple_costs_linear_work() -> None:
    """Each output leaf's walk used to scan every instruction and every tuple operand: 4 times
    the width gave 14 times the calls (2,000 leaves: 25 s; 5,000: over 300 s)."""
    small, large = calls(100), calls(400)
    assert large <= 5 * small, (small, large)


def test_a_wide_root_tuple_on_the_command_line(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    path = tmp_path / "wide.hlo"
    path.write_text(wide_tuple(3000))
    assert main(["indexing", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count('"output_index"') == 3000


# -- sizes beyond int64 ------------------------------------------------------------------------

TOO_LARGE_HLO = [
    # one dimension of 2^63
    ("HloModule m\nENTRY e {\n  ROOT p = f32[9223372036854775808] parameter(0)\n}\n",
     ":3:16:", "dimension size 9223372036854775808"),
    # 2^40 x 2^40 = 2^80 elements, each dimension fitting
    ("HloModule m\nENTRY e {\n  p = f32[1099511627776,1,1099511627776] parameter(0)\n"
     "  ROOT r = f32[1099511627776,1099511627776] reshape(p)\n}\n",
     ":3:7:", "1208925819614629174706176 elements"),
]


@pytest.mark.parametrize("text, where, what", TOO_LARGE_HLO)
def test_hlo_sizes_beyond_int64_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            text: str, where: str, what: str) -> None:
    path = tmp_path / "big.hlo"
    path.write_text(text)
    assert main(["indexing", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {path}{where}") and what in err, err
    assert err.count("\n") == 1


def test_the_largest_int64_size_is_accepted(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    path = tmp_path / "edge.hlo"
    path.write_text("HloModule m\nENTRY e {\n  ROOT p = f32[9223372036854775807] parameter(0)\n}\n")
    assert main(["indexing", str(path)]) == 0
    assert "d0 in [0, 9223372036854775806]" in capsys.readouterr().out


def test_stablehlo_element_counts_beyond_int64_are_refused(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    pytest.importorskip("jax")
    path = tmp_path / "big.mlir"
    path.write_text(
        "func.func @main(%x: tensor<1xf32>) -> tensor<4294967296x4294967296xf32> {\n"
        "  %0 = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<1xf32>) -> "
        "tensor<4294967296x4294967296xf32>\n"
        "  return %0 : tensor<4294967296x4294967296xf32>\n}\n")
    assert main(["indexing", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2:8: ") and "18446744073709551616 elements" in err
