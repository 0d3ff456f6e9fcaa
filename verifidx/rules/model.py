"""The rule model shared by the rule parser, the prover and the simplifier's matcher.

Patterns are ordinary expressions (`verifidx.core.expr`) with three extra leaf/node kinds, so that
the printer, the evaluator and the Z3 encoder of the map layer serve rules too:

- `TermVar("x")`   matches any expression (any lower-case identifier that is not a constant);
- `ConstVar("c0")` matches a constant node only (`c` followed by digits);
- `Call("gcd", (a, b))` a function of the condition language: `gcd`, `lcm`, `abs`, and the
  interval bounds `lo(t)` / `hi(t)` of a matched term at the match site.

Patterns are built without folding (`fold=False` in the parser), so a rule's text means exactly
what it says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import ClassVar, Final

from ..core.errors import EvaluationError
from ..core.expr import Expr

#: Functions allowed in conditions and in constant computations on right-hand sides.
FUNCTIONS: Final[dict[str, int]] = {"gcd": 2, "lcm": 2, "abs": 1, "lo": 1, "hi": 1}


class PatternLeaf(Expr):
    __slots__ = ("name",)
    name: str
    tag: ClassVar[str] = "?"

    def __new__(cls, name: str) -> PatternLeaf:
        key = (cls.tag, name)
        node = Expr._interned(key)
        if node is not None:
            return node  # type: ignore[return-value]
        new = object.__new__(cls)
        new.name = name
        new._size, new._total, new._depth, new._in_map = 1, True, 1, False
        new._vars = None
        new._remember(key)
        return new

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        try:
            return env[self]
        except KeyError:
            raise EvaluationError(f"no value for {self.name}") from None

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.name,))

    def __str__(self) -> str:
        return self.name


class TermVar(PatternLeaf):
    """Matches any expression."""

    __slots__ = ()
    kind = "termvar"
    tag = "tv"

    def _constancy(self) -> bool | None:
        return False


class ConstVar(PatternLeaf):
    """Matches a constant node only."""

    __slots__ = ()
    kind = "constvar"
    tag = "cv"


class Call(Expr):
    """`gcd(a, b)`, `lcm(a, b)`, `abs(a)`, `lo(t)`, `hi(t)`. `lo`/`hi` evaluate through the
    environment (key: the Call node itself), so a counterexample can give them values."""

    __slots__ = ("fn", "args")
    kind = "call"
    fn: str
    args: tuple[Expr, ...]

    def __new__(cls, fn: str, args: Sequence[Expr]) -> Call:
        args = tuple(args)
        if fn not in FUNCTIONS or FUNCTIONS[fn] != len(args):
            raise ValueError(f"unknown function {fn}/{len(args)}")

        key = ("call", fn, args)
        node = Expr._interned(key)
        if node is not None:
            return node  # type: ignore[return-value]
        new = object.__new__(cls)
        new.fn, new.args = fn, args
        new._size = 1 + sum([a._size for a in args])
        new._total = all([a._total for a in args])
        new._depth = 1 + max([a._depth for a in args], default=0)
        new._in_map = False
        new._vars = None
        new._remember(key)
        return new

    @property
    def children(self) -> tuple[Expr, ...]:
        return self.args

    def _constancy(self) -> bool | None:
        return True if self.fn in ("lo", "hi") else None

    def rebuild(self, children: Sequence[Expr]) -> Expr:
        return Call(self.fn, children)

    def _eval(self, kids: list[int], env: Mapping[Expr, int]) -> int:
        if self.fn in ("lo", "hi"):
            try:
                return env[self]
            except KeyError:
                raise EvaluationError(f"no value for {self}") from None
        if self.fn == "gcd":
            return math.gcd(kids[0], kids[1])
        if self.fn == "lcm":
            return abs(kids[0] * kids[1]) // math.gcd(kids[0], kids[1]) if any(kids) else 0
        return abs(kids[0])

    def __reduce__(self) -> tuple[object, ...]:
        return (Call, (self.fn, self.args))

    def __str__(self) -> str:
        from ..core.syntax import print_expr

        return f"{self.fn}({', '.join(print_expr(a) for a in self.args)})"


# -- conditions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compare:
    """`lhs op rhs` with op in == != < <= > >=."""

    op: str
    lhs: Expr
    rhs: Expr

    def __reduce__(self) -> tuple[object, ...]:
        return (Compare, (self.op, self.lhs, self.rhs))  # see Interval.__reduce__


@dataclass(frozen=True)
class BoolOp:
    """`and` / `or` over two or more conditions."""

    op: str
    args: tuple[Condition, ...]

    def __reduce__(self) -> tuple[object, ...]:
        return (BoolOp, (self.op, self.args))  # see Interval.__reduce__


@dataclass(frozen=True)
class Not:
    arg: Condition

    def __reduce__(self) -> tuple[object, ...]:
        return (Not, (self.arg,))  # see Interval.__reduce__


@dataclass(frozen=True)
class Truth:
    value: bool

    def __reduce__(self) -> tuple[object, ...]:
        return (Truth, (self.value,))  # see Interval.__reduce__


Condition = Compare | BoolOp | Not | Truth

COMPARE: Final = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def evaluate_condition(cond: Condition, env: Mapping[Expr, int]) -> bool:
    """Exact truth value; raises EvaluationError if an operation in it is undefined."""
    if isinstance(cond, Truth):
        return cond.value
    if isinstance(cond, Compare):
        return bool(COMPARE[cond.op](cond.lhs.evaluate(env), cond.rhs.evaluate(env)))
    if isinstance(cond, Not):
        return not evaluate_condition(cond.arg, env)
    if cond.op == "and":
        return all(evaluate_condition(c, env) for c in cond.args)
    return any(evaluate_condition(c, env) for c in cond.args)


# -- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Membership:
    """`e in [lo, hi]` (lo and hi are constant expressions over the rule's constants)."""

    expr: Expr
    lo: Expr
    hi: Expr

    def __reduce__(self) -> tuple[object, ...]:
        return (Membership, (self.expr, self.lo, self.hi))  # see Interval.__reduce__


@dataclass(frozen=True)
class Rule:
    """One rewrite rule. `kind` is "expr" (lhs => rhs) or "constraint" (membership =>
    membership, stated as an equivalence). `expansion` marks a rule that is allowed to grow
    the term because it runs in a phase that cannot cycle (see docs/rules.md). `ordered` marks a
    permutative rule (`x + y => y + x`) that may only be applied when the instance it produces
    is smaller in the total term order (ordered rewriting), which is what keeps it from
    cycling. `trial` marks an expansion (so `expansion` is set too) that the engine applies only
    as a one-shot trial whose outcome it keeps when the whole term got smaller. `split` lets the
    matcher read a sum `x * c0 + y` with `c0` already bound as quotient and remainder: every
    coefficient is split into a multiple of `c0` and a remainder, rounding down or up, and
    each split is proposed (the engine keeps only proposals that are the matched term)."""

    name: str
    kind: str
    lhs: Expr | Membership
    rhs: Expr | Membership
    condition: Condition = field(default_factory=lambda: Truth(True))
    file: str = "<string>"
    line: int = 1
    text: str = ""
    expansion: bool = False
    ordered: bool = False
    trial: bool = False
    split: bool = False
    #: Set by the rule base from a bounded certificate: the rule is proven only when every
    #: constant it binds has |value| <= max_constant, so the simplifier applies it only then.
    max_constant: int | None = None
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        """Computed once: the simplifier keys its per-rule caches by the rule itself."""
        try:
            h = self._hash
        except AttributeError:  # compiled (mypyc), a field with init=False starts unset
            h = None
        if h is None:
            h = hash(tuple([getattr(self, f.name) for f in fields(self) if f.compare]))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple[object, ...]:
        # see verifidx.core.interval.Interval.__reduce__
        return (Rule, tuple([getattr(self, f.name) for f in fields(self) if f.init]))

    @property
    def normalized_text(self) -> str:
        """Whitespace-normalised source of the rule; its sha256 keys the certificate."""
        return " ".join(self.text.split())


def condition_exprs(cond: Condition) -> list[Expr]:
    """The expressions compared in a condition."""
    if isinstance(cond, Compare):
        return [cond.lhs, cond.rhs]
    if isinstance(cond, Not):
        return condition_exprs(cond.arg)
    if isinstance(cond, BoolOp):
        return [e for c in cond.args for e in condition_exprs(c)]
    return []


def side_exprs(side: Expr | Membership) -> list[Expr]:
    return [side.expr, side.lo, side.hi] if isinstance(side, Membership) else [side]


def rule_exprs(rule: Rule) -> list[Expr]:
    """Every expression of a rule: both sides and the condition."""
    return [*side_exprs(rule.lhs), *side_exprs(rule.rhs), *condition_exprs(rule.condition)]
