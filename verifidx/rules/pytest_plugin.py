"""pytest plugin: `pytest --verifidx-rules rules/` reports every rule as a test item.

A rule passes when `verifidx check` would accept it: its certificate is current, the query
rebuilt from the rule's text answers `unsat` again (or did on this machine before, see the proof
cache), and it respects the reduction order. A rule without a current certificate (or every
rule, with `--verifidx-reprove`) is proven on the spot, without writing certificates.

The options live in the light module `verifidx_pytest`, which the package's `pytest11` entry
point loads in every pytest run; it imports this module only when `--verifidx-rules` is given.
`-p verifidx.rules.pytest_plugin` works too (it pulls in the options module). Only the rule
paths asked for are collected, unless test paths are given on the command line as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..core.errors import ParseError
from .model import Rule

pytest_plugins = ("verifidx_pytest",)


def _rule_roots(config: pytest.Config) -> list[Path]:
    return [Path(p).resolve() for p in config.getoption("--verifidx-rules")]


def pytest_configure(config: pytest.Config) -> None:
    """Collect the rule paths asked for, instead of the project's test paths (testpaths or the
    current directory) when no test path was given explicitly."""
    paths = config.getoption("--verifidx-rules")
    if not paths:
        return
    for p in paths:
        if not Path(p).exists():
            raise pytest.UsageError(f"--verifidx-rules: no such file or directory: {p}")
    explicit = getattr(config, "args_source", None) == pytest.Config.ArgsSource.ARGS
    config.args = [*(config.args if explicit else []), *map(str, paths)]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".rules":
        return None
    resolved = file_path.resolve()
    if not any(resolved == root or root in resolved.parents
               for root in _rule_roots(parent.config)):
        return None
    return RuleFile.from_parent(parent, path=file_path)


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
        self.certificate = certificate_path(self.path, proofs)
        try:
            self.entries: dict[str, dict[str, object]] = load_certificates(
                self.certificate, self.path)
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
        from . import store
        from .proof_cache import ProofCache
        from .prover import ProverConfig, prove_rule

        parent = self.parent
        assert isinstance(parent, RuleFile)
        entry = parent.entries.get(self.rule.name)
        if self.config.getoption("--verifidx-reprove") or parent.problem or \
                store.staleness(self.rule, entry) is not None:
            result = prove_rule(self.rule)
        else:
            one = store.RuleFile(self.path, [self.rule], parent.certificate,
                                 {self.rule.name: entry} if entry else {}, None)
            result = store.check_files([one], ProverConfig(), cache=ProofCache())[0]
        result.file = store.display_path(self.path)
        why = store.gate_failure(result, self.rule)
        if why is not None:
            raise RuleFailure(store.result_text(result, why))

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
