"""Affine (and quasi-affine) index expressions, hash-consed.

Every node is interned: building the same expression twice gives the same object, so equality is
identity and hashing is O(1). That makes expressions cheap keys for the caches of the simplifier
and of the solver bridge.

Semantics (docs/semantics.md): `floordiv` rounds toward negative infinity, `ceildiv` rounds up,
`mod` lies in [0, b-1]. The divisors of a map are integer constants, nonzero (positive for
`mod`): the constructors raise `DivisorError` for an invalid constant and maps for a divisor
that is not a constant, so every expression of a map is defined at every point. Expressions
outside maps (symbolic tile constraints) may divide by variables; evaluating them where a
divisor is invalid raises `EvaluationError`.

The smart constructors (`add`, `mul`, `floordiv`, ...) and the Python operators fold only a few
laws, each stated and proven as a rule in `rules/canonical.rules` and applied only while its
certificate is current (`verifidx.core.laws`): constant folding, `x + 0`, `x * 1`, `x * 0`,
`x floordiv 1`, `x ceildiv 1`, `x mod 1`, flattening of nested sums, and constants on the right
of products. They never reorder the terms of a sum, so parsed text prints
back as it was written. Everything else is the simplifier's job.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, SupportsInt, TypeVar, Union

from . import laws as _laws
from .errors import DepthError, DivisorError, EvaluationError, UnsupportedError

ExprLike = Union["Expr", int]

#: The deepest expression verifidx builds (docs/semantics.md). XLA's maps are a few levels
#: deep; the bound lets every walker (parser, printer, simplifier, solver encoding) recurse
#: without ever meeting Python's recursion limit. Deeper input is a clear error, never a crash.
MAX_DEPTH: Final = 64

_TABLE: Final[dict[tuple[object, ...], Expr]] = {}

# -- bounded memory ------------------------------------------------------------------------
# The intern table would keep every node ever built (a compiler that keeps verifidx loaded
# would grow without bound), and the caches keyed by nodes keep them too. Nodes cannot be
# weakly referenced (compiled classes have no __weakref__), so `release_unused` does what weak
# references would: it empties the registered caches and drops from the table every node that
# nothing else refers to, found by its reference count. A node someone still holds stays, so
# building the same expression again still gives that very node (equality is identity), and a
# dropped node can never meet its rebuilt twin. `release_if_grown` runs it at safe points (the
# start of a map simplification, a map parse) once the table has grown by TABLE_GROWTH nodes.

_CACHES: Final[list[dict[Any, Any]]] = []
_K = TypeVar("_K")
_V = TypeVar("_V")

#: The table is swept when it holds this many nodes more than after the last sweep.
TABLE_GROWTH = 1 << 17
_next_sweep: int = TABLE_GROWTH


def register_cache(cache: dict[_K, _V]) -> dict[_K, _V]:
    """Declare a module-level cache that holds expressions (as keys or values): pure memo
    tables only, which `release_unused` may empty at any time."""
    _CACHES.append(cache)
    return cache


def set_table_growth(nodes: int) -> None:
    """How many nodes the table may gain between sweeps (memory against re-building)."""
    global TABLE_GROWTH, _next_sweep
    TABLE_GROWTH = nodes
    _next_sweep = len(_TABLE) + nodes


def table_size() -> int:
    return len(_TABLE)


def release_if_grown() -> None:
    """Sweep when the table has grown past its bound (one comparison otherwise)."""
    if len(_TABLE) > _next_sweep:
        release_unused()


def _references(table: Mapping[tuple[object, ...], object], key: tuple[object, ...]) -> int:
    node = table[key]
    return sys.getrefcount(node)


def release_unused() -> int:
    """Empty the registered caches and drop every node nobody refers to; returns how many."""
    global _next_sweep
    for cache in _CACHES:
        cache.clear()
    gc.collect()  # dead objects in reference cycles still hold their nodes
    # What `_references` counts for a node that only the table holds (measured, not assumed:
    # compiled and interpreted code count their temporaries differently).
    probe: dict[tuple[object, ...], object] = {("probe",): object()}
    alone = _references(probe, ("probe",))
    keys = list(_TABLE)  # in building order: every node after its children
    dropped = 0
    while keys:
        key = keys.pop()  # parents first, so that dropping one frees its children for the test
        if isinstance(_TABLE[key], Variable):
            continue  # a handful, and each refers to itself (its variable set)
        if _references(_TABLE, key) <= alone:
            del _TABLE[key]
            dropped += 1
    _next_sweep = len(_TABLE) + TABLE_GROWTH
    return dropped


_printer: Callable[[Expr], str] | None = None


def register_printer(printer: Callable[[Expr], str]) -> None:
    """The seam behind `str(expr)`: the text layer (`verifidx.core.syntax`) imports this module and
    registers its printer here when it loads, so printing needs no import upwards. Importing the
    `verifidx` package loads the text layer, so the printer is there for every user."""
    global _printer
    _printer = printer


def floor_div(a: int, b: int) -> int:
    """Floor division on Python ints; raises on a zero divisor."""
    if b == 0:
        raise EvaluationError(f"division by zero: {a} floordiv 0")
    return a // b


def ceil_div(a: int, b: int) -> int:
    if b == 0:
        raise EvaluationError(f"division by zero: {a} ceildiv 0")
    return -((-a) // b)


def floor_mod(a: int, b: int) -> int:
    """`a mod b` for b > 0, in [0, b-1]; XLA's evaluator and emitter disagree for b <= 0."""
    if b <= 0:
        raise EvaluationError(f"mod by a non-positive value: {a} mod {b}")
    return a % b


class Expr:
    """Base of all expression nodes. Immutable; compare with `is` or `==` (identity)."""

    __slots__ = ("_size", "_total", "_depth", "_in_map", "_vars")
    kind: ClassVar[str] = "expr"

    _size: int
    _total: bool
    _depth: int
    _in_map: bool  # only map nodes, divisors constant (`indexing_map.check_map_expr`)
    _vars: frozenset[Variable] | None  # set on first use (`variable_set`)

    def __new__(cls, *args: object) -> Expr:  # pragma: no cover - subclasses override
        raise TypeError("use a concrete expression class")

    # The intern table, for the leaves of the rule language (`verifidx.rules.model`); the map
    # nodes below use it inline. Each class's `__new__` builds its node with `object.__new__`
    # itself: compiled (mypyc), that call is only allowed inside `__new__`.
    @staticmethod
    def _interned(key: tuple[object, ...]) -> Expr | None:
        """The node of `key`, if it was built before."""
        return _TABLE.get(key)

    def _remember(self, key: tuple[object, ...]) -> None:
        """Make this new node the one of `key`."""
        _TABLE[key] = self

    # -- structure -------------------------------------------------------------------------
    @property
    def children(self) -> tuple[Expr, ...]:
        return ()

    @property
    def depth(self) -> int:
        """Levels of operators (a leaf is 1); at most MAX_DEPTH."""
        return self._depth

    @property
    def size(self) -> int:
        """Number of nodes; the simplifier's reduction order counts these."""
        return self._size

    @property
    def is_total(self) -> bool:
        """True when the expression is defined everywhere (no division by a non-constant)."""
        return self._total

    def walk(self) -> Iterator[Expr]:
        """Pre-order traversal."""
        stack: list[Expr] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        """The same operator over new children (through the smart constructors)."""
        return self

    def map_children(self, fn: Callable[[Expr], Expr]) -> Expr:
        kids = self.children
        if not kids:
            return self
        new = tuple([fn(k) for k in kids])
        if new == kids:  # nodes compare by identity: the same children
            return self
        return self.rebuild(new)

    def substitute(self, mapping: Mapping[Expr, Expr]) -> Expr:
        """Replace sub-expressions (usually variables) everywhere, bottom-up."""
        return _substitute(self, mapping, {})

    def evaluate(self, env: Mapping[Expr, int]) -> int:
        """Exact integer value; variables are looked up in `env`."""
        return _evaluate(self, env, {})

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        raise NotImplementedError

    def _constancy(self) -> bool | None:
        """For `is_constant_valued`: True/False when this node decides it, None to look at
        the children."""
        return None

    def variables(self) -> set[Variable]:
        return set(self.variable_set())

    def variable_set(self) -> frozenset[Variable]:
        """The variables of this expression, computed once per node (nodes are interned and
        immutable, so the children's sets are shared)."""
        found_before = self._vars
        if found_before is not None:
            return found_before
        if isinstance(self, Variable):
            found: frozenset[Variable] = frozenset((self,))
        else:
            parts = [vs for vs in [k.variable_set() for k in self.children] if vs]
            if not parts:
                found = _NO_VARIABLES
            elif len(parts) == 1 or all(vs == parts[0] for vs in parts[1:]):
                found = parts[0]  # shared with the child (`x * 4` has the variables of x)
            else:
                found = frozenset().union(*parts)
        self._vars = found
        return found

    # -- operators -------------------------------------------------------------------------
    def __add__(self, other: ExprLike) -> Expr:
        return add(self, other)

    def __radd__(self, other: ExprLike) -> Expr:
        return add(other, self)

    def __sub__(self, other: ExprLike) -> Expr:
        return add(self, neg(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return add(other, neg(self))

    def __neg__(self) -> Expr:
        return neg(self)

    def __mul__(self, other: ExprLike) -> Expr:
        return mul(self, other)

    def __rmul__(self, other: ExprLike) -> Expr:
        return mul(other, self)

    def __floordiv__(self, other: ExprLike) -> Expr:
        return floordiv(self, other)

    def __rfloordiv__(self, other: ExprLike) -> Expr:
        return floordiv(other, self)

    def __mod__(self, other: ExprLike) -> Expr:
        return mod(self, other)

    def __rmod__(self, other: ExprLike) -> Expr:
        return mod(other, self)

    def __reduce__(self) -> tuple[object, ...]:
        raise NotImplementedError

    def __repr__(self) -> str:
        if _printer is None:
            return f"<{type(self).__name__} expression>"
        return f"Expr({_printer(self)!r})"

    def __str__(self) -> str:
        if _printer is None:
            raise UnsupportedError("no expression printer registered; `import verifidx` "
                                   "registers verifidx.core.syntax's")
        return _printer(self)


_NO_VARIABLES: Final[frozenset[Variable]] = frozenset()


# Walkers as plain functions with explicit memo tables: a nested function that calls itself
# would be a reference cycle per call, left for the garbage collector.
def _substitute(e: Expr, mapping: Mapping[Expr, Expr], cache: dict[Expr, Expr]) -> Expr:
    hit = mapping.get(e)
    if hit is not None:
        return hit
    done = cache.get(e)
    if done is None:
        kids = e.children
        if not kids:
            done = e
        else:
            new = tuple([_substitute(k, mapping, cache) for k in kids])
            done = e if new == kids else e.rebuild(new)
        cache[e] = done
    return done


def _evaluate(e: Expr, env: Mapping[Expr, int], cache: dict[Expr, int]) -> int:
    v = cache.get(e)
    if v is None:
        v = env.get(e)  # a node given a value directly (e.g. `lo(x)` in a rule)
        if v is None:
            v = e._eval([_evaluate(c, env, cache) for c in e.children], env)
        cache[e] = v
    return v


class Const(Expr):
    __slots__ = ("value",)
    kind = "const"
    value: int

    # SupportsInt, not int: any integer-like number is taken, as `int(value)` (compiled by mypyc,
    # an `int` parameter would refuse, say, a numpy integer at the call)
    def __new__(cls, value: SupportsInt) -> Const:
        node = _TABLE.get(("c", value))  # equal numbers share the node int(value) would give
        if node is None and type(value) is not int:
            value = int(value)
            node = _TABLE.get(("c", value))
        if node is not None:
            return node  # type: ignore[return-value]
        new = object.__new__(cls)
        new.value = int(value)  # an int by now (the call is for the type checker)
        new._size, new._total, new._depth, new._in_map = 1, True, 1, True
        new._vars = None
        _TABLE[("c", new.value)] = new
        return new

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return self.value

    def __reduce__(self) -> tuple[object, ...]:
        return (Const, (self.value,))


_ZERO: Final = Const(0)
_MINUS_ONE: Final = Const(-1)


class Variable(Expr):
    """A dimension, range or runtime variable, identified by its kind and position."""

    __slots__ = ("index",)
    index: int
    prefix: ClassVar[str] = "v"
    map_variable: ClassVar[bool] = False  # True for the kinds a map declares (d, s, rt)

    def __new__(cls, index: SupportsInt) -> Variable:
        node = _TABLE.get((cls.prefix, index))
        if node is not None:
            return node  # type: ignore[return-value]
        index = int(index)
        if index < 0:
            raise ValueError("variable index must be >= 0")
        key = (cls.prefix, index)
        node = _TABLE.get(key)  # given as a number of another type, e.g. "0"
        if node is not None:
            return node  # type: ignore[return-value]
        new = object.__new__(cls)
        new.index = index
        new._size, new._total, new._depth, new._in_map = 1, True, 1, cls.map_variable
        new._vars = None
        _TABLE[key] = new
        return new

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        try:
            return env[self]
        except KeyError:
            raise EvaluationError(f"no value for variable {self.prefix}{self.index}") from None

    def _constancy(self) -> bool | None:
        return False

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.index,))


class Dim(Variable):
    __slots__ = ()
    kind = "dim"
    prefix = "d"
    map_variable = True


class Symbol(Variable):
    """A range variable (XLA's `s`): existentially quantified in the map's relation."""

    __slots__ = ()
    kind = "range"
    prefix = "s"
    map_variable = True


class RtVar(Variable):
    """A runtime variable (XLA's `rt`): a value known only when the program runs."""

    __slots__ = ()
    kind = "rt"
    prefix = "rt"
    map_variable = True


#: Words of the map grammar that can never name a size.
RESERVED_NAMES: Final = frozenset((
    "domain", "in", "min", "max", "floordiv", "floorDiv", "ceildiv", "mod", "KNOWN", "EMPTY",
    "UNDEFINED"))


def is_size_name(name: str) -> bool:
    """A size is named by an ASCII identifier that is not one of XLA's variable names
    (`d3`, `s0`, `rt1`) nor a word of the grammar."""
    if not (name.isascii() and name.isidentifier()) or name in RESERVED_NAMES:
        return False
    for prefix in ("d", "s", "rt"):
        if name.startswith(prefix) and name[len(prefix):].isdecimal():
            return False
    return True


def is_value_name(name: str) -> bool:
    """A value symbol's name: `arg` and the decimal number of an entry parameter (`arg1`),
    or of an element of an integer array parameter, `_` before each coordinate (`arg1_2_0`
    for `arg1[2,0]`). A value symbol is a `Size` leaf whose interval is its element type's,
    so it may be zero or negative (docs/semantics.md, Values); every other size is positive."""
    if not name.startswith("arg"):
        return False
    parts = name[3:].split("_")
    return all(x.isdecimal() and x.isascii() for x in parts)


class Size(Variable):
    """A size: a named, positive integer parameter (a dynamic dimension, a `jax.export`
    dimension variable), universally quantified over the interval the map gives it
    (docs/semantics.md, Sizes). Interned by name: the same name is the same parameter in
    every map. Not a map variable of XLA's (`_in_map` is False), so a map that holds one
    checks its expressions against its sizes' intervals (`indexing_map.check_sized_expr`)."""

    __slots__ = ("name",)
    kind = "size"
    prefix = ""
    name: str

    def __new__(cls, name: str) -> Size:
        key = ("size", name)
        node = _TABLE.get(key)
        if node is not None:
            return node  # type: ignore[return-value]
        if not isinstance(name, str) or not is_size_name(name):
            raise ValueError(f"not a size name: {name!r}")
        new = object.__new__(cls)
        new.name = name
        new.index = 0
        new._size, new._total, new._depth, new._in_map = 1, True, 1, False
        new._vars = None
        _TABLE[key] = new
        return new

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        try:
            return env[self]
        except KeyError:
            raise EvaluationError(f"no value for size {self.name}") from None

    def __reduce__(self) -> tuple[object, ...]:
        return (Size, (self.name,))


def is_size_expr(e: Expr) -> bool:
    """True when every leaf of `e` is a size or an integer constant, and it has a size."""
    found = False
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Size):
            found = True
        elif isinstance(node, Variable):
            return False
        elif not isinstance(node, (Const, Add, Mul, FloorDiv, CeilDiv, Mod, Min, Max)):
            return False
        stack.extend(node.children)
    return found


def has_index_variable(e: Expr) -> bool:
    """True when `e` mentions a variable other than a size (d, s, rt, or a rule's)."""
    for v in e.variable_set():
        if not isinstance(v, Size):
            return True
    return False


class Add(Expr):
    """An n-ary sum (at least two terms), in the order the terms were given."""

    __slots__ = ("terms",)
    kind = "add"
    terms: tuple[Expr, ...]

    def __new__(cls, terms: Sequence[Expr]) -> Add:
        terms = tuple(terms)
        key = ("+", terms)
        node = _TABLE.get(key)
        if node is not None:
            return node  # type: ignore[return-value]
        if len(terms) < 2:
            raise ValueError("Add needs at least two terms")
        depth = size = 0
        total = in_map = True
        for t in terms:
            if t._depth > depth:
                depth = t._depth
            size += t._size
            total = total and t._total
            in_map = in_map and t._in_map
        depth += 1
        if depth > MAX_DEPTH:
            raise DepthError(depth, MAX_DEPTH)
        new = object.__new__(cls)
        new.terms = terms
        new._size = 1 + size
        new._total = total
        new._depth = depth
        new._in_map = in_map
        new._vars = None
        _TABLE[key] = new
        return new

    @property
    def children(self) -> tuple[Expr, ...]:
        return self.terms

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return add(*children)

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return sum(kids)

    def __reduce__(self) -> tuple[object, ...]:
        return (Add, (self.terms,))


class Binary(Expr):
    __slots__ = ("lhs", "rhs")
    lhs: Expr
    rhs: Expr
    tag: ClassVar[str] = "?"
    map_operator: ClassVar[bool] = False  # True for the operators a map may hold
    #: floordiv, ceildiv, mod: the divisor is checked (`_check_operands`), and the node is
    #: total where it is a constant
    division: ClassVar[bool] = False

    # operands typed `object`: checked below, with this module's message (compiled by mypyc,
    # an `Expr` parameter would be checked at the call, with a generic one)
    def __new__(cls, lhs: object, rhs: object) -> Binary:
        key = (cls.tag, lhs, rhs)
        try:
            node = _TABLE.get(key)
        except TypeError:  # an unhashable operand: not an expression
            node = None
        if node is not None:  # only expressions are keys: no number equals a node
            return node  # type: ignore[return-value]  # built (and checked) before
        if not isinstance(lhs, Expr) or not isinstance(rhs, Expr):
            raise TypeError("operands must be expressions")
        division = cls.division
        if division:
            cls._check_operands(rhs)
        depth = 1 + (lhs._depth if lhs._depth > rhs._depth else rhs._depth)
        if depth > MAX_DEPTH:
            raise DepthError(depth, MAX_DEPTH)
        new = object.__new__(cls)
        new.lhs, new.rhs = lhs, rhs
        new._size = 1 + lhs._size + rhs._size
        # a division by a constant is total, and the only division a map may hold
        with_rhs = not division or isinstance(rhs, Const)
        new._total = lhs._total and rhs._total and with_rhs
        new._depth = depth
        new._in_map = cls.map_operator and lhs._in_map and rhs._in_map and with_rhs
        new._vars = None
        _TABLE[key] = new
        return new

    @classmethod
    def _check_operands(cls, rhs: Expr) -> None:
        """Raises if the operation is outside the contract (divisions override it)."""

    @property
    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.lhs, self.rhs))


class Mul(Binary):
    __slots__ = ()
    map_operator = True
    kind = "mul"
    tag = "*"

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return mul(children[0], children[1])

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return kids[0] * kids[1]


class _Division(Binary):
    """`floordiv`, `ceildiv`, `mod`. A constant divisor must be valid (nonzero; positive for
    `mod`) wherever it is written. Maps accept only constant divisors (docs/semantics.md,
    `indexing_map.check_map_expr`), so every expression of a map is defined everywhere; other
    expressions (XLA's symbolic tile constraints, `6 mod s0`) may divide by variables. In a rule
    pattern the divisor may be a constant of the rule (`c0`, `lo(x)`); the prover makes its
    validity part of the rule's obligation."""

    __slots__ = ()
    map_operator = True
    division = True
    positive_divisor: ClassVar[bool] = False

    @classmethod
    def _check_operands(cls, rhs: Expr) -> None:
        if isinstance(rhs, Const):
            value = rhs.value
        elif not is_constant_valued(rhs):
            return  # allowed in expressions (tile constraints); maps reject it (check_map_expr)
        else:
            try:
                value = rhs.evaluate({})
            except EvaluationError:
                return  # a constant of a rule: the prover checks its validity
        if value == 0 or (cls.positive_divisor and value < 0):
            need = "a positive" if cls.positive_divisor else "a nonzero"
            raise DivisorError(f"the divisor of {cls.tag} must be {need} integer constant, "
                               f"not {value}")


class FloorDiv(_Division):
    __slots__ = ()
    kind = "floordiv"
    tag = "floordiv"

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return floordiv(children[0], children[1])

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return floor_div(kids[0], kids[1])


class CeilDiv(_Division):
    __slots__ = ()
    kind = "ceildiv"
    tag = "ceildiv"

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return ceildiv(children[0], children[1])

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return ceil_div(kids[0], kids[1])


class Mod(_Division):
    __slots__ = ()
    kind = "mod"
    tag = "mod"
    positive_divisor = True

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return mod(children[0], children[1])

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return floor_mod(kids[0], kids[1])


class Min(Binary):
    __slots__ = ()
    map_operator = True
    kind = "min"
    tag = "min"

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return minimum(children[0], children[1])

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return min(kids[0], kids[1])


class Max(Binary):
    __slots__ = ()
    map_operator = True
    kind = "max"
    tag = "max"

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return maximum(children[0], children[1])

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        return max(kids[0], kids[1])


def is_constant_valued(e: Expr) -> bool:
    """True when `e` mentions no variable of a map and no term variable of a rule: it is an
    integer constant, or (in a rule) a computation over the rule's constants and bounds."""
    stack = [e]
    while stack:
        node = stack.pop()
        decided = node._constancy()
        if decided is False:
            return False
        if decided is None:
            stack.extend(node.children)
    return True


# -- smart constructors ----------------------------------------------------------------------


def as_expr(x: ExprLike) -> Expr:
    if isinstance(x, Expr):
        return x
    if type(x) is int:
        return Const(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"not an expression or integer: {x!r}")
    return Const(x)


# Interned nodes for the compiled core's hot paths. mypyc calls a class with its own `__new__`
# through Python's generic call (the arguments packed into a tuple and a dict, then parsed);
# these look the node up in the intern table natively, as `__new__` first does, and call the
# class only for a node not built yet.
def const_node(value: int) -> Expr:
    """`Const(value)`."""
    node = _TABLE.get(("c", value))
    return node if node is not None else Const(value)


def mul_node(lhs: Expr, rhs: Expr) -> Expr:
    """`Mul(lhs, rhs)` (the node as written: `mul` applies the laws)."""
    node = _TABLE.get(("*", lhs, rhs))
    return node if node is not None else Mul(lhs, rhs)


def add_node(terms: Sequence[Expr]) -> Expr:
    """`Add(terms)` (the node as written: `add` applies the laws)."""
    key = tuple(terms)
    node = _TABLE.get(("+", key))
    return node if node is not None else Add(key)


def add(*operands: ExprLike) -> Expr:
    """Sum; nested sums are flattened, constants merged at the first constant's place, 0 dropped
    (each only while its law is proven: `verifidx.core.laws`)."""
    on = _laws.ON
    flatten = on.add_assoc
    merge = on.fold_add and on.add_comm and on.add_assoc
    drop_zero = on.add_zero and on.add_comm and on.add_assoc
    terms: list[Expr] = []
    const_at = -1
    const_sum = 0
    for op in operands:
        e = op if isinstance(op, Expr) else as_expr(op)
        for t in e.terms if flatten and isinstance(e, Add) else (e,):
            if merge and isinstance(t, Const):
                if const_at < 0:
                    const_at = len(terms)
                    terms.append(t)
                const_sum += t.value
            elif drop_zero and isinstance(t, Const) and t.value == 0:
                continue
            else:
                terms.append(t)
    if const_at >= 0:
        if const_sum == 0 and drop_zero:
            del terms[const_at]
        else:
            terms[const_at] = const_node(const_sum)
    if not terms:
        return Const(0)
    if len(terms) == 1:
        return terms[0]
    return add_node(terms)


def add_fold(first: Expr, rest: Sequence[Expr]) -> Expr:
    """`add(...add(add(first, rest[0]), rest[1])..., rest[-1])`, the sum a parser builds term by
    term, without building the partial sums. The order matters: `3 - 3 + d1 + 2` is `d1 + 2`,
    while `add(3, -3, d1, 2)` is `2 + d1` (the constant cancels, then a new one comes last)."""
    on = _laws.ON
    n = len(rest)
    if n and not isinstance(first, (Add, Const)) and (n == 1 or on.add_assoc):
        # the usual sum of a parser: no nested sum, no constant but a nonzero one at the end;
        # every partial sum extends the previous one, whichever folding laws hold
        last = rest[-1]
        plain = not isinstance(last, Add) and not (isinstance(last, Const) and last.value == 0)
        k = 0
        while plain and k < n - 1:
            plain = not isinstance(rest[k], (Add, Const))
            k += 1
        if plain:
            return Add([first, *rest])
    terms = list(first.terms) if isinstance(first, Add) else [first]
    const_at = -1
    const_sum = depth = 0
    for k, t in enumerate(terms):
        if isinstance(t, Const):
            if const_at >= 0:
                const_at = -2  # two constants (a sum built without folding): the literal fold
                break
            const_at, const_sum = k, t.value
        if t._depth > depth:
            depth = t._depth
    if const_at == -2 or not (on.add_assoc and on.fold_add and on.add_comm and on.add_zero):
        for r in rest:
            first = add(first, r)
        return first
    # `add` merges the constants of the partial sum and the next operand into one, at the first
    # constant's place, and drops it when it is 0; that changes the terms only on the first step,
    # after a partial sum of 0, and where the operand has a constant
    merge = True
    for r in rest:
        if not terms:  # the partial sum was 0: a constant operand, at the front
            terms, const_at, const_sum, merge = [_ZERO], 0, 0, True
        for t in r.terms if isinstance(r, Add) else (r,):
            if isinstance(t, Const):
                if const_at < 0:
                    const_at = len(terms)
                    terms.append(t)
                const_sum += t.value
                merge = True
            else:
                terms.append(t)
                if t._depth > depth:
                    depth = t._depth
        if merge:
            merge = False
            if const_at >= 0:
                if const_sum == 0:
                    del terms[const_at]
                    const_at = -1
                else:
                    terms[const_at] = const_node(const_sum)
        if depth >= MAX_DEPTH and len(terms) > 1:
            raise DepthError(depth + 1, MAX_DEPTH)  # where `add` would build this partial sum
    if not terms:
        return _ZERO
    return terms[0] if len(terms) == 1 else Add(terms)


def neg(x: ExprLike) -> Expr:
    """`-x` is written `x * -1` (that is what negation means here, not a law)."""
    if isinstance(x, Const) and _laws.ON.fold_mul:
        return Const(-x.value)  # what `mul` folds it to
    return mul(x, _MINUS_ONE)


def mul(a: ExprLike, b: ExprLike) -> Expr:
    """Product; constants fold and move to the right, `(x * c1) * c2` becomes `x * (c1 * c2)`."""
    on = _laws.ON
    x = a if isinstance(a, Expr) else as_expr(a)
    y = b if isinstance(b, Expr) else as_expr(b)
    if isinstance(x, Const) and not isinstance(y, Const) and on.mul_const_right:
        x, y = y, x
    if isinstance(y, Const):
        c = y.value
        if isinstance(x, Const):
            if on.fold_mul:
                return const_node(x.value * c)
        elif c == 1 and on.mul_one:
            return x
        elif c == 0 and x.is_total and on.mul_zero:
            return Const(0)
        elif isinstance(x, Mul) and isinstance(x.rhs, Const) and on.mul_const_assoc \
                and on.fold_mul:
            return mul(x.lhs, x.rhs.value * c)
    return mul_node(x, y)


def floordiv(a: ExprLike, b: ExprLike) -> Expr:
    x = a if isinstance(a, Expr) else as_expr(a)
    y = b if isinstance(b, Expr) else as_expr(b)
    if isinstance(y, Const) and y.value:  # a valid constant divisor (`_check_operands`)
        if isinstance(x, Const) and _laws.ON.fold_floordiv:
            return Const(floor_div(x.value, y.value))
        if y.value == 1 and _laws.ON.floordiv_one:
            return x
    else:
        FloorDiv._check_operands(y)
    return FloorDiv(x, y)


def ceildiv(a: ExprLike, b: ExprLike) -> Expr:
    x = a if isinstance(a, Expr) else as_expr(a)
    y = b if isinstance(b, Expr) else as_expr(b)
    if isinstance(y, Const) and y.value:  # a valid constant divisor (`_check_operands`)
        if isinstance(x, Const) and _laws.ON.fold_ceildiv:
            return Const(ceil_div(x.value, y.value))
        if y.value == 1 and _laws.ON.ceildiv_one:
            return x
    else:
        CeilDiv._check_operands(y)
    return CeilDiv(x, y)


def mod(a: ExprLike, b: ExprLike) -> Expr:
    x = a if isinstance(a, Expr) else as_expr(a)
    y = b if isinstance(b, Expr) else as_expr(b)
    if not isinstance(y, Const) or y.value <= 0:
        Mod._check_operands(y)
    if isinstance(y, Const):
        if isinstance(x, Const) and _laws.ON.fold_mod:
            return Const(floor_mod(x.value, y.value))
        if y.value == 1 and x.is_total and _laws.ON.mod_one:
            return Const(0)
    return Mod(x, y)


def minimum(a: ExprLike, b: ExprLike) -> Expr:
    x, y = as_expr(a), as_expr(b)
    if isinstance(x, Const) and isinstance(y, Const) and _laws.ON.fold_min:
        return Const(min(x.value, y.value))
    return Min(x, y)


def maximum(a: ExprLike, b: ExprLike) -> Expr:
    x, y = as_expr(a), as_expr(b)
    if isinstance(x, Const) and isinstance(y, Const) and _laws.ON.fold_max:
        return Const(max(x.value, y.value))
    return Max(x, y)


def raw_add(*operands: ExprLike) -> Expr:
    """A sum that only flattens nested sums: no folding. For rule patterns, whose text must
    mean exactly what was written (`x + 0 => x` must stay a claim about `x + 0`)."""
    terms: list[Expr] = []
    for op in operands:
        e = as_expr(op)
        terms.extend(e.terms if isinstance(e, Add) else (e,))
    return terms[0] if len(terms) == 1 else Add(terms)


RAW_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "*": Mul, "floordiv": FloorDiv, "ceildiv": CeilDiv, "mod": Mod, "min": Min, "max": Max,
}
FOLDING_BINARY: dict[str, Callable[[ExprLike, ExprLike], Expr]] = {
    "*": mul, "floordiv": floordiv, "ceildiv": ceildiv, "mod": mod, "min": minimum,
    "max": maximum,
}


def summands(e: Expr) -> tuple[Expr, ...]:
    return e.terms if isinstance(e, Add) else (e,)


