"""Tile propagation through a fused computation (in the spirit of XLA's SymbolicTileAnalysis).

Tile sizes are given for the root's output. Every value the root reads gets, per distinct access
pattern (the root-to-value maps of `verifidx.analysis.fusion.grouped_output_to_input`), the symbolic
tile of that map evaluated at the root's tile sizes: sizes, strides, and the map from the program id
`pid_0` to the tile's offsets. Programs walk the root's tiles in major-to-minor order (the last
dimension varies fastest), as XLA's default schedule does. Identical tiles of one value are kept
once; a value read through two different patterns gets two tiles. The constraints of all symbolic
tiles are combined (conjunction); tile sizes that violate them, or a value without a symbolic tile,
make the fusion untileable (`TilingError`, with the reason).

Each tile carries the soundness proof of its symbolic tile (for every tile size, see `proof`) and
whether exactness was proven.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ...core.errors import VerifidxError
from ...core.expr import Const, Dim, Expr, Symbol, add, floordiv, mod, mul
from ...core.indexing_map import IndexingMap, Var, compose
from ...core.interval import Interval
from ...core.work import Progress
from ...hlo.indexing import output_to_input as instruction_output_to_input
from ...hlo.module import HloComputation, HloInstruction, HloModule
from ..fusion import grouped_output_to_input
from .constraints import ConstraintExpression, ConstraintsTooComplex
from .proof import UNKNOWN, TileProof, prove_exact, prove_sound
from .symbolic_tile import NoTile, SymbolicTile, symbolic_tile


class TilingError(VerifidxError):
    """The fusion cannot be tiled with these tile sizes (the message says why)."""


@dataclass(frozen=True)
class UntiledValue:
    """A value of a valid fusion that gets no tile (`keep_untiled=True`): `reason` says why
    (no symbolic tile, tile sizes that violate its constraints, an unsupported fusion form)."""

    name: str
    opcode: str
    shape: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "opcode": self.opcode, "shape": self.shape,
                "reason": self.reason}


@dataclass(frozen=True)
class TiledInstruction:
    name: str
    opcode: str
    shape: str
    tile_sizes: tuple[int, ...]
    tile_strides: tuple[int, ...]
    tile_offsets_indexing: IndexingMap
    symbolic: SymbolicTile
    proof: TileProof
    exactness: TileProof

    @property
    def exact(self) -> bool:
        return self.exactness.proved


@dataclass(frozen=True)
class TiledComputation:
    computation: str
    tile_sizes: tuple[int, ...]
    #: None when the root is unsupported and nothing was analysed (then no programs either)
    constraints: ConstraintExpression | None
    num_programs: int
    instructions: tuple[TiledInstruction, ...]
    roots: tuple[str, ...] = ()
    #: values without a tile (only with `keep_untiled=True`; otherwise TilingError is raised)
    untiled: tuple[UntiledValue, ...] = ()

    def tiles_of(self, name: str) -> list[TiledInstruction]:
        return [t for t in self.instructions if t.name == name]

    def to_json(self) -> dict[str, object]:
        return {
            "computation": self.computation,
            "tile_sizes": list(self.tile_sizes),
            "constraints": None if self.constraints is None else self.constraints.to_text(),
            "instructions": [{
                "name": t.name, "opcode": t.opcode, "shape": t.shape,
                "tile_sizes": list(t.tile_sizes), "tile_strides": list(t.tile_strides),
                "tile_offsets_indexing": str(t.tile_offsets_indexing), "exact": t.exact,
                "proof": t.proof.verdict,
            } for t in self.instructions],
            "untiled": [u.to_json() for u in self.untiled],
        }


def program_id_map(dims: Sequence[int], tile_sizes: Sequence[int]) -> IndexingMap:
    """`pid_0` -> origin of its tile of the root, major to minor (last dimension fastest). A
    root with a dimension of size 0 has no programs: the map is known to be empty."""
    counts = [-(-d // t) for d, t in zip(dims, tile_sizes)]
    total = 1
    for c in counts:
        total *= c
    if total == 0:
        return IndexingMap.build([Const(0) for _ in dims], [Var(Interval(0, -1), "pid_0")])
    pid = Dim(0)
    results: list[Expr] = []
    inner = total
    for i, (c, t) in enumerate(zip(counts, tile_sizes)):
        inner //= c
        index = floordiv(pid, inner)
        if i > 0:
            index = mod(index, c)
        results.append(mul(index, t))
    return IndexingMap.build(results, [Var(Interval(0, total - 1), "pid_0")])


def tile_offsets(pid_map: IndexingMap, indexing: IndexingMap,
                 tile_sizes: Sequence[int]) -> IndexingMap:
    """Offsets of a value's tile per program: the root-to-value map at the root tile's origin,
    range variables at their lower bounds (the first element they read). A program takes part
    when its output tile overlaps the map's domain (origin in [lo - t + 1, hi] per dimension),
    not only when its origin lies inside; the map's other constraints (high padding of a
    result) do not restrict programs."""
    relaxed = indexing.replace(
        dims=tuple(Var(Interval(v.bounds.lo - t + 1, v.bounds.hi), v.name)
                   for v, t in zip(indexing.dims, tile_sizes)),
        constraints={})
    composed = compose(pid_map, relaxed)
    lows: dict[Expr, Expr] = {Symbol(i): Const(v.bounds.lo)
                              for i, v in enumerate(composed.range_vars)}
    out = composed.replace(results=tuple(r.substitute(lows) for r in composed.results))
    return out.simplify().remove_unused_symbols()


def _check_extra_output(comp: str, name: str, dims: tuple[int, ...],
                        tiled: Sequence[TiledInstruction], programs: int) -> str | None:
    """An extra output of a multi-output fusion is written by the programs of the first root:
    some tile of it reached from the first root must split it into `programs` disjoint tiles,
    i.e. be what tiling it on its own (same schedule) would give, proven equal. Returns why
    not, or None."""
    from ...solve.smt import equal

    for t in tiled:
        if t.name != name or len(t.tile_sizes) != len(dims):
            continue
        if any(st != 1 for st, sz in zip(t.tile_strides, t.tile_sizes) if sz > 1):
            continue
        own = program_id_map(dims, t.tile_sizes)
        if own.dims[0].bounds.hi + 1 != programs:
            continue
        if equal(own, t.tile_offsets_indexing).holds:
            return None
    return (f"{comp}: unsupported case of multi-output fusion: no tile of the extra output "
            f"{name} reached from the first root writes each element once")


def _tuple_root(module: HloModule, comp: HloComputation, root: HloInstruction) -> str | None:
    """Why a root of tuple shape cannot be tiled, or None for a variadic reduce: its outputs
    have one shape and read the same elements (each reads every operand through the same maps),
    so the tiles reached from output 0 are every output's."""
    leaves = root.shape.leaves()
    unsupported = (f"{comp.name}: a root of tuple shape ({root.opcode} {root.name}) is not yet "
                   "supported (only a variadic reduce is)")
    if root.opcode != "reduce" or any(leaf.is_tuple or leaf.dims != leaves[0].dims
                                      for leaf in leaves):
        return unsupported
    per_leaf = [[[str(m.map) for m in group] for group in
                 instruction_output_to_input(root, comp, k, module=module).maps]
                for k in range(len(leaves))]
    if any(text == "UNDEFINED" for groups in per_leaf for g in groups for text in g):
        return f"{comp.name}: reduce {root.name} has unknown indexing"
    if any(groups != per_leaf[0] for groups in per_leaf):
        return f"{comp.name}: the outputs of reduce {root.name} read different elements"
    return None


def _reached(module: HloModule, comp: HloComputation, start: str
             ) -> list[tuple[str, IndexingMap]]:
    """Every value `start` reads, with each distinct map, operands before their producers."""
    order = {inst.name: i for i, inst in enumerate(comp.instructions)}
    grouped = grouped_output_to_input(module, comp, start=start)
    out = []
    for name, maps in sorted(grouped.maps.items(), key=lambda kv: -order.get(kv[0], -1)):
        if name != start:
            out += [(name, m.map) for m in maps]
    return out


def _contracting_count(module: HloModule, comp: HloComputation, root: HloInstruction) -> int:
    """Contracting dimensions of a dot root: their tile sizes come first (XLA's convention)."""
    if root.opcode not in ("dot", "scaled-dot"):
        return 0
    per_op = instruction_output_to_input(root, comp, 0, module=module)
    return max((m.map.num_range_vars for g in per_op.maps for m in g), default=0)


def _below_contraction(module: HloModule, comp: HloComputation, root: HloInstruction
                       ) -> list[tuple[str, IndexingMap]]:
    """Values under a dot root live in the space (output dims, contracting dims): programs also
    walk the contraction, minor-most, so each operand tile is one step of the K loop."""
    per_op = instruction_output_to_input(root, comp, 0, module=module)
    out: list[tuple[str, IndexingMap]] = []
    for operand, maps in zip(root.operands, per_op.maps):
        for oi in maps:
            m = oi.map.convert_range_variables_to_dimensions(range(oi.map.num_range_vars))
            out.append((operand, m))
            for name, below in _reached(module, comp, operand):
                out.append((name, compose(m, below).simplify()))
    return out


@dataclass(frozen=True)
class SymbolicEntry:
    """One access pattern of one value: the map from the tiling space and its symbolic tile.
    `contraction` says the space includes a dot root's contracting dimensions."""

    name: str
    opcode: str
    shape: str
    indexing: IndexingMap
    tile: SymbolicTile
    contraction: bool


@dataclass(frozen=True)
class SymbolicTiling:
    """Symbolic tiles of every value of a fused computation, before tile sizes are chosen.
    Tiling parameters, in XLA's order: the contracting dimensions of a dot root, then the
    root's output dimensions. In constraints, `d<i>` numbers the output dimensions first, then
    the contracting ones (the order of the space the maps are written over)."""

    computation: str
    roots: tuple[str, ...]
    output_dims: tuple[int, ...]
    contracting_dims: tuple[int, ...]
    entries: tuple[SymbolicEntry, ...]
    constraints: ConstraintExpression
    #: values without a symbolic tile (only with `keep_untiled=True`)
    untiled: tuple[UntiledValue, ...] = ()
    #: False when the root itself is unsupported: nothing was analysed, no constraint holds
    analysed: bool = True

    @property
    def num_parameters(self) -> int:
        return len(self.contracting_dims) + len(self.output_dims)

    def space_sizes(self, tile_sizes: Sequence[int]) -> tuple[int, ...]:
        """XLA-ordered tile sizes -> (output sizes, contracting sizes)."""
        if len(tile_sizes) != self.num_parameters:
            hidden = len(self.contracting_dims)
            what = f" ({hidden} contracting sizes first, then the output's)" if hidden else ""
            raise TilingError(f"{self.computation}: root {self.roots[0]} needs "
                              f"{self.num_parameters} tile sizes{what}, got {len(tile_sizes)}")
        k = len(self.contracting_dims)
        return tuple(tile_sizes[k:]) + tuple(tile_sizes[:k])

    def satisfied_by(self, tile_sizes: Sequence[int]) -> bool:
        space = self.space_sizes(tile_sizes)
        return self.constraints.holds({Dim(i): v for i, v in enumerate(space)})

    def valid_tilings(self) -> list[tuple[int, ...]]:
        """Every candidate tiling (XLA's: powers of two below each extent, and the extent)
        that satisfies the constraints, in lexicographic order of XLA's parameter order."""
        dims = self.contracting_dims + self.output_dims
        return [t for t in flat_tilings(dims) if self.satisfied_by(t)]


def candidate_tile_sizes(extent: int) -> list[int]:
    """Powers of two smaller than `extent`, then `extent` itself."""
    out, p = [], 1
    while p < extent:
        out.append(p)
        p *= 2
    return [*out, extent]


def flat_tilings(dims: Sequence[int]) -> list[tuple[int, ...]]:
    """The cartesian product of `candidate_tile_sizes` over `dims` (last dimension fastest)."""
    return [tuple(t) for t in itertools.product(*(candidate_tile_sizes(d) for d in dims))]


def analyze(module: HloModule, computation: str | None = None, keep_untiled: bool = False
            ) -> SymbolicTiling:
    """Symbolic tiles of every value of `computation` (default: the fused computation of the
    entry's root fusion); TilingError names the first value without one, or, with
    `keep_untiled`, each such value is listed in `untiled` with its reason (and its
    constraints are left out)."""
    comp = _resolve(module, computation)
    roots = [comp.root]
    if comp.root.opcode == "tuple":
        roots = [comp.instruction(n) for n in comp.root.operands]
    root = roots[0]
    untiled: list[UntiledValue] = []

    def fail(inst: HloInstruction, reason: str) -> None:
        if not keep_untiled:
            raise TilingError(reason)
        untiled.append(UntiledValue(inst.name, inst.opcode, str(inst.shape), reason))

    if root.shape.is_tuple:
        why = _tuple_root(module, comp, root)
        if why is not None:
            fail(root, why)
            return SymbolicTiling(comp.name, tuple(r.name for r in roots), (), (), (),
                                  ConstraintExpression.never(), tuple(untiled), analysed=False)
    dims = tuple(root.shape.leaves()[0].dims)
    pending: list[tuple[str, IndexingMap, bool]] = [(root.name, IndexingMap.identity(dims), False)]
    contracting: tuple[int, ...] = ()
    if _contracting_count(module, comp, root):
        below = _below_contraction(module, comp, root)
        contracting = tuple(v.bounds.hi + 1 for v in below[0][1].dims[len(dims):])
        pending += [(n, m, True) for n, m in below]
    else:
        pending += [(n, m, False) for n, m in _reached(module, comp, root.name)]
    entries = []
    constraints = ConstraintExpression.always()
    for name, m, in_contraction in pending:
        inst = comp.instruction(name)
        tile = symbolic_tile(m)
        if isinstance(tile, NoTile) and tile.source is not None and tile.source.is_known_empty:
            continue  # no point reads the value this way (an empty root or operand): no tile
        if isinstance(tile, NoTile):
            fail(inst, f"{comp.name}: {inst.opcode} {name} cannot be tiled: {tile.reason}")
            continue
        # proofs cover every tile size the root may use, not only the map's own extents
        tile = tile.with_tile_size_limits(dims + contracting if in_contraction else dims)
        try:
            constraints = constraints & tile.constraints
        except ConstraintsTooComplex as exc:
            fail(inst, f"{comp.name}: {inst.opcode} {name} cannot be tiled: constraints too "
                       f"complex with those of the values before it: {exc}")
            continue
        entries.append(SymbolicEntry(name, inst.opcode, str(inst.shape), m, tile,
                                     in_contraction))
    reached = {e.name for e in entries} | {u.name for u in untiled}
    for extra in roots[1:]:
        if extra.name not in reached and not _no_elements(extra):
            fail(extra, f"{comp.name}: unsupported case of multi-output fusion: the extra "
                        f"output {extra.name} is not read by the first root {root.name}")
    return SymbolicTiling(comp.name, tuple(r.name for r in roots), dims, contracting,
                          tuple(entries), constraints.simplified(), tuple(untiled))


def _no_elements(inst: HloInstruction) -> bool:
    return any(0 in leaf.dims for leaf in inst.shape.leaves())


def _resolve(module: HloModule, computation: str | None) -> HloComputation:
    if computation is not None:
        return module.computation(computation)
    root = module.entry.root
    if root.opcode != "fusion" or not root.called_computations:
        raise TilingError(f"{module.source}:{root.line}:{root.column}: the entry's root "
                          f"{root.name} is not a fusion; name the computation to tile with "
                          "--computation")
    return module.computation(root.called_computations[0])


def propagate(module: HloModule, computation: str | None, tile_sizes: Sequence[int],
              prove: bool = True, timeout_ms: int = 5000, check_constraints: bool = True,
              analysis: SymbolicTiling | None = None, keep_untiled: bool = False,
              progress: bool = False) -> TiledComputation:
    """Tiles of every value of `computation` (default: the fused computation of the entry's root
    fusion) for the tile sizes (XLA's order: a dot root's contracting sizes, then the root's
    output sizes). Raises TilingError when it cannot be tiled with them; with `keep_untiled`,
    a value that gets no tile (no symbolic tile, or tile sizes that violate its constraints) is
    listed in `untiled` with the reason instead, and the others are still tiled. `progress`:
    a bar of the values done on stderr (`verifidx.core.work.Progress`)."""
    sym = analysis if analysis is not None else analyze(module, computation, keep_untiled)
    comp = module.computation(sym.computation)
    given = tuple(tile_sizes)
    untiled = list(sym.untiled)
    if not sym.analysed:  # nothing to tile (an unsupported root): no constraints, no programs
        return TiledComputation(comp.name, given, None, 0, (), sym.roots, tuple(untiled))
    if not sym.entries and not given:  # a root without elements: nothing read, no programs
        return TiledComputation(comp.name, given, sym.constraints, 0, (), sym.roots,
                                tuple(untiled))
    space = sym.space_sizes(given)
    if any(t < 1 for t in given):
        raise TilingError(f"{comp.name}: tile sizes must be at least 1, got {list(given)}")
    if check_constraints and not keep_untiled and not sym.satisfied_by(given):
        raise TilingError(f"{comp.name}: tile sizes {list(given)} violate the tiling "
                          f"constraints: {sym.constraints.to_text()}")
    n_out = len(sym.output_dims)
    pid_map = program_id_map(sym.output_dims, space[:n_out])
    inner_pid = program_id_map(sym.output_dims + sym.contracting_dims, space)
    tiled: list[TiledInstruction] = []
    seen: set[tuple[str, tuple[int, ...], tuple[int, ...], str]] = set()
    violated: set[str] = set()
    with Progress(len(sym.entries), "tile", progress) as bar:
        for e in sym.entries:
            bar.advance()  # counted when begun: the bar shows values reached
            sizes_here = space if e.contraction else space[:n_out]
            if check_constraints and keep_untiled and not e.tile.satisfied_by(sizes_here):
                if e.name not in violated:
                    violated.add(e.name)
                    untiled.append(UntiledValue(
                        e.name, e.opcode, e.shape, f"{comp.name}: {e.opcode} {e.name} cannot be "
                        f"tiled with tile sizes {list(given)}: they violate its constraints "
                        f"{e.tile.constraints.to_text()}"))
                continue
            offsets = tile_offsets(inner_pid if e.contraction else pid_map, e.indexing,
                                   sizes_here)
            t_sizes = e.tile.evaluate_sizes(sizes_here)
            t_strides = e.tile.evaluate_strides(sizes_here)
            key = (e.name, t_sizes, t_strides, str(offsets))
            if key in seen:
                continue
            seen.add(key)
            if prove:
                # the proofs cover tile sizes up to the root's extents; larger ones (a tile that
                # reaches past the end of a dimension) need proofs that cover them too
                proven = e.tile
                if any(t > b.hi for t, b in zip(sizes_here, proven.tile_size_bounds)):
                    proven = proven.with_tile_size_limits(sizes_here)
                sound, exact = prove_sound(proven, timeout_ms), prove_exact(proven, timeout_ms)
            else:
                sound = exact = TileProof(UNKNOWN, message="not proven (--no-prove)")
            tiled.append(TiledInstruction(e.name, e.opcode, e.shape, t_sizes, t_strides, offsets,
                                          e.tile, sound, exact))
    constraints = sym.constraints
    total = pid_map.dims[0].bounds.hi + 1
    listed = {u.name for u in untiled}
    for extra in sym.roots[1:]:
        inst = comp.instruction(extra)
        if extra in listed or _no_elements(inst):  # an empty output: no program writes it
            continue
        why = _check_extra_output(comp.name, extra, tuple(inst.shape.dims), tiled, total)
        if why is not None:
            if not keep_untiled:
                raise TilingError(why)
            untiled.append(UntiledValue(inst.name, inst.opcode, str(inst.shape), why))
    return TiledComputation(comp.name, given, constraints, total, tuple(tiled), sym.roots,
                            tuple(untiled))


__all__ = ["TiledComputation", "TiledInstruction", "TilingError", "UntiledValue",
           "program_id_map", "propagate", "tile_offsets", "add"]
