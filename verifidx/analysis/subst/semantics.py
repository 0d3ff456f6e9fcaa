"""What a graph of data-movement ops computes, written once for two kinds of numbers.

Every output element of such a graph is one element of one input (or the padding scalar), so a
graph *is* a function from output index to (input, index): its composed indexing map. This
module computes, for a node, its output shape, the conditions under which it is well formed,
and that function as guarded pieces `(guard, input name, index)`. The arithmetic goes through
a backend: `SOLVER` (sizes are solver terms of `verifidx.solve.smt_terms`, for proofs; this package
never imports Z3 itself) or `INTS` (plain integers, for concrete graphs and for checking
counterexamples).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifidx.analysis.subst.model import Node, SizeList, evaluate
from verifidx.solve import smt_terms

Piece = tuple[Any, str, tuple[Any, ...]]
"""(guard, input name, index read); the guards of one node's pieces partition its domain."""


class IllFormed(Exception):
    """The graph is ill formed for every size (a rank mismatch, a bad permutation)."""


@dataclass(frozen=True)
class Backend:
    true: Any
    false: Any
    and_: Callable[..., Any]
    or_: Callable[..., Any]
    not_: Callable[[Any], Any]
    ite: Callable[[Any, Any, Any], Any]
    div: Callable[[Any, Any], Any]  # floor division, divisor > 0
    mod: Callable[[Any, Any], Any]  # in [0, divisor), divisor > 0


SOLVER = Backend(smt_terms.TRUE, smt_terms.FALSE, smt_terms.and_, smt_terms.or_, smt_terms.not_,
                 smt_terms.ite, smt_terms.floor_div, smt_terms.mod)
# Plain integers. A divisor <= 0 only occurs in an ill-formed graph (e.g. a slice stride a parameter
# may set to 0), whose well-formedness conditions are false: like the solver's unspecified
# division by zero, the value is then irrelevant, so it is 0 rather than an exception.
INTS = Backend(True, False, lambda *c: all(c), lambda *c: any(c), lambda c: not c,
               lambda c, a, b: a if c else b, lambda a, b: a // b if b > 0 else 0,
               lambda a, b: a % b if b > 0 else 0)


def perm_value(expr: object, perms: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    """A permutation expression under an assignment of the named permutations."""
    if isinstance(expr, SizeList):
        if not all(isinstance(e, int) for e in expr.items):
            raise IllFormed("a literal permutation lists integers")
        return tuple(expr.items)  # type: ignore[arg-type]
    if isinstance(expr, str):
        return perms[expr]
    assert isinstance(expr, tuple)
    if expr[0] == "inverse":
        p = perm_value(expr[1], perms)
        inv = [0] * len(p)
        for k, v in enumerate(p):
            inv[v] = k
        return tuple(inv)
    p, q = perm_value(expr[1], perms), perm_value(expr[2], perms)
    if len(p) != len(q):
        raise IllFormed("compose() of permutations of different ranks")
    return tuple(p[k] for k in q)


def static_ints(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, SizeList) or not all(isinstance(e, int) for e in value.items):
        raise IllFormed(f"{what} must list integers")
    return tuple(value.items)  # type: ignore[arg-type]


class Graph:
    """Shapes, well-formedness and read functions of the nodes of one graph."""

    def __init__(self, backend: Backend, env: Mapping[str, Any],
                 lists: Mapping[str, Sequence[str]], input_shapes: Mapping[str, SizeList],
                 perms: Mapping[str, tuple[int, ...]]) -> None:
        self.b = backend
        self.env = env
        self.lists = lists  # variadic list name -> the element names at this rank
        self.input_shapes = input_shapes
        self.perms = perms
        self._shapes: dict[int, tuple[list[Any], list[Any]]] = {}

    def sizes(self, sl: object) -> list[Any]:
        assert isinstance(sl, SizeList)
        if sl.variadic is not None:
            return [self.env[n] for n in self.lists[sl.variadic]]
        return [evaluate(e, self.env) for e in sl.items]

    def shape(self, n: Node) -> list[Any]:
        return self._analyse(n)[0]

    def well_formed(self, n: Node) -> list[Any]:
        """Conditions, over the whole graph below `n`, for it to be a valid HLO graph."""
        out: list[Any] = []
        for m in n.nodes():
            out += self._analyse(m)[1]
        return out

    def _analyse(self, n: Node) -> tuple[list[Any], list[Any]]:
        hit = self._shapes.get(id(n))
        if hit is None:
            hit = self._shapes[id(n)] = self._shape_of(n)
        return hit

    def _shape_of(self, n: Node) -> tuple[list[Any], list[Any]]:
        b = self.b
        if n.op == "input":
            return self.sizes(self.input_shapes[n.name]), []
        xs = self.shape(n.args[0])
        r = len(xs)
        if n.op == "copy":
            return xs, []
        if n.op == "transpose":
            p = perm_value(n.attr("perm"), self.perms)
            if sorted(p) != list(range(r)):
                raise IllFormed(f"transpose by {list(p)} of a rank-{r} value")
            return [xs[k] for k in p], []
        if n.op == "reverse":
            dims = static_ints(n.attr("dims"), "reverse dims")
            if not all(0 <= d < r for d in dims):
                raise IllFormed("reverse dims out of range")
            return xs, []
        if n.op == "reshape":
            out = self.sizes(n.attr("shape"))
            return out, [*(s >= 0 for s in out), _prod(out) == _prod(xs)]
        if n.op == "broadcast":
            out = self.sizes(n.attr("shape"))
            dims = static_ints(n.attr("dims"), "broadcast dims")
            if len(dims) != r or len(set(dims)) != r or not all(0 <= d < len(out) for d in dims):
                raise IllFormed("broadcast dims do not fit")
            return out, [*(s >= 0 for s in out), *(out[d] == x for d, x in zip(dims, xs))]
        if n.op == "slice":
            start, limit = self.sizes(n.attr("start")), self.sizes(n.attr("limit"))
            stride = self.sizes(n.attr("stride")) if n.attr("stride") is not None else [1] * r
            if not len(start) == len(limit) == len(stride) == r:
                raise IllFormed("slice bounds of the wrong rank")
            conds = [c for s, lim, st, x in zip(start, limit, stride, xs)
                     for c in (s >= 0, s <= lim, lim <= x, st >= 1)]
            return [b.div(lim - s + st - 1, st) for s, lim, st in zip(start, limit, stride)], \
                conds
        if n.op == "pad":
            if self.shape(n.args[1]):
                raise IllFormed("the padding value must be a scalar")
            low, high = self.sizes(n.attr("low")), self.sizes(n.attr("high"))
            interior = self.sizes(n.attr("interior")) if n.attr("interior") is not None \
                else [0] * r
            if not len(low) == len(high) == len(interior) == r:
                raise IllFormed("padding of the wrong rank")
            out = [lo + hi + x + b.ite(x > 0, x - 1, 0) * it
                   for lo, hi, it, x in zip(low, high, interior, xs)]
            return out, [*(it >= 0 for it in interior), *(s >= 0 for s in out)]
        if n.op == "concatenate":
            d = n.attr("dim")
            assert isinstance(d, int)
            shapes = [self.shape(a) for a in n.args]
            if d >= r or any(len(s) != r for s in shapes):
                raise IllFormed("concatenate of values of different ranks")
            conds = [s[k] == xs[k] for s in shapes[1:] for k in range(r) if k != d]
            out = list(xs)
            out[d] = sum(s[d] for s in shapes[1:]) + xs[d]
            return out, conds
        raise IllFormed(f"unknown op {n.op}")

    # -- reads -----------------------------------------------------------------------------

    def read(self, n: Node, idx: Sequence[Any], guard: Any = None) -> list[Piece]:
        b = self.b
        g = b.true if guard is None else guard
        if n.op == "input":
            return [(g, n.name, tuple(idx))]
        x = n.args[0]
        xs = self.shape(x)
        if n.op == "copy":
            return self.read(x, idx, g)
        if n.op == "transpose":
            p = perm_value(n.attr("perm"), self.perms)
            j: list[Any] = [0] * len(p)
            for k, src in enumerate(p):
                j[src] = idx[k]
            return self.read(x, j, g)
        if n.op == "reverse":
            flipped = set(static_ints(n.attr("dims"), "reverse dims"))
            return self.read(x, [xs[k] - 1 - i if k in flipped else i
                                 for k, i in enumerate(idx)], g)
        if n.op == "reshape":
            return self.read(x, _delinearize(b, _linearize(idx, self.shape(n)), xs), g)
        if n.op == "broadcast":
            dims = static_ints(n.attr("dims"), "broadcast dims")
            return self.read(x, [idx[d] for d in dims], g)
        if n.op == "slice":
            start = self.sizes(n.attr("start"))
            stride = self.sizes(n.attr("stride")) if n.attr("stride") is not None \
                else [1] * len(idx)
            return self.read(x, [s + i * st for s, i, st in zip(start, idx, stride)], g)
        if n.op == "pad":
            low = self.sizes(n.attr("low"))
            interior = self.sizes(n.attr("interior")) if n.attr("interior") is not None \
                else [0] * len(idx)
            inside: list[Any] = []
            j = []
            for i, lo, it, size in zip(idx, low, interior, xs):
                t = i - lo
                step = it + 1
                inside += [t >= 0, b.mod(t, step) == 0, b.div(t, step) < size]
                j.append(b.div(t, step))
            hit = b.and_(*inside)
            return [*self.read(x, j, b.and_(g, hit)),
                    *self.read(n.args[1], [], b.and_(g, b.not_(hit)))]
        if n.op == "concatenate":
            d = n.attr("dim")
            assert isinstance(d, int)
            pieces: list[Piece] = []
            offset: Any = 0
            for a in n.args:
                size = self.shape(a)[d]
                here = b.and_(g, idx[d] >= offset, idx[d] < offset + size)
                j = list(idx)
                j[d] = idx[d] - offset
                pieces += self.read(a, j, here)
                offset = offset + size
            return pieces
        raise IllFormed(f"unknown op {n.op}")


def _prod(xs: Sequence[Any]) -> Any:
    out: Any = 1
    for x in xs:
        out = out * x
    return out


def _linearize(idx: Sequence[Any], sizes: Sequence[Any]) -> Any:
    lin: Any = 0
    for i, s in zip(idx, sizes):
        lin = lin * s + i
    return lin


def _delinearize(b: Backend, lin: Any, sizes: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for s in reversed(sizes):
        out.append(b.mod(lin, s) if not (isinstance(s, int) and s == 1) else 0)
        lin = b.div(lin, s) if not (isinstance(s, int) and s == 1) else lin
    return out[::-1]


def points(shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
    return itertools.product(*[range(n) for n in shape])
