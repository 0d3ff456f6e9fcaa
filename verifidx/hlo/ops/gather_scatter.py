"""gather and scatter: the operand indices come from an index tensor, so starts are runtime
values (every in-bounds start where the batch varies)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verifidx.core.expr import Const, Dim, Expr, RtVar, Symbol, add, neg
from verifidx.hlo.ops.common import (
    Maps,
    OpContext,
    box,
    build_map,
    identity_indexing,
    need,
    plain,
    to_all,
)
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, fold_known_values

# -- gather, scatter --------------------------------------------------------------------------


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
    need(ctx.num_operands == 2, "gather has two operands")
    operand, indices, out = ctx.in_dims(0), ctx.in_dims(1), ctx.out_dims(0)
    sizes = inst.slice_sizes
    need(sizes is not None and len(sizes) == len(operand), "slice_sizes does not match rank")
    assert sizes is not None
    ivd = gdn.index_vector_dim if gdn.index_vector_dim is not None else len(indices)
    need(0 <= ivd <= len(indices), "index_vector_dim out of range")
    nvec = indices[ivd] if ivd < len(indices) else 1
    sim = gdn.start_index_map
    need(len(sim) == nvec and len(set(sim)) == len(sim) and all(0 <= d < len(operand)
                                                                    for d in sim),
         "start_index_map does not match the index vector")
    collapsed, ob, ib = gdn.collapsed_slice_dims, gdn.operand_batching_dims, \
        gdn.start_indices_batching_dims
    need(all(0 <= d < len(operand) and sizes[d] <= 1 for d in (*collapsed, *ob)),
         "collapsed or batching dims must have slice size 1")
    need(len(ob) == len(ib) and not set(ob) & set(sim) and not set(ob) & set(collapsed),
         "operand batching dims invalid")
    need(all(0 <= d < len(indices) and d != ivd for d in ib), "indices batching dims invalid")
    window = tuple(d for d in range(len(operand)) if d not in collapsed and d not in ob)
    need(len(gdn.offset_dims) == len(window) and all(0 <= d < len(out) for d in gdn.offset_dims)
         and list(gdn.offset_dims) == sorted(set(gdn.offset_dims)), "offset_dims invalid")
    need(all(0 <= s <= n for s, n in zip(sizes, operand)), "slice larger than the operand")
    batch_out = tuple(d for d in range(len(out)) if d not in gdn.offset_dims)
    index_batch = tuple(d for d in range(len(indices)) if d != ivd)
    need(len(batch_out) == len(index_batch), "gather output rank is wrong")
    need(all(out[o] == indices[i] for o, i in zip(batch_out, index_batch)),
         "gather batch sizes disagree")
    need(all(out[o] == sizes[w] for o, w in zip(gdn.offset_dims, window)),
         "gather offset sizes disagree")
    need(all(operand[a] == indices[b] for a, b in zip(ob, ib)), "batching sizes disagree")
    return _GatherLayout(operand, indices, out, tuple(sizes), gdn.offset_dims, window,
                         collapsed, sim, ivd, batch_out, index_batch, ob, ib)


def _gather_index_element(g: _GatherLayout, batch: Sequence[Expr], component: Expr
                          ) -> list[Expr]:
    """Index into the start indices tensor: batch coordinates plus the vector component."""
    out = list(batch)
    if g.ivd < len(g.indices):
        out.insert(g.ivd, component)
    return out


def gather_o2i(ctx: OpContext, output_id: int, fold: bool = True) -> list[Maps]:
    """`fold=False` keeps every start index a runtime variable (for callers that fold with
    sizes, `verifidx.hlo.sized_ops`)."""
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
    m = build_map(results, box(g.out), rts=rts)
    src = ctx.operands[1]
    need(src is not None, "the indices operand is not known")
    assert src is not None
    runtime = tuple(RuntimeVar(src, build_map(index, m.dims)) for _k, index in sources)
    operand = OperandIndexing(m, runtime)
    if fold:
        operand = fold_known_values(operand)
    nvec = g.indices[g.ivd] if g.ivd < len(g.indices) else 0
    comp: Expr = Symbol(0)
    idx = _gather_index_element(g, batch_vars, comp)
    indices = build_map(idx, box(g.out), [(0, nvec - 1)] if g.ivd < len(g.indices) else [])
    return [[operand], [plain(indices)]]


def gather_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
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
        return [[plain(build_map(results, box(g.indices), ranges))]]
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
    return [[plain(build_map(results, domain, ranges, constraints=constraints))]]


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
    need(ctx.num_operands >= 3 and ctx.num_operands % 2 == 1, "scatter operand count")
    n = ctx.num_operands // 2
    operand, indices, updates = ctx.in_dims(0), ctx.in_dims(n), ctx.in_dims(n + 1)
    for i in range(n):
        need(ctx.in_dims(i) == operand and ctx.in_dims(n + 1 + i) == updates, "scatter shapes")
        need(ctx.out_dims(i) == operand, "scatter output shape")
    ivd = sdn.index_vector_dim if sdn.index_vector_dim is not None else len(indices)
    need(0 <= ivd <= len(indices), "index_vector_dim out of range")
    nvec = indices[ivd] if ivd < len(indices) else 1
    to_op = sdn.scatter_dims_to_operand_dims
    need(len(to_op) == nvec and all(0 <= d < len(operand) for d in to_op), "scatter dims")
    ins, ib, sb = sdn.inserted_window_dims, sdn.input_batching_dims, \
        sdn.scatter_indices_batching_dims
    window = tuple(d for d in range(len(operand)) if d not in ins and d not in ib)
    uw = sdn.update_window_dims
    need(len(uw) == len(window) and all(0 <= d < len(updates) for d in uw), "window dims")
    us = tuple(d for d in range(len(updates)) if d not in uw)
    index_batch = tuple(d for d in range(len(indices)) if d != ivd)
    need(len(us) == len(index_batch), "scatter update rank is wrong")
    need(all(updates[u] == indices[i] for u, i in zip(us, index_batch)), "scatter batch")
    need(all(updates[u] <= operand[w] for u, w in zip(uw, window)), "update window too big")
    need(len(ib) == len(sb) and all(0 <= d < len(indices) and d != ivd for d in sb), "batching")
    return _ScatterLayout(n, operand, indices, updates, window, tuple(uw), us, tuple(ins),
                          tuple(to_op), ivd, index_batch, tuple(ib), tuple(sb))


def scatter_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
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
    update = plain(build_map(results, domain, ranges, constraints=constraints))
    operands = [[identity_indexing(out)] for _ in range(s.n)]
    indices = [to_all(out, s.indices)]
    return [*operands, indices, *([update] for _ in range(s.n))]


def scatter_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    s = _scatter_layout(ctx)
    out = s.operand
    if input_id < s.n:
        return [[identity_indexing(out)] for _ in range(s.n)]
    if input_id == s.n:
        return [[to_all(s.indices, out)] for _ in range(s.n)]
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
    m = plain(build_map(results, box(s.updates), ranges, constraints=constraints))
    return [[m] for _ in range(s.n)]
