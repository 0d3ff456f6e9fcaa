"""Symbolic tiles, tile propagation through fusions, and coalescing, each tile proven."""

from .constraints import ConstraintExpression
from .symbolic_tile import NoTile, SymbolicTile, symbolic_tile

__all__ = ["ConstraintExpression", "NoTile", "SymbolicTile", "symbolic_tile"]
