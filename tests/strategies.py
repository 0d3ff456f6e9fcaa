"""Hypothesis strategies for expressions and maps over small domains (brute force is cheap)."""

from __future__ import annotations

from hypothesis import strategies as st

from verifidx.core.expr import Dim, Expr, RtVar, Symbol, add, floordiv, maximum, minimum, mod, mul
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval


def expressions(num_dims: int = 2, num_syms: int = 1, num_rts: int = 0, max_leaves: int = 12,
                minmax: bool = True) -> st.SearchStrategy[Expr]:
    """Quasi-affine expressions with constant divisors (always defined)."""
    leaves: list[st.SearchStrategy[Expr]] = [st.integers(-20, 20).map(lambda c: add(c))]
    if num_dims:
        leaves.append(st.integers(0, num_dims - 1).map(Dim))
    if num_syms:
        leaves.append(st.integers(0, num_syms - 1).map(Symbol))
    if num_rts:
        leaves.append(st.integers(0, num_rts - 1).map(RtVar))
    base = st.one_of(*leaves)

    def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        nonzero = st.integers(-9, 9).filter(lambda c: c != 0)
        options = [
            st.tuples(children, children).map(lambda t: add(*t)),
            st.tuples(children, children).map(lambda t: t[0] - t[1]),
            st.tuples(children, st.integers(-6, 6)).map(lambda t: mul(*t)),
            st.tuples(children, nonzero).map(lambda t: floordiv(*t)),
            st.tuples(children, st.integers(1, 9)).map(lambda t: mod(*t)),
        ]
        if minmax:
            options.append(st.tuples(children, children).map(lambda t: minimum(*t)))
            options.append(st.tuples(children, children).map(lambda t: maximum(*t)))
        return st.one_of(*options)

    return st.recursive(base, extend, max_leaves=max_leaves)


def intervals(lo: int = -6, hi: int = 9, max_size: int = 8) -> st.SearchStrategy[Interval]:
    return st.integers(lo, hi).flatmap(
        lambda a: st.integers(a, min(hi, a + max_size - 1)).map(lambda b: Interval(a, b)))


@st.composite
def maps(draw: st.DrawFn, max_dims: int = 2, max_syms: int = 2, max_rts: int = 1,
         max_results: int = 2, max_constraints: int = 2, minmax: bool = True,
         num_dims: int | None = None, num_results: int | None = None,
         num_rts: int | None = None) -> IndexingMap:
    """Random maps whose full box has at most a few thousand points."""
    nd = draw(st.integers(0, max_dims)) if num_dims is None else num_dims
    ns = draw(st.integers(0, max_syms))
    nr = draw(st.integers(0, max_rts)) if num_rts is None else num_rts
    exprs = expressions(nd, ns, nr, max_leaves=6, minmax=minmax)
    if num_results is None:
        results = draw(st.lists(exprs, min_size=0 if nd else 1, max_size=max_results))
    else:
        results = draw(st.lists(exprs, min_size=num_results, max_size=num_results))
    dims = [Var(draw(intervals(-3, 6, 6))) for _ in range(nd)]
    syms = [Var(draw(intervals(-3, 6, 4))) for _ in range(ns)]
    rts = [Var(draw(intervals(0, 4, 3))) for _ in range(nr)]
    cons = draw(st.lists(st.tuples(exprs, intervals(-10, 10, 12)), max_size=max_constraints))
    return IndexingMap.build(results, dims, syms, rts, cons)


@st.composite
def map_pairs(draw: st.DrawFn, **kw: int) -> tuple[IndexingMap, IndexingMap]:
    """Two maps with the same numbers of dims, results and runtime variables."""
    f = draw(maps(**kw))
    g = draw(maps(num_dims=f.num_dims, num_results=f.num_results, num_rts=f.num_rt_vars, **kw))
    return f, g


_LIN_VARS = [Dim(0), Dim(1), Symbol(0)]
_COEFFS = [1, 2, 3, 4, 6, 8, -1, -2, 12, 16]


@st.composite
def _linear(draw: st.DrawFn) -> Expr:
    n = draw(st.integers(1, 3))
    terms = [mul(draw(st.sampled_from(_LIN_VARS)), draw(st.sampled_from(_COEFFS)))
             for _ in range(n)]
    return add(*terms, draw(st.integers(-9, 9)))


@st.composite
def quasi_affine(draw: st.DrawFn, depth: int = 2) -> Expr:
    """Reshape-like expressions: scaled sums of floordivs and mods of scaled sums."""
    if depth == 0 or draw(st.booleans()):
        return draw(_linear())
    inner = [draw(quasi_affine(depth - 1)) for _ in range(draw(st.integers(1, 3)))]
    s = add(*[mul(x, draw(st.sampled_from([1, 2, 3, 4, -1, 8, 16]))) for x in inner])
    k = draw(st.sampled_from([2, 3, 4, 6, 8, 16, -2, -3]))
    op = draw(st.sampled_from(["div", "mod", "sum"]))
    if op == "div":
        return floordiv(s, k)
    if op == "mod":
        return mod(s, abs(k))
    return s


@st.composite
def reshape_like_maps(draw: st.DrawFn) -> IndexingMap:
    """Maps over (d0, d1)[s0] with quasi-affine results and at most one constraint."""
    results = [draw(quasi_affine()) for _ in range(draw(st.integers(1, 2)))]
    dims = [Var(Interval(draw(st.integers(-3, 2)), draw(st.integers(3, 12)))) for _ in range(2)]
    syms = [Var(Interval(0, draw(st.integers(0, 9))))]
    cons = []
    if draw(st.booleans()):
        lo = draw(st.integers(-20, 5))
        cons.append((draw(quasi_affine(1)), Interval(lo, lo + draw(st.integers(0, 40)))))
    return IndexingMap.build(results, dims, syms, [], cons)
