"""XLA's CoalescingAnalysis tests (coalescing_analysis.json, 26 cases).

verifidx has no GPU emitters: thread order is the loop emitter's by default. Where XLA's test picks
another emitter (transpose, reduction), the test asserts what the loop order gives and why it
differs (EXPLAINED)."""

from __future__ import annotations

from typing import Any

import pytest
from tiling_conformance import load, record

import verifidx as vx
from verifidx.analysis.tiling.coalescing import (
    bandwidth_utilization,
    fusion_coalescing,
    read_coalesced_heuristic,
)
from verifidx.analysis.tiling.propagation import propagate

CORPUS = "coalescing_analysis.json"
CASES = load(CORPUS)

REDUCTION = ("XLA emits this reduction with its reduction emitter, whose threads walk the reduced "
             "(minor) dimension; verifidx's default loop order gives each thread one output "
             "element, so a warp's load for one reduction step is strided")
#: id -> (what verifidx answers, with the number of transactions of its worst warp load, and why)
EXPLAINED: dict[str, tuple[list[bool], list[int], str]] = {
    "Transpose#0": ([False], [32], "XLA uses its transpose emitter (a shared-memory tile); in "
                    "the loop order, threads walk the output's minor dimension, which is the "
                    "input's stride-32 dimension"),
    "RowReduction#0": ([False], [32], REDUCTION),
    "MultiRowReduction#0": ([False], [32], REDUCTION),
    "VariadicReduceViaReductionEmitter#0": ([False, False, True, True], [32, 32, 1, 1],
                                            REDUCTION),
}


def _short(case: dict[str, Any]) -> str:
    return case["id"].split(":", 1)[1]


def _check(case: dict[str, Any]) -> str:
    module = vx.parse_hlo(case["hlo"])
    kind = case["expected_kind"]
    target = case["target"]
    if kind == "per_operand_coalescing":
        fusion = module.entry.instruction(target["instruction"])
        result = fusion_coalescing(module, fusion)
        got = [o.coalesced for o in result.operands]
        explained = EXPLAINED.get(_short(case))
        if explained is None:
            assert got == case["expected"]
            return "match"
        coalesced, transactions, _why = explained
        assert got == coalesced and got != case["expected"]
        assert [o.transactions_per_warp for o in result.operands] == transactions
        return "differs (emitter not modelled)"
    if kind == "heuristic_coalescing":
        fusion = module.entry.instruction(target["instruction"])
        producer = module.entry.instruction(target["operand"])
        assert read_coalesced_heuristic(module, producer, fusion) == case["expected"]
        return "match"
    assert kind == "bandwidth_utilization_rate"
    params = case["params"]
    root = module.entry.root
    tiled = propagate(module, module.entry.name, params["tile_sizes"], prove=False)
    got = []
    for name in root.operands:
        (tile,) = tiled.tiles_of(name)
        got.append(bandwidth_utilization(module.entry.instruction(name).shape, tile.tile_sizes,
                                         tile.tile_strides,
                                         params["dram_to_l2_transaction_size_bytes"]))
    assert got == pytest.approx(case["expected"])
    return "match"


@pytest.mark.parametrize("case", CASES, ids=[_short(c) for c in CASES])
def test_coalescing_case(case: dict[str, Any]) -> None:
    record(CORPUS, f"{case['expected_kind']}: {_check(case)}")


def test_corpus_size() -> None:
    assert len(CASES) == 26
