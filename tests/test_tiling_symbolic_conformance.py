"""XLA's SymbolicTile tests (symbolic_tile_floordiv.json, 52 cases), compared as XLA's matchers do
(whitespace-insensitive text), else by proven equivalence of the tiles, else explained: where XLA's
tile differs from ours, both tiles go through the same soundness proof and the test asserts the
counterexample that refutes XLA's."""

from __future__ import annotations

from typing import Any

import pytest
from tiling_conformance import load, record, same_text

import verifidx as vx
from verifidx.analysis.computation_maps import output_to_input
from verifidx.analysis.tiling import NoTile, SymbolicTile, symbolic_tile
from verifidx.analysis.tiling.proof import equivalent, prove_sound
from verifidx.analysis.tiling.symbolic_tile import tile_from_text

CORPUS = "symbolic_tile_floordiv.json"
CASES = load(CORPUS)

#: Cases whose text we do not reproduce, with why. "form": the tiles differ in text only and are
#: proven equivalent (same element set for every valid tile size). "xla-unsound": XLA's tile misses
#: elements that are read, for some tile size its constraints allow; the test asserts the
#: counterexample and that our tile (or our refusal) is sound.
EXPLAINED: dict[str, tuple[str, str]] = {
    "CanPropagateTileThroughTrivialReshape#0": (
        "form", "our reshape map drops the point dimension (d0 * 11 + d1 becomes d1), so the "
        "size is d1 instead of d0 * d1 with d0 = 1 and no constraint is needed"),
    "CanPropagateTileThroughNonTrivialMergeReshapeFromOutputToInput#0": (
        "form", "our map simplifies d0 floordiv 48 (d0 < 48) to 0: size 1 instead of "
        "(d0 + 47) floordiv 48, which is 1 for every tile size"),
    "CanPropagateTileThroughNonTrivialSplitReshapeFromOutputToInput#0": (
        "form", "the stride is the same nested condition, printed by our expression printer"),
    "CanCombineCompatibleConstraints#0": (
        "form", "as the merge reshape: a constant 0 result instead of d0 floordiv 48"),
    "CanDeriveTileWhenPreexistingConstraintsCanBeSimplifiedAway#0": (
        "form", "the stride is the same nested condition, printed by our expression printer"),
    "CanDeriveTileWhenPreexistingConstraintsModelRightPadding#0": (
        "form", "the stride is the same nested condition, printed by our expression printer"),
    "CanPropagateTileModAndFloorDiv#0": (
        "form", "verifidx adds the divisibility constraint of `d0 floordiv 35` (XLA has none for "
        "floordiv; see test_tiling_properties.py for a fusion where that is unsound); here the "
        "mod constraints already imply it, so the tiles are proven equivalent"),
    "CanPropagateTileThroughSplitReshapeOfReverse#0": (
        "xla-unsound", "XLA drops the divisibility constraints of `mod`/`floordiv` under a "
        "multiplication by -1 (its product case keeps only size and stride); without them tile "
        "size 9 reads (7, 0), outside its tile. Ours keeps the constraints"),
    "CanPropagateTileThroughReverseOfCombiningReshape#0": (
        "xla-unsound", "XLA combines a sum whose strides have both signs (24, -6, -1) into one "
        "range starting at the offset; the elements read run both ways from it. We refuse (no "
        "tile) rather than return an unsound one"),
}


def _short(case: dict[str, Any]) -> str:
    return case["id"].split(":", 1)[1]


def _source(case: dict[str, Any]) -> vx.IndexingMap:
    target = case.get("target")
    if not target:
        return vx.parse_map(case["input_map_text"])
    module = vx.parse_hlo(case["hlo"])
    root = module.entry.root
    indexing = output_to_input(root, module, 0, module=module)
    return indexing.maps[target["operand_id"]][0].map  # type: ignore[union-attr]


def _outcome(case: dict[str, Any]) -> str:
    kind = case["expected_kind"]
    if kind == "operand_count":
        module = vx.parse_hlo(case["hlo"])
        got = len(output_to_input(module.entry.root, module, 0, module=module))  # type: ignore[arg-type]
        assert got == case["expected"]
        return "match"
    source = _source(case)
    ours = symbolic_tile(source)
    explained = EXPLAINED.get(_short(case))
    if kind == "no_tile":
        assert isinstance(ours, NoTile), f"XLA derives no tile, we derived {ours}"
        assert ours.reason
        return "match"
    if kind == "stride_map_evaluation":
        assert isinstance(ours, SymbolicTile)
        assert list(ours.evaluate_strides(case["params"]["tile_sizes"])) == case["expected"]
        return "match"
    assert kind == "symbolic_tile"
    if isinstance(ours, SymbolicTile) and same_text(ours.to_text(), case["expected"]):
        assert explained is None, "explained as different but reproduced: update EXPLAINED"
        return "match"
    assert explained is not None, f"not reproduced and not explained:\n{ours}"
    how, _why = explained
    xla = tile_from_text(case["expected"], source)
    if how == "form":
        assert isinstance(ours, SymbolicTile)
        verdict = equivalent(ours, xla)
        assert verdict.verdict == "proved", verdict
        return "proven equivalent"
    assert how == "xla-unsound"
    refuted = prove_sound(xla)
    assert refuted.verdict == "refuted", refuted
    assert refuted.counterexample
    if isinstance(ours, SymbolicTile):
        assert prove_sound(ours).verdict == "proved"
    else:
        assert "both signs" in ours.reason
    return "XLA tile refuted"


@pytest.mark.parametrize("case", CASES, ids=[c["id"].split(":", 1)[1] for c in CASES])
def test_symbolic_tile_case(case: dict[str, Any]) -> None:
    outcome = _outcome(case)
    record(CORPUS, f"{case['expected_kind']}: {outcome}")


def test_every_case_is_checked() -> None:
    assert len(CASES) == 52
    kinds = {c["expected_kind"] for c in CASES}
    assert kinds == {"symbolic_tile", "no_tile", "stride_map_evaluation", "operand_count"}
