"""Ops that move elements without combining them: tuples and routing (get-tuple-element,
opt-barrier, add-dependency, set-dimension-size), broadcast, transpose, reverse, slice, pad,
concatenate, reshape and bitcast."""

from __future__ import annotations

import math
from collections.abc import Sequence

from verifidx.core.errors import UnsupportedError
from verifidx.core.expr import Const, Dim, Expr, Symbol, add, floordiv, mod, mul, neg
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo.layout import bitcast_map as layout_bitcast_map
from verifidx.hlo.ops.common import (
    Malformed,
    Maps,
    OpContext,
    box,
    build_map,
    identity_indexing,
    is_permutation,
    need,
    plain,
    static_dims,
    to_all,
    to_scalar,
)
from verifidx.hlo.shape import Shape

# -- tuples ------------------------------------------------------------------------------------


def _leaf_ranges(shapes: Sequence[Shape]) -> list[tuple[int, int]]:
    """[start, end) of each element's leaves in the flattened leaf numbering."""
    out, start = [], 0
    for s in shapes:
        n = len(s.leaves())
        out.append((start, start + n))
        start += n
    return out


def tuple_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims = ctx.out_dims(output_id)
    maps: list[Maps] = []
    for start, end in _leaf_ranges(ctx.operand_shapes):
        maps.append([identity_indexing(dims)] if start <= output_id < end else [])
    return maps


def tuple_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    start, end = _leaf_ranges(ctx.operand_shapes)[input_id]
    leaves = ctx.out_leaves
    return [[identity_indexing(static_dims(s))] if start <= k < end else []
            for k, s in enumerate(leaves)]


def gte_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return [[identity_indexing(ctx.out_dims(output_id))]]


def gte_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[identity_indexing(static_dims(s))] for s in ctx.out_leaves]


def passthrough_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """opt-barrier: output leaf k is operand leaf k."""
    return [[identity_indexing(ctx.out_dims(output_id))]]


def passthrough_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[identity_indexing(static_dims(s))] for s in ctx.out_leaves]


def add_dependency_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out = ctx.out_dims(output_id)
    need(ctx.in_dims(0) == out, "add-dependency changes the shape")
    return [[identity_indexing(out)], *([] for _ in range(ctx.num_operands - 1))]


def add_dependency_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[identity_indexing(ctx.out_dims(0))] if input_id == 0 else []]


def set_dimension_size_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    out = ctx.out_dims(output_id)
    need(ctx.num_operands == 2 and ctx.in_dims(0) == out and not ctx.in_dims(1),
         "set-dimension-size shapes")
    return [[identity_indexing(out)], [to_scalar(out)]]


def set_dimension_size_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    out = ctx.out_dims(0)
    set_dimension_size_o2i(ctx, 0)
    return [[identity_indexing(out)]] if input_id == 0 else [[to_all((), out)]]


# -- broadcast, transpose, reverse, slice, pad, concatenate -----------------------------------


def _broadcast_dims(ctx: OpContext) -> tuple[int, ...]:
    dims = ctx.instruction.dimensions or ()
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    need(len(dims) == len(src), "broadcast dimensions do not match the operand rank")
    need(all(0 <= d < len(out) for d in dims) and len(set(dims)) == len(dims),
         "broadcast dimensions out of range")
    need(all(out[d] == n for d, n in zip(dims, src)), "broadcast changes a dimension's size")
    return dims


def broadcast_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims = _broadcast_dims(ctx)
    return [[plain(build_map([Dim(d) for d in dims], box(ctx.out_dims(0))))]]


def broadcast_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
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
    return [[plain(build_map(results, box(ctx.in_dims(0)), ranges))]]


def _transpose_perm(ctx: OpContext) -> tuple[int, ...]:
    perm = ctx.instruction.dimensions or ()
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    need(len(perm) == len(src) == len(out) and is_permutation(perm, len(src)),
         "transpose dimensions are not a permutation")
    need(all(out[k] == src[perm[k]] for k in range(len(out))), "transpose shapes disagree")
    return perm


def transpose_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    perm = _transpose_perm(ctx)
    results = [Dim(perm.index(j)) for j in range(len(perm))]
    return [[plain(build_map(results, box(ctx.out_dims(0))))]]


def transpose_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    perm = _transpose_perm(ctx)
    return [[plain(build_map([Dim(p) for p in perm], box(ctx.in_dims(0))))]]


def _reverse_map(ctx: OpContext, sizes: tuple[int, ...]) -> list[Maps]:
    dims = set(ctx.instruction.dimensions or ())
    need(all(0 <= d < len(sizes) for d in dims), "reverse dimensions out of range")
    need(ctx.in_dims(0) == ctx.out_dims(0), "reverse changes the shape")
    results = [add(neg(Dim(k)), n - 1) if k in dims else Dim(k) for k, n in enumerate(sizes)]
    return [[plain(build_map(results, box(sizes)))]]


def reverse_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return _reverse_map(ctx, ctx.out_dims(0))


def reverse_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return _reverse_map(ctx, ctx.in_dims(0))


def _slice_dims(ctx: OpContext) -> list[tuple[int, int, int]]:
    """(start, stride, output size) per dimension."""
    sl = ctx.instruction.slice_dims
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    need(sl is not None and len(sl) == len(src) == len(out), "slice={...} does not match rank")
    assert sl is not None
    dims = []
    for s, n_in, n_out in zip(sl, src, out):
        need(s.stride > 0 and 0 <= s.start <= s.limit <= n_in, "slice bounds out of range")
        need(n_out == max(0, -(-(s.limit - s.start) // s.stride)), "slice output size is wrong")
        dims.append((s.start, s.stride, n_out))
    return dims


def slice_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    dims = _slice_dims(ctx)
    results = [add(mul(Dim(k), stride), start) for k, (start, stride, _) in enumerate(dims)]
    return [[plain(build_map(results, box(ctx.out_dims(0))))]]


def strided_inverse(
    var: Expr, start: int, stride: int
) -> tuple[Expr, list[tuple[Expr, tuple[int, int]]]]:
    """`(var - start) floordiv stride` with `(var - start) mod stride in [0, 0]`."""
    shifted = add(var, -start)
    if stride == 1:
        return shifted, []
    return floordiv(shifted, stride), [(mod(shifted, stride), (0, 0))]


def slice_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    results: list[Expr] = []
    domain: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, (start, stride, n_out) in enumerate(_slice_dims(ctx)):
        r, cons = strided_inverse(Dim(k), start, stride)
        results.append(r)
        constraints += cons
        domain.append((start, start + (n_out - 1) * stride))
    return [[plain(build_map(results, domain, constraints=constraints))]]


def _pad_dims(ctx: OpContext) -> list[tuple[int, int, int, int, int]]:
    """(low, interior + 1, operand size, output size, high) per dimension."""
    pad = ctx.instruction.padding
    src, out = ctx.in_dims(0), ctx.out_dims(0)
    need(pad is not None and len(pad) == len(src) == len(out), "padding does not match rank")
    need(ctx.num_operands == 2 and not ctx.in_dims(1), "pad needs a scalar padding value")
    assert pad is not None
    dims = []
    for p, n_in, n_out in zip(pad, src, out):
        need(p.interior >= 0, "negative interior padding")
        size = p.low + p.high + n_in + max(0, n_in - 1) * p.interior
        need(size == n_out, "pad output size is wrong")
        dims.append((p.low, p.interior + 1, n_in, n_out, p.high))
    return dims


def pad_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    results: list[Expr] = []
    domain: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, (low, step, n_in, n_out, _high) in enumerate(_pad_dims(ctx)):
        r, cons = strided_inverse(Dim(k), low, step)
        results.append(r)
        constraints += cons
        domain.append((max(0, low), min(n_out - 1, low + (n_in - 1) * step)))
    operand = plain(build_map(results, domain, constraints=constraints))
    return [[operand], [to_scalar(ctx.out_dims(0))]]


def pad_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims = _pad_dims(ctx)
    out = ctx.out_dims(0)
    if input_id == 1:
        return [[to_all((), out)]]
    results: list[Expr] = []
    domain: list[tuple[int, int]] = []
    for k, (low, step, n_in, n_out, _high) in enumerate(dims):
        results.append(add(mul(Dim(k), step), low))
        # x * step + low must land inside [0, n_out - 1]
        lo = max(0, -(low // step))
        hi = min(n_in - 1, (n_out - 1 - low) // step)
        domain.append((lo, hi))
    return [[plain(build_map(results, domain))]]


def _concat_dim(ctx: OpContext) -> tuple[int, list[int]]:
    dims = ctx.instruction.dimensions or ()
    out = ctx.out_dims(0)
    need(len(dims) == 1 and 0 <= dims[0] < len(out), "concatenate needs one dimension")
    c = dims[0]
    offsets, total = [], 0
    for i in range(ctx.num_operands):
        src = ctx.in_dims(i)
        need(len(src) == len(out) and all(src[k] == out[k] for k in range(len(out)) if k != c),
             f"operand {i} does not fit the concatenation")
        offsets.append(total)
        total += src[c]
    need(total == out[c], "concatenate output size is wrong")
    return c, offsets


def concat_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    c, offsets = _concat_dim(ctx)
    out = ctx.out_dims(0)
    maps: list[Maps] = []
    for i, off in enumerate(offsets):
        n = ctx.in_dims(i)[c]
        results = [add(Dim(k), -off) if k == c else Dim(k) for k in range(len(out))]
        domain = [(off, off + n - 1) if k == c else (0, out[k] - 1) for k in range(len(out))]
        maps.append([plain(build_map(results, domain))])
    return maps


def concat_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    c, offsets = _concat_dim(ctx)
    src = ctx.in_dims(input_id)
    results = [add(Dim(k), offsets[input_id]) if k == c else Dim(k) for k in range(len(src))]
    return [[plain(build_map(results, box(src)))]]


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
    return build_map(exprs, box(src))


def reshape_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return [[plain(_reshape_map(ctx.out_dims(0), ctx.in_dims(0)))]]


def reshape_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[plain(_reshape_map(ctx.in_dims(0), ctx.out_dims(0)))]]


def _major_to_minor(shape: Shape) -> list[int]:
    if shape.layout is None:
        return list(range(shape.rank))
    m2m = list(reversed(shape.layout.minor_to_major))
    need(is_permutation(m2m, shape.rank), f"layout of {shape} is not a permutation")
    return m2m


def bitcast_index_map(src: Shape, dst: Shape) -> IndexingMap:
    """Logical index of `src` -> logical index of `dst` at the same position in memory, for
    untiled layouts: transpose to physical order, reshape, transpose back."""
    if src.element_bits != dst.element_bits and src.element_bits and dst.element_bits:
        raise Malformed("bitcast between element types of different sizes")
    if (src.layout and src.layout.tiles) or (dst.layout and dst.layout.tiles):
        try:  # tiled layouts: the layout module knows the offsets
            return layout_bitcast_map(src, dst)
        except (UnsupportedError, ValueError) as err:
            raise Malformed(f"bitcast with tiled layouts: {err}") from None
    s_dims, d_dims = static_dims(src), static_dims(dst)
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
    return build_map(results, box(s_dims))


def bitcast_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    operand = ctx.operand_shapes[0]
    return [[plain(bitcast_index_map(ctx.out_leaves[0], operand))]]


def bitcast_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return [[plain(bitcast_index_map(ctx.operand_shapes[0], ctx.out_leaves[0]))]]
