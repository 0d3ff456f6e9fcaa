"""What a proof attempt produced (`ProofResult`), the verdict names and budgets, and the facts
about a rule a certificate records (its leaves, logic, non-linear constants): everything the
certificate store and the simplifier's rule gate read, without loading Z3 (the prover does).
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field

from ..core.expr import CeilDiv, Expr, FloorDiv, Mod, Mul
from .model import Call, ConstVar, Rule, TermVar, rule_exprs


def _installed_z3_version() -> str:
    """The version of the installed z3-solver as Z3 prints it (`get_version_string`,
    major.minor.build), read from the metadata beside the `z3` package instead of loading the
    library (a tenth of a second); `verifidx.rules.prover` checks it against the loaded Z3."""
    spec = importlib.util.find_spec("z3")
    if spec is not None and spec.origin:
        folder = os.path.dirname(os.path.dirname(spec.origin))
        for name in sorted(os.listdir(folder)):
            if name.startswith("z3_solver-") and name.endswith(".dist-info"):
                parts = name[len("z3_solver-"):-len(".dist-info")].split(".")
                return ".".join(parts[:3])
    import z3  # no metadata (a source build): ask the library

    return str(z3.get_version_string())


#: Z3's version, which a current certificate must name.
INSTALLED_Z3_VERSION = _installed_z3_version()

PROVED, REFUTED, UNKNOWN, ERROR = "proved", "refuted", "unknown", "error"


@dataclass(frozen=True)
class ProverConfig:
    """Budgets, in Z3 resource units (`rlimit`, deterministic: about 2-3 million a second on
    one core), and the enumeration bound. The defaults keep a 30-rule file under a minute on two
    cores while leaving each strategy a real chance."""

    quick_rlimit: int = 300_000  # the first, short try of each unbounded encoding
    rlimit: int = 5_000_000  # the full try of each unbounded encoding
    case_rlimit: int = 3_000_000  # one sign case, one enumerated case
    bound: int = 64  # constants enumerated in [-bound, bound]
    min_bound: int = 8  # a bounded proof below this is reported as unknown
    bounded_rlimit: int = 4_000_000  # all enumerated cases together: a few seconds a rule
    minimize_steps: int = 40  # solver calls spent shrinking a counterexample
    timeout_ms: int | None = None  # wall-clock net of one call (None: `smt_terms.safety_net_ms`)


@dataclass
class ProofResult:
    """The outcome for one rule; `to_json()` is the DESIGN.md shape (plus a few extras)."""

    name: str
    file: str
    line: int
    verdict: str
    strength: str | None = None
    order: str | None = None
    counterexample: dict[str, int] | None = None
    lhs_value: int | bool | None = None
    rhs_value: int | bool | None = None
    seconds: float = 0.0
    message: str = ""
    subterms: dict[str, int | bool | None] | None = None
    reproducer: str | None = None
    strategy: str | None = None
    smtlib: str = field(default="", repr=False)
    rule: Rule | None = field(default=None, repr=False, compare=False)
    cached: bool = False  # read from a current certificate, not proven in this run
    # check: "z3" (query re-run now) or "cache" (not run: the proof cache holds its unsat)
    recheck: str | None = None
    seed: int = 0  # Z3's random seed in the proving query (sign splits only)
    rlimit: int = 0  # the resource limit of each check that proved it (0: the config's)

    @property
    def ok(self) -> bool:
        return self.verdict == PROVED

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file, "line": self.line, "name": self.name, "verdict": self.verdict,
            "strength": self.strength, "order": self.order,
            "counterexample": self.counterexample, "lhs_value": self.lhs_value,
            "rhs_value": self.rhs_value, "seconds": round(self.seconds, 3),
            "message": self.message,
        }
        if self.subterms is not None:
            out["subterms"] = self.subterms
        if self.reproducer is not None:
            out["reproducer"] = self.reproducer
        if self.strategy is not None:
            out["strategy"] = self.strategy
        return out


def is_bound(n: Expr) -> bool:
    """`lo(t)` or `hi(t)`: an interval bound of a matched term."""
    return isinstance(n, Call) and n.fn in ("lo", "hi")


def rule_leaves(rule: Rule) -> dict[str, Expr]:
    """The names a counterexample shows, in DESIGN.md order: term variables (as they appear on
    the left), constants (by number), then the interval bounds the rule uses."""
    terms: dict[str, Expr] = {}
    consts: dict[str, Expr] = {}
    bounds: dict[str, Expr] = {}
    for e in rule_exprs(rule):
        for n in e.walk():
            if isinstance(n, TermVar):
                terms.setdefault(n.name, n)
            elif isinstance(n, ConstVar):
                consts.setdefault(n.name, n)
            elif is_bound(n):
                bounds.setdefault(str(n), n)
    ordered = sorted(consts, key=lambda s: (len(s), s))
    return {**terms, **{k: consts[k] for k in ordered}, **bounds}


def nonlinear_constants(rule: Rule) -> list[str]:
    """Constants that make the obligation non-linear: divisors, gcd/lcm operands and factors
    of products with another non-constant factor. Fixing them leaves a linear problem."""
    found: set[str] = set()

    def consts(e: Expr) -> set[str]:
        return {n.name for n in e.walk() if isinstance(n, ConstVar)}

    def symbolic(e: Expr) -> bool:
        return any(isinstance(n, (TermVar, ConstVar)) or is_bound(n) for n in e.walk())

    for e in rule_exprs(rule):
        for n in e.walk():
            if isinstance(n, (FloorDiv, CeilDiv, Mod)):
                found |= consts(n.rhs)
            elif isinstance(n, Mul) and symbolic(n.lhs) and symbolic(n.rhs):
                found |= consts(n.lhs) | consts(n.rhs)
            elif isinstance(n, Call) and n.fn in ("gcd", "lcm"):
                for a in n.args:
                    found |= consts(a)
    return sorted(found, key=lambda s: (len(s), s))


def logic(rule: Rule) -> str:
    """`QF_LIA` when the obligation is linear (every product, divisor, gcd and lcm operand is a
    number once the rule's numbers are in), else `QF_NIA`. Linear queries can be re-checked by
    any SMT solver of the field; non-linear ones are where solvers differ."""

    def symbolic(e: Expr) -> bool:
        return any(isinstance(n, (TermVar, ConstVar)) or is_bound(n) for n in e.walk())

    for e in rule_exprs(rule):
        for n in e.walk():
            if isinstance(n, (FloorDiv, CeilDiv, Mod)) and symbolic(n.rhs):
                return "QF_NIA"
            if isinstance(n, Mul) and symbolic(n.lhs) and symbolic(n.rhs):
                return "QF_NIA"
            if isinstance(n, Call) and n.fn in ("gcd", "lcm") and any(map(symbolic, n.args)):
                return "QF_NIA"
    return "QF_LIA"


def budgeted(query: str, rlimit: int) -> str:
    """`query` under the resource limit `rlimit` for each of its checks: what proved it, so
    that re-running it repeats the prover's steps exactly (Z3 counts the same units in the `z3`
    executable as in this process)."""
    return f"(set-option :rlimit {rlimit})\n{query}"


def bounded_limit(strength: str | None) -> int | None:
    """N of `bounded: |c| <= N`, or None."""
    m = re.fullmatch(r"bounded: \|c\| <= (\d+)", strength or "")
    return int(m.group(1)) if m else None
