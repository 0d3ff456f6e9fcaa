"""The rule engine: one rewrite at the root of a term, by the first proven rule that applies.

Every rewrite of an expression is the application of a rule from `rules/` whose certificate in
`proofs/` is current and proved: the matcher proposes bindings, the engine checks that the
instantiated left side is the matched expression (canonical forms are interned, so this is an
identity test) and that the rule's condition holds on the intervals at the match site, then
builds the right side. Canonical sums (`verifidx.core.canonical`) implement the laws of
`rules/canonical.rules`, which the engine does not match. The engine also holds the memo
tables of the expression simplifier and of the map phases, which live as long as its rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ..core import laws
from ..core.canonical import canon
from ..core.errors import EvaluationError
from ..core.expr import Add, Binary, Const, Expr, Mul, Variable, register_cache
from ..core.indexing_map import IndexingMap
from ..core.interval import Interval
from ..rules.guard import compile_function, condition_source, guard_for
from ..rules.matcher import SplitMatch, can_guide, guided_matches, match
from ..rules.model import Call, ConstVar, Membership, Rule, TermVar, rule_exprs
from .instantiate import RangeFn, _instantiate, _NoValue
from .prefilters import (
    _MATCH_CACHE_LIMIT,
    _dividend_facts,
    _fits_divisor,
    _fits_structure,
    _needs_one_bucket,
    _predicted_match_may_rewrite,
    _Prediction,
    _prediction,
    _signature,
    identity_instances,
)


@dataclass(frozen=True)
class Step:
    """One rewrite, for `--trace`: which rule, where, and the intervals that justified it."""

    rule: str
    before: Expr
    after: Expr
    bounds: dict[str, Interval]
    #: how a condition over sizes was decided (maps with sizes), else ""
    note: str = ""

    def __reduce__(self) -> tuple[object, ...]:
        # see Interval.__reduce__
        return (Step, (self.rule, self.before, self.after, self.bounds, self.note))

    def __str__(self) -> str:
        why = ", ".join(f"{k} = {v}" for k, v in self.bounds.items())
        return f"{self.rule}: {self.before}  =>  {self.after}" + (f"   [{why}]" if why else "") \
            + (f"   {{{self.note}}}" if self.note else "")


def _condition_env(rule: Rule, env: Mapping[Expr, Expr], bound: Callable[[Expr], Interval]
                   ) -> dict[Expr, int]:
    values: dict[Expr, int] = {}
    for k, v in env.items():
        if isinstance(k, ConstVar) and isinstance(v, Const):
            values[k] = v.value
    for node in _rule_calls(rule):
        pattern = node.args[0]
        arg = env.get(pattern) if isinstance(pattern, TermVar) else None
        if arg is None:  # not a bare variable (or unbound: `_instantiate` says so)
            arg = _instantiate(pattern, env, bound)
        iv = bound(arg)
        values[node] = iv.lo if node.fn == "lo" else iv.hi
    return values


#: Keyed by the rule itself (a frozen, hashable value), never by `id()`: an id is reused once
#: its object dies, and a cache keyed by it would run another rule's condition (issue 10).
_CONDITIONS: Final[dict[Rule, Callable[[Mapping[Expr, int]], bool]]] = {}


def compiled_condition(rule: Rule) -> Callable[[Mapping[Expr, int]], bool]:
    """The rule's condition as Python code over the values of its constants and bounds: the
    same truth value and the same errors as `evaluate_condition` (a test checks both agree),
    without walking the expression tree at every match."""
    hit = _CONDITIONS.get(rule)
    if hit is None:
        keys: list[Expr] = []
        hit = compile_function(condition_source(rule.condition, keys, "v[K[{}]]"), keys)
        _CONDITIONS[rule] = hit
    return hit


_CHECKS: Final[dict[Rule, Callable[[Mapping[Expr, Expr], RangeFn], bool]]] = {}


def condition_check(rule: Rule) -> Callable[[Mapping[Expr, Expr], RangeFn], bool]:
    """The rule's condition as Python code over a match and the interval function: the truth
    value of `compiled_condition` on `_condition_env`'s values (a test checks both agree), but
    an interval is computed only when the evaluation reaches its `lo`/`hi` (most conditions
    fail on their constants first), and no table of values is built."""
    hit = _CHECKS.get(rule)
    if hit is None:
        keys: list[Expr] = []
        body = condition_source(rule.condition, keys, "_k{}_")
        args: list[Expr] = []
        for i, k in enumerate(keys):
            if isinstance(k, Call):
                args.append(k.args[0])
                code = f"bound(_arg(E, bound, A[{len(args) - 1}])).{k.fn}"
            else:
                code = f"E[K[{i}]].value"
            body = body.replace(f"_k{i}_", code)
        scope = {"K": keys, "A": args, "_arg": _bound_argument}
        hit = compile_function(body, keys, "E, bound", scope)
        _CHECKS[rule] = hit
    return hit


def _bound_argument(env: Mapping[Expr, Expr], bound: RangeFn, pattern: Expr) -> Expr:
    """The term whose interval `lo(pattern)`/`hi(pattern)` reads at the match site."""
    arg = env.get(pattern) if isinstance(pattern, TermVar) else None
    return _instantiate(pattern, env, bound) if arg is None else arg


_CALLS: Final[dict[Rule, list[Call]]] = {}


def _rule_calls(rule: Rule) -> list[Call]:
    hit = _CALLS.get(rule)
    if hit is None:
        hit = _CALLS[rule] = _calls(rule)
    return hit


def _calls(rule: Rule) -> list[Call]:
    """The interval bounds `lo(t)`/`hi(t)` a rule uses, in a stable order."""
    found: dict[Call, None] = {}
    for e in rule_exprs(rule):
        for n in e.walk():
            if isinstance(n, Call) and n.fn in ("lo", "hi"):
                found[n] = None
    return list(found)


def _no_bounds(e: Expr) -> Interval:
    raise _NoValue("left-hand sides do not use interval bounds")


def _is_canonical_law(rule: Rule) -> bool:
    """Rules of `rules/canonical.rules` are the laws `verifidx.core.canonical` implements; matching
    them again on canonical terms would only cost time."""
    return rule.file.replace("\\", "/").endswith("canonical.rules")


class RuleEngine:
    """Applies a set of (proven) rules. Expression rules are indexed by the type of their
    left-hand side's root; constraint rules likewise by their membership expression."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self._matches: dict[tuple[object, ...], list[_Candidate]] = register_cache({})
        #: The candidates of guided matches (`_decompositions`), by left side and position.
        self._shared: dict[tuple[Expr, Expr, bool], dict[int, _Candidate]] = register_cache({})
        #: Simplified terms shared across calls, keyed by `_ExprSimplifier._shared_key`.
        self.results: dict[tuple[object, ...], Expr] = register_cache({})
        #: Outcomes of one rewrite at a root with the intervals they read, by (rule list,
        #: term): see `_ExprSimplifier._rewrite_by_reads`.
        self.tracked: dict[tuple[int, Expr],
                           list[tuple[tuple[tuple[Expr, int, int], ...], Expr | None]]] = \
            register_cache({})
        #: Outcomes of one rewrite at a root (None: no rule applies), keyed the same way: the
        #: bottom-up pass, the fixpoint loop and the root-first trial often ask again.
        self.rewrites: dict[tuple[object, ...], Expr | None] = register_cache({})
        #: What simplifying a map with sizes and constraints computes from its domain alone, by
        #: `_domain_key` (see `_Domain`); the results of such maps are shared under its token.
        self.domains: dict[tuple[object, ...], _Domain] = register_cache({})
        #: Tokens handed out so far (never reused, so a cleared table cannot alias a domain).
        self.domain_tokens = 0
        #: `applicable`'s index: (rule list, signature of a term) -> rules that may match.
        self._index: dict[tuple[object, ...], list[_Plan]] = {}
        #: Its first level: (rule list, structure part of a signature) -> rules that fit it.
        self._by_structure: dict[tuple[object, ...], list[_Plan]] = {}
        #: The plans of a list of `_index` that have a `_prediction`, with it (None: none).
        self._predicted: dict[tuple[object, ...], list[tuple[_Plan, _Prediction]] | None] = {}
        self.expr_rules: dict[type, list[Rule]] = {}
        self.constraint_rules: dict[type, list[Rule]] = {}
        self.expansions: dict[type, list[Rule]] = {}
        for r in self.rules:
            if r.kind == "constraint":
                assert isinstance(r.lhs, Membership)
                root: Expr = r.lhs.expr
                table = self.constraint_rules
            else:
                assert isinstance(r.lhs, Expr)
                root = r.lhs
                table = self.expansions if r.expansion else self.expr_rules
            if isinstance(root, (TermVar, ConstVar)) or r.ordered or _is_canonical_law(r):
                continue  # laws applied by the canonicaliser (verifidx.core.canonical), not matched
            table.setdefault(type(root), []).append(r)
            if isinstance(root, Mul):  # `e * c0` also matches a sum with a common factor
                table.setdefault(Add, []).append(r)
            # (each rule's condition, check and guard are compiled on its first match, once:
            # a run tries a few of the rules, and loading the base stays cheap)
        #: `expr_rules` without the rules that need a remainder within one bucket
        #: (`_needs_one_bucket`), for the types that have some.
        self.without_buckets: dict[type, list[Rule]] = {
            t: [r for r in rs if not _needs_one_bucket(r)]
            for t, rs in self.expr_rules.items() if any(_needs_one_bucket(r) for r in rs)}

    # -- one rewrite at the root of an expression -------------------------------------------
    def rewrite(self, e: Expr, bound: RangeFn, rules: Sequence[Rule],
                trace: list[Step] | None, additive: bool = False) -> Expr | None:
        """The first rule of `rules` that rewrites `e`. `additive`: `bound` of a sum of scaled
        terms is the sum of their scaled bounds (interval arithmetic with no constraint on
        the sum), so `[split]` matches can be ranged before their terms are built."""
        for plan in self.applicable(e, rules):
            out = self._try(plan, e, bound, trace, additive)
            if out is not None:
                return out
        return None

    def applicable(self, e: Expr, rules: Sequence[Rule]) -> list[_Plan]:
        """The rules of `rules` that may match `e`, in order: a discrimination index keyed by
        what the structural filters (`_may_match`) look at, so each filter runs once per
        signature instead of once per term. Dropping a rule here is exact: every filter is a
        necessary condition for a match or a part of the rule's condition."""
        structure, divisor = _signature(e)
        key = (id(rules), structure, divisor)  # the engine's rule lists live as the engine
        hit = self._index.get(key)
        if hit is None:
            # two levels: the structure decides most rules once, the divisor then the rest
            shared = (id(rules), structure)
            plans = self._by_structure.get(shared)
            if plans is None:
                plans = self._by_structure[shared] = [
                    _Plan(r) for r in rules if _fits_structure(r, e)]
            hit = self._index[key] = [p for p in plans if _fits_divisor(p.rule, e)]
            predictions = [(p, _prediction(p.rule)) for p in hit]
            self._predicted[key] = [(p, q) for p, q in predictions if q is not None] or None
        predicted = self._predicted[key]
        if predicted is None:
            return hit
        # second stage: rules whose dividend constant the term decides (`_dividend_facts`)
        if not isinstance(e, Binary) or not isinstance(e.rhs, Const):
            return hit
        k = e.rhs
        facts = _dividend_facts(e)
        dropped = [p for p, q in predicted if not _predicted_match_may_rewrite(q, facts, k)]
        return [p for p in hit if p not in dropped] if dropped else hit

    def _try(self, plan: _Plan, e: Expr, bound: RangeFn, trace: list[Step] | None,
             additive: bool = False) -> Expr | None:
        rule, rhs, lhs, accept, check = plan.rule, plan.rhs, plan.lhs, plan.accept, plan.check
        ranged = additive and plan.ranged
        for candidate in self._decompositions(plan, e):
            if candidate.rejected:
                continue
            decided = None
            if ranged and candidate.split is not None:
                decided = _split_condition(check, candidate.split, bound)
                if decided is False:
                    continue  # the condition fails on the split's intervals: nothing to build
            env = candidate.env
            if not accept(env):
                continue  # an identity, or a constant-only part of the condition fails
            try:
                if decided is None and not check(env, bound):
                    continue
                out = canon(_instantiate(rhs, env, bound))
                if out is e:
                    continue  # (`x * 1` read as `x * c0`: the rule would change nothing)
                # the most expensive check comes last; it is remembered per proposal
                if not candidate.is_decomposition(lhs, e):
                    continue
            except (_NoValue, EvaluationError):
                continue
            if trace is not None:
                trace.append(Step(rule.name, e, out, _justification(rule, env, bound)))
            return out
        return None

    def _decompositions(self, plan: _Plan, e: Expr) -> list[_Candidate]:
        """Matcher proposals for the rule's left side against `e`, within the constants its
        proof covers (each is checked to *be* `e` before it is used). For the left sides the
        matcher can guide (`guided_matches`), only the proposals whose constants pass the
        rule's constant checks are built."""
        rule, lhs = plan.rule, plan.lhs
        if plan.guided:
            key = (lhs, e, rule.split, plan.accept)
            hit = self._matches.get(key)
            if hit is not None:
                return hit
            guided = guided_matches(lhs, e, plan.accept, rule.split)
            if guided is not None:
                if len(self._matches) > _MATCH_CACHE_LIMIT:
                    self._matches.clear()
                    self._shared.clear()
                # one candidate per match of the left side, whichever rule asks (it remembers
                # whether it is a decomposition of `e`)
                shared = self._shared.setdefault((lhs, e, rule.split), {})
                hit = []
                for slot, proposal in guided:
                    candidate = shared.get(slot)
                    if candidate is None:
                        candidate = shared[slot] = _Candidate(proposal)
                    hit.append(candidate)
                self._matches[key] = hit
                return hit
        found = self._pattern_decompositions(lhs, e, rule.split)
        if rule.max_constant is None:
            return found
        return [c for c in found if _within_proof(rule, c.env)]

    def _pattern_decompositions(self, lhs: Expr, e: Expr, split: bool = False
                                ) -> list[_Candidate]:
        """They depend neither on intervals nor on the rule (patterns are interned, and rules
        often share a left side), so they are computed once per (pattern, expression)."""
        key = (lhs, e, split)
        hit = self._matches.get(key)
        if hit is not None:
            return hit
        found = [_Candidate(env) for env in match(lhs, e, split=split)]
        if len(self._matches) > _MATCH_CACHE_LIMIT:
            self._matches.clear()
        self._matches[key] = found
        return found

    def rewrite_constraint(self, e: Expr, iv: Interval, bound: RangeFn,
                           trace: list[Step] | None) -> tuple[Expr, Interval] | None:
        for rule in self.constraint_rules.get(type(e), ()):
            lhs, rhs = rule.lhs, rule.rhs
            assert isinstance(lhs, Membership) and isinstance(rhs, Membership)
            for candidate in self._pattern_decompositions(lhs.expr, e):
                env = candidate.env
                for env1 in match(lhs.lo, Const(iv.lo), env):
                    for env2 in match(lhs.hi, Const(iv.hi), env1):
                        if not _within_proof(rule, env2):
                            continue
                        try:
                            if canon(_instantiate(lhs.expr, env2, bound)) is not e:
                                continue
                            values = _condition_env(rule, env2, bound)
                            if not compiled_condition(rule)(values):
                                continue
                            new_e = canon(_instantiate(rhs.expr, env2, bound))
                            lo = _instantiate(rhs.lo, env2, bound)
                            hi = _instantiate(rhs.hi, env2, bound)
                        except (_NoValue, EvaluationError):
                            continue
                        if not (isinstance(lo, Const) and isinstance(hi, Const)):
                            continue
                        new_iv = Interval(lo.value, hi.value)
                        if new_e is e and new_iv == iv:
                            continue
                        if trace is not None:
                            trace.append(Step(rule.name, e, new_e,
                                              {"interval": iv, "becomes": new_iv,
                                               **_justification(rule, env2, bound)}))
                        return new_e, new_iv
        return None


class _Plan:
    """What `_try` needs of a rule, looked up once (a rule's hash runs Python code)."""

    __slots__ = ("rule", "lhs", "rhs", "check", "accept", "guided", "ranged")

    def __init__(self, rule: Rule) -> None:
        assert isinstance(rule.lhs, Expr) and isinstance(rule.rhs, Expr)
        self.rule, self.lhs, self.rhs = rule, rule.lhs, rule.rhs
        self.check = condition_check(rule)
        self.accept = constants_check(rule)
        self.guided = can_guide(rule.lhs)
        #: a [split] rule whose condition reads intervals of bare variables only (x, y), which
        #: `_split_may_pass` can give before the split's terms are built
        self.ranged = rule.split and all(isinstance(c.args[0], TermVar)
                                         for c in _rule_calls(rule))


def _split_condition(check: Callable[[Mapping[Expr, Expr], RangeFn], bool], split: SplitMatch,
                     bound: RangeFn) -> bool | None:
    """The rule's condition on a `[split]` match, with the intervals of x and y summed from
    their bases: what `bound` gives for the built sums when it is additive, so the verdict
    is the full check's. None when it cannot tell (a base without values, an undefined
    operation): the full check decides."""
    def ranges(t: Expr) -> Interval:
        if t is split.x or t is split.y:
            r = split.linear_range(t, bound)
            if r is None:
                raise _NoValue(str(t))
            return r
        return bound(t)

    env: dict[Expr, Expr] = {split.c: split.divisor, split.x: split.x, split.y: split.y}
    try:
        return check(env, ranges)
    except (_NoValue, EvaluationError, KeyError):
        return None


def constants_check(rule: Rule) -> Callable[[Mapping[Expr, Expr]], bool]:
    """What `_try` checks of a match before any interval: the constants lie within the
    proof's bound, do not make the rule an identity, and pass its guard. One function per
    rule (it keys the engine's cache of guided matches)."""
    hit = _CONSTANT_CHECKS.get(rule)
    if hit is None:
        guard, identities = guard_for(rule), identity_instances(rule)

        def accept(constants: Mapping[Expr, Expr]) -> bool:
            if not _within_proof(rule, constants):
                return False
            for cv, value in identities:
                if constants.get(cv) is value:
                    return False
            return guard is None or guard.holds(constants)

        hit = _CONSTANT_CHECKS[rule] = accept
    return hit


_CONSTANT_CHECKS: Final[dict[Rule, Callable[[Mapping[Expr, Expr]], bool]]] = {}
laws.on_change(_CONSTANT_CHECKS.clear)  # identities depend on the laws in force


class _Candidate:
    """A matcher proposal; whether the left side instantiated with it is the matched term
    (canonical identity) is decided once, when a rule's condition first accepts it."""

    __slots__ = ("_env", "split", "_verified")

    def __init__(self, found: Mapping[Expr, Expr] | SplitMatch) -> None:
        if isinstance(found, SplitMatch):
            self.split: SplitMatch | None = found
            self._env: Mapping[Expr, Expr] | None = None
        else:
            self.split, self._env = None, found
        self._verified: bool | None = None

    @property
    def env(self) -> Mapping[Expr, Expr]:
        if self._env is None:
            assert self.split is not None
            self._env = self.split.env
        return self._env

    @property
    def rejected(self) -> bool:
        return self._verified is False

    def is_decomposition(self, lhs: Expr, e: Expr) -> bool:
        if self._verified is None:
            try:
                self._verified = canon(_instantiate(lhs, self.env, _no_bounds)) is e
            except (_NoValue, EvaluationError):
                self._verified = False
        return self._verified


def _within_proof(rule: Rule, env: Mapping[Expr, Expr]) -> bool:
    """A rule with a bounded proof applies only to constants inside the proven bound."""
    if rule.max_constant is None:
        return True
    return all(abs(v.value) <= rule.max_constant for k, v in env.items()
               if isinstance(k, ConstVar) and isinstance(v, Const))


def _justification(rule: Rule, env: Mapping[Expr, Expr], bound: RangeFn) -> dict[str, Interval]:
    out: dict[str, Interval] = {}
    for c in _rule_calls(rule):
        arg = env.get(c.args[0])
        if arg is not None:
            out[f"range({arg})"] = bound(arg)
    return out


class _Domain:
    """What the simplification of a map with sizes computes from its domain alone (the
    variables' bounds and names, the constraints in their order, the sizes), whatever its
    results: the constraints' fixpoint, the bounds the results are simplified under, whether
    it is empty. Memoized per engine, since every input of these is in `_domain_key` and the
    engine's rules are fixed; Inductor asks about many expressions over one loop nest. Held by
    the engine (`RuleEngine.domains`), filled by the map phases (`maps.Simplifier._domain`)."""

    def __init__(self, token: int) -> None:
        self.token = token
        self.fixpoint: tuple[IndexingMap, bool] | None = None
        self.result_bounds: Mapping[Variable, Interval] | None = None
        self.empty: dict[int, bool] = {}
        #: by (decide_emptiness, emptiness budget): the simplified map when the rounds settle
        #: at once with no point dimension and it is not found empty; its domain is the
        #: outcome for any results, and division-free results are only put in canonical form
        self.settled: dict[tuple[bool, int], IndexingMap] = {}
