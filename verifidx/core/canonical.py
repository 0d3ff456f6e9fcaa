"""Canonical form of sums: the laws of `rules/canonical.rules`, applied by a linear normaliser.

A sum is a multiset of (base, coefficient) pairs plus a constant. `canon` flattens nested sums,
distributes constant multipliers over sums, combines like terms, drops zero terms and orders the
summands deterministically. Each step is an instance of a proven law (associativity and
commutativity of `+`, `x * c0 + x * c1 => x * (c0 + c1)`, `(x + y) * c0 => x * c0 + y * c0`,
`x * 0 => 0`, `x + 0 => x`, and the commutativity of `min` and `max`); the test suite checks the
normaliser against evaluation. `canon` applies them only while all are proven
(`verifidx.core.laws`).

Term order follows XLA's printer so that simplified maps print as XLA prints them: products,
then `mod`, then `floordiv`, then bare variables (dimensions, range, runtime), constant last.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from . import laws
from .expr import (
    Add,
    CeilDiv,
    Const,
    Dim,
    Expr,
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
    add_node,
    const_node,
    mul,
    mul_node,
    register_cache,
)

_RANK: Final = {Mul: 0, Mod: 1, FloorDiv: 2, CeilDiv: 3, Min: 4, Max: 5, Add: 7}
_VAR_RANK: Final = {Dim: 0, Symbol: 1, RtVar: 2}
_KEYS: Final[dict[Expr, tuple[object, ...]]] = register_cache({})
_CANON: Final[dict[Expr, Expr]] = register_cache({})
laws.on_change(_CANON.clear)


def order_key(e: Expr) -> tuple[object, ...]:
    """Total order on expressions; summands are sorted by it."""
    hit = _KEYS.get(e)
    if hit is not None:
        return hit
    if isinstance(e, Const):
        key: tuple[object, ...] = (8, e.value)
    elif isinstance(e, Variable):
        if type(e) is Size:  # after the index variables, by name
            key = (6, 4, e.name)  # type: ignore[attr-defined]
        else:
            key = (6, _VAR_RANK.get(type(e), 3), e.index)
    elif isinstance(e, Add):
        key = (7, tuple(order_key(t) for t in e.terms))
    elif type(e) in _RANK:
        key = (_RANK[type(e)], order_key(e.lhs), order_key(e.rhs))  # type: ignore[attr-defined]
    else:  # pattern nodes of the rule language
        key = (9, str(e))
    _KEYS[e] = key
    return key


def linear_form(e: Expr) -> tuple[dict[Expr, int], int]:
    """(base -> coefficient, constant) of an expression seen as a sum of scaled bases.
    Bases are canonical and never sums or constant multiples. Remembered per term (the
    index, the matcher and canon ask about one dividend several times); each caller gets
    its own dict."""
    hit = _LINEAR.get(e)
    if hit is None:
        coeffs: dict[Expr, int] = {}
        constant = _collect(e, 1, coeffs)
        hit = ({b: c for b, c in coeffs.items() if c != 0}, constant)
        if len(_LINEAR) > _LINEAR_LIMIT:
            _LINEAR.clear()
        _LINEAR[e] = hit
    return dict(hit[0]), hit[1]


_LINEAR: Final[dict[Expr, tuple[dict[Expr, int], int]]] = register_cache({})
_LINEAR_LIMIT: Final = 200_000


def _collect(t: Expr, scale: int, coeffs: dict[Expr, int]) -> int:
    """Adds `t * scale` to `coeffs`; returns its constant part."""
    while scale:
        if isinstance(t, Const):
            return t.value * scale
        if isinstance(t, Add):
            constant = 0
            for s in t.terms:
                constant += _collect(s, scale, coeffs)
            return constant
        if isinstance(t, Mul) and isinstance(t.rhs, Const):
            scale *= t.rhs.value
            t = t.lhs
            continue
        coeffs[t] = coeffs.get(t, 0) + scale
        break
    return 0


def from_linear(coeffs: dict[Expr, int] | Iterable[tuple[Expr, int]], constant: int = 0) -> Expr:
    """Build the canonical sum of scaled bases (bases must already be canonical)."""
    items = coeffs.items() if isinstance(coeffs, dict) else coeffs
    mul_one = laws.ON.mul_one
    scaled = []
    for b, c in items:
        if c == 0:
            continue
        if isinstance(b, Const) or (isinstance(b, Mul) and isinstance(b.rhs, Const)):
            scaled.append(mul(b, c))  # folded by the constructor
        elif c == 1 and mul_one:
            scaled.append(b)  # what `mul(b, 1)` gives, without the call
        else:
            scaled.append(mul_node(b, const_node(c)))  # what `mul(b, c)` gives for any other base
    terms = sorted(scaled, key=order_key)
    if constant:
        terms.append(const_node(constant))
    if not terms:
        return const_node(0)
    return terms[0] if len(terms) == 1 else add_node(terms)


def canonical_sum(terms: Iterable[Expr]) -> Expr:
    """`canon(add(*terms))`, without building the sum as written: a reader of another
    compiler's sums (verifidx.clients.sympy_bridge) hands the simplifier canonical sums, which it
    finds canonical at once. `add(*terms)` unless every law canon relies on is proven."""
    if not laws.ON.canonical_sums:
        return add(*terms)
    coeffs: dict[Expr, int] = {}
    constant = 0
    for t in terms:  # the linear form of the flattened sum of canonical terms
        constant += _collect(canon(t), 1, coeffs)
    out = from_linear(coeffs, constant)  # bases of canonical terms are canonical
    _CANON[out] = out
    return out


def canonical_product(a: Expr, b: Expr) -> Expr:
    """`canon(mul(a, b))` of canonical factors, recorded as canonical: a product by a factor
    other than a constant is canonical as built, so the reader's products
    (verifidx.clients.sympy_bridge) need no walk of their own. A factor not known to be canonical is
    put in canonical form first. `mul(a, b)` unless every law canon relies on is proven."""
    if not laws.ON.canonical_sums:
        return mul(a, b)
    if not isinstance(a, (Variable, Const)):  # leaves are canonical; canon looks up the rest
        a = canon(a)
    if not isinstance(b, (Variable, Const)):
        b = canon(b)
    out = mul(a, b)
    hit = _CANON.get(out)
    if hit is not None:
        return hit
    if isinstance(out, Mul) and out.lhs is a and out.rhs is b and (
            not isinstance(b, Const) or _already_canonical(out)):
        _CANON[out] = out
        return out
    return canon(out)


def canon(e: Expr) -> Expr:
    """Canonical form, bottom-up. Pure and memoised (expressions are interned). The identity
    unless every law it relies on is proven (`verifidx.core.laws`, CANONICAL_SUM_LAWS)."""
    if not laws.ON.canonical_sums:
        return e
    hit = _CANON.get(e)
    if hit is not None:
        return hit
    kids = e.children
    node = e if not kids else e.map_children(canon)
    if isinstance(node, (Add, Mul)) and (
        isinstance(node, Add) or isinstance(node.rhs, Const)
    ):
        if _already_canonical(node):
            out: Expr = node  # what `from_linear(*linear_form(node))` would rebuild, unchanged
        else:
            coeffs, constant = linear_form(node)
            out = from_linear(coeffs, constant)
    elif isinstance(node, (Min, Max)) and order_key(node.rhs) < order_key(node.lhs):
        out = type(node)(node.rhs, node.lhs)  # min and max commute
    else:
        out = node
    _CANON[e] = out
    _CANON[out] = out
    return out




def _is_base(b: Expr) -> bool:
    """A base of `linear_form`: never a constant, a sum or a constant multiple."""
    return not (isinstance(b, (Const, Add)) or (isinstance(b, Mul) and isinstance(b.rhs, Const)))


def _already_canonical(node: Expr) -> bool:
    """True when `node` (over canonical children) is the canonical sum of its own linear form:
    distinct bases, each scaled by a coefficient other than 0 and 1 or bare, in `order_key`
    order, and at most one constant, nonzero and last. Such sums are most of what `canon`
    sees (a rewrite changes one term of a canonical sum), and need no rebuilding."""
    if isinstance(node, Mul):
        rhs = node.rhs
        return isinstance(rhs, Const) and rhs.value not in (0, 1) and _is_base(node.lhs)
    if not isinstance(node, Add):
        return False
    terms = node.terms
    last = len(terms) - 1
    seen: set[Expr] = set()
    previous: tuple[object, ...] | None = None
    for i, t in enumerate(terms):
        if isinstance(t, Const):
            if i != last or t.value == 0:
                return False
            continue
        if isinstance(t, Mul) and isinstance(t.rhs, Const):
            base = t.lhs
            if t.rhs.value in (0, 1):
                return False
        else:
            base = t
        if not _is_base(base) or base in seen:
            return False
        seen.add(base)
        key = order_key(t)
        if previous is not None and not previous < key:
            return False
        previous = key
    return True
