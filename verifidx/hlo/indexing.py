"""Per-op indexing maps of HLO instructions, declared in one table (`OP_TABLE`).

For an instruction, `output_to_input` gives, per operand, the maps from an index of one output
(a leaf of a tuple output, numbered depth first) to the indices of that operand that are read
to compute it; `input_to_output` gives, per output leaf, the maps from an index of one operand
to the output indices it contributes to. Maps are built directly in simple form from the
instruction's attributes (`d1 * 7 + 3`, bare dimensions for identities); nothing here needs a
simplifier.

Soundness comes first: every map contains every element the op really reads (for reductions,
windows and contractions: every element that contributes). Where an op cannot be described by a
map, or its attributes are malformed, the operand gets an UNDEFINED map ("unknown indexing") and a
note; no exception escapes. A few maps are deliberately larger than the exact set, always to agree
with XLA or because a runtime value is not known; `OVER_APPROXIMATIONS` lists them and the
semantic oracle in the tests checks both containment and, everywhere else, equality.

Runtime variables follow the invariant in `verifidx.hlo.runtime`: `rt<k>` is the start index of
the op clamped to its bounds `[0, operand_dim - slice_dim]`; constant and iota start indices are
folded (iota with its clamp kept, unlike XLA).

The builders live in `verifidx.hlo.ops`, one module per op family (elementwise, data movement,
reductions and windows, contractions, gather/scatter, dynamic, collectives, called
computations); this module holds the table that names every op with its builders, the notes on
over-approximations, and the entry points. A front end that produces the same IR (StableHLO)
reuses the builders through this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifidx.core.errors import EvaluationError, UnsupportedError
from verifidx.hlo.dynamic_dims import restrict_to_sizes as restrict
from verifidx.hlo.layout import physical_mode_map
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.ops.called import called_i2o, called_o2i, register_called_computations
from verifidx.hlo.ops.collectives import all_gather_i2o, all_gather_o2i
from verifidx.hlo.ops.common import Builder, Malformed, Maps, OpContext, OpRule
from verifidx.hlo.ops.contractions import (
    conv_i2o,
    conv_o2i,
    dot_i2o,
    dot_o2i,
    scaled_dot_i2o,
    scaled_dot_o2i,
)
from verifidx.hlo.ops.data_movement import (
    add_dependency_i2o,
    add_dependency_o2i,
    bitcast_i2o,
    bitcast_o2i,
    broadcast_i2o,
    broadcast_o2i,
    concat_i2o,
    concat_o2i,
    gte_i2o,
    gte_o2i,
    pad_i2o,
    pad_o2i,
    passthrough_i2o,
    passthrough_o2i,
    reshape_exprs,
    reshape_i2o,
    reshape_o2i,
    reverse_i2o,
    reverse_o2i,
    set_dimension_size_i2o,
    set_dimension_size_o2i,
    slice_i2o,
    slice_o2i,
    transpose_i2o,
    transpose_o2i,
    tuple_i2o,
    tuple_o2i,
)
from verifidx.hlo.ops.dynamic import dus_i2o, dus_o2i, dynamic_slice_i2o, dynamic_slice_o2i
from verifidx.hlo.ops.elementwise import (
    ELEMENTWISE,
    bitcast_convert_i2o,
    bitcast_convert_o2i,
    elementwise_i2o,
    elementwise_o2i,
    no_operands,
    pairwise_i2o,
    pairwise_o2i,
    scalars_i2o,
    scalars_o2i,
)
from verifidx.hlo.ops.gather_scatter import gather_i2o, gather_o2i, scatter_i2o, scatter_o2i
from verifidx.hlo.ops.reductions import (
    fft_i2o,
    fft_o2i,
    invert_projection,
    reduce_i2o,
    reduce_o2i,
    reduce_window_i2o,
    reduce_window_o2i,
    scan_i2o,
    scan_o2i,
    select_and_scatter_i2o,
    select_and_scatter_o2i,
    sort_i2o,
    sort_o2i,
    topk_custom_call_i2o,
    topk_custom_call_o2i,
    topk_i2o,
    topk_o2i,
)
from verifidx.hlo.runtime import OperandIndexing
from verifidx.hlo.shape import Shape
from verifidx.hlo.sized_ops import sized_maps

__all__ = [
    "CUSTOM_CALLS",
    "ELEMENTWISE",
    "OP_TABLE",
    "OVER_APPROXIMATIONS",
    "HloInstructionIndexing",
    "Malformed",
    "Maps",
    "OpContext",
    "OpRule",
    "input_to_output",
    "invert_projection",
    "make_context",
    "output_to_input",
    "register_called_computations",
    "reshape_exprs",
]


# -- the result type ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HloInstructionIndexing:
    """Maps of one instruction in one direction: `maps[i]` lists the maps of operand `i`
    (output-to-input) or of output leaf `i` (input-to-output)."""

    maps: tuple[tuple[OperandIndexing, ...], ...]
    direction: str = "out2in"
    notes: tuple[str, ...] = field(default=(), compare=False)

    def to_text(self, div: str = "floordiv", multiline: bool = False) -> str:
        """XLA's `HloInstructionIndexing::ToString` layout: `operand id = N <map>` per map,
        `unknown indexing` for an undefined map, `runtime variables:` and `replica id:` blocks."""
        out: list[str] = []
        for i, group in enumerate(self.maps):
            if not group:
                out.append(f"operand id = {i}")
            for m in group:
                out.append(f"operand id = {i} {m.to_text(div, multiline)}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_text()

    def __len__(self) -> int:
        return len(self.maps)

    def __getitem__(self, i: int) -> tuple[OperandIndexing, ...]:
        return self.maps[i]


# -- the table ---------------------------------------------------------------------------------

NO_OPERAND_OPS = ("parameter", "constant", "iota", "partition-id", "replica-id",
                  "rng-get-and-update-state")

OP_TABLE: dict[str, OpRule] = {
    **{op: OpRule(elementwise_o2i, elementwise_i2o) for op in ELEMENTWISE},
    **{op: OpRule(no_operands, None) for op in NO_OPERAND_OPS},
    "all-reduce": OpRule(pairwise_o2i, pairwise_i2o, "elementwise on each replica"),
    "bitcast-convert": OpRule(bitcast_convert_o2i, bitcast_convert_i2o),
    "rng": OpRule(scalars_o2i, scalars_i2o),
    "rng-bit-generator": OpRule(scalars_o2i, scalars_i2o, "every value reads the whole state"),
    "tuple": OpRule(tuple_o2i, tuple_i2o),
    "get-tuple-element": OpRule(gte_o2i, gte_i2o),
    "opt-barrier": OpRule(passthrough_o2i, passthrough_i2o),
    "get-dimension-size": OpRule(no_operands, None, "reads the shape, no element"),
    "set-dimension-size": OpRule(set_dimension_size_o2i, set_dimension_size_i2o),
    "add-dependency": OpRule(add_dependency_o2i, add_dependency_i2o),
    "broadcast": OpRule(broadcast_o2i, broadcast_i2o),
    "transpose": OpRule(transpose_o2i, transpose_i2o),
    "reverse": OpRule(reverse_o2i, reverse_i2o),
    "slice": OpRule(slice_o2i, slice_i2o),
    "pad": OpRule(pad_o2i, pad_i2o),
    "concatenate": OpRule(concat_o2i, concat_i2o),
    "reshape": OpRule(reshape_o2i, reshape_i2o),
    "bitcast": OpRule(bitcast_o2i, bitcast_i2o),
    "reduce": OpRule(reduce_o2i, reduce_i2o),
    "reduce-window": OpRule(reduce_window_o2i, reduce_window_i2o),
    "select-and-scatter": OpRule(select_and_scatter_o2i, select_and_scatter_i2o),
    "sort": OpRule(sort_o2i, sort_i2o),
    "topk": OpRule(topk_o2i, topk_i2o),
    "dot": OpRule(dot_o2i, dot_i2o),
    "scaled-dot": OpRule(scaled_dot_o2i, scaled_dot_i2o),
    "convolution": OpRule(conv_o2i, conv_i2o),
    "fft": OpRule(fft_o2i, fft_i2o),
    "dynamic-slice": OpRule(dynamic_slice_o2i, dynamic_slice_i2o),
    "dynamic-update-slice": OpRule(dus_o2i, dus_i2o),
    "gather": OpRule(gather_o2i, gather_i2o),
    "scatter": OpRule(scatter_o2i, scatter_i2o),
    "all-gather": OpRule(all_gather_o2i, all_gather_i2o),
    "scan": OpRule(scan_o2i, scan_i2o),
    "fusion": OpRule(called_o2i, called_i2o, "composition of the fused computation"),
    "call": OpRule(called_o2i, called_i2o, "composition of the called computation"),
    "conditional": OpRule(called_o2i, called_i2o, "each branch's composition, all branches "
                          "(which one runs is a runtime value); the selector read everywhere"),
}
"""Opcode -> how to index it. Anything not listed (triangular-solve, cholesky,
all-to-all, reduce-scatter, send/recv, async ops, ...) has unknown indexing for every operand; a
custom-call is indexed by its target (`CUSTOM_CALLS`); so has `while` as one op (its state is one
tuple): `verifidx.analysis.computation_maps` gives its maps leaf by leaf
(`verifidx.analysis.loop_maps`)."""

CUSTOM_CALLS: dict[str, OpRule] = {
    "TopK": OpRule(topk_custom_call_o2i, topk_custom_call_i2o, "as the topk op, rank <= 2"),
}
"""custom_call_target -> how to index it; any other target has unknown indexing."""


def rule_of(ctx: OpContext) -> OpRule | None:
    """The table row of the instruction: by opcode, or by target for a custom-call."""
    if ctx.opcode == "custom-call":
        return CUSTOM_CALLS.get(ctx.instruction.custom_call_target or "")
    return OP_TABLE.get(ctx.opcode)


OVER_APPROXIMATIONS: dict[tuple[str, str], str] = {
    ("pad", "out2in operand 1"): "the padding value is mapped from every output element, as "
    "XLA does, although elements that come from the operand do not read it",
    ("pad", "in2out operand 1"): "the padding value maps to every output element",
    ("dynamic-update-slice", "out2in operand 0"): "every output element maps to the operand, "
    "as XLA does, although updated elements do not read it",
    ("dynamic-update-slice", "in2out operand 0"): "likewise, operand -> output is the identity",
    ("dynamic-update-slice", "out2in operand 1"): "as in XLA, results are not constrained to "
    "the update's bounds: output elements outside the update name out-of-range indices",
    ("convolution", "out2in operand 1"): "every kernel element is mapped from every output "
    "element, as XLA does, also where the window sits on padding or dilation holes",
    ("convolution", "in2out operand 1"): "kernel elements map to every output position",
    ("convolution", "batch groups"): "with batch_group_count > 1 the input batch ranges over "
    "all groups, as XLA does, not just the output feature's group",
    ("gather", "in2out operand 0"): "start indices are runtime values that vary over the batch, "
    "so every start in range is assumed",
    ("scatter", "out2in updates"): "every in-bounds start index is assumed",
    ("scatter", "in2out updates"): "every in-bounds start index is assumed",
    ("all-gather", "in2out"): "the replica's rank in its group is not known statically",
    ("select-and-scatter", "operand and source"): "every element of every window covering an "
    "output element is mapped to it, and every such window's source value: which element a "
    "window selects depends on the values (exact for a max or min selection, except that an "
    "element is mapped to itself also where each window covering it holds it alone, at an "
    "edge with padding)",
    ("sort", "later keys"): "every output is mapped from every operand the comparator reads; "
    "keys that only break ties (lexicographic order) do not change the earlier keys' outputs",
    ("rng-bit-generator", "out2in output 0"): "the new state is mapped from the whole old "
    "state, although the algorithms copy the key and only advance the counter",
    ("conditional", "selector"): "every output element is mapped from the branch selector, "
    "also where the branches give the same value (a conditional of one branch)",
    ("scan", "out2in"): "dependencies through the loop body are found by reachability; "
    "positions are exact when the chain lengths through carries form an interval, and other "
    "dimensions of non-scalar slices are covered whole",
}


def restrict_to_sizes(ctx: OpContext, result: HloInstructionIndexing, index: int
                      ) -> HloInstructionIndexing:
    """Per-op maps valid at every size of the dynamic dimensions (`verifidx.hlo.dynamic_dims`)."""
    maps, notes, table_notes = restrict(ctx, result.maps, result.direction, index, sized_maps)
    if maps is result.maps:
        return result
    return HloInstructionIndexing(maps, result.direction,
                                  (result.notes if table_notes else ()) + notes)


# -- entry points ------------------------------------------------------------------------------


def _find(instruction: HloInstruction | str, where: HloComputation | HloModule | None
          ) -> tuple[HloInstruction, HloComputation | None, HloModule | None]:
    module = where if isinstance(where, HloModule) else None
    comp = where if isinstance(where, HloComputation) else None
    if isinstance(where, HloModule):
        name = instruction if isinstance(instruction, str) else instruction.name
        found = [c for c in where.computations.values() if name in c]
        if not found:
            raise KeyError(f"no instruction {name!r} in module {where.name!r}")
        comp = where.entry if where.entry in found else found[0]
        if not isinstance(instruction, str) and comp.instruction(name) is not instruction:
            matches = [c for c in found if c.instruction(name) is instruction]
            comp = matches[0] if matches else comp
    if isinstance(instruction, str):
        if comp is None:
            raise ValueError("an instruction name needs the computation or module it is in")
        instruction = comp.instruction(instruction)
    return instruction, comp, module


def make_context(instruction: HloInstruction | str,
                 where: HloComputation | HloModule | None = None,
                 module: HloModule | None = None) -> OpContext:
    inst, comp, mod_ = _find(instruction, where)
    module = module or mod_
    operands: list[HloInstruction | None] = []
    shapes: list[Shape] = []
    for name in inst.operands:
        if comp is None or name not in comp:
            raise ValueError(f"operand {name!r} of {inst.name!r} is not in the computation")
        op = comp.instruction(name)
        operands.append(op)
        shapes.append(op.shape)
    return OpContext(inst, tuple(operands), tuple(shapes), comp, module)


def _run(ctx: OpContext, builder: Builder | None, index: int, count: int, what: str
         ) -> HloInstructionIndexing:
    direction = "out2in" if what == "output" else "in2out"
    if builder is None:
        rule = rule_of(ctx)
        why = f"no {direction} map for {ctx.opcode}" if rule else f"unknown op {ctx.opcode}"
        target = ctx.instruction.custom_call_target
        if ctx.opcode == "custom-call" and target:
            why = f"unknown op custom-call (target {target})"
        return HloInstructionIndexing(
            tuple((OperandIndexing.undefined(why),) for _ in range(count)), direction, (why,))
    try:
        maps = builder(ctx, index)
    except (Malformed, ValueError, IndexError, KeyError, EvaluationError,
            UnsupportedError) as err:
        why = f"{ctx.instruction.name} ({ctx.opcode}): {err}"
        return HloInstructionIndexing(
            tuple((OperandIndexing.undefined(why),) for _ in range(count)), direction, (why,))
    notes = tuple(n for group in maps for m in group for n in m.notes)
    return HloInstructionIndexing(tuple(tuple(g) for g in maps), direction, notes)


def _physical(indexing: HloInstructionIndexing, ctx: OpContext, index: int
              ) -> HloInstructionIndexing:
    """XLA's `use_physical_layout`: maps between physical (layout-ordered) indices, as
    `verifidx.hlo.layout.physical_mode_map` defines them (tiles ignored, as XLA does)."""
    out_shape = ctx.out_leaves
    groups: list[tuple[OperandIndexing, ...]] = []
    for i, group in enumerate(indexing.maps):
        new: list[OperandIndexing] = []
        for m in group:
            if m.is_undefined or m.runtime or m.replica is not None:
                new.append(m if m.is_undefined else OperandIndexing.undefined(
                    "physical layout with runtime variables is not supported"))
                continue
            if indexing.direction == "out2in":
                src, dst = out_shape[index], ctx.operand_shapes[i]
            else:
                src, dst = ctx.operand_shapes[index], out_shape[i]
            new.append(OperandIndexing(physical_mode_map(m.map, src, dst, include_tiling=False)))
        groups.append(tuple(new))
    return HloInstructionIndexing(tuple(groups), indexing.direction, indexing.notes)


def output_to_input(
    instruction: HloInstruction | str,
    where: HloComputation | HloModule | None = None,
    output_id: int = 0,
    *,
    module: HloModule | None = None,
    use_physical_layout: bool = False,
) -> HloInstructionIndexing:
    """Per operand, the maps from an index of output `output_id` (a leaf of a tuple output) to
    the operand indices read. `where` is the computation (or module) holding the instruction;
    `module` is needed for ops that call computations when `where` is a computation."""
    ctx = make_context(instruction, where, module)
    if not 0 <= output_id < len(ctx.out_leaves):
        raise IndexError(f"{ctx.instruction.name} has {len(ctx.out_leaves)} outputs")
    rule = rule_of(ctx)
    result = _run(ctx, rule.out2in if rule else None, output_id, ctx.num_operands, "output")
    result = restrict_to_sizes(ctx, result, output_id)
    return _physical(result, ctx, output_id) if use_physical_layout else result


def input_to_output(
    instruction: HloInstruction | str,
    where: HloComputation | HloModule | None = None,
    input_id: int = 0,
    *,
    module: HloModule | None = None,
    use_physical_layout: bool = False,
) -> HloInstructionIndexing:
    """Per output leaf, the maps from an index of operand `input_id` to the output indices it
    contributes to."""
    ctx = make_context(instruction, where, module)
    if not 0 <= input_id < ctx.num_operands:
        raise IndexError(f"{ctx.instruction.name} has {ctx.num_operands} operands")
    rule = rule_of(ctx)
    result = _run(ctx, rule.in2out if rule else None, input_id, len(ctx.out_leaves), "input")
    result = restrict_to_sizes(ctx, result, input_id)
    return _physical(result, ctx, input_id) if use_physical_layout else result
