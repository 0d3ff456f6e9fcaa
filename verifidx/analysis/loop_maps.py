"""Maps of a whole `while` loop, output leaf to operand leaf (and back), across all iterations.

The loop's relation is the body's per-iteration relation composed once per iteration; this
module computes a sound closed form of it from the body's maps per iteration
(`verifidx.hlo.ops.loops.per_iteration`), without unrolling:

- The state leaves and the body's maps between them form a graph. Inside a strongly connected
  part (a carry that reads itself, such as an RNN's hidden state, or a pass-through leaf whose
  map is the identity) the maps are closed under composition: the identity, then each round
  composes one more iteration, until a round adds no map that Z3 does not prove equal to one
  there (then the union of all powers is reached); after a few rounds without that, every
  element relates to every element (sound). The iteration number is a range variable over all
  iterations there.
- Between parts, each step is an event of one iteration `k`; along a walk the events' iterations
  strictly decrease (output to operand) or increase (operand to output), and these constraints
  between range variables are kept, which is why a scan's output row `i` reads the inputs of
  iterations `0..i` only.
- Every other runtime variable of the body (a start index read from data) becomes a range
  variable over its bounds: one value per iteration is not one value per loop.

Each map is a superset of the exact relation (the closure allows any number of iterations, not
exactly the trip count; the dynamic-update-slice's operand is read whole, as per op); an
UNDEFINED body map makes every leaf it reaches UNDEFINED. With an unknown trip count the same
closed form holds for any number of iterations, so the maps stay sound, with a note that says
why the count is unknown. No iteration: the identity.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from verifidx.analysis.dedup import MapSet
from verifidx.core.expr import Dim, Expr, RtVar, Symbol, add, neg
from verifidx.core.indexing_map import IndexingMap, Var, compose
from verifidx.core.interval import Interval
from verifidx.hlo.dynamic_dims import SymSize, restrict
from verifidx.hlo.ops.loops import LoopAnalysis, is_iteration_of, passed_through
from verifidx.hlo.runtime import OperandIndexing, drop_implied_constraints, remove_unused
from verifidx.hlo.shape import Shape

__all__ = ["loop_maps"]

CLOSURE_ROUNDS = 4
"""Rounds of composition before a carry's closure falls back to every element."""

PATH_LIMIT = 256
"""Compositions per walk before a start leaf falls back to every element of what it reaches."""

Simplify = Callable[[OperandIndexing], OperandIndexing]

LeafSizes = tuple[SymSize | None, ...] | None
"""The symbolic sizes of a state leaf's dynamic dimensions (None: a static leaf)."""


def loop_maps(analysis: LoopAnalysis, leaves: Sequence[Shape],
              body: Mapping[tuple[int, int], Sequence[OperandIndexing]], direction: str,
              simplify: Simplify, control: Collection[int] = (), prove: bool = True,
              sizes: Sequence[LeafSizes] = ()) -> dict[tuple[int, int], list[OperandIndexing]]:
    """`{(start leaf, end leaf): maps}`: output leaf -> operand leaf for "out2in" (with `body`
    the body's root leaf -> parameter leaf maps), operand leaf -> output leaf for "in2out"
    (with `body` the parameter leaf -> root leaf maps), keyed `(from, to)` in walk order.

    `control` lists the leaves the condition reads. When the trip count is unknown, how many
    times the body runs depends on them, so every leaf the body changes depends on every
    element of what they read, at any iteration (the trip count is data here).

    `sizes` gives each leaf's dynamic sizes, the same in every iteration (the reader shows the
    body keeps them); the maps this module makes itself (identities, every element to every
    element) are cut to them."""
    n = len(leaves)
    cuts: list[LeafSizes] = [*sizes, *([None] * (n - len(sizes)))]
    if analysis.trips == 0:
        return {(a, a): [OperandIndexing(_identity(leaves[a], cuts[a]))] for a in range(n)}
    walk = _Walk(analysis, leaves, body, direction, simplify, prove, cuts)
    out: dict[tuple[int, int], list[OperandIndexing]] = {}
    for start in range(n):
        for end, maps in walk.from_leaf(start).items():
            out[(start, end)] = maps
    if analysis.trips is None and control:
        _add_control(out, walk, leaves, body, set(control), direction)
    return out


def _add_control(out: dict[tuple[int, int], list[OperandIndexing]], walk: _Walk,
                 leaves: Sequence[Shape],
                 body: Mapping[tuple[int, int], Sequence[OperandIndexing]],
                 control: set[int], direction: str) -> None:
    """Every leaf the body changes reads, whole, every initial leaf that can reach what the
    condition reads."""
    reads: dict[int, set[int]] = {}  # root leaf -> parameter leaves it reads
    for a, b in body:
        o, p = (a, b) if direction == "out2in" else (b, a)
        reads.setdefault(o, set()).add(p)
    deciding: set[int] = set()
    for q in control:
        deciding |= _reachable(reads, q)
    note = f"{walk.analysis.loop.name}: the trip count depends on the data"
    for o in sorted(set(range(len(leaves))) - passed_through(walk.analysis.body)):
        for p in sorted(deciding):
            a, b = (o, p) if direction == "out2in" else (p, o)
            out.setdefault((a, b), []).append(
                OperandIndexing(walk.to_all(a, b), notes=(note,)))


def _reachable(succ: Mapping[int, Collection[int]], start: int) -> set[int]:
    seen = {start}
    todo = [start]
    while todo:
        for b in succ.get(todo.pop(), ()):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def _identity(shape: Shape, sizes: LeafSizes) -> IndexingMap:
    ident = IndexingMap.identity(shape.dims)
    return restrict(OperandIndexing(ident), sizes, sizes).map if sizes else ident


def _to_all(src: Shape, dst: Shape, src_sizes: LeafSizes, dst_sizes: LeafSizes) -> IndexingMap:
    m = IndexingMap.build([Symbol(i) for i in range(dst.rank)],
                          [(0, d - 1) for d in src.dims], [(0, d - 1) for d in dst.dims])
    return restrict(OperandIndexing(m), src_sizes, dst_sizes).map \
        if src_sizes or dst_sizes else m


def _within_identity(m: IndexingMap) -> bool:
    """Relates each index to itself only (a restriction of the identity)."""
    return m.results == tuple(Dim(i) for i in range(m.num_dims))


class _Lifted:
    """A per-iteration map with every runtime variable a range variable; `k` is the position of
    the iteration number among them (None when the map does not use it)."""

    def __init__(self, ind: OperandIndexing, analysis: LoopAnalysis) -> None:
        m = ind.map
        base = m.num_range_vars
        subst: dict[Expr, Expr] = {RtVar(j): Symbol(base + j) for j in range(m.num_rt_vars)}
        self.k: int | None = None
        for j, rv in enumerate(ind.runtime):
            if is_iteration_of(rv, analysis.loop):
                self.k = base + j
        lifted = IndexingMap(tuple(r.substitute(subst) for r in m.results), m.dims,
                             m.range_vars + m.rt_vars, (), {}, m.is_known_empty,
                             sizes=m.sizes)
        for e, iv in m.constraints.items():
            lifted = lifted.add_constraint(e.substitute(subst), iv)
        self.map = lifted


class _Walk:
    def __init__(self, analysis: LoopAnalysis, leaves: Sequence[Shape],
                 body: Mapping[tuple[int, int], Sequence[OperandIndexing]], direction: str,
                 simplify: Simplify, prove: bool, sizes: Sequence[LeafSizes]) -> None:
        self.analysis = analysis
        self.leaves = leaves
        self.sizes = sizes
        self.direction = direction
        self.simplify = simplify
        self.prove = prove
        self.undefined: dict[tuple[int, int], OperandIndexing] = {}
        self.edges: dict[int, dict[int, list[_Lifted]]] = {}
        for (a, b), maps in body.items():
            for ind in maps:
                if ind.replica is not None:
                    self.undefined[(a, b)] = OperandIndexing.undefined(
                        f"{analysis.loop.name}: an all-gather's replica map inside a loop")
                elif ind.is_undefined:
                    self.undefined[(a, b)] = ind
                elif not (a == b and _within_identity(ind.map)):
                    self.edges.setdefault(a, {}).setdefault(b, []).append(_Lifted(ind, analysis))
                else:  # the identity is in every closure; record that it is read
                    self.edges.setdefault(a, {}).setdefault(b, [])
        self.succ: dict[int, set[int]] = {}
        for a, b in body:
            self.succ.setdefault(a, set()).add(b)
        self.part = _strongly_connected(len(leaves), {(a, b) for a, b in body})
        self._closures: dict[int, dict[tuple[int, int], list[tuple[IndexingMap, int]]]] = {}
        self.notes: list[str] = []

    def to_all(self, a: int, b: int) -> IndexingMap:
        """Every element of leaf `a` to every element of leaf `b`."""
        return _to_all(self.leaves[a], self.leaves[b], self.sizes[a], self.sizes[b])

    # -- closures of strongly connected parts -------------------------------------------------

    def _compose(self, first: IndexingMap, second: IndexingMap) -> IndexingMap:
        return drop_implied_constraints(compose(first, second))

    def _tidy(self, m: IndexingMap) -> IndexingMap:
        return self.simplify(remove_unused(OperandIndexing(drop_implied_constraints(m)))).map

    def closure(self, part: int) -> dict[tuple[int, int], list[tuple[IndexingMap, int]]]:
        """`{(a, b): [(map, steps)]}` for leaves of one strongly connected part: any number of
        iterations (including none) inside it, the iteration number free. `steps` is how many
        iterations the map needs at least (it composes that many body maps; 0 where a map
        equal to an earlier one replaced it, which only weakens what it asks)."""
        hit = self._closures.get(part)
        if hit is not None:
            return hit
        members = [a for a in range(len(self.leaves)) if self.part[a] == part]
        sets: dict[tuple[int, int], MapSet[IndexingMap]] = {
            (a, b): MapSet(f"loop closure {a}->{b}", prove=self.prove)
            for a in members for b in members}
        steps: dict[tuple[int, int], dict[IndexingMap, int]] = {key: {} for key in sets}
        for a in members:
            ident = _identity(self.leaves[a], self.sizes[a])
            sets[(a, a)].add(ident, ident)
            steps[(a, a)][ident] = 0
        stable = False
        for _round in range(CLOSURE_ROUNDS):
            current = {key: s.values() for key, s in sets.items()}
            grew = False
            for a in members:
                for c, edge_maps in self.edges.get(a, {}).items():
                    if self.part[c] != part:
                        continue
                    for e in edge_maps:
                        for b in members:
                            for t in current[(c, b)]:
                                m = self._tidy(self._compose(e.map, t))
                                if a == b and _within_identity(m):
                                    continue
                                if sets[(a, b)].add(m, m):
                                    grew = True
                                    steps[(a, b)][m] = steps[(c, b)].get(t, 0) + 1
            if not grew:
                stable = True
                break
        result: dict[tuple[int, int], list[tuple[IndexingMap, int]]]
        if stable:
            result = {key: [(m, steps[key].get(m, 0)) for m in s.values()]
                      for key, s in sets.items() if s.values()}
        else:
            self.notes.append(f"{self.analysis.loop.name}: a carry's maps did not close in "
                              f"{CLOSURE_ROUNDS} rounds; every element is assumed")
            result = {(a, b): [(self.to_all(a, b), 0)]
                      for a in members for b in members}
        self._closures[part] = result
        return result

    # -- walks across parts ---------------------------------------------------------------------

    def from_leaf(self, start: int) -> dict[int, list[OperandIndexing]]:
        reach = _reachable(self.succ, start)
        bad = [ind for (a, _b), ind in self.undefined.items() if a in reach]
        if bad:
            return {b: [OperandIndexing(IndexingMap.undefined(), notes=bad[0].notes)]
                    for b in reach}
        found: dict[int, MapSet[OperandIndexing]] = {}
        budget = [PATH_LIMIT]
        ident = _identity(self.leaves[start], self.sizes[start])
        if not self._step(start, ident, None, found, budget):
            self.notes.append(f"{self.analysis.loop.name}: over {PATH_LIMIT} paths from leaf "
                              f"{start}; every element is assumed")
            return {b: [OperandIndexing(self.to_all(start, b))]
                    for b in reach}
        return {b: s.values() for b, s in found.items()}

    def _step(self, a: int, f: IndexingMap, last_k: int | None,
              found: dict[int, MapSet[OperandIndexing]], budget: list[int]) -> bool:
        """Extends walk `f` (ending in leaf `a`, whose last event's iteration is range variable
        `last_k`) through `a`'s part and on along every event; False when over budget."""
        part = self.part[a]
        for (x, b), closure_maps in self.closure(part).items():
            if x != a:
                continue
            for t, steps in closure_maps:
                budget[0] -= 1
                if budget[0] < 0:
                    return False
                g = self._compose(f, t)
                k_g = None if last_k is None else last_k + t.num_range_vars
                end = self._room(g, k_g, None, steps)
                if end is not None:
                    ind = self.simplify(remove_unused(OperandIndexing(end)))
                    found.setdefault(b, MapSet(f"loop {a}->{b}", prove=self.prove,
                                               drop_contained=self.prove)).add(ind, ind.map)
                for c, edge_maps in self.edges.get(b, {}).items():
                    if self.part[c] == part:
                        continue
                    for e in edge_maps:
                        h, k_h = self._event(g, k_g, e, steps)
                        if h is not None and not self._step(c, h, k_h, found, budget):
                            return False
        return True

    def _event(self, g: IndexingMap, k_g: int | None, e: _Lifted, steps: int
               ) -> tuple[IndexingMap | None, int | None]:
        """`g`, then `steps` iterations inside a part, then one iteration's map `e`: its
        iteration comes before (out to in) or after (in to out) the previous event's by more
        than `steps`. None when the iterations leave no room for that."""
        em, k = e.map, e.k
        trips = self.analysis.trips
        if trips is not None and k is None:
            k = em.num_range_vars
            em = em.replace(range_vars=em.range_vars + (Var(Interval(0, trips - 1)),))
        h = compose(g, em)
        k_prev = None if k_g is None else k_g + em.num_range_vars
        return self._room(h, k_prev, k, steps), k

    def _room(self, m: IndexingMap, k_prev: int | None, k_next: int | None, steps: int
              ) -> IndexingMap | None:
        """`m` with `steps` iterations between event `k_prev` and event `k_next` (range
        variables; None: the end of the loop on that side). None when they do not fit."""
        trips = self.analysis.trips
        if trips is None:
            return drop_implied_constraints(m)
        out2in = self.direction == "out2in"
        if k_prev is not None and k_next is not None:
            later, earlier = (k_prev, k_next) if out2in else (k_next, k_prev)
            expr, iv = add(Symbol(later), neg(Symbol(earlier))), Interval(steps + 1, trips - 1)
        elif k_prev is not None:  # iterations before it (out2in) or after it (in2out)
            expr = Symbol(k_prev)
            iv = Interval(steps, trips - 1) if out2in else Interval(0, trips - 1 - steps)
        elif k_next is not None:  # iterations after it (out2in) or before it (in2out)
            expr = Symbol(k_next)
            iv = Interval(0, trips - 1 - steps) if out2in else Interval(steps, trips - 1)
        else:
            return drop_implied_constraints(m) if steps <= trips else None
        if iv.is_empty:
            return None
        m = drop_implied_constraints(m.add_constraint(expr, iv))
        return None if m.is_known_empty else m


def _strongly_connected(n: int, edges: set[tuple[int, int]]) -> list[int]:
    """The strongly connected part of each of `n` nodes (Tarjan's algorithm, iteratively)."""
    succ: dict[int, list[int]] = {}
    for a, b in sorted(edges):
        succ.setdefault(a, []).append(b)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    part = [-1] * n
    stack: list[int] = []
    on_stack: set[int] = set()
    counter = 0
    parts = 0
    for root in range(n):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            nexts = succ.get(v, [])
            if i < len(nexts):
                work.append((v, i + 1))
                w = nexts[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    part[w] = parts
                    if w == v:
                        break
                parts += 1
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return part
