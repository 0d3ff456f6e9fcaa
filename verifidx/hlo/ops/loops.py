"""`while` loops: induction variables, the trip count, and the body's maps per iteration.

A loop-carried scalar integer is an induction variable when the body's result for it is its own
value plus a constant step (0 for a value carried unchanged) and its initial value is a known
constant; at the start of iteration `k` it then holds `init + step * k`. The condition must be a
comparison (`LT`, `LE`, `GT`, `GE`, `EQ`, `NE`) of values affine in `k`; the trip count is the
first `k` where it fails. This is what XLA's while-loop analysis recovers, with every value
followed through copies, converts, tuples and the parameters of fusions and calls (a callee's
parameter through every caller, which must agree). Arithmetic is exact only while no value
leaves its integer type, so every value met is checked over all the iterations that compute it;
where any of this fails the trip count is unknown with the reason, never guessed.

With a known trip count `n`, a runtime variable of the body's maps whose value follows from the
induction variables (a dynamic-slice start `i`, `i * 4 + 1`, a clamped or sign-normalised `i`)
becomes that value in terms of the iteration number: a new runtime variable with range
`[0, n - 1]` (its provenance names the loop), clamped as the op clamps it. Other runtime
variables keep their provenance, which stays sound (`verifidx.hlo.runtime`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifidx.core.expr import Const, Expr, RtVar, add, mul
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, clamp_expr, substitute_runtime
from verifidx.hlo.shape import Shape, integer_interval

__all__ = ["LoopAnalysis", "analyse_loop", "is_iteration_of", "iteration_source", "loop_of_body",
           "passed_through", "per_iteration"]

_MAX_DEPTH = 64
_MAX_STEPS = 4096
"""Instructions one question about a value may visit (shared subexpressions are revisited)."""
_SWAP = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}


@dataclass(frozen=True)
class Affine:
    """`a * k + b`: a value in terms of the iteration number `k`."""

    a: int
    b: int

    def at(self, k: int) -> int:
        return self.a * k + self.b

    def over(self, ks: Interval) -> Interval:
        ends = (self.at(ks.lo), self.at(ks.hi))
        return Interval(min(ends), max(ends))

    def __sub__(self, other: Affine) -> Affine:
        return Affine(self.a - other.a, self.b - other.b)


@dataclass(frozen=True)
class _Compare:
    direction: str
    lhs: Affine
    rhs: Affine

    def holds(self, k: int) -> bool:
        x, y = self.lhs.at(k), self.rhs.at(k)
        return {"LT": x < y, "LE": x <= y, "GT": x > y, "GE": x >= y, "EQ": x == y,
                "NE": x != y}[self.direction]

    def constant_on(self, ks: Interval) -> bool | None:
        """The comparison's value when it is the same for every `k` in `ks` (affine, so the
        ends decide for orderings; equality needs a constant difference)."""
        g = self.lhs - self.rhs
        if self.direction in ("EQ", "NE"):
            if g.a != 0:
                return None
            return self.holds(ks.lo)
        first, last = self.holds(ks.lo), self.holds(ks.hi)
        return first if first == last else None


class _Scalars:
    """Follows scalar integer values to `a * k + b`, given the loop's induction variables (leaf
    of the loop state -> value) for the parameters of its body and condition."""

    def __init__(self, module: HloModule, loop_comps: tuple[str, ...],
                 induction: dict[int, Affine], span: Interval | None) -> None:
        self.module = module
        self.loop_comps = loop_comps
        self.induction = induction
        self.span = span
        self.checks: list[tuple[Affine, str]] = []
        self.where, self.callers = _module_index(module)
        self.steps = 0

    def value(self, inst: HloInstruction, comp: HloComputation, leaf: int = 0,
              env: _Env | None = None, depth: int = 0) -> Affine | None:
        self.steps += 1
        if depth > _MAX_DEPTH or self.steps > _MAX_STEPS:
            return None
        d = depth + 1
        op = inst.opcode
        if op == "parameter":
            return self._parameter(inst, comp, leaf, env, d)
        if op == "tuple":
            at = _operand_of_leaf(inst, comp, leaf)
            return None if at is None else self.value(comp.instruction(at[0]), comp, at[1], env,
                                                      d)
        if op == "get-tuple-element":
            src = comp.instruction(inst.operands[0])
            start = _leaf_start(src.shape, inst.tuple_index)
            return None if start is None else self.value(src, comp, start + leaf, env, d)
        if op in ("fusion", "call"):
            names = inst.called_computations
            if len(names) != 1 or names[0] not in self.module.computations:
                return None
            callee = self.module.computation(names[0])
            return self.value(callee.root, callee, leaf, _Env(inst, comp, env), d)
        if inst.shape.is_tuple or inst.shape.rank != 0 or integer_interval(
                inst.shape.element_type) is None:
            return None
        out = self._scalar(inst, comp, env, d)
        if out is not None:
            self.checks.append((out, inst.shape.element_type))
        return out

    def _operand(self, inst: HloInstruction, comp: HloComputation, j: int, env: _Env | None,
                 depth: int) -> Affine | None:
        return self.value(comp.instruction(inst.operands[j]), comp, 0, env, depth)

    def _scalar(self, inst: HloInstruction, comp: HloComputation, env: _Env | None,
                d: int) -> Affine | None:
        op = inst.opcode
        if op == "constant":
            v = inst.literal_value
            return Affine(0, v) if isinstance(v, int) and not isinstance(v, bool) else None
        args = [self._operand(inst, comp, j, env, d) for j in range(len(inst.operands))
                if op != "select" or j > 0]
        if any(x is None for x in args):
            return None
        xs: list[Affine] = [x for x in args if x is not None]
        if op in ("copy", "bitcast", "reshape", "convert") and len(xs) == 1:
            return xs[0]
        if op == "negate" and len(xs) == 1:
            return Affine(-xs[0].a, -xs[0].b)
        if op == "add" and len(xs) == 2:
            return Affine(xs[0].a + xs[1].a, xs[0].b + xs[1].b)
        if op == "subtract" and len(xs) == 2:
            return xs[0] - xs[1]
        if op == "multiply" and len(xs) == 2:
            x, y = xs
            if x.a == 0:
                return Affine(x.b * y.a, x.b * y.b)
            if y.a == 0:
                return Affine(y.b * x.a, y.b * x.b)
            return None
        if op in ("maximum", "minimum") and len(xs) == 2:
            return self._pick(_Compare("GE" if op == "maximum" else "LE", xs[0], xs[1]), xs)
        if op == "clamp" and len(xs) == 3:
            lo, x, hi = xs
            upper = self._pick(_Compare("LE", x, hi), [x, hi])
            return None if upper is None else self._pick(_Compare("GE", upper, lo), [upper, lo])
        if op == "select" and len(xs) == 2:
            pred = self.predicate(comp.instruction(inst.operands[0]), comp, env, d)
            return None if pred is None else self._pick(pred, xs)
        return None

    def _pick(self, cond: _Compare, choices: list[Affine]) -> Affine | None:
        """`choices[0]` where `cond` holds on every iteration, `choices[1]` where it never does;
        None when that depends on the iteration or the iterations are not known."""
        if self.span is None or self.span.is_empty:
            return None
        truth = cond.constant_on(self.span)
        if truth is None:
            return None
        return choices[0] if truth else choices[1]

    def _parameter(self, inst: HloInstruction, comp: HloComputation, leaf: int,
                   env: _Env | None, d: int) -> Affine | None:
        if comp.name in self.loop_comps:
            return self.induction.get(leaf)
        n = inst.parameter_number
        if n is None:
            return None
        if env is not None:
            if n >= len(env.call.operands):
                return None
            return self.value(env.comp.instruction(env.call.operands[n]), env.comp, leaf,
                              env.outer, d)
        # a parameter reached from inside: every caller must give the same value
        found: Affine | None = None
        sites = self.callers.get(comp.name, [])
        if not sites or comp is self.module.entry:
            return None
        for call, caller in sites:
            if call.opcode not in ("fusion", "call") or n >= len(call.operands):
                return None
            v = self.value(caller.instruction(call.operands[n]), caller, leaf, None, d)
            if v is None or (found is not None and v != found):
                return None
            found = v
        return found

    def predicate(self, inst: HloInstruction, comp: HloComputation, env: _Env | None = None,
                  depth: int = 0) -> _Compare | None:
        """A `pred[]` value that is one comparison of affine values, seen through fusions,
        calls, copies and `not`."""
        if depth > _MAX_DEPTH:
            return None
        d = depth + 1
        op = inst.opcode
        if op in ("fusion", "call"):
            names = inst.called_computations
            if len(names) != 1 or names[0] not in self.module.computations:
                return None
            callee = self.module.computation(names[0])
            return self.predicate(callee.root, callee, _Env(inst, comp, env), d)
        if op == "copy" and len(inst.operands) == 1:
            return self.predicate(comp.instruction(inst.operands[0]), comp, env, d)
        if op == "parameter" and env is not None and inst.parameter_number is not None:
            n = inst.parameter_number
            if n < len(env.call.operands):
                return self.predicate(env.comp.instruction(env.call.operands[n]), env.comp,
                                      env.outer, d)
            return None
        if op != "compare" or len(inst.operands) != 2:
            return None
        direction = inst.comparison_direction
        lhs = self._operand(inst, comp, 0, env, d)
        rhs = self._operand(inst, comp, 1, env, d)
        if direction not in _SWAP or lhs is None or rhs is None:
            return None
        return _Compare(direction, lhs, rhs)


@dataclass(frozen=True)
class _Env:
    """Where a callee was entered from: its parameters are `call`'s operands in `comp`."""

    call: HloInstruction
    comp: HloComputation
    outer: _Env | None


_INDEX: dict[int, tuple[HloModule, dict[int, HloComputation],
                        dict[str, list[tuple[HloInstruction, HloComputation]]]]] = {}


def _module_index(module: HloModule) -> tuple[
        dict[int, HloComputation], dict[str, list[tuple[HloInstruction, HloComputation]]]]:
    """Which computation holds each instruction (by identity) and who calls each computation."""
    hit = _INDEX.get(id(module))
    if hit is not None and hit[0] is module:
        return hit[1], hit[2]
    where: dict[int, HloComputation] = {}
    callers: dict[str, list[tuple[HloInstruction, HloComputation]]] = {}
    for comp in module.computations.values():
        for inst in comp.instructions:
            where[id(inst)] = comp
            for name in inst.called_computations:
                callers.setdefault(name, []).append((inst, comp))
    if len(_INDEX) > 16:
        _INDEX.clear()
    _INDEX[id(module)] = (module, where, callers)
    return where, callers


def _leaf_start(shape: Shape, index: int | None, leaf: int = 0) -> int | None:
    """The first leaf of tuple element `index` of `shape` (depth first); with `index` None,
    `leaf` itself."""
    if index is None:
        return leaf
    if not shape.is_tuple or not 0 <= index < len(shape.tuple_shapes):
        return None
    return sum(len(s.leaves()) for s in shape.tuple_shapes[:index])


def _operand_of_leaf(inst: HloInstruction, comp: HloComputation, leaf: int
                     ) -> tuple[str, int] | None:
    start = 0
    for name in inst.operands:
        n = len(comp.instruction(name).shape.leaves())
        if leaf < start + n:
            return name, leaf - start
        start += n
    return None


# -- the analysis ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopAnalysis:
    """What is known of one `while`: its induction variables (state leaf -> `init + step * k`),
    the trip count (None: unknown, `reason` says why) and the computations it runs."""

    loop: HloInstruction
    body: HloComputation
    condition: HloComputation
    induction: dict[int, Affine] = field(default_factory=dict)
    trips: int | None = None
    reason: str = ""

    def describe(self) -> str:
        name = self.loop.name
        if self.trips is None:
            return f"{name}: trip count unknown: {self.reason}"
        counters = ", ".join(f"leaf {t} = {v.b} + {v.a} * k" for t, v in
                             sorted(self.induction.items()) if v.a)
        return f"{name}: {self.trips} iterations (k in [0, {self.trips - 1}]; {counters})"


def _first_failure(cond: _Compare) -> int | None:
    """The first `k >= 0` where the comparison fails, None when it never does."""
    if not cond.holds(0):
        return 0
    g = cond.lhs - cond.rhs  # the comparison is `g(k) <dir> 0`
    a, b = g.a, g.b
    d = cond.direction
    if a == 0:
        return None
    if d == "EQ":
        return 1
    if d == "NE":
        return -b // a if b % a == 0 and -b // a > 0 else None
    if d == "LT":  # holds while a*k + b < 0: fails from ceil(-b / a)
        return -(b // a) if a > 0 else None
    if d == "LE":  # holds while a*k + b <= 0: fails from floor(-b / a) + 1
        return (-b) // a + 1 if a > 0 else None
    if d == "GT":  # holds while a*k + b > 0: fails from ceil(b / -a)
        return -((-b) // (-a)) if a < 0 else None
    return b // (-a) + 1 if a < 0 else None  # GE: holds while a*k + b >= 0


_ANALYSES: dict[int, tuple[HloInstruction, HloModule, LoopAnalysis]] = {}


def analyse_loop(loop: HloInstruction, module: HloModule) -> LoopAnalysis:
    """Induction variables and trip count of `loop` (a `while` instruction of `module`), once."""
    hit = _ANALYSES.get(id(loop))
    if hit is not None and hit[0] is loop and hit[1] is module:
        return hit[2]
    if len(_ANALYSES) > 256:
        _ANALYSES.clear()
    found = _analyse(loop, module)
    _ANALYSES[id(loop)] = (loop, module, found)
    return found


def _analyse(loop: HloInstruction, module: HloModule) -> LoopAnalysis:
    names = (loop.attributes.get("body"), loop.attributes.get("condition"))
    if not all(isinstance(n, str) and n in module.computations for n in names):
        raise ValueError(f"{loop.name}: body or condition not found")
    body = module.computation(str(names[0]))
    cond = module.computation(str(names[1]))
    unknown = LoopAnalysis(loop, body, cond)
    where, _callers = _module_index(module)
    outer = where.get(id(loop))
    if outer is None or len(loop.operands) != 1:
        return _unknown(unknown, "the loop's initial value is not known")
    leaves = loop.shape.leaves()
    init = _Scalars(module, (), {}, None)
    candidates: dict[int, Affine] = {}
    for t, leaf in enumerate(leaves):
        if leaf.is_tuple or leaf.rank != 0 or integer_interval(leaf.element_type) is None:
            continue
        own = _Scalars(module, (body.name,), {t: Affine(1, 0)}, None)
        update = own.value(body.root, body, t)
        if update is None or update.a != 1:
            continue
        start = init.value(outer.instruction(loop.operands[0]), outer, t)
        if start is None or start.a != 0:
            continue
        candidates[t] = Affine(update.b, start.b)
    if not any(v.a for v in candidates.values()):
        return _unknown(unknown, "no loop-carried integer is a known constant stepped by a "
                        "constant")
    states = (body.name, cond.name)
    check = _Scalars(module, states, candidates, None)
    test = check.predicate(cond.root, cond)
    if test is None:
        return _unknown(unknown, "the condition is not a comparison of induction variables "
                        "and constants")
    trips = _first_failure(test)
    if trips is None:
        return _unknown(unknown, "the condition never fails (or only after the counter "
                        "overflows)")
    # every value the condition computes (iterations 0..n) and the body's updates (0..n-1)
    # must stay in its type, or the arithmetic above is not what the loop does
    body_check = _Scalars(module, states, candidates, Interval(0, max(trips - 1, 0)))
    for t, v in candidates.items():
        if trips and body_check.value(body.root, body, t) != Affine(v.a, v.b + v.a):
            return _unknown(unknown, f"leaf {t}'s update is not the same in every iteration")
    for checks, ks in ((check.checks, Interval(0, trips)),
                       (body_check.checks if trips else [], Interval(0, trips - 1))):
        for value, element_type in checks:
            if not _fits(value, ks, element_type):
                return _unknown(unknown, f"a counter value leaves {element_type} within "
                                f"{trips} iterations")
    for t, v in candidates.items():
        if not _fits(v, Interval(0, trips), leaves[t].element_type):
            return _unknown(unknown, f"leaf {t} leaves {leaves[t].element_type}")
    return LoopAnalysis(loop, body, cond, candidates, trips)


def passed_through(body: HloComputation) -> set[int]:
    """The state leaves the body returns exactly as it got them (through tuples,
    get-tuple-elements and copies): the only leaves whose value does not depend on how many
    iterations run. An identity index map is not enough: `x * 0.5` has one and changes."""
    out: set[int] = set()
    param = body.parameters[0] if len(body.parameters) == 1 else None
    for leaf in range(len(body.root.shape.leaves())):
        inst, at = body.root, leaf
        for _ in range(_MAX_DEPTH):
            if inst.opcode == "tuple":
                found = _operand_of_leaf(inst, body, at)
                if found is None:
                    break
                inst, at = body.instruction(found[0]), found[1]
            elif inst.opcode == "get-tuple-element":
                src = body.instruction(inst.operands[0])
                start = _leaf_start(src.shape, inst.tuple_index)
                if start is None:
                    break
                inst, at = src, start + at
            elif inst.opcode == "copy":
                inst = body.instruction(inst.operands[0])
            else:
                break
        if inst is param and at == leaf:
            out.add(leaf)
    return out


def loop_of_body(module: HloModule, comp: HloComputation) -> HloInstruction | None:
    """The one `while` whose body `comp` is (None when no loop or several run it)."""
    _where, callers = _module_index(module)
    sites = callers.get(comp.name, [])
    if len(sites) == 1 and sites[0][0].opcode == "while" and \
            sites[0][0].attributes.get("body") == comp.name:
        return sites[0][0]
    return None


def _fits(value: Affine, ks: Interval, element_type: str) -> bool:
    bounds = integer_interval(element_type)
    return bounds is not None and bounds.contains(value.over(ks))


def _unknown(base: LoopAnalysis, reason: str) -> LoopAnalysis:
    return LoopAnalysis(base.loop, base.body, base.condition, {}, None, reason)


# -- the body's maps per iteration -------------------------------------------------------------

def iteration_source(loop: HloInstruction) -> HloInstruction:
    """The provenance of the iteration-number runtime variable (synthetic, labelled
    `iteration of <loop>`, tagged with the loop's identity so that it is recognised again)."""
    return HloInstruction(name=loop.name, opcode="while", shape=Shape("s32"),
                          raw_attributes={"iteration_of": loop.name, "loop": str(id(loop))})


def is_iteration_of(rv: RuntimeVar, loop: HloInstruction) -> bool:
    tags = rv.source.raw_attributes
    return tags.get("iteration_of") == loop.name and tags.get("loop") == str(id(loop))


def per_iteration(ind: OperandIndexing, analysis: LoopAnalysis, module: HloModule
                  ) -> OperandIndexing:
    """A map of the loop body with every runtime variable whose value follows from the
    induction variables replaced by that value over the iteration number (a new runtime
    variable `k` in `[0, trips - 1]`), clamped to the variable's bounds as the op clamps it.
    Unchanged when the trip count is unknown or nothing follows."""
    m = ind.map
    trips = analysis.trips
    if trips is None or trips == 0 or m.is_undefined or not ind.runtime:
        return ind
    where, _ = _module_index(module)
    span = Interval(0, trips - 1)
    k = RtVar(m.num_rt_vars)
    values: dict[int, Expr] = {}
    for j, rv in enumerate(ind.runtime):
        value = _follow(rv, analysis, module, where, span)
        if value is None:
            continue
        bounds = dict(m.bounds)
        bounds[k] = span
        expr = add(mul(Const(value.a), k), Const(value.b)) if value.a else Const(value.b)
        values[j] = clamp_expr(expr, bounds, m.rt_vars[j].bounds.lo, m.rt_vars[j].bounds.hi)
    if not values:
        return ind
    if not any(value.variables() & {k} for value in values.values()):
        widened = ind
    else:
        source_map = IndexingMap.build([], m.dims, m.range_vars)
        widened = OperandIndexing(
            m.replace(rt_vars=m.rt_vars + (Var(span, None),)),
            ind.runtime + (RuntimeVar(iteration_source(analysis.loop), source_map),),
            ind.replica, ind.notes)
    # substitution is simultaneous: name `k` by its number once the replaced ones are gone
    final: dict[Expr, Expr] = {k: RtVar(m.num_rt_vars - len(values))}
    return substitute_runtime(widened, {j: v.substitute(final) for j, v in values.items()})


def _follow(rv: RuntimeVar, analysis: LoopAnalysis, module: HloModule,
            where: dict[int, HloComputation], span: Interval) -> Affine | None:
    """The value of a runtime variable's source per iteration, when it is a scalar that follows
    from the induction variables without leaving its type."""
    comp = where.get(id(rv.source))
    if comp is None or rv.map.num_results or rv.source.shape.rank != 0:
        return None
    scalars = _Scalars(module, (analysis.body.name,), analysis.induction, span)
    value = scalars.value(rv.source, comp)
    if value is None:
        return None
    if not all(_fits(v, span, t) for v, t in scalars.checks):
        return None
    return value

