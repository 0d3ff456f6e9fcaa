"""HLO text with bounded dynamic dimensions (`f32[<=N,K]`): maps at every runtime size.

The oracle here is written from XLA's semantics of dynamic shapes, independently of the code:
at runtime size `n` (0 <= n <= N) a `<=N` dimension holds `n` elements and every op works on
those; for each output element that exists it lists the operand elements read. The map,
with its size variables fixed to the sizes at run time, must give exactly that relation, or be
"unknown indexing" with a reason where the op's map depends on the size in a way not modelled
(reverse or concatenation along the dynamic dimension, a slice of part of it, a reshape that
merges it, a static output dimension indexed by it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifidx.analysis.computation_maps import computation_indexing
from verifidx.hlo import parse_hlo
from verifidx.hlo.dynamic_dims import SIZES_ATTRIBUTE, instantiate_sizes
from verifidx.hlo.indexing import input_to_output, output_to_input
from verifidx.hlo.runtime import OperandIndexing

Index = tuple[int, ...]
Reads = dict[int, set[Index]]  # operand number -> operand indices read


@dataclass
class Case:
    """One op on a `<=N` parameter: its HLO text and its meaning at runtime size `n`."""

    text: str
    # n -> (output sizes at n, output index -> reads)
    meaning: Callable[[int], tuple[Index, Callable[[Index], Reads]]]
    exact: bool = True  # False: the map must be unknown (with a reason)


def module(params: list[str], root: str, computations: str = "") -> str:
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params)]
    return (f"HloModule m\n{computations}\nENTRY e {{\n" + "\n".join(lines)
            + f"\n  ROOT r = {root}\n}}\n")


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"


def grid(sizes: Index) -> list[Index]:
    return list(itertools.product(*(range(s) for s in sizes)))


KINDS = ["elementwise", "reverse_static", "reverse_dynamic", "slice_whole", "slice_part",
         "pad_static", "pad_dynamic", "concat_static", "concat_dynamic", "broadcast",
         "broadcast_front", "transpose", "reduce_dynamic", "reduce_static", "dot_free",
         "dot_contract", "reshape", "reshape_merge", "elementwise_to_static"]


@st.composite
def cases(draw: st.DrawFn, kind: str) -> tuple[Case, int, int]:
    """An op of `kind` on `p0: f32[<=N,K]` (and more parameters), and the runtime size n."""
    bound = draw(st.integers(1, 4))
    k = draw(st.integers(1, 3))
    n = draw(st.integers(0, bound))
    p0 = f"f32[<={bound},{k}]"
    if kind == "elementwise":
        case = Case(module([p0, p0], f"f32[<={bound},{k}] add(p0, p1)"),
                    lambda n: ((n, k), lambda i: {0: {i}, 1: {i}}))
    elif kind == "reverse_static":
        case = Case(module([p0], f"f32[<={bound},{k}] reverse(p0), dimensions={{1}}"),
                    lambda n: ((n, k), lambda i: {0: {(i[0], k - 1 - i[1])}}))
    elif kind == "reverse_dynamic":
        case = Case(module([p0], f"f32[<={bound},{k}] reverse(p0), dimensions={{0}}"),
                    lambda n: ((n, k), lambda i: {0: {(n - 1 - i[0], i[1])}}))
    elif kind == "slice_whole":
        a = draw(st.integers(0, k - 1))
        b = draw(st.integers(a + 1, k))
        case = Case(module([p0], f"f32[<={bound},{b - a}] slice(p0), "
                                 f"slice={{[0:{bound}], [{a}:{b}]}}"),
                    lambda n: ((n, b - a), lambda i: {0: {(i[0], i[1] + a)}}))
    elif kind == "slice_part":
        a = draw(st.integers(0, bound - 1))
        b = draw(st.integers(a + 1, bound))
        case = Case(module([p0], f"f32[{b - a},{k}] slice(p0), slice={{[{a}:{b}], [0:{k}]}}"),
                    lambda n: ((b - a, k), lambda i: {0: {(i[0] + a, i[1])}}), exact=False)
    elif kind in ("pad_static", "pad_dynamic"):
        lo, hi, interior = (draw(st.integers(0, 2)) for _ in range(3))
        axis = 1 if kind == "pad_static" else 0

        def padded(m: int) -> int:
            return lo + hi + m + max(m - 1, 0) * interior

        cfg = [f"{lo}_{hi}_{interior}" if a == axis else "0_0" for a in (0, 1)]
        out = f"f32[<={padded(bound)},{k}]" if axis == 0 else f"f32[<={bound},{padded(k)}]"

        def pad_meaning(n: int) -> tuple[Index, Callable[[Index], Reads]]:
            sizes = (padded(n), k) if axis == 0 else (n, padded(k))
            src = n if axis == 0 else k

            def reads(i: Index) -> Reads:
                r: Reads = {1: {()}}  # every output element reads the padding value (as XLA)
                j = i[axis] - lo
                if j >= 0 and j % (interior + 1) == 0 and j // (interior + 1) < src:
                    idx = list(i)
                    idx[axis] = j // (interior + 1)
                    r[0] = {tuple(idx)}
                return r
            return sizes, reads

        case = Case(module([p0, "f32[]"], f"{out} pad(p0, p1), padding={'x'.join(cfg)}"),
                    pad_meaning)
    elif kind == "concat_static":
        k2 = draw(st.integers(1, 2))
        case = Case(module([p0, f"f32[<={bound},{k2}]"],
                           f"f32[<={bound},{k + k2}] concatenate(p0, p1), dimensions={{1}}"),
                    lambda n: ((n, k + k2), lambda i: {0: {i}} if i[1] < k
                               else {1: {(i[0], i[1] - k)}}))
    elif kind == "concat_dynamic":
        case = Case(module([p0, f"f32[2,{k}]"],
                           f"f32[<={bound + 2},{k}] concatenate(p0, p1), dimensions={{0}}"),
                    lambda n: ((n + 2, k), lambda i: {0: {i}} if i[0] < n
                               else {1: {(i[0] - n, i[1])}}))
    elif kind == "broadcast":
        case = Case(module([p0], f"f32[<={bound},{k},3] broadcast(p0), dimensions={{0,1}}"),
                    lambda n: ((n, k, 3), lambda i: {0: {i[:2]}}))
    elif kind == "broadcast_front":
        case = Case(module([p0], f"f32[2,{k},<={bound}] broadcast(p0), dimensions={{2,1}}"),
                    lambda n: ((2, k, n), lambda i: {0: {(i[2], i[1])}}))
    elif kind == "transpose":
        case = Case(module([p0], f"f32[{k},<={bound}] transpose(p0), dimensions={{1,0}}"),
                    lambda n: ((k, n), lambda i: {0: {(i[1], i[0])}}))
    elif kind == "reduce_dynamic":
        case = Case(module([p0, "f32[]"], f"f32[{k}] reduce(p0, p1), dimensions={{0}}, "
                                          "to_apply=add", ADD),
                    lambda n: ((k,), lambda i: {0: {(r, i[0]) for r in range(n)}, 1: {()}}))
    elif kind == "reduce_static":
        case = Case(module([p0, "f32[]"], f"f32[<={bound}] reduce(p0, p1), dimensions={{1}}, "
                                          "to_apply=add", ADD),
                    lambda n: ((n,), lambda i: {0: {(i[0], c) for c in range(k)}, 1: {()}}))
    elif kind == "dot_free":
        m = draw(st.integers(1, 2))
        case = Case(module([p0, f"f32[{k},{m}]"],
                           f"f32[<={bound},{m}] dot(p0, p1), lhs_contracting_dims={{1}}, "
                           "rhs_contracting_dims={0}"),
                    lambda n: ((n, m), lambda i: {0: {(i[0], c) for c in range(k)},
                                                  1: {(c, i[1]) for c in range(k)}}))
    elif kind == "dot_contract":
        m = draw(st.integers(1, 2))
        case = Case(module([p0, f"f32[<={bound},{m}]"],
                           f"f32[{k},{m}] dot(p0, p1), lhs_contracting_dims={{0}}, "
                           "rhs_contracting_dims={0}"),
                    lambda n: ((k, m), lambda i: {0: {(r, i[0]) for r in range(n)},
                                                  1: {(r, i[1]) for r in range(n)}}))
    elif kind == "reshape":
        case = Case(module([f"f32[<={bound},4]"], f"f32[<={bound},2,2] reshape(p0)"),
                    lambda n: ((n, 2, 2), lambda i: {0: {(i[0], 2 * i[1] + i[2])}}))
    elif kind == "reshape_merge":  # the dynamic dimension merged: a map with sizes
        w = k + 1
        case = Case(module([f"f32[<={bound},{w}]"], f"f32[<={bound * w}] reshape(p0)"),
                    lambda n: ((n * w,), lambda i: {0: {(i[0] // w, i[0] % w)}}))
    else:  # elementwise into a static output: elements past the size read padding
        case = Case(module([p0], f"f32[{bound},{k}] negate(p0)"),
                    lambda n: ((bound, k), lambda i: {0: {i}}), exact=False)
    return case, n, bound


def pairs_at(ind: OperandIndexing, sizes: dict[str, int]) -> set[tuple[Index, Index]] | None:
    """The relation of a map with every size variable fixed to its value (None: unknown)."""
    if ind.is_undefined:
        return None
    assert not ind.runtime, str(ind)
    for z in ind.map.sizes:  # XLA's dynamic sizes may be 0: the map's size is one more
        assert z.provenance is not None and z.provenance.endswith("plus 1"), z
    fixed = instantiate_sizes(ind, sizes)
    assert not fixed.map.sizes, str(fixed)
    return {(d, res) for _rt, d, res in fixed.map.relation()}


def runtime_sizes(text: str, n: int, root_sizes: Index) -> dict[str, int]:
    """Every size variable's value at run time: `n` for the parameters' `<=` dimensions,
    the oracle's output sizes for the root's."""
    mod = parse_hlo(text)
    values: dict[str, int] = {}
    for inst in mod.entry.instructions:
        for leaf in inst.attributes.get(SIZES_ATTRIBUTE) or ():
            for d, size in enumerate(leaf):
                if size is None:
                    continue
                for mono, _coef in size.terms:
                    for var in mono:
                        values[var.key] = root_sizes[d] if inst.is_root else n
    return values


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_bounded_dynamic_maps_match_the_oracle_at_every_size(kind: str, data: st.DataObject
                                                             ) -> None:
    case, n, _bound = data.draw(cases(kind))
    mod = parse_hlo(case.text)
    root = mod.entry.root
    out_sizes, reads = case.meaning(n)
    sizes = runtime_sizes(case.text, n, out_sizes)
    expected: dict[int, set[tuple[Index, Index]]] = {p: set() for p in range(len(root.operands))}
    for i in grid(out_sizes):
        for p, idxs in reads(i).items():
            expected[p] |= {(i, x) for x in idxs}
    o2i = output_to_input(root, mod.entry)
    for p in range(len(root.operands)):
        maps = o2i.maps[p]
        got = [pairs_at(m, sizes) for m in maps]
        if not case.exact:
            assert all(g is None for g in got), f"{case.text}: expected unknown, got {maps}"
            assert o2i.notes, "an unknown map says why"
            continue
        assert all(g is not None for g in got), f"{case.text}: operand {p} unknown: {o2i.notes}"
        union = set().union(*(g for g in got if g is not None))
        assert union == expected[p], (case.text, n, p, union ^ expected[p])
        i2o = input_to_output(root, mod.entry, p)
        got_in = [pairs_at(m, sizes) for m in i2o.maps[0]]
        assert all(g is not None for g in got_in), (case.text, i2o.notes)
        inverse = {(x, i) for i, x in expected[p]}
        union_in = set().union(*(g for g in got_in if g is not None))
        assert union_in == inverse, (case.text, n, p, union_in ^ inverse)


def test_reverse_along_a_bounded_dimension_reads_from_the_size_not_the_bound() -> None:
    """The bug this fixed: `(d0) -> (15 - d0)` was reported for a `<=16` dimension; the map
    now reads `size - 1 - d0` at every size, empty included."""
    mod = parse_hlo(module(["f32[<=16]"], "f32[<=16] reverse(p0), dimensions={0}"))
    (ind,) = output_to_input("r", mod.entry).maps[0]
    for n in range(17):
        got = pairs_at(ind, {"e/p0/0": n, "e/r/0": n})
        assert got == {((i,), (n - 1 - i,)) for i in range(n)}, n


@pytest.mark.parametrize(("operand", "root"), [
    ("f32[2,<=6]", "(f32[2,3], s32[2,3]) topk(p0), k=3, largest=true"),
    ("f32[<=2,6]", '(f32[<=2,3], s32[<=2,3]) custom-call(p0), custom_call_target="TopK"'),
    ("c64[<=4,8]", "c64[<=4,8] fft(p0), fft_type=FFT, fft_length={8}"),
])
def test_ops_with_value_or_size_dependent_reads_are_unknown_when_dynamic(operand: str,
                                                                         root: str) -> None:
    """top-k, fft (and select-and-scatter) are not checked to be prefix-consistent: unknown."""
    mod = parse_hlo(module([operand], root))
    result = output_to_input("r", mod.entry)
    assert result.maps[0][0].is_undefined
    assert any("with dynamic dimensions" in note for note in result.notes)


def test_elementwise_map_carries_the_size_variable() -> None:
    mod = parse_hlo(module(["f32[<=16,8]"], "f32[<=16,8] negate(p0)"))
    ind = output_to_input("r", mod.entry).maps[0][0]
    (size,) = ind.map.sizes
    assert not ind.map.num_rt_vars and (size.bounds.lo, size.bounds.hi) == (1, 17)
    assert size.provenance is not None and "dimension 0 of %p0 in e" in size.provenance


@pytest.mark.parametrize("text", [
    module(["f32[16,8]"], "f32[8,16] transpose(p0), dimensions={1,0}"),
    module(["f32[16]"], "f32[16] reverse(p0), dimensions={0}"),
    module(["f32[16,?]"], "f32[16,?] negate(p0)"),
])
def test_static_and_unbounded_shapes_get_no_size_variables(text: str) -> None:
    """Static modules (and unbounded `?`, which has no index space) take the old path."""
    mod = parse_hlo(text)
    assert all(SIZES_ATTRIBUTE not in inst.attributes for inst in mod.entry.instructions)


CHAIN = """HloModule m
ENTRY e {
  p0 = f32[<=BOUND,2] parameter(0)
  n = f32[<=BOUND,2] negate(p0)
  t = f32[2,<=BOUND] transpose(n), dimensions={1,0}
  b = f32[2,<=BOUND,3] broadcast(t), dimensions={0,1}
  ROOT r = f32[2,<=BOUND,3] add(b, b)
}
"""


@given(st.integers(1, 4).flatmap(lambda b: st.tuples(st.just(b), st.integers(0, b))))
def test_a_size_flows_through_a_chain_and_composes(bound_n: tuple[int, int]) -> None:
    """The parameter's size is followed through elementwise, transpose and broadcast, so the
    composed computation map has one size and is exact at every size."""
    bound, n = bound_n
    mod = parse_hlo(CHAIN.replace("BOUND", str(bound)))
    ci = computation_indexing(mod, mod.entry, "out2in")
    (ind,) = ci.maps[(0, 0, 0)]
    got = pairs_at(ind, {"e/p0/0": n})
    expected = {((c, i, j), (i, c)) for c in range(2) for i in range(n) for j in range(3)}
    assert got == expected
    (size,) = ind.map.sizes
    assert size.provenance is not None and "%p0" in size.provenance


def test_coalescing_reads_a_bounded_fusion_at_its_bound() -> None:
    """Coalescing evaluates maps at points: the sizes of dynamic dimensions sit at their bound
    (the buffer as allocated), as if static; it used to stop at a size without a value."""
    from verifidx.analysis.tiling.coalescing import fusion_coalescing

    def fusion(shape: str) -> str:
        return ("HloModule m\n\nfused {\n  p = " + shape + " parameter(0)\n"
                "  ROOT r = " + shape + " reverse(p), dimensions={0,1}\n}\n\n"
                "ENTRY e {\n  p0 = " + shape + " parameter(0)\n"
                "  ROOT f = " + shape + " fusion(p0), kind=kLoop, calls=fused\n}\n")

    dynamic, static = parse_hlo(fusion("f32[<=16,8]")), parse_hlo(fusion("f32[16,8]"))
    got = fusion_coalescing(dynamic, dynamic.entry.root)
    assert got == fusion_coalescing(static, static.entry.root)


def test_start_indices_into_a_bounded_operand_stay_unknown() -> None:
    """XLA's dynamic padder runs dynamic-slice on the padded buffer, clamping the start to the
    bound: a map clamped to the size (StableHLO's) could miss a read of the padding."""
    module = parse_hlo("HloModule m\n\nENTRY main {\n  a = f32[<=16,8] parameter(0)\n"
                       "  i = s32[] parameter(1)\n  z = s32[] constant(0)\n"
                       "  ROOT d = f32[2,8] dynamic-slice(a, i, z), dynamic_slice_sizes={2,8}\n}\n")
    ci = computation_indexing(module, module.entry, "out2in")
    (m,) = ci.maps[(0, 0, 0)]
    assert m.is_undefined
    assert any("clamps it to the bound" in n for n in ci.notes), ci.notes


NESTED = """HloModule m
fused {
  q0 = f32[<=BOUND,2] parameter(0)
  e = f32[<=BOUND,2] exponential(q0)
  ROOT r = f32[<=BOUND,2] reverse(e), dimensions={0}
}
outer {
  c0 = f32[<=BOUND,2] parameter(0)
  ROOT f = f32[<=BOUND,2] fusion(c0), kind=kLoop, calls=fused
}
ENTRY e {
  p0 = f32[<=BOUND,2] parameter(0)
  n = f32[<=BOUND,2] negate(p0)
  ROOT c = f32[<=BOUND,2] call(n), to_apply=outer
}
"""


@given(st.integers(1, 4).flatmap(lambda b: st.tuples(st.just(b), st.integers(0, b))))
def test_a_size_is_passed_into_fusions_and_calls(bound_n: tuple[int, int]) -> None:
    """A computation called by one fusion or call gets its caller's sizes: the entry's map
    through a call of a fusion that reverses the dynamic dimension has the one size of `p0`
    and reads `n - 1 - i` at every size n (a fresh size per parameter knew nothing of n)."""
    bound, n = bound_n
    mod = parse_hlo(NESTED.replace("BOUND", str(bound)))
    ci = computation_indexing(mod, mod.entry, "out2in")
    (ind,) = ci.maps[(0, 0, 0)]
    (size,) = ind.map.sizes
    assert size.provenance is not None and "%p0 in e" in size.provenance
    got = pairs_at(ind, {"e/p0/0": n})
    assert got == {((i, j), (n - 1 - i, j)) for i in range(n) for j in range(2)}
    fused = computation_indexing(mod, mod.computation("fused"), "out2in")
    (inner,) = fused.maps[(0, 0, 0)]
    assert [z.name for z in inner.map.sizes] == [size.name]  # the callee names it so too


def test_a_computation_called_twice_keeps_sizes_of_its_own() -> None:
    """Two calls may pass different sizes: the callee's parameter keeps a size of its own."""
    text = NESTED.replace("BOUND", "4").replace(
        "ROOT c = f32[<=4,2] call(n), to_apply=outer",
        "c1 = f32[<=4,2] call(n), to_apply=outer\n"
        "  ROOT c = f32[<=4,2] call(p0), to_apply=outer")
    mod = parse_hlo(text)
    outer = computation_indexing(mod, mod.computation("outer"), "out2in")
    (ind,) = outer.maps[(0, 0, 0)]
    assert all("in outer" in (z.provenance or "") for z in ind.map.sizes), ind.map.sizes
