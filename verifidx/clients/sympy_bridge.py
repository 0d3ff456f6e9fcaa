"""sympy index expressions (as PyTorch Inductor writes them) to indexing maps and back.

Inductor's index expressions are sympy terms over loop variables `x0 < extent` with its own
function classes (`FloorDiv`, `ModularIndexing(x, div, mod)` = `(x // div) % mod`, ...).
`from_sympy` reads one as a map with one result and a dimension per loop variable, and
`to_sympy` writes a one-result map back. Functions are recognised by class *name*, so the
classes of `torch.utils._sympy.functions` and the stand-ins `parse_text` builds (no torch
needed: recorded logs replay anywhere) read alike. Whatever has no exact counterpart in a map
is an `UnsupportedError` naming the subterm; nothing is approximated.

Size symbols (`s0`, `s53`, `ps0`, ..., named in `size_ranges`) become the map's sizes
(docs/semantics.md, Sizes), renamed by `size_name` where the name is one of XLA's variable
names (`s0` is a range variable there) and back by `symbol_name`; a loop extent that depends on
sizes (`x1 < s0*s53`) becomes a constraint. Inductor's indirect indices (`indirect0`, `tmp4`)
are values loaded at run time: unsupported.

sympy is imported inside the functions only: it is a dependency of this module alone.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NoReturn

from ..core import laws
from ..core.canonical import canonical_product, canonical_sum, from_linear, linear_form
from ..core.errors import DivisorError, MissingDependencyError, ParseError, UnsupportedError
from ..core.expr import (
    CeilDiv,
    Const,
    Dim,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    Size,
    Variable,
    add,
    ceildiv,
    const_node,
    floordiv,
    has_index_variable,
    is_size_expr,
    is_size_name,
    maximum,
    minimum,
    mod,
    mul,
    register_cache,
)
from ..core.indexing_map import SIZE_MAX, IndexingMap, SizeVar, Var
from ..core.interval import Interval, range_of

# sympy objects are untyped here (sympy ships no stubs we rely on)
Sym = Any

#: Inductor's function classes (torch.utils._sympy.functions) and sympy's own, by class name,
#: with their arity. Semantics (checked against torch 2.13's source):
#: FloorDiv/CleanDiv a // b, rounding down (CleanDiv: b divides a); CeilDiv rounds up (torch
#: builds it as FloorDiv(a + b - 1, b)); ModularIndexing(x, d, m) (x // d) % m with C's %, and
#: torch's Mod C's % on a nonnegative dividend (both read only where the dividend cannot be
#: negative); PythonMod and sympy's Mod Python's % (positive divisors only); Identity(x) x
#: (printed as plain parentheses); floor/ceiling of a rational linear term; Min/Max of any
#: number of arguments.
KNOWN_FUNCTIONS: Final[dict[str, tuple[int, ...]]] = {
    "FloorDiv": (2,), "CleanDiv": (2,), "CeilDiv": (2,), "ModularIndexing": (3,),
    "PythonMod": (2,), "Mod": (2,), "Identity": (1,), "floor": (1,), "ceiling": (1,),
    "FloorToInt": (1,), "CeilToInt": (1,), "Min": (), "Max": (),
}
#: Names Inductor uses that a map cannot express (reported as unsupported, not unknown).
INEXPRESSIBLE: Final = frozenset({
    "IntTrueDiv", "FloatTrueDiv", "TruncToInt", "TruncToFloat", "RoundToInt", "RoundDecimal",
    "ToFloat", "FloatPow", "PowByNatural", "LShift", "RShift", "BitwiseFn_bitwise_and",
    "BitwiseFn_bitwise_or", "BitwiseFn_bitwise_xor", "IsNonOverlappingAndDenseIndicator",
    "Abs", "OpaqueUnaryFn_sqrt", "Where", "Piecewise",
})

#: Inductor's indirect indices (`indirect0`, `tmp4`: values loaded from a tensor), which it
#: ranges as [0, int_oo]; a map's runtime variables need finite bounds.
RUNTIME_MESSAGE: Final = "indirect index symbols not yet supported"
_RUNTIME_NAME: Final = re.compile(r"(?:indirect|tmp)[0-9]+")
#: Spellings of an unbounded end in `size_ranges` (sympy's and torch's infinities).
_INFINITE: Final = frozenset({"int_oo", "oo", "inf"})


# -- size names ----------------------------------------------------------------------------------


def size_name(symbol: str) -> str:
    """The verifidx size name of a sympy size symbol: the same name when it is a legal size
    name not ending in `_`, else the name with `_` appended (`s0` -> `s0_`: XLA reads `s0` as
    a range variable; `n_` -> `n__`). A bijection; `symbol_name` inverts it."""
    if is_size_name(symbol) and not symbol.endswith("_"):
        return symbol
    out = symbol + "_"
    if not is_size_name(out):
        raise UnsupportedError(f"{symbol!r} cannot name a size (an ASCII identifier is needed)")
    return out


def symbol_name(size: str) -> str:
    """The sympy symbol's name of a verifidx size name (the inverse of `size_name`)."""
    return size[:-1] if size.endswith("_") else size


def size_interval(name: str, bounds: Any) -> Interval:
    """A size's interval from `(lo, hi)` as text, integers or sympy numbers; an unbounded upper
    end (`int_oo`, `oo`) is SIZE_MAX = 2^31 - 1 (docs/semantics.md, Sizes), or `lo` where that
    is larger. Sizes are positive: a range that admits 0 is unsupported."""
    try:
        lo_text, hi_text = (str(b).strip() for b in bounds)
    except (TypeError, ValueError):
        raise ParseError(f"expected the range of {name} as [lo, hi]", source="<sympy>") from None
    if not re.fullmatch(r"-?[0-9]+", lo_text) or not (
            hi_text in _INFINITE or re.fullmatch(r"-?[0-9]+", hi_text)):
        raise ParseError(f"expected the range of {name} as integers (int_oo above), not "
                         f"[{lo_text}, {hi_text}]", source="<sympy>")
    lo = int(lo_text)
    hi = max(SIZE_MAX, lo) if hi_text in _INFINITE else int(hi_text)
    if lo < 1:
        raise UnsupportedError(f"the size {name} may be {lo} (range [{lo_text}, {hi_text}]): "
                               "sizes must be positive")
    if hi < lo:
        raise UnsupportedError(f"the size {name} has an empty range [{lo_text}, {hi_text}]")
    return Interval(lo, hi)


# -- sympy to maps -------------------------------------------------------------------------------


def from_sympy(expr: Sym, var_ranges: Mapping[Any, Any],
               size_ranges: Mapping[Any, Any] | None = None,
               declare: Iterable[str] = (),
               constraints: Iterable[tuple[Sym, int | None, int | None]] = ()
               ) -> IndexingMap:
    """The map `(x0, x1, ...) -> (expr)` with `0 <= x_i < extent_i`, one dimension per entry of
    `var_ranges` (symbol or name to extent, in that order). `size_ranges` (symbol or name to
    `(lo, hi)`) names the size symbols: those that `expr` or an extent uses, and those named
    in `declare`, become the map's sizes (`size_name`); an extent that is not a constant is
    the constraint `x_i - extent <= -1`. `constraints` (sympy term, lo, hi; None for an open
    end) restrict the domain further (a case of `Where`: `condition_cases`), before `expr` is
    read. A symbol in neither raises `ParseError`."""
    constraints = list(constraints)
    if constraints:  # a domain of its own: what is read under it holds there only
        domain = _read_domain(var_ranges, size_ranges)
        reader = domain.reader()
        extra = []
        for term, lo, hi in constraints:
            e = reader.read(term)
            iv = range_of(e, reader.bounds, reader.ranges)
            extra.append((e, Interval(iv.lo if lo is None else max(lo, iv.lo),
                                      iv.hi if hi is None else min(hi, iv.hi))))
        domain.constraints = [*domain.constraints, *extra]
        reader.constraints = domain.constraints
    else:
        key = _domain_key(var_ranges, size_ranges)
        cached = _DOMAINS.get(key)
        if cached is None:
            cached = _read_domain(var_ranges, size_ranges)
            if len(_DOMAINS) > _DOMAIN_LIMIT:
                _DOMAINS.clear()
            _DOMAINS[key] = cached
        domain = cached
        reader = domain.reader()
    result = reader.read(expr)
    for name in declare:
        if name not in reader.sizes:
            raise ParseError(f"symbol {name} has no range in size_ranges", source="<sympy>")
        reader.size(name, name)
    try:
        if len(reader.declared) == len(domain.declared):  # no size beyond the extents'
            return domain.map_of(result)
        return IndexingMap.build((result,), domain.dims, constraints=domain.constraints,
                                 sizes=list(reader.declared.values()))
    except ValueError as err:  # the grammar of maps with sizes (docs/semantics.md)
        raise UnsupportedError(f"{err}: {expr}") from None


class _Domain:
    """What `from_sympy` reads from the loop ranges and size ranges alone: the dimensions,
    the constraints of extents over sizes, the sizes the extents use, and the reader's
    state after them. Inductor simplifies many expressions over one loop nest."""

    def __init__(self, reader: _Reader, dims: list[Var],
                 constraints: list[tuple[Expr, Interval]]) -> None:
        self.dim_names = reader.dims
        self.sizes = reader.sizes
        self.declared = dict(reader.declared)
        self.bounds = dict(reader.bounds)
        self.leaves = dict(reader.leaves)
        self.ranges = reader.ranges
        self.dims = dims
        self.constraints = constraints
        self.base: IndexingMap | None = None
        #: what readers of this domain read of sympy subterms (`_Reader.read`)
        self.reads: dict[int, tuple[Sym, Expr]] = {}

    def map_of(self, result: Expr) -> IndexingMap:
        """The map of one result over the sizes of the extents alone (what `build` makes)."""
        if self.base is None:
            self.base = IndexingMap.build((), self.dims, constraints=self.constraints,
                                          sizes=list(self.declared.values()))
        return self.base.with_results((result,))

    def reader(self) -> _Reader:
        """A reader for one expression over this domain, as if it had just read the extents:
        it shares this domain's tables until it declares a size of its own (most expressions
        use the extents' sizes only); the ranges it memoizes hold for every reader here, and
        so do its reads of subterms while it shares the tables."""
        out = _Reader(self.dim_names, self.sizes)
        out.declared, out.bounds, out.leaves = self.declared, self.bounds, self.leaves
        out.constraints = self.constraints
        out.shared = True
        if len(self.ranges) > _RANGES_LIMIT:
            self.ranges.clear()
        out.ranges = self.ranges
        if len(self.reads) > _RANGES_LIMIT:
            self.reads.clear()
        out.reads = self.reads
        return out


#: `_Domain`s by `_domain_key`; emptied past `_DOMAIN_LIMIT` entries, and when the proven
#: laws change (the expressions they hold were built under the old ones).
_DOMAINS: Final[dict[tuple[object, ...], _Domain]] = register_cache({})
laws.on_change(_DOMAINS.clear)
_DOMAIN_LIMIT: Final = 4096
#: A domain's memo of subterm ranges is emptied past this many entries.
_RANGES_LIMIT: Final = 4096


def _domain_key(var_ranges: Mapping[Any, Any], size_ranges: Mapping[Any, Any] | None
                ) -> tuple[object, ...]:
    """The ranges as given, hashable: names, extents with their types (sympy's 4 equals 4
    and a bool equals an int, but each is read its own way) and sympy extents by what the
    reader reads of them (`_tree_key`), size bounds as text."""
    parts: list[object] = [len(var_ranges)]
    for k, v in var_ranges.items():
        plain = isinstance(v, (int, str)) or not hasattr(v, "is_Symbol")
        parts += (_name(k), type(v), v if plain else _extent_key(v))
    for k, bounds in (size_ranges or {}).items():
        if isinstance(bounds, list) and len(bounds) == 2 and isinstance(bounds[0], str) and \
                isinstance(bounds[1], str):  # as JSON gives them: two strings, flat
            parts += (_name(k), bounds[0], bounds[1])
            continue
        try:
            ends: tuple[object, ...] = tuple(b if isinstance(b, str) else str(b) for b in bounds)
        except TypeError:  # not a pair: `size_interval` says so where the size is used
            ends = (repr(bounds),)
        parts += (_name(k), ends)  # a tuple after the name: never read as two strings
    return tuple(parts)


def _extent_key(extent: Sym) -> object:
    """`_tree_key` of a sympy extent, remembered by identity: sympy's cache hands back one
    object for one term, so a loop nest's extents recur as the same objects. Each entry holds
    its object, whose id therefore names no other while the entry lives."""
    hit = _EXTENT_KEYS.get(id(extent))
    if hit is not None and hit[0] is extent:
        return hit[1]
    key = _tree_key(extent)
    if len(_EXTENT_KEYS) > _DOMAIN_LIMIT:
        _EXTENT_KEYS.clear()
    _EXTENT_KEYS[id(extent)] = (extent, key)
    return key


_EXTENT_KEYS: Final[dict[int, tuple[Sym, object]]] = {}


def _tree_key(node: Sym) -> object:
    """Everything `_Reader.read` looks at in a sympy tree, as plain hashable values: symbols
    by name, integers by value, other nodes by class and arguments in stored order. Two trees
    with one key read alike; sympy's own `==` on trees (Python code, a few microseconds a
    node) is not needed to find a domain read before."""
    kind = _kind(node)  # the reader's own classification of the node
    if kind == _SYMBOL:
        return _name(node)
    if kind == _INTEGER:
        return int(node)
    args = _args(node)
    if not args:  # a rational or another atom; a float by its exact binary value (its
        # text rounds it to 15 digits)
        return (type(node), getattr(node, "_mpf_", None), str(node))
    return (type(node), *[_tree_key(a) for a in args])


def _read_domain(var_ranges: Mapping[Any, Any], size_ranges: Mapping[Any, Any] | None
                 ) -> _Domain:
    names = [_name(k) for k in var_ranges]
    sizes = {_name(k): v for k, v in (size_ranges or {}).items()}
    reader = _Reader({n: Dim(i) for i, n in enumerate(names)}, sizes)
    extents = [reader.extent(n, v) for n, v in zip(names, var_ranges.values())]
    dims = []
    constraints = []
    for i, (n, e) in enumerate(zip(names, extents)):
        hi = e.value if isinstance(e, Const) else range_of(e, reader.bounds, reader.ranges).hi
        if hi < 1:
            raise UnsupportedError(f"the extent of {n} is {hi if isinstance(e, Const) else e} "
                                   "(at most): an empty loop")
        dims.append(Var(Interval(0, hi - 1), n))
        reader.bounds[Dim(i)] = dims[-1].bounds
        if not isinstance(e, Const):
            lo = range_of(Dim(i) - e, reader.bounds, reader.ranges).lo
            constraints.append((Dim(i) - e, Interval(min(lo, -1), -1)))
    return _Domain(reader, dims, constraints)


def _name(symbol: Any) -> str:
    """A symbol's name (sympy's printer, behind str(), costs microseconds)."""
    if isinstance(symbol, str):
        return symbol
    name = getattr(symbol, "name", None)
    return name if isinstance(name, str) else str(symbol)


class _Reader:
    """One walk over a sympy tree, building verifidx expressions; sizes are declared as they
    are met."""

    def __init__(self, dims: Mapping[str, Expr], sizes: Mapping[str, Any]) -> None:
        self.dims = dims
        self.sizes = sizes
        self.declared: dict[str, SizeVar] = {}
        self.bounds: dict[Variable, Interval] = {}
        self.ranges: dict[Expr, Interval] = {}
        #: the node of each declared size, by symbol name
        self.leaves: dict[str, Expr] = {}
        #: the domain's constraints (extents over sizes, a case's conditions): facts that
        #: show a dividend nonnegative where the bounds alone do not
        self.constraints: list[tuple[Expr, Interval]] = []
        #: the tables above are a `_Domain`'s: copied before the first change
        self.shared = False
        #: the domain's reads of compound subterms by the node's id (each entry holds its
        #: node, whose id names no other while the entry lives), while the tables are shared
        self.reads: dict[int, tuple[Sym, Expr]] | None = None

    def extent(self, name: str, extent: Any) -> Expr:
        """A loop's extent: an integer, or a size expression (sympy, or text as printed)."""
        if isinstance(extent, bool):
            raise ParseError(f"the extent of {name} must be an integer or a size expression",
                             source="<sympy>")
        if isinstance(extent, int):
            return Const(extent)
        if isinstance(extent, str):
            try:
                extent = parse_text(extent, set(self.sizes))
            except ParseError as err:
                raise ParseError(f"the extent of {name}: {err.message}", source="<sympy>"
                                 ) from None
        e = self.read(extent)
        if not isinstance(e, Const) and not is_size_expr(e):
            raise UnsupportedError(f"the extent of {name} is not a size expression: {extent}")
        return e

    def size(self, key: str, where: Any) -> Expr:
        node = self.leaves.get(key)
        if node is not None:
            return node
        if _RUNTIME_NAME.fullmatch(key):  # a declared name has passed this test
            raise UnsupportedError(f"{RUNTIME_MESSAGE}: {where} ({key} is not a loop "
                                   "variable or a size symbol: a value read at run time)")
        z = SizeVar(size_name(key), size_interval(key, self.sizes[key]),
                    provenance=f"sympy symbol {key}")
        if self.shared:
            self.declared, self.bounds = dict(self.declared), dict(self.bounds)
            self.leaves = dict(self.leaves)
            self.shared = False
            self.reads = None  # what it reads now may hold this size: not the domain's
        node = Size(z.name)
        self.declared[key] = z
        self.bounds[node] = z.bounds
        self.leaves[key] = node
        return node

    def read(self, node: Sym, parent: Sym = None) -> Expr:
        kind = _kind(node)
        if kind == _INTEGER:
            return const_node(node.p)  # sympy's Integer holds its value as a Python int
        if kind == _SYMBOL:
            return self._symbol(node, parent)
        if kind == _RATIONAL:
            raise UnsupportedError(f"a non-integer value: {node}")
        # a compound term: the expressions over one loop nest share most of them (sympy's
        # cache hands back one object for one term), and a read depends on the domain alone
        reads = self.reads
        if reads is not None:
            hit = reads.get(id(node))
            if hit is not None and hit[0] is node:
                return hit[1]
        out = self._compound(kind, node)
        if self.reads is not None:  # still the domain's tables (no size declared meanwhile)
            self.reads[id(node)] = (node, out)
        return out

    def _compound(self, kind: int, node: Sym) -> Expr:
        if kind == _ADD:  # in canonical form, which the simplifier then finds at once
            return canonical_sum([self.read(a, node) for a in _args(node)])
        if kind == _MUL:  # a rational coefficient is refused where it is read
            factors = [self.read(a, node) for a in _args(node)]
            if self.declared:
                first = -1  # the one factor with a loop variable
                for i, f in enumerate(factors):
                    if has_index_variable(f):
                        if first >= 0:
                            self._nonlinear(node)
                        first = i
                if first > 0 and _has_size_factor(factors):
                    # the loop variable's factor first (`x1 * s0_`, as XLA writes `d1 * N`;
                    # sympy sorts `s0*x1` by name): the maps print as XLA's do
                    factors.insert(0, factors.pop(first))
            out: Expr = factors[0]
            for f in factors[1:]:
                out = canonical_product(out, f)
            return out
        if kind == _POW:
            base, exp = _args(node)
            if not (exp.is_Integer and 0 <= int(exp) <= 64):
                raise UnsupportedError(f"a power that is not a natural number up to 64: {node}")
            if int(exp) == 0:
                return Const(1)
            b = self.read(base, node)
            out = b
            for _ in range(int(exp) - 1):
                out = self._product(out, b, node)
            return out
        return self._function(type(node).__name__, node)

    def _product(self, a: Expr, b: Expr, node: Sym) -> Expr:
        if self.declared and has_index_variable(a) and has_index_variable(b):
            self._nonlinear(node)
        return canonical_product(a, b)

    @staticmethod
    def _nonlinear(node: Sym) -> NoReturn:
        raise UnsupportedError(f"a product of loop variables beside size symbols (maps with "
                               f"sizes are linear in their variables): {node}")

    def _symbol(self, node: Sym, parent: Sym) -> Expr:
        key = _name(node)
        found = self.dims.get(key)
        if found is None:
            found = self.leaves.get(key)
        if found is not None:
            return found
        if key in self.sizes:  # named with its product (`indirect0*s0`), else alone
            mul = parent is not None and type(parent).__name__ == "Mul"
            return self.size(key, parent if mul else node)
        raise ParseError(f"symbol {key} has no range (give it in var_ranges or size_ranges)",
                         source="<sympy>")

    def _function(self, name: str, node: Sym) -> Expr:
        args = _args(node)
        if name == "TruncToInt":
            return self._truncated(node)
        if name in INEXPRESSIBLE:
            raise UnsupportedError(f"{name} has no counterpart in indexing maps: {node}")
        arity = KNOWN_FUNCTIONS.get(name)
        if arity is None:
            if _is_condition(node):  # a sympy tree handed in (the parser refuses it in text)
                raise UnsupportedError(f"a condition where a term is expected: {node}")
            raise ParseError(f"unknown function {name} in {node}", source="<sympy>")
        if arity and len(args) not in arity:
            raise ParseError(f"{name} takes {arity[0]} arguments, not {len(args)}: {node}",
                             source="<sympy>")
        if name in ("Min", "Max"):
            if not args:
                raise ParseError(f"{name} needs an argument", source="<sympy>")
            op = minimum if name == "Min" else maximum
            out = self.read(args[0], node)
            for a in args[1:]:
                out = op(out, self.read(a, node))
            return out
        if name == "Identity":
            return self.read(args[0], node)
        if name in ("floor", "ceiling", "FloorToInt", "CeilToInt"):
            return self._rounded(name, node)
        kids = [self.read(a, node) for a in args]
        for d in kids[1:]:
            self._divisor(d, node)
        try:
            if name in ("FloorDiv", "CleanDiv"):
                return floordiv(kids[0], kids[1])
            if name == "CeilDiv":
                return ceildiv(kids[0], kids[1])
            if name == "ModularIndexing":  # x // d >= 0 needs x >= 0 and d > 0
                _positive(kids[1], node)
                _positive(kids[2], node)
                self._nonnegative(kids[0], node)
                return mod(floordiv(kids[0], kids[1]), kids[2])
            _positive(kids[1], node)
            if name == "Mod":
                self._nonnegative(kids[0], node)
            return mod(kids[0], kids[1])
        except DivisorError as err:
            raise UnsupportedError(f"{err}: {node}") from None

    def _divisor(self, d: Expr, node: Sym) -> None:
        """A divisor is an integer constant, or a size expression positive at every size."""
        if isinstance(d, Const):
            return
        if not is_size_expr(d):
            raise UnsupportedError(f"a divisor that is neither an integer constant nor a size "
                                   f"expression: {node}")
        if range_of(d, self.bounds, self.ranges).lo < 1:
            raise UnsupportedError(f"a divisor that may be 0 or negative at some sizes in "
                                   f"their ranges: {node}")

    def _nonnegative(self, dividend: Expr, node: Sym) -> None:
        """ModularIndexing is `(x // d) % m` with C's `%`, and torch's Mod is defined for a
        nonnegative dividend only (sympy's Mod, the same name, is Python's): read only where
        the dividend cannot be negative, so that every meaning agrees."""
        if range_of(dividend, self.bounds, self.ranges).lo >= 0:
            return
        for c, iv in self.constraints:
            # dividend = r - c with c <= hi, or r + c with c >= lo: bounded below by
            # lo(r) - hi, or lo(r) + lo (e.g. s0 - x0 - 1 where x0 - s0 <= -1)
            if range_of(_plus(dividend, c, 1), self.bounds, self.ranges).lo - iv.hi >= 0 or \
                    range_of(_plus(dividend, c, -1), self.bounds, self.ranges).lo + iv.lo >= 0:
                return
        raise UnsupportedError(f"a modulus of a value that may be negative (C's and "
                               f"Python's % differ there): {node}")

    def _truncated(self, node: Sym) -> Expr:
        """`TruncToInt(c*ToFloat(e))` (a loop extent of interpolation by a float scale `c`):
        with `c = m * 2^k` exactly (sympy's binary value, `m > 0` odd) and `0 <= m * e <
        2^53` at every size in range, the double product is exact, so the truncation is
        `(m * e) floordiv 2^-k` (or `m * 2^k * e` for `k >= 0`). Anything else: unsupported."""
        arg = _args(node)[0]
        factors = _args(arg) if type(arg).__name__ == "Mul" else (arg,)
        floats = [f for f in factors if getattr(f, "_mpf_", None) is not None]
        exact = [f for f in factors if type(f).__name__ == "ToFloat"]
        if len(floats) != 1 or len(exact) != 1 or len(factors) != 2:
            raise UnsupportedError(f"TruncToInt has no counterpart in indexing maps beside "
                                   f"TruncToInt(c*ToFloat(e)): {node}")
        sign, man, exp, _ = floats[0]._mpf_
        e = self.read(_args(exact[0])[0], node)
        iv = range_of(e, self.bounds, self.ranges)
        if sign or not man or iv.lo < 0 or iv.hi * man >= 2**53:
            raise UnsupportedError(f"TruncToInt of a product that may be negative or inexact "
                                   f"in doubles: {node}")
        if exp >= 0:
            return canonical_product(e, const_node(man << exp))
        scaled = e if man == 1 else canonical_product(e, const_node(man))
        return floordiv(scaled, 1 << -exp)

    def _rounded(self, name: str, node: Sym) -> Expr:
        """floor(t) / ceiling(t) of a term with rational coefficients: q * t is integral for
        the least common denominator q, and floor(t) = (q * t) floordiv q."""
        arg = _args(node)[0]
        terms = _args(arg) if type(arg).__name__ == "Add" else (arg,)
        parts = [t.as_coeff_Mul() for t in terms]
        q = 1
        for c, _ in parts:
            if not c.is_Rational:
                raise UnsupportedError(f"a non-rational coefficient: {node}")
            q = q * int(c.q) // math.gcd(q, int(c.q))
        total = add(*[mul(Const(int(c * q)), self.read(rest, node) if not rest.is_Number
                          else Const(int(rest)))
                      for c, rest in parts])
        up = name in ("ceiling", "CeilToInt")
        return ceildiv(total, q) if up else floordiv(total, q)


#: what `_Reader.read` does with a node (`_kind`)
_INTEGER: Final = 0
_SYMBOL: Final = 1
_RATIONAL: Final = 2
_ADD: Final = 3
_MUL: Final = 4
_POW: Final = 5
_FUNCTION: Final = 6
#: `_kind` by class: sympy's `is_Integer`, `is_Symbol` and `is_Rational` are class constants.
_KINDS: Final[dict[type, int]] = {}


def _kind(node: Sym) -> int:
    """What `_Reader.read` does with a node, found once per class (a handful of attribute
    lookups through sympy's deep class tree and name comparisons otherwise, per node)."""
    cls = type(node)
    kind = _KINDS.get(cls)
    if kind is None:
        name = cls.__name__
        kind = (_INTEGER if node.is_Integer else _SYMBOL if node.is_Symbol else
                _RATIONAL if node.is_Rational or node.is_Number else _ADD if name == "Add" else
                _MUL if name == "Mul" else _POW if name == "Pow" else _FUNCTION)
        _KINDS[cls] = kind
    return kind


def _args(node: Sym) -> tuple[Sym, ...]:
    """A node's arguments in stored order: sympy's `args` sorts those of a sum or product on
    every access (microseconds each), and the order means nothing here."""
    raw = getattr(node, "_args", None)
    return raw if isinstance(raw, tuple) else tuple(node.args)


def _plus(e: Expr, c: Expr, sign: int) -> Expr:
    """`e + sign * c` with like terms collected (so that `s0 - x0 - 1 + (x0 - s0)` is -1)."""
    coeffs, k = linear_form(e)
    more, j = linear_form(c)
    for b, v in more.items():
        coeffs[b] = coeffs.get(b, 0) + sign * v
    return from_linear(coeffs, k + sign * j)


def _has_size_factor(factors: list[Expr]) -> bool:
    """Whether a factor is a size or a size expression (a coefficient XLA prints after the
    loop variable's factor)."""
    for f in factors:
        if type(f) is Size or not isinstance(f, Const) and is_size_expr(f):
            return True
    return False


def _positive(d: Expr, node: Sym) -> None:
    if isinstance(d, Const) and d.value <= 0:
        raise UnsupportedError(f"a divisor or modulus that is not positive: {node}")


# -- maps to sympy -------------------------------------------------------------------------------


def to_sympy(m: IndexingMap, symbols: Iterable[Sym] | None = None,
             sizes: Mapping[str, Sym] | None = None) -> Sym:
    """The one result of `m` as a sympy expression over the dims' symbols (`symbols`, or new
    integer, nonnegative symbols named as the dims) and its sizes' (`sizes`, by the sympy
    symbol's name, or new integer symbols named by `symbol_name`, positive where the interval
    is). Uses Inductor's function classes when torch is loaded already, the stand-ins
    otherwise; `(a floordiv d) mod m` is written `ModularIndexing(a, d, m)` and another `a mod m` as
    `ModularIndexing(a, 1, m)` where `a` cannot be negative on the map's domain,
    `PythonMod(a, m)` elsewhere."""
    import sympy

    if m.num_results != 1 or m.num_range_vars or m.num_rt_vars:
        raise UnsupportedError("to_sympy writes maps with one result, dimensions and sizes only")
    if symbols is None:
        syms = [sympy.Symbol(v.name or f"d{i}", integer=True, nonnegative=True)
                for i, v in enumerate(m.dims)]
    else:
        syms = list(symbols)
    env: dict[Expr, Sym] = {Dim(i): s for i, s in enumerate(syms)}
    for z in m.sizes:
        name = symbol_name(z.name)
        given = (sizes or {}).get(name)
        if given is None:  # a value symbol (`arg1`) is as signed as its interval
            given = sympy.Symbol(name, integer=True, positive=True) if z.bounds.lo >= 1 else \
                sympy.Symbol(name, integer=True, nonnegative=True) if z.bounds.lo >= 0 else \
                sympy.Symbol(name, integer=True)
        env[Size(z.name)] = given
    fns = inductor_classes()
    cache: dict[Expr, Sym] = {}
    bounds = m.bounds
    ranges: dict[Expr, Interval] = {}

    def nonnegative(e: Expr) -> bool:
        return range_of(e, bounds, ranges).lo >= 0

    def write(e: Expr) -> Sym:
        if e in cache:
            return cache[e]
        if isinstance(e, Const):
            out = sympy.Integer(e.value)
        elif e in env:
            out = env[e]
        elif isinstance(e, Mod) and isinstance(e.lhs, FloorDiv) and nonnegative(e.lhs.lhs):
            out = fns["ModularIndexing"](write(e.lhs.lhs), write(e.lhs.rhs), write(e.rhs))
        elif isinstance(e, Mod) and nonnegative(e.lhs):
            out = fns["ModularIndexing"](write(e.lhs), sympy.Integer(1), write(e.rhs))
        elif isinstance(e, Mod):  # Python's %: ModularIndexing's C % differs below zero
            out = fns["PythonMod"](write(e.lhs), write(e.rhs))
        elif isinstance(e, FloorDiv):
            out = fns["FloorDiv"](write(e.lhs), write(e.rhs))
        elif isinstance(e, CeilDiv):
            out = fns["CeilDiv"](write(e.lhs), write(e.rhs))
        elif isinstance(e, Mul):
            out = write(e.lhs) * write(e.rhs)
        elif isinstance(e, Min):
            out = sympy.Min(write(e.lhs), write(e.rhs))
        elif isinstance(e, Max):
            out = sympy.Max(write(e.lhs), write(e.rhs))
        elif type(e).__name__ == "Add":
            out = sympy.Add(*[write(t) for t in e.children])
        else:
            raise UnsupportedError(f"no sympy form for {e}")
        cache[e] = out
        return out

    return write(m.results[0])


def inductor_classes() -> dict[str, Callable[..., Sym]]:
    """Inductor's classes when torch is loaded (never imported here: it costs seconds), else
    this module's unevaluated stand-ins of the same names."""
    if "torch" in sys.modules:
        try:
            from torch.utils._sympy import functions as f  # type: ignore[import-not-found]

            return {n: getattr(f, n) for n in ("FloorDiv", "CeilDiv", "ModularIndexing",
                                                 "CleanDiv", "PythonMod", "Identity")}
        except (ImportError, AttributeError):  # pragma: no cover - another torch layout
            pass
    return standin_classes()


_STANDINS: Final[dict[str, Any]] = {}


def standin_classes() -> dict[str, Any]:
    """Unevaluated sympy functions named as Inductor's (they never rewrite themselves, so a
    parsed expression is exactly the text)."""
    if not _STANDINS:
        import sympy

        for name in ("FloorDiv", "CleanDiv", "CeilDiv", "ModularIndexing", "PythonMod",
                     "Identity", "FloorToInt", "CeilToInt", *sorted(INEXPRESSIBLE)):
            _STANDINS[name] = type(name, (sympy.Function,), {"is_integer": True})
    return _STANDINS


# -- text ----------------------------------------------------------------------------------------

#: Deeper text is refused by the parser (Python's recursion would give out near 160; maps hold
#: expressions up to verifidx.core.expr.MAX_DEPTH = 64 levels anyway).
MAX_NESTING: Final = 100

_TOKEN: Final = re.compile(r"\s*(?:(?P<float>[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?)"
                           r"|(?P<int>[0-9]+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
                           r"|(?P<op>\*\*|//|<=|>=|==|!=|[-+*/%(),<>&|~]))")
#: sympy's comparison classes by the operator Inductor's text prints (`x0 < 1`); sympy prints
#: `Eq(a, b)` and `Ne(a, b)` as calls.
_COMPARE: Final = {"<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge", "==": "Eq", "!=": "Ne"}


class _Parser:
    """Recursive descent over Python's expression grammar (the subset Inductor prints),
    building sympy terms literally (functions unevaluated); errors carry the column."""

    def __init__(self, text: str, known: set[str] | None, source: str, line: int) -> None:
        self.text, self.known, self.source, self.line = text, known, source, line
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                col = pos + len(text[pos:]) - len(text[pos:].lstrip())
                self.fail("an integer, a name, an operator or a parenthesis", col)
            kind = m.lastgroup or "op"
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.tokens.append(("end", "", len(text)))
        self.i = 0
        self.depth = 0

    def fail(self, expected: str, offset: int | None = None) -> NoReturn:
        col = self.tokens[self.i][2] if offset is None else offset
        raise ParseError(f"expected {expected} in the expression {self.text!r}", self.line,
                         col + 1, self.source)

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self, op: str) -> bool:
        if self.tokens[self.i][1] == op and self.tokens[self.i][0] == "op":
            self.i += 1
            return True
        return False

    def parse(self) -> Sym:
        e = self.term(self.condition)
        if self.peek()[0] != "end":
            self.fail("an operator or the end")
        return e

    def term(self, rule: Callable[[], Sym]) -> Sym:
        """`rule`'s value, which must be a term (an integer value), not a condition."""
        offset = self.peek()[2]
        e = rule()
        if _is_condition(e):
            self.fail("a term, not a condition", offset)
        return e

    def truth(self, rule: Callable[[], Sym]) -> Sym:
        """`rule`'s value, which must be a condition."""
        offset = self.peek()[2]
        e = rule()
        if not _is_condition(e):
            self.fail("a condition (a comparison)", offset)
        return e

    def condition(self) -> Sym:
        """`a | b`, `a & b`, `~a` over comparisons (sympy's printing of Or, And, Not), or a
        term: Python's precedence, `|` loosest."""
        import sympy

        e = self.conjunction()
        while self.take("|"):
            e = sympy.Or(self.truth(lambda: e), self.truth(self.conjunction), evaluate=False)
        return e

    def conjunction(self) -> Sym:
        import sympy

        e = self.negation()
        while self.take("&"):
            e = sympy.And(self.truth(lambda: e), self.truth(self.negation), evaluate=False)
        return e

    def negation(self) -> Sym:
        import sympy

        if self.take("~"):
            return sympy.Not(self.nested(lambda: self.truth(self.negation)))
        return self.comparison()

    def comparison(self) -> Sym:
        import sympy

        e = self.sum()
        kind, text, _ = self.peek()
        if kind == "op" and text in _COMPARE:
            self.i += 1
            rhs = self.term(self.sum)
            if _is_condition(e):
                self.fail("a term before the comparison")
            e = getattr(sympy, _COMPARE[text])(e, rhs, evaluate=False)
        return e

    def sum(self) -> Sym:
        e = self.product()
        while True:
            if self.take("+"):
                e = self.arith(e) + self.term(self.product)
            elif self.take("-"):
                e = self.arith(e) - self.term(self.product)
            else:
                return e

    def product(self) -> Sym:
        e = self.unary()
        while True:
            if self.take("*"):
                e = self.arith(e) * self.term(self.unary)
            elif self.take("//"):
                e = standin_classes()["FloorDiv"](self.arith(e), self.term(self.unary))
            elif self.take("/"):
                e = self.arith(e) / self.term(self.unary)
            elif self.take("%"):  # Python's %, whatever the sign
                e = standin_classes()["PythonMod"](self.arith(e), self.term(self.unary))
            else:
                return e

    def arith(self, e: Sym) -> Sym:
        """An operand of arithmetic: a term (the operator was just taken)."""
        if _is_condition(e):
            self.fail("a term, not a condition, before the operator", self.tokens[self.i - 1][2])
        return e

    def unary(self) -> Sym:
        if self.take("-"):
            return -self.nested(lambda: self.term(self.unary))
        if self.take("+"):
            return self.nested(lambda: self.term(self.unary))
        return self.power()

    def nested(self, rule: Callable[[], Sym]) -> Sym:
        """`rule` one level deeper (a sign or `~`: nested like a parenthesis)."""
        if self.depth > MAX_NESTING:
            raise ParseError(f"nested deeper than {MAX_NESTING} parentheses or calls",
                             self.line, self.peek()[2] + 1, self.source)
        self.depth += 1
        e = rule()
        self.depth -= 1
        return e

    def power(self) -> Sym:
        import sympy

        base = self.atom()
        if self.take("**"):
            return sympy.Pow(self.arith(base), self.term(self.unary))
        return base

    def atom(self) -> Sym:
        import sympy

        kind, text, offset = self.peek()
        if self.depth > MAX_NESTING:
            raise ParseError(f"nested deeper than {MAX_NESTING} parentheses or calls",
                             self.line, offset + 1, self.source)
        if kind == "int":
            self.i += 1
            return sympy.Integer(int(text))
        if kind == "float":  # exactly the decimal written (the reader refuses it)
            self.i += 1
            return sympy.Float(text)
        if kind == "op" and text == "(":
            self.i += 1
            self.depth += 1
            e = self.condition()
            self.depth -= 1
            if not self.take(")"):
                self.fail("')'")
            return e
        if kind != "name":
            self.fail("an integer, a name or '('")
        self.i += 1
        if self.take("("):
            self.depth += 1
            args = [self.condition()]
            while self.take(","):
                args.append(self.condition())
            self.depth -= 1
            if not self.take(")"):
                self.fail("',' or ')'")
            return self.call(text, args, offset)
        if text in ("oo", "int_oo"):
            self.fail("a finite term", offset)
        if text in ("True", "False"):
            return sympy.true if text == "True" else sympy.false
        if self.known is not None and text not in self.known:
            raise ParseError(f"symbol {text} has no range (give it in var_ranges or "
                             "size_ranges)", self.line, offset + 1, self.source)
        return sympy.Symbol(text, integer=True)

    def call(self, name: str, args: list[Sym], offset: int) -> Sym:
        import sympy

        logic = _LOGIC.get(name)
        for k, a in enumerate(args):
            wanted = logic is not None and (k in logic[1] or name in ("And", "Or"))
            if _is_condition(a) != wanted:
                what = "a condition" if wanted else "a term, not a condition"
                raise ParseError(f"expected {what} as argument {k + 1} of {name}", self.line,
                                 offset + 1, self.source)
        if logic is not None:
            if logic[0] and len(args) != logic[0]:
                raise ParseError(f"{name} takes {logic[0]} arguments, not {len(args)}",
                                 self.line, offset + 1, self.source)
            if name == "Where":
                return standin_classes()["Where"](*args)
            if name in ("Eq", "Ne"):
                return getattr(sympy, name)(*args, evaluate=False)
            if name == "Not":
                return sympy.Not(args[0])
            return getattr(sympy, name)(*args, evaluate=False)
        arity = KNOWN_FUNCTIONS.get(name)
        if arity is None and name not in INEXPRESSIBLE:
            raise ParseError(f"unknown function {name} (known: "
                             f"{', '.join(sorted(KNOWN_FUNCTIONS))})", self.line, offset + 1,
                             self.source)
        if arity and len(args) not in arity:
            raise ParseError(f"{name} takes {arity[0]} arguments, not {len(args)}", self.line,
                             offset + 1, self.source)
        builtin = {"floor": sympy.floor, "ceiling": sympy.ceiling, "Mod": sympy.Mod,
                   "Min": sympy.Min, "Max": sympy.Max}.get(name)
        if builtin is not None:
            if not args:
                raise ParseError(f"{name} needs an argument", self.line, offset + 1, self.source)
            return builtin(*args, evaluate=False)
        return standin_classes()[name](*args)


#: Calls of the text's conditions: arity (0: any) and which arguments are conditions
#: (`Where(c, a, b)`: Inductor's `a if c else b`; And/Or: every one; Eq/Ne: none).
_LOGIC: Final[dict[str, tuple[int, tuple[int, ...]]]] = {
    "Where": (3, (0,)), "Eq": (2, ()), "Ne": (2, ()), "Not": (1, (0,)), "And": (0, ()),
    "Or": (0, ()),
}


def _is_condition(e: Sym) -> bool:
    """A comparison, And/Or/Not or true/false, not a term (sympy's symbols are Booleans too)."""
    from sympy.core.relational import Relational
    from sympy.logic.boolalg import BooleanAtom, BooleanFunction

    return isinstance(e, (Relational, BooleanFunction, BooleanAtom))


def parse_text(text: str, known: set[str] | None = None, source: str = "<string>",
               line: int = 1) -> Sym:
    """A sympy expression from the text Inductor prints (`str(expr)`), without torch: the
    function names of KNOWN_FUNCTIONS and INEXPRESSIBLE, `+ - * / // % **`, integers and
    symbols (with `known`, every symbol must be in it). Never `eval`s the text."""
    limit = sys.getrecursionlimit()  # each level of nesting is a dozen calls of the parser
    sys.setrecursionlimit(limit + _FRAMES_PER_LEVEL * (MAX_NESTING + 2))
    try:
        return _Parser(text, known, source, line).parse()
    finally:
        sys.setrecursionlimit(limit)


#: Python frames the parser spends per level of nesting, at most.
_FRAMES_PER_LEVEL: Final = 16


#: A comparison `lhs op rhs` (sympy's class) being true, as `lhs - rhs in [lo, hi]` (None:
#: open); false is the complement. Integer terms: `a < b` is `a - b <= -1`.
_RELATIONS: Final[dict[str, tuple[tuple[int | None, int | None], ...]]] = {
    "StrictLessThan": ((None, -1),), "LessThan": ((None, 0),),
    "StrictGreaterThan": ((1, None),), "GreaterThan": ((0, None),),
    "Equality": ((0, 0),), "Unequality": ((None, -1), (1, None)),
}
_COMPLEMENT: Final = {"StrictLessThan": "GreaterThan", "LessThan": "StrictGreaterThan",
                      "StrictGreaterThan": "LessThan", "GreaterThan": "StrictLessThan",
                      "Equality": "Unequality", "Unequality": "Equality"}
#: Beyond this many cases a condition is unsupported (a split doubles the work).
MAX_CASES: Final = 64

Case = list[tuple[Sym, int | None, int | None]]


def condition_cases(cond: Sym, value: bool) -> list[Case]:
    """Where a condition (comparisons of integer terms, And/Or/Not of them, true/false) has
    `value`, as a disjunction of conjunctions of `term in [lo, hi]` (None: an open end) over
    sympy terms; the cases may overlap, and together cover exactly that set. More than
    MAX_CASES, or anything else, is unsupported."""
    name = type(cond).__name__
    if name in ("BooleanTrue", "BooleanFalse"):
        return [[]] if (name == "BooleanTrue") == value else []
    if name == "Not":
        return condition_cases(_args(cond)[0], not value)
    if name in ("And", "Or"):
        parts = [condition_cases(a, value) for a in _args(cond)]
        if (name == "And") == value:  # every part holds: one case per choice of each
            out: list[Case] = [[]]
            for p in parts:
                out = [c + d for c in out for d in p]
                if len(out) > MAX_CASES:
                    break
        else:  # one of the parts holds
            out = [c for p in parts for c in p]
    elif name in _RELATIONS:
        lhs, rhs = _args(cond)
        shape = _RELATIONS[name if value else _COMPLEMENT[name]]
        out = [[(lhs - rhs, lo, hi)] for lo, hi in shape]
    else:
        raise UnsupportedError(f"a condition verifidx does not read: {cond}")
    if len(out) > MAX_CASES:
        raise UnsupportedError(f"more than {MAX_CASES} cases in {cond}")
    return out


def has_where(node: Sym) -> bool:
    """Whether a sympy tree holds Inductor's `Where(c, a, b)` (read by a case split)."""
    return type(node).__name__ == "Where" or any(has_where(a) for a in _args(node))


def require_sympy() -> None:
    """sympy is an optional extra: a missing one is said with the line that installs it."""
    try:
        import sympy  # noqa: F401
    except ImportError:
        raise MissingDependencyError("sympy index expressions need sympy, which is not "
                                     "installed: pip install 'verifidx[sympy]'") from None


def count_divisions(e: Expr) -> int:
    """floordiv, ceildiv and mod nodes: what simplification should remove."""
    seen: set[Expr] = set()
    n = 0
    for node in e.walk():
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, (FloorDiv, CeilDiv, Mod)):
            n += 1
    return n


def evaluate_sympy(node: Sym, env: Mapping[str, int]) -> int:
    """Plain integer evaluation of a sympy index expression by function name (Python's
    `//` and `%`): the re-evaluation of a counterexample, independent of the map reader."""
    name = type(node).__name__
    if node.is_Integer:
        return int(node)
    if node.is_Symbol:
        return env[str(node)]
    if node.is_Rational:
        raise UnsupportedError(f"a non-integer value: {node}")
    if name in ("floor", "ceiling", "FloorToInt", "CeilToInt"):
        from fractions import Fraction

        v = _rational(node.args[0], env, Fraction)
        return math.floor(v) if name in ("floor", "FloorToInt") else math.ceil(v)
    if name == "TruncToInt":  # C's cast of a double: Python's floats are IEEE doubles
        return math.trunc(_double(node.args[0], env))
    if name == "Where":  # Inductor's `a if c else b`: only the branch taken is evaluated
        c, a, b = node.args
        return evaluate_sympy(a if _truth(c, env) else b, env)
    vals = [evaluate_sympy(a, env) for a in node.args]
    if name == "Add":
        return sum(vals)
    if name == "Mul":
        out = 1
        for v in vals:
            out *= v
        return out
    if name == "Pow":
        return int(vals[0] ** vals[1])
    ops: dict[str, Callable[[list[int]], int]] = {
        "FloorDiv": lambda a: a[0] // a[1], "CleanDiv": lambda a: a[0] // a[1],
        "CeilDiv": lambda a: -(-a[0] // a[1]), "ModularIndexing": lambda a: (a[0] // a[1]) % a[2],
        "PythonMod": lambda a: a[0] % a[1], "Mod": lambda a: a[0] % a[1],
        "Identity": lambda a: a[0], "Min": min, "Max": max}
    if name not in ops:
        raise UnsupportedError(f"cannot evaluate {name}")
    if name in ("ModularIndexing", "Mod") and vals[0] < 0:
        raise UnsupportedError(f"{name} of a negative value (C's and Python's % differ)")
    return ops[name](vals)


def _double(node: Sym, env: Mapping[str, int]) -> float:
    """A float-valued term (`1.5*ToFloat(s0)`) in double arithmetic, as the compiled kernel
    computes it: floats, `ToFloat` of integer terms, products of two factors."""
    name = type(node).__name__
    if getattr(node, "_mpf_", None) is not None:
        return float(node)
    if name == "ToFloat":
        return float(evaluate_sympy(node.args[0], env))
    if name == "Mul" and len(node.args) == 2:
        return _double(node.args[0], env) * _double(node.args[1], env)
    raise UnsupportedError(f"cannot evaluate {node} in doubles")


def _truth(cond: Sym, env: Mapping[str, int]) -> bool:
    """A condition's value at a point (comparisons of integer terms, And/Or/Not)."""
    name = type(cond).__name__
    if name in ("BooleanTrue", "BooleanFalse"):
        return name == "BooleanTrue"
    if name == "Not":
        return not _truth(cond.args[0], env)
    if name == "And":
        return all(_truth(a, env) for a in cond.args)
    if name == "Or":
        return any(_truth(a, env) for a in cond.args)
    ops: dict[str, Callable[[int, int], bool]] = {
        "StrictLessThan": lambda a, b: a < b, "LessThan": lambda a, b: a <= b,
        "StrictGreaterThan": lambda a, b: a > b, "GreaterThan": lambda a, b: a >= b,
        "Equality": lambda a, b: a == b, "Unequality": lambda a, b: a != b}
    if name not in ops:
        raise UnsupportedError(f"cannot evaluate the condition {cond}")
    return ops[name](evaluate_sympy(cond.args[0], env), evaluate_sympy(cond.args[1], env))


def _rational(node: Sym, env: Mapping[str, int], fraction: Any) -> Any:
    name = type(node).__name__
    if node.is_Rational:
        return fraction(int(node.p), int(node.q))
    if name == "Add":
        return sum((_rational(a, env, fraction) for a in node.args), fraction(0))
    if name == "Mul":
        out = fraction(1)
        for a in node.args:
            out *= _rational(a, env, fraction)
        return out
    return fraction(evaluate_sympy(node, env))


__all__ = ["KNOWN_FUNCTIONS", "MAX_CASES", "Case", "condition_cases", "count_divisions",
           "evaluate_sympy", "from_sympy", "has_where", "inductor_classes", "parse_text",
           "require_sympy", "size_interval", "size_name", "symbol_name", "to_sympy"]
