"""Matching rule patterns against expressions, n-ary sums included.

The matcher only *proposes* bindings. Whoever applies a rule (the simplifier) re-checks every
proposal: the left-hand side instantiated with the bindings must have the same canonical form as
the matched expression, and the rule's condition must evaluate to true at the match site. So a
strategy here can make the simplifier miss a rewrite, never make it apply a wrong one.

Sums are matched up to associativity and commutativity (the laws in `rules/canonical.rules`):
- each pattern summand takes one term of the sum, a term variable left for last takes the rest
  (or 0 when nothing is left);
- `x * c0` also matches a bare term (with `c0 = 1`) and a group of terms that share a factor
  (`x` becomes the group divided by the factor);
- a constant pattern summand takes the constant of the sum, or 0;
- a summand over an already bound term variable takes that variable's value scaled by a factor
  (`x * c1` with `x = s0 + 1` takes `3 * s0 + 3`), splitting like terms when needed (`7 * s0` is
  `4 * s0 + 3 * s0`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from math import gcd
from typing import Final

from ..core import laws
from ..core.canonical import canon, from_linear, linear_form, order_key
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
    mul,
    register_cache,
)
from ..core.interval import Interval, scaled_sum_range
from .model import ConstVar, TermVar

Bindings = dict[Expr, Expr]

KIND_BITS: Final[dict[type[Expr], int]] = {FloorDiv: 1, Mod: 2, CeilDiv: 4, Min: 8, Max: 16}
_KINDS: Final[dict[Expr, int]] = register_cache({})


def kinds(e: Expr) -> int:
    """Bit set of the division and min/max operators occurring in `e` (a cheap necessary
    condition for a pattern to match: the matcher never invents these operators)."""
    hit = _KINDS.get(e)
    if hit is None:
        hit = KIND_BITS.get(type(e), 0)
        for c in e.children:
            hit |= kinds(c)
        _KINDS[e] = hit
    return hit


#: Operators a pattern node matches only at a node of the same type (never at a sum).
_RIGID: Final = (FloorDiv, Mod, CeilDiv, Min, Max)

#: Cap on the candidate factors tried for a group (keeps matching linear in practice).
_MAX_FACTORS: Final = 12


def match(pattern: Expr, expr: Expr, bindings: Mapping[Expr, Expr] | None = None,
          split: bool = False) -> Iterator[Bindings]:
    """All bindings (extending `bindings`) under which `pattern` may describe `expr`.
    `split` (rules marked `[split]`): also read the dividend of `(x * c0 + y) op c0` as
    quotient and remainder (see `_split_dividend`)."""
    e = canon(expr)
    if split:
        if bindings:
            yield from _match_split(pattern, e, dict(bindings))
        else:
            yield from _split_matches(pattern, e)
    if not bindings and _is_rigid(pattern):
        env: Bindings = {}
        if _match_rigid(pattern, e, env):
            yield env
        return
    scaled = None if bindings else _scaled_division(pattern)
    if scaled is not None:
        yield from _match_scaled_division(*scaled, e)
        return
    yield from _match(pattern, e, dict(bindings or {}))


_SCALED_DIVISIONS: Final[dict[Expr, tuple[type, TermVar, ConstVar, ConstVar] | None]] = \
    register_cache({})


def _scaled_division(p: Expr) -> tuple[type, TermVar, ConstVar, ConstVar] | None:
    """(operator, x, c0, c1) when the pattern is `(x * c0) op c1` with distinct variables."""
    if p in _SCALED_DIVISIONS:
        return _SCALED_DIVISIONS[p]
    hit = None
    if isinstance(p, (FloorDiv, Mod, CeilDiv)) and isinstance(p.lhs, Mul) and \
            isinstance(p.lhs.lhs, TermVar) and isinstance(p.lhs.rhs, ConstVar) and \
            isinstance(p.rhs, ConstVar) and p.rhs is not p.lhs.rhs:
        hit = (type(p), p.lhs.lhs, p.lhs.rhs, p.rhs)
    _SCALED_DIVISIONS[p] = hit
    return hit


def _match_scaled_division(op: type, x: TermVar, c0: ConstVar, c1: ConstVar, e: Expr
                           ) -> list[Bindings]:
    """What `_match` yields for `(x * c0) op c1` (`_scaled_division`), in the same order: the
    dividend as a product `t * k`, as `t * 1`, or as a sum with a common factor (see
    `_match_product`), each with c1 bound to the divisor."""
    if type(e) is not op:
        return []
    assert isinstance(e, Binary)
    dividend, divisor = e.lhs, e.rhs
    if not isinstance(divisor, Const):
        return []
    found: list[Bindings] = []
    product = isinstance(dividend, Mul) and isinstance(dividend.rhs, Const)
    if product:
        assert isinstance(dividend, Mul)
        found.append({x: dividend.lhs, c0: dividend.rhs})
    else:
        found.append({c0: _ONE, x: dividend})
    if isinstance(dividend, Add):
        coeffs, constant = linear_form(dividend)
        g = gcd(*coeffs.values(), constant) if coeffs else 0
        if g > 1:
            inner = from_linear({k: v // g for k, v in coeffs.items()}, constant // g)
            found.append({c0: Const(g), x: inner})
    return [{**b, c1: divisor} for b in found]


_RIGID_PATTERNS: Final[dict[Expr, bool]] = register_cache({})


def _is_rigid(p: Expr) -> bool:
    """Patterns of divisions and mods over variables and constants (`(x floordiv c0) mod c1`):
    they match at most one way, which `_match_rigid` finds without generators."""
    hit = _RIGID_PATTERNS.get(p)
    if hit is None:
        hit = _RIGID_PATTERNS[p] = isinstance(p, (FloorDiv, Mod, CeilDiv)) and all(
            isinstance(n, (FloorDiv, Mod, CeilDiv, TermVar, ConstVar, Const)) for n in p.walk())
    return hit


def _match_rigid(p: Expr, e: Expr, b: Bindings) -> bool:
    """What `_match` yields for a rigid pattern (`_is_rigid`): `b` extended in place, in the
    same order (left operand first), or False."""
    if isinstance(p, TermVar):
        bound = b.get(p)
        if bound is None:
            b[p] = e
            return True
        return canon(bound) is e
    if isinstance(p, ConstVar):
        if not isinstance(e, Const):
            return False
        bound = b.get(p)
        if bound is None:
            b[p] = e
            return True
        return bound is e
    if isinstance(p, Const):
        return p is e
    if type(p) is not type(e):
        return False
    assert isinstance(p, Binary) and isinstance(e, Binary)
    return _match_rigid(p.lhs, e.lhs, b) and _match_rigid(p.rhs, e.rhs, b)


#: `_match_split` with nothing bound, by (dividend pattern, divisor pattern, dividend,
#: divisor): `(x * c0 + y) floordiv c0` and `(x * c0 + y) mod c0` split a dividend the same
#: way, so `S floordiv k` and `S mod k` share the work. Bindings are never mutated.
_SPLIT_MATCHES: Final[dict[tuple[Expr, Expr, Expr, Expr], list[Bindings]]] = register_cache({})


def _split_matches(p: Expr, e: Expr) -> list[Bindings]:
    if not (isinstance(p, Binary) and isinstance(e, Binary) and type(p) is type(e)):
        return []
    key = (p.lhs, p.rhs, e.lhs, e.rhs)
    hit = _SPLIT_MATCHES.get(key)
    if hit is None:
        lazy = _lazy_splits(p, e)
        hit = [s.env for s in lazy] if lazy is not None else list(_match_split(p, e, {}))
        if len(_SPLIT_MATCHES) > _CACHE_LIMIT:
            _SPLIT_MATCHES.clear()
        _SPLIT_MATCHES[key] = hit
    return hit


def _match_split(p: Expr, e: Expr, b: Bindings) -> Iterator[Bindings]:
    """`(x * c0 + y) op c0` against `S op k`: bind c0 = k, then propose x = sum of q_i * t_i
    and y = S - k * x for choices of q_i in {a_i floordiv k, a_i ceildiv k} (a_i the
    coefficient of term t_i in S; see `_split_dividend`). Any x is an exact decomposition, so
    the proposals differ only in which remainder the rule's condition gets to look at."""
    if not (isinstance(p, Binary) and isinstance(e, Binary) and type(p) is type(e)
            and isinstance(p.lhs, Add) and isinstance(p.rhs, ConstVar)
            and isinstance(e.rhs, Const) and e.rhs.value > 1):
        return
    k = e.rhs.value
    factor = [t for t in p.lhs.terms if isinstance(t, Mul) and isinstance(t.lhs, TermVar)
              and t.rhs is p.rhs]
    if len(factor) != 1:
        return
    rest = [t for t in p.lhs.terms if t is not factor[0]]
    for b1 in _match(p.rhs, e.rhs, b):
        for q, left in _quotients(_terms(e.lhs), k):
            for b2 in _match(factor[0].lhs, _expr(q), b1):
                yield from _assign(_order(tuple(rest), b2), left, b2)


class SplitMatch:
    """A `[split]` match of `(x * c + y) op c`: c is the divisor, x a quotient choice, y what
    it leaves, kept as linear terms; `env` builds the bindings on first use. `ranges` gives
    the intervals of x and y from the intervals of their bases, the way interval arithmetic
    ranges their sums, so a rule's condition on `lo(y)`/`hi(y)` can be decided first."""

    __slots__ = ("c", "divisor", "x", "y", "quotient", "rest", "_env")

    def __init__(self, c: ConstVar, divisor: Const, x: TermVar, y: TermVar, quotient: Terms,
                 rest: Terms) -> None:
        self.c, self.divisor, self.x, self.y = c, divisor, x, y
        self.quotient, self.rest = quotient, rest
        self._env: Bindings | None = None

    @property
    def env(self) -> Bindings:
        """Never mutated by callers."""
        if self._env is None:
            self._env = {self.c: self.divisor, self.x: _expr(self.quotient),
                         self.y: _expr(self.rest)}
        return self._env

    def linear_range(self, var: Expr, base_range: Callable[[Expr], Interval]
                     ) -> Interval | None:
        """The interval of x or y as a sum of scaled bases (None: a base has none)."""
        return scaled_sum_range(self.rest if var is self.y else self.quotient, base_range)


_LAZY_SPLITS: Final[dict[tuple[Expr, Expr, Expr, Expr], list[SplitMatch]]] = register_cache({})
laws.on_change(_LAZY_SPLITS.clear)


def _lazy_splits(p: Expr, e: Expr) -> list[SplitMatch] | None:
    """What `_match_split` yields for `(x * c + y) op c` against `S op k`, in the same order,
    as `SplitMatch`es; None for other patterns. Shared by floordiv, mod and ceildiv (the
    key leaves out the operator, as `_split_matches`'s does)."""
    shape = divided_scaled_plus_rest(p)
    if shape is None or shape[1] is not shape[3] or not isinstance(e, Binary) or \
            type(e) is not type(p) or not isinstance(e.rhs, Const):
        return None
    assert isinstance(p, Binary)
    key = (p.lhs, p.rhs, e.lhs, e.rhs)
    hit = _LAZY_SPLITS.get(key)
    if hit is None:
        x, c, y, _c = shape
        divisor: Const = e.rhs  # type: ignore[assignment]
        k = divisor.value
        hit = [SplitMatch(c, divisor, x, y, q, left)
               for q, left in _quotients(_terms(e.lhs), k)] if k > 1 else []
        if len(_LAZY_SPLITS) > _CACHE_LIMIT:
            _LAZY_SPLITS.clear()
        _LAZY_SPLITS[key] = hit
    return hit


def _quotients(remaining: Terms, k: int) -> list[tuple[Terms, Terms]]:
    """Each quotient choice of `_split_dividend` with what it leaves of the terms."""
    out: list[tuple[Terms, Terms]] = []
    for q in _split_dividend(remaining, k):
        left = dict(remaining)
        for base, qi in q.items():
            v = left[base] - qi * k
            if v:
                left[base] = v
            else:
                del left[base]
        out.append((q, left))
    return out


def _split_dividend(terms: Terms, k: int) -> list[Terms]:
    """Quotient choices for the non-constant terms. First the balanced one (each coefficient
    rounded to the nearer multiple of k, down on a tie), then each single term rounded the
    other way. No other choice can leave a remainder within one bucket as interval
    arithmetic sees it: the remainder's width is the sum of |remainder coefficient| * width
    of the term, and two terms rounded away from the nearer multiple already make it at
    least k (terms of width 0 only shift the remainder by multiples of k, which keeps it
    within one bucket or not)."""
    bases: list[Expr] = []
    balanced: list[int] = []
    other: list[int] = []
    for t, a in terms.items():
        if t is _ONE:
            continue
        down, up = a // k, -(-a // k)
        near, far = (down, up) if a - down * k <= up * k - a else (up, down)
        bases.append(t)
        balanced.append(near)
        other.append(far)
    n = len(bases)
    first: Terms = {}
    for j in range(n):
        if balanced[j]:
            first[bases[j]] = balanced[j]
    out = [first]
    for i in range(n):
        if other[i] != balanced[i]:
            choice: Terms = {}
            for j in range(n):
                q = other[j] if j == i else balanced[j]
                if q:
                    choice[bases[j]] = q
            out.append(choice)
    return out


def _match(p: Expr, e: Expr, b: Bindings) -> Iterator[Bindings]:
    if isinstance(p, TermVar):
        bound = b.get(p)
        if bound is None:
            yield {**b, p: e}
        elif canon(bound) is e:
            yield b
        return
    if isinstance(p, ConstVar):
        if isinstance(e, Const):
            bound = b.get(p)
            if bound is None:
                yield {**b, p: e}
            elif bound is e:
                yield b
        return
    if isinstance(p, Const):
        if p is e:
            yield b
        return
    if isinstance(p, Add):
        yield from _match_sum(p, e, b)
        return
    if isinstance(p, Mul):
        yield from _match_product(p, e, b)
        return
    if isinstance(p, Binary):
        if isinstance(e, Binary) and type(p) is type(e):
            for b1 in _match(p.lhs, e.lhs, b):
                yield from _match(p.rhs, e.rhs, b1)
            if isinstance(p, (Min, Max)):  # commutative
                for b1 in _match(p.lhs, e.rhs, b):
                    yield from _match(p.rhs, e.lhs, b1)
        return
    if p is e:
        yield b


def _is_const_pattern(p: Expr) -> bool:
    return isinstance(p, (Const, ConstVar))


def _match_product(p: Mul, e: Expr, b: Bindings) -> Iterator[Bindings]:
    if isinstance(e, Mul):
        for b1 in _match(p.lhs, e.lhs, b):
            yield from _match(p.rhs, e.rhs, b1)
        if not _is_const_pattern(p.rhs):
            for b1 in _match(p.lhs, e.rhs, b):
                yield from _match(p.rhs, e.lhs, b1)
    if _is_const_pattern(p.rhs) and not (isinstance(e, Mul) and isinstance(e.rhs, Const)):
        # implicit coefficient: t == t * 1
        for b1 in _match(p.rhs, Const(1), b):
            yield from _match(p.lhs, e, b1)
    if isinstance(p.rhs, ConstVar) and isinstance(e, Add):
        # a common factor: 4*a + 8*b == (a + 2*b) * 4
        coeffs, constant = linear_form(e)
        if isinstance(p.lhs, _RIGID) and len(coeffs) + (constant != 0) > 1:
            return  # `inner` would be a sum, which a division or min/max never matches
        g = gcd(*coeffs.values(), constant) if coeffs else 0
        if g > 1:
            inner = from_linear({k: v // g for k, v in coeffs.items()}, constant // g)
            for b1 in _match(p.rhs, Const(g), b):
                yield from _match(p.lhs, inner, b1)


# -- sums --------------------------------------------------------------------------------------

Terms = dict[Expr, int]  # base -> coefficient, with the constant under Const(1)
_ONE: Final = Const(1)


def _terms(e: Expr) -> Terms:
    coeffs, constant = linear_form(e)
    if constant:
        coeffs[_ONE] = constant
    return coeffs


#: Sums rebuilt from terms, by their set of terms: the same remainders come back for every rule
#: whose pattern splits the same sum (expressions are interned, so the key hashes cheaply).
_SUMS: Final[dict[frozenset[tuple[Expr, int]], Expr]] = register_cache({})
_SCALED: Final[dict[tuple[Expr, int], Expr]] = register_cache({})
_CACHE_LIMIT: Final = 100_000


def _expr(terms: Terms) -> Expr:
    """`from_linear` of the terms, with each scaled term taken from a cache: the remainders the
    matcher proposes for one sum share most of their terms."""
    key = frozenset(terms.items())
    hit = _SUMS.get(key)
    if hit is None:
        parts = sorted((_product(b, c) for b, c in terms.items() if b is not _ONE and c),
                       key=order_key)
        constant = terms.get(_ONE, 0)
        if constant:
            parts.append(Const(constant))
        hit = Const(0) if not parts else parts[0] if len(parts) == 1 else Add(parts)
        if len(_SUMS) > _CACHE_LIMIT:
            _SUMS.clear()
        _SUMS[key] = hit
    return hit


_PRODUCTS: Final[dict[tuple[Expr, int], Expr]] = register_cache({})
for _cache in (_SUMS, _SCALED, _PRODUCTS, _SPLIT_MATCHES):
    laws.on_change(_cache.clear)  # built under other proven laws


def _product(base: Expr, coeff: int) -> Expr:
    """`mul(base, coeff)`, remembered."""
    hit = _PRODUCTS.get((base, coeff))
    if hit is None:
        if len(_PRODUCTS) > _CACHE_LIMIT:
            _PRODUCTS.clear()
        hit = _PRODUCTS[base, coeff] = mul(base, coeff)
    return hit


def _scaled(base: Expr, coeff: int) -> Expr:
    """The summand `coeff * base` of a sum, as one term."""
    hit = _SCALED.get((base, coeff))
    if hit is None:
        hit = Const(coeff) if base is _ONE else canon(base * coeff)
        if len(_SCALED) > _CACHE_LIMIT:
            _SCALED.clear()
        _SCALED[base, coeff] = hit
    return hit


def _order(patterns: tuple[Expr, ...], b: Bindings) -> list[Expr]:
    """Most constrained first: structured terms, constants, bound variables, free variables."""

    def rank(p: Expr) -> int:
        if isinstance(p, TermVar):
            return 3 if p not in b else 2
        if isinstance(p, Mul) and isinstance(p.lhs, TermVar) and _is_const_pattern(p.rhs):
            return 2 if p.lhs in b else 1
        if _is_const_pattern(p):
            return 1
        return 0

    return sorted(patterns, key=rank)


#: Matches of a sum pattern with nothing bound yet, by (pattern, expression): a dividend
#: pattern such as `x * c0 + y` recurs under floordiv, mod and ceildiv, with `c0` or `c1` as
#: the divisor, and its matches do not depend on which. Bindings are never mutated.
_SUM_MATCHES: Final[dict[tuple[Expr, Expr], list[Bindings]]] = register_cache({})
laws.on_change(_SUM_MATCHES.clear)


def _match_sum(p: Add, e: Expr, b: Bindings) -> Iterator[Bindings]:
    if b:
        yield from _assign(_order(p.terms, b), _terms(e), b)
        return
    hit = _SUM_MATCHES.get((p, e))
    if hit is None:
        splits = _splits(p, e)
        hit = None if splits is None else splits.all()
        if hit is None and not _rigid_summands_fit(p, e):
            hit = []
        if hit is None and _repeated_dividends(p) - _rigid_variables(p) and \
                not _has_repeated_dividend(e):
            hit = []
        if hit is None:
            hit = list(_assign(_order(p.terms, b), _terms(e), b))
        if len(_SUM_MATCHES) > _CACHE_LIMIT:
            _SUM_MATCHES.clear()
        _SUM_MATCHES[p, e] = hit
    yield from hit


_REPEATS: Final[dict[Add, frozenset[Expr]]] = register_cache({})


def _repeats_dividend(p: Add) -> bool:
    """True when a summand of the pattern is `x` or `x * c`, and x occurs in the other
    summands only as the dividend of a division or mod, at least once
    (`x * c1 + (x floordiv c0) * c2 + y`). Those summands are structured and come first
    (`_order`), so x is bound to the dividend D of a division node of the sum, and `x * c`
    then takes a multiple of D from the other terms: every base of D (its constant included)
    must be a term of the sum."""
    return bool(_repeated_dividends(p))


def _repeated_dividends(p: Add) -> frozenset[Expr]:
    """The variables x that make `_repeats_dividend` true."""
    hit = _REPEATS.get(p)
    if hit is None:
        found: set[Expr] = set()
        bare = [t if isinstance(t, TermVar) else t.lhs for t in p.terms  # type: ignore[attr-defined]
                if isinstance(t, TermVar) or (isinstance(t, Mul) and isinstance(t.lhs, TermVar)
                                              and _is_const_pattern(t.rhs))]
        for x in bare:
            others = [t for t in p.terms if t is not x and not (isinstance(t, Mul) and t.lhs is x)]
            uses = sum(1 for t in others for n in t.walk() if n is x)
            as_dividend = sum(1 for t in others for n in t.walk()
                              if isinstance(n, (FloorDiv, Mod, CeilDiv)) and n.lhs is x)
            if uses == as_dividend > 0:
                found.add(x)
        hit = _REPEATS[p] = frozenset(found)
    return hit


_RIGID_PARTS: Final[dict[Add, tuple[Expr, ...]]] = register_cache({})


def _rigid_parts(p: Add) -> tuple[Expr, ...]:
    """The rigid patterns (`_is_rigid`) that are summands of the sum pattern, bare or under
    constant factors: `(x floordiv c0) * c1 + (x mod c0) * c2 + y` has `x floordiv c0` and
    `x mod c0`. Each takes a different term of the sum, and only ever the base of that term
    (the term itself, or `t` of `t * k`): `_match_product` matches the factor's left side
    against `t` of `t * k` or against the whole term (implicit 1), and a group of terms or a
    rounded multiple is a sum or a product, which a division or mod never matches."""
    hit = _RIGID_PARTS.get(p)
    if hit is None:
        parts = []
        for t in p.terms:
            while isinstance(t, Mul) and _is_const_pattern(t.rhs):
                t = t.lhs  # `-((x floordiv c0) * c0)` too: each factor peels off the same way
            if _is_rigid(t):
                parts.append(t)
        hit = _RIGID_PARTS[p] = tuple(parts)
    return hit


_RIGID_VARIABLES: Final[dict[Add, frozenset[Expr]]] = register_cache({})


def _rigid_variables(p: Add) -> frozenset[Expr]:
    """Term variables bound by the rigid parts of the pattern (`_rigid_parts`)."""
    hit = _RIGID_VARIABLES.get(p)
    if hit is None:
        hit = _RIGID_VARIABLES[p] = frozenset(
            n for part in _rigid_parts(p) for n in part.walk() if isinstance(n, TermVar))
    return hit


_DIVISION_BASES: Final[dict[Expr, tuple[Terms, tuple[Expr, ...]]]] = register_cache({})
laws.on_change(_DIVISION_BASES.clear)


def _division_bases(e: Expr) -> tuple[Terms, tuple[Expr, ...]]:
    """The terms of the sum `e` and those of its bases that are divisions or mods."""
    hit = _DIVISION_BASES.get(e)
    if hit is None:
        terms = _terms(e)
        hit = (terms, tuple(b for b in terms if isinstance(b, (FloorDiv, Mod, CeilDiv))))
        if len(_DIVISION_BASES) > _CACHE_LIMIT:
            _DIVISION_BASES.clear()
        _DIVISION_BASES[e] = hit
    return hit


def _rigid_summands_fit(p: Add, e: Expr) -> bool:
    """Necessary condition for a match of the sum pattern `p` against `e`, read from its rigid
    parts alone (`_rigid_parts`): they go to distinct division or mod bases of `e` with one
    consistent binding (`_match_rigid`), and a variable that makes `_repeats_dividend` true
    and is bound there has every base of its value among the terms of `e` (see there).
    Digit sums hold several divisions whose dividends differ: `(x floordiv c0) * c1 + (x mod
    c0) * c2 + y` needs a quotient and a remainder of one x by one c0, which this finds or
    rules out without the general search."""
    parts = _rigid_parts(p)
    if not parts:
        return True
    terms, bases = _division_bases(e)
    if len(bases) < len(parts):
        return False
    repeated = _repeated_dividends(p) & _rigid_variables(p)

    def place(i: int, used: tuple[Expr, ...], env: Bindings) -> bool:
        if i == len(parts):
            return all(all(b in terms for b in _terms(env[x])) for x in repeated)
        part = parts[i]
        for base in bases:
            if type(base) is not type(part) or base in used:
                continue  # (`_match_rigid` would fail at the root)
            env1 = dict(env)
            if _match_rigid(part, base, env1) and place(i + 1, (*used, base), env1):
                return True
        return False

    return place(0, (), {})


_REPEATED: Final[dict[Expr, bool]] = register_cache({})
laws.on_change(_REPEATED.clear)


def _has_repeated_dividend(e: Expr) -> bool:
    """Whether some division or mod inside a term of the sum `e` has a dividend whose bases
    (constant included) are all terms of `e`: what `_repeats_dividend` patterns need."""
    hit = _REPEATED.get(e)
    if hit is None:
        terms = _terms(e)
        hit = any(all(base in terms for base in _terms(n.lhs))  # type: ignore[attr-defined]
                  for t in terms for n in t.walk() if isinstance(n, (FloorDiv, Mod, CeilDiv)))
        if len(_REPEATED) > _CACHE_LIMIT:
            _REPEATED.clear()
        _REPEATED[e] = hit
    return hit


_SHAPES: Final[dict[Add, tuple[TermVar, ConstVar, TermVar] | None]] = register_cache({})


def _scaled_plus_rest(p: Add) -> tuple[TermVar, ConstVar, TermVar] | None:
    """(x, c0, y) when the sum pattern is `x * c0 + y` (distinct variables), the dividend of
    most division rules; None otherwise."""
    if p in _SHAPES:
        return _SHAPES[p]
    shape = None
    if len(p.terms) == 2:
        for s, r in (p.terms, p.terms[::-1]):
            if isinstance(s, Mul) and isinstance(s.lhs, TermVar) and \
                    isinstance(s.rhs, ConstVar) and isinstance(r, TermVar) and r is not s.lhs:
                shape = (s.lhs, s.rhs, r)
    _SHAPES[p] = shape
    return shape


def _summands_in_order(remaining: Terms, e: Expr) -> tuple[Expr, ...] | None:
    """`e`'s summands when `e` is exactly what `_expr(remaining)` builds: the scaled terms in
    the order of `remaining`, strictly increasing in `order_key`, then the constant (as
    `linear_form` lists it, last). Then `_expr` of `remaining` without its i-th term is the
    sum of the other summands (a sorted list stays sorted when one element goes)."""
    if not isinstance(e, Add) or len(e.terms) != len(remaining):
        return None
    terms = e.terms
    previous = None
    for t, (base, coeff) in zip(terms, remaining.items()):
        if base is _ONE:
            if t is not terms[-1] or not (isinstance(t, Const) and t.value == coeff):
                return None
            continue
        if t is not _product(base, coeff):
            return None
        key = order_key(t)
        if previous is not None and not previous < key:
            return None
        previous = key
    return terms


def _without_term(summands: tuple[Expr, ...], i: int) -> Expr:
    rest = summands[:i] + summands[i + 1:]
    return rest[0] if len(rest) == 1 else Add(rest)


_DIVIDED_SHAPES: Final[dict[Expr, tuple[TermVar, ConstVar, TermVar, ConstVar] | None]] = \
    register_cache({})


def divided_scaled_plus_rest(p: Expr) -> tuple[TermVar, ConstVar, TermVar, ConstVar] | None:
    """(x, c0, y, c1) when the pattern is `(x * c0 + y) op c1` with distinct x, y (c1 may be
    c0): the left side of most division rules."""
    if p in _DIVIDED_SHAPES:
        return _DIVIDED_SHAPES[p]
    hit = None
    if isinstance(p, (FloorDiv, Mod, CeilDiv)) and isinstance(p.lhs, Add) and \
            isinstance(p.rhs, ConstVar):
        shape = _scaled_plus_rest(p.lhs)
        if shape is not None:
            hit = (*shape, p.rhs)
    _DIVIDED_SHAPES[p] = hit
    return hit


def can_guide(pattern: Expr) -> bool:
    """Whether `guided_matches` handles this left side."""
    return divided_scaled_plus_rest(pattern) is not None


def guided_matches(pattern: Expr, expr: Expr, accept: Callable[[Bindings], bool],
                   split: bool = False) -> list[tuple[int, Bindings | SplitMatch]] | None:
    """The matches `match(pattern, expr, split=split)` yields whose constants `accept` admits,
    in the same order, for a left side `(x * c0 + y) op c1`; None for other patterns (and for
    sums with a term that is itself a sum), which `match` handles. `[split]` matches come
    first, all of them (their constants are the divisor's), as `SplitMatch`es where they
    can be. `accept` sees only the constants
    (c0, c1): a rule's guard rejects most ways of splitting a sum on them alone, and the
    costly part of a match, the rest `y` and a group divided by its factor, is then never
    built (and built once for all the rules that accept it, see `_Splits`). Each match comes
    with its position among all the matches of the pattern (split ones first), so that the
    caller can share what it learns about one match across rules with the same left side."""
    shape = divided_scaled_plus_rest(pattern)
    if shape is None:
        return None
    e = canon(expr)
    if not isinstance(e, Binary) or type(e) is not type(pattern) or \
            not isinstance(e.rhs, Const):
        return []
    assert isinstance(pattern, Binary)  # the shape is a division
    x, c0, y, c1 = shape
    divisor: Const = e.rhs
    splits = _splits(pattern.lhs, e.lhs)
    if splits is None:
        return None
    out: list[tuple[int, Bindings | SplitMatch]] = []
    if split:
        lazy = _lazy_splits(pattern, e)
        out += enumerate(lazy if lazy is not None else _split_matches(pattern, e))
    first = len(out)
    for i, factor in enumerate(splits.factors):
        if c1 is c0:  # one variable for the factor and the divisor: they must agree
            if factor is divisor and accept({c0: factor}):
                out.append((first + i, splits.bindings(i)))
        elif accept({c0: factor, c1: divisor}):
            out.append((first + i, {**splits.bindings(i), c1: divisor}))
    return out


class _Splits:
    """The ways `x * c + y` matches one sum (what the general `_assign` yields, in its order,
    without its generators): the factor `c` of each, and its bindings built on first use."""

    __slots__ = ("factors", "_x", "_c", "_y", "_remaining", "_bases", "_sources", "_built",
                 "_summands", "_sum")

    def __init__(self, x: TermVar, c: ConstVar, y: TermVar, remaining: Terms, e: Expr,
                 sources: list[tuple[Expr, Bindings | None, Terms | None]]) -> None:
        self._x, self._c, self._y = x, c, y
        self._remaining, self._sum, self._sources = remaining, e, sources
        self._bases = list(remaining)  # a single term's split i takes the i-th base
        self._summands: tuple[Expr, ...] | None | bool = False  # False: not looked at yet
        #: c of each split, then the bindings of x and c for one term, or the group of terms
        #: (divided by c on first use)
        self.factors = [factor for factor, _b1, _group in sources]
        self._built: list[Bindings | None] = [None] * len(sources)

    def all(self) -> list[Bindings]:
        """What `_assign(_order([x * c, y], {}), terms, {})` yields, in the same order."""
        return [self.bindings(i) for i in range(len(self.factors))]

    def bindings(self, i: int) -> Bindings:
        """Never mutated by callers."""
        hit = self._built[i]
        if hit is None:
            factor, term, group = self._sources[i]
            if group is None:
                assert isinstance(term, dict)
                base = self._bases[i]
                if self._summands is False:
                    self._summands = _summands_in_order(self._remaining, self._sum)
                if isinstance(self._summands, tuple):
                    rest = _without_term(self._summands, i)
                else:
                    left = dict(self._remaining)
                    del left[base]
                    rest = _expr(left)
                hit = {**term, self._y: rest}  # type: ignore[dict-item]
            else:
                g = factor.value  # type: ignore[attr-defined]
                inner = _expr({k: v // g for k, v in group.items()})
                left = {k: v for k, v in self._remaining.items() if k not in group}
                hit = {self._c: factor, self._x: inner, self._y: _expr(left)}
            self._built[i] = hit
        return hit


_SPLITS: Final[dict[tuple[Expr, Expr], _Splits | None]] = register_cache({})
laws.on_change(_SPLITS.clear)


def _splits(p: Expr, e: Expr) -> _Splits | None:
    key = (p, e)
    if key in _SPLITS:
        return _SPLITS[key]
    hit = None
    shape = _scaled_plus_rest(p) if isinstance(p, Add) else None
    if shape is not None:
        hit = _make_splits(*shape, _terms(e), e)
    if len(_SPLITS) > _CACHE_LIMIT:
        _SPLITS.clear()
    _SPLITS[key] = hit
    return hit


def _make_splits(x: TermVar, c: ConstVar, y: TermVar, remaining: Terms, e: Expr
                 ) -> _Splits | None:
    """`x * c` takes one term, or a group of terms sharing a factor, `y` the rest; None when a
    term is itself a sum (left to the general matcher). When `e` is the sum `_expr` would
    build from `remaining`, the rest after one term is `e`'s other summands, in the same
    order (`_without_term`)."""
    sources: list[tuple[Expr, Bindings | None, Terms | None]] = []
    singles: dict[Expr, tuple[Expr, Expr]] = {}
    for base, coeff in remaining.items():
        term = _scaled(base, coeff)
        if isinstance(term, Add):
            return None
        if isinstance(term, Mul) and isinstance(term.rhs, Const):
            tx, tc = term.lhs, term.rhs
            b1: Bindings = {x: tx, c: tc}
        else:
            tx, tc = term, _ONE
            b1 = {c: _ONE, x: term}
        singles[base] = (tc, tx)
        sources.append((tc, b1, None))
    for g, group in _factor_groups(remaining):
        factor = Const(g)
        if len(group) == 1:  # the same split as the single term, when x and c agree
            (base, coeff), = group.items()
            if singles[base] == (factor, _product(base, coeff // g)):
                continue
        sources.append((factor, None, group))
    return _Splits(x, c, y, remaining, e, sources)


def _assign(patterns: list[Expr], remaining: Terms, b: Bindings) -> Iterator[Bindings]:
    if not patterns:
        if not remaining:
            yield b
        return
    first, rest = patterns[0], patterns[1:]
    if isinstance(first, TermVar) and first not in b and not any(
        isinstance(q, TermVar) and q not in b for q in rest
    ) and not rest:
        yield {**b, first: _expr(remaining)}  # the rest of the sum, possibly 0
        return
    seen: set[tuple[frozenset[tuple[Expr, int]], frozenset[tuple[Expr, Expr]]]] = set()
    last = rest[0] if len(rest) == 1 and isinstance(rest[0], TermVar) else None
    for b1, left in _candidates(first, remaining, b):
        sig = (frozenset(left.items()), frozenset(b1.items()))
        if sig in seen:
            continue
        seen.add(sig)
        if last is not None and last not in b1:
            yield {**b1, last: _expr(left)}  # what `_assign([last], left, b1)` gives
        else:
            yield from _assign(rest, left, b1)


def _without(remaining: Terms, base: Expr, coeff: int) -> Terms | None:
    """`remaining` minus `coeff * base`, splitting like terms of the same sign."""
    have = remaining.get(base, 0)
    if have == coeff:
        out = dict(remaining)
        del out[base]
        return out
    if have * coeff > 0 and abs(have) > abs(coeff):
        out = dict(remaining)
        out[base] = have - coeff
        return out
    return None


def _subtract(remaining: Terms, part: Terms) -> Terms | None:
    out = remaining
    for base, coeff in part.items():
        smaller = _without(out, base, coeff)
        if smaller is None:
            return None
        out = smaller
    return out


def _candidates(p: Expr, remaining: Terms, b: Bindings) -> Iterator[tuple[Bindings, Terms]]:
    """Ways a single pattern summand can take part of `remaining`."""
    # a constant summand takes the sum's constant (or 0)
    if _is_const_pattern(p):
        constant = remaining.get(_ONE, 0)
        for b1 in _match(p, Const(constant), b):
            left = dict(remaining)
            left.pop(_ONE, None)
            yield b1, left
        return
    # a summand over a bound variable takes a multiple of its value
    scaled = _bound_multiple(p, b)
    if scaled is not None:
        var_terms, factor_pattern = scaled
        for k in _factor_candidates(var_terms, remaining, b, factor_pattern):
            left_over = _subtract(remaining, {base: c * k for base, c in var_terms.items()})
            if left_over is None:
                continue
            for b1 in _match(factor_pattern, Const(k), b) if factor_pattern is not None else [b]:
                yield b1, left_over
        return
    # one term of the sum
    need = kinds(p)
    rigid_part = _rigid_summand(p)
    scaled_var = isinstance(p, Mul) and isinstance(p.lhs, TermVar) and \
        isinstance(p.rhs, ConstVar) and p.lhs not in b and p.rhs not in b
    for base, coeff in remaining.items():
        if need & ~kinds(base):
            continue  # p has an operator the term lacks
        term = _scaled(base, coeff)
        left = dict(remaining)
        del left[base]
        if scaled_var and not isinstance(term, Add):
            # `x * c0` with both free, what `_match_product` gives, without its generators:
            # `t * k` binds (t, k); any other term binds itself with the implicit 1
            assert isinstance(p, Mul)
            if isinstance(term, Mul) and isinstance(term.rhs, Const):
                yield {**b, p.lhs: term.lhs, p.rhs: term.rhs}, left
            else:
                yield {**b, p.rhs: _ONE, p.lhs: term}, left
            continue
        if rigid_part is not None and not isinstance(term, Add):
            found = _match_rigid_summand(p, rigid_part, term, b)
            if found is not None:
                yield found, left
            continue
        for b1 in _match(p, term, b):
            yield b1, left
    # a group of terms sharing a factor, for `x * c0`
    if isinstance(p, Mul) and isinstance(p.rhs, ConstVar) and p.rhs not in b:
        rigid = isinstance(p.lhs, _RIGID)
        if rigid:
            # `inner` is a sum, a product or the base of a single term that the loop above
            # already offered with the same bindings (a duplicate `_assign` drops): a division
            # or min/max pattern matches only that base
            return
        for g, group in _factor_groups(remaining):
            inner = _expr({k: v // g for k, v in group.items()})
            left = {k: v for k, v in remaining.items() if k not in group}
            for b1 in _match(p.rhs, Const(g), b):
                for b2 in _match(p.lhs, inner, b1):
                    yield b2, left


def _rigid_summand(p: Expr) -> Expr | None:
    """R when the summand pattern is a rigid pattern R (`_is_rigid`), bare or times a constant
    pattern (`R * c2`): `_match_rigid_summand` then matches it without generators."""
    if isinstance(p, Mul) and _is_const_pattern(p.rhs) and _is_rigid(p.lhs):
        return p.lhs
    return p if _is_rigid(p) else None


def _match_rigid_summand(p: Expr, rigid: Expr, term: Expr, b: Bindings) -> Bindings | None:
    """What `_match(p, term, b)` yields for a summand pattern with `_rigid_summand(p) ==
    rigid` and a term that is not a sum (at most one binding, with the keys in the same order):
    `R * c` against `t * k` binds R's variables from t, then c from k; against any other term
    c from the implicit 1 first, then R's variables from the term; a bare R only a term of
    R's own operator."""
    env = dict(b)
    if p is rigid:
        return env if _match_rigid(p, term, env) else None
    assert isinstance(p, Mul)
    if isinstance(term, Mul):
        if _match_rigid(rigid, term.lhs, env) and _match_rigid(p.rhs, term.rhs, env):
            return env
        if isinstance(term.rhs, Const):
            return None
        env = dict(b)
    if _match_rigid(p.rhs, _ONE, env) and _match_rigid(rigid, term, env):
        return env
    return None


def _bound_multiple(p: Expr, b: Bindings) -> tuple[Terms, Expr | None] | None:
    """For `x` or `x * c` with `x` bound: (terms of x's value, the factor pattern or None)."""
    if isinstance(p, TermVar) and p in b:
        return _terms(b[p]), None
    if isinstance(p, Mul) and isinstance(p.lhs, TermVar) and p.lhs in b and _is_const_pattern(
        p.rhs
    ):
        return _terms(b[p.lhs]), p.rhs
    return None


def _factor_candidates(var_terms: Terms, remaining: Terms, b: Bindings,
                       factor_pattern: Expr | None) -> list[int]:
    if factor_pattern is None:
        return [1]
    if isinstance(factor_pattern, Const):
        return [factor_pattern.value]
    bound = b.get(factor_pattern)
    if isinstance(bound, Const):
        return [bound.value]
    ks: set[int] = set()
    for base, c in var_terms.items():
        have = remaining.get(base, 0)
        if c and have and have % c == 0:
            ks.add(have // c)
    consts = [v.value for v in b.values() if isinstance(v, Const) and v.value]
    for x in consts:
        for y in consts:
            if x % y == 0:
                ks.update((x // y, -(x // y)))
    return sorted(k for k in ks if k)


def _factor_groups(remaining: Terms) -> list[tuple[int, Terms]]:
    """(factor, terms divisible by it) for plausible factors, largest groups first."""
    coeffs = [abs(c) for base, c in remaining.items() if base is not _ONE]
    factors: set[int] = set()
    n = len(coeffs)
    for i in range(n):
        a = coeffs[i]
        factors.add(a)
        for j in range(i + 1, n):
            factors.add(gcd(a, coeffs[j]))
    factors.discard(0)
    factors.discard(1)
    out = []
    for g in sorted(factors, reverse=True)[:_MAX_FACTORS]:
        group = {k: v for k, v in remaining.items() if k is not _ONE and v % g == 0}
        if group:
            out.append((g, group))
    return out
