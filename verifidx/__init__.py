"""verifidx: indexing maps for tensor compilers, never claiming more than it has proven.

The public API (DESIGN.md): parse/print/compose maps, simplify them with proven rules only,
decide equality and emptiness with Z3, derive maps from HLO, prove rules.
"""

from .computation_maps import input_to_output, output_to_input, set_simplifier
from .errors import EvaluationError, ParseError, UnsupportedError, VerifidxError
from .expr import Const, Dim, Expr, RtVar, Symbol
from .hlo import parse_hlo
from .indexing_map import AffineMap, IndexingMap, Var, compose
from .interval import Interval, range_of
from .simplifier import simplify
from .syntax import parse_affine_map, parse_expr, parse_map, print_affine_map, print_map
from .version import __version__ as __version__


def parse_module(text: str, source: str = "<string>"):  # type: ignore[no-untyped-def]
    """HLO text or StableHLO (MLIR) text, told apart from the text; StableHLO needs the extra
    `verifidx[stablehlo]` (jax, jaxlib)."""
    from .stablehlo import parse_module as _parse_module

    return _parse_module(text, source)

# Z3 loads on first use of a solver name, so that `import verifidx` (and the pytest plugin that
# every pytest run in an environment with verifidx loads) stays cheap.
_SOLVER_NAMES = ("Verdict", "equal", "is_empty")


def __getattr__(name: str) -> object:
    if name in _SOLVER_NAMES:
        from . import smt

        return getattr(smt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def prove(path_or_rule, **kwargs):  # type: ignore[no-untyped-def]
    """Prove rules (a path to a rule file or directory, a rule text, or Rule objects)."""
    from .rules import prove as _prove

    return _prove(path_or_rule, **kwargs)


__all__ = [
    "AffineMap", "Const", "Dim", "EvaluationError", "Expr", "IndexingMap", "Interval",
    "ParseError", "RtVar", "Symbol", "UnsupportedError", "Var", "Verdict", "VerifidxError",
    "compose", "equal", "input_to_output", "is_empty", "output_to_input", "parse_affine_map",
    "parse_expr", "parse_hlo", "parse_map", "parse_module", "print_affine_map", "print_map",
    "prove", "range_of", "set_simplifier", "simplify",
]
