"""`verifidx prove --suggest`: the weakest side condition, from a small family, that repairs a
refuted rule.

The family: signs of each constant (`c > 0`, `c >= 0`, `c != 0`, `c < 0`), divisibility between
two constants (`c1 > 0 and c0 mod c1 == 0`), and bounds of the matched terms (`lo(x) >= 0`,
`lo(x) > 0`, `hi(x) < c`), alone and in pairs. A candidate counts only when the rule with it is
proven and the strengthened condition can still hold (a contradiction proves anything). Among
the proven candidates the weakest are kept: those implied by no other proven candidate's
negation, i.e. no other one is strictly weaker.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, replace

import z3

from ..solve.smt_terms import RLIMIT_PER_MS, Solver
from .model import BoolOp, Condition, ConstVar, Rule, TermVar, Truth, side_exprs
from .parser import parse_condition
from .prover import PROVED, ProverConfig, _RuleEncoder, prove_rule, rule_leaves


@dataclass
class Suggestion:
    conditions: list[str]
    tried: int
    seconds: float

    @property
    def text(self) -> str:
        if not self.conditions:
            return (f"no side condition among the {self.tried} tried makes the rule provable")
        shown = " | ".join(f"if {c}" for c in self.conditions)
        many = "s" if len(self.conditions) > 1 else ""
        return (f"weakest side condition{many} found: {shown} ({self.tried} tried; added to "
                "the rule's own condition with `and`, not replacing it)")


def candidates(rule: Rule) -> list[str]:
    names = rule_leaves(rule)
    consts = [n for n, node in names.items() if isinstance(node, ConstVar)]
    lhs_terms = {n.name for e in side_exprs(rule.lhs) for n in e.walk()  # type: ignore[attr-defined]
                 if isinstance(n, TermVar)}
    terms = [n for n in names if n in lhs_terms]
    out: list[str] = []
    for c in consts:
        out += [f"{c} > 0", f"{c} >= 0", f"{c} != 0", f"{c} < 0"]
    for a, b in itertools.permutations(consts, 2):
        out.append(f"{b} > 0 and {a} mod {b} == 0")
    for x in terms:
        out += [f"lo({x}) >= 0", f"lo({x}) > 0"]
        out += [f"hi({x}) < {c}" for c in consts]
    return out


def _strengthen(rule: Rule, extra: Condition) -> Rule:
    base = () if rule.condition == Truth(True) else (rule.condition,)
    return replace(rule, condition=BoolOp("and", (*base, extra)) if base else extra)


class _Logic:
    """Satisfiability and implication between conditions over one rule's variables."""

    def __init__(self, rule: Rule, conds: list[Condition]) -> None:
        everything = _strengthen(rule, BoolOp("and", tuple(conds)) if len(conds) > 1
                                 else conds[0])
        nodes = rule_leaves(everything)
        env = {node: z3.Int(name) for name, node in nodes.items()}
        self.enc = _RuleEncoder(env)
        self.base = [self.enc.truth(rule.condition)[0]]
        for name, node in nodes.items():
            arg = getattr(node, "args", (None,))[0]
            if name.startswith(("lo(", "hi(")) and arg is not None:
                v = self.enc(arg)
                self.base.append(z3.Implies(self.enc.definedness(arg),
                                            env[node] <= v if name.startswith("lo")
                                            else v <= env[node]))

    def holds(self, cond: Condition) -> z3.BoolRef:
        return self.enc.truth(cond)[0]

    def _unsat(self, *fs: z3.BoolRef) -> bool:
        s = Solver(500 * RLIMIT_PER_MS)  # which candidates are offered never depends on load
        s.add(*self.base, *self.enc.axioms, *fs)
        return s.check() == z3.unsat

    def satisfiable(self, cond: Condition) -> bool:
        return not self._unsat(self.holds(cond))

    def implies(self, a: Condition, b: Condition) -> bool:
        return self._unsat(self.holds(a), z3.Not(self.holds(b)))


def suggest(rule: Rule, config: ProverConfig | None = None, budget_s: float = 30.0
            ) -> Suggestion:
    """Search the family for side conditions under which `rule` is proven."""
    start = time.perf_counter()
    base = config or ProverConfig()
    quick = replace(base, rlimit=min(base.rlimit, 1_500_000),
                    case_rlimit=min(base.case_rlimit, 100_000), bounded_rlimit=0,
                    minimize_steps=0)
    atoms = candidates(rule)
    parsed = {a: parse_condition(a) for a in atoms}
    logic = _Logic(rule, list(parsed.values()))
    proven: list[str] = []
    tried = 0

    def attempt(text: str, cond: Condition) -> None:
        nonlocal tried
        if not logic.satisfiable(cond):
            return
        tried += 1
        if prove_rule(_strengthen(rule, cond), quick).verdict == PROVED:
            proven.append(text)
            parsed[text] = cond

    for a in atoms:
        if time.perf_counter() - start > budget_s:
            break
        attempt(a, parsed[a])
    if not proven:
        for a, b in itertools.combinations(atoms, 2):
            if time.perf_counter() - start > budget_s:
                break
            attempt(f"{a} and {b}", BoolOp("and", (parsed[a], parsed[b])))
    weakest = [p for p in proven
               if not any(q != p and logic.implies(parsed[p], parsed[q])
                          and not logic.implies(parsed[q], parsed[p]) for q in proven)]
    # equivalent candidates: keep the first (the family lists the simplest first)
    distinct: list[str] = []
    for p in weakest:
        if not any(logic.implies(parsed[p], parsed[q]) and logic.implies(parsed[q], parsed[p])
                   for q in distinct):
            distinct.append(p)
    return Suggestion(distinct, tried, time.perf_counter() - start)
