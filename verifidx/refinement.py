"""Refinement, proven: the parametric maps of a dynamic program, instantiated at the sizes
StableHLO's refinement passes chose (`verifidx.stablehlo.refine`), against the maps of the
refined static program.

For each (output, parameter) of the entry computation, each map of one side must be proven equal
(`vx.equal`, Z3) to a map of the other. A refutation comes with the solver's counterexample; an
unknown answer, or unknown indexing on either side, is never reported as a proof.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from verifidx.computation_maps import computation_indexing
from verifidx.hlo.module import HloModule
from verifidx.indexing_map import IndexingMap
from verifidx.smt import Verdict, equal
from verifidx.stablehlo.refine import instantiate


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
