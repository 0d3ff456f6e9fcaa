"""Rules applied where a size expression stands for a constant (docs/semantics.md, Sizes).

A rule proven for every integer value of its constants (`c0`, `c1`, ...) holds in particular
for the value a size expression such as `N` or `N * 4` takes at each size. So the simplifier
may bind a size expression where a rule binds a constant, provided that

- the rule's proof covers every constant (a bounded proof, `|c| <= N`, never binds a size:
  the caller skips rules with `max_constant`), and
- the rule's condition, with each constant replaced by what it is bound to and each
  `lo(t)`/`hi(t)` by the bound of t's interval at the match site (itself valid for every
  size), holds for **every** size in the sizes' intervals.

The condition is decided on intervals first (three-valued: a comparison whose difference has an
interval on one side of 0, a comparison with `min`/`max` split into the comparisons of their
arguments, divisions of a product of sizes by one that divides it replaced by their exact
values), then evaluated at a few sizes in range (a size where it is false or undefined
refuses the rule without a solver call), else by a Z3 query over the sizes
(`smt.for_all_sizes`, under a resource limit, cached by content). Anything else refuses the
rule: a condition that holds for some sizes only is never used.

The matcher here is structural (the ordinary matcher's integer coefficients do not carry size
expressions): it proposes bindings, and the simplifier keeps a proposal only when the rule's
left side instantiated with it is the matched term itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping

from ..core.canonical import canon, from_linear, linear_form, order_key
from ..core.errors import EvaluationError
from ..core.expr import (
    Add,
    Binary,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Mul,
    Size,
    Variable,
    add,
    has_index_variable,
    is_size_expr,
    mul,
    neg,
    register_cache,
    summands,
)
from ..core.interval import Interval, range_of
from ..solve.smt import for_all_sizes
from .model import BoolOp, Call, Compare, Condition, ConstVar, Not, TermVar, Truth

Bindings = dict[Expr, Expr]


def sized_matches(pattern: Expr, e: Expr) -> Iterator[Bindings]:
    """Bindings under which `pattern` may describe `e` with at least one constant of the rule
    bound to a size expression (the ordinary matcher covers the others)."""
    for b in _match(pattern, e, {}):
        if any(isinstance(k, ConstVar) and not isinstance(v, Const) for k, v in b.items()):
            yield b


def _bind(p: Expr, e: Expr, b: Bindings) -> Iterator[Bindings]:
    bound = b.get(p)
    if bound is None:
        yield {**b, p: e}
    elif bound is e:
        yield b


def _match(p: Expr, e: Expr, b: Bindings) -> Iterator[Bindings]:
    if isinstance(p, TermVar):
        yield from _bind(p, e, b)
    elif isinstance(p, ConstVar):
        if isinstance(e, Const) or is_size_expr(e):
            yield from _bind(p, e, b)
    elif isinstance(p, Const):
        if p is e:
            yield b
    elif isinstance(p, Add):
        yield from _match_sum(p, e, b)
    elif isinstance(p, Mul):
        yield from _match_product(p, e, b)
    elif isinstance(p, Binary):
        if isinstance(e, Binary) and type(p) is type(e):
            for b1 in _match(p.lhs, e.lhs, b):
                yield from _match(p.rhs, e.rhs, b1)
            if isinstance(p, (Min, Max)):
                for b1 in _match(p.lhs, e.rhs, b):
                    yield from _match(p.rhs, e.lhs, b1)


def _factors(e: Expr) -> list[Expr]:
    if isinstance(e, Mul):
        return _factors(e.lhs) + _factors(e.rhs)
    return [e]


def _match_product(p: Mul, e: Expr, b: Bindings) -> Iterator[Bindings]:
    if isinstance(e, Mul):
        for b1 in _match(p.lhs, e.lhs, b):
            yield from _match(p.rhs, e.rhs, b1)
        for b1 in _match(p.lhs, e.rhs, b):
            yield from _match(p.rhs, e.lhs, b1)
        if isinstance(p.rhs, ConstVar):
            # `d0 * N * 4` as x * c0 with c0 = N * 4: the factors without an index variable
            sized = [f for f in _factors(e) if isinstance(f, Const) or is_size_expr(f)]
            rest = [f for f in _factors(e) if not (isinstance(f, Const) or is_size_expr(f))]
            if sized and rest and len(sized) > 1:
                x, c = rest[0], sized[0]
                for f in rest[1:]:
                    x = mul(x, f)
                for f in sized[1:]:
                    c = mul(c, f)
                for b1 in _match(p.rhs, c, b):
                    yield from _match(p.lhs, x, b1)
    elif isinstance(p.rhs, ConstVar) and isinstance(p.lhs, (FloorDiv, CeilDiv, Mod, Min, Max)):
        # an implicit coefficient, `t` as `t * 1`: the digit `(q1 floordiv M) mod N` of
        # `(q1 floordiv (N * M)) * N + (q1 floordiv M) mod N` (a product of this grammar has a
        # constant or size factor, so a term that is no product has coefficient 1). Not for a
        # bare `x * c0`: that would match every term, and the rule base states the
        # coefficient-1 forms it needs (`mod_from_difference`)
        for b1 in _match(p.rhs, Const(1), b):
            yield from _match(p.lhs, e, b1)


def _match_sum(p: Add, e: Expr, b: Bindings) -> Iterator[Bindings]:
    """Each summand of the pattern but one bare term variable against a distinct summand of
    `e`; that variable (if any) takes what is left."""
    rest_vars = [t for t in p.terms if isinstance(t, TermVar) and t not in b]
    if len(rest_vars) > 1:
        return
    rest = rest_vars[0] if rest_vars else None
    fixed = [t for t in p.terms if t is not rest]
    yield from _assign(fixed, list(summands(e)), rest, b)


def _assign(patterns: list[Expr], terms: list[Expr], rest: Expr | None, b: Bindings
            ) -> Iterator[Bindings]:
    if not patterns:
        if rest is None:
            if not terms:
                yield b
        else:
            yield from _bind(rest, add(*terms) if terms else Const(0), b)
        return
    first, others = patterns[0], patterns[1:]
    for i, t in enumerate(terms):
        for b1 in _match(first, t, b):
            yield from _assign(others, terms[:i] + terms[i + 1:], rest, b1)


def product_form(e: Expr) -> Expr:
    """`e` with every product's factors in one order (flattened; factors that mention an
    index variable first, then sizes, each by `order_key`, the constant last) and every sum's
    like terms combined: the same value (multiplication and addition are associative and
    commutative), so two terms with the same form are equal. The simplifier confirms a
    match with a size bound to a constant by this form where `canon`, which orders products
    by integer coefficients only, tells `(x * 16) * N` and `x * (N * 16)` apart."""
    hit = _PRODUCT_FORMS.get(e)
    if hit is None:
        hit = _product_form(e)
        if len(_PRODUCT_FORMS) > 100_000:
            _PRODUCT_FORMS.clear()
        _PRODUCT_FORMS[e] = hit
    return hit


_PRODUCT_FORMS: dict[Expr, Expr] = register_cache({})


def _product_form(e: Expr) -> Expr:
    if not e.children:
        return e
    if isinstance(e, Mul):
        factors = [product_form(f) for f in _factors(e)]
        constant = 1
        rest: list[Expr] = []
        for f in factors:
            if isinstance(f, Const):
                constant *= f.value
            else:
                rest.extend(_factors(f))  # a factor's own form may be a product
        rest.sort(key=lambda f: (not has_index_variable(f), order_key(f)))
        out: Expr = Const(constant)
        if rest:
            out = rest[0]
            for f in rest[1:]:
                out = Mul(out, f)
            if constant != 1:
                out = Mul(out, Const(constant))
        return out
    if isinstance(e, Add):
        coeffs: dict[Expr, int] = {}
        total = 0
        for t in e.terms:
            parts, constant = linear_form(product_form(t))
            total += constant
            for base, c in parts.items():
                coeffs[base] = coeffs.get(base, 0) + c
        return from_linear(coeffs, total)
    return e.rebuild([product_form(c) for c in e.children])


# -- the condition, for every size ------------------------------------------------------------

Formula = tuple  # ("truth", bool) | ("cmp", op, Expr, Expr) | ("not", F) | ("and"/"or", (F, ...))


def condition_for_all_sizes(condition: Condition, env: Mapping[Expr, Expr],
                            bounds: Mapping[Expr, Expr], sizes: Mapping[Variable, Interval]
                            ) -> tuple[bool, str]:
    """Whether the rule's condition holds for every size in `sizes`, with its constants bound
    by `env` and its `lo(t)`/`hi(t)` replaced by `bounds` (integers, or expressions over the
    sizes: bounds valid for every size); and how that was decided (for the trace). False
    covers "fails for some size" and "could not tell"."""
    try:
        formula = _formula(condition, env, bounds)
    except _Unbound as why:
        return False, f"refused: {why}"
    text = _formula_text(formula)
    exact = _formula_map(formula, lambda t: _exact_divisions(t, sizes))
    if exact != formula:
        text += f" (exactly: {_formula_text(exact)})"
        formula = exact
    verdict = _interval_truth(formula, sizes)
    if verdict is True:
        return True, f"{text}: holds for every size (intervals)"
    if verdict is False:
        return False, f"{text}: refused: fails for every size (intervals)"
    point = _failing_point(formula, sizes)
    if point is not None:
        at = ", ".join(f"{z} = {v}" for z, v in point.items())
        return False, f"{text}: refused: fails at {at} (evaluated)"
    holds, how = for_all_sizes(formula, sizes)
    if holds is True:
        return True, f"{text}: holds for every size ({how})"
    return False, f"{text}: refused: {how}"


def _formula_text(f: Formula) -> str:
    """The condition as decided, constants and bounds replaced (`N > 0 and min(63, N - 1) <
    N`), for the trace."""
    kind = f[0]
    if kind == "truth":
        return "true" if f[1] else "false"
    if kind == "not":
        return f"not ({_formula_text(f[1])})"
    if kind in ("and", "or"):
        return f" {kind} ".join(f"({_formula_text(g)})" if g[0] in ("and", "or") else
                               _formula_text(g) for g in f[1])
    return f"{f[2]} {f[1]} {f[3]}"


def _formula_map(f: Formula, fn: Callable[[Expr], Expr]) -> Formula:
    """The formula with `fn` applied to both sides of every comparison."""
    kind = f[0]
    if kind == "truth":
        return f
    if kind == "not":
        return ("not", _formula_map(f[1], fn))
    if kind in ("and", "or"):
        return (kind, tuple([_formula_map(g, fn) for g in f[1]]))
    return ("cmp", f[1], fn(f[2]), fn(f[3]))


def _exact_divisions(e: Expr, sizes: Mapping[Variable, Interval]) -> Expr:
    """`e` with each division of a size monomial by one that divides it replaced by its
    value: `(N * M) mod M` is 0, `(N * M) floordiv M` is N. Only where the divisor is at least
    1 at every size, so no undefined point is dropped. Intervals see `(N * M) mod M` as
    anything in [0, M - 1], and Z3 gives up on such nonlinear terms."""
    if not e.children:
        return e
    e = e.map_children(lambda c: _exact_divisions(c, sizes))
    if isinstance(e, (FloorDiv, CeilDiv, Mod)):
        q = _monomial_quotient(e.lhs, e.rhs)
        try:
            positive = q is not None and range_of(e.rhs, sizes).lo >= 1
        except (KeyError, EvaluationError):
            positive = False
        if positive:
            assert q is not None
            return Const(0) if isinstance(e, Mod) else q
    return e


def _monomial_quotient(a: Expr, b: Expr) -> Expr | None:
    """`a / b` when both are products of sizes and integers (`N * M * 4`) and b's factors
    are among a's with the integer dividing a's: then the division is exact at every size."""
    ma, mb = _monomial(a), _monomial(b)
    if ma is None or mb is None or mb[0] == 0 or ma[0] % mb[0]:
        return None
    rest = list(ma[1])
    for f in mb[1]:
        if f not in rest:
            return None
        rest.remove(f)
    out: Expr = Const(ma[0] // mb[0])
    for f in rest:
        out = mul(out, f)
    return out


def _monomial(e: Expr) -> tuple[int, list[Expr]] | None:
    """The integer and the sizes of a product of sizes and integers, else None."""
    coefficient = 1
    found: list[Expr] = []
    for f in _factors(product_form(e)):
        if isinstance(f, Const):
            coefficient *= f.value
        elif isinstance(f, Size):
            found.append(f)
        else:
            return None
    return coefficient, found


class _Unbound(Exception):
    """A part of the condition has no expression over the sizes (gcd of a size, ...)."""


def _formula(cond: Condition, env: Mapping[Expr, Expr], bounds: Mapping[Expr, Expr]) -> Formula:
    if isinstance(cond, Truth):
        return ("truth", cond.value)
    if isinstance(cond, Compare):
        return ("cmp", cond.op, _term(cond.lhs, env, bounds), _term(cond.rhs, env, bounds))
    if isinstance(cond, Not):
        return ("not", _formula(cond.arg, env, bounds))
    assert isinstance(cond, BoolOp)
    return (cond.op, tuple([_formula(c, env, bounds) for c in cond.args]))


def _term(e: Expr, env: Mapping[Expr, Expr], bounds: Mapping[Expr, Expr]) -> Expr:
    """A condition term with the rule's constants and bounds replaced: an expression over
    sizes and integers."""
    if isinstance(e, ConstVar):
        bound = env.get(e)
        if bound is None:
            raise _Unbound(f"{e} is not bound")
        return bound
    if isinstance(e, Call):
        if e.fn in ("lo", "hi"):
            value = bounds.get(e)
            if value is None:
                raise _Unbound(f"no interval for {e}")
            return value
        args = [_term(a, env, bounds) for a in e.args]
        if not all(isinstance(a, Const) for a in args):
            raise _Unbound(f"{e.fn} of a size")
        try:
            return Const(e.rebuild(args).evaluate({}))
        except EvaluationError as err:
            raise _Unbound(str(err)) from None
    if not e.children:
        return e
    return e.rebuild([_term(c, env, bounds) for c in e.children])


def _defined_everywhere(e: Expr, sizes: Mapping[Variable, Interval]) -> bool:
    """Every division in `e` has a divisor that is nonzero (positive for `mod`) at every size."""
    for node in e.walk():
        if isinstance(node, (FloorDiv, CeilDiv, Mod)) and not isinstance(node.rhs, Const):
            r = range_of(node.rhs, sizes)
            if (r.lo < 1 if isinstance(node, Mod) else r.lo <= 0 <= r.hi):
                return False
    return True


def _formula_defined(f: Formula, sizes: Mapping[Variable, Interval]) -> bool:
    """Every comparison in `f` is defined at every size (parts a short circuit would skip
    included)."""
    kind = f[0]
    if kind == "truth":
        return True
    if kind == "not":
        return _formula_defined(f[1], sizes)
    if kind in ("and", "or"):
        return all(_formula_defined(g, sizes) for g in f[1])
    return _defined_everywhere(f[2], sizes) and _defined_everywhere(f[3], sizes)


def _interval_truth(f: Formula, sizes: Mapping[Variable, Interval]) -> bool | None:
    """Three-valued: True/False when the intervals decide for every size, None otherwise.
    A True or False is defined at every size."""
    kind = f[0]
    if kind == "truth":
        return bool(f[1])
    if kind == "not":
        inner = _interval_truth(f[1], sizes)
        return None if inner is None else not inner
    if kind in ("and", "or"):
        # left to right, as the prover reads conditions: a part decides only when every part
        # before it is defined at every size (an undefined part makes the whole undefined,
        # which does not hold, even where a later part is true)
        decisive = kind == "or"  # a True decides an `or`, a False an `and`
        undecided = False
        for g in f[1]:
            value = _interval_truth(g, sizes)
            if value is decisive:
                return decisive
            if value is None:
                if not _formula_defined(g, sizes):
                    return None
                undecided = True
        return None if undecided else not decisive
    _, op, lhs, rhs = f
    if not (_defined_everywhere(lhs, sizes) and _defined_everywhere(rhs, sizes)):
        return None  # an interval skips the undefined points: Z3 requires definedness
    split = _split_extremum(op, lhs, rhs)
    if split is not None:  # both sides defined everywhere: so is each comparison of the split
        return _interval_truth(split, sizes)
    try:
        # the canonical difference, factors in one order: `N * M - 1 - M * N` is -1 (the
        # laws hold where defined)
        d = range_of(product_form(canon(add(lhs, neg(rhs)))), sizes)
    except (KeyError, EvaluationError):
        return None
    if d.is_empty:
        return None
    if op == "<":
        return True if d.hi < 0 else False if d.lo >= 0 else None
    if op == "<=":
        return True if d.hi <= 0 else False if d.lo > 0 else None
    if op == ">":
        return True if d.lo > 0 else False if d.hi <= 0 else None
    if op == ">=":
        return True if d.lo >= 0 else False if d.hi < 0 else None
    if op == "==":
        return True if d.lo == d.hi == 0 else False if 0 not in d else None
    return False if d.lo == d.hi == 0 else True if 0 not in d else None  # !=


#: `min(a, b) op c` as a formula over `a op c` and `b op c` (and `max`): "or" where one side
#: below (above) c suffices, "and" where both must be. `==`/`!=` do not split.
_MIN_SPLIT = {"<": "or", "<=": "or", ">": "and", ">=": "and"}
_MAX_SPLIT = {"<": "and", "<=": "and", ">": "or", ">=": "or"}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _split_extremum(op: str, lhs: Expr, rhs: Expr) -> Formula | None:
    """The comparison with a `min`/`max` side split into its arguments' comparisons (an
    equivalence for defined values: min(a, b) < c iff a < c or b < c), so that intervals see
    `min(63, N - 1) < N` as `63 < N or N - 1 < N`, whose second part they decide; None when
    neither side is a `min`/`max` or the operator is `==`/`!=`."""
    if op not in _FLIPPED:
        return None
    if not isinstance(lhs, (Min, Max)) and isinstance(rhs, (Min, Max)):
        op, lhs, rhs = _FLIPPED[op], rhs, lhs
    if not isinstance(lhs, (Min, Max)):
        return None
    joint = (_MIN_SPLIT if isinstance(lhs, Min) else _MAX_SPLIT)[op]
    return (joint, (("cmp", op, lhs.lhs, rhs), ("cmp", op, lhs.rhs, rhs)))


#: Values tried for each size before a solver call (`_failing_point`): its lower end and the
#: few just above (conditions on small sizes, divisibility, fail there), the middle and the
#: upper end.
_STEPS = (0, 1, 2, 3, 4, 5, 7, 11)
_POINTS = 48


def _failing_point(f: Formula, sizes: Mapping[Variable, Interval]) -> dict[str, int] | None:
    """Sizes in range at which the formula is false or undefined (so it does not hold for
    every size, which Z3 would answer at greater cost), or None when none of the points
    tried is one. Only ever refuses: a point where the formula holds proves nothing."""
    found = set(_formula_sizes(f))
    used = sorted([v for v in found if isinstance(v, Size) and v in sizes],
                  key=lambda v: v.name)
    if len(used) != len(found):
        return None  # not a formula over sizes: Z3's encoding refuses it
    candidates = []
    for v in used:
        iv = sizes[v]
        values = [iv.lo + k for k in _STEPS if iv.lo + k <= iv.hi]
        candidates.append(list(dict.fromkeys([*values, (iv.lo + iv.hi) // 2, iv.hi])))
    diagonal = [tuple(c[min(k, len(c) - 1)] for c in candidates)
                for k in range(max((len(c) for c in candidates), default=1))]
    for point in itertools.islice(itertools.chain(diagonal, itertools.product(*candidates)),
                                  _POINTS):
        if _evaluates_false(f, dict(zip(used, point))):
            return {v.name: x for v, x in zip(used, point)}
    return None


def _evaluates_false(f: Formula, env: Mapping[Expr, int]) -> bool:
    """Whether the formula is false or undefined (a division by 0, a `mod` by a value below
    1: what `smt.Encoder` requires to be defined) at the point `env`."""
    try:
        return not _value(f, env)
    except EvaluationError:
        return True


def _value(f: Formula, env: Mapping[Expr, int]) -> bool:
    kind = f[0]
    if kind == "truth":
        return bool(f[1])
    if kind == "not":
        return not _value(f[1], env)
    if kind in ("and", "or"):
        # every part evaluated, as Z3 requires every division of the formula to be defined
        parts = [_value(g, env) for g in f[1]]
        return all(parts) if kind == "and" else any(parts)
    _, op, lhs, rhs = f
    a, b = lhs.evaluate(env), rhs.evaluate(env)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
            ">=": a >= b}[op]


def _formula_sizes(f: Formula) -> Iterator[Variable]:
    kind = f[0]
    if kind == "truth":
        return
    if kind == "not":
        yield from _formula_sizes(f[1])
    elif kind in ("and", "or"):
        for g in f[1]:
            yield from _formula_sizes(g)
    else:
        for side in f[2:]:
            yield from side.variable_set()
