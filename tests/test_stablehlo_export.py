# ruff: noqa: E501  (MLIR test programs keep one op per line)
"""`jax.export` programs that the StableHLO front end once refused or misjudged (issue 22):
shared callees under `--refine`, a sort comparator that uses a constant of its function,
positions in errors, and refinement of programs whose maps carry runtime variables.

Every program is exported here, at test time, with a symbolic batch size, as a user would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

from verifidx.cli import main  # noqa: E402
from verifidx.core.indexing_map import IndexingMap  # noqa: E402
from verifidx.hlo.runtime import OperandIndexing  # noqa: E402
from verifidx.stablehlo import parse_stablehlo  # noqa: E402


def exported(tmp_path: Path, name: str, fn, *shapes: tuple[tuple[object, ...], object]) -> Path:
    args = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in shapes]
    path = tmp_path / f"{name}.mlir"
    path.write_text(export.export(jax.jit(fn))(*args).mlir_module())
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


B = export.symbolic_shape("b")[0]


def test_refine_with_callees_shared_by_several_calls(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    """`ids.reshape(b, 4)` makes jax.export compute `b` with `divmod`, called five times and
    calling `_where` from two places; `stablehlo-refine-shapes` used to refine a shared callee
    for one call and break the others ("'func.call' op incorrect number of operands")."""
    path = exported(tmp_path, "lookup", lambda ids, t: t[ids.reshape(B, 4)].sum(1),
                    ((B * 4,), jnp.int32), ((10, 8), jnp.float32))
    assert path.read_text().count("call @divmod") > 1
    code, out, err = run(capsys, "indexing", str(path), "--refine",
                         "tensor<12xi32>,tensor<10x8xf32>", "--json")
    assert code in (0, 3), err  # proved, or unknown where the maps are unknown; never a failure
    doc = json.loads(out)
    main_json = next(c for c in doc["computations"] if c["name"] == "main")
    assert main_json["outputs"][0]["shape"] == "f32[3,8]"


def test_sort_comparator_uses_a_constant_of_its_function(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    """jnp.sort's comparator compares with `%cst_0`, defined outside the region."""
    path = exported(tmp_path, "sort", lambda x: jnp.sort(x, axis=-1), ((B, 6), jnp.float32))
    code, out, err = run(capsys, "indexing", str(path), "--json")
    assert code == 0, err
    code, out, err = run(capsys, "indexing", str(path), "--refine", "tensor<6x6xf32>", "--json")
    assert code == 0, err
    doc = json.loads(out)
    main_json = next(c for c in doc["computations"] if c["name"] == "main")
    (maps,) = [o["maps"] for o in main_json["outputs"][0]["operands"]]
    # brute force: output (i, j) of a row sort may hold any element of row i
    assert maps == ["(d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 5], d1 in [0, 5], s0 in [0, 5]"]
    assert [c["holds"] for c in doc["refinement"]["checks"]] == [True]


CAPTURE_NOT_CONSTANT = """func.func @main(%x: tensor<4xf32>, %y: tensor<f32>) -> tensor<4xf32> {
  %0 = stablehlo.add %y, %y : tensor<f32>
  %1 = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %2 = stablehlo.compare LT, %a, %0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %2 : tensor<i1>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def test_a_region_using_a_computed_value_is_refused_with_its_position(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "capture.mlir"
    path.write_text(CAPTURE_NOT_CONSTANT)
    code, out, err = run(capsys, "indexing", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path}:5:10: ") and err.count("\n") == 1, err
    assert "not a constant" in err


def with_jax_locations(text: str) -> str:
    """`text` as JAX prints it: a location alias on top, `loc(...)` after every op."""
    lines = [line + ' loc(#loc1)' if "stablehlo." in line and "{" not in line else line
             for line in text.splitlines()]
    return '#loc1 = loc("jit(f)/sort"("f.py":3:4 to :20))\n' + "\n".join(lines[:-1]) + \
        '\n} loc(callsite("f"("f.py":3:4) at "g"("g.py":1:2)))\n'


def test_ops_of_jax_texts_are_located_in_the_file(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """JAX prints a debug location on every op; an error still names the op's place in the
    file, not 1:1 (the location of a `loc(...)` has no line in this file)."""
    path = tmp_path / "capture.mlir"
    path.write_text(with_jax_locations(CAPTURE_NOT_CONSTANT))
    assert path.read_text().count("loc(") == 5
    code, out, err = run(capsys, "indexing", str(path))
    assert code == 2 and err.startswith(f"error: {path}:6:10: "), err


# -- refinement compares relations, not lists of runtime variables -----------------------------


def lookup_program(tmp_path: Path) -> Path:
    """Reshape a dynamic number of ids, gather rows of a static table."""
    return exported(tmp_path, "lookup_flat", lambda ids, t: t[ids.reshape(-1)],
                    ((B,), jnp.int32), ((10, 8), jnp.float32))


def test_refining_a_lookup_is_proved(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 22 #5: the parametric maps carry the table index and a size as runtime
    variables, the refined ones the index only; that was reported as a difference (exit 1)."""
    path = lookup_program(tmp_path)
    code, out, err = run(capsys, "indexing", str(path), "--refine",
                         "tensor<12xi32>,tensor<10x8xf32>", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [c["holds"] for c in doc["refinement"]["checks"]] == [True, True]
    main_json = next(c for c in doc["computations"] if c["name"] == "main")
    table = main_json["outputs"][0]["operands"][1]
    assert table["maps"] == ["(d0, d1){rt0} -> (rt0, d1), domain: d0 in [0, 11], d1 in [0, 7], "
                             "rt0 in [0, 9]"]


def test_a_real_difference_is_still_refuted(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The parametric maps asked at 13 ids against the program refined for 12: output row 12
    exists on one side only, whatever the table index, so it is refuted, with the point."""
    import verifidx.stablehlo.refine as refine_module

    real = refine_module.argument_sizes
    monkeypatch.setattr(refine_module, "argument_sizes",
                        lambda d, s: {k: v + 1 for k, v in real(d, s).items()})
    path = lookup_program(tmp_path)
    code, out, err = run(capsys, "indexing", str(path), "--refine",
                         "tensor<12xi32>,tensor<10x8xf32>", "--json")
    assert code == 1, err
    lines = path.read_text().splitlines()
    row = next(k for k, line in enumerate(lines) if "func.func public @main(" in line)
    assert err.startswith(f"error: {path}:{row + 1}:{lines[row].index('func.func') + 1}: "
                          "the parametric maps of output 0, parameter 0 differ"), err
    checks = json.loads(out)["refinement"]["checks"]
    assert [c["holds"] for c in checks] == [False, False]
    assert all(c["counterexample"]["d0"] == 12 for c in checks), checks


def _identity(n: int) -> OperandIndexing:
    return OperandIndexing(IndexingMap.identity((n,)))


def test_a_size_refinement_leaves_open_is_unknown_not_a_difference() -> None:
    """A parametric map cut to a size no argument fixes (a value the program computes) equals
    the static map for one value of that size and differs for the others: unknown."""
    from verifidx.analysis.refinement import Side, ValueKeys, equal_as_relations
    from verifidx.hlo.dynamic_dims import SizeVar, SymSize, restrict

    opaque = SymSize.of(SizeVar("f/%x#1/0", "dimension 0 of %x in f", 16))
    cut = restrict(_identity(16), (opaque,), None, domain_only=True)
    static = _identity(16)
    module = parse_stablehlo("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                             "  return %a : tensor<4xf32>\n}\n")
    keys = ValueKeys(module, {}, {})
    verdict = equal_as_relations(Side(cut, keys), Side(static, keys))
    assert verdict.holds is None and "dimension 0 of %x in f" in verdict.message
    # the size is the only difference: with it fixed at 16 the two are equal
    from verifidx.hlo.dynamic_dims import instantiate_sizes

    fixed = instantiate_sizes(cut, {"f/%x#1/0": 16})
    assert equal_as_relations(Side(fixed, keys), Side(static, keys)).holds is True


def test_a_call_to_a_declared_function_is_unknown_not_a_crash(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A function without a body (a declaration) used to stop the converter (exit 70)."""
    path = tmp_path / "ext.mlir"
    path.write_text("module {\n  func.func private @ext(%a: tensor<4xf32>) -> tensor<4xf32>\n"
                    "  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                    "    %0 = call @ext(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
                    "    return %0 : tensor<4xf32>\n  }\n}\n")
    code, out, err = run(capsys, "indexing", str(path), "--json")
    assert code == 0, err
    (comp,) = json.loads(out)["computations"]
    (operand,) = comp["outputs"][0]["operands"]
    assert operand["maps"] == ["UNDEFINED"] and operand["reasons"] == ["unknown op func.call"]



def test_dropping_locations_keeps_every_other_character_in_place() -> None:
    from verifidx.stablehlo.bindings import without_locations

    text = ('func.func @loc(%a: tensor<4xf32> loc("x")) -> tensor<4xf32> {\n'
            '  %0 = stablehlo.add %a, %a : tensor<4xf32> loc(callsite("f(\\""("a.py":1:2) at #l))\n'
            '  return %0 : tensor<4xf32>\n} loc(#loc)\n#l = loc("q")\n')
    plain = without_locations(text)
    assert len(plain) == len(text) and plain.count("\n") == text.count("\n")
    assert "loc(" not in plain.replace("@loc(", "") and plain.startswith("func.func @loc(%a")
    assert parse_stablehlo(text).entry.name == "loc"


def test_a_fori_loop_over_b_rows_is_converted_with_the_scatters_reason(
        tmp_path: Path) -> None:
    """`fori_loop(0, b, ...)` updating row `i` of a `(b, 3)` carry: the scatter's result has its
    operand's size, so the body keeps the carry's size and the loop is converted (it used to
    fail reading the packed arguments, then to stay an unknown `stablehlo.while`); its maps
    are unknown for the scatter into a dynamic operand, the reason they name."""
    from verifidx.analysis.computation_maps import computation_indexing
    from verifidx.stablehlo import parse_module

    path = exported(tmp_path, "fori", lambda x: jax.lax.fori_loop(
        0, x.shape[0], lambda i, c: c.at[i].multiply(2.0), x), ((B, 3), jnp.float32))
    module = parse_module(path.read_text())
    ci = computation_indexing(module, module.entry, "out2in")
    maps = list(ci.maps_for(0, 0))
    assert maps and all(m.is_undefined for m in maps)
    assert any("scatter into an operand of dynamic size" in n for n in ci.notes), ci.notes
    assert not any("stablehlo.while" in n for n in ci.notes), ci.notes
