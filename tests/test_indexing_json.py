"""The JSON of `verifidx indexing` says why a map is UNDEFINED, and every field it can print is
documented in docs/contracts.md; docs/guide.md names as unmodelled only ops that are (issue 22)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from verifidx.cli import main
from verifidx.hlo.indexing import OP_TABLE

REPO = Path(__file__).resolve().parents[1]

UNKNOWN_OP = """HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  q = f32[3] parameter(1)
  c = f32[4,3] custom-call(p), custom_call_target="foo"
  r = f32[4,3] reverse(c), dimensions={0}
  b = f32[4,3] broadcast(q), dimensions={1}
  ROOT a = f32[4,3] add(r, b)
}
"""


def indexing_json(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> Any:
    assert main(["indexing", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_undefined_map_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(UNKNOWN_OP)
    (comp,) = indexing_json(capsys, path)["computations"]
    p, q = comp["outputs"][0]["operands"]
    assert p["maps"] == ["UNDEFINED"] and p["reasons"] == ["unknown op custom-call (target foo)"]
    assert "reasons" not in q and q["maps"] == ["(d0, d1) -> (d1), domain: d0 in [0, 3], "
                                                "d1 in [0, 2]"]
    doc = indexing_json(capsys, path, "--instruction", "c")
    (operand,) = doc["outputs"][0]["operands"]
    assert operand["reasons"] == ["unknown op custom-call (target foo)"]


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_every_field_printed_is_documented(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(UNKNOWN_OP)
    printed = _keys(indexing_json(capsys, path))
    path.write_text("HloModule t\nENTRY e {\n  p = (f32[2], f32[3]) parameter(0)\n"
                    "  ROOT g = f32[3] get-tuple-element(p), index=1\n}\n")
    printed |= _keys(indexing_json(capsys, path))
    for example in ("examples/seed_gather.hlo", "tests/data/hlo/collectives.hlo"):
        printed |= _keys(indexing_json(capsys, REPO / example))
    assert {"runtime_variables", "reasons", "tuple_index"} <= printed
    contracts = (REPO / "docs" / "contracts.md").read_text()
    section = contracts[contracts.index("## JSON output of `verifidx indexing`"):]
    section = section[:section.index("\n## ", 4)]
    missing = {k for k in printed if f'"{k}"' not in section}
    assert not missing, missing


def test_the_guide_lists_as_unmodelled_only_unmodelled_ops() -> None:
    guide = (REPO / "docs" / "guide.md").read_text()
    found = re.search(r"indexing it does not model \(([^)]*)\)", guide)
    assert found, "the guide's list of unmodelled ops moved"
    named = re.findall(r"`([a-z-]+)`", found.group(1))
    assert named and not [op for op in named if op in OP_TABLE]


def test_the_guide_does_not_say_stablehlo_is_unread() -> None:
    guide = (REPO / "docs" / "guide.md").read_text()
    assert "give verifidx the HLO\ndialect" not in guide and "stablehlo.md" in guide
