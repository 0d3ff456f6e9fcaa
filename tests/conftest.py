"""Shared test configuration: hypothesis profiles, the conformance vectors, and a proof cache
private to the test run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# "ci" keeps the whole suite within CI's budget on 2 cores; "thorough" is for local runs.
settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]


DATA = Path(__file__).resolve().parent / "data"


def shared_dir() -> Path | None:
    """The directory holding `conformance/xla/*.json`: the copy in tests/data (see its
    README.md for the provenance), so that a clone runs every conformance test."""
    if (DATA / "conformance" / "xla" / "cases.json").is_file():
        return DATA
    return None


@pytest.fixture(scope="session")
def shared() -> Path:
    d = shared_dir()
    if d is None:
        pytest.fail("tests/data/conformance/xla is missing from this checkout")
    return d


@pytest.fixture(autouse=True, scope="session")
def _private_proof_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`verifidx check` remembers re-checked queries in a cache; tests use their own, empty at
    the start of the run, and never the user's."""
    os.environ["VERIFIDX_CACHE_DIR"] = str(tmp_path_factory.mktemp("verifidx-cache"))


def _tiling_counts() -> dict[str, dict[str, int]]:
    import sys

    helper = sys.modules.get("tiling_conformance")
    return getattr(helper, "COUNTS", None) or {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist a worker hands its conformance tallies to the controller in a file
    beside the workers' temporary directories (only the controller writes the summary)."""
    worker = getattr(session.config, "workerinput", None)
    counts = _tiling_counts()
    if worker is None or not counts:
        return
    root = session.config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    (root / f"tiling-conformance-{worker['workerid']}.json").write_text(json.dumps(counts))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Conformance tallies (per corpus and outcome) recorded by the tiling conformance tests."""
    from collections import Counter

    merged: dict[str, Counter[str]] = {}
    root = terminalreporter.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    parts = [_tiling_counts()]
    parts += [json.loads(f.read_text()) for f in sorted(root.glob("tiling-conformance-*.json"))]
    for counts in parts:
        for corpus, tally in counts.items():
            merged.setdefault(corpus, Counter()).update(tally)
    if not merged:
        return
    terminalreporter.section("tiling conformance")
    for corpus in sorted(merged):
        line = ", ".join(f"{k}: {v}" for k, v in sorted(merged[corpus].items()))
        terminalreporter.write_line(f"{corpus}: {line}")
