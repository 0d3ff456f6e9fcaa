"""Z3 proofs about symbolic tiles, for every tile size at once (sizes are solver variables).

* soundness: for all tile sizes within the dimension bounds that satisfy the tile's constraints,
  every runtime value and every point of the output tile (`0 <= d_i < t_i`, inside the map's
  domain), each result `f_j` is `offset_j + stride_j * k` for some `k in [0, size_j)`, and every
  operation of the tile's expressions is defined;
* exactness: conversely, every element of the tile is read by some point of the output tile.

Queries are nonlinear (size times stride, `n mod d0`): each runs under a timeout, and `unknown` is
reported as such, never as proven. Refutations come with a counterexample that is re-checked by
evaluating the expressions in Python. Verdicts are cached by the tile's text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.expr import Const, Dim, Expr, RtVar, Symbol
from ...core.interval import Interval
from ...core.syntax import print_values
from ...solve import smt_terms
from ...solve.smt import Encoder
from .constraints import Conjunction, ConstraintExpression
from .symbolic_tile import SymbolicTile

DEFAULT_TIMEOUT_MS = 5000
PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"


@dataclass(frozen=True)
class TileProof:
    """`verdict` is `proved`, `refuted` (with `counterexample`) or `unknown` (with `message`)."""

    verdict: str
    counterexample: dict[str, int] | None = None
    message: str = ""
    smtlib: str = field(default="", repr=False, compare=False)

    @property
    def proved(self) -> bool:
        return self.verdict == PROVED


_CACHE: dict[tuple[str, str, int], TileProof] = {}


def _constraint_term(c: ConstraintExpression, enc: Encoder) -> Any:
    if c.is_always_satisfied:
        return smt_terms.TRUE
    return smt_terms.or_(*[smt_terms.and_(*[smt_terms.and_(enc(e) >= iv.lo, enc(e) <= iv.hi)
                                            for e, iv in conj])
                           for conj in c.conjunctions])


def _in_tile(y: Any, size: Any, stride: Any) -> Any:
    """`y == stride * k` for some `k in [0, size)` (Z3's `%`/`/` are exact on multiples)."""
    return smt_terms.ite(stride == 0, smt_terms.and_(y == 0, size >= 1),
                         smt_terms.and_(y % stride == 0, y / stride >= 0, y / stride < size))


class _Setting:
    """Z3 variables for tile sizes (`t`), output indices (`d`), range and runtime variables."""

    def __init__(self, tile: SymbolicTile, translated: bool = False) -> None:
        src = tile.source
        self.t = [smt_terms.int_var(f"t{i}") for i in range(tile.num_tile_sizes)]
        # the tile's origin: a multiple of the tile size (the program's place), or 0
        self.k = [smt_terms.int_var(f"k{i}") for i in range(src.num_dims)] if translated else []
        self.o = [k * t for k, t in zip(self.k, self.t)] if translated else [
            smt_terms.int_val(0) for _ in range(src.num_dims)]
        self.d = [smt_terms.int_var(f"d{i}") for i in range(src.num_dims)]
        self.s = [smt_terms.int_var(f"s{i}") for i in range(src.num_range_vars)]
        self.rt = [smt_terms.int_var(f"rt{i}") for i in range(src.num_rt_vars)]
        tile_env: dict[Expr, Any] = {Dim(i): x for i, x in enumerate(self.t)}
        tile_env.update({RtVar(i): x for i, x in enumerate(self.rt)})
        map_env: dict[Expr, Any] = {Dim(i): x for i, x in enumerate(self.d)}
        map_env.update({Symbol(i): x for i, x in enumerate(self.s)})
        map_env.update({RtVar(i): x for i, x in enumerate(self.rt)})
        self.tile_enc = Encoder(tile_env)
        self.map_enc = Encoder(map_env)
        hyp = []
        for x, b in zip(self.t, tile.tile_size_bounds):
            hyp += [x >= b.lo, x <= b.hi]
        for x, v in zip(self.rt, src.rt_vars):
            hyp += [x >= v.bounds.lo, x <= v.bounds.hi]
        self.tile_sizes_ok = smt_terms.and_(*hyp, _constraint_term(tile.constraints, self.tile_enc))
        point = []
        for k, o, v in zip(self.k, self.o, src.dims):
            point += [k >= 0, o <= v.bounds.hi]
        for x, t, o, v in zip(self.d, self.t, self.o, src.dims):
            point += [x >= v.bounds.lo, x <= v.bounds.hi, x >= o, x < o + t]
        for x, v in zip(self.s, src.range_vars):
            point += [x >= v.bounds.lo, x <= v.bounds.hi]
        for e, iv in src.constraints.items():
            point += [self.map_enc(e) >= iv.lo, self.map_enc(e) <= iv.hi]
        self.read_point = smt_terms.and_(*point)
        if translated:
            # offsets of the tile at the origin: the map at (origin, range variables lowest)
            at_origin: dict[Expr, Any] = {Dim(i): x for i, x in enumerate(self.o)}
            at_origin.update({Symbol(i): smt_terms.int_val(v.bounds.lo)
                              for i, v in enumerate(src.range_vars)})
            at_origin.update({RtVar(i): x for i, x in enumerate(self.rt)})
            self.origin_enc = Encoder(at_origin)
            self.offsets = [self.origin_enc(e) for e in src.results]
            # the tile's own offset expressions must be the map at the origin 0
            at_zero: dict[Expr, Any] = {Dim(i): smt_terms.int_val(0) for i in range(src.num_dims)}
            at_zero.update({Symbol(i): smt_terms.int_val(v.bounds.lo)
                            for i, v in enumerate(src.range_vars)})
            at_zero.update({RtVar(i): x for i, x in enumerate(self.rt)})
            zero_enc = Encoder(at_zero)
            self.offset_mismatch = smt_terms.or_(*[self.tile_enc(e) != zero_enc(r)
                                                   for e, r in zip(tile.offsets, src.results)])
        else:
            self.origin_enc = self.tile_enc
            self.offsets = [self.tile_enc(e) for e in tile.offsets]
            self.offset_mismatch = smt_terms.FALSE
        self.sizes = [self.tile_enc(e) for e in tile.sizes]
        self.strides = [self.tile_enc(e) for e in tile.clamped_strides()]
        self.results = [self.map_enc(e) for e in src.results]

    @staticmethod
    def model_values(q: smt_terms.Query, groups: Sequence[Sequence[Any]]) -> dict[str, int]:
        return q.values(x for g in groups for x in g)


def _solve(s: smt_terms.Query) -> tuple[str, str]:
    r = s.check()
    return r, ("" if r != "unknown" else s.reason_unknown())


def _sound_query(tile: SymbolicTile, timeout_ms: int) -> TileProof:
    st = _Setting(tile, translated=True)
    conds = st.tile_enc.defined + st.map_enc.defined + st.origin_enc.defined
    defined = smt_terms.and_(*conds)
    outside = smt_terms.or_(*[smt_terms.not_(_in_tile(r - o, sz, sd)) for r, o, sz, sd in
                              zip(st.results, st.offsets, st.sizes, st.strides)],
                            smt_terms.not_(defined))
    s = smt_terms.Query(timeout_ms)
    s.add(st.tile_sizes_ok, st.read_point, smt_terms.or_(outside, st.offset_mismatch))
    r, why = _solve(s)
    if r == "unsat":
        out = TileProof(PROVED, smtlib=s.sexpr())
    elif r == "sat":
        cex = st.model_values(s, [st.t, st.k, st.d, st.s, st.rt])
        out = _confirm_unsound(tile, cex)
    else:
        out = TileProof(UNKNOWN, message=f"solver: {why or 'unknown'}")
    return out


def _confirm_unsound(tile: SymbolicTile, cex: Mapping[str, int]) -> TileProof:
    """Re-evaluate the solver's witness with verifidx's own evaluator before calling it refuted."""
    n = tile.num_tile_sizes
    sizes = [cex[f"t{i}"] for i in range(n)]
    rt = [cex[f"rt{i}"] for i in range(tile.source.num_rt_vars)]
    dims = [cex[f"d{i}"] for i in range(tile.source.num_dims)]
    syms = [cex[f"s{i}"] for i in range(tile.source.num_range_vars)]
    origin = [cex.get(f"k{i}", 0) * sizes[i] for i in range(tile.source.num_dims)]
    try:
        read = tile.source.evaluate(dims, [*syms, *rt])
        elems = tile.elements_at(sizes, origin, rt)
    except Exception as exc:  # an undefined operation is itself a refutation
        return TileProof(REFUTED, dict(cex), message=f"undefined at the witness: {exc}")
    own, expected = tile.evaluate_offsets(rt), tile.offsets_at([0] * len(origin), rt)
    if own != expected:
        return TileProof(REFUTED, dict(cex),
                         message=f"the tile's offsets {print_values(own)} are not the map at "
                                 f"the origin {print_values(expected)}")
    if tuple(read) in elems:
        return TileProof(UNKNOWN, dict(cex), message="solver witness failed re-evaluation")
    return TileProof(REFUTED, dict(cex),
                     message=f"tile sizes {print_values(sizes)} at origin "
                             f"{print_values(origin)} read {print_values(read)}, which is "
                             "outside the tile")


def _exact_query(tile: SymbolicTile, timeout_ms: int) -> TileProof:
    st = _Setting(tile)
    k = [smt_terms.int_var(f"k{j}") for j in range(tile.rank)]
    elem_ok = smt_terms.and_(*[smt_terms.and_(kj >= 0, kj < sz) for kj, sz in zip(k, st.sizes)])
    hits = smt_terms.and_(*[r == o + sd * kj for r, o, sd, kj in
                            zip(st.results, st.offsets, st.strides, k)])
    never_read = smt_terms.not_(smt_terms.exists(st.d + st.s, smt_terms.and_(st.read_point, hits)))
    s = smt_terms.Query(timeout_ms)
    s.add(st.tile_sizes_ok, elem_ok, never_read)
    r, why = _solve(s)
    if r == "unsat":
        out = TileProof(PROVED, smtlib=s.sexpr())
    elif r == "sat":
        cex = st.model_values(s, [st.t, st.rt, k])
        out = _confirm_inexact(tile, cex)
    else:
        out = TileProof(UNKNOWN, message=f"solver: {why or 'unknown'}")
    return out


ENUMERATION_LIMIT = 200_000


def _count(r: range) -> int:
    """The length of a step-1 range; `len` fails on ranges longer than 2**63 - 1."""
    return max(0, r.stop - r.start)


def _confirm_inexact(tile: SymbolicTile, cex: Mapping[str, int]) -> TileProof:
    n = tile.num_tile_sizes
    sizes = [cex[f"t{i}"] for i in range(n)]
    rt = [cex[f"rt{i}"] for i in range(tile.source.num_rt_vars)]
    offs = tile.evaluate_offsets(rt)
    strides = tile.evaluate_strides(sizes)
    elem = tuple(o + sd * cex[f"k{j}"] for j, (o, sd) in enumerate(zip(offs, strides)))
    reads = read_set(tile, sizes, rt)
    if reads is None:
        return TileProof(REFUTED, dict(cex),
                         message=f"element {print_values(elem)} is never read (solver; "
                                 "output tile too large to re-check by enumeration)")
    if elem in reads:
        return TileProof(UNKNOWN, dict(cex), message="solver witness failed re-evaluation")
    return TileProof(REFUTED, dict(cex),
                     message=f"tile sizes {print_values(sizes)}: element "
                             f"{print_values(elem)} of the tile is never read")


def read_set(tile: SymbolicTile, sizes: Sequence[int], rt: Sequence[int] = (),
             origin: Sequence[int] | None = None) -> set[tuple[int, ...]] | None:
    """The operand elements an output tile of `sizes` at `origin` (default 0) reads (brute
    force), or None when the output tile has more than ENUMERATION_LIMIT points."""
    src = tile.source
    at = list(origin) if origin is not None else [0] * len(sizes)
    dim_ranges = [range(max(o, v.bounds.lo), min(o + t, v.bounds.hi + 1))
                  for o, t, v in zip(at, sizes, src.dims)]
    sym_ranges = [range(v.bounds.lo, v.bounds.hi + 1) for v in src.range_vars]
    total = 1
    for r in (*dim_ranges, *sym_ranges):
        total *= max(1, _count(r))
    if total > ENUMERATION_LIMIT:
        return None
    out: set[tuple[int, ...]] = set()
    for d in itertools.product(*dim_ranges):
        for s in itertools.product(*sym_ranges):
            if src.constraints_satisfied(d, [*s, *rt]):
                out.add(tuple(src.evaluate(d, [*s, *rt])))
    return out


def equivalent(a: SymbolicTile, b: SymbolicTile, timeout_ms: int = DEFAULT_TIMEOUT_MS
               ) -> TileProof:
    """Whether two tiles describe the same element sets for every tile size in the bounds of
    `a`: the constraints agree, and where they hold, offsets and sizes are equal and strides are
    equal wherever the size exceeds 1 (a stride along one element is irrelevant)."""
    if a.rank != b.rank or a.num_tile_sizes != b.num_tile_sizes:
        return TileProof(REFUTED, message="different ranks or numbers of tile sizes")
    t = [smt_terms.int_var(f"t{i}") for i in range(a.num_tile_sizes)]
    rt = [smt_terms.int_var(f"rt{i}") for i in range(max(len(a.rt_vars), len(b.rt_vars)))]
    env: dict[Expr, Any] = {Dim(i): x for i, x in enumerate(t)}
    env.update({RtVar(i): x for i, x in enumerate(rt)})
    ea, eb = Encoder(env), Encoder(env)
    hyp = []
    for x, bd in zip(t, a.tile_size_bounds):
        hyp += [x >= bd.lo, x <= bd.hi]
    for x, v in zip(rt, a.rt_vars):
        hyp += [x >= v.bounds.lo, x <= v.bounds.hi]
    ca, cb = _constraint_term(a.constraints, ea), _constraint_term(b.constraints, eb)
    differs = [ca != cb]
    for j in range(a.rank):
        sa, sb = ea(a.sizes[j]), eb(b.sizes[j])
        differs.append(smt_terms.and_(ca, smt_terms.or_(
            ea(a.offsets[j]) != eb(b.offsets[j]), sa != sb,
            smt_terms.and_(sa > 1, ea(a.strides[j]) != eb(b.strides[j])))))
    defined = ea.defined + eb.defined
    s = smt_terms.Query(timeout_ms)
    s.add(*hyp)
    s.add(smt_terms.or_(*differs, *([smt_terms.not_(smt_terms.and_(*defined))] if defined else [])))
    r, why = _solve(s)
    if r == "unsat":
        return TileProof(PROVED)
    if r == "sat":
        return TileProof(REFUTED, s.values((*t, *rt)))
    return TileProof(UNKNOWN, message=f"solver: {why or 'unknown'}")


#: A conjunction over tile sizes whose boxes hold at most this many combinations is split into
#: one case per combination that satisfies it (each case then has constant sizes there).
PIN_LIMIT = 256


def _pin(tile: SymbolicTile, values: dict[int, int], conj: Conjunction) -> SymbolicTile | None:
    pinned: dict[Expr, Expr] = {Dim(i): Const(v) for i, v in values.items()}
    bounds = list(tile.tile_size_bounds)
    for i, v in values.items():
        bounds[i] = bounds[i].intersect(Interval(v, v))
    for e, iv in conj:
        if isinstance(e, Dim):
            bounds[e.index] = bounds[e.index].intersect(iv)
    if any(b.is_empty for b in bounds):
        return None
    return replace(
        tile, offsets=tuple(e.substitute(pinned) for e in tile.offsets),
        sizes=tuple(e.substitute(pinned) for e in tile.sizes),
        strides=tuple(e.substitute(pinned) for e in tile.strides),
        tile_size_bounds=tuple(bounds), constraints=ConstraintExpression((conj,)))


def _cases(tile: SymbolicTile) -> list[SymbolicTile]:
    """Smaller queries whose conjunction is the original claim: one per conjunction of the
    constraints, and within it one per combination of the tile sizes it mentions when there are
    few (`16 mod d1 == 0` gives d1 in {1, 2, 4, 8, 16}): those sizes become constants, which
    makes the products with them linear."""
    if tile.constraints.is_always_satisfied or tile.constraints.is_unsatisfiable:
        return [tile]
    out = []
    for conj in tile.constraints.conjunctions:
        dims = sorted({v.index for e, _ in conj for v in e.variables() if isinstance(v, Dim)})
        boxes = [range(tile.tile_size_bounds[i].lo, tile.tile_size_bounds[i].hi + 1)
                 for i in dims]
        total = 1
        for b in boxes:
            total *= _count(b)
        if dims and total <= PIN_LIMIT:
            for combo in itertools.product(*boxes):
                env: dict[Expr, int] = {Dim(i): v for i, v in zip(dims, combo)}
                try:
                    ok = all(e.evaluate(env) in iv for e, iv in conj)
                except Exception:  # a divisor of 0 cannot occur for sizes >= 1; be safe
                    ok = False
                if ok:
                    case = _pin(tile, dict(zip(dims, combo)), conj)
                    if case is not None:
                        out.append(case)
            continue
        point = {e.index: iv.lo for e, iv in conj if isinstance(e, Dim) and iv.is_point}
        case = _pin(tile, point, conj)
        if case is not None:
            out.append(case)
    return out


def _combine(parts: list[TileProof]) -> TileProof:
    for p in parts:
        if p.verdict == REFUTED:
            return p
    for p in parts:
        if p.verdict == UNKNOWN:
            return p
    return TileProof(PROVED, message=parts[0].message if parts else "")


#: Tile-size boxes up to this many points may be checked exhaustively when the solver gives up:
#: every tile size is covered, so the verdict is a proof, not a sample.
EXHAUSTIVE_LIMIT = 2048
QUICK_TIMEOUT_MS = 500


def _exhaustive(tile: SymbolicTile, exact: bool) -> TileProof | None:
    if tile.rt_vars:
        return None
    boxes = [range(b.lo, b.hi + 1) for b in tile.tile_size_bounds]
    total = 1
    for r in boxes:
        total *= _count(r)
    if total > EXHAUSTIVE_LIMIT:
        return None
    if not exact and tile.evaluate_offsets() != tile.offsets_at([0] * tile.source.num_dims):
        return TileProof(REFUTED, message="the tile's offsets are not the map at the origin")
    checked = 0
    for sizes in itertools.product(*boxes):
        if not tile.satisfied_by(sizes):
            continue
        origins = [[0] * len(sizes)] if exact else [list(o) for o in itertools.product(*(
            range(0, v.bounds.hi + 1, t) for v, t in zip(tile.source.dims, sizes)))]
        for origin in origins:
            checked += 1
            if checked > EXHAUSTIVE_LIMIT * 8:
                return None
            reads = read_set(tile, sizes, (), origin)
            if reads is None:
                return None
            try:
                elems = tile.elements_at(sizes, origin)
            except Exception as exc:
                return TileProof(REFUTED, {f"t{i}": v for i, v in enumerate(sizes)},
                                 message=f"undefined: {exc}")
            missing = reads - elems if not exact else elems - reads
            if missing:
                what = "read outside the tile" if not exact else "in the tile but never read"
                return TileProof(REFUTED, {f"t{i}": v for i, v in enumerate(sizes)},
                                 message=f"tile sizes {print_values(sizes)} at origin "
                                         f"{print_values(origin)}: "
                                         f"{print_values(sorted(missing)[0])} is {what}")
    return TileProof(PROVED, message=f"exhaustive over all {total} tile sizes")


def _prove(kind: str, tile: SymbolicTile, timeout_ms: int) -> TileProof:
    key = (kind, _key(tile), timeout_ms)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    query = _sound_query if kind == "sound" else _exact_query
    cases = _cases(tile)
    # a short solver attempt first; then, for small tile-size boxes, the exhaustive check (a
    # proof for every tile size too); then the solver with the full timeout
    quick = min(timeout_ms, QUICK_TIMEOUT_MS)
    out = _combine([query(c, quick) for c in cases])
    if out.verdict == UNKNOWN:
        out = _exhaustive(tile, kind == "exact") or out
    if out.verdict == UNKNOWN and timeout_ms > quick:
        out = _combine([query(c, timeout_ms) for c in cases])
    _CACHE[key] = out
    return out


def prove_sound(tile: SymbolicTile, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> TileProof:
    """Every element the output tile reads lies in the operand tile, for all valid tile sizes."""
    return _prove("sound", tile, timeout_ms)


def prove_exact(tile: SymbolicTile, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> TileProof:
    """Every element of the operand tile is read by the output tile, for all valid tile sizes."""
    return _prove("exact", tile, timeout_ms)


def _key(tile: SymbolicTile) -> str:
    bounds = ",".join(f"[{b.lo},{b.hi}]" for b in tile.tile_size_bounds)
    return f"{tile.to_text()}\n{tile.source}\n{bounds}"


def clear_cache() -> None:
    _CACHE.clear()
