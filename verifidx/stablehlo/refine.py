"""Refinement, proven: a dynamic program's parametric maps against its refined static program.

`refine(text, types)` runs StableHLO's own refinement passes through the bindings
(`stablehlo-refine-arguments` with one type per argument of the public function,
`stablehlo-refine-shapes`, `stablehlo-canonicalize-dynamism`) and converts the static program.
`#stablehlo.bounds` encodings are dropped first, because `stablehlo-refine-shapes` leaves
bounded types alone; they are dropped in the parsed module, which no longer verifies until the
passes have refined it, so the verifier runs once, after the passes.
`compare(dynamic, static, sizes)` instantiates the parametric maps of the entry computation at
the refined sizes and asks Z3 whether they equal the static program's maps: each map of one side
must be proven equal to a map of the other. A refutation comes with the solver's counterexample;
an unknown answer is never reported as a proof.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifidx.errors import ParseError
from verifidx.hlo.computation_maps import computation_indexing
from verifidx.hlo.dynamic import SymSize, instantiate_sizes, leaf_sizes
from verifidx.hlo.module import HloModule
from verifidx.hlo.runtime import OperandIndexing
from verifidx.indexing_map import IndexingMap
from verifidx.smt import Verdict, equal

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
    from verifidx.stablehlo.bindings import drop_bounds, parse, run_passes

    ctx, module = parse(text, source)
    drop_bounds(ctx, module)
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
    size variable, paired with the refined program's static size of that dimension."""
    values: dict[str, int] = {}
    for p, q in zip(dynamic.entry.parameters, static.entry.parameters):
        sizes = leaf_sizes(p)
        if not sizes:
            continue
        for d, s in enumerate(sizes):
            if isinstance(s, SymSize) and s.const == 0 and len(s.terms) == 1 \
                    and s.terms[0][1] == 1 and d < q.shape.rank:
                values[s.terms[0][0].key] = q.shape.dims[d]
    return values


@dataclass(frozen=True)
class Check:
    """One (output, parameter) pair of the entry computation: proven equal or not."""

    output: int
    parameter: int
    holds: bool | None
    message: str = ""
    counterexample: Mapping[str, int] | None = None


def _find_equal(m: IndexingMap, others: Sequence[IndexingMap]) -> Verdict:
    last = Verdict(None, message="no map to compare with")
    for o in others:
        v = equal(m, o)
        if v.holds:
            return v
        if v.holds is False or last.holds is None:
            last = v
    return last


def instantiate(maps: Sequence[OperandIndexing], values: Mapping[str, int]
                ) -> list[IndexingMap]:
    return [instantiate_sizes(m, values).map.simplify() for m in maps]


def compare(dynamic: HloModule, static: HloModule, values: Mapping[str, int]) -> list[Check]:
    """Parametric maps of `dynamic`'s entry at `values` against `static`'s entry maps."""
    dyn = computation_indexing(dynamic, dynamic.entry, "out2in")
    sta = computation_indexing(static, static.entry, "out2in")
    keys = sorted({(o, p) for o, p, _l in dyn.maps} | {(o, p) for o, p, _l in sta.maps})
    checks: list[Check] = []
    for o, p in keys:
        a = instantiate(dyn.maps_for(o, p), values)
        b = [m.map for m in sta.maps_for(o, p)]
        if any(m.is_undefined for m in (*a, *b)):
            checks.append(Check(o, p, None, "unknown indexing on one side: nothing to prove"))
            continue
        verdict: Verdict | None = None
        for xs, ys in ((a, b), (b, a)):
            for x in xs:
                v = _find_equal(x, ys)
                if not v.holds:
                    verdict = v
                    break
            if verdict is not None:
                break
        if verdict is None:
            checks.append(Check(o, p, True, "equal"))
        else:
            checks.append(Check(o, p, verdict.holds, verdict.message, verdict.counterexample))
    return checks
