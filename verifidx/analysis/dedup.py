"""Distinct access patterns: maps deduplicated structurally, then by a proof of equality.

XLA merges two indexing maps only when their text is identical after simplification. verifidx
also merges maps that `smt.equal` proves denote the same relation (range variables existential;
isl's Presburger decision, or Z3), and keeps a record of every merge with the prover's answer,
so that `--explain-dedup` can show why two access patterns were counted once. A solver answer
of unknown or a spent budget never merges.

Where asked (a loop's walks, `MapSet(drop_contained=True)`), a member that another member
contains (every tuple of its relation is one of the other's, decided by isl for quasi-affine
maps) adds nothing to the union and is dropped the same way, with its record: the union, the
may-read relation, is unchanged. An inclusion isl cannot decide keeps both.

Only maps over the same domain are compared (same dimension bounds, result count and runtime
variables, and the same provenance; for an inclusion, dimension bounds may differ): the solver
is the slow path, so cheap filters and a cache of verdicts come first.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..core.expr import register_cache
from ..core.indexing_map import IndexingMap

T = TypeVar("T")

#: Per-comparison solver budget; an unknown answer keeps both maps.
DEDUP_TIMEOUT_MS = 2000
_VERDICTS: dict[tuple[IndexingMap, IndexingMap], tuple[bool | None, str]] = register_cache({})
_VERDICT_CACHE_LIMIT = 100_000


@dataclass(frozen=True)
class Merge:
    """One merge: `dropped` was counted as `kept`, for `reason`."""

    kept: str
    dropped: str
    reason: str
    where: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"merged{at}: {self.dropped}\n    into {self.kept}\n    because {self.reason}"


def proven_equal(a: IndexingMap, b: IndexingMap, timeout_ms: int = DEDUP_TIMEOUT_MS
                 ) -> bool | None:
    """Cached `smt.equal(a, b).holds`."""
    return _verdict(a, b, timeout_ms)[0]


def _verdict(a: IndexingMap, b: IndexingMap, timeout_ms: int) -> tuple[bool | None, str]:
    """Cached (`holds`, `message`) of `smt.equal(a, b)`."""
    key = (a, b) if hash(a) <= hash(b) else (b, a)
    hit = _VERDICTS.get(key)
    if hit is not None:
        return hit
    from ..solve.smt import equal  # Z3 loads on the first proof, not on `import verifidx`

    v = equal(a, b, timeout_ms)
    if len(_VERDICTS) > _VERDICT_CACHE_LIMIT:
        _VERDICTS.clear()
    _VERDICTS[key] = (v.holds, v.message)
    return v.holds, v.message


_INCLUDED: dict[tuple[IndexingMap, IndexingMap], bool | None] = register_cache({})


def _included(a: IndexingMap, b: IndexingMap) -> bool | None:
    """Cached: is a's relation a subset of b's (isl; None where it cannot say)?"""
    if a.is_known_empty:
        return not b.is_undefined
    if b.is_known_empty:
        return None  # a may be empty too, but only a proof of that would say so
    key = (a, b)
    if key in _INCLUDED:
        return _INCLUDED[key]
    from ..solve import presburger

    if a.sizes != b.sizes:
        holds = None
    else:
        holds = presburger.included(a, b, {z.name: z.bounds for z in a.sizes})
    if len(_INCLUDED) > _VERDICT_CACHE_LIMIT:
        _INCLUDED.clear()
    _INCLUDED[key] = holds
    return holds


def _same_domain(a: IndexingMap, b: IndexingMap) -> bool:
    return (
        not a.is_undefined and not b.is_undefined
        and a.num_results == b.num_results
        and a.num_rt_vars == b.num_rt_vars
        and tuple(v.bounds for v in a.dims) == tuple(v.bounds for v in b.dims)
    )


def _same_shape(a: IndexingMap, b: IndexingMap) -> bool:
    """What an inclusion compares: `_same_domain` but for the dimensions' bounds, which differ
    where the simplifier tightened them to what a constraint allows (`d0 in [1, 4]` inside
    `d0 in [0, 4]`)."""
    return (
        not a.is_undefined and not b.is_undefined
        and a.num_results == b.num_results
        and a.num_rt_vars == b.num_rt_vars
        and a.num_dims == b.num_dims
    )


def _size(m: IndexingMap) -> int:
    return sum(r.size for r in m.results) + sum(e.size for e in m.constraints)


class MapSet(Generic[T]):
    """Items (each with an indexing map and a context: provenance that must match) kept once
    per relation. `prove=False` gives XLA's behaviour (structural identity only).
    `drop_contained` also drops members another contains: only where the items mean nothing
    but their relation (the union of a loop's walks), not where they carry more (a loop
    closure's maps carry how many iterations each needs, which a containing map may not
    share; an op's or fusion's maps are its access patterns, which XLA lists one by one, as
    softmax reads its input through the identity and through the row)."""

    def __init__(self, where: str = "", prove: bool = True,
                 timeout_ms: int = DEDUP_TIMEOUT_MS, drop_contained: bool = False) -> None:
        self.where = where
        self.prove = prove
        self.drop_contained = drop_contained
        self.timeout_ms = timeout_ms
        self._items: list[tuple[T, IndexingMap, Hashable]] = []
        self._keys: set[tuple[Hashable, IndexingMap]] = set()
        self.merges: list[Merge] = []

    def add(self, item: T, m: IndexingMap, context: Hashable = None) -> bool:
        """Adds the item unless an equal one is there; True when it was new."""
        if (context, m) in self._keys:
            return False
        if self.prove:
            for i, (_other, om, ctx) in enumerate(self._items):
                if ctx != context or not _same_domain(m, om):
                    continue
                start = time.perf_counter()
                holds, why = _verdict(m, om, self.timeout_ms)
                if holds is not True:
                    continue
                took = time.perf_counter() - start
                keep_new = _size(m) < _size(om)
                kept, dropped = (m, om) if keep_new else (om, m)
                self.merges.append(Merge(str(kept), str(dropped), f"proved equal: {why}",
                                         self.where, took))
                if keep_new:
                    self._items[i] = (item, m, context)
                    self._keys.add((context, m))
                return False
            if self.drop_contained and self._contained(m, context):
                return False
        self._items.append((item, m, context))
        self._keys.add((context, m))
        return True

    def _contained(self, m: IndexingMap, context: Hashable) -> bool:
        """Drops what the union does not need: True when a member contains `m` (then `m` is not
        added); members that `m` contains are removed. Each drop is recorded as a merge."""
        peers = [(i, om) for i, (_other, om, ctx) in enumerate(self._items)
                 if ctx == context and (_same_shape(m, om) or m.is_known_empty
                                        or om.is_known_empty)]
        for _i, om in peers:
            start = time.perf_counter()
            if _included(m, om) is True:
                self.merges.append(Merge(str(om), str(m), "contained in the kept map (isl)",
                                         self.where, time.perf_counter() - start))
                return True
        gone = set()
        for i, om in peers:
            start = time.perf_counter()
            if _included(om, m) is True:
                self.merges.append(Merge(str(m), str(om), "contained in the kept map (isl)",
                                         self.where, time.perf_counter() - start))
                gone.add(i)
        if gone:
            self._items = [x for i, x in enumerate(self._items) if i not in gone]
        return False

    def values(self) -> list[T]:
        return [item for item, _m, _c in self._items]

    def __iter__(self) -> Iterator[T]:
        return iter(self.values())

    def __len__(self) -> int:
        return len(self._items)
