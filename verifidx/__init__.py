"""verifidx: indexing maps for tensor compilers, never claiming more than it has proven.

The public API (DESIGN.md): parse/print/compose maps, simplify them with proven rules only,
decide equality (cheap checks and enumeration first, then Z3) and emptiness with Z3, derive
maps from HLO, prove rules.
"""

from . import native as native  # first: decides compiled or pure source (verifidx/native.py)
from .computation_maps import input_to_output, output_to_input, set_simplifier
from .equality import equal as _equal_maps
from .errors import (
    DepthError,
    DivisorError,
    EvaluationError,
    ParseError,
    UnsupportedError,
    VerifidxError,
)
from .expr import Const, Dim, Expr, RtVar, Size, Symbol
from .hlo import parse_hlo
from .indexing_map import AffineMap, IndexingMap, SizeVar, Var, compose
from .interval import Interval, range_of
from .rules.base import gate_laws as _gate_laws
from .simplifier import simplify
from .smt import Verdict, equal_relations, is_empty
from .syntax import parse_affine_map, parse_expr, parse_map, print_affine_map, print_map
from .version import __version__ as __version__

# The laws the expression constructors fold apply only with a current proof (verifidx.laws).
_gate_laws()


def parse_module(text: str, source: str = "<string>", *, check_shapes: bool = False):  # type: ignore[no-untyped-def]
    """HLO text or StableHLO (MLIR) text, told apart from the text; StableHLO needs the extra
    `verifidx[stablehlo]` (jax, jaxlib)."""
    from .stablehlo import parse_module as _parse_module

    return _parse_module(text, source, check_shapes=check_shapes)


def equal(f, g, timeout_ms: int = 2000) -> Verdict:  # type: ignore[no-untyped-def]
    """Whether two maps denote the same relation; lists (or tuples) of maps are compared as the
    unions of their relations (`smt.equal_relations`), as concatenate and pad need."""
    if isinstance(f, (list, tuple)) or isinstance(g, (list, tuple)):
        fs = list(f) if isinstance(f, (list, tuple)) else [f]
        gs = list(g) if isinstance(g, (list, tuple)) else [g]
        return equal_relations(fs, gs, timeout_ms)
    return _equal_maps(f, g, timeout_ms)


def prove(path_or_rule, **kwargs):  # type: ignore[no-untyped-def]
    """Prove rules (a path to a rule file or directory, a rule text, or Rule objects)."""
    from .rules import prove as _prove

    return _prove(path_or_rule, **kwargs)


__all__ = [
    "AffineMap", "Const", "DepthError", "Dim", "DivisorError", "EvaluationError", "Expr",
    "IndexingMap", "Interval",
    "ParseError", "RtVar", "Size", "SizeVar", "Symbol", "UnsupportedError", "Var", "Verdict",
    "VerifidxError",
    "compose", "equal", "input_to_output", "is_empty", "output_to_input", "parse_affine_map",
    "parse_expr", "parse_hlo", "parse_map", "parse_module", "print_affine_map", "print_map",


    "compose", "equal", "equal_relations", "input_to_output", "is_empty", "output_to_input",
    "parse_affine_map", "parse_expr", "parse_hlo", "parse_map", "print_affine_map", "print_map",
    "prove", "range_of", "set_simplifier", "simplify",
]
