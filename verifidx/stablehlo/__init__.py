"""StableHLO in: MLIR text as JAX and `stablehlo-opt` print it, read through jaxlib's MLIR
bindings (the optional extra `verifidx[stablehlo]`) and converted into verifidx's HLO IR, so that
the per-op table, computation maps, deduplication and fusion apply unchanged.

`parse_module(text)` reads either language, telling them apart from the text.
"""

from __future__ import annotations

from verifidx.hlo.module import HloModule
from verifidx.hlo.parser import looks_like_mlir
from verifidx.stablehlo.bindings import StableHloUnavailable

__all__ = ["StableHloUnavailable", "is_mlir_text", "parse_module", "parse_stablehlo"]

is_mlir_text = looks_like_mlir


def parse_stablehlo(text: str, source: str = "<string>") -> HloModule:
    """Parse, verify and convert StableHLO text; `chlo` ops are first decomposed by the
    bindings' `chlo-legalize-to-stablehlo`. Raises ParseError (with the MLIR diagnostic's line
    and column) or StableHloUnavailable."""
    from verifidx.stablehlo.bindings import parse, run_passes
    from verifidx.stablehlo.convert import convert_module

    ctx, module = parse(text, source)
    if "chlo." in text:
        run_passes(ctx, module, "builtin.module(func.func(chlo-legalize-to-stablehlo))", source)
    with ctx:
        return convert_module(module, source)


def parse_module(text: str, source: str = "<string>", *, check_shapes: bool = False,
                 allow_unknown_opcodes: bool = False) -> HloModule:
    """HLO text or StableHLO (MLIR) text, whichever `text` is.

    `check_shapes` asks the HLO reader to check declared shapes against the ops' shape rules,
    and `allow_unknown_opcodes` lets it read a word that is no HLO opcode (`parse_hlo`);
    StableHLO's own verifier always checks both for MLIR text.
    """
    if is_mlir_text(text):
        return parse_stablehlo(text, source)
    from verifidx.hlo.parser import parse_hlo

    return parse_hlo(text, source, check_shapes=check_shapes,
                     allow_unknown_opcodes=allow_unknown_opcodes)
