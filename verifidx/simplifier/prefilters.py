"""Necessary conditions for a rule to rewrite a term, read off the term's signature (its
operator kinds, children and summand shapes), its divisor (`_divisor_facts`) and the values a
dividend constant can take (`_prediction`, `_dividend_facts`): the engine's discrimination
index (`RuleEngine.applicable`) drops a rule before any match when one fails. Every filter is
a necessary condition for a match or a part of the rule's condition, so dropping is exact."""

from __future__ import annotations

import math
from typing import Final

from ..core import laws
from ..core.canonical import canon, linear_form
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
    register_cache,
)
from ..rules.guard import Guard, conjuncts, guard_for
from ..rules.matcher import divided_scaled_plus_rest, kinds
from ..rules.model import Call, Compare, ConstVar, Rule, TermVar
from .instantiate import _rebuild

_MATCH_CACHE_LIMIT: Final = 200_000
_RIGID: Final = (FloorDiv, Mod, CeilDiv, Min, Max)


def _children_fit(pattern: Expr, e: Expr) -> bool:
    """Cheap necessary condition at the root: a child of the pattern that is a division, mod,
    min, max or a constant must face the same kind of node (the matcher's n-ary and
    implicit-coefficient moves only ever wrap sums and products around terms)."""
    if type(pattern) is not type(e) and not (isinstance(pattern, Mul) and isinstance(e, Add)):
        return not isinstance(pattern, _RIGID)
    if isinstance(pattern, Add) or type(pattern) is not type(e):
        return True  # summands match in any order
    positional = isinstance(pattern, (FloorDiv, Mod, CeilDiv))
    for p, c in zip(pattern.children, e.children):
        if isinstance(p, _RIGID) and type(p) is not type(c):
            return False
        if isinstance(p, (Const, ConstVar)) and not isinstance(c, Const):
            return False
        if positional and kinds(p) & ~kinds(c):
            return False  # `((x mod c0) * c1) mod c2` needs a mod inside the dividend
    return True


def _shape(e: Expr) -> tuple[type, ...]:
    """Operator shape of a summand's base: its type and, for a division or mod, its dividend's
    type (`(x floordiv 8) mod 4` has shape (Mod, FloorDiv)); term variables have no shape."""
    if isinstance(e, Mul) and isinstance(e.rhs, (Const, ConstVar)):
        e = e.lhs
    if isinstance(e, (FloorDiv, Mod, CeilDiv)):
        inner = e.lhs
        if isinstance(inner, (FloorDiv, Mod, CeilDiv, Min, Max)):
            return (type(e), type(inner))
        return (type(e),)
    if isinstance(e, (Min, Max)):
        return (type(e),)
    return ()


_SHAPES: Final[dict[Expr, list[tuple[type, ...]]]] = register_cache({})


_NO_SHAPES: Final[list[tuple[type, ...]]] = []
_SHAPE_KEYS: Final[dict[tuple[type, ...], str]] = {}


def _shape_key(shape: tuple[type, ...]) -> str:
    hit = _SHAPE_KEYS.get(shape)
    if hit is None:
        hit = _SHAPE_KEYS[shape] = repr(shape)
    return hit


def _summand_shapes(e: Expr) -> list[tuple[type, ...]]:
    if not kinds(e):
        return _NO_SHAPES  # only divisions, mods, min and max give a summand a shape
    hit = _SHAPES.get(e)
    if hit is None:
        terms = e.terms if isinstance(e, Add) else (e,)
        hit = _SHAPES[e] = sorted((s for s in map(_shape, terms) if s), key=_shape_key)
    return hit


def _summands_fit(pattern: Expr, e: Expr) -> bool:
    """Discrimination by operator shape at sums: every rigid summand of the pattern needs a
    summand of the expression with the same shape (the matcher maps summands one to one,
    except a term variable, which has no shape). Also at the dividend of a division or mod
    (`(x mod c0 + y) mod c1` needs a mod summand), where a single term is a sum of one."""
    if isinstance(pattern, (FloorDiv, Mod, CeilDiv)) and type(e) is type(pattern):
        pattern, e = pattern.lhs, e.lhs  # type: ignore[attr-defined]
        if not isinstance(pattern, Add):
            return True
    elif not isinstance(pattern, Add) or not isinstance(e, Add):
        return True
    have = list(_summand_shapes(e))
    for s in _summand_shapes(pattern):
        for i, h in enumerate(have):
            if h[: len(s)] == s:
                del have[i]
                break
        else:
            return False
    return True


_SIGNATURES: Final[dict[Expr, tuple[tuple[object, ...], tuple[object, ...]]]] = register_cache({})


def _signature(e: Expr) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """Everything `_may_match` reads of a term, in two parts: its structure (its operator,
    its operator kinds, its children's node types, and the summand shapes of the sum or
    dividend), what `_fits_structure` reads; and for a division or mod the divisor's value
    and `_divisor_facts`, what `_fits_divisor` reads."""
    hit = _SIGNATURES.get(e)
    if hit is None:
        if len(_SIGNATURES) > _MATCH_CACHE_LIMIT:
            _SIGNATURES.clear()
        hit = _SIGNATURES[e] = _compute_signature(e)
    return hit


_NO_DIVISOR: Final[tuple[object, ...]] = ()


def _compute_signature(e: Expr) -> tuple[tuple[object, ...], tuple[object, ...]]:
    t = type(e)
    if t is Add:
        return (t, kinds(e), *_summand_shapes(e)), _NO_DIVISOR
    kids = e.children
    if not kids:
        return (t,), _NO_DIVISOR
    if (t is FloorDiv or t is Mod or t is CeilDiv) and isinstance(e, Binary):
        s, d = e.lhs, e.rhs
        return ((t, kinds(e), kinds(s), type(s), type(d), *_summand_shapes(s)),
                (d.value if isinstance(d, Const) else None, *_divisor_facts(e)))
    return (t, kinds(e), *(type(k) for k in kids)), _NO_DIVISOR


def _may_match(rule: Rule, e: Expr) -> bool:
    """Necessary conditions for `rule` to rewrite `e` that read only `_signature(e)`: the
    operator kinds, children and summand shapes the left side needs, and the conjuncts of the
    condition about the divisor alone."""
    return _fits_structure(rule, e) and _fits_divisor(rule, e)


def _fits_structure(rule: Rule, e: Expr) -> bool:
    """The part of `_may_match` that reads the structure part of `_signature(e)`."""
    lhs, lhs_kinds, divisor_guard, _multiple, _common_factor = _filter_facts(rule)
    if lhs_kinds & ~kinds(e):
        return False
    if divisor_guard is not None and (
            type(e) is not type(lhs) or not isinstance(e.rhs, Const)):  # type: ignore[attr-defined]
        return False  # `P op cK` matches only the same operator over a constant
    return _children_fit(lhs, e) and _summands_fit(lhs, e)


def _fits_divisor(rule: Rule, e: Expr) -> bool:
    """The part of `_may_match` that reads the divisor part of `_signature(e)`, for a rule
    that `_fits_structure`."""
    lhs, _kinds, divisor_guard, multiple, common_factor = _filter_facts(rule)
    if isinstance(lhs, (FloorDiv, Mod, CeilDiv)) and isinstance(lhs.rhs, Const) \
            and e.rhs is not lhs.rhs:  # type: ignore[attr-defined]
        return False  # `x floordiv -1` needs that very divisor
    if divisor_guard is not None and \
            not divisor_guard.divisor_allows(e.rhs):  # type: ignore[attr-defined]
        return False
    if multiple and not _divisor_facts(e)[0]:
        return False
    return not common_factor or _divisor_facts(e)[1]


_FILTER_FACTS: Final[dict[Rule, tuple[Expr, int, Guard | None, bool, bool]]] = {}


def _filter_facts(rule: Rule) -> tuple[Expr, int, Guard | None, bool, bool]:
    """What `_may_match` reads of a rule, looked up once (a rule's hash runs Python code):
    its left side and operator kinds, its guard when it has conjuncts over the divisor alone,
    `_needs_multiple` and `_needs_common_factor`."""
    hit = _FILTER_FACTS.get(rule)
    if hit is None:
        lhs = rule.lhs
        assert isinstance(lhs, Expr)
        guard = guard_for(rule)
        hit = _FILTER_FACTS[rule] = (
            lhs, kinds(lhs), guard if guard is not None and guard.divisor is not None else None,
            _needs_multiple(rule), _needs_common_factor(rule))
    return hit


#: Dividend patterns of a left side `D op cK` whose constant cA takes only values read off
#: the term's dividend S (`_dividend_facts`): `x * cA` (the matcher's `_scaled_division`
#: shape: the factor of S = `t * k'`, else 1 and, for a sum, the gcd of its coefficients and
#: constant), `x + cA` (the constant of S) and `x * cA + y` (1, a coefficient of S, or a
#: factor shared by some of its coefficients: one term or a group of terms for `x * cA`).
_SCALED, _OFFSET, _SCALED_PLUS_REST = "scaled", "offset", "scaled plus rest"


class _Prediction:
    """A rule `D op cK` whose every match binds cA to one of the values `_dividend_facts`
    lists for its shape, and `neutral`, the values of cA under which the rule rewrites a term
    to itself (`x * 1`, `x + 0`: `identity_instances`)."""

    __slots__ = ("shape", "constant", "divisor", "neutral", "guard", "_allows")

    def __init__(self, shape: str, constant: ConstVar, divisor: ConstVar,
                 neutral: frozenset[int], guard: Guard | None) -> None:
        self.shape, self.constant, self.divisor = shape, constant, divisor
        self.neutral, self.guard = neutral, guard
        self._allows: dict[tuple[int, Expr], bool] = register_cache({})

    def allows(self, value: int, divisor: Expr) -> bool:
        """Whether cA = value may rewrite at a term with this divisor: not a neutral value,
        and the guard holds on (cA, cK)."""
        hit = self._allows.get((value, divisor))
        if hit is None:
            hit = value not in self.neutral and (
                self.guard is None or self.guard.holds({self.constant: Const(value),
                                                         self.divisor: divisor}))
            self._allows[value, divisor] = hit
        return hit


_PREDICTIONS: Final[dict[Rule, _Prediction | None]] = {}
laws.on_change(_PREDICTIONS.clear)  # `neutral` is decided by canonical forms


def _prediction(rule: Rule) -> _Prediction | None:
    if rule not in _PREDICTIONS:
        _PREDICTIONS[rule] = _compute_prediction(rule)
    return _PREDICTIONS[rule]


def _compute_prediction(rule: Rule) -> _Prediction | None:
    lhs = rule.lhs
    if rule.split or not isinstance(lhs, (FloorDiv, Mod, CeilDiv)) or \
            not isinstance(lhs.rhs, ConstVar):
        return None
    d, k = lhs.lhs, lhs.rhs
    sum_shape = divided_scaled_plus_rest(lhs)
    constant: Expr
    if isinstance(d, Mul) and isinstance(d.lhs, TermVar) and isinstance(d.rhs, ConstVar) \
            and d.rhs is not k:
        shape, constant = _SCALED, d.rhs
    elif isinstance(d, Add) and len(d.terms) == 2 and \
            {type(t) for t in d.terms} == {TermVar, ConstVar} and k not in d.terms:
        shape, constant = _OFFSET, next(t for t in d.terms if isinstance(t, ConstVar))
    elif sum_shape is not None and sum_shape[1] is not k:
        shape, constant = _SCALED_PLUS_REST, sum_shape[1]
    else:
        return None
    assert isinstance(constant, ConstVar)
    neutral = frozenset(v.value for cv, v in identity_instances(rule) if cv is constant)
    return _Prediction(shape, constant, k, neutral, guard_for(rule))


def _zero_dividends(e: Expr) -> Expr:
    """`0 floordiv t`, `0 ceildiv t` and `0 mod t` replaced by 0: at a match site they are 0,
    or undefined (a zero or, for mod, negative divisor), and an undefined instance is never
    applied. Used only to recognise rewrites of a term to itself."""
    if isinstance(e, (FloorDiv, Mod, CeilDiv)) and e.lhs is Const(0):
        return Const(0)
    return _rebuild(e, [_zero_dividends(c) for c in e.children])


def _dividend_facts(e: Expr) -> dict[str, tuple[int, ...]]:
    """For `S op k`, by shape (`_SCALED`...): the values a dividend pattern's constant cA can
    take at S (a superset of what the matcher proposes)."""
    return _division_facts(e)[1]


def _predicted_match_may_rewrite(pred: _Prediction, facts: dict[str, tuple[int, ...]],
                                 divisor: Expr) -> bool:
    """False when every match of the rule at a term with these `_dividend_facts` binds its
    dividend constant cA (`_prediction`) to a value for which the guard fails or the rewrite
    gives the term back: such a rule changes nothing there, and skipping it spares the match,
    the condition, and the instantiation and canonical form of each identity instance
    (`x * 1` read as `x * c0`, `x + 0` as `x + c0`)."""
    for v in facts[pred.shape]:
        if pred.allows(v, divisor):
            return True
    return False


_DIVISION_FACTS: Final[dict[Expr, tuple[tuple[bool, bool], dict[str, tuple[int, ...]]]]] = \
    register_cache({})


def _divisor_facts(e: Expr) -> tuple[bool, bool]:
    """For `S op k`: (k is 0 or 1, or some variable summand of S has a coefficient that is a
    multiple of k; k is not a constant, or is 0, or shares a factor > 1 with every variable
    coefficient of S), what `_needs_multiple` and `_needs_common_factor` rules need."""
    return _division_facts(e)[0]


def _division_facts(e: Expr) -> tuple[tuple[bool, bool], dict[str, tuple[int, ...]]]:
    """`_divisor_facts` and `_dividend_facts` of `S op k`, from one linear form of S."""
    hit = _DIVISION_FACTS.get(e)
    if hit is None:
        assert isinstance(e, Binary)  # a division or mod
        s, d = e.lhs, e.rhs
        coeffs, constant = linear_form(s)
        if not isinstance(d, Const) or d.value == 0:
            divisor = (True, True)
        else:
            k = d.value
            divisor = (k == 1 or any(c % k == 0 for c in coeffs.values()),
                       math.gcd(*coeffs.values(), k) > 1)
        if isinstance(s, Mul) and isinstance(s.rhs, Const):
            scales: tuple[int, ...] = (s.rhs.value,)
        else:
            g = math.gcd(*coeffs.values(), constant) if isinstance(s, Add) and coeffs else 0
            scales = (1, g) if g > 1 else (1,)
        values = {1, *coeffs.values()}
        sizes = [abs(c) for c in coeffs.values()]
        values.update(sizes)
        n = len(sizes)
        for i in range(n):
            a = sizes[i]
            for j in range(i + 1, n):
                values.add(math.gcd(a, sizes[j]))
        if len(_DIVISION_FACTS) > _MATCH_CACHE_LIMIT:
            _DIVISION_FACTS.clear()
        hit = _DIVISION_FACTS[e] = (divisor, {_SCALED: scales, _OFFSET: (constant,),
                                              _SCALED_PLUS_REST: tuple(values)})
    return hit


_NEEDS_COMMON_FACTOR: Final[dict[Rule, bool]] = {}


def _needs_common_factor(rule: Rule) -> bool:
    """True when the left side is `(x * cA + cB) op cK` (x and cA used once, not `[split]`)
    and the condition requires `cA > 1` and `cK mod cA == 0`. `x * cA` must then take every
    variable summand of the dividend (cB takes only its constant): one summand `t * a` gives
    cA = a, a bare one cA = 1, a group cA = a factor of each coefficient; so cA > 1 divides k
    and every variable coefficient of the dividend."""
    hit = _NEEDS_COMMON_FACTOR.get(rule)
    if hit is not None:
        return hit
    lhs = rule.lhs
    hit = False
    if not rule.split and isinstance(lhs, (FloorDiv, Mod, CeilDiv)) and \
            isinstance(lhs.rhs, ConstVar) and isinstance(lhs.lhs, Add) and \
            len(lhs.lhs.terms) == 2:
        k = lhs.rhs
        t, c = lhs.lhs.terms
        uses: dict[Expr, int] = {}
        for n in lhs.walk():
            uses[n] = uses.get(n, 0) + 1
        if isinstance(t, Mul) and isinstance(t.lhs, TermVar) and isinstance(t.rhs, ConstVar) \
                and isinstance(c, ConstVar) and uses[t.lhs] == 1 and uses[t.rhs] == 1 \
                and len({k, t.rhs, c}) == 3:
            a = t.rhs
            parts = conjuncts(rule.condition)
            above_one = any(isinstance(p, Compare) and p.op == ">" and p.lhs is a
                            and p.rhs is Const(1) for p in parts)
            divides = any(isinstance(p, Compare) and p.op == "==" and p.rhs is Const(0)
                          and isinstance(p.lhs, Mod) and p.lhs.lhs is k and p.lhs.rhs is a
                          for p in parts)
            hit = above_one and divides
    _NEEDS_COMMON_FACTOR[rule] = hit
    return hit


_NEEDS_MULTIPLE: Final[dict[Rule, bool]] = {}


def _needs_multiple(rule: Rule) -> bool:
    """True when the left side is `D op cK` (not `[split]`) and D has a summand `y * cA`, y a
    term variable used once, where cA is cK itself or the condition requires `cA mod cK == 0`
    (cA used once). Every way the matcher can fill that summand then needs a variable summand
    of the dividend whose coefficient is a multiple of the divisor k, or k = 1: one term `t *
    a` gives cA = a; a bare term or the constant gives cA = 1 (implicit coefficient); a group
    of terms, or a whole sum with a common factor, gives cA = a factor that divides each
    coefficient of the group (a bound variable would need y used twice)."""
    hit = _NEEDS_MULTIPLE.get(rule)
    if hit is not None:
        return hit
    lhs = rule.lhs
    hit = False
    if not rule.split and isinstance(lhs, (FloorDiv, Mod, CeilDiv)) and \
            isinstance(lhs.rhs, ConstVar):
        k = lhs.rhs
        uses: dict[Expr, int] = {}
        for n in lhs.walk():
            uses[n] = uses.get(n, 0) + 1
        multiples = {k}
        for c in conjuncts(rule.condition):
            if isinstance(c, Compare) and c.op == "==" and c.rhs is Const(0) and \
                    isinstance(c.lhs, Mod) and c.lhs.rhs is k and \
                    isinstance(c.lhs.lhs, ConstVar) and uses.get(c.lhs.lhs) == 1:
                multiples.add(c.lhs.lhs)
        d = lhs.lhs
        for t in d.terms if isinstance(d, Add) else (d,):
            if isinstance(t, Mul) and isinstance(t.lhs, TermVar) and uses[t.lhs] == 1 and \
                    t.rhs in multiples:
                hit = True
    _NEEDS_MULTIPLE[rule] = hit
    return hit


def _needs_one_bucket(rule: Rule) -> bool:
    """True for `[split]` rules `(x * c0 + y) op c0` whose condition requires `lo(y) floordiv
    c0 == hi(y) floordiv c0` (or ceildiv): the remainder y must span fewer than c0 values."""
    lhs = rule.lhs
    shape = divided_scaled_plus_rest(lhs) if rule.split and isinstance(lhs, Expr) else None
    if shape is None or shape[1] is not shape[3]:
        return False
    assert isinstance(lhs, (FloorDiv, Mod, CeilDiv))
    y, k = shape[2], lhs.rhs
    for c in conjuncts(rule.condition):
        if isinstance(c, Compare) and c.op == "==" and \
                isinstance(c.lhs, (FloorDiv, CeilDiv)) and type(c.rhs) is type(c.lhs):
            a, b = c.lhs, c.rhs
            if a.rhs is k and b.rhs is k and isinstance(a.lhs, Call) and \
                    isinstance(b.lhs, Call) and {a.lhs.fn, b.lhs.fn} == {"lo", "hi"} and \
                    a.lhs.args == (y,) and b.lhs.args == (y,):
                return True
    return False


def identity_instances(rule: Rule) -> tuple[tuple[ConstVar, Const], ...]:
    """Constants at which the rule rewrites a term to itself: `(x * c0) floordiv c1 =>
    x floordiv (c1 floordiv c0)` with c0 = 1 has both sides `x floordiv c1` in canonical form
    (`0 floordiv t` and the like read as 0, see `_zero_dividends`).
    A match binding such a constant would only be instantiated to find `out is e`; skipping it
    first saves that work (skipping a match never makes a rewrite wrong)."""
    hit = _IDENTITIES.get(rule)
    if hit is None:
        found = []
        assert isinstance(rule.lhs, Expr) and isinstance(rule.rhs, Expr)
        for cv in sorted({n for n in rule.lhs.walk() if isinstance(n, ConstVar)}, key=str):
            for value in (Const(0), Const(1)):
                sub: dict[Expr, Expr] = {cv: value}
                try:
                    same = canon(_zero_dividends(rule.lhs.substitute(sub))) is \
                        canon(_zero_dividends(rule.rhs.substitute(sub)))
                except EvaluationError:
                    continue
                if same:
                    found.append((cv, value))
        hit = _IDENTITIES[rule] = tuple(found)
    return hit


_IDENTITIES: Final[dict[Rule, tuple[tuple[ConstVar, Const], ...]]] = {}
laws.on_change(_IDENTITIES.clear)  # canonical forms depend on the laws in force
