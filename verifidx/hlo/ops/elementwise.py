"""Elementwise ops and their friends: the same index in every operand, bitcast-convert between
element types of different widths, ops without operands, and ops whose every output element
reads every operand element (rng, rng-bit-generator)."""

from __future__ import annotations

from verifidx.core.expr import Dim, Symbol
from verifidx.hlo.ops.common import (
    Malformed,
    Maps,
    OpContext,
    box,
    build_map,
    identity_indexing,
    need,
    plain,
    to_all,
    to_scalar,
)

# -- elementwise and friends -------------------------------------------------------------------

ELEMENTWISE: frozenset[str] = frozenset(
    """abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp count-leading-zeros
    compare complex convert copy cosine cosh divide erf exponential exponential-minus-one
    floor imag is-finite log log-plus-one logistic map maximum minimum multiply negate not
    or popcnt power real reduce-precision remainder round-nearest-afz round-nearest-even
    rsqrt select shift-left shift-right-arithmetic shift-right-logical sign sine sinh sqrt
    stochastic-convert subtract tan tanh xor collective-permute domain""".split()
)
"""Ops whose output element reads the element at the same index of every operand (a scalar
operand of `select`/`clamp` is read by every element)."""


def elementwise_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out = ctx.out_dims(output_id)
    maps: list[Maps] = []
    for i in range(ctx.num_operands):
        dims = ctx.in_dims(i)
        if dims == out:
            maps.append([identity_indexing(out)])
        elif not dims:
            maps.append([to_scalar(out)])
        else:
            raise Malformed(f"operand {i} has shape {list(dims)}, output {list(out)}")
    return maps


def elementwise_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, out = ctx.in_dims(input_id), ctx.out_dims(0)
    if dims == out:
        return [[identity_indexing(out)]]
    need(not dims, f"operand {input_id} has shape {list(dims)}, output {list(out)}")
    return [[to_all((), out)]]


def pairwise_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Variadic ops whose output k reads operand k elementwise (all-reduce)."""
    out = ctx.out_dims(output_id)
    need(ctx.num_operands == len(ctx.out_leaves), "one output per operand expected")
    need(ctx.in_dims(output_id) == out, "operand and output shapes differ")
    return [[identity_indexing(out)] if i == output_id else [] for i in range(ctx.num_operands)]


def pairwise_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    need(ctx.num_operands == len(ctx.out_leaves), "one output per operand expected")
    dims = ctx.in_dims(input_id)
    need(ctx.out_dims(input_id) == dims, "operand and output shapes differ")
    return [[identity_indexing(dims)] if k == input_id else [] for k in range(len(ctx.out_leaves))]


def bitcast_convert_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out, dims = ctx.out_dims(output_id), ctx.in_dims(0)
    if out == dims:
        return [[identity_indexing(out)]]
    if len(out) == len(dims) + 1 and out[:-1] == dims:  # to a narrower type: extra minor dim
        return [[plain(build_map([Dim(i) for i in range(len(dims))], box(out)))]]
    if len(dims) == len(out) + 1 and dims[:-1] == out:  # to a wider type: reads a minor row
        results = [*(Dim(i) for i in range(len(out))), Symbol(0)]
        return [[plain(build_map(results, box(out), box(dims[-1:])))]]
    raise Malformed(f"bitcast-convert from {list(dims)} to {list(out)}")


def bitcast_convert_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    out, dims = ctx.out_dims(0), ctx.in_dims(0)
    if out == dims:
        return [[identity_indexing(out)]]
    if len(out) == len(dims) + 1 and out[:-1] == dims:
        results = [*(Dim(i) for i in range(len(dims))), Symbol(0)]
        return [[plain(build_map(results, box(dims), box(out[-1:])))]]
    if len(dims) == len(out) + 1 and dims[:-1] == out:
        return [[plain(build_map([Dim(i) for i in range(len(out))], box(dims)))]]
    raise Malformed(f"bitcast-convert from {list(dims)} to {list(out)}")


def no_operands(ctx: OpContext, output_id: int) -> list[Maps]:
    ctx.out_dims(output_id)
    return [[] for _ in range(ctx.num_operands)]


def scalars_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Every output element reads every operand element: rng's scalar parameters, and the state
    of rng-bit-generator, whose words (key and counter) all enter every generated value."""
    out = ctx.out_dims(output_id)
    return [[to_all(out, ctx.in_dims(i))] for i in range(ctx.num_operands)]


def scalars_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims = ctx.in_dims(input_id)
    return [[to_all(dims, ctx.out_dims(k))] for k in range(len(ctx.out_leaves))]
