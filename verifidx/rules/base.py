"""The rule base the simplifier may use: rules whose certificate is current and says proved.

Anything else (no certificate, a stale one, refuted, unknown, or a rule that violates the reduction
order without being marked as an expansion) is refused with a warning naming the rule and where
it is, so that an unproven rule can never change a map.

The bundled rule base is trusted on its certificates: CI re-checks them with `verifidx check`
before they ship. Rules from anywhere else (`--rules DIR`, `vx.simplify(m, rules=...)`) have
had no such gate, so they pass the same one before first use (`checked_rule_base`): each
certificate's query is rebuilt from the rule's text and run again, and the proof cache keeps
that to once per rule text for this user.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..core import laws
from ..core.errors import VerifidxError
from .model import Rule
from .parser import load_rule_base
from .store import gate_failure, load_files, result_from_entry, staleness


class UnprovenRuleWarning(UserWarning):
    """A rule of the rule base was left out of the simplifier."""


class UnprovenLawWarning(UserWarning):
    """A law of `rules/canonical.rules` is not applied by the expression constructors."""


def package_rule_dir() -> Path:
    """The rule base shipped with verifidx (not `./rules` of the current directory): beside the
    checkout for a source or editable install, under `<prefix>/share/verifidx` for a wheel."""
    checkout = Path(__file__).resolve().parents[2] / "rules"
    if checkout.is_dir():
        return checkout
    return Path(sys.prefix) / "share" / "verifidx" / "rules"


def proven_rule_base(paths: Sequence[str | Path] | None = None,
                     proofs: str | Path | None = None) -> list[Rule]:
    """Rules with a current, proved certificate; warns (UnprovenRuleWarning) about the rest.
    The certificates are believed, not re-checked: for the bundled rule base only."""
    files = load_files(list(paths) if paths else [package_rule_dir()], proofs)
    usable: list[Rule] = []
    for f in files:
        for rule in f.rules:
            entry = f.entries.get(rule.name)
            why = f.problem or staleness(rule, entry)
            if why is None and entry is not None:
                why = gate_failure(result_from_entry(rule, entry), rule)
            if why is not None:
                _refuse(rule, why)
                continue
            usable.append(_with_strength(rule, (entry or {}).get("strength")))
    return usable


def checked_rule_base(paths: Sequence[str | Path], bundled: bool = True) -> list[Rule]:
    """The user's rules at `paths` that pass `verifidx check` now: a current certificate whose
    query, rebuilt from the rule's text, answers unsat again (or did in this user's proof
    cache). Warns (UnprovenRuleWarning) about the rest. A rule named like another one, in
    these files or (with `bundled`) in the bundled rule base, is a ParseError at its line:
    traces, warnings and certificates name rules, so two of one name would be ambiguous."""
    from .proof_cache import ProofCache
    from .prover import ProverConfig
    from .store import check_files

    load_rule_base([package_rule_dir(), *paths] if bundled else list(paths))
    usable: list[Rule] = []
    for res in check_files(load_files(list(paths), None), ProverConfig(), cache=ProofCache()):
        rule = res.rule
        assert rule is not None
        why = gate_failure(res, rule)
        if why is not None:
            _refuse(rule, f"{why}" + (f" ({res.message})" if res.message else ""))
            continue
        usable.append(_with_strength(rule, res.strength))
    return usable


def _refuse(rule: Rule, why: str) -> None:
    warnings.warn(f"{rule.file}:{rule.line}: rule {rule.name} is not used by the simplifier: "
                  f"{why}", UnprovenRuleWarning, stacklevel=3)


def _with_strength(rule: Rule, strength: object) -> Rule:
    """Carry a bounded proof's limit into the rule (`bounded: |c| <= N`)."""
    m = re.fullmatch(r"bounded: \|c\| <= (\d+)", str(strength or ""))
    return replace(rule, max_constant=int(m.group(1))) if m else rule


#: Rule files that state the laws of `verifidx.core.laws`.
LAW_FILES = ("canonical.rules", "mul.rules")


def gate_laws(rule_dir: str | Path | None = None, proofs: str | Path | None = None) -> set[str]:
    """Switch on exactly the laws of `verifidx.core.laws` whose certificate is current and says
    proved for all constants; warn (UnprovenLawWarning) about every other one, which then never
    applies. Returns the laws switched on. Run when the package is imported."""
    laws.set_enabled(())  # nothing applies while this is being decided
    folder = Path(rule_dir) if rule_dir is not None else package_rule_dir()
    problems: dict[str, str] = {}
    enabled: set[str] = set()
    try:
        files = load_files([folder / f for f in LAW_FILES if (folder / f).is_file()], proofs)
    except (VerifidxError, OSError) as err:
        files = []
        problems = {name: f"the rule base cannot be read: {err}" for name in laws.NAMES}
    for f in files:
        for rule in f.rules:
            if rule.name not in laws.NAMES:
                continue
            entry = f.entries.get(rule.name)
            why = f.problem or staleness(rule, entry)
            if why is None and entry is not None:
                why = gate_failure(result_from_entry(rule, entry), rule)
                if why is None and entry.get("strength") != "all":
                    why = f"proven only for {entry.get('strength')}"
            if why is None:
                enabled.add(rule.name)
            else:
                problems[rule.name] = f"{rule.file}:{rule.line}: {why}"
    for name in laws.NAMES:
        if name not in enabled and name not in problems:
            problems[name] = f"no rule states it in {folder}"
    if problems:
        listed = "; ".join(f"{name} ({why})" for name, why in problems.items())
        warnings.warn(f"{len(problems)} law(s) not applied when expressions are built: "
                      f"{listed}; `verifidx prove` repairs their certificates",
                      UnprovenLawWarning, stacklevel=2)
    laws.set_enabled(enabled)
    return enabled
