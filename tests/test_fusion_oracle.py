"""Tests of the brute-force dependency oracle (`tests/fusion_oracle.py`).

Three kinds of evidence, none of which uses verifidx's map code:
- hand-written modules for every op kind with hand-computed read sets;
- cross-checks against the oracle's numpy value evaluator, which is structured differently from
  the dependency walk (numpy slicing/padding/einsum instead of per-element index arithmetic):
  data movement on uniquely tagged inputs (each output must read exactly the element it holds),
  and single-element perturbation (with positive inputs, an output changes exactly when it reads
  the perturbed element, for dot/convolution/reduce/reduce-window);
- the JAX corpus and the seed fusions: every computation is evaluated on sampled points (or
  skipped with the `Unsupported` reason), the `.opt` and `.raw` dumps of each program agree on
  the whole output, and perturbing a parameter element never changes an output element that the
  oracle says does not read it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fusion_oracle as fo
import numpy as np
import pytest

from verifidx.hlo import parse_hlo

REPO = Path(__file__).resolve().parents[1]
JAX = REPO / "tests" / "data" / "jax"
SEED_FUSIONS = sorted((REPO / "examples").glob("seed_fusion_*.hlo"))
CORPUS = sorted(JAX.glob("*.hlo")) + SEED_FUSIONS
# the per-op seed documents are swept too (cheap extra coverage)
SWEPT = CORPUS + sorted(set((REPO / "examples").glob("seed_*.hlo")) - set(SEED_FUSIONS))

Index = tuple[int, ...]

# -- helpers -----------------------------------------------------------------------------------

ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
ADD_S32 = ("adds {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
           "  ROOT c = s32[] add(a, b)\n}\n")


def hlo(params: Sequence[str], root: str, extra: str = "", computations: str = "") -> str:
    lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(params)]
    return (f"HloModule m\n{computations}\nENTRY e {{\n" + "\n".join(lines) + "\n" + extra
            + f"  ROOT r = {root}\n}}\n")


def reads_of(text: str, point: Sequence[int], leaf: int = 0,
             values: dict[int, Any] | None = None) -> dict[Any, set[Index]]:
    module = parse_hlo(text)
    return fo.reads(module, module.entry, leaf, tuple(point), values)


def full(got: dict[Any, set[Index]], **want: set[Index]) -> dict[Any, set[Index]]:
    """`want` (keys p0, p1, ...) completed with empty sets for the other keys of `got`."""
    out = {k: set() for k in got}
    for name, s in want.items():
        out[int(name[1:])] = set(s)
    return out


def check(text: str, cases: Sequence[tuple[Sequence[int], dict[str, set[Index]]]],
          leaf: int = 0, values: dict[int, Any] | None = None) -> None:
    for point, want in cases:
        got = reads_of(text, point, leaf, values)
        assert got == full(got, **want), f"point {tuple(point)}: got {got}, want {want}"


# -- data movement -----------------------------------------------------------------------------


def test_transpose() -> None:
    text = hlo(["f32[2,3,4]"], "f32[4,2,3] transpose(p0), dimensions={2,0,1}")
    check(text, [((3, 1, 2), {"p0": {(1, 2, 3)}}), ((0, 0, 0), {"p0": {(0, 0, 0)}}),
                 ((2, 0, 1), {"p0": {(0, 1, 2)}})])


def test_broadcast_reshape_slice_reverse() -> None:
    check(hlo(["f32[3]"], "f32[2,3,4] broadcast(p0), dimensions={1}"),
          [((1, 2, 3), {"p0": {(2,)}})])
    check(hlo(["f32[]"], "f32[2,3] broadcast(p0), dimensions={}"), [((1, 2), {"p0": {()}})])
    check(hlo(["f32[2,6]"], "f32[3,4] reshape(p0)"),
          [((2, 1), {"p0": {(1, 3)}}), ((0, 3), {"p0": {(0, 3)}})])
    check(hlo(["f32[10]"], "f32[3] slice(p0), slice={[1:9:3]}"),
          [((0,), {"p0": {(1,)}}), ((2,), {"p0": {(7,)}})])
    check(hlo(["f32[3,4]"], "f32[3,4] reverse(p0), dimensions={1}"),
          [((0, 0), {"p0": {(0, 3)}}), ((2, 1), {"p0": {(2, 2)}})])


def test_pad_interior_and_negative_edges() -> None:
    # [a b c] -> interior 1: [a _ b _ c] -> low -1 cuts `a`: [_ b _ c] -> high 2: [_ b _ c _ _]
    text = hlo(["f32[3]", "f32[]"], "f32[6] pad(p0, p1), padding=-1_2_1")
    check(text, [((0,), {"p1": {()}}), ((1,), {"p0": {(1,)}}), ((2,), {"p1": {()}}),
                 ((3,), {"p0": {(2,)}}), ((4,), {"p1": {()}}), ((5,), {"p1": {()}})])
    # 2-D: rows low 1 interior 2, columns low -2 high -1
    text = hlo(["f32[2,5]", "f32[]"], "f32[7,2] pad(p0, p1), padding=1_2_2x-2_-1")
    check(text, [((0, 0), {"p1": {()}}), ((1, 0), {"p0": {(0, 2)}}),
                 ((4, 1), {"p0": {(1, 3)}}), ((2, 1), {"p1": {()}}), ((6, 0), {"p1": {()}})])


def test_concatenate() -> None:
    text = hlo(["f32[2,3]", "f32[2,1]", "f32[2,2]"],
               "f32[2,6] concatenate(p0, p1, p2), dimensions={1}")
    check(text, [((1, 3), {"p1": {(1, 0)}}), ((0, 5), {"p2": {(0, 1)}}),
                 ((1, 2), {"p0": {(1, 2)}})])


def test_bitcast_with_non_default_layouts() -> None:
    # operand {0,1}: dimension 0 is minor, so the buffer is p[0,0] p[1,0] p[0,1] p[1,1] ...
    text = hlo(["f32[2,3]{0,1}"], "f32[6]{0} bitcast(p0)")
    check(text, [((1,), {"p0": {(1, 0)}}), ((2,), {"p0": {(0, 1)}}), ((3,), {"p0": {(1, 1)}}),
                 ((5,), {"p0": {(1, 2)}})])
    # a bitcast whose output layout is transposed is a logical transpose
    text = hlo(["f32[4,6]{1,0}"], "f32[6,4]{0,1} bitcast(p0)")
    check(text, [((5, 2), {"p0": {(2, 5)}}), ((1, 3), {"p0": {(3, 1)}})])
    # no layout printed = the default layout: a row-major reshape
    text = hlo(["f32[2,6]"], "f32[3,4] bitcast(p0)")
    check(text, [((2, 1), {"p0": {(1, 3)}})])
    # copy changes the layout only: the same logical element
    text = hlo(["f32[2,3]{1,0}"], "f32[2,3]{0,1} copy(p0)")
    check(text, [((1, 2), {"p0": {(1, 2)}})])


def test_bitcast_convert() -> None:
    check(hlo(["f32[3]"], "s8[3,4] bitcast-convert(p0)"), [((1, 2), {"p0": {(1,)}})])
    check(hlo(["f32[3,2]"], "f64[3] bitcast-convert(p0)"),
          [((1,), {"p0": {(1, 0), (1, 1)}})])
    check(hlo(["f32[3]"], "s32[3] bitcast-convert(p0)"), [((2,), {"p0": {(2,)}})])


def test_iota_and_constant_read_nothing() -> None:
    text = hlo(["f32[2]"], "s32[3,4] iota(), iota_dimension=1")
    check(text, [((2, 3), {})])
    text = hlo(["f32[2]"], "f32[2] constant({1, 2})")
    check(text, [((1,), {})])


# -- elementwise -------------------------------------------------------------------------------


def test_select_reads_predicate_and_both_branches() -> None:
    text = hlo(["pred[3]", "f32[3]", "f32[3]"], "f32[3] select(p0, p1, p2)")
    check(text, [((1,), {"p0": {(1,)}, "p1": {(1,)}, "p2": {(1,)}})])
    text = hlo(["pred[]", "f32[2,2]", "f32[2,2]"], "f32[2,2] select(p0, p1, p2)")
    check(text, [((1, 0), {"p0": {()}, "p1": {(1, 0)}, "p2": {(1, 0)}})])


def test_compare_clamp_and_unary_ops() -> None:
    text = hlo(["f32[3]", "f32[3]"], "pred[3] compare(p0, p1), direction=LT")
    check(text, [((2,), {"p0": {(2,)}, "p1": {(2,)}})])
    text = hlo(["f32[]", "f32[4]", "f32[]"], "f32[4] clamp(p0, p1, p2)")
    check(text, [((3,), {"p0": {()}, "p1": {(3,)}, "p2": {()}})])
    text = hlo(["f32[4]"], "f32[4] exponential(n)", extra="  n = f32[4] negate(p0)\n")
    check(text, [((3,), {"p0": {(3,)}})])
    text = hlo(["f32[4]"], "s32[4] convert(p0)")
    check(text, [((0,), {"p0": {(0,)}})])


# -- reductions, windows, contractions ---------------------------------------------------------


def test_reduce() -> None:
    text = hlo(["f32[3,4]", "f32[]"],
               "f32[3] reduce(p0, p1), dimensions={1}, to_apply=add", computations=ADD)
    check(text, [((1,), {"p0": {(1, k) for k in range(4)}, "p1": {()}})])
    text = hlo(["f32[3,4]", "f32[]"],
               "f32[] reduce(p0, p1), dimensions={0,1}, to_apply=add", computations=ADD)
    check(text, [((), {"p0": set(itertools.product(range(3), range(4))), "p1": {()}})])


def test_variadic_reduce_reads_all_inputs_for_every_output() -> None:
    reducer = ("argmax {\n  a0 = f32[] parameter(0)\n  a1 = s32[] parameter(1)\n"
               "  b0 = f32[] parameter(2)\n  b1 = s32[] parameter(3)\n"
               "  gt = pred[] compare(a0, b0), direction=GT\n"
               "  v = f32[] select(gt, a0, b0)\n  i = s32[] select(gt, a1, b1)\n"
               "  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n")
    text = hlo(["f32[2,3]", "s32[2,3]", "f32[]", "s32[]"],
               "(f32[2], s32[2]) reduce(p0, p1, p2, p3), dimensions={1}, to_apply=argmax",
               computations=reducer)
    row = {(1, k) for k in range(3)}
    for leaf in (0, 1):
        check(text, [((1,), {"p0": row, "p1": row, "p2": {()}, "p3": {()}})], leaf=leaf)


def test_reduce_window_padding_strides_dilations() -> None:
    def rw(window: str, out: int) -> str:
        return hlo(["f32[5]", "f32[]"], f"f32[{out}] reduce-window(p0, p1), window={{{window}}}, "
                   "to_apply=add", computations=ADD)

    # padded [_ 0 1 2 3 4 _], size 3 stride 2
    check(rw("size=3 stride=2 pad=1_1", 3), [((0,), {"p0": {(0,), (1,)}, "p1": {()}}),
                                             ((1,), {"p0": {(1,), (2,), (3,)}, "p1": {()}}),
                                             ((2,), {"p0": {(3,), (4,)}, "p1": {()}})])
    # window dilation 2: taps o and o+2
    check(rw("size=2 rhs_dilate=2", 3), [((2,), {"p0": {(2,), (4,)}, "p1": {()}})])
    # base dilation 2: [0 _ 1 _ 2 _ 3 _ 4], size 2: every window holds one real element
    check(rw("size=2 lhs_dilate=2", 8), [((0,), {"p0": {(0,)}, "p1": {()}}),
                                         ((1,), {"p0": {(1,)}, "p1": {()}}),
                                         ((7,), {"p0": {(4,)}, "p1": {()}})])
    # a window entirely on padding reads only the init value
    check(rw("size=2 pad=3_0", 7), [((0,), {"p1": {()}}), ((2,), {"p0": {(0,)}, "p1": {()}})])
    # 2-D, with the JAX cumsum window
    text = hlo(["f32[2,4]", "f32[]"], "f32[2,4] reduce-window(p0, p1), "
               "window={size=1x4 pad=0_0x3_0}, to_apply=add", computations=ADD)
    check(text, [((1, 2), {"p0": {(1, 0), (1, 1), (1, 2)}, "p1": {()}})])


def test_dot_batch_and_contracting_dims() -> None:
    text = hlo(["f32[2,3,4]", "f32[2,4,5]"], "f32[2,3,5] dot(p0, p1), lhs_batch_dims={0}, "
               "rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}")
    check(text, [((1, 2, 3), {"p0": {(1, 2, k) for k in range(4)},
                              "p1": {(1, k, 3) for k in range(4)}})])
    # contracting dims first, free dims in operand order, two contracting dims
    text = hlo(["f32[3,2,4]", "f32[4,5,3]"], "f32[2,5] dot(p0, p1), "
               "lhs_contracting_dims={0,2}, rhs_contracting_dims={2,0}")
    check(text, [((1, 4), {"p0": {(a, 1, b) for a in range(3) for b in range(4)},
                           "p1": {(b, 4, a) for a in range(3) for b in range(4)}})])
    # outer product: no contracting dims
    text = hlo(["f32[3]", "f32[2]"], "f32[3,2] dot(p0, p1)")
    check(text, [((2, 1), {"p0": {(2,)}, "p1": {(1,)}})])


def conv(lhs: str, rhs: str, out: str, window: str, labels: str, extra: str = "") -> str:
    return hlo([lhs, rhs], f"{out} convolution(p0, p1), window={{{window}}}, "
               f"dim_labels={labels}{extra}")


def test_convolution_stride_and_padding() -> None:
    # 1-D, size 3, stride 2, pad 1_1 on 5 elements: output 3
    text = conv("f32[1,5,1]", "f32[3,1,1]", "f32[1,3,1]", "size=3 stride=2 pad=1_1",
                "b0f_0io->b0f")
    check(text, [((0, 0, 0), {"p0": {(0, 0, 0), (0, 1, 0)}, "p1": {(1, 0, 0), (2, 0, 0)}}),
                 ((0, 1, 0), {"p0": {(0, 1, 0), (0, 2, 0), (0, 3, 0)},
                              "p1": {(0, 0, 0), (1, 0, 0), (2, 0, 0)}}),
                 ((0, 2, 0), {"p0": {(0, 3, 0), (0, 4, 0)}, "p1": {(0, 0, 0), (1, 0, 0)}})])


def test_convolution_jax_stride2_corners() -> None:
    module = parse_hlo((JAX / "conv2d_stride2.opt.hlo").read_text())
    got = fo.reads(module, module.entry, 0, (0, 0, 0, 5))
    assert got[0] == {(0, y, x, c) for y in range(3) for x in range(3) for c in range(4)}
    assert got[1] == {(y, x, c, 5) for y in range(3) for x in range(3) for c in range(4)}
    # the last output row/column: taps 14, 15, 16; 16 is padding
    got = fo.reads(module, module.entry, 0, (0, 7, 7, 0))
    assert got[0] == {(0, y, x, c) for y in (14, 15) for x in (14, 15) for c in range(4)}
    assert got[1] == {(y, x, c, 0) for y in range(2) for x in range(2) for c in range(4)}


def test_convolution_dilations_and_reversal() -> None:
    # lhs dilated to [0 _ 1 _ 2], padded 1_1; window 2 taps 2 apart (rhs dilation); reversed
    text = conv("f32[1,3,1]", "f32[2,1,1]", "f32[1,5,1]",
                "size=2 pad=1_1 lhs_dilate=2 rhs_dilate=2 rhs_reversal=1", "b0f_0io->b0f")
    check(text, [((0, 0, 0), {}), ((0, 2, 0), {}), ((0, 4, 0), {}),
                 ((0, 1, 0), {"p0": {(0, 0, 0), (0, 1, 0)}, "p1": {(1, 0, 0), (0, 0, 0)}}),
                 ((0, 3, 0), {"p0": {(0, 1, 0), (0, 2, 0)}, "p1": {(1, 0, 0), (0, 0, 0)}})])
    # without reversal the pairing flips but the sets (of one output) are the same; use a
    # 3-tap kernel on the edge to see the difference
    text = conv("f32[1,4,1]", "f32[3,1,1]", "f32[1,4,1]", "size=3 pad=1_1 rhs_reversal=1",
                "b0f_0io->b0f")
    check(text, [((0, 0, 0), {"p0": {(0, 0, 0), (0, 1, 0)}, "p1": {(1, 0, 0), (0, 0, 0)}})])
    text = conv("f32[1,4,1]", "f32[3,1,1]", "f32[1,4,1]", "size=3 pad=1_1", "b0f_0io->b0f")
    check(text, [((0, 0, 0), {"p0": {(0, 0, 0), (0, 1, 0)}, "p1": {(1, 0, 0), (2, 0, 0)}})])


def test_convolution_feature_and_batch_groups() -> None:
    # 4 input features in 2 groups of 2; 6 output features, 3 per group
    text = conv("f32[1,4,1]", "f32[2,6,1]", "f32[1,6,1]", "size=1", "bf0_io0->bf0",
                ", feature_group_count=2")
    check(text, [((0, 4, 0), {"p0": {(0, 2, 0), (0, 3, 0)}, "p1": {(0, 4, 0), (1, 4, 0)}}),
                 ((0, 2, 0), {"p0": {(0, 0, 0), (0, 1, 0)}, "p1": {(0, 2, 0), (1, 2, 0)}})])
    # input batch 4 in 2 groups of 2; 4 output features, 2 per group; output batch 2
    text = conv("f32[4,1,1]", "f32[1,4,1]", "f32[2,4,1]", "size=1", "bf0_io0->bf0",
                ", batch_group_count=2")
    check(text, [((1, 3, 0), {"p0": {(3, 0, 0)}, "p1": {(0, 3, 0)}}),
                 ((1, 1, 0), {"p0": {(1, 0, 0)}, "p1": {(0, 1, 0)}}),
                 ((0, 2, 0), {"p0": {(2, 0, 0)}, "p1": {(0, 2, 0)}})])


def test_sort_reads_the_whole_row() -> None:
    cmp = ("cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
           "  d = s32[] parameter(3)\n  ROOT lt = pred[] compare(a, b), direction=LT\n}\n")
    text = hlo(["f32[2,3]", "s32[2,3]"], "(f32[2,3], s32[2,3]) sort(p0, p1), dimensions={1}, "
               "to_apply=cmp", computations=cmp)
    row = {(1, k) for k in range(3)}
    check(text, [((1, 0), {"p0": row, "p1": row})], leaf=1)
    check(text, [((1, 0), {"p0": row})], leaf=0)  # the comparator does not read p1


# -- data dependent ----------------------------------------------------------------------------


def test_gather_embedding_with_clamping() -> None:
    text = hlo(["f32[5,3]", "s32[2]"], "f32[2,3] gather(p0, p1), offset_dims={1}, "
               "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={1,3}")
    values = {1: np.array([4, -2], dtype=np.int32)}
    check(text, [((0, 2), {"p0": {(4, 2)}, "p1": {(0,)}}),
                 ((1, 1), {"p0": {(0, 1)}, "p1": {(1,)}})], values=values)
    # a slice of 2 rows starting at 4 is clamped to start 3
    text = hlo(["f32[5,3]", "s32[1,1]"], "f32[1,2,3] gather(p0, p1), offset_dims={1,2}, "
               "collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={2,3}")
    check(text, [((0, 1, 2), {"p0": {(4, 2)}, "p1": {(0, 0)}}),
                 ((0, 0, 0), {"p0": {(3, 0)}, "p1": {(0, 0)}})],
          values={1: np.array([[4]], dtype=np.int32)})


def test_gather_two_component_index_vector_first() -> None:
    # index_vector_dim=0: indices[k, b] is component k of batch b
    text = hlo(["f32[4,5]", "s32[2,3]"], "f32[3] gather(p0, p1), offset_dims={}, "
               "collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=0, "
               "slice_sizes={1,1}")
    values = {1: np.array([[1, 4, 9], [2, 0, 3]], dtype=np.int32)}
    check(text, [((0,), {"p0": {(2, 1)}, "p1": {(0, 0), (1, 0)}}),
                 ((1,), {"p0": {(0, 4)}, "p1": {(0, 1), (1, 1)}}),
                 ((2,), {"p0": {(3, 4)}, "p1": {(0, 2), (1, 2)}})], values=values)


def test_gather_with_batching_dims() -> None:
    text = hlo(["f32[2,5]", "s32[2,1]"], "f32[2,2] gather(p0, p1), offset_dims={1}, "
               "collapsed_slice_dims={}, start_index_map={1}, index_vector_dim=1, "
               "operand_batching_dims={0}, start_indices_batching_dims={0}, slice_sizes={1,2}")
    values = {1: np.array([[2], [7]], dtype=np.int32)}
    check(text, [((0, 1), {"p0": {(0, 3)}, "p1": {(0, 0)}}),
                 ((1, 0), {"p0": {(1, 3)}, "p1": {(1, 0)}})], values=values)


def test_gather_with_computed_indices() -> None:
    """The index operand's own dependencies are reported: here indices = p1 + p2 (broadcast)."""
    text = hlo(["f32[6,2]", "s32[3]", "s32[]"], "f32[3,2] gather(p0, ix), offset_dims={1}, "
               "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={1,2}",
               extra="  b = s32[3] broadcast(p2), dimensions={}\n  ix = s32[3] add(p1, b)\n")
    values = {1: np.array([0, 1, 2], dtype=np.int32), 2: np.array(3, dtype=np.int32)}
    check(text, [((2, 1), {"p0": {(5, 1)}, "p1": {(2,)}, "p2": {()}}),
                 ((0, 0), {"p0": {(3, 0)}, "p1": {(0,)}, "p2": {()}})], values=values)


def test_dynamic_slice_constant_and_parameter_offsets() -> None:
    text = hlo(["f32[10]"], "f32[4] dynamic-slice(p0, c), dynamic_slice_sizes={4}",
               extra="  c = s32[] constant(8)\n")
    check(text, [((0,), {"p0": {(6,)}}), ((3,), {"p0": {(9,)}})])  # 8 clamped to 6
    text = hlo(["f32[10,3]", "s32[]", "s32[]"],
               "f32[4,2] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={4,2}")
    for start, first in ((7, 6), (-5, 0), (2, 2)):
        values = {1: np.array(start, dtype=np.int32), 2: np.array(1, dtype=np.int32)}
        check(text, [((1, 1), {"p0": {(first + 1, 2)}, "p1": {()}, "p2": {()}})],
              values=values)
    # the start computed in the computation: p1 + 2
    text = hlo(["f32[10]", "s32[]"], "f32[3] dynamic-slice(p0, s), dynamic_slice_sizes={3}",
               extra="  c = s32[] constant(2)\n  s = s32[] add(p1, c)\n")
    check(text, [((0,), {"p0": {(5,)}, "p1": {()}})], values={1: np.array(3, np.int32)})


def test_jax_dynamic_slice_wraps_negative_indices_then_clamps() -> None:
    module = parse_hlo((JAX / "dynamic_slice.opt.hlo").read_text())
    comp = module.computation("fused_computation")
    # param 2 is the row start (14 -> clamped to 12), param 1 the column start (-3 -> 29 -> 24)
    values = {1: np.array(-3, np.int32), 2: np.array(14, np.int32)}
    got = fo.reads(module, comp, 0, (1, 2), values)
    assert got == {0: {(13, 26)}, 1: {()}, 2: {()}}


def test_jax_embedding_take_reads_through_the_mask() -> None:
    module = parse_hlo((JAX / "embedding_take.opt.hlo").read_text())
    idx = np.array([-1, 150, 5, 0, 1, 2, 3, 4, 6, 7, 8, 9], dtype=np.int32)
    for point, row in (((0, 3), 99), ((1, 3), 99), ((2, 0), 5)):
        got = fo.reads(module, module.entry, 0, point, {1: idx})
        # select reads the gathered element and the mask, both of which read idx[i]
        assert got == {0: {(row, point[1])}, 1: {(point[0],)}}


def test_dynamic_update_slice() -> None:
    text = hlo(["f32[6]", "f32[2]", "s32[]"], "f32[6] dynamic-update-slice(p0, p1, p2)")
    values = {2: np.array(5, dtype=np.int32)}  # clamped to 4
    check(text, [((4,), {"p1": {(0,)}, "p2": {()}}), ((5,), {"p1": {(1,)}, "p2": {()}}),
                 ((1,), {"p0": {(1,)}, "p2": {()}})], values=values)


def test_scatter_skips_windows_that_do_not_fit() -> None:
    text = hlo(["s32[5]", "s32[3,1]", "s32[3,2]"], "s32[5] scatter(p0, p1, p2), "
               "update_window_dims={1}, inserted_window_dims={}, "
               "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=adds",
               computations=ADD_S32)
    values = {1: np.array([[1], [3], [4]], dtype=np.int32)}  # the window at 4 does not fit
    every_index = {(0, 0), (1, 0), (2, 0)}
    check(text, [((0,), {"p0": {(0,)}, "p1": every_index}),
                 ((2,), {"p0": {(2,)}, "p1": every_index, "p2": {(0, 1)}}),
                 ((3,), {"p0": {(3,)}, "p1": every_index, "p2": {(1, 0)}}),
                 ((4,), {"p0": {(4,)}, "p1": every_index, "p2": {(1, 1)}})], values=values)


def test_scatter_two_updates_on_one_element() -> None:
    text = hlo(["s32[4,2]", "s32[3]", "s32[3,2]"], "s32[4,2] scatter(p0, p1, p2), "
               "update_window_dims={1}, inserted_window_dims={0}, "
               "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=adds",
               computations=ADD_S32)
    values = {1: np.array([2, 0, 2], dtype=np.int32)}
    every_index = {(0,), (1,), (2,)}
    check(text, [((2, 1), {"p0": {(2, 1)}, "p1": every_index, "p2": {(0, 1), (2, 1)}}),
                 ((3, 0), {"p0": {(3, 0)}, "p1": every_index})], values=values)


# -- structure: fusions, calls, tuples ---------------------------------------------------------


NESTED = """HloModule nested

inner {
  a = f32[3,2] parameter(0)
  ROOT t = f32[2,3] transpose(a), dimensions={1,0}
}

mid {
  x = f32[3,2] parameter(0)
  y = f32[3] parameter(1)
  f = f32[2,3] fusion(x), kind=kLoop, calls=inner
  b = f32[2,3] broadcast(y), dimensions={1}
  s = f32[2,3] add(f, b)
  ROOT out = (f32[2,3], f32[3]) tuple(s, y)
}

ENTRY e {
  tp = (f32[3,2], f32[3]) parameter(0)
  z = f32[4] parameter(1)
  g0 = f32[3,2] get-tuple-element(tp), index=0
  g1 = f32[3] get-tuple-element(tp), index=1
  c = (f32[2,3], f32[3]) call(g0, g1), to_apply=mid
  first = f32[2,3] get-tuple-element(c), index=0
  second = f32[3] get-tuple-element(c), index=1
  ROOT r = ((f32[2,3], f32[3]), f32[4]) tuple(c, z)
}
"""


def test_nested_fusion_call_tuple_and_tuple_parameters() -> None:
    module = parse_hlo(NESTED)
    # tuple parameter 0 is keyed by (0, leaf); output leaves: (c.0, c.1, z)
    got = fo.reads(module, "e", 0, (1, 2))
    assert got == {(0, 0): {(2, 1)}, (0, 1): {(2,)}, 1: set()}
    assert fo.reads(module, "e", 1, (0,)) == {(0, 0): set(), (0, 1): {(0,)}, 1: set()}
    assert fo.reads(module, "e", 2, (3,)) == {(0, 0): set(), (0, 1): set(), 1: {(3,)}}
    # the callee on its own: array parameters keyed by number
    assert fo.reads(module, "mid", 0, (0, 1)) == {0: {(1, 0)}, 1: {(1,)}}
    assert fo.reads(module, "inner", 0, (1, 2)) == {0: {(2, 1)}}


def test_unsupported_ops_raise_with_a_reason() -> None:
    cases = {
        "custom-call": hlo(["f32[3]"], 'f32[3] custom-call(p0), custom_call_target="foo"'),
        "while": hlo(["s32[]"], "s32[] while(p0), condition=cond, body=body",
                     computations="cond {\n  a = s32[] parameter(0)\n  c = s32[] constant(3)\n"
                     "  ROOT lt = pred[] compare(a, c), direction=LT\n}\n"
                     "body {\n  a = s32[] parameter(0)\n  c = s32[] constant(1)\n"
                     "  ROOT n = s32[] add(a, c)\n}\n"),
        "conditional": hlo(["pred[]", "f32[]"], "f32[] conditional(p0, p1, p1), "
                           "true_computation=id, false_computation=id",
                           computations="id {\n  ROOT a = f32[] parameter(0)\n}\n"),
    }
    for op, text in cases.items():
        module = parse_hlo(text)
        point = tuple(0 for _ in module.entry.root.shape.dims)
        with pytest.raises(fo.Unsupported, match=op):
            fo.reads(module, module.entry, 0, point)


def test_points_outside_the_output_are_rejected() -> None:
    module = parse_hlo(hlo(["f32[3]"], "f32[3] negate(p0)"))
    with pytest.raises(IndexError):
        fo.reads(module, module.entry, 0, (3,))
    with pytest.raises(IndexError):
        fo.reads(module, module.entry, 1, (0,))


def test_sample_points() -> None:
    pts = fo.sample_points((1000, 1000), 20, 0)
    assert len(pts) == 20 == len(set(pts))
    assert set(itertools.product((0, 999), (0, 999))) <= set(pts)
    assert all(0 <= a < 1000 and 0 <= b < 1000 for a, b in pts)
    assert pts == fo.sample_points((1000, 1000), 20, 0)
    assert fo.sample_points((2, 3), 100, 0) == [(i, j) for i in range(2) for j in range(3)]
    assert fo.sample_points((), 5, 0) == [()]
    assert fo.sample_points((4, 0), 5, 0) == []
    assert len(fo.sample_points((5,) * 8, 10, 1)) == 10  # fewer than the 256 corners


def test_default_values_are_deterministic_and_typed() -> None:
    module = parse_hlo(hlo(["f32[3]", "s32[4]", "pred[2]", "u8[2]"], "f32[3] negate(p0)"))
    a, b = fo.default_values(module.entry), fo.default_values(module.entry)
    for k in a:
        assert np.array_equal(a[k], b[k])
    assert a[1].dtype == np.int32 and a[1].min() >= -3 and a[1].max() <= 24
    assert a[2].dtype == np.bool_ and a[3].min() >= 0


def test_whole_small_fusion_sweep_reads_every_row() -> None:
    # Speed belongs in benchmarks/, not in a timed unit test that fails on a loaded machine.
    module = parse_hlo((REPO / "examples" / "seed_fusion_softmax.hlo").read_text())
    comp = module.computation("softmax")
    got = fo.all_reads(module, comp, 0, points=fo.sample_points(comp.root.shape, 4096, 0))
    assert len(got) == 4096
    # softmax over the last axis: every element reads its whole row
    for (a, b, _c), r in got.items():
        assert r[0] == {(a, b, k) for k in range(125)}


def test_oracle_is_independent_of_the_map_code() -> None:
    """The oracle imports only the HLO data model. (`import verifidx` itself loads the map code,
    so the check is on what the oracle's source refers to, not on `sys.modules`.)"""
    source = Path(fo.__file__).read_text()
    imports = [line.strip() for line in source.splitlines()
               if line.startswith(("import ", "from ")) and "verifidx" in line]
    assert imports == ["from verifidx.hlo import HloComputation, HloInstruction, HloModule, Shape"]
    code = source.split('"""', 2)[2]  # after the module docstring
    for name in ("indexing", "computation_maps", "runtime", "IndexingMap", "output_to_input"):
        assert name not in code, name


# -- cross-checks against the value evaluator --------------------------------------------------


TAGGED = [
    # (params, root, extra, index values)
    (["s32[2,3,4]"], "s32[4,3,2] transpose(p0), dimensions={2,1,0}", "", {}),
    (["s32[3,4]{0,1}"], "s32[2,6]{1,0} bitcast(p0)", "", {}),
    (["s32[2,3,4]{1,2,0}"], "s32[4,6]{0,1} bitcast(p0)", "", {}),
    (["s32[3,4]", "s32[]"], "s32[6,6] pad(p0, p1), padding=-1_2_1x1_-1_1", "", {}),
    (["s32[3,2]", "s32[3,1]"], "s32[3,3] concatenate(p0, p1), dimensions={1}", "", {}),
    (["s32[3,4]"], "s32[2,4] reverse(s), dimensions={0,1}",
     "  s = s32[2,4] slice(p0), slice={[0:3:2], [0:4:1]}\n", {}),
    (["s32[6]"], "s32[2,3,2] broadcast(q), dimensions={0,1}",
     "  q = s32[2,3] reshape(p0)\n", {}),
    (["s32[5,4]", "s32[3,2]"], ("s32[3,2,3] gather(p0, p1), offset_dims={1,2}, "
     "collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=1, slice_sizes={2,3}"),
     "", {1: np.array([[0, 4], [2, -1], [1, 1]], dtype=np.int32)}),
    (["s32[3,4,5]", "s32[3,2]"], ("s32[3,2] gather(p0, p1), offset_dims={1}, "
     "collapsed_slice_dims={2}, start_index_map={2}, index_vector_dim=1, "
     "operand_batching_dims={0}, start_indices_batching_dims={0}, slice_sizes={1,2,1}"),
     "", {1: np.array([[4, 0], [1, 0], [9, 0]], dtype=np.int32)}),
    (["s32[6,5]", "s32[]", "s32[]"], ("s32[2,3] dynamic-slice(p0, p1, p2), "
     "dynamic_slice_sizes={2,3}"), "", {1: np.array(5, np.int32), 2: np.array(-1, np.int32)}),
    (["s32[4,5]", "s32[2,2]", "s32[]", "s32[]"], "s32[4,5] dynamic-update-slice(p0, p1, p2, p3)",
     "", {2: np.array(1, np.int32), 3: np.array(9, np.int32)}),
]


@pytest.mark.parametrize("case", range(len(TAGGED)))
def test_data_movement_matches_tagged_evaluation(case: int) -> None:
    """Each data operand holds unique tags; an output element must read exactly the element
    whose tag it holds (plus the index operands, which are not data)."""
    params, root, extra, index_values = TAGGED[case]
    module = parse_hlo(hlo(params, root, extra))
    comp = module.entry
    values: dict[int, Any] = dict(index_values)
    owner: dict[int, tuple[int, Index]] = {}
    base = 1000
    for p in comp.parameters:
        n = int(p.parameter_number)
        if n in values:
            continue
        arr = np.arange(base, base + int(np.prod(p.shape.dims, dtype=np.int64)),
                        dtype=np.int32).reshape(p.shape.dims)
        for idx in np.ndindex(*p.shape.dims):
            owner[int(arr[idx])] = (n, tuple(int(i) for i in idx))
        values[n] = arr
        base += arr.size + 1000
    out = fo.evaluate(module, comp, values)
    oracle = fo.Oracle(module, comp, values)
    for d in np.ndindex(*comp.root.shape.dims):
        d = tuple(int(i) for i in d)
        got = oracle.reads(0, d)
        n, idx = owner[int(out[d])]
        data = {k: v for k, v in got.items() if k not in index_values}
        assert data == {k: ({idx} if k == n else set()) for k in data}, (d, got)


def perturbation_reads(module: Any, comp: Any, values: dict[int, Any]
                       ) -> dict[tuple[int, Index], set[Index]]:
    """(parameter, element) -> output points whose value changes when the element grows by 1."""
    base = fo.evaluate(module, comp, values)
    out: dict[tuple[int, Index], set[Index]] = {}
    for p in comp.parameters:
        n = int(p.parameter_number)
        for x in np.ndindex(*p.shape.dims):
            changed = dict(values)
            arr = np.array(values[n], copy=True)
            arr[x] += 1
            changed[n] = arr
            diff = np.argwhere(fo.evaluate(module, comp, changed) != base)
            out[(n, tuple(int(i) for i in x))] = {tuple(int(i) for i in d) for d in diff}
    return out


LINEAR = [
    conv("s32[1,5,2]", "s32[3,2,2]", "s32[1,3,2]", "size=3 stride=2 pad=1_1", "b0f_0io->b0f"),
    conv("s32[1,3,1]", "s32[2,1,1]", "s32[1,5,1]",
         "size=2 pad=1_1 lhs_dilate=2 rhs_dilate=2 rhs_reversal=1", "b0f_0io->b0f"),
    conv("s32[1,4,3,2]", "s32[2,2,2,3]", "s32[1,4,2,3]",
         "size=2x2 pad=0_1x-1_1 rhs_reversal=0x1", "b01f_01io->b01f"),
    conv("s32[2,4,3]", "s32[3,2,2]", "s32[2,2,3]", "size=3 pad=1_1", "bf0_0io->bf0",
         ", feature_group_count=2"),
    conv("s32[4,2,3]", "s32[2,4,3]", "s32[2,1,4]", "size=2", "b0f_0oi->b0f",
         ", batch_group_count=2"),
    conv("s32[3,1,2]", "s32[2,2,3]", "s32[1,2,2]", "size=2 stride=2 lhs_dilate=3 pad=0_2",
         "f0b_o0i->0bf"),
    hlo(["s32[2,3,4]", "s32[2,4,3]"], "s32[2,3,3] dot(p0, p1), lhs_batch_dims={0}, "
        "rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
    hlo(["s32[3,4]", "s32[]"], "s32[4] reduce(p0, p1), dimensions={0}, to_apply=adds",
        computations=ADD_S32),
    hlo(["s32[5,4]", "s32[]"], "s32[3,3] reduce-window(p0, p1), window={size=3x2 stride=2x2 "
        "pad=1_1x1_1 lhs_dilate=1x2 rhs_dilate=1x2}, to_apply=adds", computations=ADD_S32),
]


@pytest.mark.parametrize("case", range(len(LINEAR)))
def test_contractions_match_perturbation(case: int) -> None:
    """With positive inputs, an output of a sum of products changes exactly when it reads the
    perturbed element: the oracle's reads must be exactly the perturbation's."""
    module = parse_hlo(LINEAR[case])
    comp = module.entry
    rng = np.random.default_rng(case)
    values = {int(p.parameter_number): rng.integers(1, 4, size=p.shape.dims).astype(np.int32)
              for p in comp.parameters}
    moved = perturbation_reads(module, comp, values)
    oracle = fo.Oracle(module, comp, values)
    for d in np.ndindex(*comp.root.shape.dims):
        d = tuple(int(i) for i in d)
        got = oracle.reads(0, d)
        want = {int(p.parameter_number): set() for p in comp.parameters}
        for (n, x), outs in moved.items():
            if d in outs:
                want[n].add(x)
        assert got == want, (d, got, want)


# -- the corpus --------------------------------------------------------------------------------

SAMPLES_PER_LEAF = 16
_SUMMARY: dict[tuple[str, str], str] = {}


def corpus_computations() -> list[tuple[str, str]]:
    out = []
    for path in SWEPT:
        module = parse_hlo(path.read_text())
        out.extend((path.name, name) for name in module.computations)
    return out


_MODULES: dict[str, Any] = {}


def module_of(file: str) -> Any:
    if file not in _MODULES:
        path = JAX / file if (JAX / file).exists() else REPO / "examples" / file
        _MODULES[file] = parse_hlo(path.read_text())
    return _MODULES[file]


def sweep(file: str, name: str) -> str:
    module = module_of(file)
    comp = module.computation(name)
    try:
        oracle = fo.Oracle(module, comp)
        count = 0
        for leaf, shape in enumerate(comp.root.shape.leaves()):
            for point in fo.sample_points(shape, SAMPLES_PER_LEAF, 0):
                got = oracle.reads(leaf, point)
                for p in comp.parameters:
                    for k, s in enumerate(p.shape.leaves()):
                        key = (p.parameter_number, k) if p.shape.is_tuple else p.parameter_number
                        assert all(len(x) == s.rank and all(0 <= a < n for a, n in zip(x, s.dims))
                                   for x in got[key]), (point, key)
                count += 1
        return f"{count} points"
    except fo.Unsupported as e:
        return f"skipped: {e}"


def test_corpus_is_not_empty() -> None:
    assert len(CORPUS) >= 30
    manifest = json.loads((JAX / "MANIFEST.json").read_text())
    assert {f["file"] for f in manifest["files"]} <= {p.name for p in CORPUS}


@pytest.mark.parametrize(("file", "name"), corpus_computations())
def test_corpus_computation(file: str, name: str) -> None:
    result = _SUMMARY[(file, name)] = sweep(file, name)
    if result.startswith("skipped"):
        pytest.skip(result)


def test_corpus_summary(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(f, n, _SUMMARY.get((f, n)) or sweep(f, n)) for f, n in corpus_computations()]
    width = max(len(f) for f, _n, _r in rows)
    wname = max(len(n) for _f, n, _r in rows)
    lines = [f"{'file':<{width}}  {'computation':<{wname}}  result"]
    lines += [f"{f:<{width}}  {n:<{wname}}  {r}" for f, n, r in rows]
    evaluated = sum(not r.startswith("skipped") for _f, _n, r in rows)
    lines.append(f"{evaluated} of {len(rows)} computations evaluated, "
                 f"{len(rows) - evaluated} skipped")
    # the report is captured: pytest -rP (or -s) shows it, -q stays quiet
    print("\n" + "\n".join(lines))
    assert evaluated > 0


PROGRAMS = sorted(p.name.removesuffix(".opt.hlo") for p in JAX.glob("*.opt.hlo"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_optimized_and_raw_dumps_read_the_same_elements(program: str) -> None:
    """XLA's optimizations (fusion, bitcasts, the two-level reduce-window scan, ...) preserve the
    function, so the entry computations of `.opt` and `.raw` read the same elements everywhere."""
    opt, raw = module_of(f"{program}.opt.hlo"), module_of(f"{program}.raw.hlo")
    values = fo.default_values(opt.entry)
    a = fo.all_reads(opt, opt.entry, 0, values=values)
    b = fo.all_reads(raw, raw.entry, 0, values=values)
    assert a.keys() == b.keys()
    bad = [p for p in a if a[p] != b[p]]
    assert not bad, (bad[:3], a[bad[0]], b[bad[0]])


@pytest.mark.parametrize("file", [p.name for p in CORPUS
                                  if "tensor_plus_transpose" not in p.name])
def test_corpus_perturbation_never_escapes_the_reads(file: str) -> None:
    """Growing one parameter element by 1 may change only output elements that read it.

    (One-sided: max, compare and select can hide a real read. The 1000x1000 seed fusion is left
    out for time.)"""
    module = module_of(file)
    for comp in module.computations.values():
        if comp.root.shape.is_tuple:
            continue
        values = fo.default_values(comp)
        base = fo.evaluate(module, comp, values)
        oracle = fo.Oracle(module, comp, values)
        for p in comp.parameters:
            n = int(p.parameter_number)
            for x in fo.sample_points(p.shape, 4, 1):
                changed = dict(values)
                arr = np.array(values[n], copy=True)
                arr[x] = ~arr[x] if arr.dtype == np.bool_ else arr[x] + 1
                changed[n] = arr
                after = fo.evaluate(module, comp, changed)
                moved = np.argwhere(~((after == base) | (np.isnan(after) & np.isnan(base))))
                for d in moved[:64]:
                    d = tuple(int(i) for i in d)
                    assert x in oracle.reads(0, d)[n], (comp.name, n, x, d)
