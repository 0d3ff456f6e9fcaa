"""Collective ops whose maps are not elementwise: all-gather (the replica's slice of the
result). all-reduce and collective-permute are elementwise on each replica."""

from __future__ import annotations

from verifidx.core.expr import Dim, Symbol, add, floordiv, mod, mul
from verifidx.hlo.ops.common import Maps, OpContext, box, build_map, need, plain
from verifidx.hlo.runtime import OperandIndexing

# -- collectives -------------------------------------------------------------------------------


def _all_gather_setup(ctx: OpContext, output_id: int) -> tuple[int, int, tuple[int, ...]]:
    dims = ctx.instruction.dimensions or ()
    out = ctx.out_dims(output_id)
    src = ctx.in_dims(output_id)
    need(len(ctx.out_leaves) == ctx.num_operands, "all-gather has one output per operand")
    need(len(dims) == 1 and 0 <= dims[0] < len(out) and len(src) == len(out), "dimensions")
    d = dims[0]
    need(src[d] > 0 and out[d] % src[d] == 0, "all-gather sizes disagree")
    need(all(src[k] == out[k] for k in range(len(out)) if k != d), "all-gather shapes")
    return d, src[d], out


def all_gather_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    d, n, out = _all_gather_setup(ctx, output_id)
    results = [mod(Dim(k), n) if k == d and out[d] != n else Dim(k) for k in range(len(out))]
    m = build_map(results, box(out))
    replica = build_map([floordiv(Dim(d), n)], box(out))
    return [[OperandIndexing(m, replica=replica)] if i == output_id else []
            for i in range(ctx.num_operands)]


def all_gather_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    d, n, out = _all_gather_setup(ctx, input_id)
    src = ctx.in_dims(input_id)
    # the local operand lands at (rank in group) * n + x; the rank is not known statically
    results = [add(mul(Symbol(0), n), Dim(k)) if k == d else Dim(k) for k in range(len(src))]
    m = build_map(results, box(src), [(0, out[d] // n - 1)])
    return [[plain(m)] if k == input_id else [] for k in range(len(ctx.out_leaves))]
