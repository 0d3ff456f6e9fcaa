"""Constraints on tile sizes: a disjunction of conjunctions of `expr in [lo, hi]`.

Symbolic tiles are only valid for some tile sizes (a `mod` of the tile needs the size to divide or
be a multiple of the modulus; a merged reshape needs leading sizes 1 and full inner sizes). XLA
writes these as a disjunctive normal form and prints it sorted; this module keeps the same shape so
the text matches, and evaluates it exactly so proofs and tests can use it.

A conjunction of disjunctions multiplies their lengths (`k` results `d0 mod p` give `2**k`
alternatives), so `&` deduplicates as it goes and works within a budget counted in merges, not
time: past `MAX_MERGES` merges in one `&`, or `MAX_CONJUNCTIONS` alternatives after it, it raises
`ConstraintsTooComplex` (a tile then is `NoTile("constraints too complex: ...")`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...core.errors import VerifidxError
from ...core.expr import Const, Expr, Variable
from ...core.interval import Interval
from ...core.syntax import print_expr

Conjunction = tuple[tuple[Expr, Interval], ...]

#: Alternatives one constraint expression may keep: each is at least one proof query, and the
#: XLA conformance vectors need at most 16.
MAX_CONJUNCTIONS = 256
#: Pairs of alternatives one `&` may merge before deduplication.
MAX_MERGES = 4096


class ConstraintsTooComplex(VerifidxError):
    """The tile-size constraints grew past the budget (`MAX_MERGES`, `MAX_CONJUNCTIONS`)."""


def _merge(a: Conjunction, b: Conjunction) -> Conjunction | None:
    """Both conjunctions at once; None when two bounds on one expression do not meet."""
    merged: dict[Expr, Interval] = dict(a)
    for e, iv in b:
        old = merged.get(e)
        if old is not None:
            iv = old.intersect(iv)
            if iv.is_empty:
                return None
        merged[e] = iv
    return tuple(merged.items())


@dataclass(frozen=True)
class ConstraintExpression:
    """`conjunctions == ((),)` is always satisfied, `()` is unsatisfiable."""

    conjunctions: tuple[Conjunction, ...]

    @staticmethod
    def always() -> ConstraintExpression:
        return ConstraintExpression(((),))

    @staticmethod
    def never() -> ConstraintExpression:
        return ConstraintExpression(())

    @staticmethod
    def of(expr: Expr, lo: int, hi: int) -> ConstraintExpression:
        return ConstraintExpression((((expr, Interval(lo, hi)),),))

    @property
    def is_always_satisfied(self) -> bool:
        return any(not c for c in self.conjunctions)

    @property
    def is_unsatisfiable(self) -> bool:
        return not self.conjunctions

    def __and__(self, other: ConstraintExpression) -> ConstraintExpression:
        """Both; raises ConstraintsTooComplex past the budget (see the module docstring)."""
        if self.is_always_satisfied or other == self:
            return other
        if other.is_always_satisfied:
            return self
        merges = len(self.conjunctions) * len(other.conjunctions)
        if merges > MAX_MERGES:
            raise ConstraintsTooComplex(
                f"combining {len(self.conjunctions)} and {len(other.conjunctions)} alternatives "
                f"takes {merges} merges, past the budget of {MAX_MERGES}")
        out: list[Conjunction] = []
        seen: set[frozenset[tuple[Expr, Interval]]] = set()
        for a in self.conjunctions:
            for b in other.conjunctions:
                m = _merge(a, b)
                if m is not None and frozenset(m) not in seen:
                    seen.add(frozenset(m))
                    out.append(m)
        return ConstraintExpression(tuple(out)).simplified()

    def __or__(self, other: ConstraintExpression) -> ConstraintExpression:
        if self.is_always_satisfied or other.is_always_satisfied:
            return ConstraintExpression.always()
        out = self.conjunctions + other.conjunctions
        if len(out) > MAX_MERGES:
            raise ConstraintsTooComplex(f"{len(out)} alternatives, past the budget of "
                                        f"{MAX_MERGES}")
        return ConstraintExpression(out)

    def simplified(self) -> ConstraintExpression:
        """Decide constant conjuncts, drop repeated and absorbed conjunctions (`a || a && b` is
        `a`); a conjunction left empty makes the whole expression always satisfied."""
        out: list[Conjunction] = []
        seen: set[frozenset[tuple[Expr, Interval]]] = set()
        for conj in self.conjunctions:
            kept: list[tuple[Expr, Interval]] = []
            feasible = True
            for e, iv in conj:
                if isinstance(e, Const):
                    if e.value not in iv:
                        feasible = False
                        break
                    continue
                kept.append((e, iv))
            if not feasible:
                continue
            if not kept:
                return ConstraintExpression.always()
            key = frozenset(kept)
            if key not in seen:
                seen.add(key)
                out.append(tuple(kept))
        if len(out) > MAX_CONJUNCTIONS:
            raise ConstraintsTooComplex(f"{len(out)} distinct alternatives, past the budget of "
                                        f"{MAX_CONJUNCTIONS}")
        # absorption: a conjunction that includes all the conjuncts of another adds nothing
        sets = [frozenset(c) for c in out]
        return ConstraintExpression(tuple(
            c for c, cs in zip(out, sets) if not any(o < cs for o in sets)))

    def holds(self, env: Mapping[Expr, int]) -> bool:
        return any(all(e.evaluate(env) in iv for e, iv in conj) for conj in self.conjunctions)

    def to_text(self, names: Mapping[Variable, str] | None = None) -> str:
        """XLA's printing: conjuncts sorted as strings and joined by ` && `, conjunctions sorted
        and joined by ` || `."""
        if self.is_always_satisfied:
            return "always satisfied"
        if self.is_unsatisfiable:
            return "unsatisfiable"
        texts = sorted(
            " && ".join(sorted(f"{print_expr(e, names)} in [{iv.lo}, {iv.hi}]" for e, iv in c))
            for c in self.conjunctions)
        return " || ".join(texts)

    def __str__(self) -> str:
        return self.to_text()
