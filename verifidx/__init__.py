"""verifidx: indexing maps for tensor compilers, never claiming more than it has proven.

The public API (DESIGN.md): parse/print/compose maps, simplify them with proven rules only,
decide equality (cheap checks and enumeration first, then Z3) and emptiness with Z3, derive
maps from HLO, prove rules.

Importing the package loads only the values (expressions, intervals, maps and their text) and
switches on the constructor laws whose certificates are current. Everything else (the
simplifier, Z3, numpy, the HLO front end, networkx) loads when a name that needs it is first
used (`_LAZY`), so a compiler or a one-shot command pays only for what it calls.
"""

from importlib import import_module as _import_module

from .core import native as native  # first: compiled or pure source (core/native.py)
from .core import seams as _seams
from .core.errors import (
    DepthError,
    DivisorError,
    EvaluationError,
    ParseError,
    UnsupportedError,
    VerifidxError,
)
from .core.expr import Const, Dim, Expr, RtVar, Size, Symbol
from .core.indexing_map import AffineMap, IndexingMap, SizeVar, Var, compose
from .core.indexing_map import register_simplifier as _register_simplifier
from .core.interval import Interval, range_of
from .core.syntax import parse_affine_map, parse_expr, parse_map, print_affine_map, print_map
from .core.version import __version__ as __version__
from .rules.base import gate_laws as _gate_laws

# The laws the expression constructors fold apply only with a current proof (verifidx.core.laws).
_gate_laws()


def _simplify_on_first_use(m: IndexingMap, point_dims: str) -> IndexingMap:
    """`IndexingMap.simplify()` before the simplifier is loaded: loading it registers the
    simplifier itself in this seam (`indexing_map.register_simplifier`)."""
    _import_module("verifidx.simplifier.engine")
    return m.simplify(point_dims)


_register_simplifier(_simplify_on_first_use)


def _load_computation_maps() -> None:
    """`fusion`, `call` and `conditional` get their maps from this analysis, which registers
    itself in `hlo.ops.called` when it loads: a caller of the per-op table loads it on first
    use."""
    _import_module("verifidx.analysis.computation_maps")


_seams.provide("called computations", _load_computation_maps)

#: Names of the API that load their module on first use: name -> (module, attribute).
_LAZY = {
    "simplify": ("verifidx.simplifier.engine", "simplify"),
    "Verdict": ("verifidx.solve.smt", "Verdict"),
    "equal_relations": ("verifidx.solve.smt", "equal_relations"),
    "is_empty": ("verifidx.solve.smt", "is_empty"),
    "parse_hlo": ("verifidx.hlo", "parse_hlo"),
    "input_to_output": ("verifidx.analysis.computation_maps", "input_to_output"),
    "output_to_input": ("verifidx.analysis.computation_maps", "output_to_input"),
    "set_simplifier": ("verifidx.analysis.computation_maps", "set_simplifier"),
    "result_range": ("verifidx.analysis.ranges", "result_range"),
    "fits": ("verifidx.analysis.ranges", "fits"),
    "validate_programs": ("verifidx.clients.translation", "validate_programs"),
}

#: The modules that sat at the top of the package before it had a folder per layer, by
#: their old names (`from verifidx import fusion, layout, tiling`), loaded on first use.
_MODULES = {
    "batch": "verifidx.cli.batch",
    "canonical": "verifidx.core.canonical",
    "computation_maps": "verifidx.analysis.computation_maps",
    "dedup": "verifidx.analysis.dedup",
    "equality": "verifidx.simplifier.equality",
    "errors": "verifidx.core.errors",
    "expr": "verifidx.core.expr",
    "fusion": "verifidx.analysis.fusion",
    "implied_bounds": "verifidx.core.implied_bounds",
    "indexing_map": "verifidx.core.indexing_map",
    "inductor": "verifidx.clients.inductor",
    "interval": "verifidx.core.interval",
    "laws": "verifidx.core.laws",
    "layout": "verifidx.hlo.layout",
    "loop_maps": "verifidx.analysis.loop_maps",
    "presburger": "verifidx.solve.presburger",
    "ranges": "verifidx.analysis.ranges",
    "refinement": "verifidx.analysis.refinement",
    "seams": "verifidx.core.seams",
    "smt": "verifidx.solve.smt",
    "smt_terms": "verifidx.solve.smt_terms",
    "subst": "verifidx.analysis.subst",
    "sympy_bridge": "verifidx.clients.sympy_bridge",
    "syntax": "verifidx.core.syntax",
    "tiling": "verifidx.analysis.tiling",
    "validation": "verifidx.clients.validation",
    "vectorised": "verifidx.core.vectorised",
    "version": "verifidx.core.version",
    "work": "verifidx.core.work",
}


def __getattr__(name: str) -> object:
    if name in _MODULES:
        value: object = _import_module(_MODULES[name])
    else:
        where = _LAZY.get(name)
        if where is None:
            raise AttributeError(f"module 'verifidx' has no attribute {name!r}")
        value = getattr(_import_module(where[0]), where[1])
    globals()[name] = value  # once: later lookups do not come here
    return value


def parse_module(text: str, source: str = "<string>", *, check_shapes: bool = False,  # type: ignore[no-untyped-def]
                 allow_unknown_opcodes: bool = False):
    """HLO text or StableHLO (MLIR) text, told apart from the text; StableHLO needs the extra
    `verifidx[stablehlo]` (jax, jaxlib). HLO text is read as `parse_hlo` reads it."""
    from .stablehlo import parse_module as _parse_module

    return _parse_module(text, source, check_shapes=check_shapes,
                         allow_unknown_opcodes=allow_unknown_opcodes)


def equal(f, g, timeout_ms: int = 2000):  # type: ignore[no-untyped-def]
    """Whether two maps denote the same relation (a `Verdict`); lists (or tuples) of maps are
    compared as the unions of their relations (`smt.equal_relations`), as concatenate and pad
    need."""
    if isinstance(f, (list, tuple)) or isinstance(g, (list, tuple)):
        from .solve.smt import equal_relations

        fs = list(f) if isinstance(f, (list, tuple)) else [f]
        gs = list(g) if isinstance(g, (list, tuple)) else [g]
        return equal_relations(fs, gs, timeout_ms)
    from .simplifier.equality import equal as equal_maps

    return equal_maps(f, g, timeout_ms)


def prove(path_or_rule, **kwargs):  # type: ignore[no-untyped-def]
    """Prove rules (a path to a rule file or directory, a rule text, or Rule objects)."""
    from .rules import prove as _prove

    return _prove(path_or_rule, **kwargs)


__all__ = [
    "AffineMap", "Const", "DepthError", "Dim", "DivisorError", "EvaluationError", "Expr",
    "IndexingMap", "Interval",
    "ParseError", "RtVar", "Size", "SizeVar", "Symbol", "UnsupportedError", "Var", "Verdict",
    "VerifidxError",
    "compose", "equal", "equal_relations", "fits", "input_to_output", "is_empty", "output_to_input",
    "parse_affine_map", "parse_expr", "parse_hlo", "parse_map", "parse_module",
    "print_affine_map", "print_map", "prove", "range_of", "result_range", "set_simplifier",
    "simplify", "validate_programs",
]
