"""Tiled memory layouts: XLA's `{minor_to_major:T(tile)(tile)...}` as indexing maps, proven.

Semantics (XLA's tiled-layout document, `shared/seeds/tiled_layout.zh.txt`):

* The logical dimensions are first put in physical order, most major first: physical dimension k
  is logical dimension `minor_to_major[rank - 1 - k]`. Without tiles, the offset of an element is
  the row-major linear index over that permuted shape.
* A tiling `(t_k, ..., t_1)` applies to the `k` most minor dimensions of the shape being tiled and
  leaves the leading ones unchanged. Each tiled dimension of size `d` is padded to
  `ceil(d / t) * t`, split into `(ceil(d / t), t)`, and the `t` parts are moved minor, keeping
  their order: `(..., d_k, ..., d_1)` becomes `(..., ceil(d_k/t_k), ..., ceil(d_1/t_1), t_k, ...,
  t_1)` and element `e` goes to `(..., e_k floordiv t_k, ..., e_k mod t_k, ...)`.
* Tilings repeat: each later tiling applies to the most minor dimensions of the previous
  tiling's result (it may reach into the tile-count dimensions, and may have more dimensions than
  the logical shape). A tile with more dimensions than the shape it tiles sees extra leading
  dimensions of size 1 (as XLA's `ShapeUtil::ArraySize` does), so `f32[]{:T(128)}` occupies 128
  elements.
* A `*` in a tile (stored as `COMBINE` = -1) removes that dimension and multiplies it into the
  next more minor one: the combined index is `e_i * d_{i-1} + e_{i-1}`; runs of `*` combine
  several dimensions. A `*` cannot be the most minor entry of a tile.
* The physical (tiled) shape is the final shape; offsets are row-major linear indices over it,
  measured in elements, and the buffer holds `prod(physical shape)` elements, rounded up to the
  tail-padding alignment `L(n)` when the layout has one.
* Element sizes: `E(n)` (and the type's own width) changes only the size in bits of each element,
  never an offset: offsets are always in elements. `buffer_bytes` is `ceil(elements * bits / 8)`
  where bits is `E(n)` when given, else the type's width rounded up to a byte (XLA stores
  unpacked sub-byte types one per byte unless the layout says `E(n)`). Sub-word packing in the
  sense of the document (BF16's `(8,128)(2,1)`) is an ordinary repeated tiling.

Maps (all exact, built with floordiv/mod by constants):

* `to_physical_map()`: logical index -> index in the physical (tiled) shape;
* `to_logical_map()`: physical index -> logical index, with padding excluded by constraints;
* `offset_map()`: logical index -> linear offset; `from_offset_map()`: offset -> logical index;
* `bitcast_map(source, target)`: a source index -> the target index at the same offset;
* `physical_mode_map(...)`: XLA's `use_physical_layout` mode (see its docstring).

The maps are built and then simplified by the proven rule base (`verifidx.simplifier`): no
rewrite of this module lives outside `rules/`. The tests check every map against a brute-force
reading of the document and prove with Z3 that the simplified maps equal the raw compositions.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Union, overload

from ..core.errors import ParseError, UnsupportedError, locate
from ..core.expr import (
    Const,
    Dim,
    Expr,
    add,
    as_expr,
    floordiv,
    mod,
    mul,
)
from ..core.indexing_map import IndexingMap, compose
from ..core.interval import Interval
from ..core.syntax import print_point, print_values
from ..simplifier.engine import default_simplifier

if TYPE_CHECKING:  # Z3 loads only when a layout question goes to the solver
    from ..solve.smt import Verdict

COMBINE = -1
"""A tile entry printed as `*`: combine this dimension with the next more minor one."""

# Bit width of the element types XLA prints (kept here so the layout parser stands alone).
ELEMENT_BITS: dict[str, int] = {
    "pred": 8, "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f4e2m1fn": 4, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3fnuz": 8,
    "f8e4m3b11fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "f8e8m0fnu": 8,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "token": 0, "opaque": 0,
}

#: `offsets()` refuses to enumerate more elements than this.
OFFSETS_LIMIT = 1 << 24


# -- layouts and shapes --------------------------------------------------------------------------


@dataclass(frozen=True)
class TiledLayout:
    """A dense XLA layout: minor-to-major order, tilings and the items that size the buffer.

    `tiles` holds the tilings in the order written (`T(8,128)(2,1)` is `((8, 128), (2, 1))`), with
    `COMBINE` for `*`. `element_size_in_bits` is `E(n)` (None when absent), `tail_padding` is
    `L(n)` (1 when absent). Items that do not change offsets (`S(n)`, `D(...)`, ...) are kept in
    `memory_space` and `other_items` for printing."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    element_size_in_bits: int | None = None
    tail_padding: int = 1
    memory_space: int | None = None
    other_items: tuple[str, ...] = ()

    @staticmethod
    def default(rank: int) -> TiledLayout:
        """Major-to-minor: `{rank-1, ..., 0}`."""
        return TiledLayout(tuple(range(rank - 1, -1, -1)))

    @property
    def major_to_minor(self) -> tuple[int, ...]:
        return tuple(reversed(self.minor_to_major))

    def __str__(self) -> str:
        items: list[str] = []
        if self.tiles:
            items.append("T" + "".join(
                "(" + ",".join("*" if t == COMBINE else str(t) for t in tile) + ")"
                for tile in self.tiles))
        if self.tail_padding != 1:
            items.append(f"L({self.tail_padding})")
        if self.element_size_in_bits is not None:
            items.append(f"E({self.element_size_in_bits})")
        if self.memory_space is not None:
            items.append(f"S({self.memory_space})")
        items.extend(self.other_items)
        order = ",".join(map(str, self.minor_to_major))
        return "{" + order + (":" + "".join(items) if items else "") + "}"


@dataclass(frozen=True)
class TilingStep:
    """One tiling applied to the shape `input_sizes` (after `prepended` leading size-1 dims).

    The first `lead` dimensions stay; `groups[j]` lists the input dimensions combined into the
    j-th tiled dimension (one unless the tile has `*`), of size `group_sizes[j]`, tiled by
    `group_tiles[j]`. The result is `output_sizes`: the leading dims, the tile counts, the tiles."""

    tile: tuple[int, ...]
    prepended: int
    input_sizes: tuple[int, ...]
    lead: int
    groups: tuple[tuple[int, ...], ...]
    group_sizes: tuple[int, ...]
    group_tiles: tuple[int, ...]
    output_sizes: tuple[int, ...]


def _plan(sizes: Sequence[int], tiles: Sequence[tuple[int, ...]]) -> tuple[TilingStep, ...]:
    steps: list[TilingStep] = []
    cur = list(sizes)
    for tile in tiles:
        k = len(tile)
        if k == 0:
            raise ValueError("a tile needs at least one dimension")
        if tile[-1] == COMBINE:
            raise ValueError(f"tile {_tile_text(tile)}: '*' cannot be the most minor entry")
        if any(t != COMBINE and t < 1 for t in tile):
            raise ValueError(f"tile {_tile_text(tile)}: sizes must be positive or '*'")
        pre = max(0, k - len(cur))
        cur = [1] * pre + cur
        lead = len(cur) - k
        groups: list[tuple[int, ...]] = []
        gtiles: list[int] = []
        pending: list[int] = []
        for j, t in enumerate(tile):
            pending.append(lead + j)
            if t != COMBINE:
                groups.append(tuple(pending))
                gtiles.append(t)
                pending = []
        gsizes = [math.prod(cur[m] for m in g) for g in groups]
        out = cur[:lead] + [-(-s // t) for s, t in zip(gsizes, gtiles)] + gtiles
        steps.append(TilingStep(tuple(tile), pre, tuple(cur), lead, tuple(groups),
                                tuple(gsizes), tuple(gtiles), tuple(out)))
        cur = out
    return tuple(steps)


def _tile_text(tile: Sequence[int]) -> str:
    return "(" + ",".join("*" if t == COMBINE else str(t) for t in tile) + ")"


IndexValue = Union[int, Expr, "_Column"]


@dataclass(frozen=True)
class TiledShape:
    """An array shape with a layout: `f32[3,5]{1,0:T(2,2)}`.

    `dims` are the logical sizes (for a bounded dynamic dimension `<=n`, the bound n; `dynamic`
    remembers which were written that way)."""

    element_type: str
    dims: tuple[int, ...]
    layout: TiledLayout
    dynamic: tuple[bool, ...] = field(default=(), compare=False)
    _maps: dict[tuple[str, bool], IndexingMap] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.dynamic:
            object.__setattr__(self, "dynamic", (False,) * len(self.dims))
        if sorted(self.layout.minor_to_major) != list(range(len(self.dims))):
            raise ValueError(f"layout {self.layout} is not a permutation of the "
                             f"{len(self.dims)} dimensions of the shape")
        if any(d < 0 for d in self.dims):
            raise ValueError("dimension sizes must be >= 0")
        if self.layout.tail_padding < 1:
            raise ValueError("the tail padding alignment L(n) must be >= 1")
        _ = self.steps  # validates the tiles

    # -- structure --------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.dims)

    @cached_property
    def steps(self) -> tuple[TilingStep, ...]:
        """The tilings, one step each, applied to the dims in physical (major-to-minor) order."""
        return _plan([self.dims[d] for d in self.layout.major_to_minor], self.layout.tiles)

    @property
    def physical_shape(self) -> tuple[int, ...]:
        """The final tiled shape, most major first (the permuted dims when untiled)."""
        if self.steps:
            return self.steps[-1].output_sizes
        return tuple(self.dims[d] for d in self.layout.major_to_minor)

    @cached_property
    def strides(self) -> tuple[int, ...]:
        """Row-major strides of the physical shape, in elements."""
        out: list[int] = []
        s = 1
        for n in reversed(self.physical_shape):
            out.append(s)
            s *= n
        return tuple(reversed(out))

    @property
    def num_elements(self) -> int:
        return math.prod(self.dims)

    @property
    def physical_elements(self) -> int:
        """Elements of the tiled shape, padding included."""
        return math.prod(self.physical_shape)

    @property
    def buffer_elements(self) -> int:
        """Size of the buffer in elements: the tiled shape, rounded up to `L(n)`."""
        align = self.layout.tail_padding
        return -(-self.physical_elements // align) * align

    @property
    def element_bits(self) -> int:
        """Bits each element occupies in memory: `E(n)`, else the type's width rounded up to a
        byte (0 for token/opaque)."""
        if self.layout.element_size_in_bits:
            return self.layout.element_size_in_bits
        bits = ELEMENT_BITS.get(self.element_type, 0)
        return 0 if bits == 0 else max(8, bits)

    @property
    def buffer_bytes(self) -> int:
        return -(-self.buffer_elements * self.element_bits // 8)

    def __str__(self) -> str:
        dims = ",".join(f"<={n}" if dyn else str(n) for n, dyn in zip(self.dims, self.dynamic))
        layout = str(self.layout)
        return f"{self.element_type}[{dims}]" + ("" if layout == "{}" else layout)

    # -- concrete evaluation ----------------------------------------------------------------
    @overload
    def _forward(self, index: Sequence[int]) -> Sequence[int]: ...
    @overload
    def _forward(self, index: Sequence[Expr]) -> Sequence[Expr | int]: ...  # padding adds 0s
    @overload
    def _forward(self, index: Sequence[IndexValue]) -> Sequence[IndexValue]: ...

    def _forward(self, index: Sequence[IndexValue]) -> Sequence[IndexValue]:
        """The document's pad-reshape-transpose on one index; works on ints and on Exprs."""
        cur: list[IndexValue] = [index[d] for d in self.layout.major_to_minor]
        for st in self.steps:
            cur = [0] * st.prepended + cur
            merged = [_linearize([cur[m] for m in g], [st.input_sizes[m] for m in g])
                      for g in st.groups]
            cur = (cur[: st.lead] + [v // t for v, t in zip(merged, st.group_tiles)]
                   + [v % t for v, t in zip(merged, st.group_tiles)])
        return cur

    def _check_index(self, index: Sequence[int]) -> tuple[int, ...]:
        idx = tuple(int(i) for i in index)
        if len(idx) != self.rank:
            raise ValueError(f"index {idx} has {len(idx)} entries; the shape has rank "
                             f"{self.rank}")
        if not all(0 <= i < n for i, n in zip(idx, self.dims)):
            raise ValueError(f"index {idx} is outside the shape {list(self.dims)}")
        return idx

    def physical_index(self, index: Sequence[int]) -> tuple[int, ...]:
        """Where a logical element sits in the physical (tiled) shape."""
        return tuple(int(v) for v in self._forward(self._check_index(index)))

    def offset(self, index: Sequence[int]) -> int:
        """Linear offset (in elements) of a logical element."""
        return sum(p * s for p, s in zip(self.physical_index(index), self.strides))

    def element_at(self, offset: int) -> tuple[int, ...] | None:
        """The logical element at an offset, or None for padding."""
        m = self.from_offset_map()
        if not 0 <= offset < self.physical_elements or m.is_known_empty:
            return None
        if not m.constraints_satisfied([offset]) or offset not in m.dims[0].bounds:
            return None
        return m.evaluate([offset])

    def offsets(self) -> list[int]:
        """The offset of every element, in row-major logical order.

        Runs the document's definition on whole columns of coordinates at once. Without `*`, each
        physical coordinate depends on one logical dimension and index 0 maps to physical 0, so
        the offset is a sum of one table per logical dimension."""
        n = self.num_elements
        if n > OFFSETS_LIMIT:
            raise UnsupportedError(f"{n} elements: over the enumeration limit {OFFSETS_LIMIT}")
        if n == 0:
            return []
        if any(len(g) > 1 for st in self.steps for g in st.groups):
            columns: list[IndexValue] = []
            for d, size in enumerate(self.dims):
                inner = math.prod(self.dims[d + 1 :])
                outer = math.prod(self.dims[:d])
                columns.append(_Column([v for v in range(size) for _ in range(inner)] * outer))
            return _as_list(self._column_offset(columns), n)
        out = [0]
        for d, size in enumerate(self.dims):
            index: list[IndexValue] = [0] * self.rank
            index[d] = _Column(range(size))
            row = _as_list(self._column_offset(index), size)
            out = [a + b for a in out for b in row]
        return out

    def iter_offsets(self) -> Iterator[int]:
        """The offsets of `offsets()`, one at a time in the same order, without holding them all
        when the layout has no `*` (then each offset is a sum of one table per logical dimension,
        walked like an odometer); with `*`, from `offsets()` and its limit."""
        if any(len(g) > 1 for st in self.steps for g in st.groups):
            yield from self.offsets()
            return
        if self.num_elements == 0:
            return
        tables = []
        for d, size in enumerate(self.dims):
            index: list[IndexValue] = [0] * self.rank
            index[d] = _Column(range(size))
            tables.append(_as_list(self._column_offset(index), size))
        if not tables:
            yield 0
            return
        last = tables[-1]
        for head in itertools.product(*tables[:-1]):
            base = sum(head)
            for b in last:
                yield base + b

    def _column_offset(self, index: Sequence[IndexValue]) -> IndexValue:
        total: IndexValue = 0
        for p, s in zip(self._forward(index), self.strides):
            total = total + p * s
        return total

    # -- indexing maps ----------------------------------------------------------------------
    def _logical_vars(self) -> list[Expr]:
        return [Dim(i) for i in range(self.rank)]

    @cached_property
    def _offset_expr(self) -> Expr:
        phys = [as_expr(p) for p in self._forward(self._logical_vars())]
        return add(0, *[mul(p, s) for p, s in zip(phys, self.strides)])

    def _cached(self, name: str, tidy: bool) -> IndexingMap | None:
        return self._maps.get((name, tidy))

    def _store(self, name: str, tidy: bool, m: IndexingMap) -> IndexingMap:
        self._maps[(name, tidy)] = m
        return m

    def to_physical_map(self, tidy: bool = True) -> IndexingMap:
        """Logical index -> physical (tiled-shape) index: the pad-reshape-transpose view."""
        m = self._cached("to_physical", tidy)
        if m is None:
            results = [as_expr(p) for p in self._forward(self._logical_vars())]
            m = self._store("to_physical", tidy, _make_map(results, self.dims, (), tidy))
        return m

    def to_logical_map(self, tidy: bool = True) -> IndexingMap:
        """Physical index -> logical index; padding elements are outside the relation (they
        violate a constraint)."""
        m = self._cached("to_logical", tidy)
        if m is None:
            phys = [Dim(k) for k in range(len(self.physical_shape))]
            logical, cons = self._inverse(phys)
            m = self._store("to_logical", tidy,
                            _make_map(logical, self.physical_shape, cons, tidy))
        return m

    def offset_map(self, tidy: bool = True) -> IndexingMap:
        """Logical index -> linear offset in elements."""
        m = self._cached("offset", tidy)
        if m is None:
            m = self._store("offset", tidy, _make_map([self._offset_expr], self.dims, (), tidy))
        return m

    def from_offset_map(self, tidy: bool = True) -> IndexingMap:
        """Offset -> logical index over `[0, physical_elements - 1]`; padding and tail padding
        are outside the relation."""
        m = self._cached("from_offset", tidy)
        if m is None:
            size = self.physical_elements
            if size == 0:
                m = IndexingMap.build([Const(0)] * self.rank, [(0, -1)])
            else:
                logical, cons = self._inverse(self._delinearize(Dim(0)))
                m = _make_map(logical, (size,), cons, tidy)
            self._store("from_offset", tidy, m)
        return m

    def _delinearize(self, offset: Expr) -> list[Expr]:
        out: list[Expr] = []
        for k, (n, s) in enumerate(zip(self.physical_shape, self.strides)):
            q = floordiv(offset, s)
            out.append(q if k == 0 else mod(q, n))
        return out

    def _inverse(self, phys: Sequence[Expr]) -> tuple[list[Expr], list[tuple[Expr, Interval]]]:
        """Logical index expressions for physical index expressions, plus the constraints that
        exclude padding (each step's padded range, and prepended dimensions being 0)."""
        cons: list[tuple[Expr, Interval]] = []
        cur: list[Expr] = list(phys)
        for st in reversed(self.steps):
            ng = len(st.groups)
            outer, inner = cur[st.lead : st.lead + ng], cur[st.lead + ng :]
            prev: list[Expr] = cur[: st.lead] + [Const(0)] * (len(st.input_sizes) - st.lead)
            for g, size, t, o, i in zip(st.groups, st.group_sizes, st.group_tiles, outer, inner):
                v = add(mul(o, t), i)
                if -(-size // t) * t != size:
                    cons.append((v, Interval(0, size - 1)))
                stride = 1
                for m in reversed(g):
                    part = floordiv(v, stride)
                    prev[m] = part if m == g[0] else mod(part, st.input_sizes[m])
                    stride *= st.input_sizes[m]
            for j in range(st.prepended):
                cons.append((prev[j], Interval(0, 0)))
            cur = prev[st.prepended :]
        logical: list[Expr] = [Const(0)] * self.rank
        for pos, d in enumerate(self.layout.major_to_minor):
            logical[d] = cur[pos]
        return logical, cons


def _linearize(values: Sequence[IndexValue], sizes: Sequence[int]) -> IndexValue:
    """Row-major index of `values` in `sizes`, the major part first (`e_i * d_{i-1} + e_{i-1}`);
    ints give an int, expressions an expression."""
    total: IndexValue = 0
    for k, v in enumerate(values):
        total = total + v * math.prod(sizes[k + 1 :])
    return total


class _Column(list):  # type: ignore[type-arg]
    """A column of ints with elementwise `+`, `*`, `//`, `%` (for `offsets()`)."""

    def __add__(self, other: object) -> _Column:  # type: ignore[override]
        if isinstance(other, _Column):
            return _Column(a + b for a, b in zip(self, other))
        return _Column(a + other for a in self)  # type: ignore[operator]

    __radd__ = __add__

    def __mul__(self, k: object) -> _Column:  # type: ignore[override]
        return _Column(a * k for a in self)  # type: ignore[operator]

    __rmul__ = __mul__

    def __floordiv__(self, k: int) -> _Column:
        return _Column(a // k for a in self)

    def __mod__(self, k: int) -> _Column:
        return _Column(a % k for a in self)


def _as_list(value: IndexValue | _Column, n: int) -> list[int]:
    return list(value) if isinstance(value, _Column) else [int(value)] * n  # type: ignore[arg-type]


# -- tidying -------------------------------------------------------------------------------------


def tidy_map(m: IndexingMap) -> IndexingMap:
    """The same relation, rewritten by the proven rule base (`verifidx.simplify`). Used on every
    map this module builds."""
    return default_simplifier().simplify(m)


def _make_map(results: Sequence[Expr], sizes: Sequence[int],
              cons: Sequence[tuple[Expr, Interval]], tidy: bool) -> IndexingMap:
    m = IndexingMap.build(list(results), [(0, n - 1) for n in sizes], constraints=list(cons))
    return tidy_map(m) if tidy else m


# -- parsing -------------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_INT = re.compile(r"\d+")
_ITEM = re.compile(r"[A-Z]+|#|\*")


class _Scanner:
    def __init__(self, text: str, source: str) -> None:
        self.text, self.source, self.pos = text, source, 0

    def fail(self, message: str, at: int | None = None) -> ParseError:
        line, col = locate(self.text, self.pos if at is None else at)
        return ParseError(message, line, col, self.source)

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def at(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.at(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str) -> None:
        if not self.accept(s):
            found = self.text[self.pos : self.pos + 1] or "end of text"
            raise self.fail(f"expected {what}, found {found!r}")

    def match(self, pattern: re.Pattern[str]) -> str | None:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group()

    def integer(self, what: str) -> int:
        got = self.match(_INT)
        if got is None:
            raise self.fail(f"expected {what}")
        return int(got)


def parse_shape(text: str, source: str = "<string>") -> TiledShape:
    """Parse `f32[3,5]{1,0:T(2,2)}` (spaces allowed, as XLA prints `f32[3, 5]{1, 0}`).

    The element type is case-insensitive (the document writes `F32`); without a layout the
    default `{rank-1,...,0}` is used. Tiles may be written `T(2,2)(2,1)` or, as in the document,
    `(2,2)`. Raises ParseError with line and column."""
    sc = _Scanner(text, source)
    sc.skip()
    start = sc.pos
    name = sc.match(_NAME)
    if name is None:
        raise sc.fail("expected an element type such as f32")
    etype = name.lower()
    if etype not in ELEMENT_BITS:
        raise sc.fail(f"unknown element type {name!r}", start)
    if sc.at("("):
        raise sc.fail("a tuple shape has no single layout")
    sc.expect("[", "'[' after the element type")
    dims: list[int] = []
    dynamic: list[bool] = []
    if not sc.accept("]"):
        while True:
            sc.skip()
            if sc.at("?"):
                raise sc.fail("an unbounded dynamic dimension '?' has no size to lay out")
            dyn = sc.accept("<=")
            dims.append(sc.integer("a dimension size"))
            dynamic.append(dyn)
            if sc.accept("]"):
                break
            sc.expect(",", "',' or ']' in the dimensions")
    layout = TiledLayout.default(len(dims))
    if sc.at("{"):
        layout = _parse_layout(sc, len(dims))
    sc.skip()
    if sc.pos != len(text):
        raise sc.fail("unexpected text after the shape")
    return TiledShape(etype, tuple(dims), layout, tuple(dynamic))


def parse_layout(text: str, rank: int, source: str = "<string>") -> TiledLayout:
    """Parse a layout alone (`{1,0:T(2,2)}`) for a shape of the given rank."""
    sc = _Scanner(text, source)
    layout = _parse_layout(sc, rank)
    sc.skip()
    if sc.pos != len(text):
        raise sc.fail("unexpected text after the layout")
    return layout


def _parse_layout(sc: _Scanner, rank: int) -> TiledLayout:
    sc.skip()
    start = sc.pos
    sc.expect("{", "'{' to start the layout")
    order: list[int] = []
    if not sc.at(":") and not sc.at("}"):
        while True:
            order.append(sc.integer("a dimension number in the layout"))
            if not sc.accept(","):
                break
    if sorted(order) != list(range(rank)):
        raise sc.fail(f"layout {{{','.join(map(str, order))}}} is not a permutation of the "
                      f"{rank} dimensions of the shape", start)
    tiles: tuple[tuple[int, ...], ...] = ()
    values: dict[str, int] = {}
    other: list[str] = []
    seen: set[str] = set()
    if sc.accept(":"):
        while not sc.at("}"):
            sc.skip()
            at = sc.pos
            if sc.at("("):
                item = "T"  # the document's spelling `{1,0:(2,2)}`
            else:
                got = sc.match(_ITEM)
                if got is None:
                    raise sc.fail("expected a layout item such as T(...), E(...), S(...) or '}'")
                item = got
            if item in seen and item in ("T", "E", "S", "L"):
                raise sc.fail(f"duplicate layout item '{item}'", at)
            seen.add(item)
            if item == "T":
                tiles = _parse_tiles(sc)
            elif item in ("E", "S", "L"):
                sc.expect("(", f"'(' after '{item}'")
                values[item] = sc.integer(f"an integer in {item}(...)")
                sc.expect(")", f"')' after {item}(...")
            else:
                if not sc.at("("):
                    raise sc.fail(f"expected '(' after layout item '{item}'")
                _skip_balanced(sc)
                other.append(re.sub(r"\s+", "", sc.text[at : sc.pos]))
    sc.expect("}", "'}' at the end of the layout")
    if values.get("L", 1) < 1:
        raise sc.fail("L(n) needs n >= 1", start)
    return TiledLayout(tuple(order), tiles, values.get("E"), values.get("L", 1),
                       values.get("S"), tuple(other))


def _parse_tiles(sc: _Scanner) -> tuple[tuple[int, ...], ...]:
    if not sc.at("("):
        raise sc.fail("expected '(' after 'T'")
    tiles: list[tuple[int, ...]] = []
    while sc.accept("("):
        tile: list[int] = []
        while True:
            sc.skip()
            at = sc.pos
            if sc.accept("*"):
                tile.append(COMBINE)
            else:
                size = sc.integer("a tile size or '*'")
                if size == 0:
                    raise sc.fail("a tile size must be positive", at)
                tile.append(size)
            if sc.accept(")"):
                break
            sc.expect(",", "',' or ')' in the tile")
        if tile[-1] == COMBINE:
            raise sc.fail(f"tile {_tile_text(tile)}: '*' combines a dimension with the next "
                          "more minor one, so it cannot be the most minor entry")
        tiles.append(tuple(tile))
    return tuple(tiles)


def _skip_balanced(sc: _Scanner) -> None:
    depth = 0
    start = sc.pos
    while sc.pos < len(sc.text):
        ch = sc.text[sc.pos]
        sc.pos += 1
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return
    raise sc.fail("unbalanced '(' in layout item", start)


def as_tiled_shape(shape: str | TiledShape | Any) -> TiledShape:
    """A TiledShape from text, a TiledShape, or an HLO shape (`verifidx.hlo.shape.Shape`: any
    object with `element_type`, `dims` and `layout`)."""
    if isinstance(shape, TiledShape):
        return shape
    if isinstance(shape, str):
        return parse_shape(shape)
    if getattr(shape, "is_tuple", False):
        raise UnsupportedError(f"tuple shape {shape} has no single layout; pass an element")
    dims = tuple(int(d) for d in shape.dims)
    if any(d < 0 for d in dims):
        raise UnsupportedError(f"shape {shape} has an unbounded dynamic dimension")
    hl = shape.layout
    if hl is None:
        layout = TiledLayout.default(len(dims))
    else:
        other: list[str] = []
        tail = 1
        for item in getattr(hl, "other_items", ()):
            m = re.fullmatch(r"L\((\d+)\)", item.replace(" ", ""))
            if m:
                tail = int(m.group(1))
            else:
                other.append(item)
        tiles = tuple(tuple(COMBINE if t < 0 else int(t) for t in tile) for tile in hl.tiles)
        layout = TiledLayout(tuple(hl.minor_to_major), tiles,
                             getattr(hl, "element_size_in_bits", None) or None, tail,
                             getattr(hl, "memory_space", None), tuple(other))
    dynamic = tuple(getattr(shape, "dynamic", ()) or (False,) * len(dims))
    return TiledShape(str(shape.element_type), dims, layout, dynamic)


# -- maps between shapes -------------------------------------------------------------------------


def physical_layout_map(shape: str | TiledShape | Any, include_tiling: bool = True
                        ) -> tuple[IndexingMap, IndexingMap]:
    """(to_physical, to_logical) for a shape: logical -> physical index and back.

    For an untiled layout the physical shape is the logical one permuted to major-to-minor order,
    exactly XLA's GetIndexingMapFromLogicalToPhysicalLayout / ...PhysicalLayoutToLogical (e.g.
    `{1,0,2}` on `[10,20,30]`: `(d0, d1, d2) -> (d2, d0, d1)` and back `(d1, d2, d0)` over
    `[30,10,20]`). With tiles, the physical shape is the tiled one (tile counts, then tiles) and
    `to_logical` excludes padding by constraints; `include_tiling=False` ignores the tiles as
    XLA's indexing analysis does."""
    s = as_tiled_shape(shape)
    if not include_tiling and s.layout.tiles:
        s = TiledShape(s.element_type, s.dims, TiledLayout(s.layout.minor_to_major), s.dynamic)
    return s.to_physical_map(), s.to_logical_map()


def bitcast_map(source: str | TiledShape | Any, target: str | TiledShape | Any,
                tidy: bool = True) -> IndexingMap:
    """Logical index of `source` -> logical index of `target` at the same offset in memory.

    For an HLO `bitcast`, the output-to-input map is `bitcast_map(result, operand)` and the
    input-to-output map is `bitcast_map(operand, result)`. A source element whose offset is
    padding (or beyond the end) in the target is outside the relation (a constraint excludes it)."""
    src, dst = as_tiled_shape(source), as_tiled_shape(target)
    if src.element_bits != dst.element_bits:
        raise UnsupportedError(
            f"bitcast between {src.element_bits}-bit and {dst.element_bits}-bit elements: "
            "offsets are counted in elements, so they would not line up")
    offset = src._offset_expr
    size = dst.physical_elements
    if size == 0 or src.num_elements == 0:
        empty = IndexingMap.build([Const(0)] * dst.rank, [(0, n - 1) for n in src.dims])
        return empty.replace(is_known_empty=True)
    logical, cons = dst._inverse(dst._delinearize(offset))
    if src.physical_elements > size:
        # otherwise implied: every source offset is below src.physical_elements (the in-bounds
        # property that prove_in_bounds checks)
        cons = [(offset, Interval(0, size - 1)), *cons]
    return _make_map(logical, src.dims, cons, tidy)


def physical_mode_map(logical_map: IndexingMap, source: str | TiledShape | Any,
                      target: str | TiledShape | Any, include_tiling: bool = True) -> IndexingMap:
    """XLA's `use_physical_layout` mode for a map from `source`'s logical index to `target`'s.

    The convention, read off the conformance corpus (PhysicalLayoutTest*): the map goes from the
    source's physical index to the target's physical index,
    `compose(compose(source.to_logical, logical_map), target.to_physical)`. For an op's
    output-to-input map, source is the output and target the operand (physical output ->
    logical output -> logical operand -> physical operand); for input-to-output, source is the
    operand and target the output. With tiles, padding positions of the source are outside the
    relation."""
    src, dst = as_tiled_shape(source), as_tiled_shape(target)
    _, src_to_logical = physical_layout_map(src, include_tiling)
    dst_to_physical, _ = physical_layout_map(dst, include_tiling)
    return tidy_map(compose(compose(src_to_logical, logical_map), dst_to_physical))


def physical_bitcast_map(source: str | TiledShape | Any, target: str | TiledShape | Any
                         ) -> IndexingMap:
    """A bitcast in physical mode: source physical index -> target physical index."""
    src, dst = as_tiled_shape(source), as_tiled_shape(target)
    return physical_mode_map(bitcast_map(src, dst), src, dst)


# -- proofs --------------------------------------------------------------------------------------


@dataclass
class LayoutProof:
    """The verdicts `check_layout` gives for one shape."""

    shape: TiledShape
    injective: Verdict
    in_bounds: Verdict

    @property
    def holds(self) -> bool | None:
        a, b = self.injective.holds, self.in_bounds.holds
        if a is False or b is False:
            return False
        return None if a is None or b is None else True


def map_is_injective(m: IndexingMap, timeout_ms: int = 2000) -> Verdict:
    """Verdict: no two distinct points of the domain have the same results.

    For maps with dims only (no range or runtime variables). Encoded as one emptiness question
    per dimension k: points x, y that agree before k, have x_k > y_k (no loss of generality,
    equality of results is symmetric), satisfy the constraints, and give equal results. Each is
    decided by `smt.is_empty` (exact floordiv/mod encoding). True only when every one is unsat;
    False with a counterexample `{d0: .., d0': ..}` re-evaluated here; None on a timeout."""
    from ..solve import smt

    if m.num_range_vars or m.num_rt_vars:
        raise UnsupportedError("injectivity is decided for maps with dimensions only")
    n = m.num_dims
    if m.is_known_empty or n == 0:
        return smt.Verdict(True, message="at most one point")
    seconds = 0.0
    for k in range(n):
        # dims: x_0..x_{n-1}, then y_k..y_{n-1}; y_j is x_j for j < k
        ys: dict[Expr, Expr] = {Dim(j): (Dim(j) if j < k else Dim(n + j - k)) for j in range(n)}
        dims = [v.bounds for v in (*m.dims, *m.dims[k:])]  # unnamed: witnesses read d0, d1...
        hi = m.dims[k].bounds.size - 1
        if hi < 1:
            continue
        cons: list[tuple[Expr, Interval]] = [(add(Dim(k), mul(Dim(n), -1)), Interval(1, hi))]
        for e, iv in m.constraints.items():
            cons += [(e, iv), (e.substitute(ys), iv)]
        for r in m.results:
            cons.append((add(r, mul(r.substitute(ys), -1)), Interval(0, 0)))
        pair = IndexingMap.build([*m.results, *[r.substitute(ys) for r in m.results]], dims,
                                 constraints=cons)
        v = smt.is_empty(pair, timeout_ms)
        seconds += v.seconds
        if v.holds is None:
            return smt.Verdict(None, message=f"undecided: {v.message}", seconds=seconds)
        if v.holds is False:
            point = v.counterexample or {}
            vals = [point.get(f"d{i}", 0) for i in range(n + (n - k))]
            x = vals[:n]
            y = vals[:k] + vals[n:]
            fx, fy = m.evaluate(x), m.evaluate(y)
            if x == y or fx != fy:
                return smt.Verdict(None, message="solver witness failed re-evaluation")
            cex = {f"d{i}": x[i] for i in range(n)}
            cex.update({f"d{i}'": y[i] for i in range(n)})
            return smt.Verdict(False, cex, lhs_value=fx, rhs_value=fy, seconds=seconds,
                               message=f"{tuple(x)} and {tuple(y)} both map to {fx}")
    return smt.Verdict(True, message="no two distinct indices share a result", seconds=seconds)


def map_within(m: IndexingMap, lo: int, hi: int, timeout_ms: int = 2000) -> Verdict:
    """Verdict: every result of every point of the domain lies in [lo, hi] (two emptiness
    questions per result: below lo, above hi). False comes with the offending point."""
    from ..solve import smt

    seconds = 0.0
    big = 1 << 62
    for r in m.results:
        for iv, side in ((Interval(-big, lo - 1), "below"), (Interval(hi + 1, big), "above")):
            v = smt.is_empty(m.add_constraint(r, iv), timeout_ms)
            seconds += v.seconds
            if v.holds is None:
                return smt.Verdict(None, message=f"undecided: {v.message}", seconds=seconds)
            if v.holds is False:
                return smt.Verdict(False, v.counterexample, lhs_value=v.lhs_value,
                                   seconds=seconds,
                                   message=f"a result is {side} [{lo}, {hi}] at "
                                           f"{print_point(v.counterexample or {})}: "
                                           f"{_results(v.lhs_value)}")
    return smt.Verdict(True, message=f"every result in [{lo}, {hi}]", seconds=seconds)


def _results(value: object) -> str:
    return print_values(value) if isinstance(value, tuple) else str(value)


def prove_injective(shape: str | TiledShape | Any, timeout_ms: int = 2000,
                    direct: bool = False) -> Verdict:
    """Z3: two distinct logical indices never share an offset.

    `direct=True` asks exactly that, over two copies of the logical dims and the offset map.
    By default the same fact is proven in three parts that Z3 finds much easier (milliseconds
    instead of seconds on combined, repeated tilings): (1) the physical index map is injective,
    (2) every physical coordinate lies inside the tiled shape, (3) the row-major linearization
    is injective on the tiled shape; offset = linearization . physical index, so (1)-(3) imply
    the claim. If a part does not come out True, the direct question is asked instead, so a
    False verdict always carries two indices with the same offset."""
    from ..solve import smt

    s = as_tiled_shape(shape)
    if direct:
        return map_is_injective(s.offset_map(), timeout_ms)
    phys = s.to_physical_map()
    parts = [map_is_injective(phys, timeout_ms)]
    for r, n in zip(phys.results, s.physical_shape):
        if parts[-1].holds is not True:
            break
        parts.append(map_within(IndexingMap.build([r], phys.dims), 0, n - 1, timeout_ms))
    if parts[-1].holds is True:
        linear = IndexingMap.build(
            [add(0, *[mul(Dim(k), st) for k, st in enumerate(s.strides)])],
            [(0, n - 1) for n in s.physical_shape])
        parts.append(map_is_injective(linear, timeout_ms))
    seconds = sum(v.seconds for v in parts)
    if parts[-1].holds is True:
        return smt.Verdict(True, seconds=seconds, message=(
            "physical index injective and inside the tiled shape; row-major linearization "
            "injective"))
    v = map_is_injective(s.offset_map(), timeout_ms)
    v.seconds += seconds
    return v


def prove_in_bounds(shape: str | TiledShape | Any, timeout_ms: int = 2000) -> Verdict:
    """Z3: every offset lies in [0, buffer_elements - 1]."""
    s = as_tiled_shape(shape)
    return map_within(s.offset_map(), 0, s.buffer_elements - 1, timeout_ms)


def check_layout(shape: str | TiledShape | Any, timeout_ms: int = 2000) -> LayoutProof:
    s = as_tiled_shape(shape)
    return LayoutProof(s, prove_injective(s, timeout_ms), prove_in_bounds(s, timeout_ms))


def layouts_equivalent(a: str | TiledShape | Any, b: str | TiledShape | Any,
                       timeout_ms: int = 2000) -> Verdict:
    """Verdict: the two layouts of the same logical shape put every element at the same offset.

    False comes with a counterexample index (`d0`, `d1`, ...) and the two offsets in
    `lhs_value` / `rhs_value`. Buffer sizes may still differ (e.g. `L(n)`); the message says so."""
    from ..solve import smt

    x, y = as_tiled_shape(a), as_tiled_shape(b)
    if x.dims != y.dims:
        return smt.Verdict(False, message=f"different logical shapes {list(x.dims)} and "
                                          f"{list(y.dims)}")
    v = smt.equal(x.offset_map(), y.offset_map(), timeout_ms)
    if v.holds is False and v.counterexample is not None:
        idx = [v.counterexample.get(f"d{i}", 0) for i in range(x.rank)]
        ox, oy = x.offset(idx), y.offset(idx)
        if ox == oy:
            return smt.Verdict(None, message="solver counterexample failed re-evaluation")
        return smt.Verdict(False, {f"d{i}": idx[i] for i in range(x.rank)}, lhs_value=ox,
                           rhs_value=oy, seconds=v.seconds,
                           message=f"element {tuple(idx)} is at offset {ox} in {x} and {oy} "
                                   f"in {y}")
    if v.holds is True and x.buffer_elements != y.buffer_elements:
        v.message = (f"same offsets; buffers differ ({x.buffer_elements} vs "
                     f"{y.buffer_elements} elements)")
    return v


__all__ = [
    "COMBINE", "ELEMENT_BITS", "LayoutProof", "TiledLayout", "TiledShape", "TilingStep",
    "as_tiled_shape", "bitcast_map", "check_layout", "layouts_equivalent", "map_is_injective",
    "map_within", "parse_layout", "parse_shape", "physical_bitcast_map", "physical_layout_map",
    "physical_mode_map", "prove_in_bounds", "prove_injective", "tidy_map",
]
