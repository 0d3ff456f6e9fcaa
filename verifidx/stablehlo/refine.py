"""Refinement: a dynamic program refined to static argument types by StableHLO's passes.

`refine(text, types)` runs StableHLO's own refinement passes through the bindings
(`stablehlo-refine-arguments` with one type per argument of the public function,
`stablehlo-refine-shapes`, `stablehlo-canonicalize-dynamism`) and converts the static program.
`#stablehlo.bounds` encodings are dropped first, because `stablehlo-refine-shapes` leaves
bounded types alone; they are dropped in the parsed module, which no longer verifies until the
passes have refined it, so the verifier runs once, after the passes. `argument_sizes` pairs the
size variables of the dynamic entry's arguments (and outputs) with the refined sizes and
`instantiate` puts them into parametric maps; `verifidx.analysis.refinement` proves the result equal
to the static maps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from verifidx.core.errors import ParseError
from verifidx.core.indexing_map import IndexingMap
from verifidx.hlo.dynamic_dims import SizeVar, SymSize, instantiate_sizes, leaf_sizes
from verifidx.hlo.module import HloModule
from verifidx.hlo.runtime import OperandIndexing

_TYPE = re.compile(r"tensor<[^<>]*(?:<[^<>]*>[^<>]*)*>")


def split_types(text: str, source: str = "<argument>") -> list[str]:
    """`'tensor<16x4xf32>,tensor<4xf32>'` -> the two types (commas inside `<>` kept)."""
    types = [m.group(0) for m in _TYPE.finditer(text)]
    rest = _TYPE.sub("", text).replace(",", "").strip()
    if not types or rest:
        raise ParseError(f"expected a comma-separated list of tensor types, got {text!r}",
                         1, 1, source)
    return types


def refined_module(text: str, types: Sequence[str], source: str = "<string>"
                   ) -> tuple[Any, Any]:
    """(context, MLIR module) of `text` refined to argument `types` by StableHLO's passes."""
    from verifidx.stablehlo.bindings import drop_bounds, parse, run_passes, specialize_calls

    ctx, module = parse(text, source)
    drop_bounds(ctx, module)
    specialize_calls(ctx, module, source)
    pipeline = ("builtin.module(stablehlo-refine-arguments{types=" + ",".join(types) + "},"
                "stablehlo-refine-shapes,func.func(stablehlo-canonicalize-dynamism),"
                "func.func(chlo-legalize-to-stablehlo))")
    run_passes(ctx, module, pipeline, source, verify_each=False)
    return ctx, module


def refine(text: str, types: Sequence[str], source: str = "<string>") -> HloModule:
    """The static program: refinement passes run on `text` for argument `types`."""
    from verifidx.stablehlo.convert import convert_module

    ctx, module = refined_module(text, types, source)
    with ctx:
        return convert_module(module, source)


def argument_sizes(dynamic: HloModule, static: HloModule) -> dict[str, int]:
    """Size variable key -> value: each dynamic dimension of the entry's parameters that is one
    size variable, paired with the refined program's static size of that dimension; then each
    dimension of the entry's outputs that is a size variable of its own (one the program
    computes, as `jnp.pad` to a multiple does), paired with the refined output's size."""
    values: dict[str, int] = {}
    pairs = list(zip(dynamic.entry.parameters, static.entry.parameters))
    root, fixed = dynamic.entry.root, static.entry.root
    leaves, fixed_leaves = root.shape.leaves(), fixed.shape.leaves()
    for p, q in pairs:
        _pair_sizes(leaf_sizes(p), q.shape.dims, values)
    if len(leaves) == len(fixed_leaves):
        for k, q_shape in enumerate(fixed_leaves):
            _pair_sizes(leaf_sizes(root, k), q_shape.dims, values)
    return values


def _pair_sizes(sizes: Sequence[SymSize | None] | None, dims: Sequence[int],
                values: dict[str, int]) -> None:
    for d, s in enumerate(sizes or ()):
        if isinstance(s, SymSize) and s.const == 0 and len(s.terms) == 1 \
                and s.terms[0][1] == 1 and len(s.terms[0][0]) == 1 and d < len(dims) \
                and isinstance(s.terms[0][0][0], SizeVar):  # not a derived size
            values.setdefault(s.terms[0][0][0].key, dims[d])


def instantiate(maps: Sequence[OperandIndexing], values: Mapping[str, int]
                ) -> list[IndexingMap]:
    return [instantiate_sizes(m, values).map.simplify() for m in maps]
