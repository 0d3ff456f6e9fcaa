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

# Progress lines in a log come every few seconds: on a slow machine a long command would print
# them into output a test compares. Tests of progress set the interval themselves.
os.environ.setdefault("VERIFIDX_PROGRESS_SECONDS", "1000000")


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


# -- a runaway test names itself -----------------------------------------------------------------
# One CI run was killed by the kernel's OOM killer (the process grew to 24 GB) without a word
# about which test did it; the suite's normal peak is about 2 GB. Past RUNAWAY_BYTES this prints
# the running test and every thread's stack, once, to stderr (the CI log), and lets it go on.
RUNAWAY_BYTES = 8 * 2**30
_running: list[str] = []


def _watch_memory() -> None:
    import faulthandler
    import sys
    import time

    page = os.sysconf("SC_PAGE_SIZE")
    while True:
        time.sleep(0.5)
        try:
            rss = int(Path("/proc/self/statm").read_text().split()[1]) * page
        except (OSError, ValueError, IndexError):
            return
        if rss > RUNAWAY_BYTES:
            print(f"\nmemory: {rss / 2**30:.1f} GiB while running {_running[-1:]}", file=sys.stderr,
                  flush=True)
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            return


def pytest_sessionstart(session: pytest.Session) -> None:
    if Path("/proc/self/statm").exists():
        import threading

        threading.Thread(target=_watch_memory, name="memory watch", daemon=True).start()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    _running.append(item.nodeid)
