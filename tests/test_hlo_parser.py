"""Tests of the HLO text parser: shapes, layouts, attributes, module structure, errors."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from conftest import shared_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifidx.core.errors import ParseError
from verifidx.hlo import (
    ELEMENT_TYPE_BITS,
    UNBOUNDED,
    WILDCARD_TILE_DIM,
    ConvolutionDimLabels,
    DotDimensionNumbers,
    HloInstruction,
    HloModule,
    IotaReplicaGroups,
    Layout,
    PadDim,
    Shape,
    SliceDim,
    WindowDim,
    parse_hlo,
    parse_shape,
)
from verifidx.hlo.shape import size_error

DATA = Path(__file__).resolve().parent / "data" / "hlo"


def _shared_dir() -> Path | None:
    return shared_dir()  # tests/data: the conformance vectors travel with the tests


def entry(body: str) -> str:
    """Wrap instruction lines in a module with one ENTRY computation."""
    return "HloModule m\nENTRY e {\n" + body + "\n}\n"


def root_of(body: str, allow_unknown_opcodes: bool = False) -> HloInstruction:
    return parse_hlo(entry(body), allow_unknown_opcodes=allow_unknown_opcodes).entry.root


def parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_hlo(text)
    return caught.value


# ----- shapes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("f32[10,20]", "f32[10,20]"),
        ("f32[10, 20]", "f32[10,20]"),
        ("f32[]", "f32[]"),
        ("pred[3]", "pred[3]"),
        ("bf16[2,3]{0,1}", "bf16[2,3]{0,1}"),
        ("f32[3, 6] {0, 1}", "f32[3,6]{0,1}"),
        ("(f32[10], s32[])", "(f32[10], s32[])"),
        ("()", "()"),
        ("((f32[1], ()), (u8[2]{0}, (pred[])))", "((f32[1], ()), (u8[2]{0}, (pred[])))"),
        ("f32[<=16,?]", "f32[<=16,?]"),
        ("f32[<=16,?]{1,0}", "f32[<=16,?]{1,0}"),
        ("f32[8,128]{1,0:T(8,128)(2,1)}", "f32[8,128]{1,0:T(8,128)(2,1)}"),
        ("f32[8,128]{1,0:T(8,128)S(1)}", "f32[8,128]{1,0:T(8,128)S(1)}"),
        ("s4[64]{0:T(1024)(128)(8,1)E(4)}", "s4[64]{0:T(1024)(128)(8,1)E(4)}"),
        ("f32[2,3]{1,0:T(2,*)}", "f32[2,3]{1,0:T(2,*)}"),
        ("f32[]{:T(256)}", "f32[]{:T(256)}"),
        ("f32[4,4]{1,0:D(D,C)}", "f32[4,4]{1,0:D(D,C)}"),
        ("token[]", "token[]"),
        ("opaque[]", "opaque[]"),
        ("f8e4m3fn[16]", "f8e4m3fn[16]"),
        ("c128[2] /* complex */", "c128[2]"),
    ],
)
def test_shape_round_trip(text: str, printed: str) -> None:
    shape = parse_shape(text)
    assert str(shape) == printed
    assert parse_shape(printed) == shape


def test_shape_fields() -> None:
    shape = parse_shape("f32[<=16,?,4]{2,1,0:T(8,*)(2,1)E(16)S(3)}")
    assert shape.element_type == "f32"
    assert shape.dims == (16, UNBOUNDED, 4)
    assert shape.dynamic == (True, True, False)
    assert shape.is_dynamic and shape.rank == 3 and not shape.is_tuple
    layout = shape.layout
    assert layout is not None
    assert layout.minor_to_major == (2, 1, 0)
    assert layout.tiles == ((8, WILDCARD_TILE_DIM), (2, 1))
    assert layout.element_size_in_bits == 16
    assert layout.memory_space == 3
    assert layout.text == "{2,1,0:T(8,*)(2,1)E(16)S(3)}"

    nested = parse_shape("((f32[1], s8[]), ())")
    assert nested.is_tuple and nested.element_type == "tuple" and nested.dims == ()
    assert [str(leaf) for leaf in nested.leaves()] == ["f32[1]", "s8[]"]
    assert nested.tuple_shapes[1] == Shape.tuple_of()


def test_layout_text_is_not_compared() -> None:
    assert parse_shape("f32[2,3]{1, 0}") == parse_shape("f32[2,3]{1,0}")
    assert parse_shape("f32[2,3]{1,0}") != parse_shape("f32[2,3]{0,1}")
    assert parse_shape("f32[2,3]{1,0}").without_layout() == parse_shape("f32[2,3]")


@pytest.mark.parametrize("element_type", sorted(ELEMENT_TYPE_BITS))
def test_every_element_type(element_type: str) -> None:
    shape = parse_shape(f"{element_type}[2]")
    assert shape.element_type == element_type
    assert shape.element_bits == ELEMENT_TYPE_BITS[element_type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f32[10", "expected ']' after dimensions"),
        ("f32[10 20]", "expected ']' after dimensions"),
        ("f33[10]", "unknown element type 'f33'"),
        ("f32", "expected '[' after element type 'f32'"),
        ("f32[-1]", "expected dimension size, got negative -1"),
        ("f32[2,3]{1,1}", "layout {1,1} is not a permutation of the 2 dimensions"),
        ("f32[2,3]{0}", "is not a permutation"),
        ("f32[2]{0:T(8}", "expected ',' or ')' in tile"),
        ("f32[2]{0:Q}", "expected '(' after layout item 'Q'"),
        ("f32[2]{0:E(4)E(8)}", "duplicate layout item 'E'"),
        ("f32[2]{0:x(1)}", "expected layout item"),
        ("(f32[2] s32[])", "expected ',' or ')' in tuple shape"),
        ("f32[2] junk", "unexpected text after shape"),
        ("", "expected shape"),
    ],
)
def test_shape_errors(text: str, message: str) -> None:
    with pytest.raises(
        ParseError,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("[", r"\[")
        .replace("{", r"\{"),
    ):
        parse_shape(text)


def test_deeply_nested_tuple_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="nested deeper"):
        parse_shape("(" * 200 + "f32[]" + ")" * 200)


@st.composite
def shapes(draw: st.DrawFn, depth: int = 0) -> Shape:
    if depth < 3 and draw(st.booleans()):
        return Shape.tuple_of(*draw(st.lists(shapes(depth + 1), max_size=3)))
    element_type = draw(st.sampled_from(sorted(ELEMENT_TYPE_BITS)))
    rank = draw(st.integers(0, 4))
    dims = draw(st.lists(st.integers(0, 1 << 40), min_size=rank, max_size=rank))
    if size_error(tuple(dims)) is not None:  # XLA's shapes have fewer than 2^63 elements
        dims = [d % (1 << 15) for d in dims]
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    dims = [
        UNBOUNDED if flag and draw(st.booleans()) else d
        for d, flag in zip(dims, dynamic, strict=True)
    ]
    layout = None
    if draw(st.booleans()):
        tiles = draw(
            st.lists(st.lists(st.integers(-1, 512), max_size=3).map(tuple), max_size=3).map(tuple)
        )
        layout = Layout(
            minor_to_major=tuple(draw(st.permutations(range(rank)))),
            tiles=tiles,
            element_size_in_bits=draw(st.none() | st.integers(0, 64)),
            memory_space=draw(st.none() | st.integers(0, 8)),
        )
    return Shape(element_type, tuple(dims), tuple(dynamic), layout)


@given(shapes())
@settings(max_examples=150, deadline=None)
def test_printed_shapes_parse_back(shape: Shape) -> None:
    assert parse_shape(str(shape)) == shape


# ----- module and computation structure ----------------------------------------------------


def test_module_header_attributes_are_kept_raw() -> None:
    module = parse_hlo(
        "HloModule jit_f, is_scheduled=true, "
        "entry_computation_layout={(f32[8]{0}, s32[])->f32[8]{0}}, replica_count=4, "
        'frontend_attributes={a="x, y"}, future_attribute=[1,2]<=[2]\n'
        "ENTRY e {\n  ROOT p = f32[8] parameter(0)\n}\n"
    )
    assert module.name == "jit_f"
    assert module.attributes == {
        "is_scheduled": "true",
        "entry_computation_layout": "{(f32[8]{0}, s32[])->f32[8]{0}}",
        "replica_count": "4",
        "frontend_attributes": '{a="x, y"}',
        "future_attribute": "[1,2]<=[2]",
    }


def test_module_without_header_and_without_entry_uses_last_computation() -> None:
    module = parse_hlo(
        "first {\n  ROOT a = f32[] parameter(0)\n}\nsecond {\n  ROOT b = f32[] parameter(0)\n}"
    )
    assert module.name == ""
    assert list(module.computations) == ["first", "second"]
    assert module.entry.name == "second"
    assert not module.entry.is_entry


def test_entry_computation_is_found_wherever_it_is() -> None:
    module = parse_hlo(
        "HloModule m\nENTRY main {\n  ROOT a = f32[] parameter(0)\n}\n"
        "helper {\n  ROOT b = f32[] parameter(0)\n}"
    )
    assert module.entry.name == "main" and module.entry.is_entry
    assert module.computation("%helper").name == "helper"
    with pytest.raises(KeyError):
        module.computation("missing")


def test_signature_form_and_percent_names() -> None:
    module = parse_hlo(
        "HloModule m\n"
        "%add (x: f32[], y: (f32[], s32[2]{0})) -> f32[] {\n"
        "  %x = f32[] parameter(0)\n"
        "  %y = (f32[], s32[2]{0}) parameter(1)\n"
        "  %y0 = f32[] get-tuple-element((f32[], s32[2]{0}) %y), index=0\n"
        "  ROOT %sum = f32[] add(f32[] %x, f32[] %y0)\n"
        "}\n"
        'ENTRY %main.1 (p: f32[]) -> (f32[], f32[]) , execution_thread="main" {\n'
        "  %p = f32[] parameter(0)\n"
        "  %t = (f32[], f32[]) tuple(%p, f32[] %p)\n"
        "}\n"
    )
    add = module.computation("add")
    assert [name for name, _ in add.signature] == ["x", "y"]
    assert str(add.signature[1][1]) == "(f32[], s32[2]{0})"
    assert str(add.result_shape) == "f32[]"
    assert add.root.name == "sum" and add.root.operands == ("x", "y0")
    assert add.instruction("%y0").tuple_index == 0
    main = module.entry
    assert main.name == "main.1"
    assert main.attributes == {"execution_thread": '"main"'}
    assert main.root.name == "t" and main.root.is_root


def test_root_defaults_to_last_instruction() -> None:
    computation = parse_hlo(entry("a = f32[] parameter(0)\nb = f32[] negate(a)")).entry
    assert computation.root.name == "b"
    assert computation.root.is_root
    assert not computation.instruction("a").is_root
    assert [i.name for i in computation] == ["a", "b"] and len(computation) == 2
    assert "a" in computation and "%b" in computation and "c" not in computation


def test_root_marker_anywhere() -> None:
    computation = parse_hlo(entry("ROOT a = f32[] parameter(0)\nb = f32[] negate(a)")).entry
    assert computation.root.name == "a"


def test_instruction_named_root() -> None:
    computation = parse_hlo(entry("ROOT = f32[] parameter(0)")).entry
    assert computation.root.name == "ROOT"


def test_parameters_sorted_by_number() -> None:
    computation = parse_hlo(
        entry("b = f32[] parameter(2)\nc = s32[] parameter(0)\na = f32[] parameter(1)")
    ).entry
    assert [p.name for p in computation.parameters] == ["c", "a", "b"]
    assert [p.parameter_number for p in computation.parameters] == [0, 1, 2]


def test_operands_with_and_without_shapes_and_comments() -> None:
    root = root_of(
        "p0 = f32[10] parameter(0)\n"
        "p1 = f32[10]{0} parameter(1)\n"
        "/* block comment */ t = (f32[10], f32[10]) tuple(p0, /*index=1*/p1) // trailing\n"
        "ROOT add = f32[10] add(f32[10] %p0, f32[10]{0} %p1)"
    )
    assert root.operands == ("p0", "p1")
    assert root.opcode == "add"
    assert str(root.shape) == "f32[10]"


def test_line_breaks_inside_instructions() -> None:
    root = root_of(
        "p0 = f32[2, 5, 7] parameter(0)\n"
        "p1 = f32[2, 11, 7] parameter(1)\n"
        "ROOT concat = f32[2, 16, 7]\n"
        "  concatenate(\n"
        "    f32[2, 5, 7] p0,\n"
        "    f32[2, 11, 7] p1),\n"
        "  dimensions={1}"
    )
    assert root.operands == ("p0", "p1") and root.dimensions == (1,)
    assert root.line == 5 and root.column == 1


def test_windows_line_endings() -> None:
    module = parse_hlo(
        "HloModule m\r\nENTRY e {\r\n  a = f32[] parameter(0)\r\n"
        "  ROOT b = f32[] negate(a) // done\r\n}\r\n"
    )
    assert module.entry.root.operands == ("a",)
    assert module.entry.root.line == 4


def test_unknown_opcodes_are_kept() -> None:
    """Only when asked: by default a word that is no opcode is an error (issue 38, item 7)."""
    root = root_of("p = f32[4] parameter(0)\nROOT x = f32[4] my-new-op(p), flavour=spicy",
                   allow_unknown_opcodes=True)
    assert root.opcode == "my-new-op"
    assert root.attributes == {"flavour": "spicy"}


# ----- attributes ----------------------------------------------------------------------------


def test_dimension_lists_and_integers() -> None:
    root = root_of(
        "p0 = f32[20] parameter(0)\nROOT bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}"
    )
    assert root.dimensions == (1,)
    assert root_of("ROOT iota = s32[5,7] iota(), iota_dimension=1").iota_dimension == 1
    assert (
        root_of("p = f32[2] parameter(0)\nROOT b = f32[2] broadcast(p), dimensions={}").dimensions
        == ()
    )


def test_slice_attribute() -> None:
    root = root_of(
        "p0 = f32[10, 20, 50] parameter(0)\n"
        "ROOT slice = f32[5, 3, 25] slice(f32[10, 20, 50] p0),\n"
        "    slice={[5:10:1], [3:20:7], [0:50]}"
    )
    assert root.slice_dims == (SliceDim(5, 10, 1), SliceDim(3, 20, 7), SliceDim(0, 50, 1))
    assert root.raw_attributes["slice"] == "{[5:10:1], [3:20:7], [0:50]}"


def test_padding_attribute() -> None:
    root = root_of(
        "p0 = f32[4, 4] parameter(0)\np1 = f32[] parameter(1)\n"
        "ROOT pad = f32[12, 16] pad(p0, p1), padding=1_4_1x4_8_0"
    )
    assert root.padding == (PadDim(1, 4, 1), PadDim(4, 8, 0))
    negative = root_of(
        "p0 = f32[7] parameter(0)\np1 = f32[] parameter(1)\n"
        "ROOT pad = f32[5] pad(p0, p1), padding=-3_-5_1"
    )
    assert negative.padding == (PadDim(-3, -5, 1),)
    no_interior = root_of(
        "p0 = f32[2,8] parameter(0)\np1 = f32[] parameter(1)\n"
        "ROOT pad = f32[10,8] pad(p0, p1), padding=1_7x0_0"
    )
    assert no_interior.padding == (PadDim(1, 7, 0), PadDim(0, 0, 0))


def test_window_attribute() -> None:
    root = root_of(
        "p = f32[8,8] parameter(0)\nc = f32[] constant(0)\n"
        "ROOT rw = f32[4,8] reduce-window(p, c), "
        "window={size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=1x0},"
        " to_apply=e"
    )
    assert root.window == (
        WindowDim(
            size=3, stride=2, pad_low=0, pad_high=1, lhs_dilation=1, rhs_dilation=2, reversal=True
        ),
        WindowDim(
            size=3, stride=1, pad_low=1, pad_high=1, lhs_dilation=2, rhs_dilation=1, reversal=False
        ),
    )
    assert root.called_computations == ("e",)
    assert root_of("p = f32[] parameter(0)\nROOT w = f32[] foo(p), window={}",
                   allow_unknown_opcodes=True).window == ()


def test_convolution_attributes() -> None:
    root = root_of(
        "p0 = f32[1,12,10,24] parameter(0)\np1 = f32[4,3,5,48] parameter(1)\n"
        "ROOT conv = f32[1,10,6,48] convolution(p0, p1),\n"
        "  window={size=3x5 pad=0_0x0_0}, dim_labels=b01f_i01o->b01f, feature_group_count=6"
    )
    labels = root.dim_labels
    assert labels == ConvolutionDimLabels(
        "b01f_i01o->b01f", 0, 3, (1, 2), 0, 3, (1, 2), 0, 3, (1, 2)
    )
    assert str(labels) == "b01f_i01o->b01f"
    assert root.feature_group_count == 6 and root.batch_group_count == 1
    permuted = root_of(
        "p0 = f64[1,1,16,16,2,2] parameter(0)\np1 = f64[1,1,3,3,1,1] parameter(1)\n"
        "ROOT conv = f64[1,1,14,14,2,2] convolution(p0, p1),\n"
        "  window={size=3x3x1x1}, dim_labels=bf0123_oi0123->fb1032"
    )
    assert permuted.dim_labels is not None
    assert permuted.dim_labels.kernel_output_feature == 0
    assert permuted.dim_labels.kernel_input_feature == 1
    assert permuted.dim_labels.output_batch == 1 and permuted.dim_labels.output_feature == 0
    assert permuted.dim_labels.output_spatial == (3, 2, 5, 4)


def test_dot_dimension_numbers() -> None:
    root = root_of(
        "p0 = f32[4, 38, 17, 11, 18, 10] parameter(0)\n"
        "p1 = f32[17, 10, 16, 18, 22, 38] parameter(1)\n"
        "ROOT dot = f32[10, 38, 4, 11, 16, 22] dot(p0, p1),\n"
        "  lhs_batch_dims={5,1}, rhs_batch_dims={1,5},\n"
        "  lhs_contracting_dims={4,2}, rhs_contracting_dims={3,0}"
    )
    assert root.dot_dimension_numbers == DotDimensionNumbers((5, 1), (1, 5), (4, 2), (3, 0))
    outer = root_of("a = f32[2] parameter(0)\nROOT d = f32[2,2] dot(a, a)")
    assert outer.dot_dimension_numbers == DotDimensionNumbers()


def test_gather_and_scatter_dimension_numbers() -> None:
    gather = root_of(
        "operand = f32[33,76,70] parameter(0)\nindices = s32[1806,2] parameter(1)\n"
        "ROOT r = f32[1806,7,8,4] gather(operand, indices), offset_dims={1,2,3},\n"
        "  collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1,\n"
        "  slice_sizes={7,8,4}, operand_batching_dims={}, start_indices_batching_dims={},\n"
        "  indices_are_sorted=true"
    )
    numbers = gather.gather_dimension_numbers
    assert numbers.offset_dims == (1, 2, 3)
    assert numbers.collapsed_slice_dims == ()
    assert numbers.start_index_map == (0, 1)
    assert numbers.index_vector_dim == 1
    assert gather.slice_sizes == (7, 8, 4)
    assert gather.attributes["indices_are_sorted"] is True
    scatter = root_of(
        "t = f32[100,64] parameter(0)\ni = s32[10,2] parameter(1)\nu = f32[10,64] parameter(2)\n"
        "ROOT s = f32[100,64] scatter(t, i, u), update_window_dims={1},"
        " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
        " input_batching_dims={}, scatter_indices_batching_dims={}, unique_indices=false"
    )
    numbers_s = scatter.scatter_dimension_numbers
    assert numbers_s.update_window_dims == (1,)
    assert numbers_s.inserted_window_dims == (0,)
    assert numbers_s.scatter_dims_to_operand_dims == (0,)
    assert numbers_s.index_vector_dim == 1
    assert scatter.attributes["unique_indices"] is False


def test_dynamic_slice_sizes() -> None:
    root = root_of(
        "%src = s32[2,2,258] parameter(0)\n%of1 = s32[] parameter(1)\n"
        "%of2 = s32[] parameter(2)\n%of3 = s32[] parameter(3)\n"
        "ROOT %ds = s32[1,2,32] dynamic-slice(s32[2,2,258] %src,\n"
        "  s32[] %of1, s32[] %of2, s32[] %of3),\n  dynamic_slice_sizes={1, 2, 32}"
    )
    assert root.dynamic_slice_sizes == (1, 2, 32)
    assert root.operands == ("src", "of1", "of2", "of3")


def test_collective_attributes() -> None:
    root = root_of(
        "p0 = f32[128, 128] parameter(0)\n"
        "ROOT ag = f32[128, 256] all-gather(p0), channel_id=7, "
        "replica_groups={{0,1}, {2,3}}, dimensions={1}, use_global_device_ids=true"
    )
    assert root.replica_groups == ((0, 1), (2, 3))
    assert root.attributes["channel_id"] == 7
    assert root.attributes["use_global_device_ids"] is True
    assert root.dimensions == (1,)
    iota = root_of(
        "p = f32[4] parameter(0)\nROOT a = f32[8] all-gather(p), "
        "replica_groups=[2,2]<=[4], all_gather_dimension=0"
    )
    assert iota.attributes["replica_groups"] == IotaReplicaGroups((2, 2), (4,), (0,))
    assert iota.replica_groups == ((0, 1), (2, 3))
    assert iota.attributes["all_gather_dimension"] == 0
    transposed = IotaReplicaGroups((2, 2), (2, 2), (1, 0))
    assert transposed.groups() == ((0, 2), (1, 3))
    assert str(transposed) == "[2,2]<=[2,2]T(1,0)"
    assert str(iota.attributes["replica_groups"]) == "[2,2]<=[4]"
    empty = root_of("p = f32[4] parameter(0)\nROOT a = f32[4] all-reduce(p), replica_groups={}")
    assert empty.replica_groups == ()
    permute = root_of(
        "p = f32[4] parameter(0)\n"
        "ROOT c = f32[4] collective-permute(p), source_target_pairs={{0,1},{1,0}}"
    )
    assert permute.attributes["source_target_pairs"] == ((0, 1), (1, 0))


def test_reduce_precision_compare_and_flags() -> None:
    root = root_of(
        "p = f32[4] parameter(0)\n"
        "ROOT r = f32[4] reduce-precision(p), exponent_bits=5, mantissa_bits=10"
    )
    assert root.attributes["exponent_bits"] == 5 and root.attributes["mantissa_bits"] == 10
    compare = root_of(
        "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
        "ROOT c = pred[] compare(a, b), direction=GE, type=TOTALORDER"
    )
    assert compare.comparison_direction == "GE"
    assert compare.attributes["type"] == "TOTALORDER"
    scan = root_of(
        "p = f32[4] parameter(0)\nROOT s = f32[4] cumsum(p), dimensions={0}, is_reverse=true",
        allow_unknown_opcodes=True)
    assert scan.attributes["is_reverse"] is True


def test_fusion_and_called_computations() -> None:
    module = parse_hlo(
        "HloModule m\n"
        "f {\n  p0 = f32[100] parameter(0)\n  ROOT e = f32[100] exponential(p0)\n}\n"
        "g {\n  p0 = f32[100] parameter(0)\n  ROOT n = f32[100] negate(p0)\n}\n"
        "ENTRY e {\n"
        "  p0 = f32[100] parameter(0)\n"
        "  a = f32[100] fusion(p0), kind=kLoop, calls=f\n"
        '  b = f32[100] custom-call(a), custom_call_target="my\\"target", calls={%f, %g},'
        " called_computations={g}\n"
        "  ROOT fusion = f32[100] fusion(b), kind=kInput, calls=%g\n"
        "}"
    )
    computation = module.entry
    fusion = computation.instruction("a")
    assert fusion.fusion_kind == "kLoop"
    assert fusion.attributes["calls"] == "f"
    assert fusion.called_computations == ("f",)
    custom = computation.instruction("b")
    assert custom.custom_call_target == 'my"target'
    assert custom.attributes["calls"] == ("f", "g")
    assert custom.called_computations == ("f", "g", "g")
    assert computation.root.called_computations == ("g",)


def test_while_and_conditional() -> None:
    module = parse_hlo((DATA / "gpu_while_loop.hlo").read_text(), "gpu_while_loop.hlo")
    loop = module.entry.instruction("while")
    assert loop.attributes["condition"] == "cond" and loop.attributes["body"] == "body"
    assert loop.called_computations == ("cond", "body")
    assert loop.raw_attributes["backend_config"] == '{"known_trip_count":{"n":"10"}}'
    cond = parse_hlo(
        "HloModule m\nt {\n  ROOT x = f32[] parameter(0)\n}\n"
        "f {\n  ROOT y = f32[] parameter(0)\n}\n"
        "ENTRY e {\n  p = pred[] parameter(0)\n  v = f32[] parameter(1)\n"
        "  ROOT c = f32[] conditional(p, v, v), true_computation=t, false_computation=f\n}"
    ).entry.root
    assert cond.called_computations == ("t", "f")


def test_unknown_attributes_are_kept_raw() -> None:
    root = root_of(
        "p = f32[2] parameter(0)\n"
        'ROOT r = f32[2] custom-call(p), custom_call_target="x",\n'
        '  backend_config={"a": {"b": [1, 2, {"c": "}{,"}]}, "d": "q"},\n'
        '  metadata={op_name="jit(f)/dot_general[dimension_numbers=(([1], [0]), ([], []))]"'
        ' source_file="/tmp/x.py" source_line=3},\n'
        '  frontend_attributes={_xla_compute_type="host"},\n'
        '  sharding={devices=[2,1]0,1}, origin={{"jit(f)"}},\n'
        "  statistics={visualizing_index=1,stat-index-1=0.5},\n"
        "  output_to_operand_aliasing={{}: (0, {})}, control-predecessors={%p}"
    )
    attrs = root.attributes
    assert attrs["backend_config"] == '{"a": {"b": [1, 2, {"c": "}{,"}]}, "d": "q"}'
    assert root.raw_attributes["metadata"].startswith('{op_name="jit(f)/dot_general[')
    assert attrs["sharding"] == "{devices=[2,1]0,1}"
    assert attrs["origin"] == '{{"jit(f)"}}'
    assert attrs["statistics"] == "{visualizing_index=1,stat-index-1=0.5}"
    assert attrs["output_to_operand_aliasing"] == "{{}: (0, {})}"
    assert attrs["control-predecessors"] == "{%p}"
    assert list(attrs) == list(root.raw_attributes)


# ----- constants -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "payload", "value"),
    [
        ("f32[]", "0", 0.0),
        ("s32[]", "0", 0),
        ("s64[]", "-42", -42),
        ("f32[]", "-inf", -math.inf),
        ("f32[]", "inf", math.inf),
        ("f32[]", "1.5e-3", 1.5e-3),
        ("bf16[]", "-2.5", -2.5),
        ("pred[]", "true", True),
        ("pred[]", "false", False),
        ("s32[3]", "{1, 2, 3}", None),
        ("s32[2,2]", "{ {1,2}, {3,4} }", None),
        ("c64[]", "(1, 2)", None),
    ],
)
def test_constants(shape: str, payload: str, value: object) -> None:
    root = root_of(f"ROOT c = {shape} constant({payload})")
    assert root.opcode == "constant"
    assert root.literal == payload
    assert root.literal_value == value
    assert type(root.literal_value) is type(value)
    assert root.operands == ()


def test_nan_constant() -> None:
    root = root_of("ROOT c = f32[] constant(-nan(0x7fffff))")
    assert isinstance(root.literal_value, float) and math.isnan(root.literal_value)


# ----- seed document snippets (indexing_analysis.en.txt), wrapped in a computation ----------

MAX_COMPUTATION = (
    "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n"
)

SEED_SNIPPETS = {
    "broadcast": "p0 = f32[20] parameter(0)\nbc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}",
    "elementwise": "  p0 = f32[10, 20] parameter(0)\n  p1 = f32[10, 20] parameter(1)\n"
    "  add = f32[10, 20] add(p0, p1)",
    "dynamic_update_slice": "src = s32[20,30] parameter(0)\nupd = s32[5,10] parameter(1)\n"
    "of1 = s32[] parameter(2)\nof2 = s32[] parameter(3)\n"
    "dus = s32[20,30] dynamic-update-slice(\n    s32[20,30] src, s32[5,10] upd, s32[] of1,"
    " s32[] of2)",
    "gather": "operand = f32[33,76,70] parameter(0)\nindices = s32[1806,2] parameter(1)\n"
    "gather = f32[1806,7,8,4] gather(operand, indices),\n  offset_dims={1,2,3},\n"
    "  collapsed_slice_dims={},\n  start_index_map={0,1},\n  index_vector_dim=1,\n"
    "  slice_sizes={7,8,4}",
    "transpose": "p0 = f32[3, 12288, 6, 128] parameter(0)\n"
    "transpose = f32[3, 6, 128, 12288] transpose(p0), dimensions={0, 2, 3, 1}",
    "reverse": "p0 = f32[1, 17, 9, 9] parameter(0)\n"
    "reverse = f32[1, 17, 9, 9] reverse(p0), dimensions={1, 2}",
    "reduce": "p0 = f32[256,10] parameter(0)\np0_init = f32[] constant(-inf)\n"
    "p1 = s32[256,10] parameter(1)\np1_init = s32[] constant(0)\n"
    "reduce = (f32[10], s32[10]) reduce(p0, p1, p0_init, p1_init),\n"
    "  dimensions={0}, to_apply=max",
    "slice": "p0 = f32[10, 20, 50] parameter(0)\nslice = f32[5, 3, 25] slice(f32[10, 20, 50] p0),"
    "\n  slice={[5:10:1], [3:20:7], [0:50:2]}",
    "collapse": "p0 = f32[4,8] parameter(0)\nreshape = f32[32] reshape(p0)",
    "expand": "p0 = f32[32] parameter(0)\nreshape = f32[4, 8] reshape(p0)",
    "generic_reshape": "p0 = f32[4, 8, 12] parameter(0)\nreshape = f32[32, 3, 4] reshape(p0)",
    "concatenate": "p0 = f32[2, 5, 7] parameter(0)\np1 = f32[2, 11, 7] parameter(1)\n"
    "p2 = f32[2, 17, 7] parameter(2)\nROOT concat = f32[2, 33, 7] concatenate(f32[2, 5, 7] p0,"
    " f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}",
    "dot": "p0 = f32[4, 128, 256] parameter(0)\np1 = f32[4, 256, 64] parameter(1)\n"
    "dot = f32[4, 128, 64] dot(p0, p1),\n  lhs_batch_dims={0}, rhs_batch_dims={0},\n"
    "  lhs_contracting_dims={2}, rhs_contracting_dims={1}",
    "pad": "p0 = f32[4, 4] parameter(0)\np1 = f32[] parameter(1)\n"
    "pad = f32[12, 16] pad(p0, p1), padding=1_4_1x4_8_0",
    "reduce_window": "c_inf = f32[] constant(-inf)\np0 = f32[1024, 514] parameter(0)\n"
    "reduce-window = f32[1024, 3] reduce-window(p0, c_inf),\n"
    "  window={size=1x512 pad=0_0x0_0}, to_apply=max",
    "chained_reshapes": "p0 = f32[10, 10, 10] parameter(0)\nreshape1 = f32[50, 20] reshape(p0)\n"
    "reshape2 = f32[10, 10, 10] reshape(reshape1)",
}


@pytest.mark.parametrize("name", sorted(SEED_SNIPPETS))
def test_seed_document_snippets(name: str) -> None:
    module = parse_hlo(MAX_COMPUTATION + "ENTRY e {\n" + SEED_SNIPPETS[name] + "\n}")
    root = module.entry.root
    assert root.is_root
    assert all(op in module.entry for op in root.operands)


def test_seed_fusion_bodies() -> None:
    module = parse_hlo(
        "f {\n"
        "  p0 = f32[20, 10, 50] parameter(0)\n"
        "  lhs_transpose_1 = f32[10, 20, 50] transpose(p0), dimensions={1, 0, 2}\n"
        "  lhs_e = f32[10, 20, 50] exponential(lhs_transpose_1)\n"
        "  lhs_transpose_2 = f32[10, 50, 20] transpose(lhs_e), dimensions={0, 2, 1}\n"
        "  rhs_transpose_1 = f32[50, 10, 20] transpose(p0), dimensions={2, 1, 0}\n"
        "  rhs_log = f32[50, 10, 20] exponential(rhs_transpose_1)\n"
        "  rhs_transpose_2 = f32[10, 50, 20] transpose(rhs_log), dimensions={1, 0, 2}\n"
        "  ROOT add = f32[10, 50, 20] add(lhs_transpose_2, rhs_transpose_2)\n"
        "}"
    )
    assert module.entry.name == "f"
    assert module.entry.root.operands == ("lhs_transpose_2", "rhs_transpose_2")
    assert module.entry.instruction("rhs_transpose_1").dimensions == (2, 1, 0)


def test_seed_dynamic_slice_without_shape_is_rejected() -> None:
    # The seed document drops the result shape of its dynamic-slice example.
    text = (
        "ENTRY e {\nsrc = s32[2,2,258] parameter(0)\nof1 = s32[] parameter(1)\n"
        "ds = dynamic-slice(s32[2,2,258] src, s32[] of1), dynamic_slice_sizes={1, 2, 32}\n}"
    )
    error = parse_error(text)
    assert error.message == "expected shape"
    assert (error.line, error.column) == (4, 6)


# ----- sample dumps ------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(DATA.glob("*.hlo")), ids=lambda p: p.name)
def test_sample_files_parse(path: Path) -> None:
    module = parse_hlo(path.read_text(), str(path))
    assert module.source == str(path)
    for computation in module.computations.values():
        assert computation.root.is_root
        names: set[str] = set()
        for instruction in computation:
            assert set(instruction.operands) <= names
            names.add(instruction.name)
            for called in instruction.called_computations:
                assert called in module.computations


def test_jax_cpu_dump() -> None:
    module = parse_hlo((DATA / "jax_cpu_reduce.hlo").read_text())
    assert module.name == "jit__lambda_"
    assert module.attributes["is_scheduled"] == "true"
    assert list(module.computations) == ["region_0.4", "fused_computation", "main.10"]
    main = module.entry
    assert main.name == "main.10"
    assert [p.name for p in main.parameters] == ["Arg_0.1", "Arg_1.2"]
    fusion = main.root
    assert fusion.opcode == "fusion" and fusion.fusion_kind == "kInput"
    assert fusion.called_computations == ("fused_computation",)
    assert fusion.operands == ("Arg_1.2", "Arg_0.1")
    assert fusion.raw_attributes["backend_config"] == '{"outer_dimension_partitions":["2"]}'
    body = module.computation("fused_computation")
    assert body.root.name == "reduce.0" and body.root.dimensions == (1,)
    assert body.root.called_computations == ("region_0.4",)
    assert body.instruction("constant.1").literal_value == 0.0
    assert str(body.signature[0][1]) == "f32[8,128]"
    assert "metadata" in body.instruction("exponential.0").attributes


def test_gpu_while_dump_tuples() -> None:
    module = parse_hlo((DATA / "gpu_while_loop.hlo").read_text())
    main = module.entry
    assert str(main.root.shape) == "(f32[1024]{0}, s32[])"
    assert main.root.operands == ("result", "count")
    assert main.instruction("result").tuple_index == 1
    body = module.computation("body")
    assert str(body.instruction("loop_state").shape) == "(s32[], f32[1024]{0})"
    assert body.root.shape.tuple_shapes[1].layout == Layout((0,))
    assert module.attributes["frontend_attributes"] == '{fingerprint_before_lhs="3b2d1c"}'


def test_collectives_dump() -> None:
    module = parse_hlo((DATA / "collectives.hlo").read_text())
    main = module.entry
    assert main.instruction("all-gather").replica_groups == ((0, 1, 2, 3),)
    assert main.instruction("reduce-scatter").replica_groups == ((0, 2), (1, 3))
    assert main.instruction("custom-call").custom_call_target == "SPMDShardToFullShape"
    assert main.root.called_computations == ("on_true", "on_false")
    assert module.computation("on_true").root.opcode == "parameter"


def test_layouts_and_dynamic_dump() -> None:
    module = parse_hlo((DATA / "layouts_and_dynamic.hlo").read_text())
    main = module.entry
    p2 = main.instruction("p2").shape
    assert p2.layout is not None and p2.layout.tiles == ((1024,), (128,), (8, 1))
    assert p2.layout.element_size_in_bits == 4
    assert main.instruction("p1").shape.dims == (16, UNBOUNDED)
    assert main.instruction("table").literal == "{ { 1, 2, 3 }, { 4, 5, 6 } }"
    assert main.instruction("scale").literal_value == 1.5e-3
    pad = module.computation("fused_pad").root
    assert pad.padding == (PadDim(4, 4, 0), PadDim(1, 1, 0))
    assert pad.shape.layout is not None and pad.shape.layout.memory_space == 1


def test_conv_gather_scatter_dump() -> None:
    main = parse_hlo((DATA / "conv_gather_scatter.hlo").read_text()).entry
    conv = main.instruction("conv")
    assert conv.window is not None and [w.stride for w in conv.window] == [2, 2]
    assert conv.dim_labels is not None and conv.dim_labels.kernel_spatial == (0, 1)
    assert main.instruction("grad").called_computations == ("ge_f32", "add_f32")
    assert main.instruction("scattered").scatter_dimension_numbers.update_window_dims == (1,)


def test_stack_frame_sections() -> None:
    module = parse_hlo((DATA / "stack_frames.hlo").read_text())
    assert list(module.sections) == ["FileNames", "FunctionNames", "FileLocations", "StackFrames"]
    assert module.sections["FunctionNames"].splitlines() == ['1 "f"', '2 "<module>"']
    assert module.entry.root.opcode == "sine"


# ----- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        (entry("a = f32[] parameter(0)\nb = f32[] add(a, c)"), "undefined operand 'c'", 4, 18),
        (entry("b = f32[] negate(a)\na = f32[] parameter(0)"), "undefined operand 'a'", 3, 18),
        (
            entry("a = f32[] parameter(0)\na = f32[] negate(a)"),
            "duplicate instruction name 'a' in computation 'e' (first defined on line 3)",
            4,
            1,
        ),
        (
            entry("ROOT a = f32[] parameter(0)\nROOT b = f32[] negate(a)"),
            "computation 'e' has more than one ROOT",
            4,
            1,
        ),
        (
            entry("a = f32[] parameter(0)\nb = f32[] parameter(0)"),
            "duplicate parameter number 0 in computation 'e'",
            4,
            1,
        ),
        (
            entry("a = f32[] parameter(1)"),
            "parameter numbers of computation 'e' must be 0..0, but 0 is missing",
            2,
            1,
        ),
        (
            entry("a = f32[2] parameter(0)\nb = f32[3] negate(f32[3] a)"),
            "operand 'a' is declared as f32[3] but defined as f32[2]",
            4,
            19,
        ),
        (entry("a f32[] parameter(0)"), "expected '=' after instruction name 'a'", 3, 3),
        (entry("a = f32[] parameter"), "expected '(' after opcode 'parameter'", 4, 1),
        (entry("a = f32[] parameter(x)"), "expected parameter number", 3, 21),
        (entry("a = f32[] = parameter(0)"), "expected opcode of instruction 'a'", 3, 11),
        (
            entry("a = f32[] parameter(0)\nb = f32[] negate(a b)"),
            "expected ',' or ')' in operand list",
            4,
            20,
        ),
        (
            entry("a = f32[] parameter(0), sharding"),
            "expected '=' after attribute name 'sharding'",
            4,
            1,
        ),
        (entry("a = f32[] parameter(0), x=1, x=2"), "duplicate attribute 'x'", 3, 30),
        (entry("a = f32[] parameter(0), x=,"), "expected a value for attribute 'x'", 3, 27),
        (
            "ENTRY e {\na = f32[] parameter(0), x={1, 2",
            "expected '}' to close '{' from line 2, column 27",
            2,
            32,
        ),
        (entry("a = f32[] parameter(0), x={1, 2)}"), "expected '}' to close '{', got ')'", 3, 32),
        (entry('a = f32[] parameter(0), x="abc'), "unterminated string", 3, 27),
        (entry("a = f32[] parameter(0) /* open"), "unterminated comment", 3, 24),
        (entry("ROOT c = f32[] constant()"), "expected a literal in constant(...)", 3, 25),
        (
            entry("p = f32[4] parameter(0)\nr = f32[2] slice(p), slice={[0:2}"),
            "expected ']' to close '[', got '}'",
            4,
            33,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[2] slice(p), slice={[0:2:1:3]}"),
            "expected ']' after slice dimension",
            4,
            35,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[2] slice(p), slice={[0:2:1] [2:4]}"),
            "expected ',' or '}' in slice",
            4,
            37,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] pad(p, p), padding=1x2"),
            "expected '_' between low and high padding",
            4,
            32,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] pad(p, p), padding=1_2_3z"),
            "unexpected text in the value of attribute 'padding'",
            4,
            36,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), window={size=3x3 stride=1}"),
            "window field 'stride' has 1 dimensions, size has 2",
            4,
            28,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), window={size=3 pad=1_1_1}"),
            "window padding has no interior part",
            4,
            35,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), window={stride=3}"),
            "window needs size=...",
            4,
            28,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), window={sizes=3}"),
            "expected window field",
            4,
            28,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), dim_labels=b01f_01io"),
            "expected dim labels like b01f_01io->b01f",
            4,
            31,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), dim_labels=b02f_01io->b01f"),
            "spatial dimensions of input dim labels must be 0..n-1",
            4,
            31,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), dim_labels=bb01_01io->b01f"),
            "input dim labels need exactly one each of 'bf'",
            4,
            31,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), dim_labels=b01f_0io->b01f"),
            "differ in spatial rank",
            4,
            31,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), replica_groups=[2,2]<=[5]"),
            "iota replica groups: sizes of the two sides differ",
            4,
            35,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), replica_groups=[4]<=[4]"),
            "iota replica groups need [number of groups, group size]",
            4,
            35,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), replica_groups=[2,2]<=[2,2]T(0,0)"),
            "iota transpose must be a permutation",
            4,
            35,
        ),
        (entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), index=one"), "expected integer", 4, 26),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), is_stable=yes"),
            "expected 'true' or 'false'",
            4,
            30,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), dimensions={0,}"),
            "expected integer",
            4,
            34,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), to_apply=missing"),
            "undefined computation 'missing'",
            4,
            29,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), branch_computations={a b}"),
            "expected ',' or '}' in list of computations",
            4,
            43,
        ),
        (
            entry("p = f32[4] parameter(0)\nr = f32[4] foo(p), custom_call_target=x"),
            "expected a quoted string",
            4,
            39,
        ),
        ("HloModule m\nENTRY e {\n}", "computation 'e' has no instructions", 3, 1),
        (
            "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n",
            "expected '}' at the end of computation 'e'",
            4,
            1,
        ),
        ("HloModule m\n", "expected a computation", 2, 1),
        ("HloModule\n", "expected module name after 'HloModule'", 2, 1),
        (
            "HloModule m\nENTRY e\n  a = f32[] parameter(0)\n}",
            "expected '{' to start the body of computation 'e'",
            3,
            3,
        ),
        (
            "HloModule m\nc {\n ROOT a = f32[] parameter(0)\n}\n"
            "c {\n ROOT b = f32[] parameter(0)\n}",
            "duplicate computation name 'c'",
            5,
            1,
        ),
        (
            "ENTRY a {\n ROOT a = f32[] parameter(0)\n}\n"
            "ENTRY b {\n ROOT b = f32[] parameter(0)\n}",
            "more than one ENTRY computation ('a' and 'b')",
            4,
            1,
        ),
        (
            "%c (p f32[]) -> f32[] {\n ROOT p = f32[] parameter(0)\n}",
            "expected ':' after parameter name 'p'",
            1,
            7,
        ),
        (
            "%c (p: f32[]) f32[] {\n ROOT p = f32[] parameter(0)\n}",
            "expected '->' after computation parameters",
            1,
            15,
        ),
    ],
)
def test_errors(text: str, message: str, line: int, column: int) -> None:
    error = parse_error(text)
    assert message in error.message
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"<string>:{line}:{column}: ")


def test_error_names_the_source() -> None:
    with pytest.raises(ParseError) as caught:
        parse_hlo("HloModule m\nENTRY e {\n  a = f32[10 parameter(0)\n}", "bad.hlo")
    error = caught.value
    assert error.source == "bad.hlo"
    assert error.message == "expected ']' after dimensions"
    assert str(error) == "bad.hlo:3:14: expected ']' after dimensions"


# ----- conformance corpus ---------------------------------------------------------------


def _conformance_modules() -> list[tuple[str, str]]:
    shared = _shared_dir()
    if shared is None:
        return []
    modules: list[tuple[str, str]] = []
    for name in ("cases.json", "cases_head.json", "cases_mlir_era.json"):
        for case in json.loads((shared / "conformance" / "xla" / name).read_text()):
            if case.get("hlo"):
                modules.append((f"{name}:{case['id']}", case["hlo"]))
    return modules


def test_conformance_hlo_parses(capsys: pytest.CaptureFixture[str]) -> None:
    modules = _conformance_modules()
    assert modules, "tests/data/conformance/xla holds no HLO modules"
    parsed: list[HloModule] = [parse_hlo(text, case_id) for case_id, text in modules]
    # the report is captured: pytest -rP (or -s) shows it, -q stays quiet
    print(
        f"\nparsed {len(parsed)} HLO modules from the XLA conformance corpus "
        f"({len(set(text for _, text in modules))} distinct)"
    )
    assert all(module.entry.root.is_root for module in parsed)


# ----- robustness: mutated input raises ParseError or parses -----------------------------

SEED_TEXTS = [
    (DATA / "jax_cpu_reduce.hlo").read_text(),
    (DATA / "gpu_while_loop.hlo").read_text(),
    (DATA / "collectives.hlo").read_text(),
    (DATA / "layouts_and_dynamic.hlo").read_text(),
    (DATA / "conv_gather_scatter.hlo").read_text(),
    (DATA / "stack_frames.hlo").read_text(),
    entry(SEED_SNIPPETS["gather"]),
    MAX_COMPUTATION + "ENTRY e {\n" + SEED_SNIPPETS["reduce_window"] + "\n}",
]
SPECIAL = [
    *"{}[]()<>=,:;%\"'/*_x-?.0123456789 \n",
    "ROOT",
    "ENTRY",
    "HloModule",
    "f32",
    "T(",
    "/*",
    "*/",
    "//",
    "->",
    "<=",
    "{{",
    "}}",
]


def _must_parse_or_fail_cleanly(text: str) -> None:
    try:
        parse_hlo(text)
    except ParseError as error:
        assert error.line >= 1 and error.column >= 1
        assert error.message


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEED_TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "duplicate"]))
        piece = draw(st.sampled_from(SPECIAL) | st.text(max_size=3))
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        elif kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "replace":
            text = text[:at] + piece + text[at + 1 :]
        elif kind == "truncate":
            text = text[:at]
        else:
            end = min(len(text), at + draw(st.integers(1, 40)))
            text = text[:end] + text[at:end] + text[end:]
    return text


@given(mutated())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_hlo_raises_only_parse_errors(text: str) -> None:
    _must_parse_or_fail_cleanly(text)


@given(st.lists(st.sampled_from([*SPECIAL, "a", "p0", "add", "s32[]"]), max_size=40).map("".join))
@settings(max_examples=300, deadline=None)
def test_random_token_soup_raises_only_parse_errors(text: str) -> None:
    _must_parse_or_fail_cleanly(text)
    _must_parse_or_fail_cleanly(entry(text))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\0",
        "HloModule",
        "ENTRY",
        "ENTRY e {",
        "e { ROOT",
        "{" * 5000,
        "(" * 5000,
        "ENTRY e { a = " + "(" * 5000,
        entry("a = f32[] constant(" + "{" * 5000 + ")"),
        entry("a = f32[] parameter(0), x=" + "[" * 5000),
        "HloModule m\nENTRY e { a = f32[] parameter(0) }\nFileNames\n1",
        "HloModule m\nENTRY e { a = f32[] parameter(0) }\nStackFrames {",
        "\ufeffHloModule m",
        "HloModule m\nENTRY e { a = f32[٣] parameter(0) }",
    ],
)
def test_pathological_inputs(text: str) -> None:
    _must_parse_or_fail_cleanly(text)


def test_a_module_pickles_and_copies_as_it_was_read() -> None:
    # the data model is compiled (mypyc): its frozen classes pickle through their constructors,
    # a moved copy (`at`) changes the place alone, and what analyses keep (`memo`) is no part
    # of a module's value
    import pickle

    text = ("HloModule m\n\nENTRY e {\n  p = s32[] parameter(0)\n  c = s32[] constant(3)\n"
            "  ROOT r = s32[] add(p, c), metadata={op_name=\"x\"}\n}\n")
    module = parse_hlo(text)
    module.memo["noted"] = 1
    again = pickle.loads(pickle.dumps(module))
    assert again == module and "noted" not in again.memo
    assert again.entry.instruction("c").literal_value == 3
    assert type(again.entry.instruction("c").literal_value) is int
    r = module.entry.root
    moved = r.at(r.line + 4, 7)
    assert (moved.line, moved.column) == (r.line + 4, 7)
    assert moved.attributes is r.attributes and moved.shape is r.shape
    assert moved.called_computations == r.called_computations
    assert dataclasses.replace(moved, line=r.line, column=r.column) == r
    shape = parse_shape("(f32[2,<=3]{1,0:T(2,128)}, s32[])")
    copied = pickle.loads(pickle.dumps(shape))
    assert copied == shape and hash(copied) == hash(shape) and str(copied) == str(shape)
    assert copied.leaves() == shape.leaves() and copied.is_dynamic
