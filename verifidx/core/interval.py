"""Inclusive integer intervals and sound interval evaluation of expressions.

Soundness is the contract: for every assignment of the variables inside their intervals at which an
expression is defined, its value lies in the interval `range_of` returns. Tightness is a bonus;
sums are evaluated term by term with the constant multipliers pulled out, `mod` and `floordiv`
recognise when their operand stays within one period.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from .expr import (
    Add,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    Variable,
    ceil_div,
    floor_div,
)


@dataclass(frozen=True, slots=True)
class Interval:
    """`[lo, hi]`, both ends included; `lo > hi` is the empty interval."""

    lo: int
    hi: int

    def __init__(self, lo: int, hi: int) -> None:
        # written out (the dataclass keeps it): compiled by mypyc, the generated one would run
        # as interpreted code on every interval the simplifier builds
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def __reduce__(self) -> tuple[object, ...]:
        # pickled through the constructor: compiled by mypyc, a frozen dataclass's default
        # unpickling would assign its fields, which it forbids
        return (Interval, (self.lo, self.hi))

    @staticmethod
    def point(v: int) -> Interval:
        return Interval(v, v)

    @property
    def is_empty(self) -> bool:
        return self.lo > self.hi

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    @property
    def size(self) -> int:
        return max(0, self.hi - self.lo + 1)

    def __contains__(self, v: object) -> bool:
        return isinstance(v, int) and self.lo <= v <= self.hi

    def contains(self, other: Interval) -> bool:
        return other.is_empty or (self.lo <= other.lo and other.hi <= self.hi)

    def intersect(self, other: Interval) -> Interval:
        return Interval(max(self.lo, other.lo), min(self.hi, other.hi))

    def union(self, other: Interval) -> Interval:
        if self.is_empty:
            return other
        if other.is_empty:
            return self
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def __add__(self, other: Interval) -> Interval:
        if self.is_empty or other.is_empty:
            return EMPTY
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> Interval:
        return EMPTY if self.is_empty else Interval(-self.hi, -self.lo)

    def scale(self, c: int) -> Interval:
        if self.is_empty:
            return EMPTY
        a, b = self.lo * c, self.hi * c
        return Interval(min(a, b), max(a, b))

    def __mul__(self, other: Interval) -> Interval:
        if self.is_empty or other.is_empty:
            return EMPTY
        corners = [self.lo * other.lo, self.lo * other.hi, self.hi * other.lo, self.hi * other.hi]
        return Interval(min(corners), max(corners))

    def __str__(self) -> str:
        return f"[{self.lo}, {self.hi}]"


EMPTY: Final = Interval(1, 0)


def _nonzero_parts(d: Interval) -> list[Interval]:
    parts = []
    if d.lo <= -1:
        parts.append(Interval(d.lo, min(d.hi, -1)))
    if d.hi >= 1:
        parts.append(Interval(max(d.lo, 1), d.hi))
    return parts


def _div_range(n: Interval, d: Interval, op: type[Expr]) -> Interval:
    """Range of n / d over the non-zero divisors in d (floor or ceil); monotone per sign."""
    fn = floor_div if op is FloorDiv else ceil_div
    out = EMPTY
    if n.is_empty:
        return out
    for part in _nonzero_parts(d):
        vals = [fn(a, b) for a in (n.lo, n.hi) for b in (part.lo, part.hi)]
        out = out.union(Interval(min(vals), max(vals)))
    return out


def _mod_range(n: Interval, d: Interval) -> Interval:
    if d.hi <= 0 or n.is_empty:
        return EMPTY  # undefined everywhere: no value
    lo_div = max(d.lo, 1)
    if lo_div == d.hi:
        c = d.hi
        q_lo, q_hi = n.lo // c, n.hi // c
        if q_lo == q_hi:
            return Interval(n.lo - q_lo * c, n.hi - q_lo * c)
        return Interval(0, c - 1)
    if n.lo >= 0:
        return Interval(0, min(n.hi, d.hi - 1))
    return Interval(0, d.hi - 1)


def scaled_sum_range(terms: Mapping[Expr, int],
                     base_range: Callable[[Expr], Interval | None]) -> Interval | None:
    """Interval arithmetic's range of `sum(c * t)` over `terms` (t -> c; a constant t counts
    as its value), from the ranges of the bases: what `range_of` gives the built sum. None
    when a base has no range or an empty one."""
    lo = hi = 0
    for t, c in terms.items():
        if isinstance(t, Const):
            lo += c * t.value
            hi += c * t.value
            continue
        r = base_range(t)
        if r is None or r.lo > r.hi:
            return None
        if c >= 0:
            lo, hi = lo + r.lo * c, hi + r.hi * c
        else:
            lo, hi = lo + r.hi * c, hi + r.lo * c
    return Interval(lo, hi)


def range_of(expr: Expr, bounds: Mapping[Variable, Interval],
             cache: dict[Expr, Interval] | None = None) -> Interval:
    """Sound interval of `expr` when each variable lies in `bounds` (missing: error). `cache`:
    ranges of subterms under the same `bounds`, read and filled (callers that ask about many
    terms sharing subterms pass one)."""
    return _range(expr, bounds, {} if cache is None else cache)


def _range(e: Expr, bounds: Mapping[Variable, Interval], cache: dict[Expr, Interval]
           ) -> Interval:
    hit = cache.get(e)
    if hit is not None:
        return hit
    if isinstance(e, Variable):
        r = bounds[e]
    elif isinstance(e, Const):
        r = Interval(e.value, e.value)
    elif isinstance(e, Add):
        # canonical sums are mostly `x * c` terms: add the ends, one Interval at the end
        lo = hi = 0
        empty = False
        for t in e.terms:
            if isinstance(t, Mul) and isinstance(t.rhs, Const):
                x, c = _range(t.lhs, bounds, cache), t.rhs.value
                if c >= 0:
                    t_lo, t_hi = x.lo * c, x.hi * c
                else:
                    t_lo, t_hi = x.hi * c, x.lo * c
                empty = empty or x.lo > x.hi
            else:
                x = _range(t, bounds, cache)
                t_lo, t_hi = x.lo, x.hi
                empty = empty or t_lo > t_hi
            lo += t_lo
            hi += t_hi
        r = EMPTY if empty else Interval(lo, hi)
    else:
        r = _operation_range(e, bounds, cache)
    cache[e] = r
    return r


def _operation_range(e: Expr, bounds: Mapping[Variable, Interval],
                     cache: dict[Expr, Interval]) -> Interval:
    def go(x: Expr) -> Interval:
        return _range(x, bounds, cache)

    if isinstance(e, Mul):
        if isinstance(e.rhs, Const):
            return go(e.lhs).scale(e.rhs.value)
        if e.lhs is e.rhs:
            r = go(e.lhs)
            if r.is_empty:
                return EMPTY
            sq = r * r
            if r.lo <= 0 <= r.hi:
                return Interval(0, sq.hi)
            return Interval(min(r.lo * r.lo, r.hi * r.hi), sq.hi)
        return go(e.lhs) * go(e.rhs)
    if isinstance(e, (FloorDiv, CeilDiv)):
        if isinstance(e.rhs, Const) and e.rhs.value:
            # a constant divisor (every map's): the quotient is monotone in the dividend
            n, c = go(e.lhs), e.rhs.value
            if n.lo > n.hi:
                return EMPTY
            fn = floor_div if isinstance(e, FloorDiv) else ceil_div
            q_lo, q_hi = fn(n.lo, c), fn(n.hi, c)
            return Interval(q_lo, q_hi) if q_lo <= q_hi else Interval(q_hi, q_lo)
        return _div_range(go(e.lhs), go(e.rhs), type(e))
    if isinstance(e, Mod):
        return _mod_range(go(e.lhs), go(e.rhs))
    if isinstance(e, Min):
        a, b = go(e.lhs), go(e.rhs)
        if a.is_empty or b.is_empty:
            return EMPTY
        return Interval(min(a.lo, b.lo), min(a.hi, b.hi))
    if isinstance(e, Max):
        a, b = go(e.lhs), go(e.rhs)
        if a.is_empty or b.is_empty:
            return EMPTY
        return Interval(max(a.lo, b.lo), max(a.hi, b.hi))
    raise TypeError(f"unknown expression node {type(e).__name__}")
