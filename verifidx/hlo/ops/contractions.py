"""Contractions: dot, scaled-dot and convolution (every element that contributes to an output
element is read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verifidx.core.expr import Const, Dim, Expr, Symbol, add, floordiv, mod, mul, neg
from verifidx.core.indexing_map import IndexingMap
from verifidx.core.interval import Interval
from verifidx.hlo.attribute_values import ConvolutionDimLabels, WindowDim
from verifidx.hlo.ops.common import (
    Maps,
    OpContext,
    box,
    build_map,
    need,
    plain,
    sum_products_first,
    to_all,
)
from verifidx.hlo.ops.reductions import check_window, window_input, window_out_size, window_output
from verifidx.hlo.runtime import compose_indexing

if TYPE_CHECKING:
    from verifidx.core.expr import Variable


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
    need(len(dn.lhs_batch) == len(dn.rhs_batch), "dot batch dimensions differ in number")
    need(len(dn.lhs_contracting) == len(dn.rhs_contracting), "dot contracting dims differ")
    need(len(set(used_l)) == len(used_l) and all(0 <= d < len(lhs) for d in used_l),
         "dot lhs dimensions invalid")
    need(len(set(used_r)) == len(used_r) and all(0 <= d < len(rhs) for d in used_r),
         "dot rhs dimensions invalid")
    lf = tuple(k for k in range(len(lhs)) if k not in used_l)
    rf = tuple(k for k in range(len(rhs)) if k not in used_r)
    expect = [lhs[d] for d in dn.lhs_batch] + [lhs[d] for d in lf] + [rhs[d] for d in rf]
    need(list(out) == expect, "dot output shape is wrong")
    need(all(lhs[a] == rhs[b] for a, b in zip(dn.lhs_batch, dn.rhs_batch)), "batch sizes")
    need(all(lhs[a] == rhs[b] for a, b in zip(dn.lhs_contracting, dn.rhs_contracting)),
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
    return build_map(results, box(ctx.out_dims(0)), [(0, dims[d] - 1) for d in contracting])


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
    return build_map(results, box(dims), ranges)


def dot_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    lay = _dot_layout(ctx)
    need(ctx.num_operands == 2, "dot has two operands")
    return [[plain(_dot_operand_map(ctx, side, lay))] for side in (0, 1)]


def dot_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    lay = _dot_layout(ctx)
    return [[plain(_dot_input_map(ctx, input_id, lay))]]


def _scale_block(ctx: OpContext, side: int) -> list[int] | None:
    """Block size per dimension of the scale of operand `side` (None for a scalar scale)."""
    dims, scale = ctx.in_dims(side), ctx.in_dims(side + 2)
    if not scale:
        return None
    need(len(scale) == len(dims), "scale rank differs from its operand's")
    need(all(s > 0 and d % s == 0 for d, s in zip(dims, scale)), "scale does not tile operand")
    return [d // s for d, s in zip(dims, scale)]


def scaled_dot_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    need(ctx.num_operands == 4, "scaled-dot has four operands")
    lay = _dot_layout(ctx)
    operand_maps = [_dot_operand_map(ctx, side, lay) for side in (0, 1)]
    maps: list[Maps] = [[plain(m)] for m in operand_maps]
    for side in (0, 1):
        block = _scale_block(ctx, side)
        m = operand_maps[side]
        if block is None:
            maps.append([plain(build_map([], m.dims, m.range_vars))])
        else:
            results = [floordiv(r, b) for r, b in zip(m.results, block)]
            maps.append([plain(build_map(results, m.dims, m.range_vars))])
    return maps


def scaled_dot_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    need(ctx.num_operands == 4, "scaled-dot has four operands")
    lay = _dot_layout(ctx)
    if input_id < 2:
        return [[plain(_dot_input_map(ctx, input_id, lay))]]
    side = input_id - 2
    block = _scale_block(ctx, side)
    if block is None:
        return [[to_all((), ctx.out_dims(0))]]
    # a scale element covers a block of operand elements, each read as the operand is
    scale = ctx.in_dims(input_id)
    results = [add(mul(Dim(k), b), Symbol(k)) for k, b in enumerate(block)]
    to_operand = plain(build_map(results, box(scale), [(0, b - 1) for b in block]))
    return [[compose_indexing(to_operand, plain(_dot_input_map(ctx, side, lay)))]]


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
    need(labels is not None, "convolution needs dim_labels")
    assert labels is not None
    need(ctx.num_operands == 2, "convolution has two operands")
    lhs, rhs, out = ctx.in_dims(0), ctx.in_dims(1), ctx.out_dims(0)
    nsp = len(labels.input_spatial)
    need(len(lhs) == len(rhs) == len(out) == nsp + 2, "convolution ranks disagree")
    need(len(labels.kernel_spatial) == len(labels.output_spatial) == nsp, "dim_labels")
    window: Sequence[WindowDim] | None = inst.window
    if window is None and nsp == 0:
        window = ()
    window = check_window(window, nsp, "convolution")
    fgc, bgc = inst.feature_group_count, inst.batch_group_count
    need(fgc >= 1 and bgc >= 1 and (fgc == 1 or bgc == 1), "group counts")
    in_f, out_f = lhs[labels.input_feature], out[labels.output_feature]
    k_in, k_out = rhs[labels.kernel_input_feature], rhs[labels.kernel_output_feature]
    need(in_f == k_in * fgc and k_out == out_f, "convolution feature sizes disagree")
    need(out_f % fgc == 0 and out_f % bgc == 0, "output features not divisible by groups")
    in_b, out_b = lhs[labels.input_batch], out[labels.output_batch]
    need(in_b == out_b * bgc, "convolution batch sizes disagree")
    for k in range(nsp):
        w = window[k]
        need(rhs[labels.kernel_spatial[k]] == w.size, "window size differs from the kernel")
        need(out[labels.output_spatial[k]] == window_out_size(lhs[labels.input_spatial[k]], w),
             "convolution output size is wrong")
    return _ConvLayout(labels, window, lhs, rhs, out, fgc, bgc, k_in, out_f // fgc)


def conv_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
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
        batch if group is None else sum_products_first([mul(group, out[lb.output_batch]), batch])
    )
    out_feat = dim(lb.output_feature)
    if c.fgc > 1:
        grp = mul(floordiv(out_feat, c.out_per_group), c.in_per_group)
        lhs_res[lb.input_feature] = add(grp, feat)
    else:
        lhs_res[lb.input_feature] = feat
    for k, w in enumerate(c.window):
        pos = lb.output_spatial[k]
        index, cons = window_input(Dim(pos), out[pos], c.lhs[lb.input_spatial[k]], w,
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
    lhs_map = build_map(lhs_res, box(out), ranges, constraints=constraints)
    # the batch-group variable (last, if any) does not index the kernel
    rhs_map = build_map(rhs_res, box(out), ranges[: len(ranges) - (group is not None)])
    return [[plain(lhs_map)], [plain(rhs_map)]]


def conv_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
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
            index, cons = window_output(Dim(lb.input_spatial[k]), out[pos], w, win_syms[k],
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
    return [[plain(build_map(results, box(dims), ranges, constraints=constraints))]]
