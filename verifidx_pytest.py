"""The part of verifidx's pytest plugin that every pytest run loads (through the `pytest11`
entry point): only the command-line options. Rule files, the prover and Z3 load only when
`--verifidx-rules` is given, so a test run that does not ask for rules pays nothing."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("verifidx", "verifidx rule proofs")
    group.addoption("--verifidx-rules", action="append", default=[], metavar="PATH",
                    help="rule files or directories whose rules become test items (only "
                         "these are collected unless test paths are given too)")
    group.addoption("--verifidx-proofs", default=None, metavar="DIR",
                    help="certificate directory (default as for verifidx check)")
    group.addoption("--verifidx-reprove", action="store_true",
                    help="prove every rule now instead of re-checking its certificate")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--verifidx-rules", default=None):
        config.pluginmanager.import_plugin("verifidx.rules.pytest_plugin")
