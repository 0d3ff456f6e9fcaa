"""Dynamic dimensions: sizes known only at run time, as sizes of the maps.

A front end that reads dynamic programs (StableHLO's `tensor<?x4xf32>`, HLO's `f32[<=16,4]`)
gives every instruction array shapes sized by the dimension's upper bound (`Shape.dims`, with
`dynamic` set) and records the symbolic size of every dynamic dimension in the attribute
`dynamic_sizes` (one tuple per output leaf, `None` for static dimensions). A symbolic size is a
polynomial in size variables (`SizeVar`: a dimension of a function argument, or an opaque size
a program computes) and derived sizes (`Quotient`: `floor(P / k)` or `P mod k` of such a
polynomial by a constant) with integer coefficients; each size variable has its interval.

In a map a size variable is a size (`verifidx.core.expr.Size`, docs/semantics.md, Sizes) named
after its key, with its interval and its provenance: universally quantified, so a claim about
the map holds for every size in the interval, and the same name in two maps is the same
size, which composition keeps as one. Maps of such instructions are the maps the per-op table
gives at the bound sizes, restricted to the elements that exist: the domain gets
`d_i - N in [lo, -1]` for every dynamic output dimension of size `N`, and every operand index
read gets `e_j - M in [lo, -1]`.

This restriction is exact only for ops whose element at an index does not depend on the sizes
of their dynamic dimensions ("prefix-consistent": the op at size N is the op at the bound,
cut to the first N elements). `restrict_to_sizes` checks that per op; where it does not hold,
the op's maps are built with the sizes in them where it can be (`verifidx.hlo.sized_ops`:
reverse, concatenation, reshape, gather, dynamic-slice and dynamic-update-slice), and are
"unknown indexing" with the reason elsewhere (scatter into a dynamic operand, a broadcast that may
expand a dynamic size-1 dimension, ...). Never a missed read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from verifidx.core.expr import Const, Dim, Expr, Size, add, floordiv, is_size_name, mod, mul, neg
from verifidx.core.indexing_map import IndexingMap, merge_sizes
from verifidx.core.indexing_map import SizeVar as MapSize
from verifidx.core.interval import Interval, range_of
from verifidx.hlo.module import HloInstruction
from verifidx.hlo.runtime import OperandIndexing
from verifidx.hlo.shape import Shape

if TYPE_CHECKING:
    from verifidx.hlo.ops.common import OpContext

UNBOUNDED_SIZE = 2**31 - 1
"""The upper bound assumed for a dynamic dimension without a stated bound (`?` with no
`#stablehlo.bounds`): sizes are 32-bit in the programs JAX exports. Stated in every map."""

SIZES_ATTRIBUTE = "dynamic_sizes"

VALUE_ATTRIBUTE = "size_value"
"""A scalar integer instruction whose value is a symbolic size (a `SymSize`): the StableHLO
reader records it where it follows shape arithmetic (`get_dimension_size`, jax.export's
dimension-variable arguments, sums and products of them)."""


_ESCAPES = {"_": "__", "/": "_s", ".": "_p", "+": "_a"}


def size_name(key: str) -> str:
    """The name of the size with key `key` in maps: the key itself when it is a size name (a
    `jax.export` dimension variable, `main_arg0_d1`), else an escaped form, one-to-one: `z_`,
    then the key with `_` written `__`, `/` `_s`, `.` `_p`, `+` `_a` and any other character but
    letters and digits `_x<hex>_` (an unescaped name never starts with `z_`)."""
    if is_size_name(key) and not key.startswith("z_"):
        return key
    out = ["z_"]
    for ch in key:
        if ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.append(_ESCAPES.get(ch) or f"_x{ord(ch):x}_")
    return "".join(out)


@dataclass(frozen=True)
class SizeVar:
    """One unknown size: `key` identifies it, `label` says where it comes from, `bound` is the
    largest value it can take and `least` the smallest (StableHLO's `?`: 1; XLA's bounded
    `<=N`, which may be empty at run time: 0).

    In maps it is the size `name` (`verifidx.core.expr.Size`, docs/semantics.md, Sizes) with the
    interval `[least, bound]`. A size of a map is positive, so one that may be 0 is the size
    `name` minus 1, `name` in `[1, bound + 1]` (its name is that of `key + "+1"`)."""

    key: str
    label: str
    bound: int
    least: int = 1

    @property
    def shift(self) -> int:
        """What the map's size exceeds this size by (1 for a size that may be 0)."""
        return 1 if self.least < 1 else 0

    @property
    def name(self) -> str:
        return size_name(self.key + "+1" if self.shift else self.key)

    def declared(self) -> MapSize:
        extra = " plus 1" if self.shift else ""
        return MapSize(self.name, Interval(self.least + self.shift, self.bound + self.shift),
                       provenance=f"size of {self.label}{extra}")

    def expr(self) -> Expr:
        return add(Size(self.name), -self.shift) if self.shift else Size(self.name)

    @property
    def variables(self) -> tuple[SizeVar, ...]:
        return (self,)

    def value(self, values: Mapping[str, int]) -> int | None:
        return values.get(self.key)


@dataclass(frozen=True)
class Quotient:
    """A derived size: `floor(num / k)` (`num mod k` when `remainder`) for a constant `k >= 2`
    and a polynomial `num` that is at least 0 at every size, with coefficients in `[0, k)`
    (`SymSize.floordiv` puts it in that form; `x[1::2]` has `b // 2` elements). Not a size of
    the maps: its expression is `num floordiv k` over `num`'s sizes, so fixing those fixes
    it."""

    num: SymSize
    k: int
    remainder: bool = False

    @property
    def op(self) -> str:
        return "mod" if self.remainder else "floordiv"

    @property
    def key(self) -> str:
        return f"({self.num.key}) {self.op} {self.k}"

    @property
    def label(self) -> str:
        return f"({self.num}) {self.op} {self.k}"

    @property
    def least(self) -> int:
        return 0 if self.remainder else self.num.lo // self.k

    @property
    def bound(self) -> int:
        return min(self.k - 1, self.num.hi) if self.remainder else self.num.hi // self.k

    @property
    def variables(self) -> tuple[SizeVar, ...]:
        return self.num.variables

    def value(self, values: Mapping[str, int]) -> int | None:
        n = self.num.value(values)
        return None if n is None else n % self.k if self.remainder else n // self.k

    def expr(self) -> Expr:
        return (mod if self.remainder else floordiv)(self.num.expr(), self.k)


Atom = SizeVar | Quotient
"""A factor of a size polynomial: a size variable or a derived size, at least 0."""

Monomial = tuple[Atom, ...]
"""A product of atoms, sorted by key (with repetition)."""


def _mono_key(term: tuple[Monomial, int]) -> tuple[str, ...]:
    return tuple(v.key for v in term[0])


@dataclass(frozen=True)
class SymSize:
    """`const + sum(coef * product of vars)`: the size of a dynamic dimension, a polynomial in
    size variables with integer coefficients (`jax.export` multiplies sizes: `b * s`)."""

    const: int = 0
    terms: tuple[tuple[Monomial, int], ...] = ()

    @staticmethod
    def of(var: Atom) -> SymSize:
        return SymSize(0, (((var,), 1),))

    def plus(self, other: SymSize | int) -> SymSize:
        if isinstance(other, int):
            return SymSize(self.const + other, self.terms)
        coefs: dict[Monomial, int] = dict(self.terms)
        for m, c in other.terms:
            coefs[m] = coefs.get(m, 0) + c
        terms = tuple(sorted(((m, c) for m, c in coefs.items() if c), key=_mono_key))
        return SymSize(self.const + other.const, terms)

    def times(self, k: int) -> SymSize:
        if k == 0:
            return SymSize(0)
        return SymSize(self.const * k, tuple((m, c * k) for m, c in self.terms))

    def mul(self, other: SymSize) -> SymSize:
        """The product of two polynomials."""
        out = other.times(self.const)
        for m, c in self.terms:
            out = out.plus(SymSize(0, ((m, c),)).times(other.const))
            for m2, c2 in other.terms:
                mono = tuple(sorted((*m, *m2), key=lambda v: v.key))
                out = out.plus(SymSize(0, ((mono, c * c2),)))
        return out

    @property
    def is_constant(self) -> bool:
        return not self.terms

    @property
    def variables(self) -> tuple[SizeVar, ...]:
        """The size variables it depends on (those of a derived size's numerator included)."""
        return tuple(dict.fromkeys(x for m, _c in self.terms for v in m for x in v.variables))

    @property
    def key(self) -> str:
        """Identifies the polynomial by its variables' keys."""
        parts = [f"{c}*" + "*".join(v.key for v in m) for m, c in self.terms]
        return " + ".join([*parts, str(self.const)])

    def _divided(self, k: int) -> tuple[SymSize, SymSize]:
        """`(q, r)` with `self = k * q + r`, `r`'s coefficients in `[0, k)`: `r >= 0`."""
        if k < 1:
            raise ValueError(f"a size is divided by a positive constant, not {k}")
        q = SymSize(self.const // k, tuple((m, c // k) for m, c in self.terms if c // k))
        r = SymSize(self.const % k, tuple((m, c % k) for m, c in self.terms if c % k))
        return q, r

    def floordiv(self, k: int) -> SymSize:
        """`floor(self / k)` for a constant `k >= 1`: `q + floor(r / k)` (`_divided`), the
        latter a derived size (`Quotient`) unless `r < k` at every size."""
        q, r = self._divided(k)
        return q if r.hi < k else q.plus(SymSize.of(Quotient(r, k)))

    def mod(self, k: int) -> SymSize:
        """`self mod k` for a constant `k >= 1` (in `[0, k)`)."""
        _q, r = self._divided(k)
        return r if r.hi < k else SymSize.of(Quotient(r, k, remainder=True))

    def _range(self, m: Monomial) -> tuple[int, int]:
        lo = hi = 1
        for v in m:  # every atom is at least 0
            lo, hi = lo * v.least, hi * v.bound
        return lo, hi

    @property
    def hi(self) -> int:
        """The largest value over the variables' intervals (a bound: terms taken apart)."""
        return self.const + sum(c * self._range(m)[1 if c > 0 else 0] for m, c in self.terms)

    @property
    def lo(self) -> int:
        return self.const + sum(c * self._range(m)[0 if c > 0 else 1] for m, c in self.terms)

    def value(self, values: Mapping[str, int]) -> int | None:
        """The size at the variables' values (by key), None when one is missing."""
        total = self.const
        for m, c in self.terms:
            p = c
            for v in m:
                x = v.value(values)
                if x is None:
                    return None
                p *= x
            total += p
        return total

    def expr(self) -> Expr:
        """The size as an expression in the maps' sizes."""
        terms: list[Expr] = [Const(self.const)]
        for m, c in self.terms:
            product = m[0].expr()
            for v in m[1:]:
                product = mul(product, v.expr())
            terms.append(mul(product, c))
        return add(*terms)

    def __str__(self) -> str:
        parts = [(f"{c}*" if c != 1 else "") + "*".join(v.label for v in m)
                 for m, c in self.terms]
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


def declare(m: IndexingMap, sizes: Sequence[SymSize | None]) -> IndexingMap:
    """`m` with the sizes of `sizes`' variables declared (docs/semantics.md, Sizes)."""
    new = tuple(dict.fromkeys(v.declared() for s in sizes if s is not None for v in s.variables))
    if not new or m.is_undefined:
        return m
    return m.replace(sizes=merge_sizes(m.sizes, tuple(sorted(new, key=lambda z: z.name))))


def _below(m: IndexingMap, index: Expr, size: SymSize) -> IndexingMap:
    """`m` with `index < size` (a constraint over the map's sizes)."""
    diff = add(index, neg(size.expr()))
    lo = min(range_of(diff, m.bounds).lo, -1)
    return m.add_constraint(diff, (lo, -1))


def restrict(m: OperandIndexing, domain: Sequence[SymSize | None] | None,
             target: Sequence[SymSize | None] | None, *, domain_only: bool = False
             ) -> OperandIndexing:
    """`m` with its domain cut to `domain`'s sizes and its results to `target`'s."""
    if m.is_undefined or (domain is None and target is None):
        return m
    out = declare(m.map, [*(domain or ()), *(() if domain_only else target or ())])
    for k, size in enumerate(domain or ()):
        if size is not None and k < out.num_dims:
            out = _below(out, Dim(k), size)
    if not domain_only:
        for k, size in enumerate(target or ()):
            if size is not None and k < out.num_results:
                out = _below(out, out.results[k], size)
    return OperandIndexing(out, m.runtime, m.replica, m.notes)


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


SizedMaps = Callable[["OpContext", str, int], tuple[Groups | None, str]]
"""Builds an op's maps with sizes in them (`verifidx.hlo.sized_ops.sized_maps`), or says why
it cannot."""


def restrict_to_sizes(ctx: OpContext, maps: Groups, direction: str, index: int,
                      sized_maps: SizedMaps) -> tuple[Groups, tuple[str, ...], bool]:
    """The per-op maps (one group per operand for out2in, per output leaf for in2out) of an
    instruction with dynamic dimensions, valid at every size (see the module docstring), the
    notes to add, and whether the table's notes still apply (not to maps `sized_maps` builds
    for ops that are not prefix-consistent); unchanged when no dynamic dimension is
    involved."""
    inst = ctx.instruction
    operand_sizes = [leaf_sizes(o) if o is not None else None for o in ctx.operands]
    if not has_dynamic_sizes(inst) and not any(operand_sizes):
        return maps, (), True
    check = CHECKS.get(inst.opcode)
    why = check(ctx) if check is not None else None
    if why is not None:
        sized, reason = sized_maps(ctx, direction, index)
        if sized is not None:
            return sized, (), False
        why = f"{why} ({reason})" if reason else why
    else:
        why = _static_reads_dynamic(ctx, maps, direction, index, operand_sizes)
    if why is not None:
        note = f"{inst.name} ({inst.opcode}): {why} is not supported"
        return tuple((OperandIndexing.undefined(note),) for _ in maps), (note,), True
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
    return tuple(groups), (), True


def _callee_has_operand_sizes(ctx: OpContext) -> bool:
    """True when the called computation's parameters have the sizes of the call's operands
    (the StableHLO reader converts a callee per call-site sizes): its maps, built with those
    sizes, are exact and read nothing past an operand's size."""
    called = ctx.instruction.called_computations
    if len(called) != 1 or ctx.module is None or called[0] not in ctx.module.computations:
        return False
    params = ctx.module.computation(called[0]).parameters
    return len(params) == len(ctx.operands) and all(
        op is not None and leaf_sizes(p) == leaf_sizes(op) for p, op in zip(params, ctx.operands))


def _static_reads_dynamic(ctx: OpContext, maps: Groups, direction: str, index: int,
                          operand_sizes: Sequence[tuple[SymSize | None, ...] | None]
                          ) -> str | None:
    """Why the maps cannot be cut to the sizes, when a static dimension of the output is
    indexed together with a dynamic dimension of an operand (a slice of part of a bounded
    dimension, an elementwise op whose output is static): the output's elements exist at every
    size but those past the operand's size read past it (padding in XLA's buffers), so cutting
    the reads would drop reads that happen."""
    inst = ctx.instruction
    if inst.opcode == "call" and _callee_has_operand_sizes(ctx):
        return None

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


def instantiate_sizes(ind: OperandIndexing, values: Mapping[str, int]) -> OperandIndexing:
    """The map at concrete sizes: each size variable whose key is in `values` replaced by that
    number (the relation at those sizes; other sizes stay)."""
    m = ind.map
    if m.is_undefined or not m.sizes:
        return ind
    names = {z.name for z in m.sizes}
    given: dict[str, int] = {}
    for key, value in values.items():
        if size_name(key) in names:
            given[size_name(key)] = value
        elif size_name(key + "+1") in names:
            given[size_name(key + "+1")] = value + 1
    if not given:
        return ind
    return OperandIndexing(m.with_sizes(given), ind.runtime, ind.replica, ind.notes)
