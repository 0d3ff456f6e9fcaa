"""Dynamic dimensions: sizes known only at run time, as runtime variables of the maps.

A front end that reads dynamic programs (StableHLO's `tensor<?x4xf32>`) gives every instruction
array shapes sized by the dimension's upper bound (`Shape.dims`, with `dynamic` set) and records
the symbolic size of every dynamic dimension in the attribute `dynamic_sizes` (one tuple per
output leaf, `None` for static dimensions). A symbolic size is an affine sum of size variables
(`SizeVar`: a dimension of a function argument, or an opaque size a program computes) and a
constant; each size variable has its interval, `[1, bound]`.

Maps of such instructions are the maps the per-op table gives at the bound sizes, restricted to
the elements that exist: the domain gets `d_i - N in [lo, -1]` for every dynamic output
dimension of size `N`, and every operand index read gets `e_j - M in [lo, -1]`. `N`, `M` are
runtime variables whose provenance names the size variable (`rt0: size of dimension 0 of
parameter(0) of main`); they do not depend on the index, so two runtime variables with the same
provenance always hold the same value and are merged (`merge_size_vars`). Like every runtime
variable, they are quantified universally by `verifidx.smt.equal`: a claim about such a map holds
for every size in the interval.

This restriction is exact only for ops whose element at an index does not depend on the sizes
of their dynamic dimensions ("prefix-consistent": the op at size N is the op at the bound,
cut to the first N elements). `restrict_to_sizes` checks that per op; where it does not hold
(reverse of a dynamic dimension, concatenation along one, reshape that merges dynamic
dimensions, clamped start indices into a dynamic operand, a broadcast that may expand a dynamic
size-1 dimension), the map becomes "unknown indexing" with the reason. Never a missed read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from verifidx.expr import Const, Dim, Expr, RtVar, add, mul, neg
from verifidx.hlo.module import HloInstruction
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, substitute_runtime
from verifidx.hlo.shape import Shape
from verifidx.indexing_map import IndexingMap, Var
from verifidx.interval import Interval, range_of

if TYPE_CHECKING:
    from verifidx.hlo.ops.common import OpContext

UNBOUNDED_SIZE = 2**31 - 1
"""The upper bound assumed for a dynamic dimension without a stated bound (`?` with no
`#stablehlo.bounds`): sizes are 32-bit in the programs JAX exports. Stated in every map."""

SIZES_ATTRIBUTE = "dynamic_sizes"


@dataclass(frozen=True)
class SizeVar:
    """One unknown size: `key` identifies it, `label` says where it comes from, `bound` is the
    largest value it can take and `least` the smallest (StableHLO's `?`: 1; XLA's bounded
    `<=N`, which may be empty at run time: 0)."""

    key: str
    label: str
    bound: int
    least: int = 1


@dataclass(frozen=True)
class SymSize:
    """`const + sum(coef * var)`: the size of a dynamic dimension."""

    const: int = 0
    terms: tuple[tuple[SizeVar, int], ...] = ()

    @staticmethod
    def of(var: SizeVar) -> SymSize:
        return SymSize(0, ((var, 1),))

    def plus(self, other: SymSize | int) -> SymSize:
        if isinstance(other, int):
            return SymSize(self.const + other, self.terms)
        coefs: dict[SizeVar, int] = dict(self.terms)
        for v, c in other.terms:
            coefs[v] = coefs.get(v, 0) + c
        terms = tuple(sorted(((v, c) for v, c in coefs.items() if c), key=lambda t: t[0].key))
        return SymSize(self.const + other.const, terms)

    def times(self, k: int) -> SymSize:
        if k == 0:
            return SymSize(0)
        return SymSize(self.const * k, tuple((v, c * k) for v, c in self.terms))

    @property
    def is_constant(self) -> bool:
        return not self.terms

    @property
    def hi(self) -> int:
        """The largest value over the variables' intervals."""
        return self.const + sum(c * (v.bound if c > 0 else v.least) for v, c in self.terms)

    @property
    def lo(self) -> int:
        return self.const + sum(c * (v.least if c > 0 else v.bound) for v, c in self.terms)

    def __str__(self) -> str:
        parts = [(f"{c}*" if c != 1 else "") + v.label for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


def leaf_sizes(inst: HloInstruction, leaf: int = 0) -> tuple[SymSize | None, ...] | None:
    """The symbolic sizes of one output leaf (None where the dimension is static), or None when
    the instruction has no dynamic dimension."""
    value = inst.attributes.get(SIZES_ATTRIBUTE)
    if value is None:
        return None
    per_leaf = cast("tuple[tuple[SymSize | None, ...], ...]", value)
    if not 0 <= leaf < len(per_leaf):
        return None
    sizes = per_leaf[leaf]
    return sizes if any(s is not None for s in sizes) else None


def has_dynamic_sizes(inst: HloInstruction) -> bool:
    return SIZES_ATTRIBUTE in inst.attributes


# -- building restricted maps ------------------------------------------------------------------

_SOURCES: dict[SizeVar, HloInstruction] = {}
_VAR_OF: dict[int, SizeVar] = {}


def size_source(var: SizeVar) -> HloInstruction:
    """The instruction a size variable's provenance names: `get-dimension-size` of what it
    measures (synthetic; its label says which dimension of which value)."""
    found = _SOURCES.get(var)
    if found is None:
        found = HloInstruction(name=var.key, opcode="get-dimension-size", shape=Shape("s32"),
                               raw_attributes={"size_of": var.label})
        _SOURCES[var] = found
        _VAR_OF[id(found)] = var
    return found


class _Builder:
    """Adds size variables and constraints to one map, reusing a variable once added."""

    def __init__(self, base: OperandIndexing) -> None:
        self.map = base.map
        self.runtime = list(base.runtime)
        self.index: dict[SizeVar, int] = {}
        for k, rv in enumerate(self.runtime):
            var = _VAR_OF.get(id(rv.source))
            if var is not None:
                self.index[var] = k

    def size_expr(self, size: SymSize) -> Expr:
        terms: list[Expr] = [Const(size.const)]
        for var, coef in size.terms:
            k = self.index.get(var)
            if k is None:
                k = self.map.num_rt_vars
                self.map = self.map.replace(rt_vars=(*self.map.rt_vars,
                                                     Var(Interval(var.least, var.bound))))
                domain = IndexingMap.build([], self.map.dims, self.map.range_vars)
                self.runtime.append(RuntimeVar(size_source(var), domain))
                self.index[var] = k
            terms.append(mul(RtVar(k), coef))
        return add(*terms)

    def below(self, index: Expr, size: SymSize) -> None:
        """Constrain `index < size`."""
        diff = add(index, neg(self.size_expr(size)))
        lo = min(range_of(diff, self.map.bounds).lo, -1)
        self.map = self.map.add_constraint(diff, (lo, -1))

    def done(self, base: OperandIndexing) -> OperandIndexing:
        return OperandIndexing(self.map, tuple(self.runtime), base.replica, base.notes)


def restrict(m: OperandIndexing, domain: Sequence[SymSize | None] | None,
             target: Sequence[SymSize | None] | None, *, domain_only: bool = False
             ) -> OperandIndexing:
    """`m` with its domain cut to `domain`'s sizes and its results to `target`'s."""
    if m.is_undefined or (domain is None and target is None):
        return m
    b = _Builder(m)
    for k, size in enumerate(domain or ()):
        if size is not None and k < b.map.num_dims:
            b.below(Dim(k), size)
    if not domain_only:
        for k, size in enumerate(target or ()):
            if size is not None and k < b.map.num_results:
                b.below(b.map.results[k], size)
    return b.done(m)


def start_indexing(inst: HloInstruction, leaf: int, shape: Shape) -> OperandIndexing:
    """The identity on one leaf of `inst`, cut to its dynamic sizes (where a walk starts)."""
    base = OperandIndexing(IndexingMap.identity(shape.dims))
    sizes = leaf_sizes(inst, leaf)
    return restrict(base, sizes, None, domain_only=True) if sizes else base


# -- which ops are prefix-consistent -----------------------------------------------------------

Check = Callable[["OpContext"], str | None]


def _never(what: str) -> Check:
    return lambda ctx: what


def _static_operand(i: int, what: str) -> Check:
    def check(ctx: OpContext) -> str | None:
        op = ctx.operands[i] if i < len(ctx.operands) else None
        return what if op is not None and leaf_sizes(op) else None
    return check


def _same_size(a: SymSize | None, b: SymSize | None, na: int, nb: int) -> bool:
    if a is None and b is None:
        return na == nb
    return a == b


def _broadcast_check(ctx: OpContext) -> str | None:
    op = ctx.operands[0]
    src = (leaf_sizes(op) if op is not None else None) or (None,) * ctx.operand_shapes[0].rank
    out = leaf_sizes(ctx.instruction) or (None,) * ctx.instruction.shape.rank
    dims = ctx.instruction.dimensions or ()
    for k, d in enumerate(dims):
        if k < len(src) and d < len(out) and (src[k] is not None or out[d] is not None) and \
                not _same_size(src[k], out[d], ctx.operand_shapes[0].dims[k],
                               ctx.instruction.shape.dims[d]):
            return "broadcast of a dynamic dimension that may have size 1"
    return None


def _along_static(attr: str, what: str) -> Check:
    def check(ctx: OpContext) -> str | None:
        axes = cast("tuple[int, ...]", ctx.instruction.attributes.get(attr) or ())
        shapes = [leaf_sizes(o) if o is not None else None for o in ctx.operands]
        shapes.append(leaf_sizes(ctx.instruction))
        for sizes in shapes:
            if sizes and any(a < len(sizes) and sizes[a] is not None for a in axes):
                return what
        return None
    return check


def _reshape_check(ctx: OpContext) -> str | None:
    op = ctx.operands[0]
    a = list((leaf_sizes(op) if op is not None else None) or (None,) * ctx.operand_shapes[0].rank)
    b = list(leaf_sizes(ctx.instruction) or (None,) * ctx.instruction.shape.rank)
    da, db = ctx.operand_shapes[0].dims, ctx.instruction.shape.dims

    def groups(sizes: list[SymSize | None], dims: tuple[int, ...]
               ) -> tuple[list[SymSize], list[int]]:
        dyn: list[SymSize] = []
        prods, p = [], 1
        for s, n in zip(sizes, dims):
            if s is None:
                p *= n
            else:
                dyn.append(s)
                prods.append(p)
                p = 1
        prods.append(p)
        return dyn, prods

    (dyn_a, pa), (dyn_b, pb) = groups(a, da), groups(b, db)
    if dyn_a != dyn_b or pa != pb:
        return "reshape that moves or merges a dynamic dimension"
    return None


CHECKS: dict[str, Check] = {
    "reverse": _along_static("dimensions", "reverse along a dynamic dimension"),
    "concatenate": _along_static("dimensions", "concatenation along a dynamic dimension"),
    "broadcast": _broadcast_check,
    "reshape": _reshape_check,
    "bitcast": _never("bitcast with dynamic dimensions"),
    "dynamic-slice": _static_operand(0, "start indices clamped to a dynamic size"),
    "dynamic-update-slice": _static_operand(0, "start indices clamped to a dynamic size"),
    "gather": _static_operand(0, "start indices clamped to a dynamic size"),
    "scatter": _static_operand(0, "scatter into an operand of dynamic size"),
    "all-gather": _never("all-gather with dynamic dimensions"),
    "scan": _never("scan with dynamic dimensions"),
    "scaled-dot": _never("scaled-dot with dynamic dimensions"),
    "bitcast-convert": lambda ctx: None,
    "fft": _never("fft with dynamic dimensions"),
    "select-and-scatter": _never("select-and-scatter with dynamic dimensions"),
    "topk": _never("top-k with dynamic dimensions"),
    "custom-call": _never("a custom call with dynamic dimensions"),
}
"""Per opcode: why its table map is not the map at every size (None: it is). Opcodes not
listed are prefix-consistent by their definition (elementwise, transpose, reduce, dot, slice,
pad, reduce-window, convolution, sort, iota, the routing ops, calls)."""


Groups = tuple[tuple[OperandIndexing, ...], ...]


def restrict_to_sizes(ctx: OpContext, maps: Groups, direction: str, index: int
                      ) -> tuple[Groups, tuple[str, ...]]:
    """The per-op maps (one group per operand for out2in, per output leaf for in2out) of an
    instruction with dynamic dimensions, valid at every size (see the module docstring), and
    the notes to add; unchanged when no dynamic dimension is involved."""
    inst = ctx.instruction
    operand_sizes = [leaf_sizes(o) if o is not None else None for o in ctx.operands]
    if not has_dynamic_sizes(inst) and not any(operand_sizes):
        return maps, ()
    check = CHECKS.get(inst.opcode)
    why = check(ctx) if check is not None else None
    if why is None:
        why = _static_reads_dynamic(ctx, maps, direction, index, operand_sizes)
    if why is not None:
        note = f"{inst.name} ({inst.opcode}): {why} is not supported"
        return tuple((OperandIndexing.undefined(note),) for _ in maps), (note,)
    keep_operand = inst.opcode == "set-dimension-size"
    groups = []
    for i, group in enumerate(maps):
        if direction == "out2in":
            domain = leaf_sizes(inst, index)
            target = None if keep_operand and i == 0 else (
                operand_sizes[i] if i < len(operand_sizes) else None)
        else:
            domain = operand_sizes[index] if index < len(operand_sizes) else None
            target = leaf_sizes(inst, i)
        groups.append(tuple(restrict(m, domain, target) for m in group))
    return tuple(groups), ()


def _static_reads_dynamic(ctx: OpContext, maps: Groups, direction: str, index: int,
                          operand_sizes: Sequence[tuple[SymSize | None, ...] | None]
                          ) -> str | None:
    """Why the maps cannot be cut to the sizes, when a static dimension of the output is
    indexed together with a dynamic dimension of an operand (a slice of part of a bounded
    dimension, an elementwise op whose output is static): the output's elements exist at every
    size but those past the operand's size read past it (padding in XLA's buffers), so cutting
    the reads would drop reads that happen."""
    inst = ctx.instruction

    def dyn(sizes: Sequence[SymSize | None] | None, k: int) -> bool:
        return sizes is not None and k < len(sizes) and sizes[k] is not None

    for i, group in enumerate(maps):
        if direction == "out2in":
            out_sizes = leaf_sizes(inst, index)
            in_sizes = operand_sizes[i] if i < len(operand_sizes) else None
        else:
            out_sizes = leaf_sizes(inst, i)
            in_sizes = operand_sizes[index] if index < len(operand_sizes) else None
        if not in_sizes:
            continue
        for m in group:
            if m.is_undefined:
                continue
            for k, result in enumerate(m.map.results):
                dims = {v.index for v in result.variables() if isinstance(v, Dim)}
                if direction == "out2in":
                    linked = dyn(in_sizes, k) and any(not dyn(out_sizes, d) for d in dims)
                else:
                    linked = not dyn(out_sizes, k) and any(dyn(in_sizes, d) for d in dims)
                if linked:
                    return "a static output dimension indexed by a dynamic operand dimension"
    return None


def size_var_of(rv: RuntimeVar) -> SizeVar | None:
    """The size variable a runtime variable stands for, if it is one."""
    return _VAR_OF.get(id(rv.source))


def instantiate_sizes(ind: OperandIndexing, values: Mapping[str, int]) -> OperandIndexing:
    """The map at concrete sizes: every size variable whose key is in `values` replaced by
    that number (the relation at those sizes; other runtime variables stay)."""
    m = ind.map
    if m.is_undefined or not ind.runtime:
        return ind
    subst: dict[int, Expr] = {}
    for k, rv in enumerate(ind.runtime):
        var = size_var_of(rv)
        if var is not None and var.key in values:
            subst[k] = Const(values[var.key])
    return substitute_runtime(ind, subst)
