"""The expression simplifier: proven rules applied bottom-up to a fixpoint under fixed
variable bounds and constraints (`_ExprSimplifier`), with the search over alternatives at sums
(root first, expand and cancel) and, in maps with sizes, rules whose constants a size
expression binds where their condition holds for every size."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ..core import laws
from ..core.canonical import canon, linear_form
from ..core.errors import EvaluationError
from ..core.expr import (
    Add,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Mod,
    Size,
    Variable,
    add,
    is_size_expr,
    maximum,
    minimum,
    mul,
    neg,
)
from ..core.implied_bounds import LinearConstraint, linear_constraints, linear_range
from ..core.indexing_map import check_sized_expr
from ..core.interval import Interval, range_of
from ..rules.matcher import KIND_BITS, kinds
from ..rules.model import Call, Rule
from .instantiate import _instantiate, _NoValue
from .prefilters import _MATCH_CACHE_LIMIT
from .rule_engine import RuleEngine, Step, _condition_env, _justification

#: Rewrites applied to one node before the engine gives up (a guard: the reduction order check of
#: `verifidx check` is what guarantees termination).
_FUEL: Final = 64


#: Outcomes remembered per term by `_ExprSimplifier._rewrite_by_reads` (one per set of reads).
_READS_PER_TERM: Final = 8
_DIV_BITS: Final = KIND_BITS[FloorDiv] | KIND_BITS[Mod] | KIND_BITS[CeilDiv]


def _cost(e: Expr) -> tuple[int, int]:
    """What the search over alternatives minimises: divisions and mods, then size."""
    return sum(1 for n in e.walk() if isinstance(n, (FloorDiv, Mod, CeilDiv))), e.size


@dataclass
class _ExprSimplifier:
    """Bottom-up simplification of expressions under fixed variable bounds and constraints."""

    engine: RuleEngine
    bounds: Mapping[Variable, Interval]
    constraints: Mapping[Expr, Interval] = field(default_factory=dict)
    trace: list[Step] | None = None
    memo: dict[Expr, Expr] = field(default_factory=dict)
    ranges: dict[Expr, Interval] = field(default_factory=dict)
    root_first: bool = True
    #: Trials (root first, expand and cancel) started so far, shared with the simplifiers of
    #: the trials: a term whose simplification ran a trial is not shared across calls (a
    #: trial's guard makes its inner results depend on the order of work).
    trials: list[int] = field(default_factory=lambda: [0])
    #: Interval arithmetic's ranges of subterms under `bounds` (before any constraint), shared
    #: by every `bound` call: a candidate remainder is new, its summands are not.
    raw_ranges: dict[Expr, Interval] = field(default_factory=dict)
    #: `_shared_key` of the terms seen so far.
    keys: dict[Expr, tuple[object, ...]] = field(default_factory=dict)
    #: The constraints that are linear sums of variables (`implied_bounds.linear_constraints`).
    linear: list[LinearConstraint] | None = None
    #: A map with sizes: rules may bind size expressions to their constants
    #: (`_rewrite_with_sizes`); None for a static map.
    sizes: Mapping[Variable, Interval] | None = None
    #: The token of the domain (`_Domain`) whose bounds and constraints these are, when a
    #: map's results are simplified without a trace: terms are then shared across the maps
    #: of that domain. None: with constraints, nothing is shared.
    domain: int | None = None

    def __init__(self, engine: RuleEngine, bounds: Mapping[Variable, Interval],
                 constraints: Mapping[Expr, Interval] | None = None,
                 trace: list[Step] | None = None, memo: dict[Expr, Expr] | None = None,
                 ranges: dict[Expr, Interval] | None = None, root_first: bool = True,
                 trials: list[int] | None = None, raw_ranges: dict[Expr, Interval] | None = None,
                 keys: dict[Expr, tuple[object, ...]] | None = None,
                 linear: list[LinearConstraint] | None = None) -> None:
        # written out (the dataclass keeps it): compiled, the generated one would run
        # interpreted for every simplification and trial; None stands for a new empty one
        self.engine, self.bounds, self.trace = engine, bounds, trace
        self.constraints = {} if constraints is None else constraints
        self.memo = {} if memo is None else memo
        self.ranges = {} if ranges is None else ranges
        self.root_first = root_first
        self.trials = [0] if trials is None else trials
        self.raw_ranges = {} if raw_ranges is None else raw_ranges
        self.keys = {} if keys is None else keys
        self.linear = linear
        self.sizes = None
        self.domain = None

    def bound(self, e: Expr) -> Interval:
        hit = self.ranges.get(e)
        if hit is None:
            hit = range_of(e, self.bounds, self.raw_ranges)
            if self.constraints:
                extra = self.constraints.get(e)
                if extra is not None:
                    hit = hit.intersect(extra)
                if not kinds(e) and not isinstance(e, (Variable, Const)):
                    hit = self._through_constraints(e, hit)
            self.ranges[e] = hit
        return hit

    def _through_constraints(self, e: Expr, hit: Interval) -> Interval:
        """`hit` intersected with the range of the linear `e` through the linear constraints
        (`implied_bounds.linear_range`): sound at every point of the domain, which is where
        the results are read."""
        if self.linear is None:
            self.linear = linear_constraints(self.constraints, self.bounds)
        if not self.linear:
            return hit
        coeffs, constant = linear_form(e)
        through = linear_range(coeffs, constant, self.bounds, self.linear)
        return hit if through is None else hit.intersect(through)

    def __call__(self, e: Expr) -> Expr:
        return self.simplify(canon(e), _FUEL)

    def _simplify_with(self, fuel: int) -> Callable[[Expr], Expr]:
        return lambda c: self.simplify(c, fuel)

    def _shared_key(self, e: Expr) -> tuple[object, ...] | None:
        """Key of `e` in the engine's memo shared across calls: the term and the intervals of
        its variables (the only inputs of the result when no constraint and no trace is in
        play; hash-consing makes the key cheap)."""
        if self.trace is not None:
            return None
        if self.constraints:
            if self.domain is None:
                return None
            hit = self.keys.get(e)
            if hit is None:  # the token stands for every bound and constraint `bound` reads
                hit = self.keys[e] = (e, self.root_first, "domain", self.domain)
            return hit
        hit = self.keys.get(e)
        if hit is None:  # flat ints: hashing an Interval runs Python code, hashing ints does not
            parts: list[object] = [e, self.root_first]
            for v in e.variable_set():  # one set per term, so one order per term: no sort
                iv = self.bounds[v]
                parts.append(iv.lo)
                parts.append(iv.hi)
            hit = self.keys[e] = tuple(parts)
        return hit

    def _rewrite(self, node: Expr, rules: Sequence[Rule], trace: list[Step] | None
                 ) -> Expr | None:
        """`engine.rewrite` at the root of `node`, remembered across calls when its result
        depends only on the term and its variables' intervals (see `_shared_key`)."""
        key = self._shared_key(node) if trace is None else None
        if key is None:
            return self.engine.rewrite(node, self.bound, rules, trace, not self.constraints)
        key = (id(rules), *key)  # the engine's rule lists live as long as the engine
        cache = self.engine.rewrites
        if key in cache:
            return cache[key]
        if self.constraints:  # keyed by the domain's token: `bound` is the same function
            out = self.engine.rewrite(node, self.bound, rules, None, False)
        else:
            out = self._rewrite_by_reads(node, rules)
        if len(cache) > _MATCH_CACHE_LIMIT:
            cache.clear()
        cache[key] = out
        return out

    def _rewrite_by_reads(self, node: Expr, rules: Sequence[Rule]) -> Expr | None:
        """`engine.rewrite` at the root of `node` (no constraint, no trace), remembered with
        the intervals it read: the engine is a deterministic function of the term and of what
        `bound` answers, so where every interval read before has the same value again, the
        same rules fail and succeed in the same way. Terms of digit sums recur across maps
        with other variable bounds (`(d0 mod 6) floordiv 2` reads the range [0, 5] of
        `d0 mod 6` for any d0 in [0, n], n >= 5), which `_shared_key` tells apart."""
        memo_key = (id(rules), node)
        tracked = self.engine.tracked
        seen = tracked.get(memo_key)
        if seen is not None:
            for reads, out in seen:
                for t, lo, hi in reads:
                    iv = self.bound(t)  # a method call, not a bound method: native, compiled
                    if iv.lo != lo or iv.hi != hi:
                        break
                else:
                    return out
        read: list[tuple[Expr, int, int]] = []

        def reading(t: Expr) -> Interval:
            iv = self.bound(t)
            read.append((t, iv.lo, iv.hi))
            return iv

        out = self.engine.rewrite(node, reading, rules, None, True)
        if seen is None:
            if len(tracked) > _MATCH_CACHE_LIMIT:
                tracked.clear()
            seen = tracked[memo_key] = []
        if len(seen) < _READS_PER_TERM:
            seen.append((tuple(read), out))
        return out

    def simplify(self, e: Expr, fuel: int) -> Expr:
        if not kinds(e):
            # No division, mod, min or max: no rule's left side can match any subterm (the
            # matcher never invents those operators), so canonical form is the fixpoint.
            return canon(e)
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        key = self._shared_key(e)
        if key is not None:
            hit = self.engine.results.get(key)
            if hit is not None:
                self.memo[e] = hit
                return hit
        trials = self.trials[0]
        out = self._simplify_node(e, fuel)
        if key is not None and self.trials[0] == trials:
            if len(self.engine.results) > _MATCH_CACHE_LIMIT:
                self.engine.results.clear()
            self.engine.results[key] = out
        return out

    def _simplify_node(self, e: Expr, fuel: int) -> Expr:
        node = canon(e.map_children(self._simplify_with(fuel)))
        first = node
        node = self._rewrite_to_fixpoint(node, fuel)
        written = canon(e)
        if self.root_first and isinstance(written, Add) and written is not first and \
                kinds(node) & _DIV_BITS:
            node = self._root_first(written, node, fuel)
        self.memo[e] = self.memo[first] = self.memo[node] = node
        return node

    def _rewrite_to_fixpoint(self, node: Expr, fuel: int) -> Expr:
        while fuel > 0:
            fuel -= 1
            rules = self._rules_for(node)
            out = self._rewrite(node, rules, self.trace) if rules else None
            if out is None and isinstance(node, Add):
                out = self._expand_and_cancel(node, fuel)
            if out is None and self.sizes is not None and rules:
                out = self._rewrite_with_sizes(node, rules)
            if out is None:
                break
            node = canon(out.map_children(self._simplify_with(fuel)))
        return node

    def _rewrite_with_sizes(self, node: Expr, rules: Sequence[Rule]) -> Expr | None:
        """A rule proven for every constant, with a size expression bound to a constant, when
        its condition holds for every size (`verifidx.rules.sizes`); the result must stay in
        the grammar of maps with sizes. Refusals show in the trace with their reason."""
        sizes = self.sizes
        assert sizes is not None
        if not any(type(v) is Size for v in node.variable_set()):
            return None
        # loaded with the first map with sizes (it brings the solver bridge)
        from ..rules.sizes import condition_for_all_sizes as _for_all_sizes
        from ..rules.sizes import product_form as _product_form
        from ..rules.sizes import sized_matches as _sized_matches
        for rule in rules:
            if rule.max_constant is not None or rule.split:
                continue  # a bounded proof never binds a size; splits need integer coefficients
            lhs, rhs = rule.lhs, rule.rhs
            assert isinstance(lhs, Expr) and isinstance(rhs, Expr)
            for env in _sized_matches(lhs, node):
                try:
                    instance = canon(_instantiate(lhs, env, self.bound))
                    # the same value up to the order of factors (`(x * 16) * N` is bound as
                    # `x * (N * 16)`): products of sizes are not ordered by `canon`
                    if instance is not node and \
                            _product_form(instance) is not _product_form(node):
                        continue
                    values = self._size_bounds(rule, env)
                    holds, how = _for_all_sizes(rule.condition, env, values, sizes)
                    if not holds:
                        # refusals that depend on the sizes show; a condition that fails at
                        # every size is a rule that does not apply, as for a static map
                        if self.trace is not None and not how.endswith("every size (intervals)"):
                            self.trace.append(Step(rule.name, node, node,
                                                   _justification(rule, env, self.bound), how))
                        continue
                    # the right side reads the same lo/hi as the condition did
                    out = canon(_instantiate(rhs.substitute(values), env, self.bound))
                    if not _cost(out) < _cost(node):
                        continue  # only reducing instances: no cycle without the rule's order
                    check_sized_expr(out, sizes)
                except (_NoValue, EvaluationError, ValueError):
                    continue
                if self.trace is not None:
                    self.trace.append(Step(rule.name, node, out,
                                           _justification(rule, env, self.bound), how))
                return out
        return None

    def _size_bounds(self, rule: Rule, env: Mapping[Expr, Expr]) -> dict[Expr, Expr]:
        """`lo(t)`/`hi(t)` of a rule at a match in a map with sizes: the interval's bound,
        and where t is a variable that a constraint bounds by a size expression
        (`d1 - N in [-64, -1]`: d1 <= N - 1), the tighter of both (`min(63, N - 1)`). Both
        hold at every point of the domain for every size; a rule's proof takes any bounds
        of t, and the condition and the right side read the same ones."""
        out: dict[Expr, Expr] = {}
        for call, value in _condition_env(rule, env, self.bound).items():
            if not isinstance(call, Call):
                continue
            bound: Expr = Const(value)
            term = env.get(call.args[0])
            if isinstance(term, Variable) and type(term) is not Size:
                for symbolic in _sized_bounds_of(term, self.constraints, call.fn == "hi"):
                    bound = minimum(bound, symbolic) if call.fn == "hi" else \
                        maximum(bound, symbolic)
            out[call] = bound
        return out

    def _rules_for(self, node: Expr) -> Sequence[Rule]:
        """The engine's rules for the node's operator, without those that need a remainder
        within one bucket (`_needs_one_bucket`) when no split of the dividend can give one."""
        rules = self.engine.expr_rules.get(type(node), ())
        if type(node) not in self.engine.without_buckets or self.constraints or \
                not laws.ON.canonical_sums:
            return rules
        assert isinstance(node, (FloorDiv, Mod, CeilDiv))
        k = node.rhs
        if not isinstance(k, Const) or k.value <= 1 or \
                self._remainder_spread(node.lhs, k.value) < k.value:
            return rules
        return self.engine.without_buckets[type(node)]

    def _remainder_spread(self, dividend: Expr, k: int) -> int:
        """A lower bound on the width of the interval of any remainder y = dividend - k * x
        (x integral): interval arithmetic adds |coefficient| * width over the bases of y's
        canonical sum, and the coefficient of each base t of the dividend in y is a - k * q for
        some integer q, at least min(a mod k, k - a mod k) in size. Stops once it reaches k.
        Only meaningful without constraints (one on y itself would narrow its interval);
        0 when a base has an empty interval."""
        coeffs, _constant = linear_form(dividend)
        spread = 0
        for base, a in coeffs.items():
            r = a % k
            r = min(r, k - r)
            if r:
                iv = self.bound(base)
                if iv.is_empty:
                    return 0
                spread += r * (iv.hi - iv.lo)
                if spread >= k:
                    break
        return spread

    def _root_first(self, written: Add, bottom_up: Expr, fuel: int) -> Expr:
        """No local minima in sums: simplifying the summands first can destroy a shape a rule
        at the sum needs (`(d0 mod 8) mod 2 => d0 mod 2` hides `(x floordiv 2) * 2 + x mod 2`
        with x = d0 mod 8). Where the bottom-up result still holds a division, the sum is
        also tried root first (rules at the sum on the summands as written, then the usual
        simplification of the outcome); the cheaper outcome in (divisions, size) wins. Both
        candidates are results of proven rewrites, so the choice is free."""
        trial: list[Step] | None = [] if self.trace is not None else None
        node: Expr = written
        for _ in range(fuel):
            out = self._rewrite(node, self.engine.expr_rules.get(type(node), ()), trial)
            if out is None:
                break
            node = canon(out)
        if node is written:
            return bottom_up
        self.memo[written] = bottom_up  # the trial must not re-enter this sum
        self.trials[0] += 1
        sub = _ExprSimplifier(self.engine, self.bounds, self.constraints, trial, self.memo,
                              self.ranges, self.root_first, self.trials,
                              raw_ranges=self.raw_ranges)
        alternative = sub.simplify(node, fuel)
        if _cost(alternative) < _cost(bottom_up):
            if self.trace is not None and trial is not None:
                self.trace.extend(trial)
            return alternative
        return bottom_up

    def _expand_and_cancel(self, node: Add, fuel: int) -> Expr | None:
        """Trial of the expansion rules (`mod_expand`) on the mod terms of a sum that also holds
        divisions: expand, simplify, and keep the outcome only if it is smaller. One-shot, so
        the expansion phase cannot cycle."""
        expansions = self.engine.expansions.get(Mod, ())
        if not expansions or not laws.ON.canonical_sums or not kinds(node) & KIND_BITS[Mod]:
            return None  # rebuilding the sum from its linear form relies on those laws
        coeffs, constant = linear_form(node)
        mods = [b for b in coeffs if isinstance(b, Mod)]
        divs = [b for b in coeffs if b.kind in ("floordiv", "mod")]
        if not mods or len(divs) < 2:
            return None
        trial_trace: list[Step] | None = [] if self.trace is not None else None
        expanded: dict[Expr, int] = {}
        for b, c in coeffs.items():
            new = self._rewrite(b, expansions, trial_trace) if b in mods else None
            expanded[b if new is None else new] = expanded.get(b if new is None else new, 0) + c
        total = canon(add(*(mul(x, c) for x, c in expanded.items()), constant))
        self.trials[0] += 1
        sub = _ExprSimplifier(self.engine, self.bounds, self.constraints, trial_trace,
                              self.memo, self.ranges, self.root_first, self.trials,
                              raw_ranges=self.raw_ranges)
        self.memo[node] = node  # do not re-enter this trial on the same sum (reset by caller)
        result = sub.simplify(total, fuel)
        if result.size < node.size:
            if self.trace is not None and trial_trace is not None:
                self.trace.extend(trial_trace)
            return result
        return None


def _sized_bounds_of(v: Variable, constraints: Mapping[Expr, Interval], upper: bool
                     ) -> list[Expr]:
    """Bounds of the variable `v` by size expressions, from constraints `v * a + S in [lo, hi]`
    with a = 1 or -1 and S a sum of size expressions: the upper (or lower) ends of
    `[lo - S, hi - S]`, or of `[S - hi, S - lo]` for a = -1."""
    found: list[Expr] = []
    for e, iv in constraints.items():
        if v not in e.variable_set():
            continue
        coeffs, constant = linear_form(e)
        a = coeffs.pop(v, 0)
        if a not in (1, -1) or not all(is_size_expr(b) for b in coeffs):
            continue
        rest = add(constant, *[mul(b, c) for b, c in coeffs.items()])
        if a == 1:
            found.append(add(neg(rest), iv.hi) if upper else add(neg(rest), iv.lo))
        else:
            found.append(add(rest, -iv.lo) if upper else add(rest, -iv.hi))
    return found
