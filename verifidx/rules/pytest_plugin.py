"""pytest plugin: `pytest --verifidx-rules rules/` reports every rule as a test item.

A rule passes when it is proven and respects the reduction order (the `verifidx check` gate).
Its current certificate is trusted; a rule without one (or with `--verifidx-reprove`) is proven
on the spot, without writing certificates. Enable it with `-p verifidx.rules.pytest_plugin` or
through the `pytest11` entry point of the package.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..errors import ParseError
from .model import Rule


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("verifidx", "verifidx rule proofs")
    group.addoption("--verifidx-rules", action="append", default=[], metavar="PATH",
                    help="rule files or directories whose rules become test items")
    group.addoption("--verifidx-proofs", default=None, metavar="DIR",
                    help="certificate directory (default as for verifidx check)")
    group.addoption("--verifidx-reprove", action="store_true",
                    help="prove every rule now instead of trusting certificates")


class RuleFailure(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class RuleFile(pytest.File):
    """One `.rules` file; its certificates are read once for all its items."""

    def collect(self) -> Iterator[pytest.Item]:
        from .parser import load_rule_file
        from .store import certificate_path, load_certificates

        try:
            rules = load_rule_file(self.path)
        except ParseError as err:
            yield BrokenRuleFile.from_parent(self, name="<parse>", error=str(err))
            return
        proofs = self.config.getoption("--verifidx-proofs")
        try:
            self.entries: dict[str, dict[str, object]] = load_certificates(
                certificate_path(self.path, proofs), self.path)
            self.problem: str | None = None
        except Exception as err:  # noqa: BLE001 - a broken certificate fails its items
            self.entries, self.problem = {}, str(err)
        for rule in rules:
            yield RuleItem.from_parent(self, name=rule.name, rule=rule)


class RuleItem(pytest.Item):
    def __init__(self, *, rule: Rule, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rule = rule

    def runtest(self) -> None:
        from .prover import prove_rule
        from .store import display_path, gate_failure, result_from_entry, result_text, staleness

        parent = self.parent
        assert isinstance(parent, RuleFile)
        entry = parent.entries.get(self.rule.name)
        if self.config.getoption("--verifidx-reprove") or parent.problem or \
                staleness(self.rule, entry) is not None:
            result = prove_rule(self.rule)
        else:
            assert entry is not None
            result = result_from_entry(self.rule, entry)
        result.file = display_path(self.path)
        why = gate_failure(result, self.rule)
        if why is not None:
            raise RuleFailure(result_text(result, why))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, RuleFailure):
            return excinfo.value.text
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.rule.line - 1, f"rule {self.rule.name}"


class BrokenRuleFile(pytest.Item):
    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise RuleFailure(f"error: {self.error}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        return str(excinfo.value)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    paths = config.getoption("--verifidx-rules")
    if not paths:
        return
    from .parser import rule_files

    try:
        files = rule_files(paths)
    except ParseError as err:
        raise pytest.UsageError(f"--verifidx-rules: {err}") from None
    for f in files:
        collector = RuleFile.from_parent(session, path=f.resolve())
        items.extend(collector.collect())
