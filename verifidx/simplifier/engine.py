"""The simplifier: proven rules applied bottom-up to a fixpoint, with interval side conditions.

Structure (after XLA's IndexingMap::Simplify):
1. constraints to a fixpoint: each constraint expression is simplified, constraint rules move
   `+c`, `*k`, `floordiv k` into the interval, constraints on a bare variable tighten its bounds,
   always-true constraints go, impossible ones make the map KNOWN EMPTY, `x mod c in [k, k]`
   constraints on one variable merge (Chinese remainder) and tighten its bounds;
2. point dimensions (`d in [k, k]`) become constants (unless `point_dims="preserve"`);
3. results are simplified with constraint-aware ranges.

Every rewrite of an expression is the application of a rule from `rules/` whose certificate in
`proofs/` is current and proved: the matcher proposes bindings, the engine checks that the
instantiated left side is the matched expression (canonical forms are interned, so this is an
identity test) and that the rule's condition holds on the intervals at the match site, then
builds the right side. Canonical sums (`verifidx.core.canonical`) implement the laws of
`rules/canonical.rules`. Two steps work on several constraints at once, which no rule can state:
merging `x mod a = i`, `x mod b = j` into one constraint modulo lcm(a, b) (intersected with any
constraint already there), and tightening a variable's bounds to the nearest values that satisfy
its mod constraint. Each instance is proven where it is made, by checking every residue of one
period (exact, since both sides are periodic), and shows in `--trace`.

The engine never calls a solver on its hot path. `simplify(m, verify=True)` asks Z3 afterwards
whether the result equals the input (translation validation), and emptiness is decided by Z3
only when intervals and sampling cannot tell and constraints remain (`decide_emptiness`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, cast

from ..core import laws
from ..core.canonical import canon, linear_form
from ..core.errors import EvaluationError
from ..core.expr import (
    Add,
    Binary,
    CeilDiv,
    Const,
    Dim,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    Size,
    Variable,
    add,
    is_size_expr,
    maximum,
    minimum,
    mul,
    neg,
    register_cache,
    release_if_grown,
)
from ..core.implied_bounds import LinearConstraint, implied_bounds, linear_constraints, linear_range
from ..core.indexing_map import (
    IndexingMap,
    Var,
    check_sized_expr,
    merge_residues,
    register_simplifier,
)
from ..core.interval import Interval, range_of
from ..rules.guard import Guard, compile_function, condition_source, conjuncts, guard_for
from ..rules.matcher import (
    KIND_BITS,
    SplitMatch,
    can_guide,
    divided_scaled_plus_rest,
    guided_matches,
    kinds,
    match,
)
from ..rules.model import (
    Call,
    Compare,
    ConstVar,
    Membership,
    Rule,
    TermVar,
    rule_exprs,
)

RangeFn = Callable[[Expr], Interval]

#: Rewrites applied to one node before the engine gives up (a guard: the reduction order check of
#: `verifidx check` is what guarantees termination).
_FUEL: Final = 64


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


class _NoValue(Exception):
    """A rule mentions something the match site cannot give a value to."""


def _instantiate(pattern: Expr, env: Mapping[Expr, Expr], bound: Callable[[Expr], Interval]
                 ) -> Expr:
    """The pattern with its variables replaced, constant computations folded: `lo(t)`/`hi(t)`
    become the bounds of t's interval, `gcd` and the like are evaluated once their arguments
    are constants. Runs code generated once per pattern (`_instance_code`)."""
    code = _INSTANCES.get(pattern)
    if code is None:
        code = _INSTANCES[pattern] = _instance_code(pattern)
    return code(env, bound)


_INSTANCES: Final[dict[Expr, Callable[[Mapping[Expr, Expr], RangeFn], Expr]]] = {}


def _instance_code(pattern: Expr) -> Callable[[Mapping[Expr, Expr], RangeFn], Expr]:
    """One nested Python expression for the pattern. A subtree without variables or calls
    stays the pattern's own node (as `map_children` leaves it); any other node is rebuilt
    through its smart constructor unless no child changed."""
    nodes: list[Expr] = []

    def ref(p: Expr) -> str:
        nodes.append(p)
        return f"N[{len(nodes) - 1}]"

    def gen(p: Expr) -> str:
        if isinstance(p, (TermVar, ConstVar)):
            return f"_get(E, {ref(p)})"
        if not any(isinstance(n, (TermVar, ConstVar, Call)) for n in p.walk()):
            return ref(p)
        kids = ", ".join(gen(c) for c in p.children)
        if isinstance(p, Call):
            if p.fn in ("lo", "hi"):
                return f"Const(bound({kids}).{p.fn})"
            return f"_call({ref(p)}, [{kids}])"
        return f"_rebuild({ref(p)}, [{kids}])"

    body = gen(pattern)
    scope: dict[str, object] = {"N": nodes, "Const": Const, "_get": _get, "_call": _call,
                                "_rebuild": _rebuild}
    exec(f"def _f(E, bound):\n    return {body}\n", scope)  # noqa: S102 - generated
    return cast(Callable[[Mapping[Expr, Expr], RangeFn], Expr], scope["_f"])


def _get(env: Mapping[Expr, Expr], var: Expr) -> Expr:
    value = env.get(var)
    if value is None:
        raise _NoValue(str(var))
    return value


def _call(node: Expr, args: list[Expr]) -> Expr:
    if not all(isinstance(a, Const) for a in args):
        raise _NoValue(str(node))
    return Const(node.rebuild(args).evaluate({}))


def _rebuild(node: Expr, kids: list[Expr]) -> Expr:
    for a, b in zip(kids, node.children):
        if a is not b:
            return node.rebuild(kids)
    return node


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


_MATCH_CACHE_LIMIT: Final = 200_000
#: Outcomes remembered per term by `_ExprSimplifier._rewrite_by_reads` (one per set of reads).
_READS_PER_TERM: Final = 8
#: Domains remembered per engine (`Simplifier._domain`) before the table is emptied.
_DOMAIN_LIMIT: Final = 20_000
_RIGID: Final = (FloorDiv, Mod, CeilDiv, Min, Max)
_DIV_BITS: Final = KIND_BITS[FloorDiv] | KIND_BITS[Mod] | KIND_BITS[CeilDiv]


def _cost(e: Expr) -> tuple[int, int]:
    """What the search over alternatives minimises: divisions and mods, then size."""
    return sum(1 for n in e.walk() if isinstance(n, (FloorDiv, Mod, CeilDiv))), e.size


def _children_fit(pattern: Expr, e: Expr) -> bool:
    """Cheap necessary condition at the root: a child of the pattern that is a division, mod,
    min, max or a constant must face the same kind of node (the matcher's n-ary and
    implicit-coefficient moves only ever wrap sums and products around terms)."""
    if type(pattern) is not type(e) and not (isinstance(pattern, Mul) and isinstance(e, Add)):
        return not isinstance(pattern, _RIGID)
    if isinstance(pattern, Add) or type(pattern) is not type(e):
        return True  # summands match in any order
    positional = isinstance(pattern, (FloorDiv, Mod, CeilDiv))
    for p, c in zip(pattern.children, e.children):
        if isinstance(p, _RIGID) and type(p) is not type(c):
            return False
        if isinstance(p, (Const, ConstVar)) and not isinstance(c, Const):
            return False
        if positional and kinds(p) & ~kinds(c):
            return False  # `((x mod c0) * c1) mod c2` needs a mod inside the dividend
    return True


def _shape(e: Expr) -> tuple[type, ...]:
    """Operator shape of a summand's base: its type and, for a division or mod, its dividend's
    type (`(x floordiv 8) mod 4` has shape (Mod, FloorDiv)); term variables have no shape."""
    if isinstance(e, Mul) and isinstance(e.rhs, (Const, ConstVar)):
        e = e.lhs
    if isinstance(e, (FloorDiv, Mod, CeilDiv)):
        inner = e.lhs
        if isinstance(inner, (FloorDiv, Mod, CeilDiv, Min, Max)):
            return (type(e), type(inner))
        return (type(e),)
    if isinstance(e, (Min, Max)):
        return (type(e),)
    return ()


_SHAPES: Final[dict[Expr, list[tuple[type, ...]]]] = register_cache({})


_NO_SHAPES: Final[list[tuple[type, ...]]] = []
_SHAPE_KEYS: Final[dict[tuple[type, ...], str]] = {}


def _shape_key(shape: tuple[type, ...]) -> str:
    hit = _SHAPE_KEYS.get(shape)
    if hit is None:
        hit = _SHAPE_KEYS[shape] = repr(shape)
    return hit


def _summand_shapes(e: Expr) -> list[tuple[type, ...]]:
    if not kinds(e):
        return _NO_SHAPES  # only divisions, mods, min and max give a summand a shape
    hit = _SHAPES.get(e)
    if hit is None:
        terms = e.terms if isinstance(e, Add) else (e,)
        hit = _SHAPES[e] = sorted((s for s in map(_shape, terms) if s), key=_shape_key)
    return hit


def _summands_fit(pattern: Expr, e: Expr) -> bool:
    """Discrimination by operator shape at sums: every rigid summand of the pattern needs a
    summand of the expression with the same shape (the matcher maps summands one to one,
    except a term variable, which has no shape). Also at the dividend of a division or mod
    (`(x mod c0 + y) mod c1` needs a mod summand), where a single term is a sum of one."""
    if isinstance(pattern, (FloorDiv, Mod, CeilDiv)) and type(e) is type(pattern):
        pattern, e = pattern.lhs, e.lhs  # type: ignore[attr-defined]
        if not isinstance(pattern, Add):
            return True
    elif not isinstance(pattern, Add) or not isinstance(e, Add):
        return True
    have = list(_summand_shapes(e))
    for s in _summand_shapes(pattern):
        for i, h in enumerate(have):
            if h[: len(s)] == s:
                del have[i]
                break
        else:
            return False
    return True


_SIGNATURES: Final[dict[Expr, tuple[tuple[object, ...], tuple[object, ...]]]] = register_cache({})


def _signature(e: Expr) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """Everything `_may_match` reads of a term, in two parts: its structure (its operator,
    its operator kinds, its children's node types, and the summand shapes of the sum or
    dividend), what `_fits_structure` reads; and for a division or mod the divisor's value
    and `_divisor_facts`, what `_fits_divisor` reads."""
    hit = _SIGNATURES.get(e)
    if hit is None:
        if len(_SIGNATURES) > _MATCH_CACHE_LIMIT:
            _SIGNATURES.clear()
        hit = _SIGNATURES[e] = _compute_signature(e)
    return hit


_NO_DIVISOR: Final[tuple[object, ...]] = ()


def _compute_signature(e: Expr) -> tuple[tuple[object, ...], tuple[object, ...]]:
    t = type(e)
    if t is Add:
        return (t, kinds(e), *_summand_shapes(e)), _NO_DIVISOR
    kids = e.children
    if not kids:
        return (t,), _NO_DIVISOR
    if (t is FloorDiv or t is Mod or t is CeilDiv) and isinstance(e, Binary):
        s, d = e.lhs, e.rhs
        return ((t, kinds(e), kinds(s), type(s), type(d), *_summand_shapes(s)),
                (d.value if isinstance(d, Const) else None, *_divisor_facts(e)))
    return (t, kinds(e), *(type(k) for k in kids)), _NO_DIVISOR


def _may_match(rule: Rule, e: Expr) -> bool:
    """Necessary conditions for `rule` to rewrite `e` that read only `_signature(e)`: the
    operator kinds, children and summand shapes the left side needs, and the conjuncts of the
    condition about the divisor alone."""
    return _fits_structure(rule, e) and _fits_divisor(rule, e)


def _fits_structure(rule: Rule, e: Expr) -> bool:
    """The part of `_may_match` that reads the structure part of `_signature(e)`."""
    lhs, lhs_kinds, divisor_guard, _multiple, _common_factor = _filter_facts(rule)
    if lhs_kinds & ~kinds(e):
        return False
    if divisor_guard is not None and (
            type(e) is not type(lhs) or not isinstance(e.rhs, Const)):  # type: ignore[attr-defined]
        return False  # `P op cK` matches only the same operator over a constant
    return _children_fit(lhs, e) and _summands_fit(lhs, e)


def _fits_divisor(rule: Rule, e: Expr) -> bool:
    """The part of `_may_match` that reads the divisor part of `_signature(e)`, for a rule
    that `_fits_structure`."""
    lhs, _kinds, divisor_guard, multiple, common_factor = _filter_facts(rule)
    if isinstance(lhs, (FloorDiv, Mod, CeilDiv)) and isinstance(lhs.rhs, Const) \
            and e.rhs is not lhs.rhs:  # type: ignore[attr-defined]
        return False  # `x floordiv -1` needs that very divisor
    if divisor_guard is not None and \
            not divisor_guard.divisor_allows(e.rhs):  # type: ignore[attr-defined]
        return False
    if multiple and not _divisor_facts(e)[0]:
        return False
    return not common_factor or _divisor_facts(e)[1]


_FILTER_FACTS: Final[dict[Rule, tuple[Expr, int, Guard | None, bool, bool]]] = {}


def _filter_facts(rule: Rule) -> tuple[Expr, int, Guard | None, bool, bool]:
    """What `_may_match` reads of a rule, looked up once (a rule's hash runs Python code):
    its left side and operator kinds, its guard when it has conjuncts over the divisor alone,
    `_needs_multiple` and `_needs_common_factor`."""
    hit = _FILTER_FACTS.get(rule)
    if hit is None:
        lhs = rule.lhs
        assert isinstance(lhs, Expr)
        guard = guard_for(rule)
        hit = _FILTER_FACTS[rule] = (
            lhs, kinds(lhs), guard if guard is not None and guard.divisor is not None else None,
            _needs_multiple(rule), _needs_common_factor(rule))
    return hit


#: Dividend patterns of a left side `D op cK` whose constant cA takes only values read off
#: the term's dividend S (`_dividend_facts`): `x * cA` (the matcher's `_scaled_division`
#: shape: the factor of S = `t * k'`, else 1 and, for a sum, the gcd of its coefficients and
#: constant), `x + cA` (the constant of S) and `x * cA + y` (1, a coefficient of S, or a
#: factor shared by some of its coefficients: one term or a group of terms for `x * cA`).
_SCALED, _OFFSET, _SCALED_PLUS_REST = "scaled", "offset", "scaled plus rest"


class _Prediction:
    """A rule `D op cK` whose every match binds cA to one of the values `_dividend_facts`
    lists for its shape, and `neutral`, the values of cA under which the rule rewrites a term
    to itself (`x * 1`, `x + 0`: `identity_instances`)."""

    __slots__ = ("shape", "constant", "divisor", "neutral", "guard", "_allows")

    def __init__(self, shape: str, constant: ConstVar, divisor: ConstVar,
                 neutral: frozenset[int], guard: Guard | None) -> None:
        self.shape, self.constant, self.divisor = shape, constant, divisor
        self.neutral, self.guard = neutral, guard
        self._allows: dict[tuple[int, Expr], bool] = register_cache({})

    def allows(self, value: int, divisor: Expr) -> bool:
        """Whether cA = value may rewrite at a term with this divisor: not a neutral value,
        and the guard holds on (cA, cK)."""
        hit = self._allows.get((value, divisor))
        if hit is None:
            hit = value not in self.neutral and (
                self.guard is None or self.guard.holds({self.constant: Const(value),
                                                         self.divisor: divisor}))
            self._allows[value, divisor] = hit
        return hit


_PREDICTIONS: Final[dict[Rule, _Prediction | None]] = {}
laws.on_change(_PREDICTIONS.clear)  # `neutral` is decided by canonical forms


def _prediction(rule: Rule) -> _Prediction | None:
    if rule not in _PREDICTIONS:
        _PREDICTIONS[rule] = _compute_prediction(rule)
    return _PREDICTIONS[rule]


def _compute_prediction(rule: Rule) -> _Prediction | None:
    lhs = rule.lhs
    if rule.split or not isinstance(lhs, (FloorDiv, Mod, CeilDiv)) or \
            not isinstance(lhs.rhs, ConstVar):
        return None
    d, k = lhs.lhs, lhs.rhs
    sum_shape = divided_scaled_plus_rest(lhs)
    constant: Expr
    if isinstance(d, Mul) and isinstance(d.lhs, TermVar) and isinstance(d.rhs, ConstVar) \
            and d.rhs is not k:
        shape, constant = _SCALED, d.rhs
    elif isinstance(d, Add) and len(d.terms) == 2 and \
            {type(t) for t in d.terms} == {TermVar, ConstVar} and k not in d.terms:
        shape, constant = _OFFSET, next(t for t in d.terms if isinstance(t, ConstVar))
    elif sum_shape is not None and sum_shape[1] is not k:
        shape, constant = _SCALED_PLUS_REST, sum_shape[1]
    else:
        return None
    assert isinstance(constant, ConstVar)
    neutral = frozenset(v.value for cv, v in identity_instances(rule) if cv is constant)
    return _Prediction(shape, constant, k, neutral, guard_for(rule))


def _zero_dividends(e: Expr) -> Expr:
    """`0 floordiv t`, `0 ceildiv t` and `0 mod t` replaced by 0: at a match site they are 0,
    or undefined (a zero or, for mod, negative divisor), and an undefined instance is never
    applied. Used only to recognise rewrites of a term to itself."""
    if isinstance(e, (FloorDiv, Mod, CeilDiv)) and e.lhs is Const(0):
        return Const(0)
    return _rebuild(e, [_zero_dividends(c) for c in e.children])


def _dividend_facts(e: Expr) -> dict[str, tuple[int, ...]]:
    """For `S op k`, by shape (`_SCALED`...): the values a dividend pattern's constant cA can
    take at S (a superset of what the matcher proposes)."""
    return _division_facts(e)[1]


def _predicted_match_may_rewrite(pred: _Prediction, facts: dict[str, tuple[int, ...]],
                                 divisor: Expr) -> bool:
    """False when every match of the rule at a term with these `_dividend_facts` binds its
    dividend constant cA (`_prediction`) to a value for which the guard fails or the rewrite
    gives the term back: such a rule changes nothing there, and skipping it spares the match,
    the condition, and the instantiation and canonical form of each identity instance
    (`x * 1` read as `x * c0`, `x + 0` as `x + c0`)."""
    for v in facts[pred.shape]:
        if pred.allows(v, divisor):
            return True
    return False


_DIVISION_FACTS: Final[dict[Expr, tuple[tuple[bool, bool], dict[str, tuple[int, ...]]]]] = \
    register_cache({})


def _divisor_facts(e: Expr) -> tuple[bool, bool]:
    """For `S op k`: (k is 0 or 1, or some variable summand of S has a coefficient that is a
    multiple of k; k is not a constant, or is 0, or shares a factor > 1 with every variable
    coefficient of S), what `_needs_multiple` and `_needs_common_factor` rules need."""
    return _division_facts(e)[0]


def _division_facts(e: Expr) -> tuple[tuple[bool, bool], dict[str, tuple[int, ...]]]:
    """`_divisor_facts` and `_dividend_facts` of `S op k`, from one linear form of S."""
    hit = _DIVISION_FACTS.get(e)
    if hit is None:
        assert isinstance(e, Binary)  # a division or mod
        s, d = e.lhs, e.rhs
        coeffs, constant = linear_form(s)
        if not isinstance(d, Const) or d.value == 0:
            divisor = (True, True)
        else:
            k = d.value
            divisor = (k == 1 or any(c % k == 0 for c in coeffs.values()),
                       math.gcd(*coeffs.values(), k) > 1)
        if isinstance(s, Mul) and isinstance(s.rhs, Const):
            scales: tuple[int, ...] = (s.rhs.value,)
        else:
            g = math.gcd(*coeffs.values(), constant) if isinstance(s, Add) and coeffs else 0
            scales = (1, g) if g > 1 else (1,)
        values = {1, *coeffs.values()}
        sizes = [abs(c) for c in coeffs.values()]
        values.update(sizes)
        n = len(sizes)
        for i in range(n):
            a = sizes[i]
            for j in range(i + 1, n):
                values.add(math.gcd(a, sizes[j]))
        if len(_DIVISION_FACTS) > _MATCH_CACHE_LIMIT:
            _DIVISION_FACTS.clear()
        hit = _DIVISION_FACTS[e] = (divisor, {_SCALED: scales, _OFFSET: (constant,),
                                              _SCALED_PLUS_REST: tuple(values)})
    return hit


_NEEDS_COMMON_FACTOR: Final[dict[Rule, bool]] = {}


def _needs_common_factor(rule: Rule) -> bool:
    """True when the left side is `(x * cA + cB) op cK` (x and cA used once, not `[split]`)
    and the condition requires `cA > 1` and `cK mod cA == 0`. `x * cA` must then take every
    variable summand of the dividend (cB takes only its constant): one summand `t * a` gives
    cA = a, a bare one cA = 1, a group cA = a factor of each coefficient; so cA > 1 divides k
    and every variable coefficient of the dividend."""
    hit = _NEEDS_COMMON_FACTOR.get(rule)
    if hit is not None:
        return hit
    lhs = rule.lhs
    hit = False
    if not rule.split and isinstance(lhs, (FloorDiv, Mod, CeilDiv)) and \
            isinstance(lhs.rhs, ConstVar) and isinstance(lhs.lhs, Add) and \
            len(lhs.lhs.terms) == 2:
        k = lhs.rhs
        t, c = lhs.lhs.terms
        uses: dict[Expr, int] = {}
        for n in lhs.walk():
            uses[n] = uses.get(n, 0) + 1
        if isinstance(t, Mul) and isinstance(t.lhs, TermVar) and isinstance(t.rhs, ConstVar) \
                and isinstance(c, ConstVar) and uses[t.lhs] == 1 and uses[t.rhs] == 1 \
                and len({k, t.rhs, c}) == 3:
            a = t.rhs
            parts = conjuncts(rule.condition)
            above_one = any(isinstance(p, Compare) and p.op == ">" and p.lhs is a
                            and p.rhs is Const(1) for p in parts)
            divides = any(isinstance(p, Compare) and p.op == "==" and p.rhs is Const(0)
                          and isinstance(p.lhs, Mod) and p.lhs.lhs is k and p.lhs.rhs is a
                          for p in parts)
            hit = above_one and divides
    _NEEDS_COMMON_FACTOR[rule] = hit
    return hit


_NEEDS_MULTIPLE: Final[dict[Rule, bool]] = {}


def _needs_multiple(rule: Rule) -> bool:
    """True when the left side is `D op cK` (not `[split]`) and D has a summand `y * cA`, y a
    term variable used once, where cA is cK itself or the condition requires `cA mod cK == 0`
    (cA used once). Every way the matcher can fill that summand then needs a variable summand
    of the dividend whose coefficient is a multiple of the divisor k, or k = 1: one term `t *
    a` gives cA = a; a bare term or the constant gives cA = 1 (implicit coefficient); a group
    of terms, or a whole sum with a common factor, gives cA = a factor that divides each
    coefficient of the group (a bound variable would need y used twice)."""
    hit = _NEEDS_MULTIPLE.get(rule)
    if hit is not None:
        return hit
    lhs = rule.lhs
    hit = False
    if not rule.split and isinstance(lhs, (FloorDiv, Mod, CeilDiv)) and \
            isinstance(lhs.rhs, ConstVar):
        k = lhs.rhs
        uses: dict[Expr, int] = {}
        for n in lhs.walk():
            uses[n] = uses.get(n, 0) + 1
        multiples = {k}
        for c in conjuncts(rule.condition):
            if isinstance(c, Compare) and c.op == "==" and c.rhs is Const(0) and \
                    isinstance(c.lhs, Mod) and c.lhs.rhs is k and \
                    isinstance(c.lhs.lhs, ConstVar) and uses.get(c.lhs.lhs) == 1:
                multiples.add(c.lhs.lhs)
        d = lhs.lhs
        for t in d.terms if isinstance(d, Add) else (d,):
            if isinstance(t, Mul) and isinstance(t.lhs, TermVar) and uses[t.lhs] == 1 and \
                    t.rhs in multiples:
                hit = True
    _NEEDS_MULTIPLE[rule] = hit
    return hit


def _needs_one_bucket(rule: Rule) -> bool:
    """True for `[split]` rules `(x * c0 + y) op c0` whose condition requires `lo(y) floordiv
    c0 == hi(y) floordiv c0` (or ceildiv): the remainder y must span fewer than c0 values."""
    lhs = rule.lhs
    shape = divided_scaled_plus_rest(lhs) if rule.split and isinstance(lhs, Expr) else None
    if shape is None or shape[1] is not shape[3]:
        return False
    assert isinstance(lhs, (FloorDiv, Mod, CeilDiv))
    y, k = shape[2], lhs.rhs
    for c in conjuncts(rule.condition):
        if isinstance(c, Compare) and c.op == "==" and \
                isinstance(c.lhs, (FloorDiv, CeilDiv)) and type(c.rhs) is type(c.lhs):
            a, b = c.lhs, c.rhs
            if a.rhs is k and b.rhs is k and isinstance(a.lhs, Call) and \
                    isinstance(b.lhs, Call) and {a.lhs.fn, b.lhs.fn} == {"lo", "hi"} and \
                    a.lhs.args == (y,) and b.lhs.args == (y,):
                return True
    return False


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
            compiled_condition(r)  # once, when the rule base is loaded
            condition_check(r)
            guard_for(r)
            _rule_calls(r)
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


def identity_instances(rule: Rule) -> tuple[tuple[ConstVar, Const], ...]:
    """Constants at which the rule rewrites a term to itself: `(x * c0) floordiv c1 =>
    x floordiv (c1 floordiv c0)` with c0 = 1 has both sides `x floordiv c1` in canonical form
    (`0 floordiv t` and the like read as 0, see `_zero_dividends`).
    A match binding such a constant would only be instantiated to find `out is e`; skipping it
    first saves that work (skipping a match never makes a rewrite wrong)."""
    hit = _IDENTITIES.get(rule)
    if hit is None:
        found = []
        assert isinstance(rule.lhs, Expr) and isinstance(rule.rhs, Expr)
        for cv in sorted({n for n in rule.lhs.walk() if isinstance(n, ConstVar)}, key=str):
            for value in (Const(0), Const(1)):
                sub: dict[Expr, Expr] = {cv: value}
                try:
                    same = canon(_zero_dividends(rule.lhs.substitute(sub))) is \
                        canon(_zero_dividends(rule.rhs.substitute(sub)))
                except EvaluationError:
                    continue
                if same:
                    found.append((cv, value))
        hit = _IDENTITIES[rule] = tuple(found)
    return hit


_IDENTITIES: Final[dict[Rule, tuple[tuple[ConstVar, Const], ...]]] = {}
laws.on_change(_IDENTITIES.clear)  # canonical forms depend on the laws in force


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


# -- maps ----------------------------------------------------------------------------------------


#: Largest period over which a merge of mod constraints is checked point by point.
MERGE_PERIOD_LIMIT: Final = 1 << 16


def checked_residue_merge(m1: int, r1: int, m2: int, r2: int
                          ) -> tuple[int, int] | None | Literal[False]:
    """(M, R) such that, for every integer v, `v mod m1 == r1 and v mod m2 == r2` iff
    `v mod M == R`; None when no v satisfies both; False when the instance was not proven
    (period over MERGE_PERIOD_LIMIT). The candidate comes from the Chinese remainder theorem;
    it is then proven by checking every residue of the common period L = lcm(m1, m2, M),
    which decides the claim because both sides depend only on v mod L."""
    period = math.lcm(m1, m2)
    if period > MERGE_PERIOD_LIMIT:
        return False
    if not (0 <= r1 < m1 and 0 <= r2 < m2):
        candidate = None  # a residue out of range: no v satisfies it
    else:
        candidate = merge_residues(m1, r1, m2, r2)
    if candidate is not None:
        period = math.lcm(period, candidate[0])
    for v in range(period):
        left = v % m1 == r1 and v % m2 == r2
        right = candidate is not None and v % candidate[0] == candidate[1]
        if left != right:
            return False
    return candidate


def checked_residue_bounds(iv: Interval, modulus: int, residue: int) -> Interval | None:
    """The smallest interval inside `iv` holding every x of `iv` with x mod modulus ==
    residue (empty if none), or None when the modulus is over MERGE_PERIOD_LIMIT. Every value
    cut off is checked to violate the residue, so the variable keeps exactly its points."""
    if iv.is_empty or modulus > MERGE_PERIOD_LIMIT:
        return None
    lo = iv.lo
    while lo <= iv.hi and lo % modulus != residue:
        lo += 1
        if lo - iv.lo > modulus:
            return Interval(1, 0)  # a full period without the residue: none has it
    hi = iv.hi
    while hi >= lo and hi % modulus != residue:
        hi -= 1
    return Interval(lo, hi) if lo <= hi else Interval(1, 0)


@dataclass
class Simplifier:
    """Simplifies whole maps with one rule engine (reuse it: it indexes the rules once)."""

    engine: RuleEngine
    decide_emptiness: bool = True
    emptiness_timeout_ms: int = 200
    #: The search over alternatives at sums (see `_ExprSimplifier._root_first`).
    root_first: bool = True

    def simplify(self, m: IndexingMap, point_dims: str = "replace",
                 trace: list[Step] | None = None) -> IndexingMap:
        release_if_grown()  # a safe point to bound memory (verifidx.core.expr)
        if m.is_undefined or m.is_known_empty:
            return m
        if m.sizes:
            return self._simplify_with_sizes(m, point_dims, trace)
        return self._simplify(m, point_dims, trace)

    def _simplify_with_sizes(self, m: IndexingMap, point_dims: str, trace: list[Step] | None
                             ) -> IndexingMap:
        """A map with sizes (docs/semantics.md, Sizes): a size's interval enters every
        interval the conditions read, and a size expression binds a rule's constant only
        where the condition holds for every size (`_rewrite_with_sizes`), so each instance
        holds for every size. A result outside the grammar of maps with sizes (a rule that
        multiplies two index variables, a divisor not shown positive) leaves the map as it
        was, and the trace says so."""
        steps: list[Step] | None = [] if trace is not None else None
        try:
            out = self._simplify(m, point_dims, steps)
        except ValueError as err:  # DivisorError too: the map check of the result
            if trace is not None:
                why = {z.name: z.bounds for z in m.sizes}
                trace.extend(Step(f"{SIZES_NOT_SIMPLIFIED} ({err})", r, r, why)
                             for r in m.results)
            return m
        if trace is not None and steps is not None:
            trace.extend(steps)
        return out

    def _simplify(self, m: IndexingMap, point_dims: str, trace: list[Step] | None
                  ) -> IndexingMap:
        division_free = True
        for r in m.results:
            if kinds(r):
                division_free = False
                break
        # what the rounds below make of m's domain, where that is known already
        first = self._domain(m) if trace is None and m.constraints and m.sizes else None
        settled_key = (self.decide_emptiness, self.emptiness_timeout_ms)
        if division_free:
            if first is not None:
                base = first.settled.get(settled_key)
                if base is not None:
                    return base.with_results(tuple([canon(r) for r in m.results]), m)
            elif not m.constraints and not _has_point_dim(m):
                # the rounds leave such a map's domain as it is, and no rule reads its results
                m = m._mark_empty()
                return m if m.is_known_empty else m.with_results(
                    tuple([canon(r) for r in m.results]), m)
        rounds = 0
        for _ in range(8):  # tightened bounds can make points, points simplify constraints
            rounds += 1
            before = m
            m, settled = self._constraints_to_fixpoint(m, trace)
            if m.is_known_empty:
                return m
            fixed = m
            if point_dims == "replace":
                m = self._replace_point_dims(m)
            if m is fixed and settled:
                break  # another round would reach this same fixpoint again
            if m == before:
                break
        # maps with sizes only: a static map's domain is rarely seen twice (the static path
        # is left as it was)
        domain = self._domain(m) if trace is None and m.constraints and m.sizes else None
        if domain is None:
            bounds = _result_bounds(m)
        else:
            if domain.result_bounds is None:
                domain.result_bounds = _result_bounds(m)
            bounds = domain.result_bounds
        simp = _ExprSimplifier(self.engine, bounds, dict(m.constraints), trace,
                               root_first=self.root_first)
        if m.sizes:
            simp.sizes = simp.bounds
        if domain is not None:
            simp.domain = domain.token
        results = tuple(simp(r) for r in m.results)
        out = m.with_results(results)  # checks only the results that changed
        if out.constraints and self.decide_emptiness and self._empty(out, domain):
            return out.replace(is_known_empty=True)
        if first is not None and rounds == 1 and settled and not _has_point_dim(m):
            # one round, no point dimension: the domain's outcome whatever the results, and
            # division-free results come out as their canonical forms
            first.settled[settled_key] = out
        return out

    def _domain(self, m: IndexingMap) -> _Domain:
        """The engine's record of m's domain, made on first sight; found through the map's
        domain memo when m shares its domain with a map seen before (`with_results`)."""
        memo = m.domain_memo()
        hit = memo.get(self.engine)
        if isinstance(hit, _Domain):
            return hit
        key = _domain_key(m)
        hit = self.engine.domains.get(key)
        if hit is None:
            if len(self.engine.domains) > _DOMAIN_LIMIT:
                self.engine.domains.clear()
            self.engine.domain_tokens += 1
            hit = self.engine.domains[key] = _Domain(self.engine.domain_tokens)
        memo[self.engine] = hit
        return hit

    def _empty(self, m: IndexingMap, domain: _Domain | None) -> bool:
        """`_surely_empty`, once per domain and budget."""
        if domain is None:
            return self._surely_empty(m)
        hit = domain.empty.get(self.emptiness_timeout_ms)
        if hit is None:
            hit = domain.empty[self.emptiness_timeout_ms] = self._surely_empty(m)
        return hit

    # constraints
    def _constraints_to_fixpoint(self, m: IndexingMap, trace: list[Step] | None
                                 ) -> tuple[IndexingMap, bool]:
        """The constraints simplified until a round changes nothing (True), or as far as 32
        rounds go (False)."""
        if not m.constraints:
            return m._mark_empty(), True  # what a round over no constraints gives
        if trace is not None or not m.sizes:
            return self._constraint_rounds(m, trace)
        domain = self._domain(m)
        if domain.fixpoint is None:
            domain.fixpoint = self._constraint_rounds(m, None)
        out, settled = domain.fixpoint
        # the rounds never read the results and carry them unchanged
        return (out if out.results is m.results else out.with_results(m.results, m)), settled

    def _constraint_rounds(self, m: IndexingMap, trace: list[Step] | None
                           ) -> tuple[IndexingMap, bool]:
        for _ in range(32):
            before = m
            simp = _ExprSimplifier(self.engine, m.bounds, {}, trace)
            if m.sizes:
                simp.sizes = simp.bounds
            new = IndexingMap(m.results, m.dims, m.range_vars, m.rt_vars, {}, m.is_known_empty,
                              False, m.sizes)
            for e, iv in m.constraints.items():
                e2, iv2 = simp(e), iv
                for _fuel in range(_FUEL):
                    step = self.engine.rewrite_constraint(e2, iv2, simp.bound, trace)
                    if step is None:
                        break
                    e2, iv2 = simp(step[0]), step[1]
                r = range_of(e2, new.bounds)
                if not r.is_empty and iv2.contains(r):
                    continue  # always satisfied
                if r.intersect(iv2).is_empty and not r.is_empty:
                    return new.replace(is_known_empty=True), True
                new = new.add_constraint(e2, iv2)
                if new.is_known_empty:
                    return new, True
            new = self._merge_mod_constraints(new, trace)
            if new.is_known_empty or new == before:
                return new, True
            m = new
        return m, False

    def _merge_mod_constraints(self, m: IndexingMap, trace: list[Step] | None) -> IndexingMap:
        """`x mod a in [i, i]` and `x mod b in [j, j]` become one constraint modulo lcm(a, b)
        (Chinese remainder), intersected with any constraint already on that expression; a
        variable's bounds shrink to the nearest values with the right residue.

        No rule can state a fact about two constraints, so each instance is proven where it is
        made: both memberships depend only on `x mod L` (L the lcm of the moduli), so checking
        every residue in [0, L) decides the equivalence exactly (`checked_residue_merge`).
        Instances with L over `MERGE_PERIOD_LIMIT` are left alone. Each step is traced."""
        residues: dict[Expr, list[tuple[Expr, int, int]]] = {}
        for e, iv in m.constraints.items():
            if isinstance(e, Mod) and isinstance(e.rhs, Const) and iv.is_point:
                residues.setdefault(e.lhs, []).append((e, e.rhs.value, iv.lo))
        out = m
        for x, items in residues.items():
            modulus, residue = items[0][1], items[0][2]
            if len(items) > 1:
                merged_all = True
                for _e, mi, ri in items[1:]:
                    merged = checked_residue_merge(modulus, residue, mi, ri)
                    if merged is False:
                        merged_all = False
                        break
                    if merged is None:
                        if trace is not None:
                            trace.append(Step("mod_constraints_merge", items[0][0], Const(0), {
                                f"{e}": Interval(ri, ri) for e, _m, ri in items}))
                        return out.replace(is_known_empty=True)
                    modulus, residue = merged
                if not merged_all:
                    continue
                cons = {e: iv for e, iv in out.constraints.items()
                        if e not in {item[0] for item in items}}
                target = Mod(x, Const(modulus))
                out = out.replace(constraints=cons).add_constraint(target, (residue, residue))
                if trace is not None:
                    trace.append(Step("mod_constraints_merge", items[0][0], target, {
                        **{f"{e}": Interval(ri, ri) for e, _m, ri in items},
                        "becomes": Interval(residue, residue)}))
                if out.is_known_empty:
                    return out
                now = out.constraints.get(target)
                if now is None or not now.is_point:
                    continue
                residue = now.lo
            if isinstance(x, Variable) and type(x) is not Size:  # a size's interval stays
                info = out.var_info(x)
                tight = checked_residue_bounds(info.bounds, modulus, residue)
                if tight is not None and tight != info.bounds:
                    if trace is not None:
                        trace.append(Step("mod_constraint_bounds", x, x, {
                            f"{x} mod {modulus} in [{residue}, {residue}]: {x}": info.bounds,
                            "becomes": tight}))
                    out = out._with_var(x, Var(tight, info.name))
                    if tight.is_empty:
                        return out.replace(is_known_empty=True)
        return out._mark_empty()

    # point dimensions
    @staticmethod
    def _replace_point_dims(m: IndexingMap) -> IndexingMap:
        sub: dict[Expr, Expr] = {
            Dim(i): Const(v.bounds.lo) for i, v in enumerate(m.dims) if v.bounds.is_point
        }
        if not sub:
            return m
        out = m.replace(results=tuple(canon(r.substitute(sub)) for r in m.results),
                        constraints={})
        for e, iv in m.constraints.items():
            out = out.add_constraint(canon(e.substitute(sub)), iv)
        return out

    # emptiness
    def _surely_empty(self, m: IndexingMap) -> bool:
        """Interval reasoning failed to decide; try sample points, then a bounded Z3 query.
        In a map with sizes a sample also gives each size a value: a point at some sizes
        shows that the map is not empty at every size."""
        ranges = [v.bounds for v in m.all_vars] + [z.bounds for z in m.sizes]
        samples = itertools.islice(
            itertools.product(*[sorted({r.lo, r.hi, (r.lo + r.hi) // 2}) for r in ranges]), 64)
        nd, nv = m.num_dims, len(m.all_vars)
        names = [z.name for z in m.sizes]
        for point in samples:
            try:
                if m.constraints_satisfied(point[:nd], point[nd:nv],
                                           dict(zip(names, point[nv:])) if names else None):
                    return False
            except EvaluationError:
                continue
        from ..solve.smt import is_empty

        return is_empty(m, self.emptiness_timeout_ms).holds is True


def _has_point_dim(m: IndexingMap) -> bool:
    """Whether `_replace_point_dims` has anything to replace."""
    return any(v.bounds.is_point for v in m.dims)


class _Domain:
    """What the simplification of a map with sizes computes from its domain alone (the
    variables' bounds and names, the constraints in their order, the sizes), whatever its
    results: the constraints' fixpoint, the bounds the results are simplified under, whether
    it is empty. Memoized per engine, since every input of these is in `_domain_key` and the
    engine's rules are fixed; Inductor asks about many expressions over one loop nest."""

    def __init__(self, token: int) -> None:
        self.token = token
        self.fixpoint: tuple[IndexingMap, bool] | None = None
        self.result_bounds: Mapping[Variable, Interval] | None = None
        self.empty: dict[int, bool] = {}
        #: by (decide_emptiness, emptiness budget): the simplified map when the rounds settle
        #: at once with no point dimension and it is not found empty; its domain is the
        #: outcome for any results, and division-free results are only put in canonical form
        self.settled: dict[tuple[bool, int], IndexingMap] = {}


def _domain_key(m: IndexingMap) -> tuple[object, ...]:
    """Everything of m but its results, as flat hashable values (custom names and
    provenance included: the maps handed back keep them)."""
    parts: list[object] = [m.is_known_empty, m.is_undefined]
    for table in (m.dims, m.range_vars, m.rt_vars):
        parts.append(len(table))
        for v in table:
            parts += (v.bounds.lo, v.bounds.hi, v.name)
    parts.append(len(m.constraints))
    for e, iv in m.constraints.items():
        parts += (e, iv.lo, iv.hi)
    for z in m.sizes:
        parts += (z.name, z.bounds.lo, z.bounds.hi, z.provenance)
    return tuple(parts)


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


#: The trace entry of a map with sizes that the simplifier gave back as it was.
SIZES_NOT_SIMPLIFIED: Final = "left as is: the result is outside the grammar of maps with sizes"


def _result_bounds(m: IndexingMap) -> Mapping[Variable, Interval]:
    """The variable intervals the rules read while simplifying the results: the domain's,
    tightened by what its linear constraints imply (`implied_bounds`). Never used for the
    constraints themselves, which would then justify their own removal."""
    if not m.constraints:
        return m.bounds
    tight = implied_bounds(m.bounds, m.constraints)
    if any(iv.lo > iv.hi for iv in tight.values()):
        return m.bounds  # contradictory: emptiness is decided elsewhere
    return tight


# -- rule base and public API ------------------------------------------------------------------

_DEFAULT: Simplifier | None = None


def _forget_default() -> None:
    """Its caches were filled under another set of proven laws."""
    global _DEFAULT
    _DEFAULT = None


laws.on_change(_forget_default)


def default_simplifier() -> Simplifier:
    """The simplifier over the bundled rule base, restricted to rules with a current, proved
    certificate (anything else is refused with a warning naming it)."""
    global _DEFAULT
    if _DEFAULT is None:
        from ..rules.base import proven_rule_base

        _DEFAULT = Simplifier(RuleEngine(proven_rule_base()))
    return _DEFAULT


_CUSTOM: Final[dict[tuple[str, bool], Simplifier]] = {}


def _fingerprint(paths: Sequence[str | Path]) -> str:
    """The rule files and their certificates as they are now (a cache key that an edited rule
    or a re-proof changes)."""
    import hashlib

    from ..rules.parser import rule_files
    from ..rules.store import certificate_path

    h = hashlib.sha256()
    for f in rule_files(list(paths)):
        for part in (f, certificate_path(f)):
            h.update(str(part.resolve()).encode())
            h.update(part.read_bytes() if part.is_file() else b"-")
    return h.hexdigest()


def simplifier_for(rules: Sequence[str | Path] = (), bundled: bool = True) -> Simplifier:
    """A simplifier over the bundled rule base (unless `bundled=False`) plus the user's rule
    files or directories `rules`, each rule admitted only when its certificate (`proofs/`
    beside a `rules/` directory, as `verifidx prove` writes them) re-checks now, as `verifidx
    check` would (`rules.base.checked_rule_base`; once per rule text, through the proof cache).
    A user rule named like a bundled one, or like another of `rules`, is a ParseError."""
    if not rules and bundled:
        return default_simplifier()
    key = (_fingerprint(rules), bundled)
    if key not in _CUSTOM:
        from ..rules.base import checked_rule_base, package_rule_dir, proven_rule_base

        own = checked_rule_base(rules, bundled)
        base = proven_rule_base([package_rule_dir()]) if bundled else []
        _CUSTOM[key] = Simplifier(RuleEngine([*base, *own]))
    return _CUSTOM[key]


def expression_range(m: IndexingMap, e: Expr, simplifier: Simplifier | None = None) -> Interval:
    """Sound interval of `e` over the map's domain, simplified first so that, for instance,
    `s0 - 32 * (s0 floordiv 32)` is seen as `s0 mod 32` and gets [0, 31]."""
    engine = (simplifier or default_simplifier()).engine
    simp = _ExprSimplifier(engine, m.bounds, dict(m.constraints))
    return simp.bound(simp(e))


class SimplifyResult:
    """`simplify(..., verify=True)`: the map and the translation-validation verdict (a
    `verifidx.solve.smt.Verdict`; typed `object` so that this module does not load the solver)."""

    # a plain class, not a dataclass: compiled by mypyc, a dataclass resolves its annotations in
    # this module's globals, where the solver's Verdict is not
    def __init__(self, map: IndexingMap, verdict: object, trace: list[Step]) -> None:
        self.map = map
        self.verdict = verdict
        self.trace = trace

    @property
    def verified(self) -> bool | None:
        return getattr(self.verdict, "holds", None)

    def __repr__(self) -> str:
        return f"SimplifyResult(map={self.map!r}, verdict={self.verdict!r}, trace={self.trace!r})"


def simplify(m: IndexingMap, verify: bool = False, point_dims: str = "replace",
             trace: list[Step] | None = None, timeout_ms: int = 5000,
             rules: Sequence[str | Path] = (), bundled: bool = True
             ) -> IndexingMap | SimplifyResult:
    """A new map with the same relation. With `verify=True`, also asks Z3 whether the result
    equals the input and returns a SimplifyResult whose verdict is honest (None: unknown).
    `rules`: the user's own proven rule files or directories, used on top of the bundled rule
    base, or instead of it with `bundled=False`."""
    steps: list[Step] | None = trace if trace is not None else ([] if verify else None)
    engine = simplifier_for(rules, bundled)
    out = engine.simplify(m, point_dims=point_dims, trace=steps)
    if not verify:
        return out
    from ..solve.smt import equal

    return SimplifyResult(out, equal(m, out, timeout_ms), steps or [])


def _simplify_map(m: IndexingMap, point_dims: str) -> IndexingMap:
    return default_simplifier().simplify(m, point_dims=point_dims)


# `IndexingMap.simplify()` reaches this engine through its seam (the map sits below this module).
register_simplifier(_simplify_map)

__all__ = ["RuleEngine", "Simplifier", "SimplifyResult", "Step", "simplify",
           "default_simplifier", "expression_range", "simplifier_for"]
