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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from verifidx.errors import EvaluationError, UnsupportedError
from verifidx.expr import Const, Dim, Expr, Mul, RtVar, Symbol, add, floordiv, mod, mul, neg
from verifidx.hlo.module import (
    ConvolutionDimLabels,
    HloComputation,
    HloInstruction,
    HloModule,
    WindowDim,
)
from verifidx.hlo.runtime import (
    OperandIndexing,
    RuntimeVar,
    compose_indexing,
    fold_known_values,
)
from verifidx.hlo.shape import Shape
from verifidx.indexing_map import IndexingMap, Var
from verifidx.interval import Interval, range_of

if TYPE_CHECKING:
    from verifidx.expr import Variable

__all__ = [
    "ELEMENTWISE",
    "OP_TABLE",
    "OVER_APPROXIMATIONS",
    "HloInstructionIndexing",
    "OpContext",
    "OpRule",
    "input_to_output",
    "invert_projection",
    "make_context",
    "output_to_input",
    "reshape_exprs",
]

Maps = list[OperandIndexing]
"""The maps of one operand (o2i) or one output leaf (i2o); an empty list means "not read"."""


class Malformed(Exception):
    """The instruction's attributes do not describe a valid op; its maps become UNDEFINED."""


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


# -- context and table -------------------------------------------------------------------------


@dataclass(frozen=True)
class OpContext:
    """What a builder may look at: the instruction, its operands' instructions and shapes, and
    where it lives (for folding constant offsets and for called computations)."""

    instruction: HloInstruction
    operands: tuple[HloInstruction | None, ...]
    operand_shapes: tuple[Shape, ...]
    computation: HloComputation | None = None
    module: HloModule | None = None

    @property
    def opcode(self) -> str:
        return self.instruction.opcode

    @property
    def out_leaves(self) -> tuple[Shape, ...]:
        return self.instruction.shape.leaves()

    def out_dims(self, leaf: int = 0) -> tuple[int, ...]:
        leaves = self.out_leaves
        if not 0 <= leaf < len(leaves):
            raise Malformed(f"output {leaf} does not exist ({len(leaves)} outputs)")
        return _static(leaves[leaf])

    def in_dims(self, i: int) -> tuple[int, ...]:
        if not 0 <= i < len(self.operand_shapes):
            raise Malformed(f"operand {i} does not exist")
        return _static(self.operand_shapes[i])

    @property
    def num_operands(self) -> int:
        return len(self.operand_shapes)


Builder = Callable[[OpContext, int], list[Maps]]


@dataclass(frozen=True)
class OpRule:
    """How to index one opcode. `out2in(ctx, output_id)` returns one list of maps per operand;
    `in2out(ctx, input_id)` one list per output leaf. None: no map (unknown indexing)."""

    out2in: Builder | None
    in2out: Builder | None
    note: str = ""


def _static(shape: Shape) -> tuple[int, ...]:
    if shape.is_tuple:
        raise Malformed(f"expected an array shape, got {shape}")
    if any(d < 0 for d in shape.dims):
        raise Malformed(f"shape {shape} has an unbounded dynamic dimension")
    return shape.dims


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise Malformed(message)


def _is_perm(perm: Sequence[int], n: int) -> bool:
    return sorted(perm) == list(range(n))


# -- map construction helpers ------------------------------------------------------------------


def _box(sizes: Sequence[int]) -> list[tuple[int, int]]:
    return [(0, n - 1) for n in sizes]


def _map(
    results: Sequence[Expr | int],
    dims: Sequence[tuple[int, int] | Interval | Var],
    ranges: Sequence[tuple[int, int] | Interval | Var] = (),
    rts: Sequence[tuple[int, int] | Interval | Var] = (),
    constraints: Sequence[tuple[Expr, tuple[int, int] | Interval]] = (),
) -> IndexingMap:
    return IndexingMap.build(results, dims, ranges, rts, constraints)


def _plain(m: IndexingMap) -> OperandIndexing:
    return OperandIndexing(m)


def _identity(sizes: Sequence[int]) -> OperandIndexing:
    return _plain(_map([Dim(i) for i in range(len(sizes))], _box(sizes)))


def _to_scalar(sizes: Sequence[int]) -> OperandIndexing:
    """Every index of a `sizes` tensor reads the one element of a scalar: `(d0, d1) -> ()`."""
    return _plain(_map([], _box(sizes)))


def _to_all(src: Sequence[int], dst: Sequence[int]) -> OperandIndexing:
    """Every index of `src` relates to every index of `dst`: `(d0)[s0, s1] -> (s0, s1)`."""
    return _plain(_map([Symbol(i) for i in range(len(dst))], _box(src), _box(dst)))


def _sum_products_first(terms: Sequence[Expr]) -> Expr:
    """A sum printed as XLA prints it: products, then the other terms, in the given order."""
    products = [t for t in terms if isinstance(t, Mul)]
    others = [t for t in terms if not isinstance(t, Mul)]
    return add(*products, *others)


# -- elementwise and friends -------------------------------------------------------------------

ELEMENTWISE: frozenset[str] = frozenset(
    """abs add and atan2 cbrt ceil clamp count-leading-zeros compare complex convert copy cosine
    divide erf exponential exponential-minus-one floor imag is-finite log log-plus-one logistic
    map maximum minimum multiply negate not or popcnt power real reduce-precision remainder
    round-nearest-afz round-nearest-even rsqrt select shift-left shift-right-arithmetic
    shift-right-logical sign sine sqrt stochastic-convert subtract tan tanh xor
    collective-permute domain""".split()
)
"""Ops whose output element reads the element at the same index of every operand (a scalar
operand of `select`/`clamp` is read by every element)."""


def _elementwise_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out = ctx.out_dims(output_id)
    maps: list[Maps] = []
    for i in range(ctx.num_operands):
        dims = ctx.in_dims(i)
        if dims == out:
            maps.append([_identity(out)])
        elif not dims:
            maps.append([_to_scalar(out)])
        else:
            raise Malformed(f"operand {i} has shape {list(dims)}, output {list(out)}")
    return maps


def _elementwise_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, out = ctx.in_dims(input_id), ctx.out_dims(0)
    if dims == out:
        return [[_identity(out)]]
    _need(not dims, f"operand {input_id} has shape {list(dims)}, output {list(out)}")
    return [[_to_all((), out)]]


def _pairwise_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Variadic ops whose output k reads operand k elementwise (all-reduce)."""
    out = ctx.out_dims(output_id)
    _need(ctx.num_operands == len(ctx.out_leaves), "one output per operand expected")
    _need(ctx.in_dims(output_id) == out, "operand and output shapes differ")
    return [[_identity(out)] if i == output_id else [] for i in range(ctx.num_operands)]


def _pairwise_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    _need(ctx.num_operands == len(ctx.out_leaves), "one output per operand expected")
    dims = ctx.in_dims(input_id)
    _need(ctx.out_dims(input_id) == dims, "operand and output shapes differ")
    return [[_identity(dims)] if k == input_id else [] for k in range(len(ctx.out_leaves))]


def _bitcast_convert_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out, dims = ctx.out_dims(output_id), ctx.in_dims(0)
    if out == dims:
        return [[_identity(out)]]
    if len(out) == len(dims) + 1 and out[:-1] == dims:  # to a narrower type: extra minor dim
        return [[_plain(_map([Dim(i) for i in range(len(dims))], _box(out)))]]
    if len(dims) == len(out) + 1 and dims[:-1] == out:  # to a wider type: reads a minor row
        results = [*(Dim(i) for i in range(len(out))), Symbol(0)]
        return [[_plain(_map(results, _box(out), _box(dims[-1:])))]]
    raise Malformed(f"bitcast-convert from {list(dims)} to {list(out)}")


def _bitcast_convert_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    out, dims = ctx.out_dims(0), ctx.in_dims(0)
    if out == dims:
        return [[_identity(out)]]
    if len(out) == len(dims) + 1 and out[:-1] == dims:
        results = [*(Dim(i) for i in range(len(dims))), Symbol(0)]
        return [[_plain(_map(results, _box(dims), _box(out[-1:])))]]
    if len(dims) == len(out) + 1 and dims[:-1] == out:
        return [[_plain(_map([Dim(i) for i in range(len(out))], _box(dims)))]]
    raise Malformed(f"bitcast-convert from {list(dims)} to {list(out)}")


def _no_operands(ctx: OpContext, output_id: int) -> list[Maps]:
    ctx.out_dims(output_id)
    return [[] for _ in range(ctx.num_operands)]


def _scalars_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """rng: every output element reads the scalar parameters."""
    out = ctx.out_dims(output_id)
    return [[_to_all(out, ctx.in_dims(i))] for i in range(ctx.num_operands)]


def _scalars_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[_to_all(ctx.in_dims(input_id), ctx.out_dims(0))]]


# -- tuples ------------------------------------------------------------------------------------


def _leaf_ranges(shapes: Sequence[Shape]) -> list[tuple[int, int]]:
    """[start, end) of each element's leaves in the flattened leaf numbering."""
    out, start = [], 0
    for s in shapes:
        n = len(s.leaves())
        out.append((start, start + n))
        start += n
    return out


def _tuple_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims = ctx.out_dims(output_id)
    maps: list[Maps] = []
    for start, end in _leaf_ranges(ctx.operand_shapes):
        maps.append([_identity(dims)] if start <= output_id < end else [])
    return maps


def _tuple_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    start, end = _leaf_ranges(ctx.operand_shapes)[input_id]
    leaves = ctx.out_leaves
    return [[_identity(_static(s))] if start <= k < end else [] for k, s in enumerate(leaves)]


def _gte_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return [[_identity(ctx.out_dims(output_id))]]


def _gte_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[_identity(_static(s))] for s in ctx.out_leaves]


def _passthrough_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """opt-barrier: output leaf k is operand leaf k."""
    return [[_identity(ctx.out_dims(output_id))]]


def _passthrough_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[_identity(_static(s))] for s in ctx.out_leaves]


def _add_dependency_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out = ctx.out_dims(output_id)
    _need(ctx.in_dims(0) == out, "add-dependency changes the shape")
    return [[_identity(out)], *([] for _ in range(ctx.num_operands - 1))]


def _add_dependency_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[_identity(ctx.out_dims(0))] if input_id == 0 else []]


def _set_dimension_size_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out = ctx.out_dims(output_id)
    _need(ctx.num_operands == 2 and ctx.in_dims(0) == out and not ctx.in_dims(1),
          "set-dimension-size shapes")
    return [[_identity(out)], [_to_scalar(out)]]


def _set_dimension_size_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    out = ctx.out_dims(0)
    _set_dimension_size_o2i(ctx, 0)
    return [[_identity(out)]] if input_id == 0 else [[_to_all((), out)]]


# -- broadcast, transpose, reverse, slice, pad, concatenate -----------------------------------


def _broadcast_dims(ctx: OpContext) -> tuple[int, ...]:
    dims = ctx.instruction.dimensions or ()
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    _need(len(dims) == len(src), "broadcast dimensions do not match the operand rank")
    _need(all(0 <= d < len(out) for d in dims) and len(set(dims)) == len(dims),
          "broadcast dimensions out of range")
    _need(all(out[d] == n for d, n in zip(dims, src)), "broadcast changes a dimension's size")
    return dims


def _broadcast_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims = _broadcast_dims(ctx)
    return [[_plain(_map([Dim(d) for d in dims], _box(ctx.out_dims(0))))]]


def _broadcast_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims = _broadcast_dims(ctx)
    out = ctx.out_dims(0)
    results: list[Expr] = []
    ranges: list[tuple[int, int]] = []
    for k, n in enumerate(out):
        if k in dims:
            results.append(Dim(dims.index(k)))
        else:
            results.append(Symbol(len(ranges)))
            ranges.append((0, n - 1))
    return [[_plain(_map(results, _box(ctx.in_dims(0)), ranges))]]


def _transpose_perm(ctx: OpContext) -> tuple[int, ...]:
    perm = ctx.instruction.dimensions or ()
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    _need(len(perm) == len(src) == len(out) and _is_perm(perm, len(src)),
          "transpose dimensions are not a permutation")
    _need(all(out[k] == src[perm[k]] for k in range(len(out))), "transpose shapes disagree")
    return perm


def _transpose_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    perm = _transpose_perm(ctx)
    results = [Dim(perm.index(j)) for j in range(len(perm))]
    return [[_plain(_map(results, _box(ctx.out_dims(0))))]]


def _transpose_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    perm = _transpose_perm(ctx)
    return [[_plain(_map([Dim(p) for p in perm], _box(ctx.in_dims(0))))]]


def _reverse_map(ctx: OpContext, sizes: tuple[int, ...]) -> list[Maps]:
    dims = set(ctx.instruction.dimensions or ())
    _need(all(0 <= d < len(sizes) for d in dims), "reverse dimensions out of range")
    _need(ctx.in_dims(0) == ctx.out_dims(0), "reverse changes the shape")
    results = [add(neg(Dim(k)), n - 1) if k in dims else Dim(k) for k, n in enumerate(sizes)]
    return [[_plain(_map(results, _box(sizes)))]]


def _reverse_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return _reverse_map(ctx, ctx.out_dims(0))


def _reverse_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return _reverse_map(ctx, ctx.in_dims(0))


def _slice_dims(ctx: OpContext) -> list[tuple[int, int, int]]:
    """(start, stride, output size) per dimension."""
    sl = ctx.instruction.slice_dims
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    _need(sl is not None and len(sl) == len(src) == len(out), "slice={...} does not match rank")
    assert sl is not None
    dims = []
    for s, n_in, n_out in zip(sl, src, out):
        _need(s.stride > 0 and 0 <= s.start <= s.limit <= n_in, "slice bounds out of range")
        _need(n_out == max(0, -(-(s.limit - s.start) // s.stride)), "slice output size is wrong")
        dims.append((s.start, s.stride, n_out))
    return dims


def _slice_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims = _slice_dims(ctx)
    results = [add(mul(Dim(k), stride), start) for k, (start, stride, _) in enumerate(dims)]
    return [[_plain(_map(results, _box(ctx.out_dims(0))))]]


def _strided_inverse(
    var: Expr, start: int, stride: int
) -> tuple[Expr, list[tuple[Expr, tuple[int, int]]]]:
    """`(var - start) floordiv stride` with `(var - start) mod stride in [0, 0]`."""
    shifted = add(var, -start)
    if stride == 1:
        return shifted, []
    return floordiv(shifted, stride), [(mod(shifted, stride), (0, 0))]


def _slice_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    results: list[Expr] = []
    domain: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, (start, stride, n_out) in enumerate(_slice_dims(ctx)):
        r, cons = _strided_inverse(Dim(k), start, stride)
        results.append(r)
        constraints += cons
        domain.append((start, start + (n_out - 1) * stride))
    return [[_plain(_map(results, domain, constraints=constraints))]]


def _pad_dims(ctx: OpContext) -> list[tuple[int, int, int, int, int]]:
    """(low, interior + 1, operand size, output size, high) per dimension."""
    pad = ctx.instruction.padding
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    _need(pad is not None and len(pad) == len(src) == len(out), "padding does not match rank")
    _need(ctx.num_operands == 2 and not ctx.in_dims(1), "pad needs a scalar padding value")
    assert pad is not None
    dims = []
    for p, n_in, n_out in zip(pad, src, out):
        _need(p.interior >= 0, "negative interior padding")
        size = p.low + p.high + n_in + max(0, n_in - 1) * p.interior
        _need(size == n_out, "pad output size is wrong")
        dims.append((p.low, p.interior + 1, n_in, n_out, p.high))
    return dims


def _pad_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    results: list[Expr] = []
    domain: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, (low, step, n_in, n_out, _high) in enumerate(_pad_dims(ctx)):
        r, cons = _strided_inverse(Dim(k), low, step)
        results.append(r)
        constraints += cons
        domain.append((max(0, low), min(n_out - 1, low + (n_in - 1) * step)))
    operand = _plain(_map(results, domain, constraints=constraints))
    return [[operand], [_to_scalar(ctx.out_dims(0))]]


def _pad_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims = _pad_dims(ctx)
    out = ctx.out_dims(0)
    if input_id == 1:
        return [[_to_all((), out)]]
    results: list[Expr] = []
    domain: list[tuple[int, int]] = []
    for k, (low, step, n_in, n_out, _high) in enumerate(dims):
        results.append(add(mul(Dim(k), step), low))
        # x * step + low must land inside [0, n_out - 1]
        lo = max(0, -(low // step))
        hi = min(n_in - 1, (n_out - 1 - low) // step)
        domain.append((lo, hi))
    return [[_plain(_map(results, domain))]]


def _concat_dim(ctx: OpContext) -> tuple[int, list[int]]:
    dims = ctx.instruction.dimensions or ()
    out = ctx.out_dims(0)
    _need(len(dims) == 1 and 0 <= dims[0] < len(out), "concatenate needs one dimension")
    c = dims[0]
    offsets, total = [], 0
    for i in range(ctx.num_operands):
        src = ctx.in_dims(i)
        _need(len(src) == len(out) and all(src[k] == out[k] for k in range(len(out)) if k != c),
              f"operand {i} does not fit the concatenation")
        offsets.append(total)
        total += src[c]
    _need(total == out[c], "concatenate output size is wrong")
    return c, offsets


def _concat_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    c, offsets = _concat_dim(ctx)
    out = ctx.out_dims(0)
    maps: list[Maps] = []
    for i, off in enumerate(offsets):
        n = ctx.in_dims(i)[c]
        results = [add(Dim(k), -off) if k == c else Dim(k) for k in range(len(out))]
        domain = [(off, off + n - 1) if k == c else (0, out[k] - 1) for k in range(len(out))]
        maps.append([_plain(_map(results, domain))])
    return maps


def _concat_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    c, offsets = _concat_dim(ctx)
    src = ctx.in_dims(input_id)
    results = [add(Dim(k), offsets[input_id]) if k == c else Dim(k) for k in range(len(src))]
    return [[_plain(_map(results, _box(src)))]]


# -- reshape and bitcast -----------------------------------------------------------------------


def _strides(sizes: Sequence[int]) -> list[int]:
    out = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        out[k] = out[k + 1] * sizes[k + 1]
    return out


def reshape_exprs(src: Sequence[int], dst: Sequence[int], values: Sequence[Expr]) -> list[Expr]:
    """Index expressions of a `dst`-shaped tensor for the element at index `values` of a
    `src`-shaped tensor with the same elements in row-major order.

    Both shapes are split into groups whose linear extents coincide. Inside a group, when every
    boundary divides the next, each destination dimension is a sum of digits of the source
    dimensions (`(d0 mod 2) * 2 + d1 floordiv 4`); otherwise the group is linearized and
    delinearized. Size-1 destination dimensions are 0."""
    if list(src) == list(dst):
        return list(values)
    total = math.prod(src)
    if total != math.prod(dst):
        raise Malformed(f"reshape from {list(src)} to {list(dst)} changes the element count")
    if total == 0:
        return [Const(0)] * len(dst)
    s_str, d_str = _strides(src), _strides(dst)
    s_ext = [(s_str[k], s_str[k] * src[k]) for k in range(len(src)) if src[k] > 1]
    d_ext = {k: (d_str[k], d_str[k] * dst[k]) for k in range(len(dst)) if dst[k] > 1}
    s_val = {s_str[k]: (values[k], s_str[k] * src[k]) for k in range(len(src)) if src[k] > 1}
    s_bounds = {b for e in s_ext for b in e}
    d_bounds = {b for e in d_ext.values() for b in e}
    common = sorted((s_bounds & d_bounds) | {1, total})
    results: list[Expr] = [Const(0)] * len(dst)
    for lo, hi in zip(common, common[1:]):
        bounds = sorted(b for b in s_bounds | d_bounds if lo <= b <= hi)
        chained = all(b2 % b1 == 0 for b1, b2 in zip(bounds, bounds[1:]))
        for k, (a, b) in d_ext.items():
            if not lo <= a < b <= hi:
                continue
            if chained:
                results[k] = _digits(a, b, bounds, s_val)
            else:
                results[k] = _delinearize(a, b, lo, hi, s_val)
    return results


def _digits(a: int, b: int, bounds: Sequence[int], s_val: dict[int, tuple[Expr, int]]) -> Expr:
    """Destination dimension covering linear positions [a, b): the sum of the digits of the
    segments inside it, most significant first."""
    cuts = [x for x in bounds if a <= x <= b]
    terms: list[Expr] = []
    for seg_lo, seg_hi in reversed(list(zip(cuts, cuts[1:]))):
        owner = max(s for s in s_val if s <= seg_lo)
        value, owner_hi = s_val[owner]
        digit = floordiv(value, seg_lo // owner) if seg_lo != owner else value
        if seg_hi != owner_hi:
            digit = mod(digit, seg_hi // seg_lo)
        terms.append(mul(digit, seg_lo // a))
    return add(*terms)


def _delinearize(a: int, b: int, lo: int, hi: int, s_val: dict[int, tuple[Expr, int]]) -> Expr:
    linear = add(*(mul(v, s // lo) for s, (v, end) in sorted(s_val.items(), reverse=True)
                   if lo <= s and end <= hi))
    out = floordiv(linear, a // lo) if a != lo else linear
    return mod(out, b // a) if b != hi else out


def _reshape_map(src: Sequence[int], dst: Sequence[int]) -> IndexingMap:
    """Map from an index of `src` to the index of `dst` holding the same element."""
    exprs = reshape_exprs(src, dst, [Dim(k) for k in range(len(src))])
    return _map(exprs, _box(src))


def _reshape_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return [[_plain(_reshape_map(ctx.out_dims(0), ctx.in_dims(0)))]]


def _reshape_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[_plain(_reshape_map(ctx.in_dims(0), ctx.out_dims(0)))]]


def _major_to_minor(shape: Shape) -> list[int]:
    if shape.layout is None:
        return list(range(shape.rank))
    m2m = list(reversed(shape.layout.minor_to_major))
    _need(_is_perm(m2m, shape.rank), f"layout of {shape} is not a permutation")
    return m2m


def _bitcast_map(src: Shape, dst: Shape) -> IndexingMap:
    """Logical index of `src` -> logical index of `dst` at the same position in memory, for
    untiled layouts: transpose to physical order, reshape, transpose back."""
    if src.element_bits != dst.element_bits and src.element_bits and dst.element_bits:
        raise Malformed("bitcast between element types of different sizes")
    if (src.layout and src.layout.tiles) or (dst.layout and dst.layout.tiles):
        try:  # tiled layouts: the layout module knows the offsets
            from verifidx import layout

            return layout.bitcast_map(src, dst)
        except ImportError:
            raise Malformed("bitcast with tiled layouts needs verifidx.layout") from None
        except (UnsupportedError, ValueError) as err:
            raise Malformed(f"bitcast with tiled layouts: {err}") from None
    s_dims, d_dims = _static(src), _static(dst)
    s_m2m, d_m2m = _major_to_minor(src), _major_to_minor(dst)
    s_phys = [s_dims[k] for k in s_m2m]
    d_phys = [d_dims[k] for k in d_m2m]
    values = [Dim(k) for k in s_m2m]  # physical index of src, from its logical index
    phys: list[Expr]
    if s_phys == d_phys:
        phys = list(values)
    else:
        phys = reshape_exprs(s_phys, d_phys, values)
    results: list[Expr] = [Const(0)] * len(d_dims)
    for pos, k in enumerate(d_m2m):
        results[k] = phys[pos]
    return _map(results, _box(s_dims))


def _bitcast_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    operand = ctx.operand_shapes[0]
    return [[_plain(_bitcast_map(ctx.out_leaves[0], operand))]]


def _bitcast_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[_plain(_bitcast_map(ctx.operand_shapes[0], ctx.out_leaves[0]))]]


# -- reduce, reduce-window, sort ---------------------------------------------------------------


def _reduce_setup(ctx: OpContext) -> tuple[int, tuple[int, ...], list[int]]:
    """(number of inputs, input dims, reduced dimensions sorted)."""
    n = ctx.num_operands // 2
    _need(n >= 1 and ctx.num_operands == 2 * n, "reduce needs inputs and as many inits")
    dims = ctx.in_dims(0)
    red = sorted(set(ctx.instruction.dimensions or ()))
    _need(all(0 <= d < len(dims) for d in red), "reduce dimensions out of range")
    kept = [dims[k] for k in range(len(dims)) if k not in red]
    for i in range(n):
        _need(ctx.in_dims(i) == dims, "reduce inputs have different shapes")
        _need(not ctx.in_dims(n + i), "reduce init values must be scalars")
    _need(len(ctx.out_leaves) == n, "reduce has one output per input")
    for k in range(n):
        _need(list(ctx.out_dims(k)) == kept, "reduce output shape is wrong")
    return n, dims, red


def _reduce_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    n, dims, red = _reduce_setup(ctx)
    out = ctx.out_dims(output_id)
    results: list[Expr] = []
    kept = 0
    for k in range(len(dims)):
        if k in red:
            results.append(Symbol(red.index(k)))
        else:
            results.append(Dim(kept))
            kept += 1
    operand = _plain(_map(results, _box(out), [(0, dims[k] - 1) for k in red]))
    return [[operand] for _ in range(n)] + [[_to_scalar(out)] for _ in range(n)]


def _reduce_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    n, dims, red = _reduce_setup(ctx)
    out = ctx.out_dims(0)
    if input_id >= n:
        return [[_to_all((), out)] for _ in range(n)]
    results = [Dim(k) for k in range(len(dims)) if k not in red]
    return [[_plain(_map(results, _box(dims)))] for _ in range(n)]


def _window_input(
    out_var: Expr,
    out_size: int,
    in_size: int,
    w: WindowDim,
    sym: Expr | None,
    bounds: dict[Variable, Interval],
) -> tuple[Expr, list[tuple[Expr, tuple[int, int]]]]:
    """Input index read by output position `out_var` at window position `sym` (None for a
    window of size 1) in one dimension of a reduce-window or convolution, with its constraints:
    the position in the padded, base-dilated input is `out * stride + w * window_dilation`; it
    must fall on an input element (not padding, not a dilation hole)."""
    base = Const(0) if out_size == 1 else out_var
    terms: list[Expr] = []
    if base != Const(0):
        terms.append(mul(base, w.stride))
    if sym is not None:
        terms.append(mul(sym, w.rhs_dilation))
    pos = _sum_products_first(terms) if terms else Const(0)
    valid = (w.pad_low, w.pad_low + (in_size - 1) * w.lhs_dilation)
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    if not Interval(*valid).contains(range_of(pos, bounds)):
        constraints.append((pos, valid))
    index, cons = _strided_inverse(pos, w.pad_low, w.lhs_dilation)
    return index, constraints + cons


def _window_output(
    in_var: Expr, out_size: int, w: WindowDim, sym: Expr | None, bounds: dict[Variable, Interval]
) -> tuple[Expr, list[tuple[Expr, tuple[int, int]]]]:
    """Output position whose window reads input `in_var` at window position `sym`: solves
    `out * stride + w * window_dilation = in * base_dilation + pad_low` for `out`."""
    terms = [mul(in_var, w.lhs_dilation)]
    if sym is not None:
        terms.append(mul(sym, -w.rhs_dilation))
    numerator = add(_sum_products_first(terms), w.pad_low)
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    limit = (0, (out_size - 1) * w.stride)
    if not Interval(*limit).contains(range_of(numerator, bounds)):
        constraints.append((numerator, limit))
    if w.stride == 1:
        return numerator, constraints
    return floordiv(numerator, w.stride), [*constraints, (mod(numerator, w.stride), (0, 0))]


def _check_window(window: Sequence[WindowDim] | None, rank: int, what: str) -> list[WindowDim]:
    _need(window is not None and len(window) == rank, f"{what} window does not match the rank")
    assert window is not None
    for w in window:
        _need(w.size >= 1 and w.stride >= 1 and w.lhs_dilation >= 1 and w.rhs_dilation >= 1,
              f"{what} window has a non-positive size, stride or dilation")
    return list(window)


def _window_out_size(in_size: int, w: WindowDim) -> int:
    dilated = (in_size - 1) * w.lhs_dilation + 1 if in_size else 0
    padded = dilated + w.pad_low + w.pad_high
    span = (w.size - 1) * w.rhs_dilation + 1
    return 0 if padded < span else (padded - span) // w.stride + 1


def _reduce_window_setup(ctx: OpContext) -> tuple[int, tuple[int, ...], list[WindowDim]]:
    n = ctx.num_operands // 2
    _need(n >= 1 and ctx.num_operands == 2 * n, "reduce-window needs inputs and inits")
    dims = ctx.in_dims(0)
    window = _check_window(ctx.instruction.window, len(dims), "reduce-window")
    _need(len(ctx.out_leaves) == n, "reduce-window has one output per input")
    for i in range(n):
        _need(ctx.in_dims(i) == dims and not ctx.in_dims(n + i), "reduce-window operand shapes")
        _need(list(ctx.out_dims(i)) == [_window_out_size(x, w) for x, w in zip(dims, window)],
              "reduce-window output shape is wrong")
    return n, dims, window


def _reduce_window_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    n, dims, window = _reduce_window_setup(ctx)
    out = ctx.out_dims(output_id)
    ranges = [(0, w.size - 1) for w in window if w.size > 1]
    syms = iter(range(len(ranges)))
    bounds: dict[Variable, Interval] = {Dim(k): Interval(0, x - 1) for k, x in enumerate(out)}
    bounds.update({Symbol(k): Interval(*r) for k, r in enumerate(ranges)})
    results: list[Expr] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, w in enumerate(window):
        sym = Symbol(next(syms)) if w.size > 1 else None
        index, cons = _window_input(Dim(k), out[k], dims[k], w, sym, bounds)
        results.append(index)
        constraints += cons
    operand = _plain(_map(results, _box(out), ranges, constraints=constraints))
    return [[operand] for _ in range(n)] + [[_to_scalar(out)] for _ in range(n)]


def _reduce_window_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    n, dims, window = _reduce_window_setup(ctx)
    out = ctx.out_dims(0)
    if input_id >= n:
        return [[_to_all((), out)] for _ in range(n)]
    ranges = [(0, w.size - 1) for w in window if w.size > 1]
    syms = iter(range(len(ranges)))
    bounds: dict[Variable, Interval] = {Dim(k): Interval(0, x - 1) for k, x in enumerate(dims)}
    bounds.update({Symbol(k): Interval(*r) for k, r in enumerate(ranges)})
    results: list[Expr] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, w in enumerate(window):
        sym = Symbol(next(syms)) if w.size > 1 else None
        index, cons = _window_output(Dim(k), out[k], w, sym, bounds)
        results.append(index)
        constraints += cons
    m = _plain(_map(results, _box(dims), ranges, constraints=constraints))
    return [[m] for _ in range(n)]


def _sort_setup(ctx: OpContext) -> tuple[tuple[int, ...], int]:
    dims = ctx.in_dims(0)
    sd = ctx.instruction.dimensions or ()
    _need(len(sd) == 1 and 0 <= sd[0] < len(dims), "sort needs one dimension")
    _need(len(ctx.out_leaves) == ctx.num_operands, "sort has one output per operand")
    for i in range(ctx.num_operands):
        _need(ctx.in_dims(i) == dims and ctx.out_dims(i) == dims, "sort operand shapes differ")
    return dims, sd[0]


def _sort_row(dims: Sequence[int], axis: int) -> OperandIndexing:
    results = [Symbol(0) if k == axis else Dim(k) for k in range(len(dims))]
    return _plain(_map(results, _box(dims), [(0, dims[axis] - 1)]))


def _sort_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims, axis = _sort_setup(ctx)
    return [[_sort_row(dims, axis)] for _ in range(ctx.num_operands)]


def _sort_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, axis = _sort_setup(ctx)
    return [[_sort_row(dims, axis)] for _ in range(ctx.num_operands)]


# -- dot and convolution -----------------------------------------------------------------------


@dataclass(frozen=True)
class _DotLayout:
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]
    lhs_free: tuple[int, ...]
    rhs_free: tuple[int, ...]


def _dot_layout(ctx: OpContext) -> _DotLayout:
    dn = ctx.instruction.dot_dimension_numbers
    lhs, rhs, out = ctx.in_dims(0), ctx.in_dims(1), ctx.out_dims(0)
    used_l = dn.lhs_batch + dn.lhs_contracting
    used_r = dn.rhs_batch + dn.rhs_contracting
    _need(len(dn.lhs_batch) == len(dn.rhs_batch), "dot batch dimensions differ in number")
    _need(len(dn.lhs_contracting) == len(dn.rhs_contracting), "dot contracting dims differ")
    _need(len(set(used_l)) == len(used_l) and all(0 <= d < len(lhs) for d in used_l),
          "dot lhs dimensions invalid")
    _need(len(set(used_r)) == len(used_r) and all(0 <= d < len(rhs) for d in used_r),
          "dot rhs dimensions invalid")
    lf = tuple(k for k in range(len(lhs)) if k not in used_l)
    rf = tuple(k for k in range(len(rhs)) if k not in used_r)
    expect = [lhs[d] for d in dn.lhs_batch] + [lhs[d] for d in lf] + [rhs[d] for d in rf]
    _need(list(out) == expect, "dot output shape is wrong")
    _need(all(lhs[a] == rhs[b] for a, b in zip(dn.lhs_batch, dn.rhs_batch)), "batch sizes")
    _need(all(lhs[a] == rhs[b] for a, b in zip(dn.lhs_contracting, dn.rhs_contracting)),
          "contracting sizes differ")
    return _DotLayout(dn.lhs_batch, dn.rhs_batch, dn.lhs_contracting, dn.rhs_contracting, lf, rf)


def _dot_operand_map(ctx: OpContext, side: int, lay: _DotLayout) -> IndexingMap:
    dims = ctx.in_dims(side)
    batch = lay.lhs_batch if side == 0 else lay.rhs_batch
    contracting = lay.lhs_contracting if side == 0 else lay.rhs_contracting
    free = lay.lhs_free if side == 0 else lay.rhs_free
    free_start = len(batch) + (0 if side == 0 else len(lay.lhs_free))
    results: list[Expr] = [Const(0)] * len(dims)
    for i, d in enumerate(batch):
        results[d] = Dim(i)
    for i, d in enumerate(free):
        results[d] = Dim(free_start + i)
    for i, d in enumerate(contracting):
        results[d] = Symbol(i)
    return _map(results, _box(ctx.out_dims(0)), [(0, dims[d] - 1) for d in contracting])


def _dot_input_map(ctx: OpContext, side: int, lay: _DotLayout) -> IndexingMap:
    dims = ctx.in_dims(side)
    out = ctx.out_dims(0)
    batch = lay.lhs_batch if side == 0 else lay.rhs_batch
    nb, nlf = len(batch), len(lay.lhs_free)
    results: list[Expr] = []
    ranges: list[tuple[int, int]] = []
    for k in range(len(out)):
        if k < nb:
            results.append(Dim(batch[k]))
        elif (side == 0) == (k < nb + nlf):
            own = lay.lhs_free if side == 0 else lay.rhs_free
            results.append(Dim(own[k - nb - (0 if side == 0 else nlf)]))
        else:
            results.append(Symbol(len(ranges)))
            ranges.append((0, out[k] - 1))
    return _map(results, _box(dims), ranges)


def _dot_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    lay = _dot_layout(ctx)
    _need(ctx.num_operands == 2, "dot has two operands")
    return [[_plain(_dot_operand_map(ctx, side, lay))] for side in (0, 1)]


def _dot_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    lay = _dot_layout(ctx)
    return [[_plain(_dot_input_map(ctx, input_id, lay))]]


def _scale_block(ctx: OpContext, side: int) -> list[int] | None:
    """Block size per dimension of the scale of operand `side` (None for a scalar scale)."""
    dims, scale = ctx.in_dims(side), ctx.in_dims(side + 2)
    if not scale:
        return None
    _need(len(scale) == len(dims), "scale rank differs from its operand's")
    _need(all(s > 0 and d % s == 0 for d, s in zip(dims, scale)), "scale does not tile operand")
    return [d // s for d, s in zip(dims, scale)]


def _scaled_dot_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    _need(ctx.num_operands == 4, "scaled-dot has four operands")
    lay = _dot_layout(ctx)
    operand_maps = [_dot_operand_map(ctx, side, lay) for side in (0, 1)]
    maps: list[Maps] = [[_plain(m)] for m in operand_maps]
    for side in (0, 1):
        block = _scale_block(ctx, side)
        m = operand_maps[side]
        if block is None:
            maps.append([_plain(_map([], m.dims, m.range_vars))])
        else:
            results = [floordiv(r, b) for r, b in zip(m.results, block)]
            maps.append([_plain(_map(results, m.dims, m.range_vars))])
    return maps


def _scaled_dot_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    _need(ctx.num_operands == 4, "scaled-dot has four operands")
    lay = _dot_layout(ctx)
    if input_id < 2:
        return [[_plain(_dot_input_map(ctx, input_id, lay))]]
    side = input_id - 2
    block = _scale_block(ctx, side)
    if block is None:
        return [[_to_all((), ctx.out_dims(0))]]
    # a scale element covers a block of operand elements, each read as the operand is
    scale = ctx.in_dims(input_id)
    results = [add(mul(Dim(k), b), Symbol(k)) for k, b in enumerate(block)]
    to_operand = _plain(_map(results, _box(scale), [(0, b - 1) for b in block]))
    return [[compose_indexing(to_operand, _plain(_dot_input_map(ctx, side, lay)))]]


@dataclass(frozen=True)
class _ConvLayout:
    labels: ConvolutionDimLabels
    window: list[WindowDim]
    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    out: tuple[int, ...]
    fgc: int
    bgc: int
    in_per_group: int  # kernel input features
    out_per_group: int  # output features per feature group


def _conv_layout(ctx: OpContext) -> _ConvLayout:
    inst = ctx.instruction
    labels = inst.dim_labels
    _need(labels is not None, "convolution needs dim_labels")
    assert labels is not None
    _need(ctx.num_operands == 2, "convolution has two operands")
    lhs, rhs, out = ctx.in_dims(0), ctx.in_dims(1), ctx.out_dims(0)
    nsp = len(labels.input_spatial)
    _need(len(lhs) == len(rhs) == len(out) == nsp + 2, "convolution ranks disagree")
    _need(len(labels.kernel_spatial) == len(labels.output_spatial) == nsp, "dim_labels")
    window: Sequence[WindowDim] | None = inst.window
    if window is None and nsp == 0:
        window = ()
    window = _check_window(window, nsp, "convolution")
    fgc, bgc = inst.feature_group_count, inst.batch_group_count
    _need(fgc >= 1 and bgc >= 1 and (fgc == 1 or bgc == 1), "group counts")
    in_f, out_f = lhs[labels.input_feature], out[labels.output_feature]
    k_in, k_out = rhs[labels.kernel_input_feature], rhs[labels.kernel_output_feature]
    _need(in_f == k_in * fgc and k_out == out_f, "convolution feature sizes disagree")
    _need(out_f % fgc == 0 and out_f % bgc == 0, "output features not divisible by groups")
    in_b, out_b = lhs[labels.input_batch], out[labels.output_batch]
    _need(in_b == out_b * bgc, "convolution batch sizes disagree")
    for k in range(nsp):
        w = window[k]
        _need(rhs[labels.kernel_spatial[k]] == w.size, "window size differs from the kernel")
        _need(out[labels.output_spatial[k]] == _window_out_size(lhs[labels.input_spatial[k]], w),
              "convolution output size is wrong")
    return _ConvLayout(labels, window, lhs, rhs, out, fgc, bgc, k_in, out_f // fgc)


def _conv_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    c = _conv_layout(ctx)
    lb, out = c.labels, c.out

    def dim(pos: int) -> Expr:
        return Const(0) if out[pos] == 1 else Dim(pos)

    ranges: list[tuple[int, int]] = []
    win_syms: list[Expr | None] = []
    for w in c.window:
        if w.size > 1:
            win_syms.append(Symbol(len(ranges)))
            ranges.append((0, w.size - 1))
        else:
            win_syms.append(None)
    feat: Expr = Const(0)
    if c.in_per_group > 1:
        feat = Symbol(len(ranges))
        ranges.append((0, c.in_per_group - 1))
    group: Expr | None = None
    if c.bgc > 1:
        group = Symbol(len(ranges))
        ranges.append((0, c.bgc - 1))
    bounds: dict[Variable, Interval] = {Dim(k): Interval(0, x - 1) for k, x in enumerate(out)}
    bounds.update({Symbol(k): Interval(*r) for k, r in enumerate(ranges)})

    lhs_res: list[Expr] = [Const(0)] * len(c.lhs)
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    batch = dim(lb.output_batch)
    lhs_res[lb.input_batch] = (
        batch if group is None else _sum_products_first([mul(group, out[lb.output_batch]), batch])
    )
    out_feat = dim(lb.output_feature)
    if c.fgc > 1:
        grp = mul(floordiv(out_feat, c.out_per_group), c.in_per_group)
        lhs_res[lb.input_feature] = add(grp, feat)
    else:
        lhs_res[lb.input_feature] = feat
    for k, w in enumerate(c.window):
        pos = lb.output_spatial[k]
        index, cons = _window_input(Dim(pos), out[pos], c.lhs[lb.input_spatial[k]], w,
                                    win_syms[k], bounds)
        lhs_res[lb.input_spatial[k]] = index
        constraints += cons
    rhs_res: list[Expr] = [Const(0)] * len(c.rhs)
    rhs_res[lb.kernel_input_feature] = feat
    rhs_res[lb.kernel_output_feature] = out_feat
    for k, w in enumerate(c.window):
        s = win_syms[k]
        tap: Expr = Const(0) if s is None else s
        if w.reversal and s is not None:
            tap = add(neg(s), w.size - 1)
        rhs_res[lb.kernel_spatial[k]] = tap
    lhs_map = _map(lhs_res, _box(out), ranges, constraints=constraints)
    # the batch-group variable (last, if any) does not index the kernel
    rhs_map = _map(rhs_res, _box(out), ranges[: len(ranges) - (group is not None)])
    return [[_plain(lhs_map)], [_plain(rhs_map)]]


def _conv_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    c = _conv_layout(ctx)
    lb, out = c.labels, c.out
    results: list[Expr] = [Const(0)] * len(out)
    ranges: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []

    def fresh(size: int) -> Expr:
        ranges.append((0, size - 1))
        return Symbol(len(ranges) - 1)

    if input_id == 0:
        dims = c.lhs
        win_syms = [fresh(w.size) if w.size > 1 else None for w in c.window]
        b = Dim(lb.input_batch)
        results[lb.output_batch] = b if c.bgc == 1 else mod(b, out[lb.output_batch])
        if c.bgc > 1:
            results[lb.output_feature] = fresh(out[lb.output_feature])
        elif c.fgc > 1:
            grp = mul(floordiv(Dim(lb.input_feature), c.in_per_group), c.out_per_group)
            results[lb.output_feature] = add(grp, fresh(c.out_per_group))
        else:
            results[lb.output_feature] = fresh(out[lb.output_feature])
        bounds: dict[Variable, Interval] = {Dim(k): Interval(0, x - 1) for k, x in enumerate(dims)}
        bounds.update({Symbol(k): Interval(*r) for k, r in enumerate(ranges)})
        for k, w in enumerate(c.window):
            pos = lb.output_spatial[k]
            index, cons = _window_output(Dim(lb.input_spatial[k]), out[pos], w, win_syms[k],
                                         bounds)
            results[pos] = index
            constraints += cons
    else:
        dims = c.rhs
        results[lb.output_batch] = fresh(out[lb.output_batch])
        results[lb.output_feature] = Dim(lb.kernel_output_feature)
        for k in range(len(c.window)):
            pos = lb.output_spatial[k]
            results[pos] = fresh(out[pos])
    return [[_plain(_map(results, _box(dims), ranges, constraints=constraints))]]


# -- dynamic slicing, gather, scatter ----------------------------------------------------------


def _offset_sources(ctx: OpContext, first: int, rank: int, domain: IndexingMap
                    ) -> list[RuntimeVar]:
    """Provenance of the start indices of dynamic-(update-)slice: one scalar operand per
    dimension, or (older form) one rank-1 operand holding all of them."""
    n = ctx.num_operands - first
    sources: list[tuple[int, list[Expr]]]
    if n == rank and all(not ctx.in_dims(first + k) for k in range(rank)):
        sources = [(first + k, []) for k in range(rank)]
    elif n == 1 and ctx.in_dims(first) == (rank,):
        sources = [(first, [Const(k)]) for k in range(rank)]
    else:
        raise Malformed("start indices do not match the operand rank")
    out: list[RuntimeVar] = []
    for operand, index in sources:
        src = ctx.operands[operand]
        if src is None:
            raise Malformed("the start index operand is not known")
        out.append(RuntimeVar(src, _map(index, domain.dims, domain.range_vars)))
    return out


def _dynamic_slice_setup(ctx: OpContext) -> tuple[tuple[int, ...], tuple[int, ...]]:
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    sizes = ctx.instruction.dynamic_slice_sizes or out
    _need(len(sizes) == len(src) == len(out) and tuple(sizes) == out, "dynamic_slice_sizes")
    _need(all(0 <= s <= n for s, n in zip(sizes, src)), "slice larger than the operand")
    return src, out


def _dynamic_slice_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    src, out = _dynamic_slice_setup(ctx)
    rank = len(src)
    results = [add(Dim(k), RtVar(k)) for k in range(rank)]
    rts = [(0, src[k] - out[k]) for k in range(rank)]
    m = _map(results, _box(out), rts=rts)
    operand = fold_known_values(OperandIndexing(m, tuple(_offset_sources(ctx, 1, rank, m))))
    offsets = [[_to_all(out, ctx.in_dims(i))] for i in range(1, ctx.num_operands)]
    return [[operand], *offsets]


def _dynamic_slice_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    src, out = _dynamic_slice_setup(ctx)
    if input_id > 0:
        return [[_to_all(ctx.in_dims(input_id), out)]]
    rank = len(src)
    results = [add(Dim(k), neg(RtVar(k))) for k in range(rank)]
    rts = [(0, src[k] - out[k]) for k in range(rank)]
    constraints = [(results[k], (0, out[k] - 1)) for k in range(rank)]
    m = _map(results, _box(src), rts=rts, constraints=constraints)
    return [[fold_known_values(OperandIndexing(m, tuple(_offset_sources(ctx, 1, rank, m))))]]


def _dus_setup(ctx: OpContext) -> tuple[tuple[int, ...], tuple[int, ...]]:
    out, upd = ctx.out_dims(0), ctx.in_dims(1)
    _need(ctx.in_dims(0) == out and len(upd) == len(out), "dynamic-update-slice shapes")
    _need(all(u <= n for u, n in zip(upd, out)), "update larger than the operand")
    return out, upd


def _dus_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out, upd = _dus_setup(ctx)
    rank = len(out)
    results = [add(Dim(k), neg(RtVar(k))) for k in range(rank)]
    m = _map(results, _box(out), rts=[(0, out[k] - upd[k]) for k in range(rank)])
    update = fold_known_values(OperandIndexing(m, tuple(_offset_sources(ctx, 2, rank, m))))
    offsets = [[_to_all(out, ctx.in_dims(i))] for i in range(2, ctx.num_operands)]
    return [[_identity(out)], [update], *offsets]


def _dus_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    out, upd = _dus_setup(ctx)
    rank = len(out)
    if input_id == 0:
        return [[_identity(out)]]
    if input_id >= 2:
        return [[_to_all(ctx.in_dims(input_id), out)]]
    results = [add(Dim(k), RtVar(k)) for k in range(rank)]
    m = _map(results, _box(upd), rts=[(0, out[k] - upd[k]) for k in range(rank)])
    return [[fold_known_values(OperandIndexing(m, tuple(_offset_sources(ctx, 2, rank, m))))]]


@dataclass(frozen=True)
class _GatherLayout:
    operand: tuple[int, ...]
    indices: tuple[int, ...]
    out: tuple[int, ...]
    slice_sizes: tuple[int, ...]
    offset_dims: tuple[int, ...]
    window_dims: tuple[int, ...]  # operand dims that get an output offset dim, in order
    collapsed: tuple[int, ...]
    start_index_map: tuple[int, ...]
    ivd: int  # index_vector_dim (== rank of indices when implicit)
    batch_out: tuple[int, ...]  # output dims that are not offset dims
    index_batch: tuple[int, ...]  # indices dims other than the index vector dim
    operand_batching: tuple[int, ...]
    indices_batching: tuple[int, ...]


def _gather_layout(ctx: OpContext) -> _GatherLayout:
    inst = ctx.instruction
    gdn = inst.gather_dimension_numbers
    _need(ctx.num_operands == 2, "gather has two operands")
    operand, indices, out = ctx.in_dims(0), ctx.in_dims(1), ctx.out_dims(0)
    sizes = inst.slice_sizes
    _need(sizes is not None and len(sizes) == len(operand), "slice_sizes does not match rank")
    assert sizes is not None
    ivd = gdn.index_vector_dim if gdn.index_vector_dim is not None else len(indices)
    _need(0 <= ivd <= len(indices), "index_vector_dim out of range")
    nvec = indices[ivd] if ivd < len(indices) else 1
    sim = gdn.start_index_map
    _need(len(sim) == nvec and len(set(sim)) == len(sim) and all(0 <= d < len(operand)
                                                                    for d in sim),
          "start_index_map does not match the index vector")
    collapsed, ob, ib = gdn.collapsed_slice_dims, gdn.operand_batching_dims, \
        gdn.start_indices_batching_dims
    _need(all(0 <= d < len(operand) and sizes[d] <= 1 for d in (*collapsed, *ob)),
          "collapsed or batching dims must have slice size 1")
    _need(len(ob) == len(ib) and not set(ob) & set(sim) and not set(ob) & set(collapsed),
          "operand batching dims invalid")
    _need(all(0 <= d < len(indices) and d != ivd for d in ib), "indices batching dims invalid")
    window = tuple(d for d in range(len(operand)) if d not in collapsed and d not in ob)
    _need(len(gdn.offset_dims) == len(window) and all(0 <= d < len(out) for d in gdn.offset_dims)
          and list(gdn.offset_dims) == sorted(set(gdn.offset_dims)), "offset_dims invalid")
    _need(all(0 <= s <= n for s, n in zip(sizes, operand)), "slice larger than the operand")
    batch_out = tuple(d for d in range(len(out)) if d not in gdn.offset_dims)
    index_batch = tuple(d for d in range(len(indices)) if d != ivd)
    _need(len(batch_out) == len(index_batch), "gather output rank is wrong")
    _need(all(out[o] == indices[i] for o, i in zip(batch_out, index_batch)),
          "gather batch sizes disagree")
    _need(all(out[o] == sizes[w] for o, w in zip(gdn.offset_dims, window)),
          "gather offset sizes disagree")
    _need(all(operand[a] == indices[b] for a, b in zip(ob, ib)), "batching sizes disagree")
    return _GatherLayout(operand, indices, out, tuple(sizes), gdn.offset_dims, window,
                         collapsed, sim, ivd, batch_out, index_batch, ob, ib)


def _gather_index_element(g: _GatherLayout, batch: Sequence[Expr], component: Expr
                          ) -> list[Expr]:
    """Index into the start indices tensor: batch coordinates plus the vector component."""
    out = list(batch)
    if g.ivd < len(g.indices):
        out.insert(g.ivd, component)
    return out


def _gather_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    g = _gather_layout(ctx)
    batch_vars: list[Expr] = [Dim(o) for o in g.batch_out]
    results: list[Expr] = []
    rts: list[tuple[int, int]] = []
    sources: list[tuple[int, list[Expr]]] = []
    for d in range(len(g.operand)):
        if d in g.operand_batching:
            t = g.indices_batching[g.operand_batching.index(d)]
            results.append(batch_vars[g.index_batch.index(t)])
            continue
        offset: Expr = Const(0)
        if d in g.window_dims:
            offset = Dim(g.offset_dims[g.window_dims.index(d)])
        if d in g.start_index_map:
            k = g.start_index_map.index(d)
            results.append(add(offset, RtVar(len(rts))))
            rts.append((0, g.operand[d] - g.slice_sizes[d]))
            sources.append((k, _gather_index_element(g, batch_vars, Const(k))))
        else:
            results.append(offset)
    m = _map(results, _box(g.out), rts=rts)
    src = ctx.operands[1]
    _need(src is not None, "the indices operand is not known")
    assert src is not None
    runtime = tuple(RuntimeVar(src, _map(index, m.dims)) for _k, index in sources)
    operand = fold_known_values(OperandIndexing(m, runtime))
    nvec = g.indices[g.ivd] if g.ivd < len(g.indices) else 0
    comp: Expr = Symbol(0)
    idx = _gather_index_element(g, batch_vars, comp)
    indices = _map(idx, _box(g.out), [(0, nvec - 1)] if g.ivd < len(g.indices) else [])
    return [[operand], [_plain(indices)]]


def _gather_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    g = _gather_layout(ctx)
    results: list[Expr] = [Const(0)] * len(g.out)
    ranges: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []

    def fresh(size: int) -> Expr:
        ranges.append((0, size - 1))
        return Symbol(len(ranges) - 1)

    if input_id == 1:
        # an index element steers the whole slice of its batch position
        kept = [Dim(i) for i in g.index_batch]
        for o, v in zip(g.batch_out, kept):
            results[o] = v
        for o in g.offset_dims:
            results[o] = fresh(g.out[o])
        return [[_plain(_map(results, _box(g.indices), ranges))]]
    # Operand element -> every output element that may read it, for any start index
    # (the start indices are runtime values that vary over the batch).
    domain = [(0, n - 1) for n in g.operand]
    tied: dict[int, Expr] = {}
    for d, t in zip(g.operand_batching, g.indices_batching):
        tied[g.batch_out[g.index_batch.index(t)]] = Dim(d)
    for o in g.batch_out:
        results[o] = tied[o] if o in tied else fresh(g.out[o])
    for d in range(len(g.operand)):
        if d in g.operand_batching:
            continue
        moving = d in g.start_index_map
        if d in g.window_dims:
            o = g.offset_dims[g.window_dims.index(d)]
            if moving:
                s = fresh(g.slice_sizes[d])
                results[o] = s
                constraints.append((add(Dim(d), neg(s)), (0, g.operand[d] - g.slice_sizes[d])))
            else:
                results[o] = Dim(d)
                domain[d] = (0, min(g.operand[d], g.slice_sizes[d]) - 1)
        elif not moving:
            domain[d] = (0, min(0, g.operand[d] - 1))
    return [[_plain(_map(results, domain, ranges, constraints=constraints))]]


@dataclass(frozen=True)
class _ScatterLayout:
    n: int
    operand: tuple[int, ...]
    indices: tuple[int, ...]
    updates: tuple[int, ...]
    window_dims: tuple[int, ...]  # operand dims covered by update window dims, in order
    update_window: tuple[int, ...]
    update_scatter: tuple[int, ...]
    inserted: tuple[int, ...]
    to_operand: tuple[int, ...]
    ivd: int
    index_batch: tuple[int, ...]
    input_batching: tuple[int, ...]
    indices_batching: tuple[int, ...]


def _scatter_layout(ctx: OpContext) -> _ScatterLayout:
    sdn = ctx.instruction.scatter_dimension_numbers
    _need(ctx.num_operands >= 3 and ctx.num_operands % 2 == 1, "scatter operand count")
    n = ctx.num_operands // 2
    operand, indices, updates = ctx.in_dims(0), ctx.in_dims(n), ctx.in_dims(n + 1)
    for i in range(n):
        _need(ctx.in_dims(i) == operand and ctx.in_dims(n + 1 + i) == updates, "scatter shapes")
        _need(ctx.out_dims(i) == operand, "scatter output shape")
    ivd = sdn.index_vector_dim if sdn.index_vector_dim is not None else len(indices)
    _need(0 <= ivd <= len(indices), "index_vector_dim out of range")
    nvec = indices[ivd] if ivd < len(indices) else 1
    to_op = sdn.scatter_dims_to_operand_dims
    _need(len(to_op) == nvec and all(0 <= d < len(operand) for d in to_op), "scatter dims")
    ins, ib, sb = sdn.inserted_window_dims, sdn.input_batching_dims, \
        sdn.scatter_indices_batching_dims
    window = tuple(d for d in range(len(operand)) if d not in ins and d not in ib)
    uw = sdn.update_window_dims
    _need(len(uw) == len(window) and all(0 <= d < len(updates) for d in uw), "window dims")
    us = tuple(d for d in range(len(updates)) if d not in uw)
    index_batch = tuple(d for d in range(len(indices)) if d != ivd)
    _need(len(us) == len(index_batch), "scatter update rank is wrong")
    _need(all(updates[u] == indices[i] for u, i in zip(us, index_batch)), "scatter batch")
    _need(all(updates[u] <= operand[w] for u, w in zip(uw, window)), "update window too big")
    _need(len(ib) == len(sb) and all(0 <= d < len(indices) and d != ivd for d in sb), "batching")
    return _ScatterLayout(n, operand, indices, updates, window, tuple(uw), us, tuple(ins),
                          tuple(to_op), ivd, index_batch, tuple(ib), tuple(sb))


def _scatter_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    s = _scatter_layout(ctx)
    out = s.operand
    # Which update elements may land on an output element, for any in-bounds start index
    # (scatter skips windows that do not fit; it never clamps).
    results: list[Expr] = [Const(0)] * len(s.updates)
    ranges: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []

    def fresh(size: int) -> Expr:
        ranges.append((0, size - 1))
        return Symbol(len(ranges) - 1)

    for u in s.update_scatter:
        results[u] = fresh(s.updates[u])
    for d, t in zip(s.input_batching, s.indices_batching):
        results[s.update_scatter[s.index_batch.index(t)]] = Dim(d)
    domain = [(0, n - 1) for n in out]
    for d in range(len(out)):
        if d in s.input_batching:
            continue
        moving = d in s.to_operand
        if d in s.window_dims:
            u = s.update_window[s.window_dims.index(d)]
            size = s.updates[u]
            if moving:
                w = fresh(size)
                results[u] = w
                constraints.append((add(Dim(d), neg(w)), (0, out[d] - size)))
            else:
                results[u] = Dim(d)
                domain[d] = (0, min(out[d], size) - 1)
        elif not moving:
            domain[d] = (0, min(0, out[d] - 1))
    update = _plain(_map(results, domain, ranges, constraints=constraints))
    operands = [[_identity(out)] for _ in range(s.n)]
    indices = [_to_all(out, s.indices)]
    return [*operands, indices, *([update] for _ in range(s.n))]


def _scatter_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    s = _scatter_layout(ctx)
    out = s.operand
    if input_id < s.n:
        return [[_identity(out)] for _ in range(s.n)]
    if input_id == s.n:
        return [[_to_all(s.indices, out)] for _ in range(s.n)]
    results: list[Expr] = [Const(0)] * len(out)
    ranges: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []

    def fresh(size: int) -> Expr:
        ranges.append((0, size - 1))
        return Symbol(len(ranges) - 1)

    for d in range(len(out)):
        if d in s.input_batching:
            t = s.indices_batching[s.input_batching.index(d)]
            results[d] = Dim(s.update_scatter[s.index_batch.index(t)])
            continue
        moving = d in s.to_operand
        if d in s.window_dims:
            u = s.update_window[s.window_dims.index(d)]
            if moving:
                results[d] = add(Dim(u), fresh(out[d] - s.updates[u] + 1))
            else:
                results[d] = Dim(u)
        else:
            results[d] = fresh(out[d]) if moving else Const(0)
    m = _plain(_map(results, _box(s.updates), ranges, constraints=constraints))
    return [[m] for _ in range(s.n)]


# -- collectives -------------------------------------------------------------------------------


def _all_gather_setup(ctx: OpContext, output_id: int) -> tuple[int, int, tuple[int, ...]]:
    dims = ctx.instruction.dimensions or ()
    out = ctx.out_dims(output_id)
    src = ctx.in_dims(output_id)
    _need(len(ctx.out_leaves) == ctx.num_operands, "all-gather has one output per operand")
    _need(len(dims) == 1 and 0 <= dims[0] < len(out) and len(src) == len(out), "dimensions")
    d = dims[0]
    _need(src[d] > 0 and out[d] % src[d] == 0, "all-gather sizes disagree")
    _need(all(src[k] == out[k] for k in range(len(out)) if k != d), "all-gather shapes")
    return d, src[d], out


def _all_gather_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    d, n, out = _all_gather_setup(ctx, output_id)
    results = [mod(Dim(k), n) if k == d and out[d] != n else Dim(k) for k in range(len(out))]
    m = _map(results, _box(out))
    replica = _map([floordiv(Dim(d), n)], _box(out))
    return [[OperandIndexing(m, replica=replica)] if i == output_id else []
            for i in range(ctx.num_operands)]


def _all_gather_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    d, n, out = _all_gather_setup(ctx, input_id)
    src = ctx.in_dims(input_id)
    # the local operand lands at (rank in group) * n + x; the rank is not known statically
    results = [add(mul(Symbol(0), n), Dim(k)) if k == d else Dim(k) for k in range(len(src))]
    m = _map(results, _box(src), [(0, out[d] // n - 1)])
    return [[_plain(m)] if k == input_id else [] for k in range(len(ctx.out_leaves))]


# -- scan --------------------------------------------------------------------------------------


def _dependencies(comp: HloComputation) -> list[set[int]]:
    """For each leaf of the root, the parameter numbers it depends on (graph reachability)."""
    deps: dict[str, set[int]] = {}
    for inst in comp.instructions:
        own: set[int] = set()
        if inst.parameter_number is not None:
            own.add(inst.parameter_number)
        for name in inst.operands:
            own |= deps.get(name, set())
        deps[inst.name] = own
    root = comp.root
    if root.opcode == "tuple":
        return [deps[name] for name in root.operands]
    return [deps[root.name]]


def _scan_setup(ctx: OpContext) -> tuple[int, int, int, bool, list[set[int]]]:
    """(inputs, carries, scan dimension, reverse, dependencies of each body output)."""
    inst = ctx.instruction
    dims = inst.dimensions or ()
    _need(len(dims) == 1, "scan needs one dimension")
    carries = inst.attributes.get("num_carries", 0)
    _need(isinstance(carries, int) and 0 <= carries <= ctx.num_operands, "num_carries")
    assert isinstance(carries, int)
    n_in = ctx.num_operands - carries
    n_out = len(ctx.out_leaves) - carries
    _need(n_out >= 0, "scan has fewer outputs than carries")
    reverse = inst.attributes.get("is_reverse") in (True, "true")
    names = inst.called_computations
    _need(ctx.module is not None and len(names) == 1, "scan needs its computation")
    assert ctx.module is not None
    body = ctx.module.computation(names[0])
    deps = _dependencies(body)
    _need(len(deps) == n_out + carries, "scan body returns the wrong number of values")
    return n_in, carries, dims[0], reverse, deps


def _walk(start: frozenset[int], feeds: dict[int, set[int]], limit: int
          ) -> tuple[list[frozenset[int]], int]:
    """R_0 = start, R_{l+1} = the carries feeding R_l, for l = 0.. until the sequence repeats
    (at most 2^carries steps) or passes `limit`. Returns (R_0..R_m, j): if the walk stopped on a
    repeat, R_l = R_{j + (l - j) mod (m + 1 - j)} for every l > m."""
    seen: dict[frozenset[int], int] = {}
    seq: list[frozenset[int]] = []
    cur = start
    while cur not in seen and len(seq) <= limit:
        seen[cur] = len(seq)
        seq.append(cur)
        cur = frozenset(x for c in cur for x in feeds[c])
    return seq, seen.get(cur, len(seq))


def _walk_at(seq: list[frozenset[int]], j: int, n: int) -> frozenset[int]:
    if n < len(seq):
        return seq[n]
    return seq[j + (n - j) % (len(seq) - j)]


def _walk_hull(start: frozenset[int], feeds: dict[int, set[int]], limit: int,
               pred: Callable[[frozenset[int]], bool]) -> tuple[int, int] | None:
    """Smallest and largest l in [0, limit] with `pred(R_l)`; None when there is none."""
    seq, j = _walk(start, feeds, limit)
    hits = [n for n, r in enumerate(seq) if pred(r)]
    if not hits:
        return None
    if len(seq) > limit or j >= len(seq):
        return hits[0], hits[-1]
    period = len(seq) - j
    return hits[0], max(n + ((limit - n) // period) * period if n >= j else n for n in hits)


def _scan_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Scan: body outputs are the scanned outputs then the new carries; operands the scanned
    inputs then the initial carries. Which elements are read follows the body's data flow
    (reachability) step by step: carries feed carries of the next step. Positions are exact
    when the reachable chain lengths form an interval (always with one carry); other dims of
    non-scalar slices are covered whole."""
    n_in, nc, axis, reverse, deps = _scan_setup(ctx)
    n_out = len(ctx.out_leaves) - nc
    out = ctx.out_dims(output_id)
    for i in range(n_in):
        _need(axis < len(ctx.in_dims(i)), "scan dimension out of range")
    length = ctx.in_dims(0)[axis] if n_in else 0
    _need(all(ctx.in_dims(i)[axis] == length for i in range(n_in)), "scan lengths differ")
    carry_of = {n_in + c: c for c in range(nc)}

    def inputs_of(k: int) -> set[int]:
        return {p for p in deps[k] if p < n_in}

    def carries_of(k: int) -> frozenset[int]:
        return frozenset(carry_of[p] for p in deps[k] if p in carry_of)

    feeds = {c: set(carries_of(n_out + c)) for c in range(nc)}

    def feeds_input(i: int) -> Callable[[frozenset[int]], bool]:
        """`_walk_hull` predicate: some carry of the set feeds input i."""
        return lambda r: any(i in inputs_of(n_out + c) for c in r)

    def has_carry(c: int) -> Callable[[frozenset[int]], bool]:
        """`_walk_hull` predicate: carry c is in the set."""
        return lambda r: c in r

    def step_to_pos(step: Expr) -> Expr:
        return add(neg(step), length - 1) if reverse else step

    def input_map(i: int, steps: tuple[Expr, int, int] | None, dims_out: Sequence[int]
                  ) -> OperandIndexing:
        """Input i read at scan steps `t - k` for k in [lo, hi] (steps=(t, lo, hi)) or at every
        step (steps=None); other dims whole unless the slice is a scalar and the output is a
        scanned output of the same shape."""
        src = ctx.in_dims(i)
        results: list[Expr] = []
        ranges: list[tuple[int, int]] = []
        constraints: list[tuple[Expr, tuple[int, int]]] = []
        scalar = len(src) == 1 and len(dims_out) == 1 and steps is not None
        for k, n in enumerate(src):
            if k == axis and steps is not None:
                t, lo, hi = steps
                if lo == hi == 0:
                    results.append(Dim(axis))
                    continue
                s = Symbol(len(ranges))
                ranges.append((0, n - 1))
                results.append(s)
                step_s = step_to_pos(s)
                constraints.append((add(t, neg(step_s)), (lo, hi)))
            elif scalar:
                results.append(Dim(k))
            else:
                results.append(Symbol(len(ranges)))
                ranges.append((0, n - 1))
        return _plain(_map(results, _box(dims_out), ranges, constraints=constraints))

    def init_map(c: int, dims_out: Sequence[int], at: tuple[int, int] | None
                 ) -> OperandIndexing:
        m = _to_all(dims_out, ctx.in_dims(n_in + c)).map
        if at is not None:  # only at scan steps in [lo, hi]
            t = step_to_pos(Dim(axis))
            m = m.add_constraint(t, at)
        return _plain(m)

    maps: list[Maps] = []
    if output_id < n_out:
        _need(axis < len(out) and out[axis] == length, "scan output length differs")
        t = step_to_pos(Dim(axis))  # the step that produced this position
        start = carries_of(output_id)
        for i in range(n_in):
            group: Maps = []
            if i in inputs_of(output_id):
                group.append(input_map(i, (t, 0, 0), out))
            hull = _walk_hull(start, feeds, length - 1, feeds_input(i))
            if hull is not None:  # through carries: read at step t - 1 - l
                group.append(input_map(i, (t, hull[0] + 1, hull[1] + 1), out))
            maps.append(group)
        for c in range(nc):
            hull = _walk_hull(start, feeds, length - 1, has_carry(c))
            maps.append([init_map(c, out, hull)] if hull is not None else [])
        return maps
    c_out = output_id - n_out
    if length == 0 and n_in:
        return [[] for _ in range(n_in)] + [[init_map(c, out, None)] if c == c_out else []
                                            for c in range(nc)]
    start = frozenset({c_out})
    for i in range(n_in):
        hull = _walk_hull(start, feeds, length - 1, feeds_input(i))
        if hull is None:
            maps.append([])
            continue
        src = ctx.in_dims(i)
        lo_pos, hi_pos = length - 1 - hull[1], length - 1 - hull[0]  # steps read
        if reverse:
            lo_pos, hi_pos = length - 1 - hi_pos, length - 1 - lo_pos
        ranges = [(lo_pos, hi_pos) if k == axis else (0, n - 1) for k, n in enumerate(src)]
        maps.append([_plain(_map([Symbol(k) for k in range(len(src))], _box(out), ranges))])
    seq, j = _walk(start, feeds, length)
    inits = _walk_at(seq, j, length) if length else start  # carries at step 0
    for c in range(nc):
        maps.append([init_map(c, out, None)] if c in inits else [])
    return maps


def invert_projection(m: IndexingMap, target: Sequence[int]) -> IndexingMap | None:
    """The inverse relation of a map whose results are distinct variables or constants (no
    runtime variables): `{(x, d) : (d, x) in m}` as a map from a `target`-shaped index x.

    Each variable that is a result becomes the new dimension it lands in (its bounds
    intersected with the target's); every other variable, old dimensions included, becomes a
    range variable; a constant result pins the new dimension. None when `m` is not of that form.
    """
    if m.is_undefined or m.num_rt_vars or len(target) != m.num_results:
        return None
    seen: dict[Expr, int] = {}
    for i, r in enumerate(m.results):
        if isinstance(r, (Dim, Symbol)) and r not in seen:
            seen[r] = i
        elif not isinstance(r, Const):
            return None
    dims: list[Interval] = [Interval(0, n - 1) for n in target]
    for i, r in enumerate(m.results):
        if isinstance(r, Const):
            dims[i] = dims[i].intersect(Interval(r.value, r.value))
    rename: dict[Expr, Expr] = {}
    ranges: list[Interval] = []
    for v, info in zip(m.variables, m.all_vars):
        if v in seen:
            rename[v] = Dim(seen[v])
            dims[seen[v]] = dims[seen[v]].intersect(info.bounds)
        else:
            rename[v] = Symbol(len(ranges))
            ranges.append(info.bounds)
    results = [rename[Dim(k)] for k in range(m.num_dims)]
    constraints = [(e.substitute(rename), iv) for e, iv in m.constraints.items()]
    return _map(results, dims, ranges, constraints=constraints)


def _scan_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    """The inverse of the output-to-input relations (their results are variables only)."""
    out: list[Maps] = []
    target = ctx.in_dims(input_id)
    for k in range(len(ctx.out_leaves)):
        group: Maps = []
        for m in _scan_o2i(ctx, k)[input_id]:
            inv = invert_projection(m.map, target)
            if inv is None:
                raise Malformed("scan map is not a projection")
            group.append(_plain(inv))
        out.append(group)
    return out


# -- called computations -----------------------------------------------------------------------


def _called_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    from verifidx.hlo.computation_maps import called_output_to_input

    return called_output_to_input(ctx, output_id)


def _called_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    from verifidx.hlo.computation_maps import called_input_to_output

    return called_input_to_output(ctx, input_id)


# -- the table ---------------------------------------------------------------------------------

NO_OPERAND_OPS = ("parameter", "constant", "iota", "partition-id", "replica-id",
                  "rng-get-and-update-state")

OP_TABLE: dict[str, OpRule] = {
    **{op: OpRule(_elementwise_o2i, _elementwise_i2o) for op in ELEMENTWISE},
    **{op: OpRule(_no_operands, None) for op in NO_OPERAND_OPS},
    "all-reduce": OpRule(_pairwise_o2i, _pairwise_i2o, "elementwise on each replica"),
    "bitcast-convert": OpRule(_bitcast_convert_o2i, _bitcast_convert_i2o),
    "rng": OpRule(_scalars_o2i, _scalars_i2o),
    "tuple": OpRule(_tuple_o2i, _tuple_i2o),
    "get-tuple-element": OpRule(_gte_o2i, _gte_i2o),
    "opt-barrier": OpRule(_passthrough_o2i, _passthrough_i2o),
    "get-dimension-size": OpRule(_no_operands, None, "reads the shape, no element"),
    "set-dimension-size": OpRule(_set_dimension_size_o2i, _set_dimension_size_i2o),
    "add-dependency": OpRule(_add_dependency_o2i, _add_dependency_i2o),
    "broadcast": OpRule(_broadcast_o2i, _broadcast_i2o),
    "transpose": OpRule(_transpose_o2i, _transpose_i2o),
    "reverse": OpRule(_reverse_o2i, _reverse_i2o),
    "slice": OpRule(_slice_o2i, _slice_i2o),
    "pad": OpRule(_pad_o2i, _pad_i2o),
    "concatenate": OpRule(_concat_o2i, _concat_i2o),
    "reshape": OpRule(_reshape_o2i, _reshape_i2o),
    "bitcast": OpRule(_bitcast_o2i, _bitcast_i2o),
    "reduce": OpRule(_reduce_o2i, _reduce_i2o),
    "reduce-window": OpRule(_reduce_window_o2i, _reduce_window_i2o),
    "sort": OpRule(_sort_o2i, _sort_i2o),
    "dot": OpRule(_dot_o2i, _dot_i2o),
    "scaled-dot": OpRule(_scaled_dot_o2i, _scaled_dot_i2o),
    "convolution": OpRule(_conv_o2i, _conv_i2o),
    "dynamic-slice": OpRule(_dynamic_slice_o2i, _dynamic_slice_i2o),
    "dynamic-update-slice": OpRule(_dus_o2i, _dus_i2o),
    "gather": OpRule(_gather_o2i, _gather_i2o),
    "scatter": OpRule(_scatter_o2i, _scatter_i2o),
    "all-gather": OpRule(_all_gather_o2i, _all_gather_i2o),
    "scan": OpRule(_scan_o2i, _scan_i2o),
    "fusion": OpRule(_called_o2i, _called_i2o, "composition of the fused computation"),
    "call": OpRule(_called_o2i, _called_i2o, "composition of the called computation"),
}
"""Opcode -> how to index it. Anything not listed (custom-call, while, conditional,
triangular-solve, cholesky, fft, all-to-all, reduce-scatter, select-and-scatter, send/recv,
async ops, ...) has unknown indexing for every operand."""

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
    ("scan", "out2in"): "dependencies through the loop body are found by reachability; "
    "positions are exact when the chain lengths through carries form an interval, and other "
    "dimensions of non-scalar slices are covered whole",
}


def restrict_to_sizes(ctx: OpContext, result: HloInstructionIndexing, index: int
                      ) -> HloInstructionIndexing:
    """Per-op maps valid at every size of the dynamic dimensions (`verifidx.hlo.dynamic`)."""
    from verifidx.hlo.dynamic import restrict_to_sizes as restrict

    return restrict(ctx, result, index)


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
        rule = OP_TABLE.get(ctx.opcode)
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
    `verifidx.layout.physical_mode_map` defines them (tiles ignored, as XLA does)."""
    try:
        from verifidx import layout
    except ImportError:
        raise UnsupportedError("use_physical_layout needs verifidx.layout") from None

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
            new.append(OperandIndexing(layout.physical_mode_map(m.map, src, dst,
                                                                include_tiling=False)))
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
    rule = OP_TABLE.get(ctx.opcode)
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
    rule = OP_TABLE.get(ctx.opcode)
    result = _run(ctx, rule.in2out if rule else None, input_id, len(ctx.out_leaves), "input")
    result = restrict_to_sizes(ctx, result, input_id)
    return _physical(result, ctx, input_id) if use_physical_layout else result
