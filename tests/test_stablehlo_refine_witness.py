"""`--refine` refutes only with a witness that holds for the programs' actual values (issue 38
item 1).

A refined program keeps a computed gather index or slice start as a runtime variable: one value
at each output point, which the maps do not know. Refining `x[::-1]` at b = 5 used to exit 1
("the refined map reads an element the other never reads, whatever values their unpaired
runtime variables take") although the refined program *is* the parametric one at b = 5: with
the index at its value 4 - d0 the maps agree. The oracle here is jax itself: refining a program
at a size gives the same program at that size, so no refutation may be reported; a program
compared with a different one is refuted only where jax's evaluation shows the difference.
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
import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from jax import export, lax  # noqa: E402

from verifidx.analysis.refinement import compare  # noqa: E402
from verifidx.cli import main  # noqa: E402
from verifidx.stablehlo import parse_stablehlo  # noqa: E402
from verifidx.stablehlo.refine import argument_sizes, refine  # noqa: E402

B = export.symbolic_shape("b")[0]
B4 = export.symbolic_shape("b", constraints=("b >= 4",))[0]


def exported_text(fn, b=B, cols: int = 8) -> str:
    arg = jax.ShapeDtypeStruct((b, cols), jnp.float32)
    return export.export(jax.jit(fn))(arg).mlir_module()


def refine_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, rows: int,
               cols: int = 8) -> tuple[int, dict, str]:
    path = tmp_path / "p.mlir"
    path.write_text(text)
    code = main(["indexing", str(path), "--refine", f"tensor<{rows}x{cols}xf32>", "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


# -- the issue's programs: refuted before, never now -----------------------------------------

ISSUE_PROGRAMS = {
    "reverse": lambda x: x[::-1],
    "odd_rows": lambda x: x[1::2],
    "row_sum_of_reversed": lambda x: jnp.sum(x[::-1], axis=1),
    "strided_both": lambda x: x[::2, 1::3],
    "concatenate_reversed": lambda x: jnp.concatenate([x, x[::-1] * 2, x * 3]),
    "last_row": lambda x: x[-1],
}


@pytest.mark.parametrize(("name", "rows", "expected"), [
    ("reverse", 5, 0), ("odd_rows", 6, 0), ("row_sum_of_reversed", 5, 0),
    ("strided_both", 1, 3), ("strided_both", 4, 3), ("strided_both", 7, 3),
    ("concatenate_reversed", 5, 0), ("last_row", 5, 3)])
def test_refining_a_program_with_a_computed_index_is_never_refuted(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, rows: int,
        expected: int) -> None:
    """Each exited 1 (REFUTED) before; the refined program is the parametric one at `rows`, so
    the answer is a proof (the refined program's index computed from an iota, folded) or
    unknown (exit 3, naming the variables without counterpart)."""
    code, doc, err = refine_cli(capsys, tmp_path, exported_text(ISSUE_PROGRAMS[name]), rows)
    checks = doc["refinement"]["checks"]
    assert code == expected and "REFUTED" not in err, (code, err)
    assert checks and all(c["holds"] is not False for c in checks), checks
    assert code == 0 or any("not decided" in c["message"] for c in checks), checks


def test_even_rows_stays_unknown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same shape of program that was already (rightly) unknown."""
    code, doc, err = refine_cli(capsys, tmp_path, exported_text(lambda x: x[::2]), 6)
    assert code == 3, err
    assert [c["holds"] for c in doc["refinement"]["checks"]] == [None]


GATHER_AT_IOTA_PLUS = """func.func @main(%x: tensor<5x8xf32>) -> tensor<5x8xf32> {
  %k = stablehlo.constant dense<SHIFT> : tensor<i32>
  %c = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<i32>) -> tensor<5xi32>
  %0 = stablehlo.iota dim = 0 : tensor<5xi32>
  %1 = stablehlo.add %0, %c : tensor<5xi32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
  %3 = "stablehlo.gather"(%x, %2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], \
collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = \
true, slice_sizes = array<i64: 1, 8>}> : (tensor<5x8xf32>, tensor<5x1xi32>) -> tensor<5x8xf32>
  return %3 : tensor<5x8xf32>
}
"""


@pytest.mark.parametrize("shift", [0, 2])
def test_a_computed_index_is_folded_only_where_the_clamp_does_nothing(shift: int) -> None:
    """Gather rows `iota + shift` of 5: the start is clamped to [0, 4], so the row read at d0 is
    min(d0 + shift, 4) (jax's evaluation below). At shift 0 the index is folded to d0; at
    shift 2 the clamp acts and `d0 + 2` would read past the end, so it stays data."""
    from verifidx.analysis.computation_maps import computation_indexing
    from verifidx.analysis.refinement import ValueKeys, _computed

    text = GATHER_AT_IOTA_PLUS.replace("SHIFT", str(shift))
    module = parse_stablehlo(text)
    (ind,) = computation_indexing(module, module.entry, "out2in").maps_for(0, 0)
    folded = _computed(ind, ValueKeys(module, {}, {}), {}).map
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    rows = np.asarray(jax.jit(lambda x: x[jnp.minimum(jnp.arange(5) + shift, 4)])(x))[:, 0] // 8
    if shift == 0:
        assert folded.num_rt_vars == 0
        assert {d: res for d, _s, _r, res in folded.points()} == \
            {(d0, d1): (int(rows[d0]), d1) for d0 in range(5) for d1 in range(8)}
    else:
        assert folded.num_rt_vars == 1 and folded == ind.map


# -- a true difference is still refuted, with a point jax confirms ---------------------------


def reads_of(fn, rows: int, cols: int, point: tuple[int, ...]) -> set[tuple[int, int]]:
    """The input elements output `point` of `fn` depends on, by perturbing one at a time."""
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    base = np.asarray(jax.jit(fn)(x))[point]
    out = set()
    for i in range(rows):
        for j in range(cols):
            y = x.copy()
            y[i, j] += 1000.0
            if np.asarray(jax.jit(fn)(y))[point] != base:
                out.add((i, j))
    return out


def test_a_different_program_with_a_runtime_index_is_refuted_where_jax_shows_it() -> None:
    """Columns reversed (`lax.rev`, no runtime variable) against the refined `x[::-1]`, whose
    row is a gather index in [0, 4]: output (0, 0) reads column 7 in one and column 0 in the
    other whatever the index, so it is refuted there, and jax's evaluation agrees that the
    reads differ. (`x[:, ::-1]` exports as a `dynamic_gather`, unknown indexing.)"""
    mirror = lambda x: lax.rev(x, (1,))  # noqa: E731
    reverse = lambda x: x[::-1]  # noqa: E731
    dynamic = parse_stablehlo(exported_text(mirror))
    static = refine(exported_text(reverse), ["tensor<5x8xf32>"])
    (check,) = compare(dynamic, static, argument_sizes(dynamic, static))
    assert check.holds is False, check
    assert "whatever values the runtime variables take" in check.message
    point = (check.counterexample["d0"], check.counterexample["d1"])
    assert reads_of(mirror, 5, 8, point) != reads_of(reverse, 5, 8, point)


# -- property: a program refined at a size is never refuted ----------------------------------

ROW_OPS = {
    "reverse": lambda x: x[::-1],
    "slice": None,  # x[start::step], drawn below
    "last_rows": lambda x: x[-2:],
    "last_row": lambda x: x[-1:],
    "dynamic_slice_middle": lambda x: lax.dynamic_slice_in_dim(x, x.shape[0] // 2, 2, axis=0),
    "row_at_a_third": lambda x: x[jnp.int32(x.shape[0]) // 3][None],
    "reverse_then_odd": lambda x: x[::-1][1::2],
}

WRAPPERS = {
    "none": lambda y, x: y,
    "concatenate_reversed": lambda y, x: jnp.concatenate([y, y[::-1] * 2]),
    "concatenate_input": lambda y, x: jnp.concatenate([x, y * 3]),
    "row_sum": lambda y, x: jnp.sum(y, axis=1),
}


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, object]:
    name = draw(st.sampled_from(sorted(ROW_OPS)))
    if name == "slice":
        start, step = draw(st.integers(0, 2)), draw(st.integers(1, 3))
        name = f"x[{start}::{step}]"
        row = lambda x: x[start::step]  # noqa: E731
    else:
        row = ROW_OPS[name]
    column = draw(st.sampled_from([None, 1, 2]))
    wrapper = draw(st.sampled_from(sorted(WRAPPERS)))

    def fn(x):
        y = row(x)
        if column is not None:
            y = y[:, ::-1] if column == 1 else y[:, 1::2]
        if wrapper == "concatenate_input" and column is not None:
            return WRAPPERS["concatenate_reversed"](y, x)
        return WRAPPERS[wrapper](y, x)

    return f"{wrapper}({name}, column {column})", fn


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.lists(st.integers(4, 9), min_size=3, max_size=3, unique=True))
def test_a_program_refined_at_three_sizes_is_never_refuted(program: tuple[str, object],
                                                           sizes: list[int]) -> None:
    """The static program at each size is jax's lowering of the same function there: its maps
    are an instance of the parametric ones, so a refutation would be a false claim."""
    label, fn = program
    text = exported_text(fn, B4, cols=6)
    dynamic = parse_stablehlo(text)
    for rows in sizes:
        static = refine(text, [f"tensor<{rows}x6xf32>"])
        for check in compare(dynamic, static, argument_sizes(dynamic, static)):
            assert check.holds is not False, (label, rows, check)
