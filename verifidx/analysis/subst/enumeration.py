"""Every small graph of data-movement ops over concrete inputs, with its composed map.

The inputs of one enumeration all have the shape of one rank (`RANK_SHAPES`): `x`, `y`, `z` of
that shape and a scalar `v` (padding values, scalar broadcasts). Unary chains start at `x` only
(a chain from `y` is a renaming of one from `x`); concatenations take fresh inputs as further
operands, so `concatenate(concatenate(x, y), z)` and `concatenate(x, y, z)` both occur.

A graph's *fingerprint* is its composed map on these shapes, computed with numpy: every input
element gets a unique id, the ops move ids around, padding writes the scalar's id. Two graphs
with equal fingerprints read the same input element at every output index: they are equal on
these shapes, which is exactly the candidate question (the prover then decides the general one).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from verifidx.analysis.subst.model import Node, SizeList

RANK_SHAPES: dict[int, tuple[int, ...]] = {1: (4,), 2: (2, 3), 3: (2, 3, 4)}
"""The input shape of each rank: small, with distinct sizes where the rank allows."""

ARRAY_INPUTS = ("x", "y", "z")
SCALAR = "v"
MAX_RANK = 3


def input_shapes(rank: int) -> dict[str, tuple[int, ...]]:
    shape = RANK_SHAPES[rank]
    return {**{n: shape for n in ARRAY_INPUTS}, SCALAR: ()}


def node(op: str, args: Sequence[Node], **attrs: object) -> Node:
    """A node with attributes in the order the parser keeps (required, then optional)."""
    return Node(op, tuple(args), tuple(attrs.items()))  # type: ignore[arg-type]


def _list(values: Iterable[int]) -> SizeList:
    return SizeList(tuple(values))


def inp(name: str) -> Node:
    return Node("input", name=name)


# -- fingerprints ----------------------------------------------------------------------------


def _ids(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    offset = 0
    for name in sorted(shapes):
        n = math.prod(shapes[name])
        out[name] = np.arange(offset, offset + n, dtype=np.int64).reshape(shapes[name])
        offset += n
    return out


class Evaluator:
    """numpy evaluation of concrete graphs over element ids (memoized per node)."""

    def __init__(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        self.ids = _ids(shapes)
        self.memo: dict[Node, np.ndarray] = {}

    def __call__(self, n: Node) -> np.ndarray:
        hit = self.memo.get(n)
        if hit is None:
            hit = self.memo[n] = self._eval(n)
        return hit

    def _eval(self, n: Node) -> np.ndarray:  # noqa: PLR0911 - one branch per op
        if n.op == "input":
            return self.ids[n.name]
        a = self(n.args[0])
        if n.op == "copy":
            return a
        if n.op == "transpose":
            return np.transpose(a, _ints(n, "perm"))
        if n.op == "reverse":
            return np.flip(a, axis=tuple(_ints(n, "dims"))) if _ints(n, "dims") else a
        if n.op == "reshape":
            return a.reshape(_ints(n, "shape"))
        if n.op == "broadcast":
            shape, dims = _ints(n, "shape"), _ints(n, "dims")
            if dims != sorted(dims) or [shape[d] for d in dims] != list(a.shape):
                raise ValueError("broadcast dims out of order or sizes that do not fit")
            return np.broadcast_to(a.reshape([shape[d] if d in dims else 1
                                              for d in range(len(shape))]), shape)
        if n.op == "slice":
            start, limit = _ints(n, "start"), _ints(n, "limit")
            stride = _ints(n, "stride") if n.attr("stride") is not None else [1] * a.ndim
            return a[tuple(slice(s, lim, st) for s, lim, st in zip(start, limit, stride))]
        if n.op == "pad":
            low, high = _ints(n, "low"), _ints(n, "high")
            fill = int(self(n.args[1]))
            out = np.full([lo + hi + s for lo, hi, s in zip(low, high, a.shape)], fill,
                          dtype=np.int64)
            out[tuple(slice(lo, lo + s) for lo, s in zip(low, a.shape))] = a
            return out
        if n.op == "concatenate":
            d = n.attr("dim")
            assert isinstance(d, int)
            return np.concatenate([self(x) for x in n.args], axis=d)
        raise ValueError(f"no evaluation of {n.op}")


def _ints(n: Node, key: str) -> list[int]:
    v = n.attr(key)
    assert isinstance(v, SizeList)
    return [int(e) for e in v.items]  # type: ignore[arg-type]


def fingerprint_of(values: np.ndarray) -> tuple[tuple[int, ...], bytes]:
    return tuple(values.shape), np.ascontiguousarray(values).tobytes()


# -- menus -----------------------------------------------------------------------------------


def factorizations(n: int, max_rank: int = MAX_RANK) -> list[tuple[int, ...]]:
    """Ordered factorizations of n into factors >= 2 (or (1,) for n = 1), rank <= max_rank."""
    if n == 1:
        return [(1,)]
    out: list[tuple[int, ...]] = [(n,)]
    if max_rank > 1:
        for d in range(2, n):
            if n % d == 0:
                out += [(d, *rest) for rest in factorizations(n // d, max_rank - 1)]
    return out


def _slices(shape: tuple[int, ...]) -> Iterator[tuple[list[int], list[int], list[int] | None]]:
    """The whole value; per dimension: drop the first or last element, keep the first or last
    one, each half (even sizes), and every second element (sizes >= 3)."""
    r = len(shape)
    yield [0] * r, list(shape), None
    for k, n in enumerate(shape):
        cuts = {(1, n), (0, n - 1), (0, 1), (n - 1, n)} if n > 1 else set()
        if n % 2 == 0 and n > 2:
            cuts |= {(0, n // 2), (n // 2, n)}
        for start, limit in sorted(cuts):
            lo, hi = [0] * r, list(shape)
            lo[k], hi[k] = start, limit
            yield lo, hi, None
        if n >= 3:
            stride = [1] * r
            stride[k] = 2
            yield [0] * r, list(shape), stride


def unary_menu(op: str, t: Node, shape: tuple[int, ...]) -> Iterator[Node]:
    """The attribute menu of a one-operand op (pad included: its scalar is `v`)."""
    r = len(shape)
    if op == "transpose" and r > 1:
        for p in itertools.permutations(range(r)):
            yield node(op, [t], perm=_list(p))
    elif op == "reverse":
        for k in range(1, r + 1):
            for dims in itertools.combinations(range(r), k):
                yield node(op, [t], dims=_list(dims))
    elif op == "reshape":  # every factorization, and the shape with a unit dimension added
        targets = factorizations(math.prod(shape))
        if r < MAX_RANK:
            targets += [(*shape[:k], 1, *shape[k:]) for k in range(r + 1)]
        for target in dict.fromkeys(targets):
            yield node(op, [t], shape=_list(target))
    elif op == "slice":
        for lo, hi, stride in _slices(shape):
            if stride is None:
                yield node(op, [t], start=_list(lo), limit=_list(hi))
            else:
                yield node(op, [t], start=_list(lo), limit=_list(hi), stride=_list(stride))
    elif op == "pad":
        scalar = inp(SCALAR)
        yield node(op, [t, scalar], low=_list([0] * r), high=_list([0] * r))
        for k in range(r):
            for low, high in ((1, 0), (0, 1)):
                lo, hi = [0] * r, [0] * r
                lo[k], hi[k] = low, high
                yield node(op, [t, scalar], low=_list(lo), high=_list(hi))
    elif op == "broadcast" and r > 0:
        yield node(op, [t], shape=_list(shape), dims=_list(range(r)))
        if r < MAX_RANK:  # one new dimension (size 1 or 2) at every position
            for pos in range(r + 1):
                for size in (1, 2):
                    wider = [*shape[:pos], size, *shape[pos:]]
                    moved = [k if k < pos else k + 1 for k in range(r)]
                    yield node(op, [t], shape=_list(wider), dims=_list(moved))
    elif op == "copy":
        yield node(op, [t])


def enumerate_graphs(ops: Sequence[str], depth: int, rank: int) -> list[Node]:
    """Every graph of 1..depth ops over the inputs of `rank` (see the module docstring)."""
    shapes = input_shapes(rank)
    ev = Evaluator(shapes)
    shape_of: dict[Node, tuple[int, ...]] = {}

    def keep(n: Node) -> bool:
        try:
            shape_of[n] = tuple(ev(n).shape)
        except (ValueError, IndexError):
            return False
        return True

    x = inp("x")
    shape_of[x] = shapes["x"]
    frontier: list[Node] = [x]
    if "broadcast" in ops:  # the scalar broadcast to this rank's shape starts chains too
        b = node("broadcast", [inp(SCALAR)], shape=_list(shapes["x"]), dims=_list(()))
        if keep(b):
            frontier.append(b)
    graphs: list[Node] = [n for n in frontier if n.op != "input"]
    for _level in range(depth):
        built: list[Node] = []
        for t in frontier:
            shape = shape_of[t]
            for op in ops:
                if op == "concatenate":
                    for n in _concatenations(t, shape, shapes):
                        if n.op_count() <= depth and keep(n):
                            built.append(n)
                    continue
                for n in unary_menu(op, t, shape):
                    if n.op_count() <= depth and _is_valid(n, shape) and keep(n):
                        built.append(n)
        frontier = list(dict.fromkeys(built))
        graphs += frontier
    for other in ARRAY_INPUTS[1:]:  # one op on y or z: the simpler side of, say,
        t = inp(other)                # slice(concatenate(x, y)) => slice(y)
        shape_of[t] = shapes[other]
        for op in ops:
            if op != "concatenate":
                graphs += [n for n in unary_menu(op, t, shapes[other])
                           if _is_valid(n, shapes[other]) and keep(n)]
    if "broadcast" in ops:  # the scalar broadcast to every shape reached: the simplest form
        for shape in sorted({shape_of[g] for g in graphs if g in shape_of}):
            b = node("broadcast", [inp(SCALAR)], shape=_list(shape), dims=_list(()))
            if b not in shape_of and keep(b):
                graphs.append(b)
    return list(dict.fromkeys(graphs))


def _is_valid(n: Node, shape: tuple[int, ...]) -> bool:
    """Shape rules numpy would not check (it clamps slices, accepts any reshape count)."""
    if n.op == "reshape":
        return math.prod(_ints(n, "shape")) == math.prod(shape)
    if n.op == "slice":
        return all(0 <= s <= lim <= d for s, lim, d in
                   zip(_ints(n, "start"), _ints(n, "limit"), shape))
    return True


def _concatenations(t: Node, shape: tuple[int, ...], shapes: Mapping[str, tuple[int, ...]]
                    ) -> Iterator[Node]:
    """`t` concatenated with fresh inputs (before or after it, one or two of them)."""
    used = {m.name for m in t.nodes() if m.op == "input"}
    fresh = [n for n in ARRAY_INPUTS if n not in used]
    r = len(shape)
    for d in range(r):
        ok = [n for n in fresh if len(shapes[n]) == r and
              all(shapes[n][k] == shape[k] for k in range(r) if k != d)]
        if ok:
            yield node("concatenate", [t, inp(ok[0])], dim=d)
            if t.op != "input":
                yield node("concatenate", [inp(ok[0]), t], dim=d)
        if len(ok) >= 2:
            yield node("concatenate", [t, inp(ok[0]), inp(ok[1])], dim=d)
