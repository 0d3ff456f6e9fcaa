"""Termination: every rule of the rule base must make terms smaller in one fixed order.

The reduction order compares terms by a tuple of counts, lexicographically (docs/rules.md):

1. `divisions`: the number of floordiv, ceildiv and mod nodes;
2. `weight`: the number of nodes, where a sum of n terms weighs 2(n-1) (so `x + x` is heavier
   than `x * 2`) and a constant computed on a right side (`c0 floordiv c1`, `lo(x)`) is one leaf;
3. `division depth`: the summed weight of the subterms under each division (so moving a term out
   of a division, as `(x * c0 + y) floordiv c1 => x * (c0 floordiv c1) + y floordiv c1` does,
   is progress);
4. `constants on the left`: the number of products whose left factor is a constant.

Each count is taken on terms whose constant operations are folded (the smart constructors keep
them so). A rule is `reducing` when its left side is larger than its right side in this order
for every instance in every context; the check that guarantees it is the pattern comparison plus
a variable condition (no term variable occurs more often on the right than on the left, nor
deeper under divisions).

Two marks let a rule that is not reducing into the rule base, each with its own argument:
- `[ordered]`: a permutative rule (`x + y => y + x`, both sides equal in every count) applied
  only when the instance it yields is smaller in a total order on terms (ordered rewriting).
- `[expand]`: the rule runs in the expansion phase, which cannot cycle because each of its rules
  strictly decreases the polynomial interpretation [x] >= 2 for variables and constants,
  [a + b] = [a] + [b] + 1, [a op b] = [a] * [b] for every other operation; Z3 checks the
  decrease for all values. The phases run one after the other, each to its own fixpoint.
- `[trial]`: the engine applies the rule only inside a one-shot trial (expand, simplify) whose
  outcome it keeps when the whole term became smaller in the reduction order; the net step is
  then reducing. The argument lives in the engine, so the rule is reported `expansion`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import z3

from ..core.expr import Add, CeilDiv, Const, Expr, FloorDiv, Mod, Mul
from ..solve.smt_terms import safety_net_ms
from .model import Call, ConstVar, Membership, Rule, TermVar

REDUCING, EXPANSION, VIOLATES = "reducing", "expansion", "violates"
COMPONENTS = ("divisions", "weight", "division depth", "constants on the left")
_DIVISIONS = (FloorDiv, CeilDiv, Mod)


@dataclass(frozen=True)
class OrderResult:
    verdict: str
    reason: str
    lhs: tuple[int, ...]
    rhs: tuple[int, ...]


def is_constant(e: Expr) -> bool:
    """A subterm the simplifier computes to a number: no term variable outside `lo`/`hi`."""
    if isinstance(e, (Const, ConstVar)):
        return True
    if isinstance(e, Call) and e.fn in ("lo", "hi"):
        return True
    if isinstance(e, TermVar):
        return False
    return all(is_constant(c) for c in e.children)


class _Measure:
    """The counts of one side. `computed=True` (right sides) folds constant subterms."""

    def __init__(self, e: Expr, computed: bool) -> None:
        self.computed = computed
        self.divisions = self.weight_sum = self.depth = self.left_constants = 0
        self.occurrences: Counter[str] = Counter()
        self.var_depth: Counter[str] = Counter()
        self._walk(e, 0)

    def leaf(self, e: Expr) -> bool:
        return not e.children or (self.computed and is_constant(e))

    def weight(self, e: Expr) -> int:
        if self.leaf(e):
            return 1
        own = 2 * (len(e.children) - 1) if isinstance(e, Add) else 1
        return own + sum(self.weight(c) for c in e.children)

    def _walk(self, e: Expr, div_depth: int) -> None:
        if self.leaf(e):
            self.weight_sum += 1
            if isinstance(e, TermVar):
                self.occurrences[e.name] += 1
                self.var_depth[e.name] += div_depth
            return
        self.weight_sum += 2 * (len(e.children) - 1) if isinstance(e, Add) else 1
        inner = div_depth
        if isinstance(e, _DIVISIONS):
            self.divisions += 1
            self.depth += self.weight(e)
            inner += 1
        if isinstance(e, Mul) and self._left_constant(e):
            self.left_constants += 1
        for c in e.children:
            self._walk(c, inner)

    def _left_constant(self, e: Mul) -> bool:
        const_left = is_constant(e.lhs) if self.computed else isinstance(e.lhs, (Const,
                                                                                  ConstVar))
        if is_constant(e.rhs):
            return False
        # on a right side a variable factor might be instantiated by a constant: count it
        return const_left or (self.computed and isinstance(e.lhs, TermVar))

    @property
    def counts(self) -> tuple[int, ...]:
        return (self.divisions, self.weight_sum, self.depth, self.left_constants)


def _sides(rule: Rule) -> tuple[Expr, Expr]:
    lhs, rhs = rule.lhs, rule.rhs
    if isinstance(lhs, Membership) and isinstance(rhs, Membership):
        return lhs.expr, rhs.expr
    assert isinstance(lhs, Expr) and isinstance(rhs, Expr)
    return lhs, rhs


def classify(rule: Rule) -> OrderResult:
    """`reducing`, `expansion` (marked and proven to terminate in its phase) or `violates`."""
    left, right = _sides(rule)
    lm, rm = _Measure(left, computed=False), _Measure(right, computed=True)
    lc, rc = lm.counts, rm.counts
    dup = sorted(v for v in rm.occurrences if rm.occurrences[v] > lm.occurrences[v])
    deeper = sorted(v for v in rm.var_depth if rm.var_depth[v] > lm.var_depth[v])
    reason = ""
    if dup:
        reason = f"the right side uses {dup[0]} more often than the left side"
    else:
        for i, (a, b) in enumerate(zip(lc, rc)):
            if a == b:
                if i == 2 and deeper:
                    reason = f"{deeper[0]} moves deeper under divisions"
                    break
                continue
            if a > b and not (i == 2 and deeper):
                return OrderResult(REDUCING, "", lc, rc)
            reason = (f"{deeper[0]} moves deeper under divisions" if a > b else
                      f"the right side has more {COMPONENTS[i]} ({b} > {a})")
            break
        else:
            reason = "both sides are equal in the reduction order"
            if rule.ordered:
                return OrderResult(REDUCING, "permutative: applied by ordered rewriting",
                                   lc, rc)
    if rule.trial:
        return OrderResult(EXPANSION, f"trial expansion (kept only when the result is smaller):"
                                      f" {reason}", lc, rc)
    if rule.ordered and not rule.expansion:
        return OrderResult(VIOLATES, f"marked [ordered] but not permutative: {reason}", lc,
                           rc)
    if rule.expansion:
        why = expansion_phase_decreases(left, right)
        if why is None:
            return OrderResult(EXPANSION, f"expansion phase: {reason}", lc, rc)
        return OrderResult(VIOLATES, f"marked [expand] but {why}", lc, rc)
    return OrderResult(VIOLATES, reason, lc, rc)


def _interpret(e: Expr, computed: bool, env: dict[str, z3.ArithRef]) -> z3.ArithRef:
    if isinstance(e, TermVar):
        return env.setdefault(e.name, z3.Int(e.name))
    if not e.children or (computed and is_constant(e)):
        return z3.IntVal(2)
    kids = [_interpret(c, computed, env) for c in e.children]
    if isinstance(e, Add):
        return z3.Sum(kids) + (len(kids) - 1)
    out = kids[0]
    for k in kids[1:]:
        out = out * k
    return out


#: Z3 resource units of the expansion-phase check (deterministic, unlike a wall-clock cap: the
#: gate computes the order afresh, and its verdict must not depend on the machine's load).
EXPANSION_RLIMIT = 2_000_000


def expansion_phase_decreases(left: Expr, right: Expr, rlimit: int = EXPANSION_RLIMIT
                              ) -> str | None:
    """None when [left] > [right] for all variable values >= 2 (Z3-proven), else why not."""
    env: dict[str, z3.ArithRef] = {}
    lhs, rhs = _interpret(left, False, env), _interpret(right, True, env)
    s = z3.Then("simplify", "solve-eqs", "smt").solver()  # no tactic with a wall-clock cap
    s.set("rlimit", rlimit)
    s.set("timeout", safety_net_ms(rlimit))
    s.add(*[v >= 2 for v in env.values()], lhs <= rhs)
    r = s.check()
    if r == z3.unsat:
        return None
    if r == z3.sat:
        m = s.model()
        at = ", ".join(f"{k} = {m.eval(v, model_completion=True)}" for k, v in env.items())
        return f"it does not decrease the expansion phase's interpretation (at {at})"
    return "Z3 could not show that it decreases the expansion phase's interpretation"
