"""Tile propagation through a fused computation (in the spirit of XLA's SymbolicTileAnalysis).

Tile sizes are given for the root's output. Every value the root reads gets, per distinct access
pattern (the root-to-value maps of `verifidx.fusion.grouped_output_to_input`), the symbolic tile
of that map evaluated at the root's tile sizes: sizes, strides, and the map from the program id
`pid_0` to the tile's offsets. Programs walk the root's tiles in major-to-minor order (the last
dimension varies fastest), as XLA's default schedule does. Identical tiles of one value are kept
once; a value read through two different patterns gets two tiles. The constraints of all symbolic
tiles are combined (conjunction); tile sizes that violate them, or a value without a symbolic tile,
make the fusion untileable (`TilingError`, with the reason).

Each tile carries the soundness proof of its symbolic tile (for every tile size, see `proof`) and
whether exactness was proven.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import VerifidxError
from ..expr import Const, Dim, Expr, Symbol, add, floordiv, mod, mul
from ..fusion import grouped_output_to_input
from ..hlo.indexing import output_to_input as instruction_output_to_input
from ..hlo.module import HloComputation, HloInstruction, HloModule
from ..indexing_map import IndexingMap, Var, compose
from ..interval import Interval
from .constraints import ConstraintExpression
from .proof import UNKNOWN, TileProof, prove_exact, prove_sound
from .symbolic_tile import NoTile, SymbolicTile, symbolic_tile


class TilingError(VerifidxError):
    """The fusion cannot be tiled with these tile sizes (the message says why)."""


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
    constraints: ConstraintExpression
    num_programs: int
    instructions: tuple[TiledInstruction, ...]

    def tiles_of(self, name: str) -> list[TiledInstruction]:
        return [t for t in self.instructions if t.name == name]

    def to_json(self) -> dict[str, object]:
        return {
            "computation": self.computation,
            "tile_sizes": list(self.tile_sizes),
            "constraints": self.constraints.to_text(),
            "instructions": [{
                "name": t.name, "opcode": t.opcode, "shape": t.shape,
                "tile_sizes": list(t.tile_sizes), "tile_strides": list(t.tile_strides),
                "tile_offsets_indexing": str(t.tile_offsets_indexing), "exact": t.exact,
                "proof": t.proof.verdict,
            } for t in self.instructions],
        }


def program_id_map(dims: Sequence[int], tile_sizes: Sequence[int]) -> IndexingMap:
    """`pid_0` -> origin of its tile of the root, major to minor (last dimension fastest)."""
    counts = [-(-d // t) for d, t in zip(dims, tile_sizes)]
    total = 1
    for c in counts:
        total *= c
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


def tile_offsets(pid_map: IndexingMap, indexing: IndexingMap) -> IndexingMap:
    """Offsets of a value's tile per program: the root-to-value map at the root tile's origin,
    range variables at their lower bounds (the first element they read)."""
    composed = compose(pid_map, indexing)
    lows: dict[Expr, Expr] = {Symbol(i): Const(v.bounds.lo)
                              for i, v in enumerate(composed.range_vars)}
    out = composed.replace(results=tuple(r.substitute(lows) for r in composed.results))
    return out.simplify().remove_unused_symbols()


def _check_extra_output(comp: str, name: str, dims: tuple[int, ...],
                        tiled: Sequence[TiledInstruction], programs: int) -> None:
    """An extra output of a multi-output fusion is written by the programs of the first root:
    some tile of it reached from the first root must split it into `programs` disjoint tiles,
    i.e. be what tiling it on its own (same schedule) would give, proven equal."""
    from ..smt import equal

    for t in tiled:
        if t.name != name or len(t.tile_sizes) != len(dims):
            continue
        if any(st != 1 for st, sz in zip(t.tile_strides, t.tile_sizes) if sz > 1):
            continue
        own = program_id_map(dims, t.tile_sizes)
        if own.dims[0].bounds.hi + 1 != programs:
            continue
        if equal(own, t.tile_offsets_indexing).holds:
            return
    raise TilingError(f"{comp}: unsupported case of multi-output fusion: no tile of the extra "
                      f"output {name} reached from the first root writes each element once")


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


def _below_contraction(module: HloModule, comp: HloComputation, root: HloInstruction,
                       space_sizes: tuple[int, ...]
                       ) -> list[tuple[str, IndexingMap, IndexingMap, tuple[int, ...]]]:
    """Values under a dot root live in the space (output dims, contracting dims): its programs
    also walk the contraction, minor-most, so each operand tile is one step of the K loop."""
    per_op = instruction_output_to_input(root, comp, 0, module=module)
    out: list[tuple[str, IndexingMap, IndexingMap, tuple[int, ...]]] = []
    programs: IndexingMap | None = None
    for operand, maps in zip(root.operands, per_op.maps):
        for oi in maps:
            m = oi.map.convert_range_variables_to_dimensions(range(oi.map.num_range_vars))
            if m.num_dims != len(space_sizes):
                raise TilingError(f"{comp.name}: operand {operand} of {root.name} does not "
                                  "read through every contracting dimension")
            if programs is None:
                programs = program_id_map([v.bounds.hi + 1 for v in m.dims], space_sizes)
            out.append((operand, m, programs, space_sizes))
            for name, below in _reached(module, comp, operand):
                out.append((name, compose(m, below).simplify(), programs, space_sizes))
    return out


def _resolve(module: HloModule, computation: str | None) -> HloComputation:
    if computation is not None:
        return module.computation(computation)
    root = module.entry.root
    if root.opcode != "fusion" or not root.called_computations:
        raise TilingError(f"the entry's root {root.name} is not a fusion; name the computation "
                          "to tile with --computation")
    return module.computation(root.called_computations[0])


def propagate(module: HloModule, computation: str | None, tile_sizes: Sequence[int],
              prove: bool = True, timeout_ms: int = 5000) -> TiledComputation:
    """Tiles of every value of `computation` (default: the fused computation of the entry's root
    fusion) for the root tile sizes `tile_sizes`. Raises TilingError when it cannot be tiled."""
    comp = _resolve(module, computation)
    roots = [comp.root]
    if comp.root.opcode == "tuple":
        roots = [comp.instruction(n) for n in comp.root.operands]
    root = roots[0]
    if root.shape.is_tuple:
        raise TilingError(f"{comp.name}: nested tuple roots are not yet supported")
    dims = tuple(root.shape.dims)
    hidden = _contracting_count(module, comp, root)
    given = tuple(tile_sizes)
    if len(given) != hidden + len(dims):
        what = f" ({hidden} contracting sizes first, then the output's)" if hidden else ""
        raise TilingError(f"{comp.name}: root {root.name} needs {hidden + len(dims)} tile "
                          f"sizes{what}, got {len(given)}")
    if any(t < 1 for t in given):
        raise TilingError(f"{comp.name}: tile sizes must be at least 1, got {list(given)}")
    sizes = given[hidden:]
    pid_map = program_id_map(dims, sizes)
    # (value, root-space-to-value map, program map of that space, tile sizes of that space)
    pending: list[tuple[str, IndexingMap, IndexingMap, tuple[int, ...]]] = [
        (root.name, IndexingMap.identity(dims), pid_map, sizes)]
    if hidden:
        pending += _below_contraction(module, comp, root, sizes + given[:hidden])
    else:
        pending += [(n, m, pid_map, sizes) for n, m in _reached(module, comp, root.name)]
    constraints = ConstraintExpression.always()
    tiled: list[TiledInstruction] = []
    seen: set[tuple[str, tuple[int, ...], tuple[int, ...], str]] = set()
    env: dict[Expr, int] = {}
    for name, m, programs, space_sizes in pending:
        inst = comp.instruction(name)
        tile = symbolic_tile(m)
        if isinstance(tile, NoTile):
            raise TilingError(f"{comp.name}: {name} cannot be tiled: {tile.reason}")
        constraints = constraints & tile.constraints
        env.update({Dim(i): v for i, v in enumerate(space_sizes)})
        offsets = tile_offsets(programs, tile.source)
        t_sizes = tile.evaluate_sizes(space_sizes)
        t_strides = tile.evaluate_strides(space_sizes)
        key = (name, t_sizes, t_strides, str(offsets))
        if key in seen:
            continue
        seen.add(key)
        if prove:
            sound, exact = prove_sound(tile, timeout_ms), prove_exact(tile, timeout_ms)
        else:
            sound = exact = TileProof(UNKNOWN, message="not proven (--no-prove)")
        tiled.append(TiledInstruction(name, inst.opcode, str(inst.shape), t_sizes, t_strides,
                                      offsets, tile, sound, exact))
    constraints = constraints.simplified()
    if not constraints.holds(env):
        raise TilingError(f"{comp.name}: tile sizes {list(given)} violate the tiling "
                          f"constraints: {constraints.to_text()}")
    total = pid_map.dims[0].bounds.hi + 1
    for extra in roots[1:]:
        _check_extra_output(comp.name, extra.name, tuple(extra.shape.dims), tiled, total)
    return TiledComputation(comp.name, sizes, constraints, total, tuple(tiled))


__all__ = ["TiledComputation", "TiledInstruction", "TilingError", "program_id_map", "propagate",
           "tile_offsets", "add"]
