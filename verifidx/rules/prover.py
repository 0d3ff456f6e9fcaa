"""Proving rules with Z3, and refuting them with counterexamples a person can check by hand.

A rule is an obligation: for all values of its term variables, constants and interval bounds
(`lo(t) <= t <= hi(t)`) that satisfy its conditions, every operation on both sides is defined
(`mod` divisors > 0, division divisors != 0) and the sides are equal (for constraint rules: the
memberships are equivalent). Conditions are read the way the evaluator reads them, left to right
with short-circuit `and`/`or`; a condition that is undefined does not hold.

The verdict is honest about its strength. Strategies run in order, each under a Z3 resource limit
(deterministic: the same answer on every machine and under any load), and only an `unsat` answer
proves anything:

1. `direct`: the obligation exactly as `verifidx.solve.smt` encodes floordiv and mod;
2. `quotients`: the same semantics with a fresh quotient per division (`b*q <= a < b*q + b`),
   simplified by Z3's equation solver; this is what usually closes symbolic moduli;
3. `sign splits`: cases `c < 0`, `c == 0`, `c > 0` of the constants in non-linear positions;
4. `bounded`: those constants enumerated in [-N, N] (smallest first), the rest left to Z3; the
   result is `bounded: |c| <= N` where N is the largest bound fully covered within the budget.

Each strategy is an SMT-LIB2 script run by Z3's command interpreter, the front end of the `z3`
executable; the script that answered `unsat` at every check is the certificate's query, so that
anyone can re-run exactly what proved the rule.

A `sat` answer anywhere is a counterexample: it is shrunk towards small values, re-checked with
verifidx's own evaluator, and only then reported as `refuted`. Everything else is `unknown`.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import z3

from ..core.errors import DivisorError, EvaluationError
from ..core.expr import RAW_BINARY, Add, CeilDiv, Const, Expr, FloorDiv, Max, Mod, Mul
from ..core.syntax import print_expr, print_point
from ..core.work import Progress
from ..solve.smt import Encoder
from ..solve.smt_terms import safety_net_ms
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
    side_exprs,
)
from .results import (
    ERROR,
    INSTALLED_Z3_VERSION,
    PROVED,
    REFUTED,
    UNKNOWN,
    ProofResult,
    ProverConfig,
    bounded_limit,
    is_bound,
    nonlinear_constants,
    rule_leaves,
)

Z3_VERSION = z3.get_version_string()
if Z3_VERSION != INSTALLED_Z3_VERSION:  # the gate read the installed version without loading Z3
    raise ImportError(f"Z3 {Z3_VERSION} is loaded, but the installed z3-solver says "
                      f"{INSTALLED_Z3_VERSION}")


# -- the parts of a rule -----------------------------------------------------------------------


def conjuncts(cond: Condition) -> list[Condition]:
    if isinstance(cond, BoolOp) and cond.op == "and":
        return [c for a in cond.args for c in conjuncts(a)]
    return [] if cond == Truth(True) else [cond]


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
    """`formula` is satisfiable exactly when the rule has a counterexample; `hypotheses` (the
    conditions, the bounds and the encoding's definitions) when the rule has an instance."""

    rule: Rule
    formula: z3.BoolRef
    leaves: dict[str, z3.ArithRef]
    fixed: dict[str, int]
    hypotheses: z3.BoolRef


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
        if is_bound(node):
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
    hypotheses = z3.And(*assumptions, *enc.axioms)
    formula = z3.And(*assumptions, *enc.axioms, z3.Not(goal))
    return Obligation(rule, formula, {k: v for k, v in leaves.items() if k not in fixed}, fixed,
                      hypotheses)


def explain(rule: Rule) -> str:
    """The SMT-LIB2 text of the rule's obligation (the `direct` encoding)."""
    return render_query(build_obligation(rule), "direct", False)


# -- queries: the SMT-LIB2 scripts that prove, and that anyone can re-run ------------------------

# Explicit tactics: a plain (check-sat) lets Z3 pick a tactic for the logic, and the non-linear
# ones cap sub-steps by wall-clock time, so the answer would depend on the machine's load.
CHECK = "(check-sat-using smt)"
TACTIC_CHECK = "(check-sat-using (then simplify solve-eqs smt))"
_ANSWER = re.compile(r"^(sat|unsat|unknown)$", re.M)
_VALUE = re.compile(r"\((\|[^|]*\||[^\s()|]+)\s+(\(\s*-\s*\d+\s*\)|-?\d+)\)")


def _smt2(e: z3.ExprRef, decls: dict[str, str]) -> str:
    """SMT-LIB2 text of a Z3 term, as a tree (no `let`s: Z3's own printer shares subterms by
    reference count, which depends on what the Python process happens to hold, so its text is
    not a function of the formula). Constants are collected in `decls` in order of appearance."""
    if z3.is_int_value(e):
        v = e.as_long()
        return str(v) if v >= 0 else f"(- {-v})"
    if z3.is_true(e):
        return "true"
    if z3.is_false(e):
        return "false"
    if z3.is_const(e):
        name = e.sexpr()
        decls.setdefault(name, f"(declare-fun {name} () {e.sort().sexpr()})")
        return name
    op = "ite" if z3.is_app_of(e, z3.Z3_OP_ITE) else e.decl().name()
    args = [_smt2(k, decls) for k in e.children()]
    if op in ("and", "or") and len(args) < 2:
        return args[0] if args else ("true" if op == "and" else "false")
    return f"({op} {' '.join(args)})"


def _declarations(ob: Obligation) -> str:
    """The obligation's declarations and assertion, without a check command."""
    decls: dict[str, str] = {}
    body = _smt2(ob.formula, decls)
    return "".join(d + "\n" for d in decls.values()) + f"(assert\n {body})\n"


def render_query(ob: Obligation, strategy: str, tactic: bool,
                 cases: Sequence[z3.BoolRef] = (), seed: int = 0) -> str:
    """The script that proves the rule when every check in it answers `unsat`: one check, or one
    per case between push/pop; `seed` (non-linear case splits only) picks another of Z3's
    deterministic search orders. Same rule text and Z3 version, same bytes."""
    check = TACTIC_CHECK if tactic else CHECK
    body = f"(set-option :smt.random_seed {seed})\n" if seed else ""
    body += _declarations(ob)
    if not cases:
        body += check + "\n"
    for case in cases:
        body += f"(push 1)\n(assert {_smt2(case, {})})\n{check}\n(pop 1)\n"
    head = (f"; verifidx obligation for rule {ob.rule.name} (strategy: {strategy})\n"
            f"; {ob.rule.normalized_text}\n"
            "; unsat at every check = proved: no values satisfy the conditions and break the "
            "rule\n")
    return head + body


_SCRIPT_PARAMETERS = ("rlimit", "timeout", "smt.random_seed")


class ScriptRun:
    """One Z3 command interpreter (the same front end as the `z3` binary) fed SMT-LIB2 text.
    Each check is capped by a resource limit, which is deterministic (a wall-clock cap is not):
    the same text under the same Z3 gives the same answers on every machine. `timeout_ms` is
    only a safety net (default: `safety_net_ms(rlimit)`, far above the budget); an answer it
    cuts short is `unknown`, never `unsat`."""

    def __init__(self, rlimit: int, timeout_ms: int | None = None) -> None:
        self.ctx = z3.Context()
        self.text: list[str] = []
        net = safety_net_ms(rlimit) if timeout_ms is None else timeout_ms
        self.options = f"(set-option :rlimit {rlimit})\n(set-option :timeout {net})\n"

    def _eval(self, text: str, record: bool = True) -> str:
        if record:
            self.text.append(text)
        # `set-option` in a script sets Z3's process-wide parameters; put them back so that no
        # other solver of the process inherits a resource limit or a seed
        saved = {p: z3.get_param(p) for p in _SCRIPT_PARAMETERS}
        try:
            return str(z3.Z3_eval_smtlib2_string(self.ctx.ref(), text))
        except z3.Z3Exception as err:  # e.g. out of resources in a push: the output so far,
            value = err.value  # whose missing answers never count as unsat
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        finally:
            for p, v in saved.items():
                z3.set_param(p, v)

    def run(self, text: str) -> list[str]:
        """Evaluate `text`; the answers of its checks, in order."""
        return _ANSWER.findall(self._eval(self.options + text))

    def query(self, text: str) -> str:
        """A command whose output is not an answer (get-value, get-info); not recorded."""
        return self._eval(self.options + text, record=False)

    def spent(self) -> int:
        m = re.search(r"\d+", self.query("(get-info :rlimit)"))
        return int(m.group(0)) if m else 0

    def reason(self) -> str:
        m = re.search(r'"(.*)"', self.query("(get-info :reason-unknown)"))
        return m.group(1) if m and m.group(1) else "unknown"


_IN_PROCESS = threading.Lock()  # Z3's parameters are process-wide: one script at a time


def z3_binary() -> str | None:
    """The `z3` executable of this Z3 version (the z3-solver wheel installs one beside Python's
    scripts), or None."""
    scripts = sysconfig.get_path("scripts")
    exe = shutil.which("z3", path=os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if f"version {Z3_VERSION} " in out.stdout + " " else None


RESET = "(reset)\n"


def run_query(text: str, timeout_ms: int, exe: str | None = None) -> list[str]:
    """The answers of a stored query (which sets its own resource limit: `budgeted`) as stock
    Z3 gives them: the `z3` executable when `exe` is given (a process of its own, so queries run
    in parallel), else Z3's command interpreter in this process, one at a time. `timeout_ms` is
    the wall-clock net of the whole run (`safety_net_ms` of its total budget).

    In this process each query between `(reset)`s gets a Z3 context of its own, as it had when
    it was proved: `(reset)` in a shared context does not give back everything a query leaves
    (a bundled substitution's 13th query ran out of its resource limit after twelve others in
    one context, and answered unsat alone and in the `z3` executable)."""
    if exe is not None:
        try:
            out = subprocess.run([exe, f"-T:{max(1, timeout_ms // 1000)}", "-in"], input=text,
                                 capture_output=True, text=True, timeout=timeout_ms / 1000 + 30)
        except subprocess.TimeoutExpired:
            return ["unknown"]
        return _ANSWER.findall(out.stdout)
    with _IN_PROCESS:
        return [a for part in text.split(RESET) for a in ScriptRun(0, timeout_ms).run(part)]


def _values(run: ScriptRun, leaves: Mapping[str, z3.ArithRef]) -> dict[str, int] | None:
    if not leaves:
        return {}
    out = run.query(f"(get-value ({' '.join(t.sexpr() for t in leaves.values())}))")
    by_symbol = {sym: int(val.replace("(", "").replace(")", "").replace(" ", ""))
                 for sym, val in _VALUE.findall(out)}
    try:
        return {k: by_symbol[t.sexpr()] for k, t in leaves.items()}
    except KeyError:
        return None


@dataclass
class _Answer:
    result: str  # "unsat", "sat", "unknown"
    values: dict[str, int] | None = None
    reason: str = ""


def _check(ob: Obligation, tactic: bool, rlimit: int, config: ProverConfig,
           extra: Sequence[z3.BoolRef] = ()) -> _Answer:
    """One check of the obligation plus `extra` assertions, with a model when satisfiable."""
    run = ScriptRun(rlimit, config.timeout_ms)
    asserts = "".join(f"(assert {_smt2(e, {})})\n" for e in extra)
    answers = run.run(_declarations(ob) + asserts + (TACTIC_CHECK if tactic else CHECK))
    if answers == ["unsat"]:
        return _Answer("unsat")
    if answers == ["sat"]:
        values = _values(run, ob.leaves)
        if values is not None:
            return _Answer("sat", values)
    return _Answer("unknown", reason=run.reason())


def _minimise(ob: Obligation, values: dict[str, int], tactic: bool, config: ProverConfig
              ) -> dict[str, int]:
    """Shrink a counterexample: first the largest magnitude, then each value in turn (binary
    search on |v|), preferring non-negative values. Best effort within a fixed number of solver
    calls, each under the quick resource limit, so the result is the same on every run."""
    terms = ob.leaves
    calls = config.minimize_steps

    def attempt(extra: list[z3.BoolRef]) -> dict[str, int] | None:
        nonlocal calls
        if calls <= 0:
            return None
        calls -= 1
        a = _check(ob, tactic, config.quick_rlimit, config, extra)
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
        if is_bound(node):
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
    at = print_point(values)
    # a map cannot show an undefined value: `verifidx map eval` would only fail on it
    reproducer = _reproducer(rule, env) if lv is not None and rv is not None else None
    return _Report(lv, rv, f"{message} (at {at})" if at else message,
                   _subterms(rule, env), reproducer)


def _membership_text(m: Membership, env: Mapping[Expr, int]) -> str:
    lo, _ = _value(m.lo, env)
    hi, _ = _value(m.hi, env)
    return f"{print_expr(m.expr)} in [{lo}, {hi}]"


def _subterms(rule: Rule, env: Mapping[Expr, int]) -> dict[str, int | bool | None]:
    out: dict[str, int | bool | None] = {}
    for side in (rule.lhs, rule.rhs):
        for top in side_exprs(side):
            for n in top.walk():
                if isinstance(n, (Const, TermVar, ConstVar)) or is_bound(n):
                    continue
                key = print_expr(n)
                if key not in out:
                    out[key] = _value(n, env)[0]
    return out


def _instantiate(e: Expr, env: Mapping[Expr, int]) -> Expr | None:
    """`e` with constants and bounds replaced by their values (no folding), for map text."""
    if isinstance(e, ConstVar) or is_bound(e):
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
                             if is_bound(n) and not isinstance(n.args[0], TermVar))  # type: ignore[attr-defined]
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
    query: str = ""  # the script whose checks all answered unsat (proved only)
    seed: int = 0
    rlimit: int = 0  # of each check, when not the config's (an escalated sign split)


def _refutation(ob: Obligation, answer: _Answer, tactic: bool, strategy: str,
                config: ProverConfig) -> _Outcome:
    assert answer.values is not None
    values = _minimise(ob, answer.values, tactic, config)
    full = {**ob.fixed, **values}
    names = rule_leaves(ob.rule)
    return _Outcome(REFUTED, strategy, values={k: full[k] for k in names if k in full})


def _encodings(rule: Rule) -> list[tuple[str, Obligation, bool]]:
    return [("direct", build_obligation(rule), False),
            ("quotients", build_obligation(rule, quotients=True), True)]


def _unbounded(rule: Rule, config: ProverConfig, notes: list[str]) -> _Outcome | None:
    """Both encodings, first with the quick resource limit (each often answers at once), then
    with the full one; then sign splits over the quotient encoding."""
    attempts = _encodings(rule)
    for rlimit in dict.fromkeys((min(config.quick_rlimit, config.rlimit), config.rlimit)):
        for strategy, ob, tactic in attempts:
            text = render_query(ob, strategy, tactic)
            run = ScriptRun(rlimit, config.timeout_ms)
            answers = run.run(text)
            if answers == ["unsat"]:
                return _Outcome(PROVED, strategy, "all", query=text)
            if answers == ["sat"]:
                values = _values(run, ob.leaves)
                if values is not None:
                    return _refutation(ob, _Answer("sat", values), tactic, strategy, config)
            if rlimit == config.rlimit:
                notes.append(f"{strategy}: {run.reason()}")
    return _sign_splits(rule, attempts[1][1], config, notes)


def _sign_cases(rule: Rule, ob: Obligation) -> list[z3.BoolRef]:
    names = nonlinear_constants(rule)[:3]
    return [z3.And([ob.leaves[n] > 0 if s > 0 else ob.leaves[n] == 0 if s == 0
                    else ob.leaves[n] < 0 for n, s in zip(names, signs)])
            for signs in itertools.product((1, 0, -1), repeat=len(names))] if names else []


SEEDS = (0, 1, 2, 3)  # Z3's search orders tried by the sign splits, in this order
ESCALATION = 5  # when one sign case stays open: this many times the case budget ...
ESCALATION_SEEDS = tuple(range(8))  # ... under these seeds (digit_merge_high_nested needs 4)


def _sign_splits(rule: Rule, ob: Obligation, config: ProverConfig, notes: list[str]
                 ) -> _Outcome | None:
    """Cases by sign, each under the case resource limit. Non-linear cases are where Z3's
    search order matters most, so the split is tried under a few fixed seeds; the seed that
    worked is part of the stored query."""
    cases = _sign_cases(rule, ob)
    if not cases:
        return None
    fewest = len(cases)
    for seed in SEEDS:
        text = render_query(ob, "sign splits", True, cases, seed)
        answers = ScriptRun(config.case_rlimit, config.timeout_ms).run(text)
        if answers == ["unsat"] * len(cases):
            return _Outcome(PROVED, "sign splits", "all", query=text, seed=seed)
        for case, answer in zip(cases, answers):
            if answer == "sat":
                a = _check(ob, True, config.case_rlimit, config, [case])
                if a.result == "sat":
                    return _refutation(ob, a, True, "sign splits", config)
        fewest = min(fewest, len(cases) - answers.count("unsat"))
    if fewest == 1:  # nearly there: one hard case is worth a larger budget and more seeds
        rlimit = config.case_rlimit * ESCALATION
        for seed in ESCALATION_SEEDS:
            text = render_query(ob, "sign splits", True, cases, seed)
            started = time.monotonic()
            answers = ScriptRun(rlimit, config.timeout_ms).run(text)
            if answers == ["unsat"] * len(cases):
                return _Outcome(PROVED, "sign splits", "all", query=text, seed=seed,
                                rlimit=rlimit)
            net = safety_net_ms(rlimit) if config.timeout_ms is None else config.timeout_ms
            if (time.monotonic() - started) * 1000 >= net:
                break  # a check that outran the wall-clock net (a runaway): no more seeds
    notes.append(f"sign splits: {fewest} case(s) unknown under each of {len(SEEDS)} seeds"
                 + (f" (and of {len(ESCALATION_SEEDS)} with {ESCALATION}x the budget)"
                    if fewest == 1 else ""))
    return None


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


def _bounded_cases(ob: Obligation, names: Sequence[str], m: int) -> list[z3.BoolRef]:
    return [z3.And([ob.leaves[n] == v for n, v in zip(names, combo)])
            for combo in _shell(len(names), m)]


def _case_checks(names: Sequence[str], m: int) -> list[str]:
    """The checks of shell `m` as script text: the bytes `_smt2` prints for `_bounded_cases`,
    written directly (a bounded query of three constants holds thousands of cases, and a warm
    `check` rebuilds it to look it up in the proof cache)."""
    def literal(v: int) -> str:
        return str(v) if v >= 0 else f"(- {-v})"

    out: list[str] = []
    for combo in _shell(len(names), m):
        eqs = [f"(= {n} {literal(v)})" for n, v in zip(names, combo)]
        case = eqs[0] if len(eqs) == 1 else f"(and {' '.join(eqs)})"
        out.append(f"(push 1)\n(assert {case})\n{TACTIC_CHECK}\n(pop 1)\n")
    return out


def bounded_base(rule: Rule) -> str:
    """What a bounded proof's certificate stores: the obligation without its cases. The cases
    (every value in [-N, N] of the enumerated constants) follow from the strength and are
    regenerated by `bounded_query`; storing them would cost megabytes per rule."""
    ob = build_obligation(rule, quotients=True)
    head = render_query(ob, "bounded", True, [z3.BoolVal(True)])
    return head[: head.index("(push 1)")]


def bounded_query(rule: Rule, covered: int) -> str:
    """The script of a `bounded: |c| <= covered` proof: the base query, then one check per value
    of the enumerated constants (the other constants and the terms stay symbolic)."""
    names = nonlinear_constants(rule)
    return bounded_base(rule) + "".join(c for m in range(covered + 1)
                                        for c in _case_checks(names, m))


def _bounded(rule: Rule, config: ProverConfig, notes: list[str]) -> _Outcome:
    """Enumerate shells |c| = 0, 1, 2, ... in one command interpreter: the text fed to it up to
    the last complete shell is exactly the stored query, so its answers are the same on
    re-checking. Stops when the resource budget is spent."""
    names = nonlinear_constants(rule)
    if not names:
        return _Outcome(UNKNOWN, "bounded", message="; ".join(notes))
    ob = build_obligation(rule, quotients=True)
    head = bounded_base(rule)  # then the shells: head + shells = the query `check` runs
    run = ScriptRun(config.case_rlimit, config.timeout_ms)
    run.run(head)
    start = run.spent()
    covered, why = -1, ""
    for m in range(config.bound + 1):
        if run.spent() - start > config.bounded_rlimit:
            why = "out of resources"
            break
        checks = _case_checks(names, m)
        answers = run.run("".join(checks))
        if answers != ["unsat"] * len(checks):
            for case, answer in zip(_bounded_cases(ob, names, m), answers):
                if answer == "sat":
                    a = _check(ob, True, config.case_rlimit, config, [case])
                    if a.result == "sat":
                        return _refutation(ob, a, True, "bounded", config)
            why = "Z3 answered unknown"
            break
        covered = m
    return _bounded_result(rule, covered, names, config, notes, why)


def bounded_vacuity(rule: Rule, covered: int, config: ProverConfig) -> str | None:
    """Why a `bounded: |c| <= covered` proof of `rule` would prove nothing, or None. Its cases
    must reach the prover's minimum bound, and at least one of them must admit an instance
    (values of the terms, the other constants and the bounds that satisfy the rule's
    conditions, checked again with verifidx's evaluator): a bound whose cases are all vacuous
    proves nothing. The prover never reports, and the gate never accepts, such a proof."""
    if covered < config.min_bound:
        return (f"the bound |c| <= {covered} is below the prover's minimum, |c| <= "
                f"{config.min_bound}")
    ob = build_obligation(rule, quotients=True)
    within = [z3.And(ob.leaves[n] >= -covered, ob.leaves[n] <= covered)
              for n in nonlinear_constants(rule)]
    decls: dict[str, str] = {}
    body = _smt2(z3.And(ob.hypotheses, *within), decls)
    run = ScriptRun(config.case_rlimit)
    answers = run.run("".join(d + "\n" for d in decls.values()) + f"(assert\n {body})\n"
                      + TACTIC_CHECK + "\n")
    values = _values(run, ob.leaves) if answers == ["sat"] else None
    nodes = rule_leaves(rule)
    try:
        if values is not None and evaluate_condition(
                rule.condition, {nodes[k]: v for k, v in values.items()}):
            return None
    except EvaluationError:
        pass
    return (f"no instance with the enumerated constants in [-{covered}, {covered}] satisfies "
            "the rule's conditions: the enumeration proves nothing")


def _bounded_result(rule: Rule, covered: int, names: Sequence[str], config: ProverConfig,
                    notes: list[str], why: str) -> _Outcome:
    which = ", ".join(names)
    vacuous = bounded_vacuity(rule, covered, config) if covered >= config.min_bound else None
    if vacuous is not None:
        return _Outcome(UNKNOWN, "bounded", message="; ".join([*notes, f"bounded: {vacuous}"]))
    if covered >= config.min_bound:
        others = " (other constants and all terms unbounded)"
        return _Outcome(PROVED, "bounded", f"bounded: |c| <= {covered}",
                        message=f"{which} enumerated in [-{covered}, {covered}]{others}",
                        query=bounded_base(rule))
    reason = "; ".join([*notes, f"bounded: {why or 'nothing to enumerate'}"
                        + (f" after |c| <= {covered}" if covered >= 0 else "")])
    return _Outcome(UNKNOWN, "bounded", message=reason)


def query_for(rule: Rule, strategy: str | None, strength: str | None, seed: int = 0
              ) -> str | None:
    """The query a certificate with this strategy and strength must hold for `rule`, rebuilt
    from the rule's text alone (None: no such strategy). `verifidx check` compares it with the
    stored text and runs it (with the enumerated cases appended, for a bounded proof), so a
    certificate cannot claim a proof of an easier formula."""
    if strategy in ("direct", "quotients"):
        quotients = strategy == "quotients"
        return render_query(build_obligation(rule, quotients=quotients), strategy, quotients)
    if strategy == "sign splits":
        ob = build_obligation(rule, quotients=True)
        cases = _sign_cases(rule, ob)
        return render_query(ob, strategy, True, cases, seed) if cases else None
    if strategy == "bounded":
        return bounded_base(rule) if bounded_limit(strength) is not None else None
    return None


def recheck_query_for(rule: Rule, strategy: str | None, strength: str | None, seed: int = 0
                      ) -> str | None:
    """The script `verifidx check` runs: the stored query itself, or for a bounded proof the
    base query followed by every enumerated case up to the certificate's bound."""
    if strategy == "bounded":
        limit = bounded_limit(strength)
        return bounded_query(rule, limit) if limit is not None else None
    return query_for(rule, strategy, strength, seed)


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
    if outcome.verdict == PROVED:
        result.smtlib, result.seed, result.rlimit = outcome.query, outcome.seed, outcome.rlimit
    result.verdict, result.strength, result.message = (outcome.verdict, outcome.strength,
                                                       outcome.message)
    if outcome.verdict == REFUTED:
        assert outcome.values is not None
        report = recheck(rule, outcome.values)
        if report is None:
            result.verdict, result.strength = UNKNOWN, None
            result.message = (f"Z3's counterexample {print_point(outcome.values)} did not "
                              "survive re-evaluation; not reporting it")
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


def prove_rules(rules: Sequence[Rule], config: ProverConfig | None = None, jobs: int = 1,
                progress: Progress | None = None) -> list[ProofResult]:
    """Prove each rule, in `jobs` worker processes when jobs > 1; results in input order,
    `progress` advanced as each is known."""
    config = config or ProverConfig()
    results: list[ProofResult] = []
    if jobs <= 1 or len(rules) <= 1:
        for r in rules:
            results.append(prove_rule(r, config))
            if progress is not None:
                progress.advance()
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: a forked copy of a process that already ran Z3 is not safe
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(rules)), mp_context=ctx) as pool:
        futures = [pool.submit(_prove_in_worker, r, config) for r in rules]
        for f in futures:
            results.append(f.result())
            if progress is not None:
                progress.advance()
    for r, res in zip(rules, results):
        res.rule = r
    return results
