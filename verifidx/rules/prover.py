"""Proving rules with Z3, and refuting them with counterexamples a person can check by hand.

A rule is an obligation: for all values of its term variables, constants and interval bounds
(`lo(t) <= t <= hi(t)`) that satisfy its conditions, every operation on both sides is defined
(`mod` divisors > 0, division divisors != 0) and the sides are equal (for constraint rules: the
memberships are equivalent). Conditions are read the way the evaluator reads them, left to right
with short-circuit `and`/`or`; a condition that is undefined does not hold.

The verdict is honest about its strength. Strategies run in order, each under a time cap, and only
an `unsat` answer proves anything:

1. `direct`: the obligation exactly as `verifidx.smt` encodes floordiv and mod;
2. `quotients`: the same semantics with a fresh quotient per division (`b*q <= a < b*q + b`),
   simplified by Z3's equation solver; this is what usually closes symbolic moduli;
3. `sign splits`: cases `c < 0`, `c == 0`, `c > 0` of the constants in non-linear positions;
4. `bounded`: those constants enumerated in [-N, N] (smallest first), the rest left to Z3; the
   result is `bounded: |c| <= N` where N is the largest bound fully covered in the time given.

A `sat` answer anywhere is a counterexample: it is shrunk towards small values, re-checked with
verifidx's own evaluator, and only then reported as `refuted`. Everything else is `unknown`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import z3

from ..errors import DivisorError, EvaluationError
from ..expr import RAW_BINARY, Add, CeilDiv, Const, Expr, FloorDiv, Max, Mod, Mul
from ..smt import Encoder
from ..syntax import print_expr
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
    condition_exprs,
    evaluate_condition,
    rule_exprs,
    side_exprs,
)

Z3_VERSION = z3.get_version_string()

PROVED, REFUTED, UNKNOWN, ERROR = "proved", "refuted", "unknown", "error"
QUICK_MS = 300  # the first, short try of each unbounded encoding


@dataclass(frozen=True)
class ProverConfig:
    """Time caps and the enumeration bound. Defaults keep a 30-rule file under a minute on
    two cores while leaving each strategy a real chance."""

    timeout_ms: int = 2000  # each unbounded attempt
    split_budget_ms: int = 3000  # all sign cases together
    bound: int = 64  # constants enumerated in [-bound, bound]
    min_bound: int = 8  # a bounded proof below this is reported as unknown
    bounded_budget_s: float = 12.0
    case_timeout_ms: int = 1000  # one enumerated case
    minimize_budget_ms: int = 1500


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


# -- the parts of a rule -----------------------------------------------------------------------


def conjuncts(cond: Condition) -> list[Condition]:
    if isinstance(cond, BoolOp) and cond.op == "and":
        return [c for a in cond.args for c in conjuncts(a)]
    return [] if cond == Truth(True) else [cond]


def _is_bound(n: Expr) -> bool:
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
            elif _is_bound(n):
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
        return any(isinstance(n, (TermVar, ConstVar)) or _is_bound(n) for n in e.walk())

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


# -- encoding ----------------------------------------------------------------------------------

_Z3_COMPARE: dict[str, Callable[[z3.ArithRef, z3.ArithRef], z3.BoolRef]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


class _RuleEncoder(Encoder):
    """`smt.Encoder` plus the condition language's functions. `quotients=True` replaces each
    division by a fresh quotient variable pinned down by the floor inequalities (exact, and
    often easier for Z3 when the divisor is symbolic)."""

    def __init__(self, env: Mapping[Expr, z3.ArithRef], quotients: bool = False) -> None:
        super().__init__(env)
        self.quotients = quotients
        self.axioms: list[z3.BoolRef] = []
        self._fresh = 0

    def fresh(self, stem: str) -> z3.ArithRef:
        self._fresh += 1
        return z3.Int(f"{stem}!{self._fresh}")

    def _encode(self, e: Expr) -> z3.ArithRef:
        if e in self.env:
            return self.env[e]
        if isinstance(e, Call):
            return self._call(e)
        if self.quotients and isinstance(e, (FloorDiv, CeilDiv, Mod)):
            a, b = self(e.lhs), self(e.rhs)
            if isinstance(e, CeilDiv):
                return -self._quotient(-a, b)
            q = self._quotient(a, b)
            return q if isinstance(e, FloorDiv) else a - b * q
        return super()._encode(e)

    def _quotient(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        q = self.fresh("q")
        self.axioms.append(z3.Implies(b > 0, z3.And(b * q <= a, a <= b * q + b - 1)))
        self.axioms.append(z3.Implies(b < 0, z3.And(b * q >= a, a >= b * q + b + 1)))
        return q

    def _call(self, e: Call) -> z3.ArithRef:
        args = [z3.simplify(self(a)) for a in e.args]
        if all(z3.is_int_value(a) for a in args) and e.fn in ("gcd", "lcm", "abs"):
            return z3.IntVal(Call(e.fn, [Const(a.as_long()) for a in args]).evaluate({}))
        if e.fn == "abs":
            return z3.If(args[0] >= 0, args[0], -args[0])
        if e.fn == "gcd":
            return self._gcd(args[0], args[1])
        if e.fn == "lcm":
            a, b = args
            g, lcm = self._gcd(a, b), self.fresh("lcm")
            ab = a * b
            self.axioms += [lcm >= 0, z3.If(z3.Or(a == 0, b == 0), lcm == 0,
                                            lcm * g == z3.If(ab >= 0, ab, -ab))]
            return lcm
        raise KeyError(f"no value for {e}")

    def _gcd(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        """g = gcd(a, b) exactly: g >= 0 divides both and is an integer combination of them
        (Bezout), so every common divisor divides g."""
        g, ka, kb, u, v = (self.fresh(s) for s in ("gcd", "ka", "kb", "u", "v"))
        self.axioms += [g >= 0, a == g * ka, b == g * kb, g == a * u + b * v]
        return g

    def definedness(self, e: Expr) -> z3.BoolRef:
        """Every `mod` divisor > 0 and every division divisor != 0 inside `e`."""
        conds: list[z3.BoolRef] = []
        for n in e.walk():
            if isinstance(n, Mod):
                conds.append(self(n.rhs) > 0)
            elif isinstance(n, (FloorDiv, CeilDiv)):
                conds.append(self(n.rhs) != 0)
        return z3.And(conds) if conds else z3.BoolVal(True)

    def truth(self, cond: Condition) -> tuple[z3.BoolRef, z3.BoolRef]:
        """(holds, fails): the condition evaluates without error to True / to False."""
        if isinstance(cond, Truth):
            return z3.BoolVal(cond.value), z3.BoolVal(not cond.value)
        if isinstance(cond, Compare):
            ok = z3.And(self.definedness(cond.lhs), self.definedness(cond.rhs))
            rel = _Z3_COMPARE[cond.op](self(cond.lhs), self(cond.rhs))
            return z3.And(ok, rel), z3.And(ok, z3.Not(rel))
        if isinstance(cond, Not):
            t, f = self.truth(cond.arg)
            return f, t
        t, f = self.truth(cond.args[0])
        for arg in cond.args[1:]:
            t2, f2 = self.truth(arg)
            if cond.op == "and":
                t, f = z3.And(t, t2), z3.Or(f, z3.And(t, f2))
            else:
                t, f = z3.Or(t, z3.And(f, t2)), z3.And(f, f2)
        return t, f


@dataclass
class Obligation:
    """`formula` is satisfiable exactly when the rule has a counterexample."""

    rule: Rule
    formula: z3.BoolRef
    leaves: dict[str, z3.ArithRef]
    fixed: dict[str, int]

    def smtlib(self) -> str:
        s = z3.Solver()
        s.add(self.formula)
        head = (f"; verifidx obligation for rule {self.rule.name}\n"
                f"; {self.rule.normalized_text}\n"
                "; unsat = proved: no values satisfy the conditions and break the rule\n")
        return head + s.to_smt2()


def build_obligation(rule: Rule, fixed: Mapping[str, int] | None = None,
                     quotients: bool = False) -> Obligation:
    """The negated rule as one Z3 formula; constants named in `fixed` are replaced by values."""
    fixed = dict(fixed or {})
    nodes = rule_leaves(rule)
    env: dict[Expr, z3.ArithRef] = {}
    leaves: dict[str, z3.ArithRef] = {}
    for name, node in nodes.items():
        term = z3.IntVal(fixed[name]) if name in fixed else z3.Int(name)
        env[node] = term
        leaves[name] = term
    enc = _RuleEncoder(env, quotients)
    holds, _ = enc.truth(rule.condition)
    assumptions = [holds]
    for name, node in nodes.items():
        if _is_bound(node):
            t = node.args[0]  # type: ignore[attr-defined]
            v, b = enc(t), leaves[name]
            assumptions.append(z3.Implies(enc.definedness(t), b <= v if name.startswith("lo")
                                          else v <= b))
    if isinstance(rule.lhs, Membership) and isinstance(rule.rhs, Membership):
        parts = [*side_exprs(rule.lhs), *side_exprs(rule.rhs)]
        ok = z3.And([enc.definedness(e) for e in parts])

        def member(m: Membership) -> z3.BoolRef:
            return z3.And(enc(m.lo) <= enc(m.expr), enc(m.expr) <= enc(m.hi))

        goal = z3.And(ok, member(rule.lhs) == member(rule.rhs))
    else:
        lhs, rhs = rule.lhs, rule.rhs
        assert isinstance(lhs, Expr) and isinstance(rhs, Expr)
        goal = z3.And(enc.definedness(lhs), enc.definedness(rhs), enc(lhs) == enc(rhs))
    formula = z3.And(*assumptions, *enc.axioms, z3.Not(goal))
    return Obligation(rule, formula, {k: v for k, v in leaves.items() if k not in fixed}, fixed)


def explain(rule: Rule) -> str:
    """The SMT-LIB2 text of the rule's obligation (the `direct` encoding)."""
    return build_obligation(rule).smtlib()


# -- solving -----------------------------------------------------------------------------------


def _solver(tactic: bool, timeout_ms: float) -> z3.Solver:
    s = z3.Then("simplify", "solve-eqs", "smt").solver() if tactic else z3.Solver()
    s.set("timeout", max(1, int(timeout_ms)))
    return s


@dataclass
class _Answer:
    result: str  # "unsat", "sat", "unknown"
    values: dict[str, int] | None = None
    reason: str = ""


def _check(formula: z3.BoolRef, leaves: Mapping[str, z3.ArithRef], tactic: bool,
           timeout_ms: float, extra: Sequence[z3.BoolRef] = ()) -> _Answer:
    s = _solver(tactic, timeout_ms)
    s.add(formula, *extra)
    r = s.check()
    if r == z3.unsat:
        return _Answer("unsat")
    if r == z3.sat:
        m = s.model()
        return _Answer("sat", {k: m.eval(v, model_completion=True).as_long()
                               for k, v in leaves.items()})
    return _Answer("unknown", reason=s.reason_unknown())


def _minimise(ob: Obligation, values: dict[str, int], tactic: bool, budget_ms: int
              ) -> dict[str, int]:
    """Shrink a counterexample: first the largest magnitude, then each value in turn (binary
    search on |v|), preferring non-negative values. Best effort within the budget."""
    deadline = time.perf_counter() + budget_ms / 1000
    terms = ob.leaves

    def attempt(extra: list[z3.BoolRef]) -> dict[str, int] | None:
        left = (deadline - time.perf_counter()) * 1000
        if left <= 5:
            return None
        a = _check(ob.formula, terms, tactic, min(300, left), extra)
        return a.values if a.result == "sat" else None

    def within(t: z3.ArithRef, m: int) -> z3.BoolRef:
        return z3.And(t >= -m, t <= m)

    cur = dict(values)
    if not terms:
        return cur
    top = max(abs(v) for v in cur.values())
    for m in (0, 1, 2, 4, 8, 16, 64, 256, 4096):
        if m >= top:
            break
        got = attempt([within(t, m) for t in terms.values()])
        if got is not None:
            cur, top = got, m
            break
    pinned: list[z3.BoolRef] = [within(t, top) for t in terms.values()]
    for name, t in terms.items():
        lo, hi = 0, abs(cur[name])
        while lo < hi:
            mid = (lo + hi) // 2
            got = attempt([*pinned, within(t, mid)])
            if got is None:
                lo = mid + 1
            else:
                cur, hi = got, abs(got[name])
        if cur[name] < 0:
            got = attempt([*pinned, t == -cur[name]])
            if got is not None:
                cur = got
        pinned.append(within(t, abs(cur[name])))
    return cur


# -- counterexamples ---------------------------------------------------------------------------


def _value(e: Expr, env: Mapping[Expr, int]) -> tuple[int | None, str]:
    try:
        return e.evaluate(env), ""
    except EvaluationError as err:
        return None, str(err)


def _membership(m: Membership, env: Mapping[Expr, int]) -> tuple[bool | None, str]:
    vals = [_value(e, env) for e in (m.expr, m.lo, m.hi)]
    for v, why in vals:
        if v is None:
            return None, why
    x, lo, hi = (v for v, _ in vals)
    return lo <= x <= hi, ""  # type: ignore[operator]


@dataclass
class _Report:
    lhs: int | bool | None
    rhs: int | bool | None
    message: str
    subterms: dict[str, int | bool | None]
    reproducer: str | None


def recheck(rule: Rule, values: Mapping[str, int]) -> _Report | None:
    """Evaluate the rule at `values` with verifidx's evaluator. None unless the point really
    satisfies the conditions and the bounds and really breaks the rule."""
    nodes = rule_leaves(rule)
    env: dict[Expr, int] = {nodes[k]: v for k, v in values.items() if k in nodes}
    if len(env) != len(nodes):
        return None
    try:
        if not evaluate_condition(rule.condition, env):
            return None
    except EvaluationError:
        return None
    for name, node in nodes.items():
        if _is_bound(node):
            t, _ = _value(node.args[0], env)  # type: ignore[attr-defined]
            b = env[node]
            if t is not None and (b > t if name.startswith("lo") else b < t):
                return None
    lv: int | bool | None  # a value, or a membership's truth
    rv: int | bool | None
    if isinstance(rule.lhs, Membership) and isinstance(rule.rhs, Membership):
        lv, lwhy = _membership(rule.lhs, env)
        rv, rwhy = _membership(rule.rhs, env)
        texts = [_membership_text(rule.lhs, env), _membership_text(rule.rhs, env)]
        differ = f"{texts[0]} is {str(lv).lower()} but {texts[1]} is {str(rv).lower()}"
    else:
        assert isinstance(rule.lhs, Expr) and isinstance(rule.rhs, Expr)
        lv, lwhy = _value(rule.lhs, env)
        rv, rwhy = _value(rule.rhs, env)
        differ = f"the left side is {lv} but the right side is {rv}"
    if lv is not None and rv is not None and lv == rv:
        return None
    if lv is None or rv is None:
        message = f"the {'left' if lv is None else 'right'} side is undefined: {lwhy or rwhy}"
    else:
        message = differ
    at = ", ".join(f"{k} = {v}" for k, v in values.items())
    return _Report(lv, rv, f"{message} (at {at})" if at else message,
                   _subterms(rule, env), _reproducer(rule, env))


def _membership_text(m: Membership, env: Mapping[Expr, int]) -> str:
    lo, _ = _value(m.lo, env)
    hi, _ = _value(m.hi, env)
    return f"{print_expr(m.expr)} in [{lo}, {hi}]"


def _subterms(rule: Rule, env: Mapping[Expr, int]) -> dict[str, int | bool | None]:
    out: dict[str, int | bool | None] = {}
    for side in (rule.lhs, rule.rhs):
        for top in side_exprs(side):
            for n in top.walk():
                if isinstance(n, (Const, TermVar, ConstVar)) or _is_bound(n):
                    continue
                key = print_expr(n)
                if key not in out:
                    out[key] = _value(n, env)[0]
    return out


def _instantiate(e: Expr, env: Mapping[Expr, int]) -> Expr | None:
    """`e` with constants and bounds replaced by their values (no folding), for map text."""
    if isinstance(e, ConstVar) or _is_bound(e):
        return Const(env[e])
    if isinstance(e, Call):
        if not any(isinstance(n, TermVar) for n in e.walk()):
            v, _ = _value(e, env)
            return None if v is None else Const(v)
        if e.fn == "abs":
            a = _instantiate(e.args[0], env)
            return None if a is None else Max(a, Mul(a, Const(-1)))
        return None
    kids = [_instantiate(k, env) for k in e.children]
    if any(k is None for k in kids):
        return None
    if isinstance(e, Add):
        return Add(kids)  # type: ignore[arg-type]
    if not kids:
        return e
    return RAW_BINARY[e.tag](kids[0], kids[1])  # type: ignore[attr-defined,arg-type]


def _reproducer(rule: Rule, env: Mapping[Expr, int]) -> str | None:
    """A one-line `verifidx map eval` command printing both sides at the counterexample."""
    nodes = rule_leaves(rule)
    terms = [n for n in nodes.values() if isinstance(n, TermVar)]
    parts = [e for side in (rule.lhs, rule.rhs) for e in
             ([side.expr] if isinstance(side, Membership) else [side])]
    try:
        results = [_instantiate(e, env) for e in parts]
    except DivisorError:
        return None  # the counterexample makes a divisor invalid: no map can show that
    if any(r is None for r in results):
        return None
    names = {t: t.name for t in terms}  # type: ignore[attr-defined]
    domain = []
    for t in terms:
        lo: int | None = env.get(Call("lo", [t]), env[t])
        hi: int | None = env.get(Call("hi", [t]), env[t])
        domain.append(f"{names[t]} in [{lo}, {hi}]")
    compound = dict.fromkeys(n.args[0] for n in nodes.values()  # type: ignore[attr-defined]
                             if _is_bound(n) and not isinstance(n.args[0], TermVar))  # type: ignore[attr-defined]
    for arg in compound:
        value, _ = _value(arg, env)
        lo = env.get(Call("lo", [arg]), value)
        hi = env.get(Call("hi", [arg]), value)
        try:
            inst = _instantiate(arg, env)
        except DivisorError:
            return None
        if lo is None or hi is None or inst is None:
            return None
        domain.append(f"{print_expr(inst)} in [{lo}, {hi}]")
    head = f"({', '.join(names[t] for t in terms)})"
    body = ", ".join(print_expr(r) for r in results)  # type: ignore[arg-type]
    text = f"{head} -> ({body})" + (f", domain: {', '.join(domain)}" if domain else "")
    dims = ",".join(str(env[t]) for t in terms)
    cmd = f"verifidx map eval '{text}'" + (f" --dims={dims}" if dims else "")
    if isinstance(rule.lhs, Membership) and isinstance(rule.rhs, Membership):
        bounds = [f"[{_value(m.lo, env)[0]}, {_value(m.hi, env)[0]}]"
                  for m in (rule.lhs, rule.rhs)]
        cmd += f"  # memberships: first result in {bounds[0]}, second in {bounds[1]}"
    return cmd


# -- strategies --------------------------------------------------------------------------------


@dataclass
class _Outcome:
    verdict: str
    strategy: str
    strength: str | None = None
    values: dict[str, int] | None = None
    message: str = ""


def _refutation(ob: Obligation, answer: _Answer, tactic: bool, strategy: str,
                config: ProverConfig) -> _Outcome:
    assert answer.values is not None
    values = _minimise(ob, answer.values, tactic, config.minimize_budget_ms)
    full = {**ob.fixed, **values}
    names = rule_leaves(ob.rule)
    return _Outcome(REFUTED, strategy, values={k: full[k] for k in names if k in full})


def _unbounded(rule: Rule, config: ProverConfig, notes: list[str]) -> _Outcome | None:
    """Both encodings, first briefly (each often answers in milliseconds), then with the full
    cap; then sign splits over the quotient encoding."""
    direct = build_obligation(rule)
    quotients = build_obligation(rule, quotients=True)
    attempts = (("direct", direct, False), ("quotients", quotients, True))
    quick = min(config.timeout_ms, QUICK_MS)
    for budget in (quick, config.timeout_ms - quick):
        if budget <= 0:
            continue
        for strategy, ob, tactic in attempts:
            a = _check(ob.formula, ob.leaves, tactic, budget)
            if a.result == "unsat":
                return _Outcome(PROVED, strategy, "all")
            if a.result == "sat":
                return _refutation(ob, a, tactic, strategy, config)
            if budget != quick:
                notes.append(f"{strategy}: {a.reason or 'unknown'}")
    return _sign_splits(rule, quotients, config, notes)


def _sign_splits(rule: Rule, ob: Obligation, config: ProverConfig, notes: list[str]
                 ) -> _Outcome | None:
    names = nonlinear_constants(rule)[:3]
    if not names:
        return None
    deadline = time.perf_counter() + config.split_budget_ms / 1000
    open_cases = 0
    for signs in itertools.product((1, 0, -1), repeat=len(names)):
        left = (deadline - time.perf_counter()) * 1000
        if left <= 10:
            notes.append("sign splits: out of time")
            return None
        case = [ob.leaves[n] > 0 if s > 0 else ob.leaves[n] == 0 if s == 0
                else ob.leaves[n] < 0 for n, s in zip(names, signs)]
        a = _check(ob.formula, ob.leaves, True, min(left, config.case_timeout_ms), case)
        if a.result == "sat":
            return _refutation(ob, a, True, "sign splits", config)
        if a.result == "unknown":
            open_cases += 1
    if open_cases:
        notes.append(f"sign splits: {open_cases} case(s) unknown")
        return None
    return _Outcome(PROVED, "sign splits", "all")


def _shell(k: int, m: int) -> Iterator[tuple[int, ...]]:
    """All k-tuples whose largest magnitude is exactly m, small values first."""
    if m == 0:
        yield (0,) * k
        return
    inner = sorted(range(-(m - 1), m), key=lambda v: (abs(v), -v))
    outer = sorted(range(-m, m + 1), key=lambda v: (abs(v), -v))
    for j in range(k):
        for head in itertools.product(inner, repeat=j):
            for v in (m, -m):
                for tail in itertools.product(outer, repeat=k - j - 1):
                    yield (*head, v, *tail)


def _bounded(rule: Rule, config: ProverConfig, notes: list[str]) -> _Outcome:
    names = nonlinear_constants(rule)
    if not names:
        return _Outcome(UNKNOWN, "bounded", message="; ".join(notes))
    nodes = rule_leaves(rule)
    chosen = {nodes[n] for n in names}
    # conjuncts over the enumerated constants alone are decided in Python, before any Z3 call
    prefilter = [c for c in conjuncts(rule.condition) if _only_constants(c, chosen)]
    deadline = time.perf_counter() + config.bounded_budget_s
    covered = -1
    for m in range(config.bound + 1):
        for combo in _shell(len(names), m):
            if time.perf_counter() > deadline:
                return _bounded_result(covered, names, config, notes, "out of time")
            env = {nodes[n]: v for n, v in zip(names, combo)}
            try:
                if not all(evaluate_condition(c, env) for c in prefilter):
                    continue
            except EvaluationError:
                continue
            ob = build_obligation(rule, dict(zip(names, combo)))
            a = _check(ob.formula, ob.leaves, False, config.case_timeout_ms)
            if a.result == "sat":
                return _refutation(ob, a, False, "bounded", config)
            if a.result == "unknown":
                at = ", ".join(f"{n} = {v}" for n, v in zip(names, combo))
                return _bounded_result(covered, names, config, notes,
                                       f"Z3 answered unknown at {at}")
        covered = m
    return _bounded_result(covered, names, config, notes, "")


def _only_constants(cond: Condition, allowed: set[Expr]) -> bool:
    for e in condition_exprs(cond):
        for n in e.walk():
            if isinstance(n, TermVar) or _is_bound(n):
                return False
            if isinstance(n, ConstVar) and n not in allowed:
                return False
    return True


def _bounded_result(covered: int, names: Sequence[str], config: ProverConfig,
                    notes: list[str], why: str) -> _Outcome:
    which = ", ".join(names)
    if covered >= config.min_bound:
        others = " (other constants and all terms unbounded)"
        return _Outcome(PROVED, "bounded", f"bounded: |c| <= {covered}",
                        message=f"{which} enumerated in [-{covered}, {covered}]{others}")
    reason = "; ".join([*notes, f"bounded: {why or 'nothing to enumerate'}"
                        + (f" after |c| <= {covered}" if covered >= 0 else "")])
    return _Outcome(UNKNOWN, "bounded", message=reason)


def _search(rule: Rule, config: ProverConfig) -> _Outcome:
    notes: list[str] = []
    return _unbounded(rule, config, notes) or _bounded(rule, config, notes)


def prove_rule(rule: Rule, config: ProverConfig | None = None) -> ProofResult:
    """Prove or refute one rule (see the module docstring for the strategies)."""
    from .order import classify

    config = config or ProverConfig()
    start = time.perf_counter()
    order = classify(rule)
    result = ProofResult(rule.name, rule.file, rule.line, UNKNOWN, order=order.verdict,
                         rule=rule)
    try:
        result.smtlib = explain(rule)
        outcome = _search(rule, config)
    except (z3.Z3Exception, EvaluationError, RecursionError) as err:
        result.verdict, result.message = ERROR, f"{type(err).__name__}: {err}"
        result.seconds = time.perf_counter() - start
        return result
    result.strategy = outcome.strategy
    result.verdict, result.strength, result.message = (outcome.verdict, outcome.strength,
                                                       outcome.message)
    if outcome.verdict == REFUTED:
        assert outcome.values is not None
        report = recheck(rule, outcome.values)
        if report is None:
            result.verdict, result.strength = UNKNOWN, None
            result.message = (f"Z3's counterexample {outcome.values} did not survive "
                              "re-evaluation; not reporting it")
        else:
            result.counterexample = outcome.values
            result.lhs_value, result.rhs_value = report.lhs, report.rhs
            result.message, result.subterms = report.message, report.subterms
            result.reproducer = report.reproducer
    if order.verdict != "reducing" and order.reason and result.verdict != REFUTED:
        result.message = "; ".join(m for m in (result.message, order.reason) if m)
    result.seconds = time.perf_counter() - start
    return result


def _prove_in_worker(rule: Rule, config: ProverConfig) -> ProofResult:
    """Worker entry point: rules travel between processes as plain Python values (their
    expressions re-intern on arrival), never as Z3 objects."""
    result = prove_rule(rule, config)
    result.rule = None
    return result


def prove_rules(rules: Sequence[Rule], config: ProverConfig | None = None, jobs: int = 1
                ) -> list[ProofResult]:
    """Prove each rule, in `jobs` worker processes when jobs > 1; results in input order."""
    config = config or ProverConfig()
    if jobs <= 1 or len(rules) <= 1:
        return [prove_rule(r, config) for r in rules]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: a forked copy of a process that already ran Z3 is not safe
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(rules)), mp_context=ctx) as pool:
        futures = [pool.submit(_prove_in_worker, r, config) for r in rules]
        results = [f.result() for f in futures]
    for r, res in zip(rules, results):
        res.rule = r
    return results
