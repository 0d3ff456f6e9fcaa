"""verifidx: indexing maps for tensor compilers, never claiming more than it has proven."""

from .errors import EvaluationError, ParseError, UnsupportedError, VerifidxError
from .expr import Const, Dim, Expr, RtVar, Symbol
from .indexing_map import AffineMap, IndexingMap, Var, compose
from .interval import Interval, range_of
from .syntax import parse_affine_map, parse_expr, parse_map, print_affine_map, print_map

__version__ = "0.1.0"

__all__ = [
    "AffineMap", "Const", "Dim", "EvaluationError", "Expr", "IndexingMap", "Interval",
    "ParseError", "RtVar", "Symbol", "UnsupportedError", "Var", "VerifidxError", "compose",
    "parse_affine_map", "parse_expr", "parse_map", "print_affine_map", "print_map", "range_of",
]
