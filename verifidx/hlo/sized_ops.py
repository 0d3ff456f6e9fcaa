"""Per-op maps whose strides, offsets and divisors are sizes (docs/semantics.md, Sizes).

The per-op table builds maps at the bound sizes; `verifidx.hlo.dynamic_dims` cuts them to the
sizes where that is exact. Where the element an index reads depends on a size, the map is built
here with the sizes in it instead:

- `reverse` of a dynamic dimension of size `N`: `d -> N - 1 - d`;
- `concatenate` along a dynamic dimension: operand `i` starts at the sum `off` of the sizes of
  the operands before it, `d -> d - off` where `off <= d < off + size_i`;
- `reshape` (`dynamic_reshape`) merging or splitting dynamic dimensions: the index is
  linearised within each group of dimensions whose sizes multiply to the same polynomial
  (`d0 * N + d1`) and split again (`(.. floordiv N) mod M`); with no such grouping, one group;
- `gather` and `dynamic-slice` of a dynamic operand: a start index moving a dimension of size
  `N` is clamped to `[0, N - s]` (`s` the slice size), the runtime variable's constraint
  `rt - (N - s) <= 0`. A start whose value the program computes from iotas, constants and
  sizes (`verifidx.hlo.index_values`) replaces its runtime variable where the solver shows it
  in `[0, N - s]` at every point and every size (the clamp never acts: `x[::-1]`, `x[1::2]`
  lowered by `jax.export` to a gather become exact maps); elsewhere the runtime variable stays
  (every start in the clamp's range). A program whose slice is larger than the operand at
  some size has no element to read there: the map is empty at those sizes. Not for XLA's
  bounded dimensions (sizes that may be 0), whose dynamic padder clamps to the bound instead;
- `dynamic-update-slice` into a dynamic operand: the same, its start clamped to `[0, N - U]`
  with `U` the update's size (itself a size when the update is dynamic).

Every map is then cut to the sizes of its domain. A divisor that may be 0 (a size that may be
0, XLA's bounded dimensions) cannot be written: the map is "unknown indexing" with that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from verifidx.core.errors import DivisorError
from verifidx.core.expr import Const, Dim, Expr, RtVar, Size, add, floordiv, mod, mul, neg
from verifidx.core.indexing_map import IndexingMap
from verifidx.core.interval import range_of
from verifidx.hlo.dynamic_dims import SymSize, declare, leaf_sizes, restrict
from verifidx.hlo.index_values import value_at
from verifidx.hlo.ops.common import Malformed
from verifidx.hlo.ops.dynamic import dus_i2o, dus_o2i, dynamic_slice_i2o, dynamic_slice_o2i
from verifidx.hlo.ops.gather_scatter import gather_i2o, gather_o2i
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, clamp_expr, substitute_runtime
from verifidx.hlo.shape import Shape

if TYPE_CHECKING:
    from verifidx.hlo.ops.common import OpContext

Groups = tuple[tuple[OperandIndexing, ...], ...]


def _sizes(inst_sizes: Sequence[SymSize | None] | None, shape: Shape) -> list[SymSize]:
    """Every dimension's size, static ones as constants."""
    out = []
    for k, n in enumerate(shape.dims):
        s = inst_sizes[k] if inst_sizes is not None and k < len(inst_sizes) else None
        out.append(s if s is not None else SymSize(n))
    return out


def _operand_sizes(ctx: OpContext, i: int) -> list[SymSize]:
    op = ctx.operands[i] if i < len(ctx.operands) else None
    return _sizes(leaf_sizes(op) if op is not None else None, ctx.operand_shapes[i])


def _output_sizes(ctx: OpContext) -> list[SymSize]:
    return _sizes(leaf_sizes(ctx.instruction), ctx.instruction.shape)


def _map(results: Sequence[Expr], domain: Sequence[SymSize], shape: Shape,
         constraints: Sequence[tuple[Expr, SymSize, SymSize]] = (),
         mentioned: Sequence[SymSize] = ()) -> OperandIndexing:
    """The map `results` over the box of `shape`, cut to `domain`'s sizes, with each
    `lo <= e < hi` of `constraints`; `mentioned` declares the other sizes the results use."""
    box = [(0, n - 1) for n in shape.dims]
    used = [*domain, *mentioned, *(x for _e, lo, hi in constraints for x in (lo, hi))]
    m = IndexingMap.build(results, box, sizes=declare(IndexingMap.build([], box), used).sizes)
    for e, lo, hi in constraints:
        below = add(e, neg(lo.expr()))
        m = m.add_constraint(below, (0, max(range_of(below, m.bounds).hi, 0)))
        above = add(e, neg(hi.expr()))
        m = m.add_constraint(above, (min(range_of(above, m.bounds).lo, -1), -1))
    dyn: list[SymSize | None] = [s if not s.is_constant else None for s in domain]
    return restrict(OperandIndexing(m), dyn, None, domain_only=True)


# -- reverse -------------------------------------------------------------------------------------


def _reverse(ctx: OpContext, direction: str, index: int) -> Groups:
    axes = set(cast("tuple[int, ...]", ctx.instruction.dimensions or ()))
    sizes = _operand_sizes(ctx, 0)
    results = [add(s.expr(), -1, neg(Dim(k))) if k in axes else Dim(k)
               for k, s in enumerate(sizes)]
    shape = ctx.instruction.shape if direction == "out2in" else ctx.operand_shapes[0]
    return ((_map(results, sizes, shape),),)


# -- concatenate ---------------------------------------------------------------------------------


def _concatenate(ctx: OpContext, direction: str, index: int) -> Groups:
    axis = cast("tuple[int, ...]", ctx.instruction.dimensions or (0,))[0]
    offsets: list[SymSize] = []
    total = SymSize(0)
    for i in range(len(ctx.operand_shapes)):
        offsets.append(total)
        total = total.plus(_operand_sizes(ctx, i)[axis])
    out = _output_sizes(ctx)
    if direction == "out2in":
        groups = []
        for i, off in enumerate(offsets):
            size = _operand_sizes(ctx, i)[axis]
            results = [add(Dim(k), neg(off.expr())) if k == axis else Dim(k)
                       for k in range(len(out))]
            shift = Dim(axis)
            groups.append((_map(results, out, ctx.instruction.shape,
                                [(shift, off, off.plus(size))], mentioned=[off]),))
        return tuple(groups)
    sizes = _operand_sizes(ctx, index)
    results = [add(Dim(k), offsets[index].expr()) if k == axis else Dim(k)
               for k in range(len(sizes))]
    return ((_map(results, sizes, ctx.operand_shapes[index], mentioned=[offsets[index]]),),)


# -- reshape -------------------------------------------------------------------------------------


def _product(sizes: Sequence[SymSize]) -> SymSize:
    p = SymSize(1)
    for s in sizes:
        p = p.mul(s)
    return p


def _weight(p: SymSize) -> tuple[int, int]:
    return max((len(m) for m, _c in p.terms), default=0), p.hi


def _groups(a: Sequence[SymSize], b: Sequence[SymSize]) -> list[tuple[range, range]]:
    """Consecutive dimensions of `a` and `b` whose sizes multiply to the same polynomial
    (one group of everything when no finer grouping matches)."""
    out: list[tuple[range, range]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        i0, j0 = i, j
        pa, pb = SymSize(1), SymSize(1)
        while True:
            if i < len(a) and (j >= len(b) or _weight(pa) <= _weight(pb)):
                pa = pa.mul(a[i])
                i += 1
            elif j < len(b):
                pb = pb.mul(b[j])
                j += 1
            else:
                return [(range(len(a)), range(len(b)))]
            if pa == pb:
                break
        out.append((range(i0, i), range(j0, j)))
    return out


def _relinearise(src: Sequence[SymSize], dst: Sequence[SymSize], shape: Shape
                 ) -> OperandIndexing:
    """The map from an index of `src` (box `shape`) to the index of `dst` that holds the
    same element in row-major order."""
    results: list[Expr] = [Const(0)] * len(dst)
    for ga, gb in _groups(src, dst):
        linear: Expr = Const(0)
        for k in ga:
            linear = add(linear, mul(Dim(k), _product([src[x] for x in ga if x > k]).expr()))
        for n, k in enumerate(gb):
            stride = _product([dst[x] for x in gb if x > k])
            value = linear if stride == SymSize(1) else floordiv(linear, stride.expr())
            results[k] = value if n == 0 else mod(value, dst[k].expr())
    return _map(results, src, shape, mentioned=dst)


def _reshape(ctx: OpContext, direction: str, index: int) -> Groups:
    a, b = _operand_sizes(ctx, 0), _output_sizes(ctx)
    if direction == "out2in":
        return ((_relinearise(b, a, ctx.instruction.shape),),)
    return ((_relinearise(a, b, ctx.operand_shapes[0]),),)


# -- gather, dynamic-slice of a dynamic operand -------------------------------------------------


def _clamps(ctx: OpContext, m: IndexingMap) -> dict[int, SymSize]:
    """Per runtime variable of `m` (a start index): the largest start its op clamps it to,
    `N - s`, where it moves operand dimension `k` (it appears in result `k`, the operand's
    dimension `k` for out2in and the output's dimension `k` of a dynamic-slice for in2out) of
    size `N`; `s` is the bound minus the variable's largest value."""
    sizes, bound = _operand_sizes(ctx, 0), ctx.operand_shapes[0].dims
    out: dict[int, SymSize] = {}
    for k, r in enumerate(m.results):
        for v in r.variables():
            if isinstance(v, RtVar) and k < len(sizes):
                out[v.index] = sizes[k].plus(m.rt_vars[v.index].bounds.hi - bound[k])
    return out


def _always_within(m: IndexingMap, value: Expr, hi: SymSize) -> bool:
    """`0 <= value <= hi` at every point of `m` and every size (shown by the solver, loaded
    here: a command that reads static programs does not load Z3)."""
    from verifidx.solve.smt import is_empty

    above = add(value, neg(hi.expr()))
    outside = [(value, (min(range_of(value, m.bounds).lo, -1), -1)),
               (above, (1, max(range_of(above, m.bounds).hi, 1)))]
    return all(is_empty(m.add_constraint(e, iv)).holds is True for e, iv in outside)


def _representable(value: Expr, m: IndexingMap, signed: bool) -> bool:
    """`value` stays inside what a 32-bit index holds (non-negative for an unsigned one) over
    `m`'s bounds: then it is the program's value, wrapping arithmetic and all
    (`verifidx.hlo.index_values`), and the op clamps exactly it."""
    r = range_of(value, m.bounds)
    return (-(2**31) if signed else 0) <= r.lo and r.hi < 2**31


def _known_start(rv: RuntimeVar, m: IndexingMap, ctx: OpContext
                 ) -> tuple[Expr, list[SymSize]] | None:
    if ctx.computation is None or rv.map.is_undefined or rv.map.num_rt_vars or \
            rv.map.num_range_vars or rv.map.constraints or rv.map.num_dims != m.num_dims:
        return None
    used: list[SymSize] = []
    value = value_at(rv.source, rv.map.results, ctx.computation, used=used)
    return None if value is None else (value, used)


def _clamped(ind: OperandIndexing, ctx: OpContext,
             his: dict[int, SymSize] | None = None) -> OperandIndexing:
    """`ind` (a table map with unfolded start indices, cut to the sizes) with each start
    clamped to its size (`his`: the largest start per runtime variable, by default
    `_clamps`) and folded where its value is known (see the module docstring)."""
    m = ind.map
    if m.is_undefined or not ind.runtime:
        return ind
    his = _clamps(ctx, m) if his is None else his
    m = declare(m, list(his.values()))
    for j, hi in his.items():
        if not hi.is_constant:
            diff = add(RtVar(j), neg(hi.expr()))
            m = m.add_constraint(diff, (min(range_of(diff, m.bounds).lo, 0), 0))
    values: dict[int, Expr] = {}
    for j, rv in enumerate(ind.runtime):
        known = _known_start(rv, m, ctx)
        if known is None:
            continue
        value, used = known
        hi = his.get(j, SymSize(m.rt_vars[j].bounds.hi))
        if _always_within(declare(m, used), value, hi):
            values[j] = value
            m = declare(m, used)
        elif hi.is_constant and not any(isinstance(v, Size) for v in value.variables()) and \
                _representable(value, m, rv.source.shape.element_type.startswith("s")):
            values[j] = clamp_expr(value, m.bounds, m.rt_vars[j].bounds.lo, hi.const)
    return substitute_runtime(OperandIndexing(m, ind.runtime, ind.replica, ind.notes), values)


_UNFOLDED = {
    ("gather", "out2in"): lambda ctx, i: gather_o2i(ctx, i, fold=False),
    ("gather", "in2out"): gather_i2o,
    ("dynamic-slice", "out2in"): lambda ctx, i: dynamic_slice_o2i(ctx, i, fold=False),
    ("dynamic-slice", "in2out"): lambda ctx, i: dynamic_slice_i2o(ctx, i, fold=False),
}


def _not_bounded(ctx: OpContext, operands: Sequence[int]) -> None:
    """XLA's bounded dimensions (sizes that may be 0): its dynamic padder runs the op on the
    padded buffer, clamping to the bound, so a start may read or write the padding past the
    size."""
    if any(v.least < 1 for i in operands for s in _leaf(ctx, i) or () if s is not None
           for v in s.variables):
        raise ValueError("XLA clamps it to the bound and may read the padding")


def _sliced(ctx: OpContext, direction: str, index: int) -> Groups:
    """gather and dynamic-slice of an operand with dynamic dimensions."""
    _not_bounded(ctx, (0,))
    table = _UNFOLDED[ctx.instruction.opcode, direction](ctx, index)
    inst = ctx.instruction
    groups = []
    for i, group in enumerate(table):
        if direction == "out2in":
            domain, target = leaf_sizes(inst, index), _leaf(ctx, i)
        else:
            domain, target = _leaf(ctx, index), leaf_sizes(inst, i)
        moves = (i if direction == "out2in" else index) == 0
        groups.append(tuple(_clamped(restrict(m, domain, target), ctx) if moves
                            else restrict(m, domain, target) for m in group))
    return tuple(groups)


def _updated(ctx: OpContext, direction: str, index: int) -> Groups:
    """dynamic-update-slice into an operand with dynamic dimensions: the start moving
    dimension `k` of size `N` is clamped to `[0, N - U]`, `U` the update's size there (itself
    a size when the update is dynamic: the table's `[0, bound - bound]` would be too narrow).
    As in the table's (XLA's) map, the update's index is not cut to its sizes: an output
    outside the updated window names an index outside the update, which reads nothing."""
    _not_bounded(ctx, (0, 1))
    out_sizes, upd_sizes = _operand_sizes(ctx, 0), _operand_sizes(ctx, 1)
    his = {k: n.plus(u.times(-1)) for k, (n, u) in enumerate(zip(out_sizes, upd_sizes))}
    starts = [max(h.hi, 0) for h in his.values()]
    inst = ctx.instruction
    if direction == "out2in":
        domain = leaf_sizes(inst, index)
        table = dus_o2i(ctx, index, fold=False, starts=starts)
        return tuple(tuple(_clamped(restrict(g, domain, None), ctx, his) if i == 1
                           else restrict(g, domain, _leaf(ctx, i)) for g in group)
                     for i, group in enumerate(table))
    domain, target = _leaf(ctx, index), leaf_sizes(inst, 0)
    cut = [[restrict(g, domain, target) for g in group]
           for group in dus_i2o(ctx, index, fold=False, starts=starts)]
    return tuple(tuple(_clamped(g, ctx, his) if index == 1 else g for g in group)
                 for group in cut)


def _leaf(ctx: OpContext, i: int) -> tuple[SymSize | None, ...] | None:
    op = ctx.operands[i] if i < len(ctx.operands) else None
    return leaf_sizes(op) if op is not None else None


SIZED: dict[str, Callable[[OpContext, str, int], Groups]] = {
    "reverse": _reverse,
    "concatenate": _concatenate,
    "reshape": _reshape,
    "gather": _sliced,
    "dynamic-slice": _sliced,
    "dynamic-update-slice": _updated,
}
"""Per opcode: its maps with sizes, for the ops whose table map is not exact at every size."""


def sized_maps(ctx: OpContext, direction: str, index: int) -> tuple[Groups | None, str]:
    """The maps with sizes of `ctx`'s op (None, with the reason, where they cannot be
    written: a divisor that may be 0)."""
    build = SIZED.get(ctx.instruction.opcode)
    if build is None:
        return None, ""
    try:
        return build(ctx, direction, index), ""
    except (DivisorError, ValueError, Malformed) as e:
        return None, str(e)
