"""Shared test configuration: hypothesis profiles and the location of ../shared."""

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


def shared_dir() -> Path | None:
    """../shared next to the checkout (CI clones the repo with shared/ beside it)."""
    for candidate in (REPO.parent / "shared", REPO / ".." / "shared"):
        if (candidate / "conformance" / "xla" / "cases.json").is_file():
            return candidate.resolve()
    return None


@pytest.fixture(scope="session")
def shared() -> Path:
    d = shared_dir()
    if d is None:
        pytest.skip("../shared/conformance is absent: conformance vectors not available")
    return d


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
