"""Fusion indexing (issue 6): seed examples, XLA's fusion conformance cases with proven
deduplication, grouped indexing, epilogues, and diamonds that must not blow up."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from conformance import cases_of
from test_conformance_ops import FUSION_DIFFERENCES, ExpectedMap, _same_map, parse_expected

from verifidx.analysis import computation_maps
from verifidx.analysis.computation_maps import set_proven_dedup
from verifidx.analysis.fusion import (
    computation_graph,
    epilogue_input_to_output,
    fusion_output_to_input,
    group_by_producers,
    grouped_output_to_input,
    to_dot,
)
from verifidx.core.indexing_map import IndexingMap
from verifidx.core.syntax import parse_map, same_text
from verifidx.hlo import parse_hlo
from verifidx.hlo.indexing import output_to_input
from verifidx.hlo.runtime import OperandIndexing
from verifidx.solve import smt

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _params(name: str) -> dict[str, tuple[OperandIndexing, ...]]:
    module = parse_hlo((EXAMPLES / name).read_text(), name)
    calls = [i.called_computations[0] for i in module.entry.instructions if i.opcode == "fusion"]
    return fusion_output_to_input(module, calls[0] if calls else module.entry)


def test_seed_tensor_plus_transpose_has_two_maps() -> None:
    (maps,) = [v for v in _params("seed_fusion_tensor_plus_transpose.hlo").values()]
    texts = sorted(str(m.map) for m in maps)
    assert texts == ["(d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]",
                     "(d0, d1) -> (d1, d0), domain: d0 in [0, 999], d1 in [0, 999]"]


def test_seed_deduplicated_chain_has_one_map() -> None:
    (maps,) = [v for v in _params("seed_fusion_deduplicated.hlo").values()]
    assert [str(m.map) for m in maps] == [
        "(d0, d1, d2) -> (d2, d0, d1), domain: d0 in [0, 9], d1 in [0, 49], d2 in [0, 19]"]


def test_seed_softmax_has_its_two_maps() -> None:
    params = _params("seed_fusion_softmax.hlo")
    maps = params[next(iter(params))]
    texts = sorted(str(m.map) for m in maps)
    assert texts == [
        "(d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 1], d1 in [0, 64], d2 in [0, 124]",
        "(d0, d1, d2)[s0] -> (d0, d1, s0), domain: d0 in [0, 1], d1 in [0, 64], d2 in [0, 124], "
        "s0 in [0, 124]"]


def test_proof_merges_maps_that_simplification_leaves_different() -> None:
    """Shifted range variables: different text, one relation."""
    from verifidx.analysis.dedup import MapSet

    a = parse_map("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 9], s0 in [0, 4]")
    b = parse_map("(d0)[s0] -> (d0 + s0 - 1), domain: d0 in [0, 9], s0 in [1, 5]")
    ms: MapSet[str] = MapSet("test")
    assert ms.add("a", a) and not ms.add("b", b)
    assert len(ms) == 1 and ms.merges and "proved equal" in ms.merges[0].reason
    xla_like: MapSet[str] = MapSet("test", prove=False)
    assert xla_like.add("a", a) and xla_like.add("b", b) and len(xla_like) == 2


def test_contained_members_are_dropped_only_where_asked() -> None:
    from verifidx.analysis.dedup import MapSet

    row = parse_map("(d0)[s0] -> (s0), domain: d0 in [0, 9], s0 in [0, 9]")
    one = parse_map("(d0) -> (d0), domain: d0 in [0, 9]")
    union: MapSet[str] = MapSet("test", drop_contained=True)
    assert union.add("one", one) and union.add("row", row)  # row contains one: one goes
    assert union.values() == ["row"] and "contained" in union.merges[0].reason
    assert not union.add("one again", one) and union.values() == ["row"]
    patterns: MapSet[str] = MapSet("test")  # XLA's access patterns: both stay
    assert patterns.add("one", one) and patterns.add("row", row) and len(patterns) == 2
    shifted = parse_map("(d0) -> (d0 + 1), domain: d0 in [0, 9]")
    assert union.add("shifted", shifted)  # row does not contain d0 + 1 = 10
    assert union.values() == ["row", "shifted"]


# -- conformance -------------------------------------------------------------------------------


def _expected_groups(case: dict[str, Any]) -> list[list[ExpectedMap]]:
    exp = case["expected"]
    if isinstance(exp, str):
        return parse_expected(exp)
    structure = case["expected_structure"]
    groups = [a["args"] for a in structure["args"]] \
        if all(isinstance(a, dict) for a in structure["args"]) else [structure["args"]]
    return [[ExpectedMap(parse_map(t), [], None) for t in g] for g in groups]


def _covers(ours: tuple[OperandIndexing, ...], expected: list[ExpectedMap]) -> tuple[bool, int]:
    """Each of ours equals one of XLA's and each of XLA's equals one of ours (Z3); returns
    (ok, how many of XLA's maps ours merged)."""
    ok = all(any(_same_map(m, e) for e in expected) for m in ours) and all(
        any(_same_map(m, e) for m in ours) for e in expected)
    return ok, len(expected) - len(ours)


def _adaptor_members(module, target: dict[str, Any]):  # type: ignore[no-untyped-def]
    """XLA's fusion adaptor as (computation, members, start)."""
    adaptor = target["fusion_adaptor"]
    entry = module.entry
    if "instruction" in adaptor:
        inst = entry.instruction(adaptor["instruction"])
        if inst.opcode == "fusion":
            body = module.computation(inst.called_computations[0])
            start = None if target["start"] == "fusion root" else target["start"]
            return body, None, start
        members = {inst.name}
    else:
        members = {adaptor["consumer"], adaptor["producer"]}
    start = entry.root.name if target["start"] == "fusion root" else target["start"]
    return entry, members, start


def _pairs(structure: dict[str, Any]) -> dict[str, list[ExpectedMap]]:
    out = {}
    for pair in structure["args"]:
        out[pair["key"]] = [ExpectedMap(parse_map(t), [], None) for t in pair["value"]["args"]]
    return out


def test_fusion_conformance(shared) -> None:
    counts: Counter[str] = Counter()
    merged_by_proof: list[str] = []
    differing: list[str] = []
    for case in cases_of("fusion_output_to_input"):
        module = parse_hlo(case["hlo"])
        target = case["target"]
        note = case.get("kind_note")
        if "instruction" in target:
            ours = output_to_input(target["instruction"], module, target["output_id"])
            if isinstance(case["expected"], str) and same_text(str(ours), case["expected"]):
                counts["identical"] += 1
                continue
            expected = _expected_groups(case)
            results = [_covers(g, e) for g, e in zip(ours.maps, expected)]
            ok = len(ours.maps) == len(expected) and all(r[0] for r in results)
            if not ok:
                differing.append(case["test"])
                continue
            if any(r[1] > 0 for r in results):
                merged_by_proof.append(case["test"])
            counts["z3-equal"] += 1
        elif note == "GroupIndexingMapsByProducers":
            grouped = group_by_producers(module, None, target["entry_root"])
            expected_pairs = _pairs(case["expected_structure"])
            assert set(grouped) == set(expected_pairs), case["id"]
            assert all(_covers(grouped[k], v)[0] for k, v in expected_pairs.items()), case["id"]
            counts["grouped"] += 1
        else:
            comp, members, start = _adaptor_members(module, target)
            grouped = grouped_output_to_input(module, comp, start=start, members=members).maps
            if "group_key" in target:
                got = grouped[target["group_key"]]
                if case["expected"] == ["UNDEFINED"]:
                    assert all(m.is_undefined for m in got), case["id"]
                else:
                    exp_maps = [parse_expected("operand id = 0 " + t)[0][0]
                                for t in case["expected"]]
                    assert _covers(got, exp_maps)[0], (case["id"], [str(m) for m in got])
            else:
                expected_pairs = _pairs(case["expected_structure"])
                assert set(grouped) == set(expected_pairs), (case["id"], set(grouped))
                for k, v in expected_pairs.items():
                    assert _covers(grouped[k], v)[0], (case["id"], k)
            counts["grouped"] += 1
    print(f"\nfusion conformance: {dict(counts)}; fewer maps than XLA (merged by proof): "
          f"{merged_by_proof}; documented differences: {differing}")
    assert set(differing) == FUSION_DIFFERENCES
    assert sum(counts.values()) + len(differing) == len(cases_of("fusion_output_to_input"))


def test_epilogue_conformance(shared) -> None:
    n = 0
    for case in cases_of("other"):
        if case.get("kind_note") != "epilogue_input_to_output":
            continue
        module = parse_hlo(case["hlo"])
        fused = [i.called_computations[0] for i in module.entry.instructions
                 if i.opcode == "fusion"][0]
        t = case["target"]
        (m,) = epilogue_input_to_output(module, fused, t["epilogue_parent"], t["epilogue_root"])
        assert same_text(str(m.map), case["expected"]), (str(m.map), case["expected"])
        n += 1
    assert n == 2


def test_xla_dedup_mode_keeps_textual_duplicates_apart(shared) -> None:
    """With set_proven_dedup(False) the counts are XLA's (text only); the default merges
    proven-equal maps, so its count is never larger."""
    case = next(c for c in cases_of("fusion_output_to_input")
                if c["test"] == "FusionOpTensorPlusTransposedTensor")
    module = parse_hlo(case["hlo"])
    proven = output_to_input("fusion", module, 0)
    set_proven_dedup(False)
    try:
        textual = output_to_input("fusion", parse_hlo(case["hlo"]), 0)
    finally:
        set_proven_dedup(True)
    assert [len(g) for g in proven.maps] <= [len(g) for g in textual.maps]


# -- scale ---------------------------------------------------------------------------------------


def diamond_hlo(depth: int) -> str:
    """Each level adds two paths per path: 2^depth paths from root to parameter."""
    lines = ["HloModule diamond", "ENTRY e {", "  x0 = f32[8,8] parameter(0)"]
    for i in range(depth):
        lines.append(f"  a{i} = f32[8,8] exponential(x{i})")
        lines.append(f"  b{i} = f32[8,8] transpose(x{i}), dimensions={{1,0}}")
        lines.append(f"  c{i} = f32[8,8] transpose(b{i}), dimensions={{1,0}}")
        lines.append(f"  x{i + 1} = f32[8,8] add(a{i}, c{i})")
    lines[-1] = "  ROOT" + lines[-1][1:]
    return "\n".join(lines) + "\n}\n"


def test_diamond_lattice_does_not_blow_up(monkeypatch: Any) -> None:
    """2^20 paths from root to parameter; the work must follow the number of distinct maps per
    value (here one or two), so the count of compositions grows linearly with the depth."""
    calls = Counter[str]()
    real = computation_maps.compose_indexing

    def counted(f: OperandIndexing, g: OperandIndexing) -> OperandIndexing:
        calls["compose"] += 1
        return real(f, g)

    monkeypatch.setattr(computation_maps, "compose_indexing", counted)
    depth = 20
    params = fusion_output_to_input(parse_hlo(diamond_hlo(depth)), None)
    (maps,) = params.values()
    assert [str(m.map) for m in maps] == [
        "(d0, d1) -> (d0, d1), domain: d0 in [0, 7], d1 in [0, 7]"]
    # each level has four edges, each carrying at most two distinct maps
    assert 0 < calls["compose"] <= 8 * depth + 8, calls


def test_graph_and_dot_output() -> None:
    module = parse_hlo((EXAMPLES / "seed_fusion_tensor_plus_transpose.hlo").read_text())
    comp = module.computation([i.called_computations[0] for i in module.entry.instructions
                               if i.opcode == "fusion"][0])
    g = computation_graph(comp)
    assert g.number_of_edges() == sum(len(i.operands) for i in comp.instructions)
    dot = to_dot(module, comp)
    assert dot.startswith("digraph") and "(d0, d1) -> (d1, d0)" in dot


def test_undefined_maps_stay_undefined() -> None:
    m = OperandIndexing(IndexingMap.undefined())
    assert m.is_undefined and smt.equal(m.map, m.map).holds is True


def test_relations_equal_after_simplification_count_once() -> None:
    module = parse_hlo((EXAMPLES / "proven_dedup.hlo").read_text())
    grouped = grouped_output_to_input(module, "fused")
    (maps,) = [v for k, v in grouped.maps.items() if k == "p0"]
    assert len(maps) == 1
    assert grouped.merges and "proved equal" in grouped.merges[0].reason
    set_proven_dedup(False)
    try:
        textual = grouped_output_to_input(parse_hlo((EXAMPLES / "proven_dedup.hlo").read_text()),
                                          "fused")
    finally:
        set_proven_dedup(True)
    assert len(textual.maps["p0"]) == 2  # what XLA reports


def test_graph_cli(tmp_path) -> None:
    from verifidx.cli import main

    src = str(EXAMPLES / "proven_dedup.hlo")
    out = tmp_path / "g.dot"
    assert main(["graph", src, "--computation", "fused", "-o", str(out)]) == 0
    assert out.read_text().startswith('digraph "fused"')
    assert main(["graph", src, "-o", str(out)]) == 2  # never overwrites
    assert main(["graph", src, "--computation", "nope"]) == 2
    assert main(["indexing", src, "--explain-dedup"]) == 0
