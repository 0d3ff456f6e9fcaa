"""Shape inference for the data-movement ops, so that contradictory declared shapes are rejected.

XLA's verifier refuses a module whose declared output shape differs from the shape its op would
produce from its operands and attributes. verifidx used to accept such text and answer "unknown
indexing" for the op; a rewrite built on it could then silently change what the module computes.
`check_module` infers the output dimensions of pad, slice, concatenate, transpose, reshape,
broadcast, reverse, copy, bitcast, dynamic-slice and the elementwise ops and raises `ParseError`
at the instruction whose declared shape disagrees. Elementwise operands have the output's
dimensions: HLO broadcasts nothing implicitly (XLA's verifier: "Implicit broadcast is not allowed
in HLO"), except the scalar forms shape inference allows, a scalar predicate of `select` and
scalar bounds of `clamp`. Ops with dynamic or tuple shapes are left alone (their sizes are not
known statically), as are all other ops. Element types are not checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Final

from verifidx.core.errors import ParseError
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.ops.elementwise import ELEMENTWISE
from verifidx.hlo.shape import Shape, is_floating_point

__all__ = ["check_module", "infer_dims"]


class _Contradiction(Exception):
    """The op's attributes or operands do not describe a valid op."""


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise _Contradiction(message)


def _operand_count(inst: HloInstruction, n: int) -> None:
    _need(len(inst.operands) == n, f"{inst.opcode} takes {n} operand{'s' * (n != 1)}, "
                                   f"got {len(inst.operands)}")


def _pad(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...]:
    _operand_count(inst, 2)
    _need(ops[1].rank == 0, "the padding value of pad must be a scalar")
    pad = inst.padding
    _need(pad is not None, "pad needs padding=low_high_interior x ...")
    assert pad is not None
    _need(len(pad) == ops[0].rank, f"padding has {len(pad)} dimensions, the operand "
                                   f"{ops[0].rank}")
    out = []
    for p, n in zip(pad, ops[0].dims):
        _need(p.interior >= 0, "interior padding must not be negative")
        size = p.low + p.high + n + max(0, n - 1) * p.interior
        _need(size >= 0, "padding makes a dimension negative")
        out.append(size)
    return tuple(out)


def _slice(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...]:
    _operand_count(inst, 1)
    sl = inst.slice_dims
    _need(sl is not None and len(sl) == ops[0].rank,
          f"slice={{...}} needs one [start:limit:stride] per dimension ({ops[0].rank})")
    assert sl is not None
    out = []
    for s, n in zip(sl, ops[0].dims):
        _need(s.stride > 0, "slice strides must be positive")
        _need(0 <= s.start <= s.limit <= n, f"slice [{s.start}:{s.limit}] is outside [0:{n}]")
        out.append(-(-(s.limit - s.start) // s.stride))
    return tuple(out)


def _concatenate(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...]:
    _need(len(ops) >= 1, "concatenate needs operands")
    dims = inst.dimensions or ()
    rank = ops[0].rank
    _need(len(dims) == 1 and 0 <= dims[0] < rank, "concatenate needs one dimension in range")
    c = dims[0]
    for k, op in enumerate(ops):
        _need(op.rank == rank and all(op.dims[j] == ops[0].dims[j] for j in range(rank)
                                      if j != c),
              f"operand {k} ({op}) does not fit the concatenation along dimension {c}")
    out = list(ops[0].dims)
    out[c] = sum(op.dims[c] for op in ops)
    return tuple(out)


def _transpose(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...]:
    _operand_count(inst, 1)
    perm = inst.dimensions or ()
    _need(sorted(perm) == list(range(ops[0].rank)),
          f"transpose dimensions {{{','.join(map(str, perm))}}} are not a permutation of "
          f"the operand's {ops[0].rank} dimensions")
    return tuple(ops[0].dims[p] for p in perm)


def _reshape(inst: HloInstruction, ops: Sequence[Shape]) -> None:
    _operand_count(inst, 1)
    _need(math.prod(ops[0].dims) == math.prod(inst.shape.dims),
          f"reshape changes the number of elements ({math.prod(ops[0].dims)} to "
          f"{math.prod(inst.shape.dims)})")


def _broadcast(inst: HloInstruction, ops: Sequence[Shape]) -> None:
    _operand_count(inst, 1)
    dims = inst.dimensions or ()
    out = inst.shape.dims
    _need(len(dims) == ops[0].rank, f"broadcast needs one dimension per operand dimension "
                                    f"({ops[0].rank}), got {len(dims)}")
    _need(all(0 <= d < len(out) for d in dims) and len(set(dims)) == len(dims),
          "broadcast dimensions must be distinct output dimensions")
    for d, n in zip(dims, ops[0].dims):
        _need(out[d] == n, f"broadcast maps an operand dimension of size {n} to output "
                           f"dimension {d} of size {out[d]}")


def _same_as_operand(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...]:
    _operand_count(inst, 1)
    if inst.opcode == "reverse":
        _need(all(0 <= d < ops[0].rank for d in inst.dimensions or ()),
              "reverse dimensions out of range")
    return ops[0].dims


def _bitcast(inst: HloInstruction, ops: Sequence[Shape]) -> None:
    _operand_count(inst, 1)
    src, dst = ops[0], inst.shape
    _need(math.prod(src.dims) * src.element_bits == math.prod(dst.dims) * dst.element_bits,
          "bitcast changes the size of the buffer")


def _dynamic_slice(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...]:
    sizes = inst.dynamic_slice_sizes
    _need(sizes is not None and len(sizes) == ops[0].rank,
          "dynamic_slice_sizes needs one size per operand dimension")
    assert sizes is not None
    _need(len(ops) == 1 + ops[0].rank, "dynamic-slice needs one start index per dimension")
    _need(all(0 <= s <= n for s, n in zip(sizes, ops[0].dims)),
          "dynamic_slice_sizes larger than the operand")
    return tuple(sizes)


_SAME_TYPE: Final = frozenset("""add subtract multiply divide remainder power atan2 maximum
minimum and or xor shift-left shift-right-arithmetic shift-right-logical clamp""".split())
"""Ops whose operands and result have one element type (XLA's verifier)."""


def _same_type(a: str, b: str) -> bool:
    """Equal, or both floating point: backends that allow mixed precision (XLA's verifier option
    `allow_mixed_precision`) admit `add(f32, bf16)`, and the maps do not depend on it."""
    return a == b or is_floating_point(a) and is_floating_point(b)


def _element_types(inst: HloInstruction, ops: Sequence[Shape]) -> None:
    """`add(f32, s32)` is not HLO: the element types an op's operands and result must share."""
    if inst.shape.is_tuple or any(op.is_tuple for op in ops):
        return
    out = inst.shape.element_type
    if inst.opcode in _SAME_TYPE:
        typed = list(enumerate(ops))
    elif inst.opcode == "select" and len(ops) == 3:
        _need(ops[0].element_type == "pred",
              f"the predicate of select (operand 0) is {ops[0].without_layout()}, not pred")
        typed = [(1, ops[1]), (2, ops[2])]
    elif inst.opcode == "compare" and len(ops) == 2:
        _need(out == "pred", f"compare gives pred, not {out}")
        _need(_same_type(ops[0].element_type, ops[1].element_type),
              f"compare's operands are {ops[0].without_layout()} and "
              f"{ops[1].without_layout()}: one element type")
        return
    else:
        return
    for k, op in typed:
        _need(_same_type(op.element_type, out),
              f"operand {k} of {inst.opcode} is {op.without_layout()} and its result {out}: "
              f"one element type (convert changes types)")


def _elementwise(inst: HloInstruction, ops: Sequence[Shape]) -> tuple[int, ...] | None:
    """The dimensions every operand shares (a scalar predicate of select and scalar bounds of
    clamp are read by every element, as XLA's shape inference allows)."""
    if inst.opcode == "collective-permute" and len(ops) != 1:
        return None  # the in-place form: its start indices are operands of their own shapes
    _need(len(ops) >= 1, f"{inst.opcode} takes operands")
    _element_types(inst, ops)
    if inst.opcode in ("select", "clamp"):  # (pred, on_true, on_false), (min, operand, max)
        _operand_count(inst, 3)
        scalar_ok = (0,) if inst.opcode == "select" else (0, 2)
        for k, op in enumerate(ops):
            _need(op.dims == ops[1].dims or (k in scalar_ok and op.rank == 0),
                  f"operand {k} ({op.without_layout()}) is neither "
                  f"{'a scalar nor ' if k in scalar_ok else ''}of the shape of operand 1 "
                  f"({ops[1].without_layout()}): HLO broadcasts nothing implicitly")
        return ops[1].dims
    for k, op in enumerate(ops):
        _need(op.dims == ops[0].dims, f"operand {k} is {op.without_layout()} and operand 0 "
                                      f"{ops[0].without_layout()}: the operands of an "
                                      "elementwise op have one shape (HLO broadcasts nothing "
                                      "implicitly)")
    return ops[0].dims


Inference = Callable[[HloInstruction, Sequence[Shape]], "tuple[int, ...] | None"]

INFERENCE: dict[str, Inference] = {
    **{op: _elementwise for op in ELEMENTWISE},
    "pad": _pad,
    "slice": _slice,
    "concatenate": _concatenate,
    "transpose": _transpose,
    "reshape": _reshape,
    "broadcast": _broadcast,
    "reverse": _same_as_operand,
    "copy": _same_as_operand,
    "bitcast": _bitcast,
    "dynamic-slice": _dynamic_slice,
}
"""Opcode -> inference of the output dimensions (None: the op only constrains them)."""


def infer_dims(inst: HloInstruction, operand_shapes: Sequence[Shape]) -> tuple[int, ...] | None:
    """The output dimensions the op produces (None when the op constrains rather than determines
    them, or is not covered). Raises ValueError naming the rule the op breaks."""
    rule = INFERENCE.get(inst.opcode)
    if rule is None:
        return None
    try:
        return rule(inst, operand_shapes)
    except _Contradiction as err:
        raise ValueError(str(err)) from None


def _static(shape: Shape) -> bool:
    return not shape.is_tuple and not shape.is_dynamic


def check_computation(computation: HloComputation, source: str = "<string>") -> None:
    for inst in computation.instructions:
        if inst.opcode not in INFERENCE or not _static(inst.shape):
            continue
        shapes = [computation.instruction(o).shape for o in inst.operands]
        if not all(_static(s) for s in shapes):
            continue
        try:
            dims = infer_dims(inst, shapes)
        except ValueError as err:
            raise ParseError(f"{inst.opcode} '{inst.name}': {err}", inst.line, inst.column,
                             source) from None
        if dims is not None and tuple(dims) != inst.shape.dims:
            operands = ", ".join(str(s.without_layout()) for s in shapes)
            raise ParseError(
                f"{inst.opcode} '{inst.name}' is declared as {inst.shape.without_layout()} but "
                f"its operands ({operands}) and attributes give "
                f"{inst.shape.element_type}[{','.join(map(str, dims))}]",
                inst.line, inst.column, source)


def check_module(module: HloModule) -> None:
    """Raise ParseError at the first data-movement instruction whose declared shape contradicts
    its operands and attributes."""
    for computation in module.computations.values():
        check_computation(computation, module.source)
