"""XLA's tiling test vectors (tests/data/conformance/xla_tiling, copied from ../shared) and the
per-corpus tallies that conftest prints at the end of the run."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "conformance" / "xla_tiling"

COUNTS: dict[str, Counter[str]] = {}


@cache
def load(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / name).read_text())  # type: ignore[no-any-return]


def record(corpus: str, outcome: str) -> None:
    COUNTS.setdefault(corpus, Counter())[outcome] += 1


def same_text(a: str, b: str) -> bool:
    """XLA's ApproximateMatch: equal once ASCII whitespace is removed from both."""
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)
