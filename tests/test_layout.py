"""Tiled layouts (issue #7): the document's examples, brute-force properties, Z3 proofs, the
conformance corpus's physical-layout and bitcast cases, and the CLI.

The reference implementation here reads the document literally with numpy: an array of element
ids is put in physical order, then for each tiling it is padded, reshaped into (count, tile)
pairs and transposed so the tile dimensions go minor; `*` entries are merged by a reshape first.
The position of each id in the flattened result is its offset. It shares no code with
verifidx.hlo.layout.
"""

from __future__ import annotations

import io
import json
import math
import re
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from verifidx.cli import main
from verifidx.core.errors import ParseError, UnsupportedError
from verifidx.core.expr import Dim, add
from verifidx.core.indexing_map import IndexingMap, compose
from verifidx.core.syntax import parse_map
from verifidx.hlo.layout import (
    COMBINE,
    TiledLayout,
    TiledShape,
    as_tiled_shape,
    bitcast_map,
    check_layout,
    layouts_equivalent,
    map_is_injective,
    map_within,
    parse_layout,
    parse_shape,
    physical_bitcast_map,
    physical_layout_map,
    physical_mode_map,
    prove_in_bounds,
    prove_injective,
)
from verifidx.solve import smt

# -- the reference -------------------------------------------------------------------------------


def reference(dims: tuple[int, ...], minor_to_major: tuple[int, ...],
              tiles: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """The final tiled array; entry = row-major logical id of the element, -1 = padding."""
    n = math.prod(dims)
    arr = np.arange(n, dtype=np.int64).reshape(dims)
    arr = arr.transpose(list(reversed(minor_to_major)))  # physical order, most major first
    for tile in tiles:
        while arr.ndim < len(tile):  # a longer tile sees leading dimensions of size 1
            arr = arr[np.newaxis]
        k = len(tile)
        lead = list(arr.shape[: arr.ndim - k])
        # '*' merges a dimension into the next more minor one: a reshape does exactly that
        merged: list[int] = []
        sizes: list[int] = []
        acc = 1
        for size, t in zip(arr.shape[arr.ndim - k :], tile):
            acc *= size
            if t != -1:
                merged.append(acc)
                sizes.append(t)
                acc = 1
        arr = arr.reshape(lead + merged)
        # 1. pad to whole tiles
        counts = [-(-d // t) for d, t in zip(merged, sizes)]
        pad = [(0, 0)] * len(lead) + [(0, c * t - d) for c, t, d in zip(counts, sizes, merged)]
        arr = np.pad(arr, pad, constant_values=-1)
        # 2. reshape every tiled dimension into (count, tile)
        arr = arr.reshape(lead + [x for c, t in zip(counts, sizes) for x in (c, t)])
        # 3. move the tile dimensions minor, keeping their order
        nl, g = len(lead), len(sizes)
        arr = arr.transpose(list(range(nl)) + [nl + 2 * j for j in range(g)]
                            + [nl + 2 * j + 1 for j in range(g)])
    return arr


def reference_offsets(dims: tuple[int, ...], minor_to_major: tuple[int, ...],
                      tiles: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, np.ndarray]:
    """(offset of each element in row-major order, final array)."""
    final = reference(dims, minor_to_major, tiles)
    flat = final.reshape(-1)
    where = np.nonzero(flat >= 0)[0]
    offsets = np.empty(math.prod(dims), dtype=np.int64)
    offsets[flat[where]] = where
    return offsets, final


def shape_of(dims: tuple[int, ...], m2m: tuple[int, ...],
             tiles: tuple[tuple[int, ...], ...] = ()) -> TiledShape:
    return TiledShape("f32", dims, TiledLayout(m2m, tiles))


def unravel(i: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(x) for x in np.unravel_index(i, dims)) if dims else ()


# -- strategies ----------------------------------------------------------------------------------


@st.composite
def tilings(draw: st.DrawFn, rank: int, max_tilings: int = 2,
            min_tilings: int = 1) -> tuple[tuple[int, ...], ...]:
    """1-2 tilings; a tile may be one longer than the shape it tiles and may contain '*'."""
    out: list[tuple[int, ...]] = []
    cur = rank
    for _ in range(draw(st.integers(min_tilings, max_tilings))):
        k = draw(st.integers(1, cur + 1 if cur < 4 else cur))
        body = draw(st.lists(st.one_of(st.integers(1, 4), st.integers(1, 4),
                                       st.just(COMBINE)), min_size=k - 1, max_size=k - 1))
        tile = (*body, draw(st.integers(1, 4)))
        out.append(tile)
        groups = sum(1 for t in tile if t != COMBINE)
        cur = max(cur, k) - k + 2 * groups
    return tuple(out)


@st.composite
def tiled_shapes(draw: st.DrawFn, max_rank: int = 4, max_elements: int = 400,
                 min_tilings: int = 1) -> TiledShape:
    rank = draw(st.integers(1, max_rank))
    dims = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    assume(math.prod(dims) <= max_elements)
    m2m = tuple(draw(st.permutations(range(rank))))
    tiles = draw(tilings(rank, min_tilings=min_tilings))
    s = shape_of(dims, m2m, tiles)
    assume(s.physical_elements <= 8 * max_elements)
    return s


# -- the document's examples ---------------------------------------------------------------------


def linear_index(e: tuple[int, ...], d: tuple[int, ...]) -> int:
    out = 0
    for x, n in zip(e, d):
        out = out * n + x
    return out


def test_figure1_element_2_3_is_at_17() -> None:
    s = parse_shape("F32[3,5]{1,0:T(2,2)}")
    assert s.offset((2, 3)) == 17
    assert s.physical_index((2, 3)) == (1, 1, 0, 1)
    assert s.physical_shape == (2, 3, 2, 2)
    assert s.buffer_elements == 24
    # the document's own spelling without 'T'
    assert parse_shape("F32[3,5]{1,0:(2,2)}") == s
    assert str(s) == "f32[3,5]{1,0:T(2,2)}"
    # the document's formula linear_index_with_tile for every element
    for e in np.ndindex(3, 5):
        tile_idx = tuple(x // 2 for x in e) + tuple(x % 2 for x in e)
        assert s.offset(e) == linear_index(tile_idx, (2, 3, 2, 2))


# Figure 2: a 4x8 array tiled by (2,4)(2,1); each entry is the element's offset in memory.
FIGURE2 = [
    [0, 2, 4, 6, 8, 10, 12, 14],
    [1, 3, 5, 7, 9, 11, 13, 15],
    [16, 18, 20, 22, 24, 26, 28, 30],
    [17, 19, 21, 23, 25, 27, 29, 31],
]


def test_figure2_repeated_tiling() -> None:
    s = parse_shape("f32[4,8]{1,0:T(2,4)(2,1)}")
    ref, _ = reference_offsets((4, 8), (1, 0), ((2, 4), (2, 1)))
    assert s.offsets() == [x for row in FIGURE2 for x in row] == ref.tolist()
    assert s.buffer_elements == 32
    for e in np.ndindex(4, 8):
        assert s.offset_map().evaluate(e) == (FIGURE2[e[0]][e[1]],)


def test_combined_dimensions_example() -> None:
    s = parse_shape("F32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    flat = parse_shape("f32[112,110]{1,0:T(2,3)}")
    assert s.physical_shape == flat.physical_shape == (56, 37, 2, 3)
    assert s.buffer_elements == flat.buffer_elements == 56 * 37 * 6
    ref, _ = reference_offsets(s.dims, (4, 3, 2, 1, 0), ((-1, -1, 2, -1, 3),))
    offs = s.offsets()
    assert offs == ref.tolist()
    flat_offs = flat.offsets()
    for i, e in enumerate(np.ndindex(*s.dims)):
        combined = ((e[0] * 7 + e[1]) * 8 + e[2], e[3] * 10 + e[4])
        assert offs[i] == flat_offs[combined[0] * 110 + combined[1]]
    proof = check_layout(s)
    assert proof.holds is True
    # the map on the combined index, proven equal
    combine = IndexingMap.build(
        [add(Dim(0) * 56, Dim(1) * 8, Dim(2)), add(Dim(3) * 10, Dim(4))],
        [(0, n - 1) for n in s.dims])
    assert smt.equal(s.offset_map(), compose(combine, flat.offset_map())).holds is True


def test_bf16_packing_and_sub_byte_sizes() -> None:
    # (8,128)(2,1): an even and an odd row of the same column are adjacent
    s = parse_shape("bf16[16,256]{1,0:T(8,128)(2,1)}")
    assert s.offset((0, 5)) + 1 == s.offset((1, 5))
    assert s.offset((2, 0)) == 256
    assert s.buffer_bytes == 16 * 256 * 2
    # E(4): offsets stay in elements; the buffer shrinks to half a byte per element
    packed = parse_shape("s4[8,128]{1,0:T(8,128)E(4)}")
    unpacked = parse_shape("s4[8,128]{1,0:T(8,128)}")
    assert packed.offsets() == unpacked.offsets()
    assert (packed.buffer_bytes, unpacked.buffer_bytes) == (512, 1024)
    assert packed.element_bits == 4 and unpacked.element_bits == 8
    # L(n) rounds the buffer up, offsets unchanged
    tail = parse_shape("f32[3,5]{1,0:T(2,2)L(64)}")
    assert tail.buffer_elements == 64 and tail.offset((2, 3)) == 17
    assert layouts_equivalent(tail, "f32[3,5]{1,0:T(2,2)}").holds is True


def test_tiles_longer_than_the_shape() -> None:
    scalar = parse_shape("f32[]{:T(128)}")
    assert scalar.buffer_elements == 128 and scalar.offsets() == [0]
    assert check_layout(scalar).holds is True
    vec = parse_shape("bf16[300]{0:T(512)(128)(2,1)}")
    ref, final = reference_offsets((300,), (0,), ((512,), (128,), (2, 1)))
    assert vec.offsets() == ref.tolist()
    assert vec.physical_shape == final.shape
    assert check_layout(vec).holds is True


# -- parsing -------------------------------------------------------------------------------------


def test_parse_and_print() -> None:
    s = parse_shape("  f32[3, 5] {1, 0 : T(2,2)(2,1) E(32) S(1) }  ")
    assert s.dims == (3, 5) and s.layout.tiles == ((2, 2), (2, 1))
    assert s.layout.element_size_in_bits == 32 and s.layout.memory_space == 1
    assert str(s) == "f32[3,5]{1,0:T(2,2)(2,1)E(32)S(1)}"
    assert parse_shape(str(s)) == s
    assert str(parse_shape("f32[2,3,4]")) == "f32[2,3,4]{2,1,0}"
    assert parse_shape("pred[]").layout.minor_to_major == ()
    kept = parse_shape("f32[8]{0:T(8)D(D)P(s32[2]{0})}")
    assert kept.layout.other_items == ("D(D)", "P(s32[2]{0})")
    assert parse_shape("f32[<=8,3]").dims == (8, 3)
    assert str(parse_shape("f32[<=8,3]")) == "f32[<=8,3]{1,0}"
    assert parse_shape("f32[4,6]{1,0:T(*,2)}").layout.tiles == ((COMBINE, 2),)
    assert parse_layout("{0,1:T(2)}", 2) == TiledLayout((0, 1), ((2,),))


@pytest.mark.parametrize("text,column", [
    ("f32[3,5]{1,2}", 9),           # not a permutation
    ("f32[3,5]{1}", 9),             # too short
    ("f33[3]", 1),                  # unknown type
    ("f32[3,x]", 7),                # bad size
    ("f32[3]{0:T(0)}", 12),         # zero tile
    ("f32[3]{0:T(2,*)}", 16),       # '*' most minor
    ("f32[3]{0:T(2)T(2)}", 14),     # duplicate item
    ("f32[3]{0:T(2) ", 15),         # unterminated
    ("f32[?]", 5),                  # unbounded dynamic
    ("(f32[3], s32[])", 1),         # tuple
    ("f32[3]{0} junk", 11),
    ("f32[3]{0:Q}", 11),
])
def test_parse_errors(text: str, column: int) -> None:
    with pytest.raises(ParseError) as err:
        parse_shape(text)
    assert err.value.line == 1
    assert err.value.column == column, str(err.value)


def test_from_hlo_shape() -> None:
    hlo_shape = pytest.importorskip("verifidx.hlo.shape")
    hs = hlo_shape.Shape("f32", (3, 5), layout=hlo_shape.Layout(
        (1, 0), tiles=((2, 2),), other_items=("L(32)",)))
    s = as_tiled_shape(hs)
    assert s.offset((2, 3)) == 17 and s.buffer_elements == 32
    assert as_tiled_shape(hlo_shape.Shape("f32", (2, 3))).layout.minor_to_major == (1, 0)
    to_phys, to_log = physical_layout_map(hs)
    assert to_phys == parse_shape("f32[3,5]{1,0:T(2,2)}").to_physical_map()
    assert to_log.num_dims == 4


# -- properties against the reference ------------------------------------------------------------


@given(tiled_shapes(max_elements=9**4, min_tilings=0))
def test_maps_agree_with_reference(s: TiledShape) -> None:
    ref, final = reference_offsets(s.dims, s.layout.minor_to_major, s.layout.tiles)
    assert s.physical_shape == final.shape
    assert s.buffer_elements == final.size
    assert s.offsets() == ref.tolist()
    to_phys, to_log = s.to_physical_map(), s.to_logical_map()
    off_map, from_off = s.offset_map(), s.from_offset_map()
    for i, e in enumerate(np.ndindex(*s.dims)):
        p = unravel(int(ref[i]), final.shape)
        assert to_phys.evaluate(e) == p
        assert off_map.evaluate(e) == (int(ref[i]),)
    # the inverse maps: exactly the non-padding positions, each to its element
    expected = {(unravel(int(pos), final.shape), unravel(int(idx), s.dims))
                for pos, idx in enumerate(final.reshape(-1)) if idx >= 0}
    assert {(d, r) for _rt, d, r in to_log.relation()} == expected
    expected_off = {((int(pos),), unravel(int(idx), s.dims))
                    for pos, idx in enumerate(final.reshape(-1)) if idx >= 0}
    assert {(d, r) for _rt, d, r in from_off.relation()} == expected_off


@given(tiled_shapes(max_elements=9**4))
def test_injective_and_in_bounds_are_proven(s: TiledShape) -> None:
    inj = prove_injective(s, timeout_ms=20_000)
    inb = prove_in_bounds(s, timeout_ms=20_000)
    assert inj.holds is True, inj.message
    assert inb.holds is True, inb.message


@given(tiled_shapes(max_rank=3, max_elements=120))
def test_injective_directly_on_offsets(s: TiledShape) -> None:
    """The single query over two copies of the dims and the offset map."""
    v = prove_injective(s, timeout_ms=20_000, direct=True)
    assert v.holds is True, v.message


@given(tiled_shapes(max_rank=3, max_elements=120))
def test_tidied_maps_equal_raw_maps_and_round_trip(s: TiledShape) -> None:
    for name in ("to_physical_map", "to_logical_map", "offset_map", "from_offset_map"):
        tidy, raw = getattr(s, name)(), getattr(s, name)(tidy=False)
        v = smt.equal(tidy, raw, timeout_ms=20_000)
        assert v.holds is True, (name, str(tidy), str(raw), v.message)
    ident = IndexingMap.identity(s.dims)
    round_trip = compose(s.to_physical_map(), s.to_logical_map())
    assert smt.equal(round_trip, ident, timeout_ms=20_000).holds is True


@given(st.data())
def test_equivalence_matches_reference(data: st.DataObject) -> None:
    a = data.draw(tiled_shapes(max_rank=3, max_elements=120, min_tilings=0))
    m2m = tuple(data.draw(st.permutations(range(a.rank))))
    b = shape_of(a.dims, m2m, data.draw(tilings(a.rank, min_tilings=0)))
    v = layouts_equivalent(a, b, timeout_ms=20_000)
    same = a.offsets() == b.offsets()
    assert v.holds is same, v.message
    if not same:
        assert v.counterexample is not None
        idx = [v.counterexample[f"d{i}"] for i in range(a.rank)]
        assert (a.offset(idx), b.offset(idx)) == (v.lhs_value, v.rhs_value)
        assert v.lhs_value != v.rhs_value


@given(st.data())
def test_bitcast_map_matches_reference(data: st.DataObject) -> None:
    a = data.draw(tiled_shapes(max_rank=3, max_elements=150, min_tilings=0))
    b = data.draw(tiled_shapes(max_rank=3, max_elements=150, min_tilings=0))
    at_b = {o: idx for idx, o in zip(np.ndindex(*b.dims), b.offsets())}
    expected = {(idx, at_b[o]) for idx, o in zip(np.ndindex(*a.dims), a.offsets()) if o in at_b}
    m = bitcast_map(a, b)
    assert {(d, r) for _rt, d, r in m.relation()} == expected


@given(tiled_shapes(max_rank=3, max_elements=100, min_tilings=0),
       st.data())
def test_physical_mode_of_a_transpose(s: TiledShape, data: st.DataObject) -> None:
    """Output-to-input of a transpose, in physical mode, against the definition."""
    perm = tuple(data.draw(st.permutations(range(s.rank))))
    out_dims = tuple(s.dims[p] for p in perm)
    out_m2m = tuple(data.draw(st.permutations(range(s.rank))))
    out = shape_of(out_dims, out_m2m, data.draw(tilings(s.rank, min_tilings=0)))
    # logical transpose o2i: out index o -> operand index with operand[perm[i]] = o[i]
    inv = [perm.index(j) for j in range(s.rank)]
    o2i = IndexingMap.build([Dim(inv[j]) for j in range(s.rank)],
                            [(0, n - 1) for n in out_dims])
    m = physical_mode_map(o2i, out, s)
    expected = set()
    for o in np.ndindex(*out_dims):
        operand = tuple(o[inv[j]] for j in range(s.rank))
        expected.add((out.physical_index(o), s.physical_index(operand)))
    assert {(d, r) for _rt, d, r in m.relation()} == expected


# -- proofs that fail ----------------------------------------------------------------------------


def test_non_injective_map_gives_a_counterexample() -> None:
    m = parse_map("(d0, d1) -> (d0 * 2 + d1), domain: d0 in [0, 3], d1 in [0, 3]")
    v = map_is_injective(m)
    assert v.holds is False
    x, y = (v.counterexample["d0"], v.counterexample["d1"]), (v.counterexample["d0'"],
                                                              v.counterexample["d1'"])
    assert x != y and m.evaluate(x) == m.evaluate(y) == v.lhs_value == v.rhs_value
    ok = parse_map("(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 3], d1 in [0, 3]")
    assert map_is_injective(ok).holds is True
    out = map_within(ok, 0, 14)
    assert out.holds is False and out.lhs_value == (15,)
    assert map_within(ok, 0, 15).holds is True


def test_layout_equivalence_counterexample() -> None:
    v = layouts_equivalent("f32[3,5]{1,0:T(2,2)}", "f32[3,5]{1,0}")
    assert v.holds is False
    idx = (v.counterexample["d0"], v.counterexample["d1"])
    assert parse_shape("f32[3,5]{1,0:T(2,2)}").offset(idx) == v.lhs_value
    assert parse_shape("f32[3,5]").offset(idx) == v.rhs_value
    # size-1 dimensions make different orders equivalent; so does a tile of 1s
    assert layouts_equivalent("f32[1,7]{0,1}", "f32[1,7]{1,0}").holds is True
    assert layouts_equivalent("f32[4,6]{1,0:T(1,1)}", "f32[4,6]").holds is True
    assert layouts_equivalent("f32[4,6]{1,0:T(*,6)}", "f32[4,6]").holds is True
    assert layouts_equivalent("f32[4,6]", "f32[6,4]").holds is False


def test_element_at_and_bitcast_element_sizes() -> None:
    s = parse_shape("f32[3,5]{1,0:T(2,2)}")
    assert s.element_at(17) == (2, 3)
    assert s.element_at(9) is None  # padding
    assert s.element_at(24) is None and s.element_at(-1) is None
    assert all(s.element_at(o) == idx for idx, o in zip(np.ndindex(3, 5), s.offsets()))
    with pytest.raises(UnsupportedError):
        bitcast_map("bf16[16,256]", "f32[8,256]")


def test_transpose_between_layouts_is_a_physical_noop() -> None:
    src, dst = "f32[10,20]{0,1}", "f32[20,10]{1,0}"
    o2i = parse_map("(d0, d1) -> (d1, d0), domain: d0 in [0, 19], d1 in [0, 9]")
    ident = IndexingMap.identity([20, 10])
    assert physical_mode_map(o2i, dst, src) == ident
    assert smt.equal(physical_bitcast_map(dst, src), ident).holds is True


# -- conformance ---------------------------------------------------------------------------------

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?(\w+)\s*=\s*(\w+\[[^\]]*\]\s*(?:\{[^}]*\})?)\s*(\w+)\(",
                    re.M)


def _case_maps(case: dict[str, Any]) -> list[IndexingMap]:
    exp = case["expected"]
    texts = exp if isinstance(exp, list) else [exp]
    out = []
    for text in texts:
        body = "\n".join(line for line in text.splitlines()
                         if not line.strip().startswith("operand id"))
        out.append(parse_map(body))
    return out


def _shapes(hlo: str) -> dict[str, tuple[TiledShape, str]]:
    return {name: (parse_shape(shape), op) for name, shape, op in _INSTR.findall(hlo)}


def _cases(shared: Any, pred: Any) -> list[dict[str, Any]]:
    cases = json.loads((shared / "conformance" / "xla" / "cases.json").read_text())
    return [c for c in cases if pred(c)]


def test_conformance_physical_layout_cases(shared: Any) -> None:
    """Every `use_physical_layout` case: an elementwise op (identity logical map) between
    operand and output layouts, in XLA's physical mode."""
    cases = _cases(shared, lambda c: (c.get("target") or {}).get("use_physical_layout"))
    assert len(cases) == 6
    for case in cases:
        shapes = _shapes(case["hlo"])
        out, op = shapes[case["target"]["instruction"]]
        operand, _ = shapes["p0"]
        assert op == "exponential"  # elementwise: the logical map is the identity
        ident = IndexingMap.identity(out.dims)
        if case["kind"] == "op_output_to_input":
            got = physical_mode_map(ident, out, operand)
        else:
            got = physical_mode_map(ident, operand, out)
        (want,) = _case_maps(case)
        assert got == want, (case["id"], str(got), str(want))
        assert smt.equal(got, want).holds is True


def test_conformance_bitcast_cases(shared: Any) -> None:
    """Bitcasts between layouts (logical mode): pure layout, checked with Z3."""
    cases = _cases(shared, lambda c: c["id"].startswith("indexing_analysis_test.cc:Bitcast"))
    assert len(cases) == 5
    for case in cases:
        shapes = _shapes(case["hlo"])
        result, op = shapes[case["target"]["instruction"]]
        operand, _ = shapes["p0"]
        assert op == "bitcast"
        if case["kind"] == "op_output_to_input":
            got = bitcast_map(result, operand)
        else:
            got = bitcast_map(operand, result)
        (want,) = _case_maps(case)
        v = smt.equal(got, want)
        assert v.holds is True, (case["id"], str(got), str(want), v.message)


def test_physical_layout_map_matches_xla_functions() -> None:
    to_phys, to_log = physical_layout_map("f32[10,20,30]{1,0,2}")
    assert str(to_phys) == ("(d0, d1, d2) -> (d2, d0, d1), domain: d0 in [0, 9], "
                            "d1 in [0, 19], d2 in [0, 29]")
    assert str(to_log) == ("(d0, d1, d2) -> (d1, d2, d0), domain: d0 in [0, 29], "
                           "d1 in [0, 9], d2 in [0, 19]")
    tiled, _ = physical_layout_map("f32[10,20]{0,1:T(4)}", include_tiling=False)
    assert str(tiled) == "(d0, d1) -> (d1, d0), domain: d0 in [0, 9], d1 in [0, 19]"


# -- the command line ----------------------------------------------------------------------------


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["layout", *argv])
    return code, out.getvalue(), err.getvalue()


def test_cli_text() -> None:
    code, out, err = run_cli("f32[3,5]{1,0:T(2,2)}", "--index", "2,3", "--map", "--check")
    assert code == 0, err
    assert "offset 17" in out
    assert "injective: proved" in out and "offsets in [0, 23]: proved" in out
    assert "(d0, d1) -> (d0 floordiv 2, d1 floordiv 2, d0 mod 2, d1 mod 2)" in out
    assert "\n  2  12 13 16 17 20\n" in out  # the grid's last row
    code, out, _ = run_cli("f32[3,5]{1,0:T(2,2)}", "--compare", "f32[3,5]")
    assert code == 1 and "same offsets as f32[3,5]{1,0}: no" in out
    code, out, _ = run_cli("f32[4,32]", "--bitcast-to", "f32[4,8,4]")
    assert code == 0 and "(d0, d1) -> (d0, d1 floordiv 4, d1 mod 4)" in out


def test_cli_json_contract() -> None:
    # every offset only when asked for (issue 12: a 2048x2048 layout wrote 36.6 MB of JSON)
    code, out, _ = run_cli("f32[4,8]{1,0:T(2,4)(2,1)}", "--json")
    assert code == 0 and "offsets" not in json.loads(out)
    code, out, _ = run_cli("f32[4,8]{1,0:T(2,4)(2,1)}", "--json", "--all-offsets")
    assert code == 0
    doc = json.loads(out)
    assert doc["shape"] == "f32[4,8]{1,0:T(2,4)(2,1)}"
    assert doc["buffer_elements"] == 32
    assert doc["offsets"] == [x for row in FIGURE2 for x in row]
    code, out, _ = run_cli("f32[3,5]{1,0:T(2,2)}", "--json", "--check", "--index", "2,3")
    doc = json.loads(out)
    assert doc["offset"] == 17 and doc["checks"]["injective"]["holds"] is True


def test_real_sizes_need_no_enumeration() -> None:
    code, out, _ = run_cli("f32[8192,8192]{1,0:T(8,128)}", "--check", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["checks"]["injective"]["holds"] is True
    assert doc["checks"]["in_bounds"]["holds"] is True and "offsets" not in doc


@pytest.mark.parametrize("text", ["f32[3,5]{1,0:T(2,2)}", "f32[4,8]{1,0:T(2,4)(2,1)}",
                                  "f32[7,5,3]{0,2,1:T(2,2)}", "bf16[6,10]{1,0:T(4,4)(2,1)}"])
def test_streamed_offsets_are_the_offsets(text: str) -> None:
    s = parse_shape(text)
    assert list(s.iter_offsets()) == s.offsets()
    code, out, _ = run_cli(text, "--json", "--all-offsets")
    assert code == 0 and json.loads(out)["offsets"] == s.offsets()


@pytest.mark.parametrize("argv", [("f32[3,5]{1,2}",), ("f32[3,5]", "--index", "3,0"),
                                  ("f32[3,5]", "--index", "a")])
def test_cli_errors_are_one_line(argv: tuple[str, ...]) -> None:
    code, out, err = run_cli(*argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
