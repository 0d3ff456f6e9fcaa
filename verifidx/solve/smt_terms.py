"""Integer terms and SMT-LIB2 queries for obligations built outside the solver layer.

The graph substitutions (`verifidx.analysis.subst`) compute shapes and reads once, over an
arithmetic they are handed (plain integers, or solver terms), and the tile proofs
(`verifidx.analysis.tiling`) state their own obligations. This module is the solver side of both, so
that only the solver layer imports Z3: integer variables, the connectives, floor division and modulo
by a positive divisor, an existential, the text of a query, and (`Query`) a solver call under a
resource budget. A client composes terms with Python's `+ - * / % == <= ...` and never names Z3.
`Solver` is the one solver of every map-level and tile query: its answers never depend on the
machine's load.

Queries are SMT-LIB2 text, printed from the formulas alone (declarations in order of
appearance) and ending in an explicit tactic, so that the same obligation gives the same bytes
and the same answer on every machine; the rule prover's script runner
(`verifidx.rules.prover.ScriptRun`) runs them under a resource limit, with the wall-clock net
of `safety_net_ms` only against a runaway solver.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import z3

Z3_VERSION: str = z3.get_version_string()

TRUE: Any = z3.BoolVal(True)
FALSE: Any = z3.BoolVal(False)


def int_var(name: str) -> Any:
    return z3.Int(name)


def and_(*cs: Any) -> Any:
    """Conjunction; Python `True`s (conditions already decided) are dropped."""
    kept = tuple(c for c in cs if not (isinstance(c, bool) and c))
    if any(isinstance(c, bool) for c in kept):
        return FALSE
    return z3.And(*kept) if kept else TRUE


def or_(*cs: Any) -> Any:
    kept = tuple(c for c in cs if not (isinstance(c, bool) and not c))
    if any(isinstance(c, bool) for c in kept):
        return TRUE
    return z3.Or(*kept) if kept else FALSE


def not_(c: Any) -> Any:
    return (not c) if isinstance(c, bool) else z3.Not(c)


def ite(c: Any, a: Any, b: Any) -> Any:
    if isinstance(c, bool):
        return a if c else b
    return z3.If(c, a, b)


def floor_div(a: Any, b: Any) -> Any:
    """Floor division for a positive divisor (Z3's integer `/` is Euclidean, which agrees for
    b > 0; on two plain integers Python's `//`)."""
    return a // b if isinstance(a, int) and isinstance(b, int) else a / b


def mod(a: Any, b: Any) -> Any:
    """The remainder in [0, b) for a positive divisor (Euclidean `%` agrees for b > 0)."""
    return a % b


def int_val(v: int) -> Any:
    return z3.IntVal(v)


def exists(variables: Iterable[Any], body: Any) -> Any:
    """`exists variables. body` (the body itself when there are none)."""
    bound = list(variables)
    return z3.Exists(bound, body) if bound else body


def is_term(x: Any) -> bool:
    return isinstance(x, z3.ExprRef)


#: Z3 resource units per millisecond of a budget given in milliseconds (Z3 spends about 2-3
#: million a second on one core): budgets are counted in units, so load never changes a verdict.
RLIMIT_PER_MS = 2500


class Query:
    """One solver call under a resource budget (`budget_ms` milliseconds' worth of Z3's
    deterministic `rlimit` units, `RLIMIT_PER_MS` each; the wall clock only as the far safety
    net of `safety_net_ms`). `check()` answers `sat`, `unsat` or `unknown`; a spent budget is
    `unknown`, never `unsat`."""

    def __init__(self, budget_ms: int) -> None:
        self._solver = Solver(int(budget_ms) * RLIMIT_PER_MS)

    def add(self, *formulas: Any) -> None:
        self._solver.add(*formulas)

    def check(self) -> str:
        return str(self._solver.check())

    def reason_unknown(self) -> str:
        return str(self._solver.reason_unknown())

    def values(self, terms: Iterable[Any]) -> dict[str, int]:
        """After `sat`: each term's value in the model, by its printed name."""
        model = self._solver.model()
        return {str(t): model.eval(t, model_completion=True).as_long() for t in terms}

    def sexpr(self) -> str:
        return str(self._solver.sexpr())


class Solver:
    """A solver whose every answer depends only on the assertions and `rlimit`, never on the
    machine's load.

    `z3.Solver()` picks Z3's strategy for the logic it detects, and those strategies give
    sub-solvers wall-clock caps (for bounded integer problems, linear or not, a few seconds
    each), so a query proved on an idle machine came back unknown on a busy one. Here the
    budget is split over stages tried in turn, each with its own share of `rlimit`, so a
    stage that blows up on one problem costs its share, not the answer:
    1. `smt` after light preprocessing (simplify, propagate-values, solve-eqs), half;
    2. `smt` after Z3's integer preprocessing with `lia2card`, a quarter;
    3. Z3's non-linear preprocessing, then bit-blasting (which only finds models), then
       `smt` and `nlsat` capped by conflicts, then `smt`, a quarter.
    A goal with a quantifier (the tile proofs' existentials) starts with Z3's `lia` instead
    (quantifier elimination first), half, then stage 1, a quarter, then stage 3.
    Mirrors the `z3.Solver` methods the solver layer uses."""

    def __init__(self, rlimit: int) -> None:
        self.rlimit = rlimit
        self._held = z3.Solver()  # the assertions, for `sexpr`; never checked
        self._last: z3.Solver | None = None

    def add(self, *formulas: Any) -> None:
        self._held.add(*formulas)

    def check(self) -> z3.CheckSatResult:
        goal = self._held.assertions()
        result = z3.unknown
        for stage, share in _stages(goal):
            s = stage.solver()
            rlimit = max(1, self.rlimit * share // 4)
            s.set("rlimit", rlimit)
            s.set("timeout", safety_net_ms(rlimit))
            s.add(goal)
            self._last = s
            result = s.check()
            if result != z3.unknown:
                break
        return result

    def model(self) -> z3.ModelRef:
        assert self._last is not None, "model() before check()"
        return self._last.model()

    def reason_unknown(self) -> str:
        return self._last.reason_unknown() if self._last is not None else ""

    def sexpr(self) -> str:
        return str(self._held.sexpr())

    def statistics(self) -> z3.Statistics:
        """The last stage's (Z3's `rlimit count` in it runs on across the process)."""
        assert self._last is not None, "statistics() before check()"
        return self._last.statistics()


#: The conflicts a capped non-linear sub-solver may spend before the next one is tried.
NIA_CONFLICTS = 2000

Plan = tuple[tuple[z3.Tactic, int], ...]


@functools.cache
def _plans() -> tuple[z3.Probe, Plan, Plan]:
    """The quantifier probe, and the stages (each with its share of the budget in quarters)
    for a goal with a quantifier and for one without; built once, on first use."""
    w = z3.With
    light = z3.Then("simplify", "propagate-values", "solve-eqs")
    integer = z3.Then(light, w("ctx-simplify", max_depth=30, max_steps=5_000_000),
                      w("simplify", pull_cheap_ite=True, local_ctx=True,
                        local_ctx_limit=10_000_000),
                      "elim-uncnstr")
    heavy = z3.Then(integer, "lia2card", "card2bv", z3.OrElse("cofactor-term-ite", "skip"))
    # bit-blasting under-approximates (it only ever answers sat), and fails otherwise
    bits = z3.Then(w("simplify", hoist_mul=True), w("nla2bv", nla2bv_max_bv_size=64),
                   w(z3.Then("simplify", "propagate-values", "max-bv-sharing", "bit-blast",
                             "sat"), max_conflicts=500),
                   "fail-if-undecided")
    capped = [z3.Then(w("simplify", som=True), w(t, max_conflicts=NIA_CONFLICTS),
                      "fail-if-undecided") for t in ("smt", "qfnra-nlsat")]
    light_smt = z3.Then(light, "smt")
    integer_smt = z3.Then(integer, "lia2card", "smt")
    nonlinear = z3.Then(heavy, z3.OrElse(bits, *capped, z3.Then(w("simplify", som=True), "smt")))
    # Z3's own for quantified linear integer arithmetic (quantifier elimination, then `qsat`
    # or `smt`): it has no wall-clock cap
    quantified = z3.Tactic("lia")
    return (z3.Probe("has-quantifiers"),
            ((quantified, 2), (light_smt, 1), (nonlinear, 1)),
            ((light_smt, 2), (integer_smt, 1), (nonlinear, 1)))


def _stages(goal: Any) -> Plan:
    """The stages for this goal, each with its share of the budget in quarters."""
    has_quantifiers, with_quantifier, without = _plans()
    g = z3.Goal()
    g.add(goal)
    return with_quantifier if has_quantifiers(g) else without


def safety_net_ms(rlimit: int) -> int:
    """The wall-clock net of a solver run with this resource budget: a minute plus one second per
    50,000 units, the rate of a heavily loaded two-core machine (an idle core does 2-3 million
    a second), at most a day (a script of thousands of small checks has a large total budget
    and spends little of it). It exists for a runaway check (one where Z3 stops counting its
    resources, as some non-linear mutants of the rule base show), not as a budget: the budget,
    not the machine's load, decides every answer of a check that counts."""
    return min(60_000 + max(0, rlimit) // 50, 86_400_000)


#: An explicit tactic: a plain `(check-sat)` lets Z3 pick one for the logic it detects, and for
#: non-linear integer arithmetic that one caps sub-steps by wall-clock time, so the same query
#: answered `unsat` on an idle machine and `unknown` on a busy one.
CHECK = "(check-sat-using (then simplify solve-eqs smt))"


def query_text(assertions: Iterable[Any], header: str = "") -> str:
    """An SMT-LIB2 script: `header` as comment lines, the declarations and assertions, and one
    check (`CHECK`). Satisfiable exactly when the assertions have a common model."""
    solver = z3.Solver()
    for a in assertions:
        solver.add(a if not isinstance(a, bool) else z3.BoolVal(a))
    comments = "".join(f"; {line}\n" for line in header.splitlines())
    return comments + solver.sexpr() + CHECK + "\n"


_VALUE = re.compile(r"\((\|[^|]*\||[^\s()|]+)\s+(\(\s*-\s*\d+\s*\)|-?\d+)\)")


def parse_values(get_value_output: str) -> dict[str, int]:
    """The integers of a `(get-value (x y ...))` answer: `((x 3) (y (- 2)))` -> {x: 3, y: -2}."""
    return {name.strip("|"): int(value.replace("(", "").replace(")", "").replace(" ", ""))
            for name, value in _VALUE.findall(get_value_output)}
