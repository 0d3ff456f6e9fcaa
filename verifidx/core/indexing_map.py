"""IndexingMap: XLA's indexing map, as an immutable value.

A map `(d)[s]{rt} -> f(d, s, rt)` with an inclusive interval per variable and extra constraints
`g(d, s, rt) in [lo, hi]` denotes, for each value of the runtime variables, the relation
`{ (d, f(d, s, rt)) : every variable in its interval, every constraint satisfied }`. Range
variables `s` are existential; runtime variables `rt` are parameters (two maps are equal when
their relations agree for every runtime value).

Every operation here keeps the relation exactly, or says in its docstring how it changes it
(composition, conversion of symbols to dimensions). Where XLA drops constraints without knowing
they can be satisfied (removing unused symbols), verifidx only drops them when it has checked.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import DivisorError, EvaluationError, UnsupportedError
from .expr import (
    Add,
    CeilDiv,
    Const,
    Dim,
    Expr,
    ExprLike,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    RtVar,
    Size,
    Symbol,
    Variable,
    add,
    as_expr,
    has_index_variable,
    is_size_expr,
    is_value_name,
    mul,
)
from .interval import Interval, range_of

#: Enumeration budget (points) for checks that are exact by brute force.
ENUMERATION_LIMIT: Final = 200_000

#: The upper end of an unbounded size's interval (docs/semantics.md, Sizes): 2^31 - 1.
SIZE_MAX: Final = 2**31 - 1

# -- seams: printing and simplifying live in higher layers, which register here on import -----

_printer: Callable[[IndexingMap], str] | None = None
_simplifier: Callable[[IndexingMap, str], IndexingMap] | None = None


def register_printer(printer: Callable[[IndexingMap], str]) -> None:
    """The seam behind `str(map)`: `verifidx.core.syntax` registers its printer when it loads."""
    global _printer
    _printer = printer


def register_simplifier(simplifier: Callable[[IndexingMap, str], IndexingMap]) -> None:
    """The seam behind `IndexingMap.simplify()`: `verifidx.simplifier.engine` (two layers up)
    registers `simplifier(map, point_dims)` when it loads; importing the `verifidx` package loads
    it."""
    global _simplifier
    _simplifier = simplifier


def merge_residues(m1: int, r1: int, m2: int, r2: int) -> tuple[int, int] | None:
    """Chinese remainder: x = r1 (mod m1) and x = r2 (mod m2) iff x = r (mod lcm(m1, m2));
    None when no x satisfies both."""
    g = math.gcd(m1, m2)
    if (r2 - r1) % g:
        return None
    lcm = m1 // g * m2
    # r = r1 + m1 * t with m1 * t = r2 - r1 (mod m2): solve with the inverse of m1/g mod m2/g
    t = ((r2 - r1) // g) * pow(m1 // g, -1, m2 // g) % (m2 // g) if m2 // g > 1 else 0
    return lcm, (r1 + m1 * t) % lcm


_MAP_NODES: Final = (Const, Dim, Symbol, RtVar, Add, Mul, FloorDiv, CeilDiv, Mod, Min, Max)
_DIVISIONS: Final = (FloorDiv, CeilDiv, Mod)


def check_map_expr(e: object) -> None:
    """Raises DivisorError/ValueError unless `e` may appear in a map: only map variables, and
    every divisor an integer constant (docs/semantics.md). Each node knows it from its
    construction (`Expr._in_map`); the walk below only finds what to report."""
    if getattr(e, "_in_map", False):
        return
    _report_non_map(e)


def _check_map_exprs(exprs: Iterable[object]) -> None:
    """`check_map_expr` on each; typed `object` so that, compiled by mypyc, a non-expression
    gets check_map_expr's error, not a generic type error."""
    for e in exprs:
        check_map_expr(e)


def _report_non_map(e: object) -> None:
    """Raises for the first node, in pre-order, that a map may not hold."""
    kind = type(e)
    if kind not in _MAP_NODES or not isinstance(e, Expr):
        raise ValueError(f"{e} is not part of the map language (a rule pattern?)")
    if kind in _DIVISIONS and not isinstance(e.rhs, Const):  # type: ignore[attr-defined]
        raise DivisorError(f"the divisor of {e.tag} must be an integer constant, "  # type: ignore[attr-defined]
                           f"not {e.rhs}")  # type: ignore[attr-defined]
    for child in e.children:
        if not child._in_map:
            _report_non_map(child)


def check_sized_expr(e: Expr, sizes: Mapping[Variable, Interval],
                     known: set[Expr] | None = None, variables: bool = False) -> None:
    """Raises DivisorError/ValueError unless `e` may appear in a map whose sizes have the
    intervals `sizes` (docs/semantics.md, Sizes): XLA's nodes and variables, declared sizes,
    products with at most one factor that mentions an index variable, and divisors that are
    valid integer constants (checked when the node was built) or size expressions whose
    interval starts at 1 or more. `known`: subterms that passed before under the same
    `sizes`, skipped, and filled with this term's on success. `variables`: `sizes` is a
    map's `bounds`, and every variable must be one of its (what `_check_variables` checks)."""
    stack = [e]
    seen: set[Expr] = set()
    while stack:
        node = stack.pop()
        if node in seen or known is not None and node in known:
            continue
        seen.add(node)
        kind = type(node)
        if kind is Size:
            if node not in sizes:
                raise ValueError(f"size {node} is not declared in the map")
            continue
        if kind not in _MAP_NODES:
            raise ValueError(f"{node} is not part of the map language (a rule pattern?)")
        if variables and isinstance(node, Variable) and node not in sizes:
            raise ValueError(f"variable {node.prefix}{node.index} is not declared in the map")
        if kind is Mul:
            lhs, rhs = node.children
            # the right factor first: mostly a constant or a size, whose variables are known,
            # so the left one's (a product built just now) are seldom computed
            if has_index_variable(rhs) and has_index_variable(lhs):
                raise ValueError(f"a product of two index variables ({node}) in a map with "
                                 f"sizes: one factor must be a size expression or a constant")
        elif kind in _DIVISIONS:
            divisor = node.children[1]
            if not isinstance(divisor, Const):
                if not is_size_expr(divisor):
                    raise DivisorError(f"the divisor of {node.tag} must be an integer "  # type: ignore[attr-defined]
                                       f"constant or a size expression, not {divisor}")
                iv = range_of(divisor, sizes)
                if iv.lo < 1:
                    raise DivisorError(f"the divisor {divisor} of {node.tag} lies in {iv}: "  # type: ignore[attr-defined]
                                       f"it must be positive for every size in its interval")
        stack.extend(node.children)
    if known is not None:
        if len(known) > _KNOWN_LIMIT:
            known.clear()
        known |= seen


#: The domain memo's entry (`IndexingMap.domain_memo`) of subterms `check_sized_expr` passed.
_SIZED_CHECKED: Final = "check_sized_expr"
#: Such a set is emptied past this many subterms.
_KNOWN_LIMIT: Final = 1 << 14


def _size_name(z: SizeVar) -> str:
    return z.name


def merge_sizes(a: tuple[SizeVar, ...], b: tuple[SizeVar, ...]) -> tuple[SizeVar, ...]:
    """The sizes of two maps read together: the same name is the same parameter, its
    intervals intersected (an empty intersection leaves an empty interval: KNOWN EMPTY)."""
    if not b:
        return a
    if not a:
        return b
    table = {z.name: z for z in a}
    for z in b:
        old = table.get(z.name)
        if old is None:
            table[z.name] = z
        else:
            table[z.name] = SizeVar(z.name, old.bounds.intersect(z.bounds),
                                    old.provenance or z.provenance)
    return tuple(sorted(table.values(), key=_size_name))


@dataclass(frozen=True, slots=True)
class SizeVar:
    """One size of a map: its name, its interval (`lo >= 1`, except for a value symbol,
    `expr.is_value_name`, whose interval is its element type's) and where it comes from
    (`provenance`: presentation only, not part of the map's value, like custom names)."""

    name: str
    bounds: Interval
    provenance: str | None = field(default=None, compare=False)

    def __init__(self, name: str, bounds: Interval | None = None,
                 provenance: str | None = None) -> None:
        if bounds is None:
            bounds = Interval(1, SIZE_MAX)
        if bounds.lo < 1 and not is_value_name(name):
            raise ValueError(f"size {name} must be positive: its interval {bounds} admits "
                             f"{bounds.lo}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "bounds", bounds)
        object.__setattr__(self, "provenance", provenance)

    def __reduce__(self) -> tuple[object, ...]:
        return (SizeVar, (self.name, self.bounds, self.provenance))


@dataclass(frozen=True, slots=True)
class Var:
    """Bounds of one variable and its optional custom name (presentation only)."""

    bounds: Interval
    name: str | None = None

    def __init__(self, bounds: Interval, name: str | None = None) -> None:
        object.__setattr__(self, "bounds", bounds)  # written out, as Interval's
        object.__setattr__(self, "name", name)

    def __reduce__(self) -> tuple[object, ...]:
        return (Var, (self.bounds, self.name))  # see Interval.__reduce__


def _var(v: Var | Interval | tuple[int, int]) -> Var:
    if isinstance(v, Var):
        return v
    if isinstance(v, Interval):
        return Var(v)
    lo, hi = v
    return Var(Interval(lo, hi))


@dataclass(frozen=True, slots=True)
class AffineMap:
    """The symbolic part of a map without bounds (MLIR's `affine_map<...>`): symbols are the
    range variables followed by the runtime variables, as in XLA."""

    num_dims: int
    num_symbols: int
    results: tuple[Expr, ...]

    def __reduce__(self) -> tuple[object, ...]:
        return (AffineMap, (self.num_dims, self.num_symbols, self.results))  # as Interval's


def merged_constraints(items: Iterable[tuple[Expr, Interval]]) -> dict[Expr, Interval]:
    """Constraints keyed by expression, where two that become one expression (after a renaming or
    a canonical form) keep both bounds: their intersection, never the last one written."""
    merged: dict[Expr, Interval] = {}
    for e, iv in items:
        old = merged.get(e)
        merged[e] = iv if old is None else old.intersect(iv)
    return merged


@dataclass(frozen=True, eq=False, init=False)
class IndexingMap:
    """An indexing map. Equality and hashing are structural and ignore custom names."""

    results: tuple[Expr, ...]
    dims: tuple[Var, ...]
    range_vars: tuple[Var, ...] = ()
    rt_vars: tuple[Var, ...] = ()
    constraints: Mapping[Expr, Interval] = field(default_factory=dict)
    is_known_empty: bool = False
    is_undefined: bool = False
    #: sizes (docs/semantics.md, Sizes), sorted by name; () for a static map
    sizes: tuple[SizeVar, ...] = ()

    # what the map computes about itself once (it is immutable): not part of its value
    _variables: tuple[Variable, ...] | None = field(default=None, init=False, repr=False)
    _bounds: dict[Variable, Interval] | None = field(default=None, init=False, repr=False)
    _key: tuple[object, ...] | None = field(default=None, init=False, repr=False)
    #: facts computed from the domain alone (`domain_memo`), shared by `with_results`
    _domain_memo: dict[object, Any] | None = field(default=None, init=False, repr=False)

    def __init__(self, results: tuple[Expr, ...], dims: tuple[Var, ...],
                 range_vars: tuple[Var, ...] = (), rt_vars: tuple[Var, ...] = (),
                 constraints: Mapping[Expr, Interval] | None = None,
                 is_known_empty: bool = False, is_undefined: bool = False,
                 sizes: tuple[SizeVar, ...] = (), checked: bool = False) -> None:
        """`checked`: the caller has checked every part as below, sizes sorted (only
        `with_results` does, for parts of a map built already)."""
        if constraints is None:
            constraints = {}
        if checked:
            pass
        elif sizes:
            sizes = tuple(sorted(sizes, key=_size_name))
            names = [z.name for z in sizes]
            if len(set(names)) != len(names):
                raise ValueError(f"a size is declared twice: {', '.join(names)}")
            declared: dict[Variable, Interval] = {Size(z.name): z.bounds for z in sizes}
            for e in results:
                check_sized_expr(e, declared)
            for e in constraints:
                check_sized_expr(e, declared)
        else:
            _check_map_exprs(results)
            _check_map_exprs(constraints)
        # a frozen dataclass's fields are written through object.__setattr__, as its own
        # __init__ does; written out call by call with the name as a literal, which mypyc
        # compiles to a write of the native slot (through an alias, each is a Python call)
        object.__setattr__(self, "results", results)
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "range_vars", range_vars)
        object.__setattr__(self, "rt_vars", rt_vars)
        object.__setattr__(self, "constraints", constraints)
        object.__setattr__(self, "is_known_empty", is_known_empty)
        object.__setattr__(self, "is_undefined", is_undefined)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "_variables", None)
        object.__setattr__(self, "_bounds", None)
        object.__setattr__(self, "_key", None)
        object.__setattr__(self, "_domain_memo", None)

    def __reduce__(self) -> tuple[object, ...]:
        return (IndexingMap, (self.results, self.dims, self.range_vars, self.rt_vars,
                              self.constraints, self.is_known_empty, self.is_undefined,
                              self.sizes))

    # -- construction -------------------------------------------------------------------------
    @staticmethod
    def build(
        results: Sequence[ExprLike],
        dims: Sequence[Var | Interval | tuple[int, int]],
        range_vars: Sequence[Var | Interval | tuple[int, int]] = (),
        rt_vars: Sequence[Var | Interval | tuple[int, int]] = (),
        constraints: Iterable[tuple[Expr, Interval | tuple[int, int]]] = (),
        sizes: Sequence[SizeVar | str] = (),
    ) -> IndexingMap:
        """Checks that every variable used exists, then adds constraints one by one (XLA's
        AddConstraint): constant ones are decided, ones on a bare variable tighten its bounds.
        `sizes`: the map's sizes (a bare name gets the interval [1, SIZE_MAX])."""
        m = IndexingMap(
            tuple(as_expr(r) for r in results),
            tuple(_var(v) for v in dims),
            tuple(_var(v) for v in range_vars),
            tuple(_var(v) for v in rt_vars),
            {},
            sizes=tuple([z if isinstance(z, SizeVar) else SizeVar(z) for z in sizes]),
        )
        m._check_variables(m.results)
        return m.add_constraints(constraints)

    def with_results(self, results: tuple[Expr, ...], checked_in: IndexingMap | None = None
                     ) -> IndexingMap:
        """This map's domain with other results, checked as `build` checks them: the same map
        as `build` gives from the same parts. The domain's own checks hold already, and a
        result this map holds, or `checked_in` holds where it has the same sizes and as many
        variables of each kind (the checks read nothing else), passed them when that map was
        built by `build` or `with_results` (the bare constructor checks no variable)."""
        mine = self.results
        theirs: tuple[Expr, ...] = ()
        if checked_in is not None and checked_in.sizes == self.sizes and (
                len(checked_in.dims), len(checked_in.range_vars), len(checked_in.rt_vars)) == (
                len(self.dims), len(self.range_vars), len(self.rt_vars)):
            theirs = checked_in.results
        new = [e for e in results if e not in mine and e not in theirs]
        if new:
            if self.sizes:
                memo = self.domain_memo()
                known = memo.get(_SIZED_CHECKED)
                if known is None:
                    known = memo[_SIZED_CHECKED] = set()
                for e in new:  # `bounds`: the declared variables and sizes
                    check_sized_expr(e, self.bounds, known, variables=True)
            else:
                _check_map_exprs(new)
                self._check_variables(new)
        out = IndexingMap(results, self.dims, self.range_vars, self.rt_vars, self.constraints,
                          self.is_known_empty, self.is_undefined, self.sizes, checked=True)
        # the same domain, made of the same objects: what is known of it carries over
        object.__setattr__(out, "_domain_memo", self.domain_memo())
        object.__setattr__(out, "_variables", self._variables)
        object.__setattr__(out, "_bounds", self._bounds)
        return out

    def domain_memo(self) -> dict[object, Any]:
        """A memo for facts that depend on this map's domain alone (everything but its results),
        shared with every map `with_results` makes from it, whose domain is the same objects;
        a client keys its facts by whatever else they depend on (the simplifier: its engine).
        Clients compute domain facts once per loop nest instead of once per expression."""
        memo = self._domain_memo
        if memo is None:
            memo = {}
            object.__setattr__(self, "_domain_memo", memo)
        return memo

    @staticmethod
    def undefined() -> IndexingMap:
        return IndexingMap((), (), is_undefined=True)

    @staticmethod
    def identity(sizes: Sequence[int]) -> IndexingMap:
        return IndexingMap.build([Dim(i) for i in range(len(sizes))], [(0, n - 1) for n in sizes])

    @staticmethod
    def from_tensor_sizes(
        affine: AffineMap, dim_sizes: Sequence[int], symbol_sizes: Sequence[int]
    ) -> IndexingMap:
        """XLA's FromTensorSizes: bounds [0, size - 1]; raises ValueError on count mismatch."""
        if affine.num_dims != len(dim_sizes):
            raise ValueError(
                f"number of dim vars ({len(dim_sizes)}) must match the number of dimensions "
                f"in the symbolic map ({affine.num_dims})"
            )
        if affine.num_symbols != len(symbol_sizes):
            raise ValueError(
                f"number of range ({len(symbol_sizes)}) + runtime (0) variables must match the "
                f"number of symbols in the symbolic map ({affine.num_symbols})"
            )
        return IndexingMap.build(
            affine.results,
            [(0, n - 1) for n in dim_sizes],
            [(0, n - 1) for n in symbol_sizes],
        )

    def _check_variables(self, exprs: Iterable[Expr]) -> None:
        limits = {Dim: len(self.dims), Symbol: len(self.range_vars), RtVar: len(self.rt_vars)}
        for e in exprs:
            for v in e.variable_set():
                if type(v) is Size:
                    if not any(z.name == v.name for z in self.sizes):  # type: ignore[attr-defined]
                        raise ValueError(f"size {v} is not declared in the map")
                    continue
                if v.index >= limits[type(v)]:  # type: ignore[index]
                    raise ValueError(f"variable {v.prefix}{v.index} is not declared in the map")

    def _mark_empty(self) -> IndexingMap:
        if self.is_known_empty or self.is_undefined:
            return self
        for v in self.all_vars:
            if v.bounds.lo > v.bounds.hi:
                return self.replace(is_known_empty=True)
        for iv in self.constraints.values():
            if iv.lo > iv.hi:
                return self.replace(is_known_empty=True)
        for z in self.sizes:
            if z.bounds.lo > z.bounds.hi:
                return self.replace(is_known_empty=True)
        return self

    def replace(self, **changes: object) -> IndexingMap:
        fields = {
            "results": self.results,
            "dims": self.dims,
            "range_vars": self.range_vars,
            "rt_vars": self.rt_vars,
            "constraints": self.constraints,
            "is_known_empty": self.is_known_empty,
            "is_undefined": self.is_undefined,
            "sizes": self.sizes,
        }
        fields.update(changes)
        return IndexingMap(**fields)  # type: ignore[arg-type]

    # -- basic views --------------------------------------------------------------------------
    @property
    def num_dims(self) -> int:
        return len(self.dims)

    @property
    def num_range_vars(self) -> int:
        return len(self.range_vars)

    @property
    def num_rt_vars(self) -> int:
        return len(self.rt_vars)

    @property
    def num_results(self) -> int:
        return len(self.results)

    @property
    def all_vars(self) -> tuple[Var, ...]:
        return self.dims + self.range_vars + self.rt_vars

    @property
    def variables(self) -> tuple[Variable, ...]:
        """Dims, then range variables, then runtime variables, as expression nodes."""
        found = self._variables
        if found is None:
            found = (
                tuple([Dim(i) for i in range(self.num_dims)])
                + tuple([Symbol(i) for i in range(self.num_range_vars)])
                + tuple([RtVar(i) for i in range(self.num_rt_vars)])
            )
            object.__setattr__(self, "_variables", found)
        return found

    @property
    def bounds(self) -> dict[Variable, Interval]:
        found = self._bounds
        if found is None:
            found = {v: info.bounds for v, info in zip(self.variables, self.all_vars)}
            for z in self.sizes:
                found[Size(z.name)] = z.bounds
            object.__setattr__(self, "_bounds", found)
        return found

    def var_info(self, v: Variable) -> Var:
        table = {Dim: self.dims, Symbol: self.range_vars, RtVar: self.rt_vars}[type(v)]
        return table[v.index]

    def range_of(self, expr: Expr) -> Interval:
        """Interval of `expr` from the variables' bounds (constraints not used)."""
        return range_of(expr, self.bounds)

    def used_variables(self) -> set[Variable]:
        used: set[Variable] = set()
        for e in self.results:
            used |= e.variables()
        for e in self.constraints:
            used |= e.variables()
        return used

    # -- equality -----------------------------------------------------------------------------
    def _value(self) -> tuple[object, ...]:
        """What equality and hashing compare (custom names left out), computed once."""
        key = self._key
        if key is not None:
            return key
        if self.is_undefined:
            key = ("undefined",)
        elif self.is_known_empty:
            key = ("empty",)  # every known-empty map denotes the empty relation
        else:
            key = (
                self.is_known_empty,
                self.results,
                tuple([v.bounds for v in self.dims]),
                tuple([v.bounds for v in self.range_vars]),
                tuple([v.bounds for v in self.rt_vars]),
                frozenset(self.constraints.items()),
            )
            if self.sizes:
                key += (self.sizes,)
        object.__setattr__(self, "_key", key)
        return key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexingMap) and self._value() == other._value()

    def __hash__(self) -> int:
        return hash(self._value())

    def __str__(self) -> str:
        if _printer is None:
            raise UnsupportedError("no map printer registered; `import verifidx` registers "
                                   "verifidx.core.syntax's")
        return _printer(self)

    def simplify(self, point_dims: str = "replace") -> IndexingMap:
        """A new map with the same relation, rewritten only by proven rules
        (`verifidx.simplify`, reached through the `register_simplifier` seam)."""
        if _simplifier is None:
            raise UnsupportedError("IndexingMap.simplify() needs the simplifier; `import "
                                   "verifidx` (or verifidx.simplifier.engine) registers it")
        return _simplifier(self, point_dims)

    def __repr__(self) -> str:
        if _printer is None:
            return f"<IndexingMap with {len(self.results)} results>"
        return f"IndexingMap({_printer(self)!r})"

    # -- constraints --------------------------------------------------------------------------
    def add_constraint(self, expr: ExprLike, interval: Interval | tuple[int, int]) -> IndexingMap:
        """XLA's AddConstraint, as a new map: constants are decided (dropped or KNOWN EMPTY),
        a bare variable gets its bounds intersected, other expressions are intersected with any
        constraint already on the same expression."""
        e = as_expr(expr)
        iv = interval if isinstance(interval, Interval) else Interval(*interval)
        self._check_variables([e])
        if isinstance(e, Const):
            return self if e.value in iv else self.replace(is_known_empty=True)
        if isinstance(e, Variable) and type(e) is not Size:  # a size's own: a constraint
            info = self.var_info(e)
            new = Var(info.bounds.intersect(iv), info.name)
            return self._with_var(e, new)._mark_empty()
        old = self.constraints.get(e)
        merged = iv if old is None else old.intersect(iv)
        cons = dict(self.constraints)
        cons[e] = merged
        return self.replace(constraints=cons)._mark_empty()

    def add_constraints(
        self, items: Iterable[tuple[ExprLike, Interval | tuple[int, int]]]
    ) -> IndexingMap:
        """`add_constraint` for each item in turn, building one map instead of one per item:
        the same map, since intervals only shrink (an empty one stays empty) and the flag of a
        KNOWN EMPTY map is only ever set."""
        m = self
        dims, range_vars, rt_vars = list(m.dims), list(m.range_vars), list(m.rt_vars)
        tables = {Dim: dims, Symbol: range_vars, RtVar: rt_vars}
        cons: dict[Expr, Interval] | None = None
        empty = m.is_known_empty
        for written, interval in items:
            expr = as_expr(written)
            iv = interval if isinstance(interval, Interval) else Interval(*interval)
            m._check_variables([expr])
            if isinstance(expr, Const):
                empty = empty or expr.value not in iv
            elif isinstance(expr, Variable) and type(expr) is not Size:
                table = tables[type(expr)]  # type: ignore[index]
                info = table[expr.index]
                table[expr.index] = Var(info.bounds.intersect(iv), info.name)
            else:
                if cons is None:
                    cons = dict(m.constraints)
                old = cons.get(expr)
                cons[expr] = iv if old is None else old.intersect(iv)
        return IndexingMap(m.results, tuple(dims), tuple(range_vars), tuple(rt_vars),
                           m.constraints if cons is None else cons, empty,
                           m.is_undefined, m.sizes)._mark_empty()

    def _with_var(self, v: Variable, info: Var) -> IndexingMap:
        if isinstance(v, Dim):
            dims = list(self.dims)
            dims[v.index] = info
            return self.replace(dims=tuple(dims))
        if isinstance(v, Symbol):
            rs = list(self.range_vars)
            rs[v.index] = info
            return self.replace(range_vars=tuple(rs))
        rts = list(self.rt_vars)
        rts[v.index] = info
        return self.replace(rt_vars=tuple(rts))

    def constraints_satisfied(self, dims: Sequence[int], symbols: Sequence[int] = (),
                              sizes: Mapping[str, int] | None = None) -> bool:
        """Whether the extra constraints hold at a point (variable bounds are not checked, as in
        XLA). `symbols` lists range variables, then runtime variables; `sizes` gives each
        size's value (maps with sizes)."""
        env = self._env(dims, symbols, sizes)
        return all(e.evaluate(env) in iv for e, iv in self.constraints.items())

    # -- evaluation ---------------------------------------------------------------------------
    def _env(self, dims: Sequence[int], symbols: Sequence[int],
             sizes: Mapping[str, int] | None = None) -> dict[Expr, int]:
        if len(dims) != self.num_dims or len(symbols) != self.num_range_vars + self.num_rt_vars:
            raise ValueError(
                f"expected {self.num_dims} dims and "
                f"{self.num_range_vars + self.num_rt_vars} symbols"
            )
        env: dict[Expr, int] = dict(zip(self.variables, [*dims, *symbols]))
        if sizes:
            declared = {z.name for z in self.sizes}
            for name, value in sizes.items():
                if name not in declared:
                    raise ValueError(f"the map has no size {name!r}")
                env[Size(name)] = value
        return env

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = (),
                 sizes: Mapping[str, int] | None = None) -> tuple[int, ...]:
        """Results at a point, ignoring the domain (as XLA's Evaluate); a map with sizes needs
        each size's value in `sizes` (EvaluationError names a missing one)."""
        env = self._env(dims, symbols, sizes)
        return tuple(r.evaluate(env) for r in self.results)

    def with_sizes(self, values: Mapping[str, int] | None = None, **named: int) -> IndexingMap:
        """The map at the given sizes (`m.with_sizes(N=16)` or `m.with_sizes({"N": 16})`):
        each value, which must lie in its size's interval, replaces the size; a map with every
        size given is static. Constraints that become constant are decided."""
        given: dict[str, int] = dict(values) if values is not None else {}
        given.update(named)
        if not given or self.is_undefined:
            return self
        table = {z.name: z for z in self.sizes}
        subst: dict[Expr, Expr] = {}
        for name, value in given.items():
            z = table.get(name)
            if z is None and self.is_known_empty:
                continue  # empty at every size: its text may name none
            if z is None:
                raise ValueError(f"the map has no size {name!r}")
            if type(value) is not int or value not in z.bounds:
                raise ValueError(f"size {name} = {value!r} is outside its interval {z.bounds}")
            subst[Size(name)] = Const(value)
        rest = tuple([z for z in self.sizes if z.name not in given])
        m = IndexingMap(tuple([r.substitute(subst) for r in self.results]), self.dims,
                        self.range_vars, self.rt_vars, {}, self.is_known_empty, False, rest)
        return m.add_constraints([(e.substitute(subst), iv)
                                  for e, iv in self.constraints.items()])

    def domain_size(self) -> int:
        n = 1
        for v in self.all_vars:
            n *= v.bounds.size
        return n

    def points(self, limit: int = ENUMERATION_LIMIT) -> Iterator[tuple[tuple[int, ...], ...]]:
        """Every (dims, range values, rt values, results) of the relation, by brute force.

        Raises ValueError if the box has more than `limit` points and EvaluationError when an
        operation is undefined at a point of the domain."""
        if self.is_undefined:
            raise ValueError("an UNDEFINED map has no relation")
        if self.is_known_empty:
            return
        if self.sizes:
            raise UnsupportedError("enumeration needs a static map: instantiate the sizes "
                                   "first (with_sizes)")
        if self.domain_size() > limit:
            raise ValueError(f"domain has {self.domain_size()} points, over the limit {limit}")
        ranges = [range(v.bounds.lo, v.bounds.hi + 1) for v in self.all_vars]
        nd, nr = self.num_dims, self.num_range_vars
        cons = list(self.constraints.items())
        for point in itertools.product(*ranges):
            env: dict[Expr, int] = dict(zip(self.variables, point))
            if all(e.evaluate(env) in iv for e, iv in cons):
                res = tuple(r.evaluate(env) for r in self.results)
                yield point[:nd], point[nd : nd + nr], point[nd + nr :], res

    def relation(self, limit: int = ENUMERATION_LIMIT) -> set[tuple[tuple[int, ...], ...]]:
        """The set of (rt values, dims, results): range variables projected away."""
        return {(rt, d, res) for d, _s, rt, res in self.points(limit)}

    # -- variable management ------------------------------------------------------------------
    def _renumber(
        self,
        keep_dims: Sequence[int],
        keep_range: Sequence[int],
        keep_rt: Sequence[int],
        constraints: Mapping[Expr, Interval] | None = None,
    ) -> IndexingMap:
        mapping: dict[Expr, Expr] = {}
        for new, old in enumerate(keep_dims):
            mapping[Dim(old)] = Dim(new)
        for new, old in enumerate(keep_range):
            mapping[Symbol(old)] = Symbol(new)
        for new, old in enumerate(keep_rt):
            mapping[RtVar(old)] = RtVar(new)
        cons = self.constraints if constraints is None else constraints
        return IndexingMap(
            tuple(r.substitute(mapping) for r in self.results),
            tuple(self.dims[i] for i in keep_dims),
            tuple(self.range_vars[i] for i in keep_range),
            tuple(self.rt_vars[i] for i in keep_rt),
            merged_constraints((e.substitute(mapping), iv) for e, iv in cons.items()),
            self.is_known_empty,
            False,
            self.sizes,
        )

    def linked_variables(self, seed: set[Variable]) -> set[Variable]:
        """`seed` plus every variable a constraint links to it, transitively."""
        linked = set(seed)
        changed = True
        while changed:
            changed = False
            for e in self.constraints:
                vs = e.variables()
                if vs & linked and not vs <= linked:
                    linked |= vs
                    changed = True
        return linked

    def _removable(self, candidates: set[Variable]) -> tuple[set[Variable], dict[Expr, Interval]]:
        """Variables among `candidates` that can go, and the constraints that go with them.

        A variable stays if a result uses it or a constraint links it to a staying variable.
        The constraints among the leaving variables are dropped only when they can be
        satisfied (decided by intervals or enumeration); otherwise everything stays."""
        staying = set(self.variables) - candidates
        for e in self.results:
            staying |= e.variables()
        staying = self.linked_variables(staying)
        leaving = set(self.variables) - staying
        dropped = {e: iv for e, iv in self.constraints.items() if not e.variables() & staying}
        if dropped and not self._satisfiable(dropped, leaving):
            return set(), {}
        return leaving, dropped

    def _satisfiable(self, cons: Mapping[Expr, Interval], vars_: set[Variable]) -> bool:
        """True only when the constraints can be satisfied (for every size, in a map with
        sizes: there, only the interval test decides)."""
        bounds = self.bounds
        if all(range_of(e, bounds).lo >= iv.lo and range_of(e, bounds).hi <= iv.hi
               for e, iv in cons.items()):
            return all(not bounds[v].is_empty for v in vars_)
        if any(type(v) is Size for e in cons for v in e.variables()):
            return False  # a point for some sizes is not a point for every size
        involved = sorted({v for e in cons for v in e.variables()}, key=self.variables.index)
        size = 1
        for v in involved:
            size *= bounds[v].size
        if size > ENUMERATION_LIMIT:
            return False
        for point in itertools.product(*[range(bounds[v].lo, bounds[v].hi + 1) for v in involved]):
            env: dict[Expr, int] = dict(zip(involved, point))
            try:
                if all(e.evaluate(env) in iv for e, iv in cons.items()):
                    return True
            except EvaluationError:
                continue
        return False

    def remove_unused_symbols(self) -> IndexingMap:
        """Drops range and runtime variables that no result needs (XLA's RemoveUnusedSymbols)."""
        if self.is_undefined:
            return self
        cands: set[Variable] = {Symbol(i) for i in range(self.num_range_vars)}
        cands |= {RtVar(i) for i in range(self.num_rt_vars)}
        leaving, dropped = self._removable(cands)
        return self._drop(leaving, dropped)

    def remove_unused_vars(self) -> tuple[IndexingMap, list[bool]]:
        """Drops dims, range and runtime variables that no result needs; returns the flags of the
        removed ones (dims, then range, then runtime variables), as XLA's RemoveUnusedVars."""
        if self.is_undefined:
            return self, []
        leaving, dropped = self._removable(set(self.variables))
        return self._drop(leaving, dropped), [v in leaving for v in self.variables]

    def _drop(self, leaving: set[Variable], dropped: Mapping[Expr, Interval]) -> IndexingMap:
        if not leaving:
            return self
        cons = {e: iv for e, iv in self.constraints.items() if e not in dropped}
        return self._renumber(
            [i for i in range(self.num_dims) if Dim(i) not in leaving],
            [i for i in range(self.num_range_vars) if Symbol(i) not in leaving],
            [i for i in range(self.num_rt_vars) if RtVar(i) not in leaving],
            cons,
        )

    def convert_range_variables_to_dimensions(self, indices: Sequence[int]) -> IndexingMap:
        """Turns the chosen range variables into trailing dimensions (the relation gains them as
        inputs)."""
        chosen = list(indices)
        rest = [i for i in range(self.num_range_vars) if i not in chosen]
        mapping: dict[Expr, Expr] = {}
        for k, i in enumerate(chosen):
            mapping[Symbol(i)] = Dim(self.num_dims + k)
        for k, i in enumerate(rest):
            mapping[Symbol(i)] = Symbol(k)
        return IndexingMap(
            tuple(r.substitute(mapping) for r in self.results),
            self.dims + tuple(self.range_vars[i] for i in chosen),
            tuple(self.range_vars[i] for i in rest),
            self.rt_vars,
            merged_constraints((e.substitute(mapping), iv) for e, iv in self.constraints.items()),
            self.is_known_empty,
            False,
            self.sizes,
        )

    def convert_symbols_to_dimensions(self) -> IndexingMap:
        """Every range variable, then every runtime variable, becomes a trailing dimension."""
        n, nr = self.num_dims, self.num_range_vars
        mapping: dict[Expr, Expr] = {Symbol(i): Dim(n + i) for i in range(nr)}
        mapping.update({RtVar(i): Dim(n + nr + i) for i in range(self.num_rt_vars)})
        return IndexingMap(
            tuple(r.substitute(mapping) for r in self.results),
            self.all_vars,
            (),
            (),
            merged_constraints((e.substitute(mapping), iv) for e, iv in self.constraints.items()),
            self.is_known_empty,
            False,
            self.sizes,
        )

    def _point_mods(self, s: Symbol) -> list[tuple[Expr, int, int]]:
        return [
            (e, e.rhs.value, iv.lo)  # type: ignore[attr-defined]
            for e, iv in self.constraints.items()
            if e.kind == "mod" and e.lhs is s and isinstance(e.rhs, Const)  # type: ignore[attr-defined]
            and iv.is_point
        ]

    def rescale_symbols(self) -> IndexingMap:
        """For each range variable with constraints `s mod c in [k, k]`, substitutes
        `s = s' * c + k` with the tightest bounds for s' and drops those constraints. Several
        such constraints on one variable are first merged into one modulo their lcm (Chinese
        remainder); contradictory ones make the map KNOWN EMPTY."""
        m = self
        for i in range(self.num_range_vars):
            s = Symbol(i)
            found = m._point_mods(s)
            if not found:
                continue
            c, k = found[0][1], found[0][2]
            ok = 0 <= k < c
            for _e, ci, ki in found[1:]:
                merged = merge_residues(c, k, ci, ki) if ok and 0 <= ki < ci else None
                if merged is None:
                    ok = False
                    break
                c, k = merged
            gone = {e for e, _c, _k in found}
            b = m.range_vars[i].bounds
            lo, hi = -((k - b.lo) // c), (b.hi - k) // c
            rvars = list(m.range_vars)
            rvars[i] = Var(Interval(lo, hi) if ok else Interval(1, 0), rvars[i].name)
            replacement = add(mul(s, c), k)
            cons = merged_constraints((ce.substitute({s: replacement}), civ)
                                      for ce, civ in m.constraints.items() if ce not in gone)
            m = IndexingMap(
                tuple(r.substitute({s: replacement}) for r in m.results),
                m.dims,
                tuple(rvars),
                m.rt_vars,
                {},
                m.is_known_empty,
                False,
                m.sizes,
            )
            for ce, civ in cons.items():
                m = m.add_constraint(ce, civ)
            m = m._mark_empty()
        return m


def compose(first: IndexingMap, second: IndexingMap) -> IndexingMap:
    """Apply `first`, then `second` (XLA's ComposeIndexingMaps(first, second)).

    The result's range variables are `second`'s, then `first`'s; likewise for runtime variables.
    `second`'s dimension bounds become constraints on `first`'s results."""
    if first.is_undefined or second.is_undefined:
        return IndexingMap.undefined()
    if first.num_results != second.num_dims and (first.is_known_empty or second.is_known_empty):
        # KNOWN EMPTY read from text has no variables: the composition reads nothing either way
        return IndexingMap((), first.dims, is_known_empty=True)
    if first.num_results != second.num_dims:
        raise ValueError(
            f"cannot compose: first map has {first.num_results} results, second has "
            f"{second.num_dims} dims"
        )
    n2r, n1r = second.num_range_vars, first.num_range_vars
    n2t = second.num_rt_vars
    shift_first: dict[Expr, Expr] = {Symbol(i): Symbol(n2r + i) for i in range(n1r)}
    shift_first.update({RtVar(i): RtVar(n2t + i) for i in range(first.num_rt_vars)})
    f_results = [r.substitute(shift_first) for r in first.results]
    into_second: dict[Expr, Expr] = {Dim(i): f_results[i] for i in range(second.num_dims)}
    results = [r.substitute(into_second) for r in second.results]
    m = IndexingMap(
        tuple(results),
        first.dims,
        second.range_vars + first.range_vars,
        second.rt_vars + first.rt_vars,
        {},
        first.is_known_empty or second.is_known_empty,
        False,
        merge_sizes(first.sizes, second.sizes),
    )
    for e, iv in first.constraints.items():
        m = m.add_constraint(e.substitute(shift_first), iv)
    for e, iv in second.constraints.items():
        m = m.add_constraint(e.substitute(into_second), iv)
    for i, info in enumerate(second.dims):
        m = m.add_constraint(f_results[i], info.bounds)
    return m._mark_empty()
