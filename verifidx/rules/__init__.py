"""The rule language, its prover and its proof store (docs/rules.md).

```python
from verifidx.rules import parse_rules, prove
for result in prove("rules/mod.rules"):
    print(result.name, result.verdict, result.strength, result.counterexample)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .model import (
    BoolOp,
    Call,
    Compare,
    Condition,
    ConstVar,
    Membership,
    Not,
    Rule,
    TermVar,
    Truth,
    evaluate_condition,
)
from .parser import load_rule_base, load_rule_file, parse_rule, parse_rules, rule_files

if TYPE_CHECKING:
    from .prover import ProofResult, ProverConfig

# The prover imports Z3; the simplifier imports this package for the rule model only, so the
# prover's names load on first use.
_LAZY = ("ProofResult", "ProverConfig", "explain", "prove_rule", "prove_rules")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import prover

        return getattr(prover, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def prove(path_or_rule: str | Path | Rule | Sequence[Rule], config: ProverConfig | None = None,
          jobs: int = 1, progress: bool = False) -> list[ProofResult]:
    """Prove a rule file, a directory of rule files, one rule's text (`"x mod 1 => 0"`), a
    Rule, or a list of Rules, every rule from scratch: no certificate read or written and no
    proof cache (that is `verifidx prove`). `progress`: rules done on stderr (a bar on a
    terminal, a line every few seconds elsewhere)."""
    if isinstance(path_or_rule, Rule):
        rules = [path_or_rule]
    elif isinstance(path_or_rule, (str, Path)):
        text = str(path_or_rule)
        if isinstance(path_or_rule, str) and "=>" in text:
            rules = parse_rules(text) if text.lstrip().startswith("rule") else [
                parse_rule(text)]
        else:
            rules = load_rule_base([path_or_rule])
    else:
        rules = list(path_or_rule)
    from .prover import prove_rules

    if not progress:
        return prove_rules(rules, config, jobs)
    from ..core.work import Progress

    with Progress(len(rules), "prove", True) as bar:
        return prove_rules(rules, config, jobs, bar)


__all__ = [
    "BoolOp", "Call", "Compare", "Condition", "ConstVar", "Membership", "Not", "ProofResult",
    "ProverConfig", "Rule", "TermVar", "Truth", "evaluate_condition", "explain",
    "load_rule_base", "load_rule_file", "parse_rule", "parse_rules", "prove", "prove_rule",
    "prove_rules", "rule_files",
]
