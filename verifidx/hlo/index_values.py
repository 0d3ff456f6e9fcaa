"""Index tensors a program computes from iotas, constants and sizes, as expressions.

`jax.export` lowers `x[::-1]` and `x[1::2]` on a dynamic dimension to a `gather` whose start
indices it computes: `(b - 1) + (-1) * iota`, broadcast and reshaped. `value_at` gives the element
of such a tensor at a symbolic index as an expression in that index and the maps' sizes, so a
start index clamped to a size can be folded where the clamp provably never acts
(`verifidx.hlo.sized_ops`).

Followed: integer `constant` scalars, `iota`, scalars whose value is a size
(`dynamic_dims.VALUE_ATTRIBUTE`), `get-dimension-size`, `broadcast`, `reshape` that only adds
or drops static size-1 dimensions, `reverse`, `concatenate` read at a constant index along
static pieces (an index vector's component), `convert` to the same type, and `add`,
`subtract`, `multiply` (when one factor holds no index variable), `negate`. Integer
arithmetic wraps in the program, but add, subtract, multiply and negate agree with the
mathematical value modulo 2^bits, so an expression shown to lie in `[-2^31, 2^31)` is the
program's value (for 32- and 64-bit integers, the only ones followed). Anything else gives
None (the start stays a runtime variable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from verifidx.core.expr import Const, Dim, Expr, RtVar, Symbol, add, mul, neg
from verifidx.hlo.dynamic_dims import VALUE_ATTRIBUTE, SymSize, leaf_sizes
from verifidx.hlo.module import HloComputation, HloInstruction

_INTEGER = ("s32", "s64", "u32", "u64")
"""Index types followed: at least 32 bits, so a value shown in `[0, 2^31)` is representable
(narrower types would wrap inside a size's range)."""

_DEPTH = 64
"""How many instructions deep `value_at` looks before it gives up."""


def _sym(inst: HloInstruction, k: int) -> SymSize:
    """The size of dimension `k` (a constant for a static one)."""
    sizes = leaf_sizes(inst)
    s = sizes[k] if sizes is not None and k < len(sizes) else None
    return s if s is not None else SymSize(inst.shape.dims[k])




def _non_unit(inst: HloInstruction) -> list[int]:
    """The dimensions a reshape may not add or drop: all but the static size-1 ones."""
    return [k for k, n in enumerate(inst.shape.dims) if n != 1 or inst.shape.dynamic[k]]


def _has_index(e: Expr) -> bool:
    return any(isinstance(v, (Dim, Symbol, RtVar)) for v in e.variables())


def value_at(inst: HloInstruction, index: Sequence[Expr], comp: HloComputation,
             used: list[SymSize], depth: int = _DEPTH) -> Expr | None:
    """The element of `inst` at `index` (one expression per dimension), or None; `used`
    collects the sizes the expression names (to declare them in a map)."""
    shape = inst.shape
    if depth <= 0 or shape.is_tuple or shape.element_type not in _INTEGER or \
            len(index) != shape.rank:
        return None
    value = inst.attributes.get(VALUE_ATTRIBUTE)
    if isinstance(value, SymSize):
        used.append(value)
        return value.expr()
    op = inst.opcode
    operands = [comp.instruction(name) for name in inst.operands]

    def size(of: HloInstruction, k: int) -> Expr:
        s = _sym(of, k)
        used.append(s)
        return s.expr()

    def at(i: int, idx: Sequence[Expr]) -> Expr | None:
        return value_at(operands[i], idx, comp, used, depth - 1)

    if op == "constant":
        v = inst.literal_value
        return Const(v) if shape.rank == 0 and isinstance(v, int) and \
            not isinstance(v, bool) else None
    if op == "iota":
        d = inst.iota_dimension
        return index[d] if d is not None and 0 <= d < shape.rank else None
    if op == "get-dimension-size":
        dims = inst.dimensions or ()
        src = operands[0]
        return size(src, dims[0]) if len(dims) == 1 and dims[0] < src.shape.rank else None
    if op == "broadcast":
        dims = inst.dimensions or ()
        if any(d >= len(index) for d in dims):
            return None
        return at(0, [index[d] for d in dims])
    if op == "reshape":
        kept, src_kept = _non_unit(inst), _non_unit(operands[0])
        if [_sym(inst, k) for k in kept] != [_sym(operands[0], j) for j in src_kept]:
            return None
        idx: list[Expr] = [Const(0)] * operands[0].shape.rank
        for k, j in zip(kept, src_kept):
            idx[j] = index[k]
        return at(0, idx)
    if op == "concatenate":  # at a constant index along it (an index vector's component)
        axis = (inst.dimensions or (0,))[0]
        at_axis = index[axis] if axis < len(index) else None
        if not isinstance(at_axis, Const):
            return None
        offset = 0
        for i, o in enumerate(operands):
            if o.shape.dynamic[axis]:
                return None
            if offset <= at_axis.value < offset + o.shape.dims[axis]:
                return at(i, [Const(at_axis.value - offset) if k == axis else e
                              for k, e in enumerate(index)])
            offset += o.shape.dims[axis]
        return None
    if op == "reverse":
        axes = set(cast("tuple[int, ...]", inst.dimensions or ()))
        return at(0, [add(size(inst, k), -1, neg(e)) if k in axes else e
                      for k, e in enumerate(index)])
    if op == "convert":
        same = operands[0].shape.element_type == shape.element_type
        return at(0, index) if same else None
    if op == "negate":
        a = at(0, index)
        return None if a is None else neg(a)
    if op in ("add", "subtract", "multiply") and len(operands) == 2:
        a, b = at(0, index), at(1, index)
        if a is None or b is None:
            return None
        if op == "add":
            return add(a, b)
        if op == "subtract":
            return add(a, neg(b))
        return None if _has_index(a) and _has_index(b) else mul(a, b)
    return None
