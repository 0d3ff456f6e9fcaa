"""Ops that combine many elements into one: reduce, reduce-window (and the window arithmetic it
shares), select-and-scatter (its gradient), sort and top-k along an axis, fft over its last
axes, and scan (cumulative, through its body's dependencies)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from verifidx.core.expr import Const, Dim, Expr, Symbol, add, floordiv, mod, mul, neg
from verifidx.core.indexing_map import IndexingMap
from verifidx.core.interval import Interval, range_of
from verifidx.hlo.attribute_values import WindowDim
from verifidx.hlo.module import HloComputation
from verifidx.hlo.ops.common import (
    Malformed,
    Maps,
    OpContext,
    box,
    build_map,
    need,
    plain,
    sum_products_first,
    to_all,
    to_scalar,
)
from verifidx.hlo.ops.data_movement import strided_inverse
from verifidx.hlo.runtime import OperandIndexing

if TYPE_CHECKING:
    from verifidx.core.expr import Variable


# -- reduce, reduce-window, sort ---------------------------------------------------------------


def _reduce_setup(ctx: OpContext) -> tuple[int, tuple[int, ...], list[int]]:
    """(number of inputs, input dims, reduced dimensions sorted)."""
    n = ctx.num_operands // 2
    need(n >= 1 and ctx.num_operands == 2 * n, "reduce needs inputs and as many inits")
    dims = ctx.in_dims(0)
    red = sorted(set(ctx.instruction.dimensions or ()))
    need(all(0 <= d < len(dims) for d in red), "reduce dimensions out of range")
    kept = [dims[k] for k in range(len(dims)) if k not in red]
    for i in range(n):
        need(ctx.in_dims(i) == dims, "reduce inputs have different shapes")
        need(not ctx.in_dims(n + i), "reduce init values must be scalars")
    need(len(ctx.out_leaves) == n, "reduce has one output per input")
    for k in range(n):
        need(list(ctx.out_dims(k)) == kept, "reduce output shape is wrong")
    return n, dims, red


def reduce_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
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
    operand = plain(build_map(results, box(out), [(0, dims[k] - 1) for k in red]))
    return [[operand] for _ in range(n)] + [[to_scalar(out)] for _ in range(n)]


def reduce_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    n, dims, red = _reduce_setup(ctx)
    out = ctx.out_dims(0)
    if input_id >= n:
        return [[to_all((), out)] for _ in range(n)]
    results = [Dim(k) for k in range(len(dims)) if k not in red]
    return [[plain(build_map(results, box(dims)))] for _ in range(n)]


def window_input(
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
    pos = sum_products_first(terms) if terms else Const(0)
    valid = (w.pad_low, w.pad_low + (in_size - 1) * w.lhs_dilation)
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    if not Interval(*valid).contains(range_of(pos, bounds)):
        constraints.append((pos, valid))
    index, cons = strided_inverse(pos, w.pad_low, w.lhs_dilation)
    return index, constraints + cons


def window_output(
    in_var: Expr, out_size: int, w: WindowDim, sym: Expr | None, bounds: dict[Variable, Interval]
) -> tuple[Expr, list[tuple[Expr, tuple[int, int]]]]:
    """Output position whose window reads input `in_var` at window position `sym`: solves
    `out * stride + w * window_dilation = in * base_dilation + pad_low` for `out`."""
    terms = [mul(in_var, w.lhs_dilation)]
    if sym is not None:
        terms.append(mul(sym, -w.rhs_dilation))
    numerator = add(sum_products_first(terms), w.pad_low)
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    limit = (0, (out_size - 1) * w.stride)
    if not Interval(*limit).contains(range_of(numerator, bounds)):
        constraints.append((numerator, limit))
    if w.stride == 1:
        return numerator, constraints
    return floordiv(numerator, w.stride), [*constraints, (mod(numerator, w.stride), (0, 0))]


def check_window(window: Sequence[WindowDim] | None, rank: int, what: str) -> list[WindowDim]:
    need(window is not None and len(window) == rank, f"{what} window does not match the rank")
    assert window is not None
    for w in window:
        need(w.size >= 1 and w.stride >= 1 and w.lhs_dilation >= 1 and w.rhs_dilation >= 1,
             f"{what} window has a non-positive size, stride or dilation")
    return list(window)


def window_out_size(in_size: int, w: WindowDim) -> int:
    dilated = (in_size - 1) * w.lhs_dilation + 1 if in_size else 0
    padded = dilated + w.pad_low + w.pad_high
    span = (w.size - 1) * w.rhs_dilation + 1
    return 0 if padded < span else (padded - span) // w.stride + 1


def _reduce_window_setup(ctx: OpContext) -> tuple[int, tuple[int, ...], list[WindowDim]]:
    n = ctx.num_operands // 2
    need(n >= 1 and ctx.num_operands == 2 * n, "reduce-window needs inputs and inits")
    dims = ctx.in_dims(0)
    window = check_window(ctx.instruction.window, len(dims), "reduce-window")
    need(len(ctx.out_leaves) == n, "reduce-window has one output per input")
    for i in range(n):
        need(ctx.in_dims(i) == dims and not ctx.in_dims(n + i), "reduce-window operand shapes")
        need(list(ctx.out_dims(i)) == [window_out_size(x, w) for x, w in zip(dims, window)],
             "reduce-window output shape is wrong")
    return n, dims, window


def reduce_window_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
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
        index, cons = window_input(Dim(k), out[k], dims[k], w, sym, bounds)
        results.append(index)
        constraints += cons
    operand = plain(build_map(results, box(out), ranges, constraints=constraints))
    return [[operand] for _ in range(n)] + [[to_scalar(out)] for _ in range(n)]


def reduce_window_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    n, dims, window = _reduce_window_setup(ctx)
    out = ctx.out_dims(0)
    if input_id >= n:
        return [[to_all((), out)] for _ in range(n)]
    ranges = [(0, w.size - 1) for w in window if w.size > 1]
    syms = iter(range(len(ranges)))
    bounds: dict[Variable, Interval] = {Dim(k): Interval(0, x - 1) for k, x in enumerate(dims)}
    bounds.update({Symbol(k): Interval(*r) for k, r in enumerate(ranges)})
    results: list[Expr] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    for k, w in enumerate(window):
        sym = Symbol(next(syms)) if w.size > 1 else None
        index, cons = window_output(Dim(k), out[k], w, sym, bounds)
        results.append(index)
        constraints += cons
    m = plain(build_map(results, box(dims), ranges, constraints=constraints))
    return [[m] for _ in range(n)]


def _sort_setup(ctx: OpContext) -> tuple[tuple[int, ...], int]:
    dims = ctx.in_dims(0)
    sd = ctx.instruction.dimensions or ()
    need(len(sd) == 1 and 0 <= sd[0] < len(dims), "sort needs one dimension")
    need(len(ctx.out_leaves) == ctx.num_operands, "sort has one output per operand")
    for i in range(ctx.num_operands):
        need(ctx.in_dims(i) == dims and ctx.out_dims(i) == dims, "sort operand shapes differ")
    return dims, sd[0]


def _along(dims: Sequence[int], axis: int, length: int) -> OperandIndexing:
    """Index `dims` relates to every position of a line of `length` along `axis`, the other
    coordinates kept: `(d0, d1)[s0] -> (d0, s0)`."""
    results = [Symbol(0) if k == axis else Dim(k) for k in range(len(dims))]
    return plain(build_map(results, box(dims), [(0, length - 1)]))


def _sort_row(dims: Sequence[int], axis: int) -> OperandIndexing:
    return _along(dims, axis, dims[axis])


def _compared(ctx: OpContext) -> set[int]:
    """The operands whose elements the comparator reads (parameters 2i and 2i + 1 are operand
    i's); every operand when the comparator cannot be found."""
    names = ctx.instruction.called_computations
    if ctx.module is None or len(names) != 1 or names[0] not in ctx.module.computations:
        return set(range(ctx.num_operands))
    deps = _dependencies(ctx.module.computation(names[0]))
    return {p // 2 for p in deps[0]} if len(deps) == 1 else set(range(ctx.num_operands))


def sort_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Output k is operand k's row permuted; the permutation depends on the rows of the operands
    the comparator reads. So output k reads those rows and its own, and no other operand."""
    dims, axis = _sort_setup(ctx)
    read = _compared(ctx) | {output_id}
    return [[_sort_row(dims, axis)] if i in read else [] for i in range(ctx.num_operands)]


def sort_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, axis = _sort_setup(ctx)
    keys = input_id in _compared(ctx)
    return [[_sort_row(dims, axis)] if keys or k == input_id else []
            for k in range(ctx.num_operands)]


# -- top-k -------------------------------------------------------------------------------------


def _topk_setup(ctx: OpContext) -> tuple[tuple[int, ...], int]:
    """(operand dims, k) of `topk` and of the `TopK` custom call: the k largest (or smallest)
    elements of each row along the last dimension and their positions, two outputs."""
    need(ctx.num_operands == 1, "top-k has one operand")
    dims = ctx.in_dims(0)
    need(len(dims) >= 1, "top-k needs an operand of rank >= 1")
    need(len(ctx.out_leaves) == 2, "top-k has two outputs (values and indices)")
    out = ctx.out_dims(0)
    need(len(out) == len(dims), "top-k output rank differs from the operand's")
    k = out[-1]
    need(1 <= k <= dims[-1], f"top-k takes k={k} of a row of {dims[-1]}")
    for leaf in range(2):
        need(ctx.out_dims(leaf) == (*dims[:-1], k), "top-k output shapes are wrong")
    attr = ctx.instruction.attributes.get("k")
    need(attr is None or str(attr) == str(k), f"k={attr} but the outputs hold {k} per row")
    return dims, k


def topk_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Each value and each index of the top k depends on the whole row: any element of it can
    enter the top k at any position (as `chlo.top_k`, which decomposes into a sort of the row).
    Of a row of one element, the index is always 0 and reads nothing."""
    dims, k = _topk_setup(ctx)
    if output_id == 1 and dims[-1] == 1:
        return [[]]
    return [[_along((*dims[:-1], k), len(dims) - 1, dims[-1])]]


def topk_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, k = _topk_setup(ctx)
    values = [_along(dims, len(dims) - 1, k)]
    return [values, [] if dims[-1] == 1 else list(values)]


def topk_custom_call_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """XLA's `TopK` custom call: the topk op on an operand of rank 1 or 2, the ranks XLA makes
    it for (on a rank-3 operand XLA's CPU runtime mixes rows; higher ranks are left unknown)."""
    need(len(ctx.in_dims(0)) <= 2, "the TopK custom call takes an operand of rank 1 or 2")
    return topk_o2i(ctx, output_id)


def topk_custom_call_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    need(len(ctx.in_dims(0)) <= 2, "the TopK custom call takes an operand of rank 1 or 2")
    return topk_i2o(ctx, input_id)


# -- fft ---------------------------------------------------------------------------------------


def _fft_setup(ctx: OpContext) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(operand dims, output dims, number of transformed dims). The transform runs over the last
    `len(fft_length)` dims; RFFT keeps `n // 2 + 1` frequencies of the last one, IRFFT reads
    as many and writes `n` values."""
    need(ctx.num_operands == 1 and len(ctx.out_leaves) == 1, "fft has one operand and result")
    inst = ctx.instruction
    attr = inst.attributes.get("fft_length")
    kind = inst.attributes.get("fft_type")
    need(isinstance(attr, tuple) and 1 <= len(attr) <= 3, "fft needs 1 to 3 fft_length")
    assert isinstance(attr, tuple)
    lengths = tuple(n for n in attr if isinstance(n, int) and n >= 1)
    need(len(lengths) == len(attr), "fft_length must be positive")
    need(kind in ("FFT", "IFFT", "RFFT", "IRFFT"), f"unknown fft_type {kind}")
    dims, out = ctx.in_dims(0), ctx.out_dims(0)
    m = len(lengths)
    need(len(dims) == len(out) >= m and dims[:-m] == out[:-m], "fft batch dims differ")
    half = (*lengths[:-1], lengths[-1] // 2 + 1)
    want_in, want_out = {"FFT": (lengths, lengths), "IFFT": (lengths, lengths),
                         "RFFT": (lengths, half), "IRFFT": (half, lengths)}[str(kind)]
    need(dims[-m:] == tuple(want_in) and out[-m:] == tuple(want_out),
         f"{kind} of fft_length {list(lengths)} does not fit {list(dims)} -> {list(out)}")
    return dims, out, m


def _slab(src: Sequence[int], dst: Sequence[int], m: int) -> OperandIndexing:
    """Index `src` relates to every index of `dst` with the same leading (batch) coordinates:
    the last `m` dims range over `dst`'s."""
    batch = len(src) - m
    results = [*(Dim(k) for k in range(batch)), *(Symbol(j) for j in range(m))]
    return plain(build_map(results, box(src), box(dst[batch:])))


def fft_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Every frequency (or sample) reads every element of its batch's transformed dims: each
    term of the transform has a twiddle factor of modulus 1, never 0."""
    dims, out, m = _fft_setup(ctx)
    return [[_slab(out, dims, m)]]


def fft_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, out, m = _fft_setup(ctx)
    return [[_slab(dims, out, m)]]


# -- select-and-scatter ------------------------------------------------------------------------


def _sas_setup(ctx: OpContext) -> tuple[tuple[int, ...], list[WindowDim], tuple[int, ...]]:
    """(operand dims, window, source dims) of select-and-scatter: each window of the operand
    selects one of its elements, where that window's source element is scattered."""
    need(ctx.num_operands == 3 and len(ctx.out_leaves) == 1,
         "select-and-scatter has an operand, a source and an init value")
    dims, src = ctx.in_dims(0), ctx.in_dims(1)
    window = check_window(ctx.instruction.window, len(dims), "select-and-scatter")
    need(all(w.lhs_dilation == 1 and w.rhs_dilation == 1 and not w.reversal for w in window),
         "select-and-scatter with dilated or reversed windows is not modelled")
    need(list(src) == [window_out_size(x, w) for x, w in zip(dims, window)],
         "select-and-scatter source shape does not match the windows")
    need(not ctx.in_dims(2), "select-and-scatter init value must be a scalar")
    need(ctx.out_dims(0) == dims, "select-and-scatter output shape differs from the operand's")
    return dims, window, src


def _windows_of(dims: Sequence[int], window: Sequence[WindowDim], src: Sequence[int],
                to_operand: bool) -> IndexingMap:
    """From an operand-shaped index x: every window w covering x (`x + pad_low - w * stride` in
    `[0, size - 1]`; when windows do not overlap, only `(x + pad_low) floordiv stride`), as the
    source index w, or (to_operand) as every in-bounds element `w * stride + j - pad_low` of
    those windows. The relation "x and y share a window" is symmetric, so it serves both
    directions."""
    results: list[Expr] = []
    ranges: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    bounds: dict[Variable, Interval] = {Dim(k): Interval(0, n - 1) for k, n in enumerate(dims)}

    def fresh(lo: int, hi: int) -> Symbol:
        s = Symbol(len(ranges))
        ranges.append((lo, hi))
        bounds[s] = Interval(lo, hi)
        return s

    def constrain(e: Expr, lo: int, hi: int) -> None:
        if not Interval(lo, hi).contains(range_of(e, bounds)):
            constraints.append((e, (lo, hi)))

    for k, w in enumerate(window):
        if w.size == 1 and w.stride == 1 and w.pad_low == w.pad_high == 0:  # window x is {x}
            results.append(Dim(k))
            continue
        if w.stride >= w.size:  # at most one window covers x: (x + pad_low) floordiv stride
            pos = add(Dim(k), w.pad_low)
            q = pos if w.stride == 1 else floordiv(pos, w.stride)
            if w.size < w.stride:
                constrain(mod(pos, w.stride), 0, w.size - 1)
            constrain(q, 0, src[k] - 1)
            if not to_operand:
                results.append(q)
            elif w.size == 1:
                results.append(Dim(k))
            else:
                y = add(mul(q, w.stride), fresh(0, w.size - 1), -w.pad_low)
                constrain(y, 0, dims[k] - 1)
                results.append(y)
            continue
        s = fresh(0, src[k] - 1)
        start = add(mul(s, w.stride), -w.pad_low)
        constrain(add(Dim(k), neg(start)), 0, w.size - 1)
        if not to_operand:
            results.append(s)
        elif w.size == 1:
            results.append(start)
        else:
            y = add(start, fresh(0, w.size - 1))
            constrain(y, 0, dims[k] - 1)
            results.append(y)
    return build_map(results, box(dims), ranges, constraints=constraints)


def _window_elements(src: Sequence[int], window: Sequence[WindowDim], dims: Sequence[int]
                     ) -> IndexingMap:
    """From a source index w: the in-bounds operand elements `w * stride + j - pad_low` of
    window w."""
    results: list[Expr] = []
    ranges: list[tuple[int, int]] = []
    constraints: list[tuple[Expr, tuple[int, int]]] = []
    bounds: dict[Variable, Interval] = {Dim(k): Interval(0, n - 1) for k, n in enumerate(src)}
    for k, w in enumerate(window):
        terms: list[Expr] = [mul(Dim(k), w.stride)] if src[k] > 1 else []
        if w.size > 1:
            s = Symbol(len(ranges))
            ranges.append((0, w.size - 1))
            bounds[s] = Interval(0, w.size - 1)
            terms.append(s)
        y = add(sum_products_first(terms) if terms else Const(0), -w.pad_low)
        if not Interval(0, dims[k] - 1).contains(range_of(y, bounds)):
            constraints.append((y, (0, dims[k] - 1)))
        results.append(y)
    return build_map(results, box(src), ranges, constraints=constraints)


def select_and_scatter_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Output x is the init value combined with the source values of the windows that select x;
    which element a window selects depends on all of its elements. So x reads every element of
    every window covering x, those windows' source values, and the init value."""
    dims, window, src = _sas_setup(ctx)
    single = all(w.size == 1 for w in window)  # a window of one element selects it, unread
    return [[] if single else [plain(_windows_of(dims, window, src, True))],
            [plain(_windows_of(dims, window, src, False))], [to_scalar(dims)]]


def select_and_scatter_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    dims, window, src = _sas_setup(ctx)
    if input_id == 0:
        return [[] if all(w.size == 1 for w in window)
                else [plain(_windows_of(dims, window, src, True))]]
    if input_id == 1:
        return [[plain(_window_elements(src, window, dims))]]
    return [[to_all((), dims)]]


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
    need(len(dims) == 1, "scan needs one dimension")
    carries = inst.attributes.get("num_carries", 0)
    need(isinstance(carries, int) and 0 <= carries <= ctx.num_operands, "num_carries")
    assert isinstance(carries, int)
    n_in = ctx.num_operands - carries
    n_out = len(ctx.out_leaves) - carries
    need(n_out >= 0, "scan has fewer outputs than carries")
    reverse = inst.attributes.get("is_reverse") in (True, "true")
    names = inst.called_computations
    need(ctx.module is not None and len(names) == 1, "scan needs its computation")
    assert ctx.module is not None
    body = ctx.module.computation(names[0])
    deps = _dependencies(body)
    need(len(deps) == n_out + carries, "scan body returns the wrong number of values")
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


def scan_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    """Scan: body outputs are the scanned outputs then the new carries; operands the scanned
    inputs then the initial carries. Which elements are read follows the body's data flow
    (reachability) step by step: carries feed carries of the next step. Positions are exact
    when the reachable chain lengths form an interval (always with one carry); other dims of
    non-scalar slices are covered whole."""
    n_in, nc, axis, reverse, deps = _scan_setup(ctx)
    n_out = len(ctx.out_leaves) - nc
    out = ctx.out_dims(output_id)
    for i in range(n_in):
        need(axis < len(ctx.in_dims(i)), "scan dimension out of range")
    length = ctx.in_dims(0)[axis] if n_in else 0
    need(all(ctx.in_dims(i)[axis] == length for i in range(n_in)), "scan lengths differ")
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
        return plain(build_map(results, box(dims_out), ranges, constraints=constraints))

    def init_map(c: int, dims_out: Sequence[int], at: tuple[int, int] | None
                 ) -> OperandIndexing:
        m = to_all(dims_out, ctx.in_dims(n_in + c)).map
        if at is not None:  # only at scan steps in [lo, hi]
            t = step_to_pos(Dim(axis))
            m = m.add_constraint(t, at)
        return plain(m)

    maps: list[Maps] = []
    if output_id < n_out:
        need(axis < len(out) and out[axis] == length, "scan output length differs")
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
        maps.append([plain(build_map([Symbol(k) for k in range(len(src))], box(out), ranges))])
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
    return build_map(results, dims, ranges, constraints=constraints)


def scan_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    """The inverse of the output-to-input relations (their results are variables only)."""
    out: list[Maps] = []
    target = ctx.in_dims(input_id)
    for k in range(len(ctx.out_leaves)):
        group: Maps = []
        for m in scan_o2i(ctx, k)[input_id]:
            inv = invert_projection(m.map, target)
            if inv is None:
                raise Malformed("scan map is not a projection")
            group.append(plain(inv))
        out.append(group)
    return out
