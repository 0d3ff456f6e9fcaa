"""Per-op maps of top-k, fft, select-and-scatter, sort and rng-bit-generator against XLA itself.

The oracle runs the op on XLA's CPU backend (`xla_runner`: XLA's own parser, verifier and
pipeline) and changes one input element at a time: the output elements that change read it.
One random input shows only some reads of ops that select or permute (a top-k row changes only
from the perturbed element's rank on), so each case gives several base inputs and several
changes per element (to the largest or smallest value of all, or a small step, real and
imaginary for complex values); the union of what changed is the set of reads. The maps are then
checked by `test_op_oracle.check` in both directions: nothing changed outside a map (no missed
read) and, except where `indexing.OVER_APPROXIMATIONS` says otherwise, every pair of a map was
seen to change (no claimed read that never happens).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

xla = pytest.importorskip("xla_runner")

from test_op_oracle import Index, Reads, check, hlo, ints, shp  # noqa: E402

from verifidx.cli import main  # noqa: E402
from verifidx.hlo import parse_hlo  # noqa: E402
from verifidx.hlo.indexing import input_to_output, output_to_input  # noqa: E402

Change = Callable[[np.ndarray], np.ndarray]  # the new value of one element


def run(exe: object, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    jax = xla.jax
    with jax.enable_x64(True):  # keep f64, c128 and u64 as they are
        device = exe.local_devices()[0]  # type: ignore[attr-defined]
        args = [jax.device_put(x, device) for x in inputs]
        return [np.asarray(r) for r in exe.execute(args)]  # type: ignore[attr-defined]


def differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.inexact):
        return np.abs(a - b) > 1e-9 * (1 + np.abs(a))
    return np.asarray(a != b)


def perturbation_reads(text: str, bases: Sequence[Sequence[np.ndarray]],
                       changes: Sequence[Change]) -> dict[tuple[int, Index], Reads]:
    """(output leaf, index) -> operand elements whose change, from some base, changed it."""
    exe = xla.compile_hlo(text)
    found: dict[tuple[int, Index], Reads] = {}
    for base in bases:
        before = run(exe, base)
        for leaf, out in enumerate(before):
            for d in np.ndindex(*out.shape):
                found.setdefault((leaf, tuple(int(i) for i in d)), {})
        for j, arr in enumerate(base):
            for x in np.ndindex(*arr.shape):
                for change in changes:
                    inputs = list(base)
                    inputs[j] = arr.copy()
                    inputs[j][x] = change(arr[x])
                    if inputs[j][x] == arr[x]:
                        continue
                    for leaf, (a, b) in enumerate(zip(before, run(exe, inputs))):
                        for d in np.argwhere(differs(a, b)):
                            reads = found[(leaf, tuple(int(i) for i in d))]
                            reads.setdefault(j, set()).add(tuple(int(i) for i in x))
    return found


def against_xla(text: str, bases: Sequence[Sequence[np.ndarray]], changes: Sequence[Change],
                **kw: object) -> dict[tuple[int, Index], Reads]:
    truth = perturbation_reads(text, bases, changes)
    check(text, lambda leaf, d: truth[(leaf, d)], **kw)  # type: ignore[arg-type]
    return truth


def extremes(big: float) -> list[Change]:
    return [lambda v: np.asarray(big, v.dtype), lambda v: np.asarray(-big, v.dtype)]


# -- top-k -------------------------------------------------------------------------------------

CMP_GT = ("cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
          "  d = s32[] parameter(3)\n  ROOT g = pred[] compare(a, b), direction=GT\n}\n")


@settings(max_examples=12)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=2), st.integers(1, 5), st.data(),
       st.booleans())
def test_topk(batch: list[int], n: int, data: st.DataObject, custom_call: bool) -> None:
    """The topk op and XLA's `TopK` custom call: every value and index of the top k reads the
    whole row, as StableHLO's chlo.top_k does."""
    k = data.draw(st.integers(1, n))
    if custom_call:  # XLA's TopK custom call takes ranks 1 and 2 only
        batch = batch[:1]
    src, out = [*batch, n], [*batch, k]
    result = f"({shp(out)}, {shp(out, 's32')})"
    if custom_call:
        root = f'{result} custom-call(p0), custom_call_target="TopK", called_computations={{cmp}}'
    else:
        root = f"{result} topk(p0), k={k}, largest=true"
    text = hlo([shp(src)], root, computations=CMP_GT if custom_call else "")
    base = np.random.default_rng(n).permutation(int(np.prod(src))).reshape(src)
    against_xla(text, [[base.astype(np.float32)]], extremes(1e6))


def test_topk_agrees_with_stablehlo_top_k() -> None:
    """The HLO op, the custom call and chlo.top_k (through the StableHLO front end) give the
    same maps."""
    from verifidx.stablehlo import parse_stablehlo
    mlir = ("func.func @main(%arg0: tensor<2x6xf32>) -> (tensor<2x4xf32>, tensor<2x4xi32>) {\n"
            "  %v, %i = chlo.top_k(%arg0, k = 4) : tensor<2x6xf32> -> "
            "(tensor<2x4xf32>, tensor<2x4xi32>)\n  return %v, %i : tensor<2x4xf32>, "
            "tensor<2x4xi32>\n}\n")
    from verifidx.analysis.computation_maps import computation_indexing
    stable = parse_stablehlo(mlir)
    ci = computation_indexing(stable, stable.entry)
    want = {o: {str(m.map) for m in ci.maps_for(o, 0)} for o in range(2)}
    for root in ("(f32[2,4], s32[2,4]) topk(p0), k=4, largest=true",
                 '(f32[2,4], s32[2,4]) custom-call(p0), custom_call_target="TopK", '
                 "called_computations={cmp}"):
        module = parse_hlo(hlo([shp([2, 6])], root, computations=CMP_GT))
        got = {o: {str(m.map) for m in output_to_input("r", module, o).maps[0]}
               for o in range(2)}
        assert got == want


def test_topk_with_a_wrong_k_is_unknown() -> None:
    module = parse_hlo(hlo([shp([2, 6])], "(f32[2,4], s32[2,4]) topk(p0), k=3, largest=true"))
    ind = output_to_input("r", module, 0)
    assert ind.maps[0][0].is_undefined and "k=3" in ind.notes[0]


def test_topk_custom_call_of_rank_3_is_unknown() -> None:
    """XLA's CPU runtime mixes the rows of a rank-3 operand (seen with this oracle): unknown."""
    module = parse_hlo(hlo([shp([2, 2, 3])], '(f32[2,2,1], s32[2,2,1]) custom-call(p0), '
                           'custom_call_target="TopK", called_computations={cmp}',
                           computations=CMP_GT))
    ind = output_to_input("r", module, 0)
    assert ind.maps[0][0].is_undefined and "rank 1 or 2" in ind.notes[0]


# -- fft ---------------------------------------------------------------------------------------

FFT_CASES = [("FFT", [2], [4]), ("IFFT", [], [3, 2]), ("RFFT", [2], [5]), ("RFFT", [], [3, 4]),
             ("IRFFT", [2], [6]), ("IRFFT", [], [3, 5]), ("FFT", [], [2, 2, 3])]


@pytest.mark.parametrize(("kind", "batch", "lengths"), FFT_CASES)
def test_fft(kind: str, batch: list[int], lengths: list[int]) -> None:
    """Every output reads every element of its batch's transformed dims, exactly: a change of
    one element, real or imaginary, shows in each of them."""
    half = [*lengths[:-1], lengths[-1] // 2 + 1]
    src = [*batch, *(half if kind == "IRFFT" else lengths)]
    out = [*batch, *(half if kind == "RFFT" else lengths)]
    src_t, out_t = ("f64" if kind == "RFFT" else "c128"), ("f64" if kind == "IRFFT" else "c128")
    text = hlo([shp(src, src_t)], f"{shp(out, out_t)} fft(p0), fft_type={kind}, "
               f"fft_length={{{ints(lengths)}}}")
    rng = np.random.default_rng(len(src))
    base = rng.standard_normal(src)
    changes: list[Change] = [lambda v: v + 1.0]
    if src_t == "c128":
        base = base + 1j * rng.standard_normal(src)
        changes.append(lambda v: v + 1.0j)
    against_xla(text, [[base]], changes)


def test_fft_with_a_length_that_does_not_fit_is_unknown() -> None:
    module = parse_hlo(hlo([shp([3, 8], "c64")], "c64[3,8] fft(p0), fft_type=FFT, "
                           "fft_length={6}"))
    for ind in (output_to_input("r", module, 0), input_to_output("r", module, 0)):
        assert ind.maps[0][0].is_undefined and "fft_length" in ind.notes[0]


# -- select-and-scatter (max-pool gradient) ----------------------------------------------------

SAS_COMPUTATIONS = (
    "ge {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
    "add {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  ROOT c = f64[] add(a, b)\n}\n")


@st.composite
def sas_windows(draw: st.DrawFn) -> list[tuple[int, int, int, int, int]]:
    """(operand size, window size, stride, pad low, pad high) per dimension."""
    spec = []
    for _ in range(draw(st.integers(1, 2))):
        n, size, stride = draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
        lo, hi = draw(st.integers(0, 1)), draw(st.integers(0, 1))
        if n + lo + hi < size:
            size = n + lo + hi
        spec.append((n, size, stride, lo, hi))
    return spec


@settings(max_examples=10)
@given(sas_windows())
def test_select_and_scatter(spec: list[tuple[int, int, int, int, int]]) -> None:
    """Max-pool's gradient: output x reads the init value, the source value of each window
    covering x, and every operand element of those windows. Exact for a max selection: from a
    base where x is the largest element, making another element y of a shared window larger
    still takes that window's source value away from x."""
    src_dims = [(n + lo + hi - size) // stride + 1 for n, size, stride, lo, hi in spec]
    dims = [s[0] for s in spec]
    window = ("{size=" + "x".join(str(s[1]) for s in spec)
              + " stride=" + "x".join(str(s[2]) for s in spec)
              + " pad=" + "x".join(f"{s[3]}_{s[4]}" for s in spec) + "}")
    text = hlo([shp(dims, "f64"), shp(src_dims, "f64"), shp([], "f64")],
               f"{shp(dims, 'f64')} select-and-scatter(p0, p1, p2), window={window}, "
               "select=ge, scatter=add", computations=SAS_COMPUTATIONS)
    rng = np.random.default_rng(len(dims))
    operand = rng.random(dims)
    source = 1 + rng.random(src_dims)
    bases = [[operand, source, np.array(0.5)]]
    for x in np.ndindex(*dims):  # x the largest: every window covering x selects it
        spiked = operand.copy()
        spiked[x] = 10.0
        bases.append([spiked, source, np.array(0.5)])
    truth = perturbation_reads(text, bases, [lambda v: np.asarray(100.0), lambda v: v + 0.25])

    def reads(leaf: int, d: Index) -> Reads:
        """The one documented over-approximation: a covered output element reads its own
        operand element (unread where every window covering it holds it alone)."""
        got = truth[(leaf, d)]
        if got.get(1) and any(s[1] > 1 for s in spec):
            return {**got, 0: got.get(0, set()) | {d}}
        return got

    check(text, reads)


def test_select_and_scatter_from_jax_max_pool_gradient() -> None:
    """The HLO jax writes for the gradient of a 2x2 max pool (stride 2) over NHWC."""
    jax, lax = xla.jax, xla.jax.lax

    def pool(a):  # type: ignore[no-untyped-def]
        return lax.reduce_window(a, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum()

    text = jax.jit(jax.grad(pool)).lower(np.ones((1, 4, 4, 1), np.float32)).compiler_ir(
        "hlo").as_hlo_text()
    module = parse_hlo(text)
    (sas,) = [i for c in module.computations.values() for i in c.instructions
              if i.opcode == "select-and-scatter"]
    (m,) = output_to_input(sas, module, 0).maps[0]
    assert not m.is_undefined
    reads = {r for _rt, d, r in m.map.relation() if d == (0, 1, 2, 0)}
    assert reads == {(0, a, b, 0) for a in (0, 1) for b in (2, 3)}


def test_dilated_select_and_scatter_is_unknown() -> None:
    text = hlo([shp([4], "f64"), shp([2], "f64"), shp([], "f64")],
               "f64[4] select-and-scatter(p0, p1, p2), window={size=2 stride=2 rhs_dilate=2}, "
               "select=ge, scatter=add", computations=SAS_COMPUTATIONS)
    ind = output_to_input("r", parse_hlo(text), 0)
    assert all(g[0].is_undefined for g in ind.maps) and "dilated" in ind.notes[0]


# -- sort with several operands ----------------------------------------------------------------


@pytest.mark.parametrize(("dims", "axis", "keys"), [([5], 0, 1), ([2, 4], 1, 1), ([3, 2], 0, 2),
                                                    ([2, 3], 1, 3)])
def test_sort_several_operands(dims: list[int], axis: int, keys: int) -> None:
    """Sort of three operands by the first `keys` of them: output k reads its own operand's row
    and the rows the comparator reads, no other operand. The base inputs rotate the key
    ranks, so that every element reaches every position."""
    n = dims[axis]
    lines = "".join(f"  a{i} = f64[] parameter({i})\n" for i in range(6))
    if keys == 1:
        body = "  ROOT lt = pred[] compare(a0, a1), direction=LT\n"
    else:  # by key 0, then key 1 on ties; key 2 (when keys == 3) reads the third operand
        third = "  t = pred[] compare(a4, a5), direction=LT\n" if keys == 3 else ""
        body = (third + "  l0 = pred[] compare(a0, a1), direction=LT\n"
                "  e0 = pred[] compare(a0, a1), direction=EQ\n"
                "  l1 = pred[] compare(a2, a3), direction=LT\n"
                + ("  l2 = pred[] and(l1, t)\n" if keys == 3 else "  l2 = pred[] and(l1, l1)\n")
                + "  tie = pred[] and(e0, l2)\n  ROOT lt = pred[] or(l0, tie)\n")
    cmp = "cmp {\n" + lines + body + "}\n"
    out = "(" + ", ".join([shp(dims, "f64")] * 3) + ")"
    text = hlo([shp(dims, "f64")] * 3, f"{out} sort(p0, p1, p2), dimensions={{{axis}}}, "
               "to_apply=cmp", computations=cmp)
    rng = np.random.default_rng(n)
    shape = [1] * len(dims)
    shape[axis] = n
    bases = []
    for r in range(n):  # key ranks rotated by r; the other operands random
        ranks = np.broadcast_to(((np.arange(n) + r) % n).reshape(shape), dims).astype(np.float64)
        bases.append([ranks, rng.random(dims), rng.random(dims)])
    later_keys = range(1, keys)  # documented: they break ties, which leaves earlier keys alone
    against_xla(text, bases, extremes(1e3) + [lambda v: v + 0.25], approx_o2i=later_keys,
                approx_i2o=later_keys)


# -- rng-bit-generator -------------------------------------------------------------------------


@pytest.mark.parametrize(("algorithm", "state"), [("rng_philox", 2), ("rng_philox", 3),
                                                  ("rng_three_fry", 2), ("rng_default", 2)])
def test_rng_bit_generator(algorithm: str, state: int) -> None:
    """Every generated value reads every word of the state (key and counter): exact for the
    values; the new state is mapped from the whole old state too, an over-approximation
    (`OVER_APPROXIMATIONS`): the key is copied and the counter advanced."""
    text = hlo([shp([state], "u64")], f"(u64[{state}], u32[3,4]) rng-bit-generator(p0), "
               f"algorithm={algorithm}")
    base = np.array([3, 5, 7][:state], np.uint64)
    flips = [lambda v: v ^ np.uint64(1), lambda v: v ^ np.uint64(1 << 63)]
    truth = perturbation_reads(text, [[base]], flips)
    check(text, lambda leaf, d: truth[(leaf, d)], approx_o2i=[0], approx_i2o=[0])
    every_word = {(w,) for w in range(state)}
    assert all(truth[(1, d)] == {0: every_word} for d in itertools.product(range(3), range(4)))


# -- end to end --------------------------------------------------------------------------------


def jax_program() -> object:
    """A max-pool gradient, an rfft of it and a top-k of the spectrum, lowered by jax."""
    jax, lax = xla.jax, xla.jax.lax
    jnp = jax.numpy

    def model(x):  # type: ignore[no-untyped-def]
        def pooled(a):  # type: ignore[no-untyped-def]
            return lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                     "VALID").sum()

        spectrum = jnp.abs(jnp.fft.rfft(jax.grad(pooled)(x)[..., 0], axis=-1))
        return lax.top_k(spectrum.reshape(spectrum.shape[0], -1), 3)

    return jax.jit(model).lower(np.ones((2, 4, 4, 1), np.float32))


def entry_maps(path: Path, capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    """`verifidx indexing --json` of the file: it holds no unknown map; the entry's maps."""
    assert main(["indexing", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    operands = [p for c in result["computations"] for o in c["outputs"] for p in o["operands"]]
    assert not [r for p in operands for r in p.get("reasons", []) if r]
    assert all(m != "UNDEFINED" for p in operands for m in p["maps"])
    (entry,) = [c for c in result["computations"] if c["name"].startswith("main")]
    return [p["maps"] for o in entry["outputs"] for p in o["operands"]]


def test_jax_program_has_no_unknown_map(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The program as jax lowers it to HLO (select-and-scatter, fft, topk), as XLA optimizes it
    (the TopK custom call) and as StableHLO (stablehlo.select_and_scatter, stablehlo.fft,
    chlo.top_k): every computation's maps are known, and StableHLO's entry maps are HLO's."""
    lowered = jax_program()
    texts = {"raw.hlo": lowered.compiler_ir("hlo").as_hlo_text(),  # type: ignore[attr-defined]
             "opt.hlo": lowered.compile().as_text(),  # type: ignore[attr-defined]
             "main.mlir": lowered.as_text()}  # type: ignore[attr-defined]
    ops = {i.opcode for c in parse_hlo(texts["raw.hlo"]).computations.values()
           for i in c.instructions}
    assert {"select-and-scatter", "fft", "topk"} <= ops
    assert 'custom_call_target="TopK"' in texts["opt.hlo"]
    maps = {}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        maps[name] = entry_maps(tmp_path / name, capsys)
    assert maps["main.mlir"] == maps["raw.hlo"]
