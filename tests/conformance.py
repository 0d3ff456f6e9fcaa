"""Reading the XLA conformance vectors (tests/data/conformance/xla/*.json, see its README)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from conftest import shared_dir

CORPORA = ("cases.json", "cases_head.json", "cases_mlir_era.json")

#: XLA's serialization tests parse maps that divide by a variable (`s0 floordiv s1` with s1 in
#: [0, 4], `d0 floordiv r0`). verifidx's contract (docs/semantics.md) has constant divisors only,
#: so that every term is defined everywhere: it rejects these with a ParseError at the divisor.
#: No indexing analysis of XLA produces such a map; only these two parse/print tests do.
NON_CONSTANT_DIVISOR_CASES = frozenset({
    "indexing_map_serialization_test.cc:SymbolsOnly#0",
    "indexing_map_serialization_test.cc:DimsAndRuntime#0",
})
_HLO_LEVEL = ("operand id", "runtime variables:", "replica id", "unknown indexing")


@cache
def load(corpus: str = "cases.json") -> list[dict[str, Any]]:
    d = shared_dir()
    if d is None:
        return []
    return json.loads((d / "conformance" / "xla" / corpus).read_text())  # type: ignore[no-any-return]


def is_map_text(text: object) -> bool:
    """A single map's text (not an HLO-level block, not a fragment or another value)."""
    if not isinstance(text, str):
        return False
    t = text.strip()
    if any(h in t for h in _HLO_LEVEL):
        return False
    return t in ("KNOWN EMPTY", "UNDEFINED") or (t.startswith("(") and "->" in t)


def map_texts(case: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, text) for every map text of a case that issue 2 says must parse."""
    if "HasSubstr" in case.get("raw_expectation_kind", ""):
        return
    if is_map_text(case.get("input_map")):
        yield "input_map", case["input_map"]
    for name, text in (case.get("input_maps") or {}).items():
        if is_map_text(text):
            yield f"input_maps.{name}", text
    exp = case.get("expected")
    for i, text in enumerate(exp if isinstance(exp, list) else [exp]):
        if is_map_text(text):
            yield f"expected[{i}]", text


def cases_of(kind: str, corpus: str = "cases.json") -> list[dict[str, Any]]:
    return [c for c in load(corpus) if c["kind"] == kind]


def shared_path() -> Path | None:
    return shared_dir()
