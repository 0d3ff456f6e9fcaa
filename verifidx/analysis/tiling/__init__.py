"""Symbolic tiles, tile propagation through fusions, and coalescing, each tile proven.

    from verifidx import tiling
    tiling.symbolic_tile(map)                        # SymbolicTile | NoTile
    tiling.prove_sound(tile), tiling.prove_exact(tile)
    tiling.analyze(module, computation)              # symbolic tiles of every value
    tiling.propagate(module, computation, [1, 10])   # concrete tiles; TilingError if impossible
    tiling.propagate(..., keep_untiled=True)         # ... or per-value reasons in `.untiled`
    tiling.coalescing(module)                        # per fusion operand

`docs/tiling.md` documents the semantics and the JSON of `verifidx tile` / `verifidx coalescing`.
"""

from .coalescing import FusionCoalescing, OperandCoalescing, fusion_coalescing, loop_thread_order
from .coalescing import coalescing as coalescing
from .constraints import ConstraintExpression
from .proof import TileProof, prove_exact, prove_sound
from .propagation import (
    SymbolicTiling,
    TiledComputation,
    TiledInstruction,
    TilingError,
    UntiledValue,
    analyze,
    propagate,
)
from .symbolic_tile import NoTile, SymbolicTile, symbolic_tile

__all__ = [
    "ConstraintExpression", "FusionCoalescing", "NoTile", "OperandCoalescing", "SymbolicTile",
    "SymbolicTiling", "TileProof", "TiledComputation", "TiledInstruction", "TilingError",
    "UntiledValue", "analyze", "coalescing", "fusion_coalescing", "loop_thread_order", "propagate",
    "prove_exact", "prove_sound", "symbolic_tile",
]
