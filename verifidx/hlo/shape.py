"""Shapes, element types and layouts of HLO values.

These are plain immutable values: the parser builds them, the indexing and layout code reads them.
`str()` prints them the way XLA does, so a printed shape parses back to an equal shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from verifidx.core.interval import Interval

# Bit width of every element type XLA prints. `token` and `opaque` carry no data.
ELEMENT_TYPE_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1,
    "s2": 2,
    "s4": 4,
    "s8": 8,
    "s16": 16,
    "s32": 32,
    "s64": 64,
    "u1": 1,
    "u2": 2,
    "u4": 4,
    "u8": 8,
    "u16": 16,
    "u32": 32,
    "u64": 64,
    "f4e2m1fn": 4,
    "f8e3m4": 8,
    "f8e4m3": 8,
    "f8e4m3fn": 8,
    "f8e4m3fnuz": 8,
    "f8e4m3b11fnuz": 8,
    "f8e5m2": 8,
    "f8e5m2fnuz": 8,
    "f8e8m0fnu": 8,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "token": 0,
    "opaque": 0,
}

TUPLE = "tuple"
"""The element type recorded for tuple shapes (XLA prints tuples as parenthesized lists)."""

UNBOUNDED = -1
"""Stored in `Shape.dims` for a dimension printed as `?` (dynamic with no known bound)."""

MAX_SIZE = 2**63 - 1
"""The largest dimension size and element count of an array: XLA counts both in int64, so a
shape beyond it is no XLA shape (the readers refuse it where it is written)."""


def size_error(dims: tuple[int, ...]) -> str | None:
    """Why an array with these dimension sizes is too large, or None (`?` sizes not counted)."""
    for d, n in enumerate(dims):
        if n > MAX_SIZE:
            return f"dimension {d} has size {n}, more than 2^63 - 1 (XLA's sizes are int64)"
    count = 1
    for n in dims:
        if n > 0:
            count *= n
    if count > MAX_SIZE:
        return (f"the shape has {count} elements, more than 2^63 - 1 (XLA counts elements in "
                f"int64)")
    return None

WILDCARD_TILE_DIM = -1
"""Stored in a tile for a tile dimension printed as `*` (combine with the next dimension)."""


def is_floating_point(element_type: str) -> bool:
    """True for the real floating-point types (`f*`, `bf16`), whose literals are floats."""
    return element_type == "bf16" or element_type.startswith("f")


@dataclass(frozen=True)
class Layout:
    """A dense layout: the physical order of dimensions plus the optional tiling and annotations.

    `minor_to_major[0]` is the fastest varying logical dimension. `tiles` lists the tiles in
    the order written (the first tiles the shape, each later one tiles the previous tiles), each a
    tuple of sizes with `WILDCARD_TILE_DIM` for `*`. Items that the
    indexing code does not interpret (dim level types `D(...)`, `L(...)`, `P(...)`, `SC(...)`,
    ...) are kept verbatim in `other_items`; `text` is the layout exactly as written
    (not compared: `{1, 0}` equals `{1,0}`).
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    element_size_in_bits: int | None = None
    memory_space: int | None = None
    other_items: tuple[str, ...] = ()
    text: str = field(default="", compare=False)

    def __reduce__(self) -> tuple[object, ...]:
        # pickled through the constructor: compiled, a frozen dataclass's default unpickling
        # would assign its fields, which it forbids
        return (Layout, (self.minor_to_major, self.tiles, self.element_size_in_bits,
                         self.memory_space, self.other_items, self.text))

    def __str__(self) -> str:
        items: list[str] = []
        if self.tiles:
            items.append("T" + "".join(f"({','.join(map(_tile_dim, t))})" for t in self.tiles))
        if self.element_size_in_bits is not None:
            items.append(f"E({self.element_size_in_bits})")
        if self.memory_space is not None:
            items.append(f"S({self.memory_space})")
        items.extend(self.other_items)
        order = ",".join(str(d) for d in self.minor_to_major)
        return "{" + order + (":" + "".join(items) if items else "") + "}"


def _tile_dim(size: int) -> str:
    return "*" if size == WILDCARD_TILE_DIM else str(size)


@dataclass(frozen=True, init=False)
class Shape:
    """An array shape (`f32[10,20]{1,0}`) or a tuple shape (`(f32[10], s32[])`).

    For arrays, `dims` holds the sizes; a dimension whose `dynamic` flag is set is bounded by its
    size (`<=16`) or unbounded (`?`, size `UNBOUNDED`). For tuples, `element_type` is `TUPLE` and
    `tuple_shapes` holds the element shapes; `dims` is empty.
    """

    element_type: str
    dims: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = ()
    _leaves: tuple[Shape, ...] | None = field(default=None, init=False, repr=False,
                                             compare=False, hash=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __init__(self, element_type: str, dims: tuple[int, ...] = (),
                 dynamic: tuple[bool, ...] = (), layout: Layout | None = None,
                 tuple_shapes: tuple[Shape, ...] = ()) -> None:
        if not dynamic and dims:
            dynamic = (False,) * len(dims)
        if len(dynamic) != len(dims):
            raise ValueError("Shape needs one dynamic flag per dimension")
        # written out with the names as literals (the dataclass's would be interpreted code):
        # compiled by mypyc, each is a write of the native slot
        object.__setattr__(self, "element_type", element_type)
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "dynamic", dynamic)
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "tuple_shapes", tuple_shapes)
        object.__setattr__(self, "_leaves", None)
        object.__setattr__(self, "_hash", None)

    def __hash__(self) -> int:
        # kept: a module's shapes are hashed once per instruction per walk that keys on them
        found = self._hash
        if found is None:
            found = hash((self.element_type, self.dims, self.dynamic, self.layout,
                          self.tuple_shapes))
            object.__setattr__(self, "_hash", found)
        return found

    def __reduce__(self) -> tuple[object, ...]:
        # through the constructor (see Layout); the hash is not carried over: a string's hash
        # differs between processes, another process finds its own
        return (Shape, (self.element_type, self.dims, self.dynamic, self.layout,
                        self.tuple_shapes))

    @staticmethod
    def tuple_of(*elements: Shape) -> Shape:
        """A tuple shape holding `elements` (possibly none)."""
        return Shape(TUPLE, tuple_shapes=tuple(elements))

    @property
    def is_tuple(self) -> bool:
        return self.element_type == TUPLE

    @property
    def rank(self) -> int:
        """Number of dimensions of an array shape (0 for scalars and tuples)."""
        return len(self.dims)

    @property
    def is_dynamic(self) -> bool:
        """True when some dimension's size is only known at run time."""
        return True in self.dynamic or (bool(self.tuple_shapes) and
                                        any(s.is_dynamic for s in self.tuple_shapes))

    @property
    def element_bits(self) -> int:
        """Bit width of one element (0 for tuples, tokens and opaque values)."""
        return ELEMENT_TYPE_BITS.get(self.element_type, 0)

    def leaves(self) -> tuple[Shape, ...]:
        """The array shapes of a possibly nested tuple, depth first (`(self,)` for an array)."""
        if not self.is_tuple:
            return (self,)
        if self._leaves is None:  # kept: walks ask a tuple of n leaves for them once per leaf
            object.__setattr__(self, "_leaves", tuple(
                leaf for element in self.tuple_shapes for leaf in element.leaves()))
        return self._leaves  # type: ignore[return-value]

    def compatible(self, other: Shape) -> bool:
        """Same element types and sizes, ignoring layouts: what an operand annotation must match."""
        if self.is_tuple or other.is_tuple:
            return (
                self.is_tuple
                and other.is_tuple
                and len(self.tuple_shapes) == len(other.tuple_shapes)
                and all(
                    a.compatible(b)
                    for a, b in zip(self.tuple_shapes, other.tuple_shapes, strict=True)
                )
            )
        return self.element_type == other.element_type and self.dims == other.dims

    def without_layout(self) -> Shape:
        """The same shape with every layout dropped."""
        if self.is_tuple:
            return Shape.tuple_of(*(s.without_layout() for s in self.tuple_shapes))
        return Shape(self.element_type, self.dims, self.dynamic)

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(str(s) for s in self.tuple_shapes) + ")"
        dims = ",".join(
            ("?" if size == UNBOUNDED else f"<={size}") if dynamic else str(size)
            for size, dynamic in zip(self.dims, self.dynamic, strict=True)
        )
        layout = str(self.layout) if self.layout is not None else ""
        return f"{self.element_type}[{dims}]{layout}"


INTEGER_BITS: Final = {"s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
                       "u8": (8, False), "u16": (16, False), "u32": (32, False),
                       "u64": (64, False)}
"""Integer element types: bits and signedness."""


def integer_interval(element_type: str) -> Interval | None:
    """The values of an integer element type, None for another type."""
    found = INTEGER_BITS.get(element_type)
    if found is None:
        return None
    bits, signed = found
    return Interval(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else \
        Interval(0, 2 ** bits - 1)


def wrap_integer(value: int, element_type: str) -> int:
    """`value` as the element type holds it (two's complement); unchanged for another type."""
    found = INTEGER_BITS.get(element_type)
    if found is None:
        return value
    bits, signed = found
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value
