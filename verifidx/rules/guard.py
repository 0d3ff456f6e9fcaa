"""Rule conditions as generated Python, and their constant-only parts checked first (a guard).

A condition is a conjunction evaluated left to right with short-circuit `and`; the engine
rejects a rule when the condition is false or one of its operations is undefined. So a conjunct
that mentions only constants of the rule (`c1 > 0`, `c0 mod c1 == 0`, no `lo`/`hi`) and is
false, or undefined, for a match's constants condemns that match whatever the intervals at the
match site are: the engine drops it before computing any interval, and drops a whole rule before
matching when such a conjunct over the divisor alone fails for the expression's divisor. The
guard only rejects: an accepted match still goes through the full condition and the check that
the instantiated left side is the matched term.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final, cast

from ..core.errors import EvaluationError
from ..core.expr import (
    Add,
    Binary,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    ceil_div,
    floor_div,
    floor_mod,
)
from .model import BoolOp, Call, Compare, Condition, ConstVar, Not, Rule, Truth


def _lcm(a: int, b: int) -> int:
    return abs(a * b) // math.gcd(a, b) if a and b else 0


_SCOPE: Final[dict[str, object]] = {"_fd": floor_div, "_cd": ceil_div, "_fm": floor_mod,
                                    "_gcd": math.gcd, "_lcm": _lcm}


def condition_source(cond: Condition, keys: list[Expr], leaf: str) -> str:
    """Python source of `cond`. A constant or bound `lo(t)`/`hi(t)` is read as `leaf` formatted
    with its index in `keys` (appended to on first sight); operations raise EvaluationError
    where the evaluator does (`_fd`, `_cd`, `_fm`)."""

    def expr(e: Expr) -> str:
        if isinstance(e, Const):
            return f"({e.value})"
        if isinstance(e, ConstVar) or (isinstance(e, Call) and e.fn in ("lo", "hi")):
            if e not in keys:
                keys.append(e)
            return leaf.format(keys.index(e))
        if isinstance(e, Add):
            return "(" + " + ".join(expr(t) for t in e.terms) + ")"
        if isinstance(e, Call):
            fn = {"gcd": "_gcd", "lcm": "_lcm", "abs": "abs"}[e.fn]
            return f"{fn}({', '.join(expr(a) for a in e.args)})"
        assert isinstance(e, Binary)
        a, b = expr(e.lhs), expr(e.rhs)
        op = {Mul: "{} * {}", FloorDiv: "_fd({}, {})", CeilDiv: "_cd({}, {})",
              Mod: "_fm({}, {})", Min: "min({}, {})", Max: "max({}, {})"}[type(e)]
        return "(" + op.format(a, b) + ")"

    def go(c: Condition) -> str:
        if isinstance(c, Truth):
            return str(c.value)
        if isinstance(c, Compare):
            return f"({expr(c.lhs)} {c.op} {expr(c.rhs)})"
        if isinstance(c, Not):
            return f"(not {go(c.arg)})"
        return "(" + f" {c.op} ".join(go(a) for a in c.args) + ")"

    return go(cond)


def compile_function(body: str, keys: list[Expr], params: str = "v",
                     scope: Mapping[str, object] | None = None) -> Callable[..., bool]:
    """`def f(params): return bool(body)` with `K` bound to `keys` (and `scope`)."""
    scope = {**_SCOPE, "K": keys, **(scope or {})}
    exec(f"def _f({params}):\n    return bool({body})\n", scope)  # noqa: S102 - generated
    return cast(Callable[..., bool], scope["_f"])


def conjuncts(cond: Condition) -> list[Condition]:
    """The top-level `and` operands of a condition, nested `and`s flattened."""
    if isinstance(cond, BoolOp) and cond.op == "and":
        return [c for a in cond.args for c in conjuncts(a)]
    return [cond]


def _leaves(cond: Condition) -> set[Expr]:
    keys: list[Expr] = []
    condition_source(cond, keys, "{}")
    return set(keys)


_Check = Callable[[Mapping[Expr, object]], bool]


class Guard:
    """The constant-only conjuncts of one rule's condition, compiled into one function each:
    `holds(env)` is False when one of them is false or undefined under the constants bound
    in `env` (every constant they mention is bound in a complete match), and
    `divisor_allows(k)` checks early those that mention only the divisor `cK` of a left side
    `P op cK`, before any matching."""

    __slots__ = ("holds", "divisor", "_divisor", "_by_value")

    def __init__(self, conjuncts: list[Condition], divisor: ConstVar | None) -> None:
        self.holds = _all_of(conjuncts)
        self.divisor = divisor
        self._divisor = _all_of([c for c in conjuncts
                                 if divisor is not None and _leaves(c) == {divisor}])
        self._by_value: dict[Expr, bool] = {}

    def divisor_allows(self, value: Expr) -> bool:
        hit = self._by_value.get(value)
        if hit is None:
            assert self.divisor is not None
            hit = self._by_value[value] = self._divisor({self.divisor: value})
        return hit


def _all_of(conditions: list[Condition]) -> _Check:
    """One function for the conjunction, over bindings (constants bound to Const nodes):
    False when a conjunct is false or undefined (EvaluationError); True, no verdict, when a
    constant is not bound (KeyError)."""
    keys: list[Expr] = []
    body = " and ".join(condition_source(c, keys, "v[K[{}]].value") for c in conditions)
    scope = {**_SCOPE, "K": keys, "EvaluationError": EvaluationError}
    exec(f"def _f(v):\n    try:\n        return bool({body or True})\n"  # noqa: S102
         "    except EvaluationError:\n        return False\n"
         "    except KeyError:\n        return True\n", scope)
    return cast(_Check, scope["_f"])


def _divisor(rule: Rule) -> ConstVar | None:
    """`cK` when the left side is `P op cK` for a division or mod (the only constant the
    expression's root decides before matching)."""
    lhs = rule.lhs
    if isinstance(lhs, (FloorDiv, CeilDiv, Mod)) and isinstance(lhs.rhs, ConstVar):
        return lhs.rhs
    return None


#: Keyed by the rule itself (never by id(), see issue 10).
_GUARDS: Final[dict[Rule, Guard | None]] = {}


def guard_for(rule: Rule) -> Guard | None:
    """The rule's guard, or None when no conjunct of its condition is constant-only."""
    if rule in _GUARDS:
        return _GUARDS[rule]
    checks = []
    for c in conjuncts(rule.condition):
        leaves = _leaves(c)
        if leaves and all(isinstance(k, ConstVar) for k in leaves):
            checks.append(c)
    guard = Guard(checks, _divisor(rule)) if checks else None
    _GUARDS[rule] = guard
    return guard
