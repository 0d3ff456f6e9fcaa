# ruff: noqa: E501  (MLIR test programs keep one op per line)
"""StableHLO in: the same maps as the HLO text of the same program, parametric maps for dynamic
dimensions that hold at every size, refinement proven, and one-line errors.

The programs under tests/data/stablehlo/ were lowered by JAX (tools/dump_jax_stablehlo.py) to
StableHLO text and to HLO text; a few are regenerated here at test time (jax is in the test
extra). Maps are compared with `vx.equal` (Z3), never textually.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import verifidx as vx
from verifidx.analysis.computation_maps import computation_indexing
from verifidx.analysis.dedup import MapSet
from verifidx.cli import main
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo.dynamic_dims import SizeVar, SymSize, instantiate_sizes, restrict
from verifidx.hlo.runtime import OperandIndexing

pytest.importorskip("jax")

from verifidx.analysis.refinement import compare  # noqa: E402
from verifidx.stablehlo import is_mlir_text, parse_module, parse_stablehlo  # noqa: E402
from verifidx.stablehlo.refine import argument_sizes, refine  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "stablehlo"
STATIC = ["softmax", "layer_norm", "attention", "mha", "conv2d", "gather", "scatter",
          "pad_concat", "concat_slice", "dynamic_slice", "transpose_reshape", "gelu_mlp"]
SYMBOLIC = {"add_one": ["1", "3", "7"], "softmax": ["1", "3", "7"],
            "layer_norm": ["1x2", "3x5", "7x4"], "mha": ["1x2", "3x5", "7x4"]}

ADD_ONE = """
func.func @add_one(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
  %0 = stablehlo.add %arg0, %cst : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

ADD_ONE_DYNAMIC = """
func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %cst = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %2 = stablehlo.dynamic_broadcast_in_dim %cst, %1, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
  %3 = stablehlo.add %arg0, %2 : tensor<?xf32>
  return %3 : tensor<?xf32>
}
"""


def entry_maps(module: vx.hlo.HloModule) -> dict[tuple[int, int], list[IndexingMap]]:
    ci = computation_indexing(module, module.entry, "out2in")
    return {(o, p): [m.map for m in ms] for (o, p, _leaf), ms in ci.maps.items()}


def assert_same_maps(a: dict[tuple[int, int], list[IndexingMap]],
                     b: dict[tuple[int, int], list[IndexingMap]]) -> None:
    assert set(a) == set(b)
    for key in a:
        for xs, ys in ((a[key], b[key]), (b[key], a[key])):
            for x in xs:
                assert not x.is_undefined, (key, str(x))
                assert any(vx.equal(x, y).holds for y in ys), (key, str(x), [str(y) for y in ys])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- static programs: the same maps from both texts -------------------------------------------


@pytest.mark.parametrize("name", STATIC)
def test_stablehlo_and_hlo_give_equal_maps(name: str) -> None:
    hlo = vx.parse_hlo((DATA / f"{name}.hlo").read_text())
    shlo = parse_stablehlo((DATA / f"{name}.mlir").read_text())
    maps = entry_maps(shlo)
    assert maps, name
    assert_same_maps(entry_maps(hlo), maps)


def test_regenerated_programs_still_agree() -> None:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def mix(x, i):
        y = jnp.concatenate([jnp.flip(x, 0), x[:, ::2]], axis=1)
        return lax.dynamic_slice(y, (i, 0), (2, 3)).sum(0) + jnp.square(x[0, :3])

    cases = [(conv, [jnp.zeros((1, 6, 5, 2)), jnp.zeros((3, 3, 2, 3))]),
             (mix, [jnp.zeros((4, 6)), jnp.int32(1)])]
    for fn, args in cases:
        lowered = jax.jit(fn).lower(*args)
        assert_same_maps(entry_maps(vx.parse_hlo(lowered.as_text(dialect="hlo"))),
                         entry_maps(parse_module(lowered.as_text())))


def test_seed_add_one() -> None:
    module = parse_module(ADD_ONE)
    assert module.entry.name == "add_one"
    maps = entry_maps(module)
    assert [str(m) for m in maps[(0, 0)]] == ["(d0) -> (d0), domain: d0 in [0, 3]"]


def test_chlo_ops_are_decomposed_not_unknown() -> None:
    text = (DATA / "gelu_mlp.mlir").read_text()
    assert "chlo.erf" in text
    maps = entry_maps(parse_module(text))
    assert all(not m.is_undefined for ms in maps.values() for m in ms)


def test_custom_call_is_unknown_naming_its_target() -> None:
    text = """
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my_kernel(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  %c = stablehlo.constant dense<true> : tensor<i1>
  stablehlo.custom_call @shape_assertion(%c) {has_side_effect = true} : (tensor<i1>) -> ()
  return %0 : tensor<4xf32>
}
"""
    ci = computation_indexing(m := parse_module(text), m.entry, "out2in")
    (only,) = ci.maps[(0, 0, 0)]
    assert only.is_undefined
    assert any("my_kernel" in n for n in ci.notes)


# -- dynamic dimensions -----------------------------------------------------------------------


def test_add_one_dynamic_is_parametric() -> None:
    module = parse_module(ADD_ONE_DYNAMIC)
    (m,) = entry_maps(module)[(0, 0)]
    (size,) = m.sizes
    assert not m.num_rt_vars and size.bounds == vx.Interval(1, 2**31 - 1)
    assert size.provenance == "size of dimension 0 of parameter(0) in main"
    for n in (1, 5, 16):
        assert m.constraints_satisfied([n - 1], sizes={size.name: n})
        assert not m.constraints_satisfied([n], sizes={size.name: n})
    static = refine(ADD_ONE_DYNAMIC, ["tensor<16xf32>"])
    assert [c.holds for c in compare(module, static, argument_sizes(module, static))] == [True]


def test_bounded_dimension_gets_its_bound() -> None:
    text = """
func.func @main(%arg0: tensor<?x3xf32, #stablehlo.bounds<16, ?>>) -> tensor<?x3xf32, #stablehlo.bounds<16, ?>> {
  %0 = stablehlo.exponential %arg0 : tensor<?x3xf32, #stablehlo.bounds<16, ?>>
  return %0 : tensor<?x3xf32, #stablehlo.bounds<16, ?>>
}
"""
    (m,) = entry_maps(parse_module(text))[(0, 0)]
    assert m.sizes[0].bounds == vx.Interval(1, 16)
    assert m.dims[0].bounds == vx.Interval(0, 15)


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
def test_symbolic_export_instantiated_equals_static_lowering(name: str) -> None:
    text = (DATA / f"{name}.dyn.mlir").read_text()
    dynamic = parse_module(text)
    assert any(m.sizes for ms in entry_maps(dynamic).values() for m in ms)
    for tag in SYMBOLIC[name]:
        static = parse_module((DATA / f"{name}.at{tag}.mlir").read_text())
        hlo = vx.parse_hlo((DATA / f"{name}.at{tag}.hlo").read_text())
        checks = compare(dynamic, static, argument_sizes(dynamic, static))
        assert checks and all(c.holds for c in checks), (tag, checks)
        checks = compare(dynamic, hlo, argument_sizes(dynamic, static))
        assert checks and all(c.holds for c in checks), (tag, checks)


def test_instantiating_at_the_wrong_size_is_refuted() -> None:
    dynamic = parse_module((DATA / "softmax.dyn.mlir").read_text())
    static = parse_module((DATA / "softmax.at3.mlir").read_text())
    key = next(iter(argument_sizes(dynamic, static)))
    checks = compare(dynamic, static, {key: 4})
    assert any(c.holds is False and c.counterexample for c in checks)


def test_claims_hold_for_every_size_not_one() -> None:
    """`d0 < N` with N in [1, 16] equals the plain box [0, 15] only when N = 16: neither the
    solver nor deduplication may call them equal."""
    var = SizeVar("t/n", "test size", 16)
    box = OperandIndexing(IndexingMap.identity((16,)))
    cut = restrict(box, (SymSize.of(var),), None, domain_only=True)
    assert not cut.map.num_rt_vars and [z.name for z in cut.map.sizes] == [var.name]
    verdict = vx.equal(cut.map, box.map)
    assert verdict.holds is False and verdict.counterexample is not None
    assert verdict.counterexample[var.name] < 16
    simplified = cut.map.simplify()
    assert vx.equal(simplified, cut.map).holds is True
    assert vx.equal(simplified, box.map).holds is False
    bucket: MapSet[str] = MapSet()
    bucket.add("cut", cut.map)
    bucket.add("box", box.map)
    assert len(bucket) == 2 and not bucket.merges


def test_update_clamped_to_the_size_and_scatter_into_a_dynamic_operand_unknown() -> None:
    text = """
func.func @main(%arg0: tensor<?x3xf32, #stablehlo.bounds<8, ?>>, %u: tensor<2x3xf32>, %i: tensor<i32>) -> tensor<?x3xf32, #stablehlo.bounds<8, ?>> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.dynamic_update_slice %arg0, %u, %i, %c : (tensor<?x3xf32, #stablehlo.bounds<8, ?>>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<?x3xf32, #stablehlo.bounds<8, ?>>
  return %0 : tensor<?x3xf32, #stablehlo.bounds<8, ?>>
}
"""
    module = parse_module(text)
    ci = computation_indexing(module, module.entry, "out2in")
    (m,) = ci.maps[(0, 1, 0)]  # the update: its start clamped to [0, N - 2] at every size N
    assert not m.is_undefined and m.map.num_rt_vars == 1
    for n in (2, 5, 8):
        fixed = instantiate_sizes(m, {"main_arg0_d0": n}).map
        assert {rt for rt, _d, _r in fixed.relation()} == {(s,) for s in range(n - 1)}
    scatter = text.replace(
        "%0 = stablehlo.dynamic_update_slice %arg0, %u, %i, %c : (tensor<?x3xf32, "
        "#stablehlo.bounds<8, ?>>, tensor<2x3xf32>, tensor<i32>, tensor<i32>)",
        '%idx = stablehlo.reshape %i : (tensor<i32>) -> tensor<1x1xi32>\n'
        '  %u1 = stablehlo.slice %u [0:1, 0:3] : (tensor<2x3xf32>) -> tensor<1x3xf32>\n'
        '  %0 = "stablehlo.scatter"(%arg0, %idx, %u1) ({\n'
        '  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n    stablehlo.return %b : tensor<f32>\n'
        '  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], '
        'inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}'
        ' : (tensor<?x3xf32, #stablehlo.bounds<8, ?>>, tensor<1x1xi32>, tensor<1x3xf32>)')
    assert scatter != text
    module = parse_module(scatter)
    ci = computation_indexing(module, module.entry, "out2in")
    assert all(m.is_undefined for m in ci.maps[(0, 1, 0)])
    assert any("scatter into an operand of dynamic size" in n for n in ci.notes), ci.notes


DYNAMIC_SLICE = """
func.func @main(%arg0: tensor<?x3xf32, #stablehlo.bounds<8, ?>>, %i: tensor<i32>) -> tensor<2x3xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.dynamic_slice %arg0, %i, %c, sizes = [2, 3] : (tensor<?x3xf32, #stablehlo.bounds<8, ?>>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


@pytest.mark.parametrize("direction", ["out2in", "in2out"])
def test_dynamic_slice_of_a_dynamic_operand_clamps_its_start_to_the_size(direction: str) -> None:
    """At every size n, the map's relation (over every start the runtime variable may hold) is
    the set of (output, operand) element pairs the op reads for some start index, its start
    clamped to [0, n - 2] as StableHLO defines it (evaluated here, apart from the map code)."""
    module = parse_module(DYNAMIC_SLICE)
    maps = computation_indexing(module, module.entry, direction)
    ((key, (m,)),) = [(k, v) for k, v in maps.maps.items() if k[1] == 0]
    (size,) = [z.name for z in m.map.sizes]
    for n in range(2, 9):
        at = instantiate_sizes(m, {size: n}).map
        assert not at.sizes and not at.is_undefined
        claimed = {(d, r) for _rt, d, r in at.relation()}
        truth = set()
        for i in range(-2, 11):
            start = min(max(i, 0), n - 2)
            for row in range(2):
                for col in range(3):
                    out, src = (row, col), (start + row, col)
                    truth.add((out, src) if direction == "out2in" else (src, out))
        assert claimed == truth, (n, str(at))


def test_refine_on_the_command_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "add_one_dynamic.mlir"
    path.write_text(ADD_ONE_DYNAMIC)
    code, out, err = run(capsys, "indexing", str(path), "--refine", "tensor<16xf32>", "--json")
    assert code == 0, err
    doc = json.loads(out)
    main_json = next(c for c in doc["computations"] if c["name"] == "main")
    assert main_json["outputs"][0]["shape"] == "f32[16]"
    assert main_json["outputs"][0]["operands"][0]["maps"] == ["(d0) -> (d0), domain: d0 in [0, 15]"]
    assert [c["holds"] for c in doc["refinement"]["checks"]] == [True]


# -- JSON contract and errors -----------------------------------------------------------------


def test_json_names_computations_after_functions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "indexing", str(DATA / "layer_norm.mlir"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["module"] == "jit_layer_norm"
    (comp,) = [c for c in doc["computations"] if c["name"] == "main"]
    (output,) = comp["outputs"]
    assert output["output_index"] == 0 and output["shape"] == "f32[16,32]"
    assert [o["parameter_number"] for o in output["operands"]] == [0, 1, 2]
    assert all(o["maps"] for o in output["operands"])


def test_multiple_results_are_numbered_flat(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    path = tmp_path / "two.mlir"
    path.write_text("""
module @m {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<3x2xf32>, tensor<3xf32>) {
    %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    return %0, %b : tensor<3x2xf32>, tensor<3xf32>
  }
}
""")
    code, out, err = run(capsys, "indexing", str(path), "--json")
    assert code == 0, err
    (comp,) = json.loads(out)["computations"]
    assert [o["output_index"] for o in comp["outputs"]] == [0, 1]
    assert comp["outputs"][0]["operands"][0]["maps"] == [
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 2], d1 in [0, 1]"]
    assert comp["outputs"][0]["operands"][1]["maps"] == []
    assert comp["outputs"][1]["operands"][1]["maps"] == ["(d0) -> (d0), domain: d0 in [0, 2]"]


@pytest.mark.parametrize("text, where", [
    ("module {\n  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
     "    %0 = stablehlo.add %a, %b : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n",
     ":3:"),
    ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
     "  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<4xf32>) -> tensor<4xf32>\n"
     "  return %0 : tensor<4xf32>\n}\n", ":2:"),
    ("module @m {\n  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n", ":"),
])
def test_malformed_or_invalid_stablehlo_is_one_line(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path, text: str, where: str
                                                    ) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    code, out, err = run(capsys, "indexing", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path}{where}") and err.count("\n") == 1, err


def test_without_the_extra_one_line(tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(ADD_ONE)
    script = ("import sys; sys.modules['jax'] = None; sys.modules['jax.extend'] = None; "
              "sys.modules['jax.extend.mlir'] = None; "
              "from verifidx.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", script, "indexing", str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "this is StableHLO (MLIR) text" in proc.stderr
    assert "verifidx[stablehlo]" in proc.stderr


def test_hlo_reader_recognises_mlir() -> None:
    assert is_mlir_text(ADD_ONE) and is_mlir_text((DATA / "softmax.mlir").read_text())
    assert not is_mlir_text((DATA / "softmax.hlo").read_text())
    with pytest.raises(vx.ParseError, match="this is StableHLO"):
        vx.parse_hlo((DATA / "softmax.mlir").read_text())


def test_graph_reads_stablehlo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "graph", str(DATA / "softmax.mlir"))
    assert code == 0, err
    assert out.startswith('digraph "main"')


def test_set_dimension_size_takes_the_size_it_is_given() -> None:
    text = """
func.func @main(%x: tensor<4x3xf32>, %y: tensor<?xf32, #stablehlo.bounds<4>>) -> tensor<?x3xf32, #stablehlo.bounds<4, ?>> {
  %n = stablehlo.get_dimension_size %y, dim = 0 : (tensor<?xf32, #stablehlo.bounds<4>>) -> tensor<i32>
  %0 = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<4x3xf32>, tensor<i32>) -> tensor<?x3xf32, #stablehlo.bounds<4, ?>>
  return %0 : tensor<?x3xf32, #stablehlo.bounds<4, ?>>
}
"""
    module = parse_module(text)
    maps = entry_maps(module)
    (m,) = maps[(0, 0)]
    assert (0, 1) not in maps or maps[(0, 1)] == []  # the size, not an element of %y
    (size,) = m.sizes
    assert not m.num_rt_vars and size.bounds == vx.Interval(1, 4)
    assert size.provenance == "size of dimension 0 of parameter(1) in main"
    for n in range(1, 5):
        rel = {(d, r) for _rt, d, r in m.with_sizes({size.name: n}).relation()}
        assert rel == {((i, j), (i, j)) for i in range(n) for j in range(3)}


def test_refine_refuted_exits_1_with_a_counterexample(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The exit path of a refutation: the proof is asked at a size the passes did not choose."""
    import verifidx.stablehlo.refine as refine_module

    real = refine_module.argument_sizes
    monkeypatch.setattr(refine_module, "argument_sizes",
                        lambda d, s: {k: v + 1 for k, v in real(d, s).items()})
    path = tmp_path / "add_one_dynamic.mlir"
    path.write_text(ADD_ONE_DYNAMIC)
    code, out, err = run(capsys, "indexing", str(path), "--refine", "tensor<16xf32>")
    assert code == 1
    assert "REFUTED" in out and err.startswith("error: ") and err.count("\n") == 1


@given(st.integers(-50, 50), st.integers(-9, 9).filter(bool), st.integers(1, 30))
def test_shape_arithmetic_is_followed_as_numpy_computes_it(a: int, c: int, b: int) -> None:
    """The reader's integer rules (`divide`, `remainder`, `sign`, `compare`) against numpy's
    int32 arithmetic (StableHLO divides towards zero; the remainder has the dividend's sign),
    on constants and on sizes `c * b` and `c * b + a` (any b): a quotient of a size is
    followed where it is exact, or where the dividend is at least 0 at every size and the
    divisor positive (truncation is floor there), and then it is numpy's at b."""
    from verifidx.stablehlo.convert import _decide

    x, y = np.int32(a), np.int32(c)
    k = SymSize
    assert _decide("stablehlo.divide", [k(a), k(c)], False, "", True) == int(np.trunc(a / c))
    assert _decide("stablehlo.remainder", [k(a), k(c)], False, "", True) == int(np.fmod(x, y))
    assert _decide("stablehlo.sign", [k(a)], False, "", True) == int(np.sign(x))
    for d, op in (("EQ", np.equal), ("NE", np.not_equal), ("LT", np.less),
                  ("GE", np.greater_equal)):
        got = _decide("stablehlo.compare", [k(a), k(c)], True, d, True)
        assert got is None or got == int(op(x, y))
    size = SymSize.of(SizeVar("t/b", "test", 1000)).times(c)
    quotient = _decide("stablehlo.divide", [size, k(c)], False, "", True)
    assert isinstance(quotient, SymSize) and quotient.value({"t/b": b}) == b
    assert _decide("stablehlo.remainder", [size, k(c)], False, "", True) == 0
    # in a narrow type a size may wrap: nothing is claimed
    assert _decide("stablehlo.divide", [size, k(c)], False, "", False) is None
    n = size.plus(a)
    value = np.int32(c * b + a)
    followed = c > 0 and n.lo >= 0
    for name, numpy in (("stablehlo.divide", lambda u, v: np.trunc(u / v)),
                        ("stablehlo.remainder", np.fmod)):
        got = _decide(name, [n, k(c)], False, "", True)
        exact = a % c == 0
        assert (got is not None) == (followed or exact), (name, got)
        if got is not None:
            at_b = got if isinstance(got, int) else got.value({"t/b": b})
            assert at_b == int(numpy(value, y))


SHRINKING_LOOP = """func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %x = %arg0) : tensor<i32>, tensor<?xf32>
  cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %c3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %c1 : tensor<i32>
    %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
    %m = stablehlo.subtract %n, %c1 : tensor<i32>
    %s = stablehlo.reshape %m : (tensor<i32>) -> tensor<1xi32>
    %o = stablehlo.constant dense<1> : tensor<1xi32>
    %y = stablehlo.real_dynamic_slice %x, %o, %s, %o : (tensor<?xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32>
    stablehlo.return %j, %y : tensor<i32>, tensor<?xf32>
  }
  return %0#1 : tensor<?xf32>
}
"""


def test_a_loop_whose_state_changes_size_is_unknown_not_a_crash() -> None:
    """The body drops the first element in each iteration: the state's size is not the same in
    every iteration, so no map is claimed across them (the reader used to parse the packed
    arguments' description as a number and fail)."""
    module = parse_module(SHRINKING_LOOP)
    ci = computation_indexing(module, module.entry, "out2in")
    maps = list(ci.maps_for(0, 0))
    assert maps and all(m.is_undefined for m in maps)
    assert any("stablehlo.while" in n for n in ci.notes), ci.notes
