"""Symbolic tiles: the operand tile read by an output tile, as functions of the tile sizes.

Given an output-to-input map `f(d)[s]{rt}`, an output tile of sizes `t` placed at the origin
(`0 <= d_i < t_i`) reads, along each operand dimension `j`, the elements
`offset_j(rt) + stride_j(t) * k` for `k in [0, size_j(t))` -- provided the tile sizes satisfy the
tile's constraints. The derivation follows XLA's `SymbolicTile::FromIndexingMap` (facts about the
algorithm carry over, the code is our own):

* offsets are the results with every dimension and range variable set to 0 (runtime variables stay);
* each result minus its offset must be a *strided expression*: a dimension (size `t_i`, stride 1),
  a range variable starting at 0 (size: its extent), a constant (size 1, stride 0), a product by a
  constant, `d floordiv c`, `d mod c` or `(d floordiv c) mod m` (each with the divisibility
  constraints that make the count exact), or a sum of those whose strides nest like the dimensions
  of a row-major array (leading sizes 1, one partial size, full sizes, trailing sizes 1).

Anything else gives `NoTile` with the reason. In the tile's maps `d<i>` is the size of output
dimension `i` (from 1 to the dimension's extent), and runtime variables print as trailing symbols
`s<i>`, as in XLA. `verifidx.analysis.tiling.proof` proves each tile sound for every tile size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...core.errors import ParseError
from ...core.expr import (
    Add,
    Const,
    Dim,
    Expr,
    FloorDiv,
    Mod,
    Mul,
    RtVar,
    Symbol,
    Variable,
    add,
    floordiv,
    mod,
    mul,
    neg,
    summands,
)
from ...core.indexing_map import IndexingMap, Var
from ...core.interval import Interval
from ...core.syntax import parse_expr, print_expr
from .constraints import ConstraintExpression, ConstraintsTooComplex


@dataclass(frozen=True)
class NoTile:
    """No symbolic tile could be derived; `reason` says which part of the map blocked it."""

    reason: str
    source: IndexingMap | None = None

    def __str__(self) -> str:
        return f"no tile: {self.reason}"


@dataclass(frozen=True)
class SymbolicTile:
    """Offsets (over runtime variables), sizes and strides (over tile sizes `d<i>`) per operand
    dimension, valid when `constraints` hold."""

    offsets: tuple[Expr, ...]
    sizes: tuple[Expr, ...]
    strides: tuple[Expr, ...]
    tile_size_bounds: tuple[Interval, ...]
    rt_vars: tuple[Var, ...]
    constraints: ConstraintExpression
    source: IndexingMap
    #: the source map had constraints that were set aside (high padding): the tile may hold
    #: elements that are not read.
    ignored_constraints: bool = False

    @property
    def rank(self) -> int:
        return len(self.offsets)

    @property
    def dim_extents(self) -> tuple[int, ...]:
        """`hi + 1` of each dimension of the source map: strides are evaluated with tile sizes
        clamped to it."""
        return tuple(v.bounds.hi + 1 for v in self.source.dims)

    def clamped_strides(self) -> tuple[Expr, ...]:
        """The stride expressions with each tile size `d<i>` replaced by `min(d<i>, extent)`."""
        from ...core.expr import minimum

        clamp: dict[Expr, Expr] = {Dim(i): minimum(Dim(i), e)
                                   for i, e in enumerate(self.dim_extents)}
        return tuple(e.substitute(clamp) for e in self.strides)

    def with_tile_size_limits(self, limits: Sequence[int]) -> SymbolicTile:
        """The same tile, its proofs to cover tile sizes up to `limits` (e.g. the root's extents
        when the map's dimensions are narrower, as for a concatenate operand)."""
        from dataclasses import replace

        return replace(self, tile_size_bounds=tuple(
            Interval(1, max(b.hi, lim)) for b, lim in zip(self.tile_size_bounds, limits)))

    @property
    def num_tile_sizes(self) -> int:
        return len(self.tile_size_bounds)

    # -- evaluation ---------------------------------------------------------------------------
    def _env(self, tile_sizes: Sequence[int], rt: Sequence[int] = ()) -> dict[Expr, int]:
        env: dict[Expr, int] = {Dim(i): v for i, v in enumerate(tile_sizes)}
        env.update({RtVar(i): v for i, v in enumerate(rt)})
        return env

    def evaluate_sizes(self, tile_sizes: Sequence[int]) -> tuple[int, ...]:
        env = self._env(tile_sizes)
        return tuple(e.evaluate(env) for e in self.sizes)

    def evaluate_strides(self, tile_sizes: Sequence[int]) -> tuple[int, ...]:
        """Strides at `tile_sizes`; sizes beyond a dimension's extent are clamped to it first
        (XLA does the same: such a tile covers the whole dimension)."""
        clamped = [min(v, e) for v, e in zip(tile_sizes, self.dim_extents)]
        env = self._env(clamped)
        return tuple(e.evaluate(env) for e in self.strides)

    def evaluate_offsets(self, rt: Sequence[int] = ()) -> tuple[int, ...]:
        env = self._env([0] * self.num_tile_sizes, rt)
        return tuple(e.evaluate(env) for e in self.offsets)

    def satisfied_by(self, tile_sizes: Sequence[int]) -> bool:
        return self.constraints.holds(self._env(tile_sizes))

    def elements(self, tile_sizes: Sequence[int], rt: Sequence[int] = ()) -> set[tuple[int, ...]]:
        """Every operand index in the tile (for tests on small shapes)."""
        import itertools

        offs = self.evaluate_offsets(rt)
        sizes = self.evaluate_sizes(tile_sizes)
        strides = self.evaluate_strides(tile_sizes)
        axes = [[o + st * k for k in range(sz)] for o, sz, st in zip(offs, sizes, strides)]
        return set(itertools.product(*axes))

    def offsets_at(self, origin: Sequence[int], rt: Sequence[int] = ()) -> tuple[int, ...]:
        """Offsets of the tile whose output tile starts at `origin` (a multiple of the tile
        sizes): the map at the origin with range variables at their lower bounds."""
        syms = [v.bounds.lo for v in self.source.range_vars]
        return self.source.evaluate(list(origin), [*syms, *rt])

    def elements_at(self, tile_sizes: Sequence[int], origin: Sequence[int],
                    rt: Sequence[int] = ()) -> set[tuple[int, ...]]:
        """Every operand index of the tile for the output tile at `origin`."""
        import itertools

        offs = self.offsets_at(origin, rt)
        sizes = self.evaluate_sizes(tile_sizes)
        strides = self.evaluate_strides(tile_sizes)
        axes = [[o + st * k for k in range(sz)] for o, sz, st in zip(offs, sizes, strides)]
        return set(itertools.product(*axes))

    # -- text ---------------------------------------------------------------------------------
    def _names(self) -> dict[Variable, str]:
        return {RtVar(i): f"s{i}" for i in range(len(self.rt_vars))}

    def _map_text(self, exprs: Sequence[Expr], with_rt: bool) -> str:
        dims = ", ".join(f"d{i}" for i in range(self.num_tile_sizes))
        syms = ""
        if with_rt and self.rt_vars:
            syms = "[" + ", ".join(f"s{i}" for i in range(len(self.rt_vars))) + "]"
        names = self._names()
        body = ", ".join(print_expr(e, names) for e in exprs)
        return f"({dims}){syms} -> ({body})"

    @property
    def offset_map_text(self) -> str:
        return self._map_text(self.offsets, True)

    @property
    def size_map_text(self) -> str:
        return self._map_text(self.sizes, False)

    @property
    def stride_map_text(self) -> str:
        return self._map_text(self.strides, False)

    def to_text(self, separator: str = "\n  ") -> str:
        """XLA's `SymbolicTile::ToString` layout."""
        parts = ["Symbolic tile with", f"offset_map: {self.offset_map_text}",
                 f"size_map: {self.size_map_text}", f"stride_map: {self.stride_map_text}"]
        out = separator.join(parts)
        if self.rt_vars:
            out += separator + "rt_vars: " + "".join(
                f"s{i} in [{v.bounds.lo}, {v.bounds.hi}], " for i, v in enumerate(self.rt_vars))
        if not self.constraints.is_always_satisfied:
            out += separator + "constraints: " + self.constraints.to_text()
        return out

    def __str__(self) -> str:
        return self.to_text()


# -- size and stride extraction ----------------------------------------------------------------


@dataclass(frozen=True)
class _SizeStride:
    size: Expr
    stride: Expr
    constraints: ConstraintExpression = field(default_factory=ConstraintExpression.always)


class _Fail(Exception):
    pass


def _is_dim(e: Expr) -> bool:
    return isinstance(e, Dim)


def _from_mod(lhs: Expr, modulus: Expr) -> _SizeStride:
    """`x mod c` over a tile of `n` values of `x` (x = d or d floordiv q) takes
    `n - ((n - 1) floordiv c) * c` values when `c mod n == 0 or n mod c == 0`."""
    if not isinstance(modulus, Const):
        raise _Fail(f"mod by a non-constant in {lhs} mod {modulus}")
    if _is_dim(lhs):
        count = lhs
    elif isinstance(lhs, FloorDiv) and _is_dim(lhs.lhs) and isinstance(lhs.rhs, Const):
        count = floordiv(add(lhs.lhs, lhs.rhs.value - 1), lhs.rhs)
    else:
        raise _Fail(f"mod of something other than a dimension or its quotient: {lhs} mod {modulus}")
    size = add(count, neg(mul(floordiv(add(count, -1), modulus), modulus)))
    cons = (ConstraintExpression.of(mod(modulus, count), 0, 0)
            | ConstraintExpression.of(mod(count, modulus), 0, 0))
    return _SizeStride(size, Const(1), cons)


def _from_floordiv(num: Expr, den: Expr) -> _SizeStride:
    if not isinstance(den, Const) or den.value <= 0:
        raise _Fail(f"floordiv by something other than a positive constant: {den}")
    if not _is_dim(num):
        raise _Fail(f"floordiv of something other than a dimension: {num}")
    # A tile of n values of d placed at a multiple of n meets ceil(n / c) quotients only when
    # n divides c or c divides n (XLA has no constraint here; without it a tile of 3 at offset 6
    # reads quotients 0 and 1 of `d floordiv 8` but holds one).
    cons = (ConstraintExpression.of(mod(den, num), 0, 0)
            | ConstraintExpression.of(mod(num, den), 0, 0))
    return _SizeStride(floordiv(add(num, den.value - 1), den), Const(1), cons)


def _range_size(size: Expr, dim_bounds: Sequence[Interval]) -> int:
    if isinstance(size, Const):
        return size.value
    assert isinstance(size, Dim)
    b = dim_bounds[size.index]
    if b.lo != 0:
        raise _Fail(f"dimension {size} of a sum starts at {b.lo}, not 0")
    return b.hi + 1


def _if_not_one(e: Expr, then: Expr, otherwise: Expr, upper: int) -> Expr:
    """`then if e != 1 else otherwise`, for `e` in [1, upper], as an affine-with-division term:
    `(upper + 1 - e) floordiv upper` is 1 exactly when e == 1."""
    cond = floordiv(add(upper + 1, neg(e)), upper)
    return add(mul(cond, otherwise), mul(add(neg(cond), 1), then))


def _from_sum(parts: list[_SizeStride], dim_bounds: Sequence[Interval]) -> _SizeStride:
    for p in parts:
        if not isinstance(p.stride, Const):
            raise _Fail(f"non-constant stride {p.stride} in a sum")
        if not (isinstance(p.size, Const) or _is_dim(p.size)):
            raise _Fail(f"a sum term of size {p.size}: only dimensions and constants combine")
    signs = {p.stride.value > 0 for p in parts if p.stride.value != 0}  # type: ignore[attr-defined]
    if len(signs) > 1:
        # XLA combines these anyway and gets an unsound tile (the elements do not start at the
        # offset); see tests/test_tiling_conformance.py, ReverseOfCombiningReshape.
        raise _Fail("a sum with strides of both signs is not one strided range")
    parts = sorted(parts, key=lambda p: -abs(p.stride.value))  # type: ignore[attr-defined]
    for prev, cur in zip(parts, parts[1:]):
        extent = _range_size(cur.size, dim_bounds)
        if extent * abs(cur.stride.value) != abs(prev.stride.value):  # type: ignore[attr-defined]
            raise _Fail(f"strides {prev.stride} and {cur.stride} do not nest "
                        f"(extent {extent} of {cur.size})")
    size: Expr = Const(1)
    for p in parts:
        size = mul(size, p.size)
    stride: Expr = Const(0)
    for p in parts:
        stride = _if_not_one(p.size, p.stride, stride, _range_size(p.size, dim_bounds))
    # the terms' own constraints are combined only once the sum is known to have a tile
    cons = ConstraintExpression.always()
    for p in parts:
        cons = cons & p.constraints
    # sizes in row-major order must look like (1*, partial?, full*, 1*)
    shape = ConstraintExpression.never()
    n = len(parts)
    for partial in range(n):
        for full in range(n - partial):
            conj = ConstraintExpression.always()
            for i, p in enumerate(parts):
                if i < partial or i > partial + full:
                    conj = conj & ConstraintExpression.of(p.size, 1, 1)
                elif i > partial:
                    ext = _range_size(p.size, dim_bounds)
                    conj = conj & ConstraintExpression.of(p.size, ext, ext)
            shape = shape | conj
    return _SizeStride(size, stride, cons & shape)


def _extract(e: Expr, dim_bounds: Sequence[Interval], sym_bounds: Sequence[Interval]
             ) -> _SizeStride:
    if isinstance(e, Dim):
        return _SizeStride(e, Const(1))
    if isinstance(e, Symbol):
        b = sym_bounds[e.index]
        if b.lo != 0:
            raise _Fail(f"range variable {e} starts at {b.lo}, not 0")
        return _SizeStride(Const(b.hi + 1), Const(1))
    if isinstance(e, RtVar):
        raise _Fail(f"runtime variable {e} outside the offset")
    if isinstance(e, Const):
        return _SizeStride(Const(1), Const(0))
    if isinstance(e, Mul):
        if not isinstance(e.rhs, Const):
            raise _Fail(f"product of two non-constants: {e}")
        inner = _extract(e.lhs, dim_bounds, sym_bounds)
        return _SizeStride(inner.size, mul(inner.stride, e.rhs), inner.constraints)
    if isinstance(e, Mod):
        return _from_mod(e.lhs, e.rhs)
    if isinstance(e, FloorDiv):
        return _from_floordiv(e.lhs, e.rhs)
    if isinstance(e, Add):
        return _from_sum([_extract(t, dim_bounds, sym_bounds) for t in summands(e)], dim_bounds)
    raise _Fail(f"{type(e).__name__.lower()} is not a strided expression: {e}")


def _constraints_can_be_ignored(m: IndexingMap) -> bool:
    """A constraint `result in [0, hi]` only cuts off high indices of one result: the tile may
    then reach past the operand (high padding), which tiles allow. Any other constraint blocks."""
    return all(iv.lo == 0 and e in m.results for e, iv in m.constraints.items())


def symbolic_tile(indexing: IndexingMap, simplify: bool = True) -> SymbolicTile | NoTile:
    """The symbolic tile of an output-to-input map, or `NoTile` with the reason."""
    if indexing.is_undefined:
        return NoTile("the map is undefined", indexing)
    if indexing.sizes:
        return NoTile("symbolic tiles of maps with sizes are not yet supported", indexing)
    m = indexing.simplify(point_dims="preserve") if simplify else indexing
    if m.is_known_empty:
        return NoTile("the map is known to be empty", m)
    if not _constraints_can_be_ignored(m):
        bad = [f"{print_expr(e)} in [{iv.lo}, {iv.hi}]" for e, iv in m.constraints.items()
               if not (iv.lo == 0 and e in m.results)]
        return NoTile("the map has constraints a tile cannot express: " + ", ".join(bad), m)
    zero: dict[Expr, Expr] = {Dim(i): Const(0) for i in range(m.num_dims)}
    zero.update({Symbol(i): Const(0) for i in range(m.num_range_vars)})
    dim_bounds = [v.bounds for v in m.dims]
    sym_bounds = [v.bounds for v in m.range_vars]
    offsets, sizes, strides = [], [], []
    cons = ConstraintExpression.always()
    for r in m.results:
        off = _simplify_expr(r.substitute(zero), m)
        strided = _simplify_expr(add(r, neg(off)), m)
        try:
            ss = _extract(strided, dim_bounds, sym_bounds)
            cons = cons & ss.constraints
        except _Fail as exc:
            return NoTile(str(exc), m)
        except ConstraintsTooComplex as exc:
            return NoTile(f"constraints too complex: {exc}", m)
        offsets.append(off)
        sizes.append(ss.size)
        strides.append(ss.stride)
    # tile sizes run up to the declared extents: simplification may narrow a dimension (a
    # constraint on a result), and the proofs must still cover every tile size the caller may use
    bounds = tile_size_bounds(indexing)
    return SymbolicTile(tuple(offsets), tuple(sizes), tuple(strides), bounds, m.rt_vars,
                        cons.simplified(), m, ignored_constraints=bool(m.constraints))


def tile_size_bounds(m: IndexingMap) -> tuple[Interval, ...]:
    """Tile sizes along dimension i run from 1 to `hi_i + 1` (the tile starts at a multiple of
    its size, from 0). XLA's [lo + 1, hi + 1] leaves out small tiles of a dimension that starts
    above 0 (a concatenate operand), which propagation does use."""
    return tuple(Interval(1, v.bounds.hi + 1) for v in m.dims)


def _simplify_expr(e: Expr, reference: IndexingMap) -> Expr:
    """Simplify one expression with the bounds and constraints of `reference` (proven rules)."""
    tmp = reference.replace(results=(e,))
    out = tmp.simplify(point_dims="preserve")
    if out.is_known_empty or out.num_results != 1:
        return e
    # simplification renumbers range variables when it substitutes one away (a constraint
    # pins it): the result is then over other variables than `reference`'s
    same = out.num_dims == reference.num_dims and out.num_range_vars == reference.num_range_vars
    return out.results[0] if same else e


_SECTIONS = re.compile(r"(offset_map|size_map|stride_map|rt_vars|constraints):")


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out]


def _parse_results(text: str, names: Mapping[str, Expr]) -> tuple[tuple[Expr, ...], int]:
    head, _, body = text.partition("->")
    dims = [p for p in head.split(")")[0].strip("( ").split(",") if p.strip()]
    body = body.strip()
    if not (body.startswith("(") and body.endswith(")")):
        raise ParseError(f"expected a parenthesised result list in {text!r}")
    return tuple(parse_expr(r, names) for r in _split_top(body[1:-1])), len(dims)


def parse_constraints(text: str, names: Mapping[str, Expr] | None = None) -> ConstraintExpression:
    """Read XLA's `ConstraintExpression` text (`a in [0, 0] && b in [1, 1] || ...`)."""
    t = " ".join(text.split())
    if t == "always satisfied":
        return ConstraintExpression.always()
    if t == "unsatisfiable":
        return ConstraintExpression.never()
    out = ConstraintExpression.never()
    for conj_text in t.split("||"):
        conj = ConstraintExpression.always()
        for item in conj_text.split("&&"):
            m = re.fullmatch(r"\s*(.*) in \[(-?\d+), (-?\d+)\]\s*", item)
            if m is None:
                raise ParseError(f"expected `expr in [lo, hi]`, got {item.strip()!r}")
            conj = conj & ConstraintExpression.of(parse_expr(m.group(1), names),
                                                  int(m.group(2)), int(m.group(3)))
        out = out | conj
    return out


def tile_from_text(text: str, source: IndexingMap) -> SymbolicTile:
    """Read XLA's `SymbolicTile::ToString` text as a tile of `source` (to check XLA's tiles
    with the same proofs as ours). Runtime variables `s<i>` of the text are `source`'s."""
    flat = " ".join(text.split())
    pieces = _SECTIONS.split(flat)
    fields = {pieces[i]: pieces[i + 1].strip() for i in range(1, len(pieces) - 1, 2)}
    names: dict[str, Expr] = {f"d{i}": Dim(i) for i in range(source.num_dims)}
    names.update({f"s{i}": RtVar(i) for i in range(source.num_rt_vars)})
    offsets, _ = _parse_results(fields["offset_map"], names)
    sizes, _ = _parse_results(fields["size_map"], names)
    strides, _ = _parse_results(fields["stride_map"], names)
    cons = (parse_constraints(fields["constraints"], names) if "constraints" in fields
            else ConstraintExpression.always())
    bounds = tile_size_bounds(source)
    return SymbolicTile(offsets, sizes, strides, bounds, source.rt_vars, cons, source,
                        ignored_constraints=bool(source.constraints))
