"""Index tensors a program computes from iotas, constants and sizes, as expressions.

`jax.export` lowers `x[::-1]` and `x[1::2]` on a dynamic dimension to a `gather` whose start
indices it computes: `(b - 1) + (-1) * iota`, broadcast and reshaped. `value_at` gives the element
of such a tensor at a symbolic index as an expression in that index and the maps' sizes, so a
start index clamped to a size can be folded where the clamp provably never acts
(`verifidx.hlo.sized_ops`).

Followed: integer `constant` scalars, `iota`, scalars whose value is a size
(`dynamic_dims.VALUE_ATTRIBUTE`), `get-dimension-size`, `broadcast`, `reshape` that only adds
or drops static size-1 dimensions, `reverse`, `concatenate` read at a constant index along
static pieces (an index vector's component), `convert` to the same type, and `add`,
`subtract`, `multiply` (when one factor holds no index variable), `negate`. Integer
arithmetic wraps in the program, but add, subtract, multiply and negate agree with the
mathematical value modulo 2^bits, so an expression shown to lie in `[-2^31, 2^31)` is the
program's value (for 32- and 64-bit integers, the only ones followed). Anything else gives
None (the start stays a runtime variable).

With `symbols` (a `ValueSymbols` of the module) and the index variables' `bounds`, more is
followed (`value_pieces`): a scalar integer parameter of the entry is the *value symbol*
`arg<N>` (a `Size` leaf with its element type's interval, docs/semantics.md, Values); a
parameter of a called computation is its operand at the call this walk entered (a scalar
`call`/`fusion` is its computation's root), or at its only call site; broadcast, reshape,
reverse, concatenate, slice and transpose of such values; get-tuple-element
of a `tuple`, reshape and bitcast of scalars; `convert` between integer types; `divide` and
`remainder` by a positive constant (HLO truncates: split on the dividend's sign where it may be
negative); `and` with a constant `2^k - 1` (`mod 2^k`); `sign`; `clamp`, `minimum`, `maximum`;
integer array constants (piece by piece over the index variables' values, up to MAX_PIECES);
`select` on a predicate built from `compare`s of integers with `and`/`or`/`not`, `min`/`max`
where it is one, else pieces, each under its condition. Wrapping is exact: where add,
subtract, multiply or negate may leave the type's range (on the intervals, narrowed by the
pieces' conditions linear in one variable), the value splits into pieces `v - k * 2^bits`
under `v in [min + k * 2^bits, max + k * 2^bits]` (at most MAX_WRAPS, else the whole value is
None); a `convert` must be shown to fit its target type; every other op followed gives one of
its operands' values or one between or below them, so it stays in range as they do. Loop
induction variables are not followed."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from verifidx.core.expr import (
    Add,
    Const,
    Dim,
    Expr,
    Mul,
    RtVar,
    Size,
    Symbol,
    Variable,
    add,
    ceildiv,
    floordiv,
    maximum,
    minimum,
    mod,
    mul,
    neg,
)
from verifidx.core.interval import Interval, range_of
from verifidx.hlo.dynamic_dims import VALUE_ATTRIBUTE, SymSize, leaf_sizes
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.ops.common import Malformed
from verifidx.hlo.ops.data_movement import bitcast_index_map
from verifidx.hlo.shape import INTEGER_BITS, integer_interval

_T = TypeVar("_T")

_INTEGER = ("s32", "s64", "u32", "u64")
"""Index types followed: at least 32 bits, so a value shown in `[0, 2^31)` is representable
(narrower types would wrap inside a size's range)."""

_DEPTH = 64
"""How many instructions deep `value_at` looks before it gives up."""


def _sym(inst: HloInstruction, k: int) -> SymSize:
    """The size of dimension `k` (a constant for a static one)."""
    sizes = leaf_sizes(inst)
    s = sizes[k] if sizes is not None and k < len(sizes) else None
    return s if s is not None else SymSize(inst.shape.dims[k])




def _non_unit(inst: HloInstruction) -> list[int]:
    """The dimensions a reshape may not add or drop: all but the static size-1 ones."""
    return [k for k, n in enumerate(inst.shape.dims) if n != 1 or inst.shape.dynamic[k]]


def _has_index(e: Expr) -> bool:
    return any(isinstance(v, (Dim, Symbol, RtVar)) for v in e.variables())


def value_at(inst: HloInstruction, index: Sequence[Expr], comp: HloComputation,
             used: list[SymSize], depth: int = _DEPTH, *, symbols: ValueSymbols | None = None,
             bounds: Mapping[Variable, Interval] | None = None) -> Expr | None:
    """The element of `inst` at `index` (one expression per dimension), or None; `used`
    collects the sizes the expression names (to declare them in a map). With `symbols` and
    `bounds` (of the index variables) as `value_pieces`, when that gives one piece."""
    if symbols is not None and bounds is not None:
        found = value_pieces(inst, index, comp, used, symbols, bounds, depth)
        if found is None or len(found) != 1 or found[0].where:
            return None
        return found[0].value
    shape = inst.shape
    if depth <= 0 or shape.is_tuple or shape.element_type not in _INTEGER or \
            len(index) != shape.rank:
        return None
    value = inst.attributes.get(VALUE_ATTRIBUTE)
    if isinstance(value, SymSize):
        used.append(value)
        return value.expr()
    op = inst.opcode
    operands = [comp.instruction(name) for name in inst.operands]

    def size(of: HloInstruction, k: int) -> Expr:
        s = _sym(of, k)
        used.append(s)
        return s.expr()

    def at(i: int, idx: Sequence[Expr]) -> Expr | None:
        return value_at(operands[i], idx, comp, used, depth - 1)

    if op == "constant":
        v = inst.literal_value
        return Const(v) if shape.rank == 0 and isinstance(v, int) and \
            not isinstance(v, bool) else None
    if op == "iota":
        d = inst.iota_dimension
        return index[d] if d is not None and 0 <= d < shape.rank else None
    if op == "get-dimension-size":
        dims = inst.dimensions or ()
        src = operands[0]
        return size(src, dims[0]) if len(dims) == 1 and dims[0] < src.shape.rank else None
    if op == "broadcast":
        dims = inst.dimensions or ()
        if any(d >= len(index) for d in dims):
            return None
        return at(0, [index[d] for d in dims])
    if op == "reshape":
        kept, src_kept = _non_unit(inst), _non_unit(operands[0])
        if [_sym(inst, k) for k in kept] != [_sym(operands[0], j) for j in src_kept]:
            return None
        idx: list[Expr] = [Const(0)] * operands[0].shape.rank
        for k, j in zip(kept, src_kept):
            idx[j] = index[k]
        return at(0, idx)
    if op == "concatenate":  # at a constant index along it (an index vector's component)
        axis = (inst.dimensions or (0,))[0]
        at_axis = index[axis] if axis < len(index) else None
        if not isinstance(at_axis, Const):
            return None
        offset = 0
        for i, o in enumerate(operands):
            if o.shape.dynamic[axis]:
                return None
            if offset <= at_axis.value < offset + o.shape.dims[axis]:
                return at(i, [Const(at_axis.value - offset) if k == axis else e
                              for k, e in enumerate(index)])
            offset += o.shape.dims[axis]
        return None
    if op == "reverse":
        axes = set(cast("tuple[int, ...]", inst.dimensions or ()))
        return at(0, [add(size(inst, k), -1, neg(e)) if k in axes else e
                      for k, e in enumerate(index)])
    if op == "convert":
        same = operands[0].shape.element_type == shape.element_type
        return at(0, index) if same else None
    if op == "negate":
        a = at(0, index)
        return None if a is None else neg(a)
    if op in ("add", "subtract", "multiply") and len(operands) == 2:
        a, b = at(0, index), at(1, index)
        if a is None or b is None:
            return None
        if op == "add":
            return add(a, b)
        if op == "subtract":
            return add(a, neg(b))
        return None if _has_index(a) and _has_index(b) else mul(a, b)
    return None


# -- value symbols ------------------------------------------------------------------------------

MAX_PIECES = 32
"""A value split into more pieces than this (selects of selects) is not followed."""

MAX_WRAPS = 3
"""A value that may wrap around its type more than this many ways is not followed."""

_MODULAR = frozenset({"add", "subtract", "multiply", "negate"})
"""Integer ops whose result is the mathematical value modulo 2^bits (two's complement). A
`convert` is followed only where its value fits the target type (what a narrowing convert of
a value that does not fit gives is not HLO's to promise)."""


def value_name(parameter: int, element: Sequence[int] = ()) -> str:
    """The value symbol of entry parameter `parameter` (`arg<N>`), or of its element
    `element` (`arg<N>_<i>_<j>`; `expr.is_value_name`)."""
    return f"arg{parameter}" + "".join(f"_{i}" for i in element)


def spelled_value(name: str) -> str:
    """A value symbol as a user reads it: `arg1`, or the element `arg1[2,0]`."""
    head, *element = name.split("_")
    return head + (f"[{','.join(element)}]" if element else "")


Where = tuple[tuple[Expr, Interval], ...]
"""Constraints: each expression lies in its interval."""


def call_graph(module: HloModule) -> tuple[dict[int, HloComputation],
                                           dict[str, list[tuple[HloComputation, HloInstruction]]]]:
    """Each instruction's computation (by id), and each computation's call sites."""
    home: dict[int, HloComputation] = {}
    callers: dict[str, list[tuple[HloComputation, HloInstruction]]] = {}
    for comp in module.computations.values():
        for inst in comp.instructions:
            home[id(inst)] = comp
            for name in inst.called_computations:
                callers.setdefault(name, []).append((comp, inst))
    return home, callers


class ValueSymbols:
    """What `value_pieces` needs of the module (the entry, each computation's call sites) and
    what it found: the value symbols named so far, with their types' intervals."""

    def __init__(self, module: HloModule) -> None:
        self.module = module
        self.entry = module.entry
        self.home, self.callers = call_graph(module)
        self.declared: dict[str, Interval] = {}
        self.bound: dict[str, int] = {}
        """Sizes (by name) the caller fixes: a program compared at one shape."""


def joined(*parts: Where) -> Where:
    """The constraints of all `parts`, each once."""
    out: list[tuple[Expr, Interval]] = []
    for part in parts:
        for c in part:
            if c not in out:
                out.append(c)
    return tuple(out)


@dataclass(frozen=True)
class Piece:
    """The value where every constraint of `where` holds (expression in its interval)."""

    value: Expr
    where: Where = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "where", joined(self.where))


_COMPLEMENTS = {"LT": "GE", "LE": "GT", "GT": "LE", "GE": "LT", "EQ": "NE", "NE": "EQ"}


def _comparison(direction: str, r: Interval) -> list[Interval]:
    """The intervals of `a - b` (which lies in `r`) where `a DIRECTION b` holds, empty ones
    left out."""
    lo, hi = min(r.lo, -1), max(r.hi, 1)
    found = {"LT": [Interval(lo, -1)], "LE": [Interval(lo, 0)], "GT": [Interval(1, hi)],
             "GE": [Interval(0, hi)], "EQ": [Interval(0, 0)],
             "NE": [Interval(lo, -1), Interval(1, hi)]}[direction]
    return [iv for iv in found if not iv.intersect(r).is_empty]


def _linear(e: Expr) -> tuple[Variable, int, int] | None:
    """(x, a, b) where `e` is `a * x + b` for one variable x and a != 0, else None."""
    b = 0
    if isinstance(e, Add) and len(e.terms) == 2:
        x, c = e.terms
        if isinstance(c, Const):
            e, b = x, c.value
    a = 1
    if isinstance(e, Mul):
        x, c = e.lhs, e.rhs
        if isinstance(c, Const) and c.value:
            e, a = x, c.value
    return (e, a, b) if isinstance(e, Variable) else None


def _narrowed(bounds: Mapping[Variable, Interval], where: Sequence[tuple[Expr, Interval]]
              ) -> Mapping[Variable, Interval]:
    """`bounds` cut by the constraints that bound one variable linearly (`a * x + b`)."""
    out: dict[Variable, Interval] | None = None
    for e, iv in where:
        found = _linear(e)
        if found is None or found[0] not in bounds:
            continue
        v, a, b = found
        lo, hi = iv.lo - b, iv.hi - b  # a * x in [lo, hi]
        if a < 0:
            a, lo, hi = -a, -hi, -lo
        out = dict(bounds) if out is None else out
        out[v] = out[v].intersect(Interval(-((-lo) // a), hi // a))
    return bounds if out is None else out


def feasible(where: Where, bounds: Mapping[Variable, Interval]) -> bool:
    """False when intervals (`bounds`, narrowed by the constraints on one variable) show the
    constraints `where` can never hold together: a region of a select that the conditions
    before it exclude. True when they may (or a variable has no bounds)."""
    joint: dict[Expr, Interval] = {}
    for e, iv in where:  # the same expression constrained twice: both intervals at once
        joint[e] = joint[e].intersect(iv) if e in joint else iv
        if joint[e].is_empty:
            return False
    try:
        env = _narrowed(bounds, where)
        if any(iv.is_empty for iv in env.values()):
            return False
        return all(not range_of(e, env).intersect(iv).is_empty for e, iv in joint.items())
    except (KeyError, ValueError, ArithmeticError):
        return True


def _literal_ints(text: str, dims: Sequence[int]) -> list[int] | None:
    """The elements of an integer array literal (`{ {3}, {1}, {4} }`) in row-major order, or
    None when the text does not hold exactly one integer per element."""
    words = text.replace("{", " ").replace("}", " ").replace(",", " ").split()
    try:
        values = [int(w) for w in words]
    except ValueError:
        return None
    count = 1
    for n in dims:
        count *= n
    return values if len(values) == count else None


def value_pieces(inst: HloInstruction, index: Sequence[Expr], comp: HloComputation,
                 used: list[SymSize], symbols: ValueSymbols,
                 bounds: Mapping[Variable, Interval], depth: int = _DEPTH
                 ) -> list[Piece] | None:
    """The element of `inst` at `index` as pieces (each value under its constraints; the
    constraints of the pieces cover every point and value, disjointly), or None. Each value
    is the program's: shown inside its type's range on the intervals of `bounds` (with the
    value symbols', recorded in `symbols.declared`) narrowed by its piece's constraints."""
    return _Pieces(symbols, bounds, used).of(inst, index, comp, depth, ())


class _Pieces:
    def __init__(self, symbols: ValueSymbols, bounds: Mapping[Variable, Interval],
                 used: list[SymSize]) -> None:
        self.symbols = symbols
        self.bounds = bounds
        self.used = used
        self.bindings: dict[int, tuple[HloComputation, HloInstruction]] = {}

    def env(self, where: Sequence[tuple[Expr, Interval]]) -> Mapping[Variable, Interval]:
        env: dict[Variable, Interval] = dict(self.bounds)
        for name, iv in self.symbols.declared.items():
            env[Size(name)] = iv
        return _narrowed(env, where)

    def feasible(self, where: Where) -> bool:
        return feasible(where, self.env(()))

    def fits(self, p: Piece, element_type: str, ctx: Where) -> bool:
        """The piece's value lies in the type's range (where its and `ctx`'s constraints
        hold)."""
        iv = integer_interval(element_type)
        try:
            return iv is not None and iv.contains(range_of(p.value, self.env((*ctx, *p.where))))
        except (KeyError, ValueError, ArithmeticError):
            return False  # a variable without bounds, or a division interval arithmetic refuses

    def of(self, inst: HloInstruction, index: Sequence[Expr], comp: HloComputation,
           depth: int, ctx: Where) -> list[Piece] | None:
        """The pieces of `inst` at `index` where the constraints `ctx` hold (the conditions
        of the selects on the way here)."""
        shape = inst.shape
        if depth <= 0 or shape.is_tuple or shape.element_type not in INTEGER_BITS or \
                len(index) != shape.rank:
            return None
        found = self._of(inst, index, comp, depth, ctx)
        if found is None:
            return None
        out: list[Piece] = []
        for p in found:
            if p.where and not self.feasible((*ctx, *p.where)):
                continue  # a piece no value reaches here
            if (inst.opcode not in _MODULAR and inst.opcode != "convert") or \
                    self.fits(p, shape.element_type, ctx):
                # every other op's value is one of its operands' or between them (select,
                # clamp, min, max), or no larger (divide, remainder, and): it fits as they do
                out.append(p)
                continue
            wrapped = self.wrapped(p, shape.element_type, ctx) \
                if inst.opcode in _MODULAR else None
            if wrapped is None:
                return None
            out.extend(wrapped)
        return out if len(out) <= MAX_PIECES else None

    def wrapped(self, p: Piece, element_type: str, ctx: Where) -> list[Piece] | None:
        """The piece as the program computes it where its value leaves the type's range: an
        op whose result is the mathematical one modulo 2^bits (`_MODULAR`) gives `value - k *
        2^bits` where `value` lies in the type's range shifted by `k * 2^bits`, one piece per
        `k` (at most MAX_WRAPS)."""
        iv = integer_interval(element_type)
        try:
            r = range_of(p.value, self.env((*ctx, *p.where)))
        except (KeyError, ValueError, ArithmeticError):
            return None
        if iv is None:
            return None
        span = iv.hi - iv.lo + 1
        first, last = (r.lo - iv.lo) // span, (r.hi - iv.lo) // span
        if last - first + 1 > MAX_WRAPS:
            return None
        return [Piece(add(p.value, -k * span) if k else p.value,
                      (*p.where, (p.value, Interval(iv.lo + k * span, iv.hi + k * span))))
                for k in range(first, last + 1)]

    def _of(self, inst: HloInstruction, index: Sequence[Expr], comp: HloComputation,
            depth: int, ctx: Where) -> list[Piece] | None:
        op = inst.opcode
        operands = [comp.instruction(name) for name in inst.operands]

        def at(i: int, idx: Sequence[Expr] = index) -> list[Piece] | None:
            return self.of(operands[i], idx, comp, depth - 1, ctx)

        if op == "parameter" and inst.parameter_number is not None:
            n = inst.parameter_number
            if comp is self.symbols.entry:
                iv = integer_interval(inst.shape.element_type)
                if iv is None or any(inst.shape.dynamic):
                    return None
                if not inst.shape.rank:
                    self.symbols.declared[value_name(n)] = iv
                    return [Piece(Size(value_name(n)))]

                typed: Interval = iv

                def element(at: Sequence[int]) -> Expr:
                    self.symbols.declared[value_name(n, at)] = typed
                    return Size(value_name(n, at))

                return self._per_point(inst, index, element)  # one symbol per element
            bound = self.bindings.get(id(inst))
            if bound is not None:  # inside a call this walk entered
                caller, operand = bound
                return self.of(operand, index, caller, depth - 1, ctx)
            sites = self.symbols.callers.get(comp.name, [])
            if len(sites) != 1 or sites[0][1].opcode not in ("fusion", "call") or \
                    n >= len(sites[0][1].operands):
                return None
            caller, call = sites[0]
            return self.of(caller.instruction(call.operands[n]), index, caller, depth - 1, ctx)
        if op in ("call", "fusion") and inst.shape.rank == 0 and inst.called_computations:
            return self._in_body(inst, operands, comp,
                                 lambda body: self.of(body.root, index, body, depth - 1, ctx))
        if op == "get-tuple-element" and operands and operands[0].opcode == "tuple":
            k = inst.tuple_index
            tup = operands[0]
            if k is None or k >= len(tup.operands):
                return None
            return self.of(comp.instruction(tup.operands[k]), index, comp, depth - 1, ctx)
        if op in ("reshape", "bitcast") and all(n == 1 for n in inst.shape.dims) and \
                not any(inst.shape.dynamic) and operands and \
                all(n == 1 for n in operands[0].shape.dims) and \
                not any(operands[0].shape.dynamic) and not operands[0].shape.is_tuple and \
                operands[0].shape.element_type == inst.shape.element_type:
            return at(0, [Const(0)] * operands[0].shape.rank)
        if op == "convert" and operands and operands[0].shape.element_type in INTEGER_BITS:
            return at(0)  # `of` checks the value fits the target type: no wrap
        if op in ("divide", "remainder") and len(operands) == 2:
            return self._division(op, at(0), at(1), ctx)
        if op == "and" and len(operands) == 2:  # x & (2^k - 1) is x mod 2^k (two's complement)
            mask = operands[1].literal_value if operands[1].opcode == "constant" else None
            if isinstance(mask, int) and not isinstance(mask, bool) and mask >= 0 and \
                    (mask + 1) & mask == 0 and operands[1].shape.rank == 0:
                return self._combine([at(0)], lambda v: mod(v[0], mask + 1))
            return None
        if op == "sign" and len(operands) == 1:  # -1, 0, 1 by the operand's sign
            found = at(0)
            if found is None:
                return None
            out: list[Piece] = []
            for p in found:
                try:
                    r = range_of(p.value, self.env((*ctx, *p.where)))
                except (KeyError, ValueError, ArithmeticError):
                    return None
                for sign, iv in ((-1, Interval(r.lo, -1)), (0, Interval(0, 0)),
                                 (1, Interval(1, r.hi))):
                    if not iv.intersect(r).is_empty:
                        cut = () if iv.contains(r) else ((p.value, iv),)
                        out.append(Piece(Const(sign), (*p.where, *cut)))
            return out
        if op == "clamp" and len(operands) == 3:
            lo, x, hi = at(0), at(1), at(2)
            return self._combine([lo, x, hi], lambda v: minimum(maximum(v[1], v[0]), v[2]))
        if op in ("minimum", "maximum") and len(operands) == 2:
            fn = minimum if op == "minimum" else maximum
            return self._combine([at(0), at(1)], lambda v: fn(v[0], v[1]))
        if op == "select" and len(operands) == 3:
            return self._select(operands, index, comp, depth, ctx)
        if op in ("add", "subtract", "multiply", "negate") and len(operands) in (1, 2):
            args = [at(i) for i in range(len(operands))]
            if op == "negate":
                return self._combine(args, lambda v: neg(v[0]))
            if op == "add":
                return self._combine(args, lambda v: add(v[0], v[1]))
            if op == "subtract":
                return self._combine(args, lambda v: add(v[0], neg(v[1])))
            return self._combine(args, lambda v: None if _has_index(v[0]) and _has_index(v[1])
                                 else mul(v[0], v[1]))
        if op == "constant":
            v = inst.literal_value
            if inst.shape.rank == 0:
                return [Piece(Const(v))] if isinstance(v, int) and not isinstance(v, bool) \
                    else None
            return self._array_constant(inst, index)
        if op in ("iota", "get-dimension-size") or \
                isinstance(inst.attributes.get(VALUE_ATTRIBUTE), SymSize):
            plain = value_at(inst, index, comp, self.used, 1)  # index arithmetic, a size
            return None if plain is None else [Piece(plain)]
        if op in ("broadcast", "reshape", "bitcast", "reverse", "concatenate", "slice",
                  "transpose"):
            return self._structural(inst, index, comp, depth, ctx)
        return None

    def _array_constant(self, inst: HloInstruction, index: Sequence[Expr]
                        ) -> list[Piece] | None:
        """An integer array constant at `index`: its element where the index is constant, else
        one piece per value of the index variables it names (each variable at one value, at
        most MAX_PIECES points), the element read there."""
        values = _literal_ints(inst.literal or "", inst.shape.dims)
        if values is None:
            return None
        dims = inst.shape.dims

        def element(at: Sequence[int]) -> Expr:
            flat = 0
            for i, n in zip(at, dims):
                flat = flat * n + i
            return Const(values[flat])

        return self._per_point(inst, index, element)

    def _per_point(self, inst: HloInstruction, index: Sequence[Expr],
                   element: Callable[[Sequence[int]], Expr]) -> list[Piece] | None:
        """An array's element at `index`: one piece per value of the index variables it
        names (each variable at one value, at most MAX_PIECES points), `element` of the
        coordinates read there."""
        names = sorted({v for e in index for v in e.variables()}, key=str)
        try:
            ranges = [range(self.bounds[v].lo, self.bounds[v].hi + 1) for v in names]
        except KeyError:
            return None  # a value symbol or an unbounded variable: not enumerable
        count = 1
        for r in ranges:
            count *= len(r)
        if count > MAX_PIECES:
            return None
        out: list[Piece] = []
        for point in itertools.product(*ranges):
            env: dict[Expr, int] = dict(zip(names, point))
            at = [e.evaluate(env) for e in index]
            if not all(0 <= i < n for i, n in zip(at, inst.shape.dims)):
                return None  # the index leaves the array: not the op's to read
            where = tuple((v, Interval(x, x)) for v, x in env.items())
            out.append(Piece(element(at), where))
        return out

    def _in_body(self, call: HloInstruction, operands: Sequence[HloInstruction],
                 comp: HloComputation, follow: Callable[[HloComputation], _T | None]
                 ) -> _T | None:
        """`follow` of the called computation, its parameters bound to the call's operands
        while it runs (None when a parameter has no operand)."""
        body = self.symbols.module.computation(call.called_computations[0])
        saved = dict(self.bindings)
        for q in body.parameters:
            n = q.parameter_number
            if n is None or n >= len(operands):
                self.bindings = saved
                return None
            self.bindings[id(q)] = (comp, operands[n])
        try:
            return follow(body)
        finally:
            self.bindings = saved

    def _structural(self, inst: HloInstruction, index: Sequence[Expr], comp: HloComputation,
                    depth: int, ctx: Where) -> list[Piece] | None:
        """Broadcast, reshape, bitcast, reverse, concatenate, slice, transpose: the element of the
        operand at the index they read, through this walk (a value symbol broadcast to an index
        vector and sliced back)."""
        op = inst.opcode
        operands = [comp.instruction(name) for name in inst.operands]
        if op == "broadcast":
            dims = inst.dimensions or ()
            if any(d >= len(index) for d in dims):
                return None
            return self.of(operands[0], [index[d] for d in dims], comp, depth - 1, ctx)
        if op == "reshape":
            kept, src_kept = _non_unit(inst), _non_unit(operands[0])
            if [_sym(inst, k) for k in kept] != [_sym(operands[0], j) for j in src_kept]:
                return None
            idx: list[Expr] = [Const(0)] * operands[0].shape.rank
            for k, j in zip(kept, src_kept):
                idx[j] = index[k]
            return self.of(operands[0], idx, comp, depth - 1, ctx)
        if op == "bitcast" and operands and not operands[0].shape.is_tuple and \
                operands[0].shape.element_type == inst.shape.element_type and \
                not any(inst.shape.dynamic) and not any(operands[0].shape.dynamic):
            try:  # the operand's element at the same place in memory (its layouts)
                m = bitcast_index_map(inst.shape, operands[0].shape)
            except Malformed:
                return None
            at: dict[Expr, Expr] = {Dim(k): e for k, e in enumerate(index)}
            return self.of(operands[0], [r.substitute(at) for r in m.results], comp, depth - 1,
                           ctx)
        if op == "slice":
            window = inst.slice_dims or ()
            if len(window) != len(index):
                return None
            return self.of(operands[0], [add(w.start, mul(e, w.stride))
                                         for w, e in zip(window, index)], comp, depth - 1, ctx)
        if op == "transpose":
            perm = inst.dimensions or ()
            if sorted(perm) != list(range(len(index))):
                return None
            src: list[Expr] = [Const(0)] * len(index)
            for k, p in enumerate(perm):
                src[p] = index[k]
            return self.of(operands[0], src, comp, depth - 1, ctx)
        if op == "concatenate":
            axis = (inst.dimensions or (0,))[0]
            at_axis = index[axis] if axis < len(index) else None
            if not isinstance(at_axis, Const):
                return None
            offset = 0
            for o in operands:
                if o.shape.dynamic[axis]:
                    return None
                if offset <= at_axis.value < offset + o.shape.dims[axis]:
                    return self.of(o, [Const(at_axis.value - offset) if k == axis else e
                                       for k, e in enumerate(index)], comp, depth - 1, ctx)
                offset += o.shape.dims[axis]
            return None
        if op == "reverse":
            axes = set(cast("tuple[int, ...]", inst.dimensions or ()))
            idx = []
            for k, e in enumerate(index):
                if k in axes:
                    s = _sym(inst, k)
                    self.used.append(s)
                    e = add(s.expr(), -1, neg(e))
                idx.append(e)
            return self.of(operands[0], idx, comp, depth - 1, ctx)
        return None

    @staticmethod
    def _combine(args: Sequence[list[Piece] | None], fn: object) -> list[Piece] | None:
        """`fn` of the operands' values, piece by piece (the product of their pieces)."""
        if any(a is None for a in args):
            return None
        lists = cast("list[list[Piece]]", list(args))
        count = 1
        for a in lists:
            count *= len(a)
        if count > MAX_PIECES:
            return None
        out = []
        for combo in itertools.product(*lists):
            value = fn([p.value for p in combo])  # type: ignore[operator]
            if value is None:
                return None
            out.append(Piece(value, tuple(c for p in combo for c in p.where)))
        return out

    def _division(self, op: str, a: list[Piece] | None, b: list[Piece] | None, ctx: Where
                  ) -> list[Piece] | None:
        """HLO's truncating `divide`/`remainder` by a positive constant: floor division where
        the dividend is nonnegative, `ceildiv` (remainder `-((-a) mod c)`) where it is
        negative, split on its sign where it may be either."""
        if a is None or b is None or len(b) != 1 or not isinstance(b[0].value, Const) or \
                b[0].value.value <= 0:
            return None
        c = b[0].value.value
        out: list[Piece] = []
        for p in a:
            p = Piece(p.value, (*p.where, *b[0].where))
            try:
                r = range_of(p.value, self.env((*ctx, *p.where)))
            except (KeyError, ValueError, ArithmeticError):
                return None
            if r.hi >= 0:
                where = p.where if r.lo >= 0 else (*p.where, (p.value, Interval(0, r.hi)))
                value = floordiv(p.value, c) if op == "divide" else mod(p.value, c)
                out.append(Piece(value, where))
            if r.lo < 0:
                where = p.where if r.hi < 0 else (*p.where, (p.value, Interval(r.lo, -1)))
                value = ceildiv(p.value, c) if op == "divide" else neg(mod(neg(p.value), c))
                out.append(Piece(value, where))
        return out

    def _conditions(self, pred: HloInstruction, index: Sequence[Expr], comp: HloComputation,
                    depth: int, ctx: Where) -> list[tuple[Where, bool]] | None:
        """A predicate as a partition: each region (constraints) with the predicate's truth
        there, regions intervals exclude under `ctx` left out. `compare` of integers or of
        predicates, `and`, `or`, `not`, a pred constant, a call's or a bound parameter's."""
        found = self._conditions_of(pred, index, comp, depth, ctx)
        if found is None:
            return None
        out = [(joined(w), t) for w, t in found if not w or self.feasible((*ctx, *w))]
        return out if len(out) <= MAX_PIECES else None

    def _conditions_of(self, pred: HloInstruction, index: Sequence[Expr], comp: HloComputation,
                       depth: int, ctx: Where) -> list[tuple[Where, bool]] | None:
        if depth <= 0 or pred.shape.element_type != "pred" or pred.shape.rank != len(index):
            return None
        operands = [comp.instruction(n) for n in pred.operands]
        op = pred.opcode
        if op == "constant" and isinstance(pred.literal_value, bool):
            return [((), pred.literal_value)]
        if op == "parameter" and id(pred) in self.bindings:
            caller, operand = self.bindings[id(pred)]
            return self._conditions(operand, index, caller, depth - 1, ctx)
        if op == "call" and pred.shape.rank == 0 and pred.called_computations:
            return self._in_body(pred, operands, comp, lambda body: self._conditions(
                body.root, index, body, depth - 1, ctx))
        if op == "compare" and len(operands) == 2 and pred.comparison_direction in ("EQ", "NE") \
                and operands[0].shape.element_type == "pred":
            first = self._conditions(operands[0], index, comp, depth - 1, ctx)
            if first is None:
                return None
            out_p: list[tuple[Where, bool]] = []
            for w, t in first:
                second = self._conditions(operands[1], index, comp, depth - 1, (*ctx, *w))
                if second is None:
                    return None
                out_p.extend(((*w, *w2), (t == t2) == (pred.comparison_direction == "EQ"))
                             for w2, t2 in second)
            return out_p if len(out_p) <= MAX_PIECES else None
        if op == "not" and len(operands) == 1:
            inner = self._conditions(operands[0], index, comp, depth - 1, ctx)
            return None if inner is None else [(w, not t) for w, t in inner]
        if op in ("and", "or") and len(operands) == 2:
            first = self._conditions(operands[0], index, comp, depth - 1, ctx)
            if first is None:
                return None
            out: list[tuple[Where, bool]] = []
            for w, t in first:
                if t == (op == "or"):  # decided by the first operand
                    out.append((w, t))
                    continue
                second = self._conditions(operands[1], index, comp, depth - 1, (*ctx, *w))
                if second is None:
                    return None
                out.extend(((*w, *w2), t2) for w2, t2 in second)
            return out if len(out) <= MAX_PIECES else None
        if op != "compare" or len(operands) != 2 or pred.comparison_direction not in _COMPLEMENTS:
            return None
        a_inst, b_inst = operands
        if a_inst.shape.element_type not in INTEGER_BITS:
            return None
        direction = cast(str, pred.comparison_direction)
        a = self.of(a_inst, index, comp, depth - 1, ctx)
        b = self.of(b_inst, index, comp, depth - 1, ctx)
        if a is None or b is None:
            return None
        out = []
        for pa, pb in itertools.product(a, b):
            diff = add(pa.value, neg(pb.value))
            base = (*pa.where, *pb.where)
            try:
                r = range_of(diff, self.env((*ctx, *base)))
            except (KeyError, ValueError, ArithmeticError):
                return None
            for d, truth in ((direction, True), (_COMPLEMENTS[direction], False)):
                out.extend(((*base, *(() if iv.contains(r) else ((diff, iv),))), truth)
                           for iv in _comparison(d, r))
        return out if len(out) <= MAX_PIECES else None

    def _select(self, operands: Sequence[HloInstruction], index: Sequence[Expr],
                comp: HloComputation, depth: int, ctx: Where) -> list[Piece] | None:
        """select(p, x, y): `min`/`max` where p compares x and y; else the pieces of x where
        p holds, of y where not (each read under its condition, `_conditions`)."""
        pred, x_inst, y_inst = operands
        direction = pred.comparison_direction
        if pred.opcode == "compare" and len(pred.operands) == 2 and \
                direction in ("LT", "LE", "GT", "GE") and \
                {x_inst.name, y_inst.name} == set(pred.operands) and x_inst.name != y_inst.name:
            a_inst, b_inst = (comp.instruction(n) for n in pred.operands)
            if a_inst.shape.element_type in INTEGER_BITS:
                a = self.of(a_inst, index, comp, depth - 1, ctx)
                b = self.of(b_inst, index, comp, depth - 1, ctx)
                smaller = direction in ("LT", "LE")  # true picks the smaller of a, b
                pick = minimum if smaller == (x_inst.name == a_inst.name) else maximum
                return self._combine([a, b], lambda v: pick(v[0], v[1]))
        regions = self._conditions(pred, index, comp, depth - 1, ctx)
        if regions is None:
            return None
        out: list[Piece] = []
        for where, truth in regions:
            found = self.of(x_inst if truth else y_inst, index, comp, depth - 1, (*ctx, *where))
            if found is None:
                return None
            out.extend(Piece(p.value, (*where, *p.where)) for p in found)
            if len(out) > MAX_PIECES:
                return None
        return out
