"""Shared test configuration: hypothesis profiles, the conformance vectors, and a proof cache
private to the test run."""

from __future__ import annotations

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Conformance tallies (per corpus and outcome) recorded by the tiling conformance tests."""
    import sys

    helper = sys.modules.get("tiling_conformance")
    counts = getattr(helper, "COUNTS", None)
    if not counts:
        return
    terminalreporter.section("tiling conformance")
    for corpus in sorted(counts):
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(counts[corpus].items()))
        terminalreporter.write_line(f"{corpus}: {parts}")
