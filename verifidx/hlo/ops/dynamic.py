"""Ops indexed by runtime values: dynamic-slice and dynamic-update-slice, whose start indices
become runtime variables with their provenance (`verifidx.hlo.runtime`)."""

from __future__ import annotations

from verifidx.core.expr import Const, Dim, Expr, RtVar, add, neg
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo.ops.common import (
    Malformed,
    Maps,
    OpContext,
    box,
    build_map,
    identity_indexing,
    need,
    reads_exactly,
    to_all,
)
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, fold_known_values

# -- dynamic-slice, dynamic-update-slice ------------------------------------------------------


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
        out.append(RuntimeVar(src, build_map(index, domain.dims, domain.range_vars)))
    return out


def _dynamic_slice_setup(ctx: OpContext) -> tuple[tuple[int, ...], tuple[int, ...]]:
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    sizes = ctx.instruction.dynamic_slice_sizes or out
    need(len(sizes) == len(src) == len(out) and tuple(sizes) == out, "dynamic_slice_sizes")
    need(all(0 <= s <= n for s, n in zip(sizes, src)), "slice larger than the operand")
    return src, out


def dynamic_slice_o2i(ctx: OpContext, output_id: int, fold: bool = True) -> list[Maps]:
    """`fold=False` keeps every start index a runtime variable (for callers that fold with
    sizes, `verifidx.hlo.sized_ops`)."""
    src, out = _dynamic_slice_setup(ctx)
    rank = len(src)
    results = [add(Dim(k), RtVar(k)) for k in range(rank)]
    rts = [(0, src[k] - out[k]) for k in range(rank)]
    m = build_map(results, box(out), rts=rts)
    operand = OperandIndexing(m, tuple(_offset_sources(ctx, 1, rank, m)))
    offsets = [[to_all(out, ctx.in_dims(i))] for i in range(1, ctx.num_operands)]
    return [[fold_known_values(operand) if fold else operand], *offsets]


def dynamic_slice_i2o(ctx: OpContext, input_id: int, fold: bool = True) -> list[Maps]:
    src, out = _dynamic_slice_setup(ctx)
    if input_id > 0:
        return [[to_all(ctx.in_dims(input_id), out)]]
    rank = len(src)
    results = [add(Dim(k), neg(RtVar(k))) for k in range(rank)]
    rts = [(0, src[k] - out[k]) for k in range(rank)]
    constraints = [(results[k], (0, out[k] - 1)) for k in range(rank)]
    m = build_map(results, box(src), rts=rts, constraints=constraints)
    operand = OperandIndexing(m, tuple(_offset_sources(ctx, 1, rank, m)))
    return [[fold_known_values(operand) if fold else operand]]


def _dus_setup(ctx: OpContext) -> tuple[tuple[int, ...], tuple[int, ...]]:
    out, upd = ctx.out_dims(0), ctx.in_dims(1)
    need(ctx.in_dims(0) == out and len(upd) == len(out), "dynamic-update-slice shapes")
    need(all(u <= n for u, n in zip(upd, out)), "update larger than the operand")
    return out, upd


def _dus_starts(out: tuple[int, ...], upd: tuple[int, ...],
                starts: list[int] | None) -> list[tuple[int, int]]:
    return [(0, out[k] - upd[k] if starts is None else starts[k]) for k in range(len(out))]


def dus_o2i(ctx: OpContext, output_id: int, fold: bool = True,
            starts: list[int] | None = None) -> list[Maps]:
    """`fold=False` keeps every start index a runtime variable and `starts` gives each one's
    largest value (for callers that clamp to sizes, `verifidx.hlo.sized_ops`)."""
    out, upd = _dus_setup(ctx)
    rank = len(out)
    offsets = [[to_all(out, ctx.in_dims(i))] for i in range(2, ctx.num_operands)]
    if fold and reads_exactly():
        return [*_dus_exact_o2i(ctx, out, upd), *offsets]
    results = [add(Dim(k), neg(RtVar(k))) for k in range(rank)]
    m = build_map(results, box(out), rts=_dus_starts(out, upd, starts))
    update = OperandIndexing(m, tuple(_offset_sources(ctx, 2, rank, m)))
    return [[identity_indexing(out)], [fold_known_values(update) if fold else update], *offsets]


def _dus_exact_o2i(ctx: OpContext, out: tuple[int, ...], upd: tuple[int, ...]) -> list[Maps]:
    """An output element reads the update at `d - rt` where `d - rt` lies in the update's box
    (`rt` the clamped start) and the operand at `d` elsewhere: outside the window in some
    dimension `k`, one piece below it and one above (pieces may overlap: a union). Where the
    update covers dimension `k` whole, its pieces are empty and left out; where it covers
    every dimension, the operand is not read."""
    rank = len(out)
    rts = _dus_starts(out, upd, None)
    moved = [add(Dim(k), neg(RtVar(k))) for k in range(rank)]
    inside = build_map(moved, box(out), rts=rts,
                       constraints=[(moved[k], (0, upd[k] - 1)) for k in range(rank)])
    sources = tuple(_offset_sources(ctx, 2, rank, inside))
    pieces: Maps = []
    for k in range(rank):
        if upd[k] == out[k]:
            continue
        for window in ((-out[k], -1), (upd[k], out[k] - 1)):
            piece = build_map([Dim(j) for j in range(rank)], box(out), rts=rts,
                              constraints=[(moved[k], window)])
            pieces.append(fold_known_values(OperandIndexing(piece, sources)))
    return [pieces, [fold_known_values(OperandIndexing(inside, sources))]]


def dus_i2o(ctx: OpContext, input_id: int, fold: bool = True,
            starts: list[int] | None = None) -> list[Maps]:
    out, upd = _dus_setup(ctx)
    rank = len(out)
    if input_id == 0:
        return [[identity_indexing(out)]]
    if input_id >= 2:
        return [[to_all(ctx.in_dims(input_id), out)]]
    results = [add(Dim(k), RtVar(k)) for k in range(rank)]
    m = build_map(results, box(upd), rts=_dus_starts(out, upd, starts))
    update = OperandIndexing(m, tuple(_offset_sources(ctx, 2, rank, m)))
    return [[fold_known_values(update) if fold else update]]
