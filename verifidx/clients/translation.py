"""Translation validation: the program a compiler was given (BEFORE) against the one it
produced (AFTER), compared as relations "output element -> the parameter elements it reads",
for every value of the scalar integer parameters (issue 36).

Each (output leaf, entry parameter) pair gets the maps of both programs
(`verifidx.analysis.computation_maps`). A runtime variable (a start index read at run time)
whose value the program computes from scalar parameters, constants and iotas
(`verifidx.hlo.index_values.value_pieces`) is replaced by that value over *value symbols*
(`arg<N>`, sizes with the element type's interval, docs/semantics.md, Values), clamped as the
op clamps it; a value computed by a select splits the map into pieces, each under its
condition. Both programs name the same symbol for the same entry parameter, so the maps are
compared for every value of the symbols (they are sizes to the solver). Integer arithmetic that
may wrap gives one piece per wrap, so each piece is the program's value.

Verdicts, per pair:
- `same`: proven (`vx.equal` for every value of the symbols, each region of the pieces);
- `differ`: only with a counterexample checked by evaluating the maps: symbol values and an
  output point where one program reads, for every value of its remaining runtime variables,
  a parameter element the other reads for none of its own (`refinement.witness`);
- `fewer reads`: AFTER reads nothing of the parameter for the output where BEFORE reads some,
  or (no runtime variables) each AFTER map proven inside a BEFORE map, for every value of the
  value symbols: legal only where the value does not depend on the elements no longer read;
- `unknown`: the solver's unknown or budget, an unfollowed runtime variable without
  counterpart, no point that shows a difference, or maps that may hold more than the program
  reads (`loose_parameters`): those never prove `same`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from verifidx.analysis.computation_maps import ComputationIndexing, computation_indexing
from verifidx.analysis.refinement import (
    Side,
    ValueKeys,
    align,
    find_equal,
    has_loop,
    parameter_dims,
    reads_at,
    var_ranges,
    within,
    witness,
)
from verifidx.clients.pass_region import PassChain, Region, changed_region
from verifidx.core.errors import EvaluationError, UnsupportedError, VerifidxError
from verifidx.core.expr import Const, Expr, RtVar, Size, Variable, is_value_name
from verifidx.core.indexing_map import IndexingMap, SizeVar
from verifidx.core.interval import Interval
from verifidx.hlo.dynamic_dims import instantiate_sizes, leaf_sizes, size_name
from verifidx.hlo.index_values import (
    Piece,
    ValueSymbols,
    feasible,
    spelled_value,
    value_pieces,
)
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.ops.common import exact_reads
from verifidx.hlo.runtime import OperandIndexing, RuntimeVar, clamp_expr, substitute_runtime
from verifidx.hlo.shape import Shape
from verifidx.solve.smt import Verdict, equal, equal_relations, includes, is_empty

SAME, DIFFER, FEWER, UNKNOWN = "same", "differ", "fewer reads", "unknown"

MAX_REGIONS = 64
"""Regions (one piece per map) compared per pair at most; more is `unknown`."""

PROBES = (0, 1, -1, 2, 3, 5, 7, -7, 100, 2**31 - 1, -(2**31))
"""Values of a value symbol where a difference is looked for besides the solver's (clipped
to the symbol's interval): in range, past either end, the type's extremes."""


class SignatureError(VerifidxError, ValueError):
    """The two programs' entry signatures differ: nothing to compare."""


@dataclass(frozen=True)
class Counterexample:
    """Where the two programs read differently: at the value symbols' `values` (and `sizes`),
    output `output` element `point` reads parameter `parameter` element `element` in the
    program `read_by` ("before" or "after"), and not in the other."""

    output: int
    parameter: int
    point: tuple[int, ...]
    element: tuple[int, ...]
    read_by: str
    values: dict[str, int]
    sizes: dict[str, int]

    def to_json(self) -> dict[str, object]:
        return {"output": self.output, "parameter": self.parameter, "point": list(self.point),
                "element": list(self.element), "read_by": self.read_by,
                "values": dict(self.values), "sizes": dict(self.sizes)}

    def describe(self) -> str:
        other = "before" if self.read_by == "after" else "after"
        at = ", ".join(f"{k} = {v}" for k, v in {**self.values, **self.sizes}.items())
        return (f"output {self.output} element {_tuple(self.point)} reads parameter "
                f"{self.parameter} element {_tuple(self.element)} in {self.read_by}, not in "
                f"{other}" + (f", at {at}" if at else ""))


def _tuple(xs: Sequence[int]) -> str:
    return "(" + ", ".join(str(x) for x in xs) + ")"


@dataclass(frozen=True)
class PairVerdict:
    """The verdict on one (output leaf, entry parameter) pair."""

    output: int
    parameter: int
    verdict: str
    reason: str
    counterexample: Counterexample | None = None
    value_equality: bool = False

    def to_json(self) -> dict[str, object]:
        return {"output": self.output, "parameter": self.parameter, "verdict": self.verdict,
                "reason": self.reason, "value_equality": self.value_equality,
                "counterexample": None if self.counterexample is None
                else self.counterexample.to_json()}


@dataclass(frozen=True)
class ProgramValidation:
    """Every pair's verdict, in (output, parameter) order."""

    pairs: tuple[PairVerdict, ...]

    def verdict(self) -> str:
        found = {p.verdict for p in self.pairs}
        for v in (DIFFER, UNKNOWN, FEWER):
            if v in found:
                return v
        return SAME

    def summary(self) -> dict[str, int]:
        return {v: sum(p.verdict == v for p in self.pairs) for v in (SAME, DIFFER, FEWER,
                                                                      UNKNOWN)}

    def to_json(self) -> dict[str, object]:
        return {"verdict": self.verdict(), "pairs": [p.to_json() for p in self.pairs],
                "summary": self.summary()}


Confirm = Callable[[str, str, Counterexample], str]
"""A hook that runs both programs (texts) at a counterexample and says what it saw."""


# -- reading and signatures ------------------------------------------------------------------------


def read_program(program: str | HloModule, source: str = "<string>") -> HloModule:
    """HLO text, StableHLO text (needs jax) or a parsed module."""
    if isinstance(program, HloModule):
        return program
    from verifidx.stablehlo import parse_module

    return parse_module(program, source)


def _leaves(shape: Shape) -> list[tuple[str, tuple[int, ...], tuple[bool, ...]]]:
    return [(s.element_type, s.dims, s.dynamic) for s in shape.leaves()]


def _spelled(leaf: tuple[str, tuple[int, ...], tuple[bool, ...]]) -> str:
    t, dims, dyn = leaf
    return f"{t}[" + ",".join(("<=" if d else "") + str(n) for n, d in zip(dims, dyn)) + "]"


def _leaves_at(shape: Shape, sizes: Sequence[Sequence[int | None]] | None
        ) -> list[tuple[str, tuple[int, ...], tuple[bool, ...]]]:
    """`_leaves`, each dynamic dimension at its size where `sizes` gives one (static then)."""
    out = _leaves(shape)
    if sizes is None:
        return out
    return [(t, tuple(n if v is None else v for n, v in zip(dims, at)),
             tuple(d and v is None for d, v in zip(dyn, at)))
            for (t, dims, dyn), at in zip(out, sizes)]


def bound_sizes(before: HloModule, after: HloModule) -> dict[str, int] | None:
    """The sizes of BEFORE's dynamic dimensions where AFTER is the program compiled at one
    shape (`jax.export`'s StableHLO against the HLO XLA compiled from it): each dynamic
    dimension of BEFORE's parameters that is one size, at AFTER's static size there
    (`stablehlo.refine.argument_sizes`); None when BEFORE has no dynamic parameter or AFTER
    has one (then the shapes are compared as written, for every size)."""
    def dynamic(m: HloModule) -> bool:
        return any(leaf.is_dynamic for q in m.entry.parameters for leaf in q.shape.leaves())

    if not dynamic(before) or dynamic(after):
        return None
    from verifidx.stablehlo.refine import argument_sizes

    return argument_sizes(before, after)


def _sized(inst: HloInstruction, values: Mapping[str, int] | None
           ) -> list[list[int | None]] | None:
    if values is None:
        return None
    out: list[list[int | None]] = []
    for k, leaf in enumerate(inst.shape.leaves()):
        sizes = leaf_sizes(inst, k) or (None,) * leaf.rank
        out.append([None if s is None or not d else s.value(values)
                    for s, d in zip(sizes, leaf.dynamic)])
    return out


def check_signatures(before: HloModule, after: HloModule,
                     sizes: Mapping[str, int] | None = None) -> None:
    """Raises SignatureError naming the first difference of the entry signatures (parameter
    count, each parameter's element types and dimensions, the result's); layouts may differ.
    With `sizes` (`bound_sizes`), BEFORE's dynamic dimensions are compared at them."""
    pa = sorted(before.entry.parameters, key=lambda q: q.parameter_number or 0)
    pb = sorted(after.entry.parameters, key=lambda q: q.parameter_number or 0)
    if len(pa) != len(pb):
        raise SignatureError(f"the entry signatures differ: BEFORE has {len(pa)} parameters, "
                             f"AFTER {len(pb)}")
    for x, y in zip(pa, pb):
        if _leaves_at(x.shape, _sized(x, sizes)) != _leaves(y.shape):
            raise SignatureError(
                f"the entry signatures differ: parameter {x.parameter_number} is "
                f"{' '.join(map(_spelled, _leaves(x.shape)))} in BEFORE, "
                f"{' '.join(map(_spelled, _leaves(y.shape)))} in AFTER")
    at = _sized(before.entry.root, sizes)
    for k, (leaf, values) in enumerate(zip(before.entry.root.shape.leaves(), at or [])):
        lost = [d for d, (dynamic, v) in enumerate(zip(leaf.dynamic, values))
                if dynamic and v is None]
        if lost:  # (not a difference: a size verifidx does not follow)
            given = ", ".join(f"{n} = {v}" for n, v in sorted((sizes or {}).items()))
            raise UnsupportedError(
                f"the size of BEFORE's result {k} in dimension {lost[0]} is not derived at "
                f"{given} (an op whose result size verifidx does not follow there): "
                "comparing it with AFTER is not yet supported")
    ra = _leaves_at(before.entry.root.shape, at)
    rb = _leaves(after.entry.root.shape)
    if ra != rb:
        raise SignatureError(f"the entry signatures differ: the result is "
                             f"({', '.join(map(_spelled, ra))}) in BEFORE, "
                             f"({', '.join(map(_spelled, rb))}) in AFTER")


# -- runtime variables replaced by their values ----------------------------------------------------


@dataclass(frozen=True)
class _Alternative:
    """One piece of a map: the map with followed runtime variables replaced by their values,
    valid where `where` holds."""

    indexing: OperandIndexing
    where: tuple[tuple[Expr, Interval], ...]


def _valued(ind: OperandIndexing, symbols: ValueSymbols) -> list[_Alternative] | None:
    """`ind` with each runtime variable whose value the program computes from value symbols,
    constants and iotas replaced by it (clamped to the variable's bounds, the op's clamp,
    `verifidx.hlo.runtime`), one alternative per combination of the values' pieces; None when
    there would be more than MAX_REGIONS."""
    m = ind.map
    if m.is_undefined or m.sizes or not ind.runtime:
        return [_Alternative(ind, ())]
    found: dict[int, list[Piece]] = {}
    for k, rv in enumerate(ind.runtime):
        p, comp = rv.map, symbols.home.get(id(rv.source))
        if comp is None or p.is_undefined or p.sizes:
            continue
        # a scalar start (no results) holds one value wherever it is read: the variables and
        # constraints its map picked up on the way (an enclosing dynamic-update-slice's
        # window) say where it is read, not what it holds
        if p.results and (p.num_rt_vars or p.num_range_vars or p.constraints or
                          p.num_dims != m.num_dims):
            continue
        if any(set(e.variables()) == {RtVar(k)} for e in m.constraints):
            continue  # its clamp is a constraint, not its bounds: the value would not be it
        known = dict(m.bounds)
        known.update({Size(n): Interval(v, v) for n, v in symbols.bound.items()})
        pieces = value_pieces(rv.source, p.results, comp, [], symbols, known)
        if pieces is not None and symbols.bound:
            fixed: dict[Expr, Expr] = {Size(n): Const(v) for n, v in symbols.bound.items()}
            pieces = [Piece(q.value.substitute(fixed),
                            tuple((e.substitute(fixed), iv) for e, iv in q.where))
                      for q in pieces]
        if pieces is not None:
            found[k] = pieces
    if not found:
        return [_Alternative(ind, ())]
    keys = sorted(found)
    count = 1
    for k in keys:
        count *= len(found[k])
    if count > MAX_REGIONS:
        return None
    out = []
    within_types: dict[Variable, Interval] = {Size(n): iv for n, iv in
                                              symbols.declared.items()}
    for combo in itertools.product(*(found[k] for k in keys)):
        if not feasible(tuple(c for piece in combo for c in piece.where), within_types):
            continue  # two variables read one select: its branches do not mix
        bounds = dict(m.bounds)
        for name, iv in symbols.declared.items():
            bounds[Size(name)] = iv
        values = {k: clamp_expr(piece.value, bounds, m.rt_vars[k].bounds.lo,
                                m.rt_vars[k].bounds.hi) for k, piece in zip(keys, combo)}
        where = tuple(c for piece in combo for c in piece.where)
        out.append(_Alternative(substitute_runtime(_declaring(ind, list(values.values()),
                                                              symbols), values), where))
    return out


def _symbols_of(exprs: Sequence[Expr]) -> set[str]:
    return {v.name for e in exprs for v in e.variables()  # type: ignore[attr-defined]
            if isinstance(v, Size) and is_value_name(v.name)}  # type: ignore[attr-defined]


def _declaring(ind: OperandIndexing, exprs: Sequence[Expr], symbols: ValueSymbols
               ) -> OperandIndexing:
    """`ind` with the value symbols of `exprs` declared as sizes of its map."""
    m = ind.map
    declared = {z.name for z in m.sizes}
    new = tuple(SizeVar(n, symbols.declared[n]) for n in sorted(_symbols_of(exprs) - declared))
    if not new:
        return ind
    out = IndexingMap(m.results, m.dims, m.range_vars, m.rt_vars, {}, m.is_known_empty,
                      sizes=tuple(sorted((*m.sizes, *new), key=lambda z: z.name)))
    for e, iv in m.constraints.items():
        out = out.add_constraint(e, iv)
    return OperandIndexing(out, ind.runtime, ind.replica, ind.notes)


def _in_region(ind: OperandIndexing, where: Sequence[tuple[Expr, Interval]],
               symbols: ValueSymbols) -> OperandIndexing:
    """`ind` restricted to the region `where`, declaring the value symbols it names."""
    if ind.map.is_undefined or not where:
        return ind
    ind = _declaring(ind, [e for e, _ in where], symbols)
    out = ind.map
    for e, iv in where:
        out = out.add_constraint(e, iv)
    return OperandIndexing(out, ind.runtime, ind.replica, ind.notes)


# -- value equality: pure data movement ----------------------------------------------------------

DATA_MOVEMENT = frozenset({
    "parameter", "broadcast", "transpose", "reverse", "slice", "concatenate", "reshape",
    "bitcast", "copy", "get-tuple-element", "tuple", "dynamic-slice", "gather", "fusion",
    "call", "opt-barrier", "copy-start", "copy-done", "dynamic-update-slice"})
"""Ops whose output element is a copy of one element of a data operand (the start operands
of dynamic-slice, dynamic-update-slice and gather are indices, not data). Pad is not here:
its maps read more than each element copies (`hlo.indexing.OVER_APPROXIMATIONS`); nor is a
dynamic-update-slice of dynamic shape (its maps are XLA's, larger than the reads), which
`loose_parameters` keeps from ever being `same`."""

_INDEX_OPERANDS = {"dynamic-slice": 1, "gather": 1, "dynamic-update-slice": 2}
"""Opcode -> the number of leading data operands (the rest are indices)."""


_Sources = tuple[int, int]
"""(reached, computed): bit sets of the parameter numbers of the computation that reach the
value, and of those reaching it on some path where an op computes rather than moves data
(reached and not computed: pure data movement on every path)."""


def _sources(comp: HloComputation, module: HloModule,
             memo: dict[int, dict[str, _Sources]]) -> dict[str, _Sources]:
    """Each instruction's `_Sources`, in one pass over the computation in definition order
    (a fusion or call through its body's root, found once per body in `memo`)."""
    found = memo.get(id(comp))
    if found is not None:
        return found
    out: dict[str, _Sources] = {}
    for inst in comp.instructions:
        reached = computed = 0
        if inst.opcode == "parameter" and inst.parameter_number is not None:
            reached = 1 << inst.parameter_number
        elif inst.opcode in ("fusion", "call") and inst.called_computations:
            body = module.computation(inst.called_computations[0])
            root_reached, root_computed = _sources(body, module, memo)[body.root.name]
            for k, name in enumerate(inst.operands):
                if root_reached >> k & 1:
                    r, c = out[name]
                    reached |= r
                    computed |= c | (r if root_computed >> k & 1 else 0)
        else:
            moves = inst.opcode in DATA_MOVEMENT
            for name in inst.operands[:_INDEX_OPERANDS.get(inst.opcode, len(inst.operands))]:
                r, c = out[name]
                reached |= r
                computed |= c if moves else r
        out[inst.name] = reached, computed
    memo[id(comp)] = out
    return out


def _pure_copy(module: HloModule, output: int, parameter: int,
               memo: dict[int, dict[str, _Sources]]) -> bool:
    """Output leaf `output` is data movement of entry parameter `parameter` only (`memo`: one
    per module, shared by its pairs)."""
    entry = module.entry
    root = entry.root
    leaf = root
    if root.shape.is_tuple:
        if root.opcode != "tuple" or output >= len(root.operands) or \
                any(entry.instruction(n).shape.is_tuple for n in root.operands):
            return False
        leaf = entry.instruction(root.operands[output])
    reached, computed = _sources(entry, module, memo)[leaf.name]
    return bool((reached & ~computed) >> parameter & 1)


# -- maps larger than the reads ------------------------------------------------------------------

_LARGER: dict[str, frozenset[int] | None] = {
    "pad": frozenset({1}), "dynamic-update-slice": frozenset({0, 1}),
    "convolution": None, "scatter": None, "select-and-scatter": None, "sort": None,
    "conditional": None, "scan": None, "rng-bit-generator": None}
"""Opcode -> the operands whose output-to-input maps hold more than the op reads
(`verifidx.hlo.indexing.OVER_APPROXIMATIONS`); None: any operand. A dynamic-update-slice
of static shape is exact here: the maps are derived under `hlo.ops.common.exact_reads`."""


def _exact_update(comp: HloComputation, inst: HloInstruction) -> bool:
    """A dynamic-update-slice whose maps `exact_reads` makes exact: every shape static."""
    return inst.opcode == "dynamic-update-slice" and not inst.shape.is_dynamic and not any(
        comp.instruction(n).shape.is_dynamic for n in inst.operands)


def loose_parameters(module: HloModule) -> set[int] | None:
    """The entry parameters whose maps may hold more than the program reads: those that
    reach an operand `_LARGER` names (through any op, calls followed to their call sites);
    None (every parameter) when the module has a while loop (`refinement.has_loop`)."""
    if has_loop(module):
        return None
    home: dict[int, HloComputation] = {}
    sites: dict[str, list[tuple[HloComputation, HloInstruction]]] = {}
    work: list[tuple[HloComputation, HloInstruction]] = []
    for comp in module.computations.values():
        for inst in comp.instructions:
            home[id(inst)] = comp
            for name in inst.called_computations:
                sites.setdefault(name, []).append((comp, inst))
            if inst.opcode not in _LARGER or _exact_update(comp, inst):
                continue
            slots = _LARGER[inst.opcode]
            for k, operand in enumerate(inst.operands):
                if slots is None or k in slots:
                    work.append((comp, comp.instruction(operand)))
    out: set[int] = set()
    seen: set[int] = set()
    while work:
        comp, inst = work.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst.opcode == "parameter" and inst.parameter_number is not None:
            if comp is module.entry:
                out.add(inst.parameter_number)
            for caller, call in sites.get(comp.name, []):
                if inst.parameter_number < len(call.operands):
                    work.append((caller, caller.instruction(call.operands[inst.parameter_number])))
            continue
        work.extend((comp, comp.instruction(n)) for n in inst.operands)
    return out


# -- one pair --------------------------------------------------------------------------------------


def _find_equal(x: Side, ys: Sequence[Side], timeout_ms: int
                ) -> tuple[Verdict, list[dict[str, int]]]:
    """The first proof that `x` equals one of `ys` (runtime variables aligned by what they
    read, each map simplified), else the most telling verdict, with the solver's points of
    difference."""
    def compare(a: Side, b: Side) -> Verdict:
        f, g, _unpaired = align(a, b)
        return equal(f.simplify(), g.simplify(), timeout_ms)

    return find_equal(x, ys, compare)


def _element(mine: Sequence[IndexingMap], theirs: Sequence[IndexingMap],
             point: tuple[int, ...]) -> tuple[tuple[int, ...], bool] | None:
    """An element some map of `mine` reads at `point` which no map of `theirs` reads for any
    value of their runtime variables (what `witness` found exists), and whether it is read for
    every value of `mine`'s runtime variables (else it is the one read at their first values:
    each value reads one such element, not always the same)."""
    may: set[tuple[int, ...]] = set()
    for m in theirs:
        for rts in itertools.product(*var_ranges(m.rt_vars)):
            may |= reads_at(m, point, rts)
    for m in mine:
        outside = [reads_at(m, point, rts) - may
                   for rts in itertools.product(*var_ranges(m.rt_vars))]
        if not outside or not all(outside):
            continue
        common = set.intersection(*outside)
        return (min(common), True) if common else (min(outside[0]), False)
    return None


def _assignments(names: Sequence[str], symbols: ValueSymbols,
                 seen: Sequence[Mapping[str, int] | None]) -> list[dict[str, int]]:
    """Values of the value symbols where a difference is looked for: each symbol at each of
    PROBES (the others at 0), then the solver's points, then all symbols at once at each
    probe; clipped to their intervals. Small values first, so a counterexample reads well."""
    out: list[dict[str, int]] = []

    def clip(n: str, v: int) -> int:
        iv = symbols.declared[n]
        return min(max(v, iv.lo), iv.hi)

    def put(at: dict[str, int]) -> None:
        if at not in out:
            out.append(at)

    for v in PROBES:
        for n in names:
            put({k: clip(k, v if k == n else 0) for k in names})
    for c in seen:
        if c is not None and all(n in c for n in names):
            put({n: clip(n, c[n]) for n in names})
    for v in PROBES:
        put({k: clip(k, v) for k in names})
    return out


def _at(m: IndexingMap, values: Mapping[str, int]) -> IndexingMap:
    given = {z.name: values[z.name] for z in m.sizes if z.name in values}
    return m.with_sizes(given) if given else m


@dataclass
class _Region:
    before: list[Side]
    after: list[Side]


def _compare_region(r: _Region, loose: Mapping[str, bool], symbols: ValueSymbols,
                    timeout_ms: int) -> tuple[str, str, tuple[dict[str, int], tuple[int, ...],
                                                          tuple[int, ...], str] | None]:
    """(verdict, reason, (values, point, element, read_by) for a difference) in one region."""
    a, b = r.before, r.after
    verdict: Verdict | None = None
    points: list[dict[str, int]] = []
    for xs, ys in ((a, b), (b, a)):
        for x in xs:
            v, seen = _find_equal(x, ys, timeout_ms)
            points.extend(seen)
            if not v.holds:
                verdict = v
                break
        if verdict is not None:
            break
    if verdict is None:
        larger = [name for name, v in loose.items() if v]
        if larger:  # equal maps, but maps that may hold more than the reads
            return UNKNOWN, ("the maps are equal, but " + " and ".join(larger) + "'s may hold "
                             "more than it reads (a loop, or an op whose maps over-approximate: "
                             "pad, dynamic-update-slice, ...): not decided"), None
        return SAME, "equal for every value of the value symbols", None
    ma, mb = [s.indexing.map for s in a], [s.indexing.map for s in b]
    if not any(m.num_rt_vars or m.sizes for m in (*ma, *mb)):
        union = equal_relations(ma, mb, timeout_ms)
        if union.holds and not any(loose.values()):
            return SAME, "equal as unions of maps", None
        if union.counterexample is not None:
            points.append(union.counterexample)
    names = sorted(_symbols_of([e for m in (*ma, *mb) for e in (*m.results, *m.constraints)]))
    others = {z.name for m in (*ma, *mb) for z in m.sizes} - set(names)
    if others:
        return UNKNOWN, ("the maps differ for some values of sizes (" + ", ".join(sorted(others))
                         + "): not decided"), None
    for values in _assignments(names, symbols, points) if names else [{}]:
        try:
            at_a, at_b = [_at(m, values) for m in ma], [_at(m, values) for m in mb]
        except (ValueError, EvaluationError):
            continue
        found = witness(at_a, at_b, [p for p in points if all(k in p for k in values)] + [
            {k: v for k, v in p.items() if k not in values} for p in points])
        if found is None:
            continue
        point_named, which = found
        point = tuple(point_named[f"d{i}"] for i in range(len(point_named)))
        mine, theirs = (at_a, at_b) if which == "first" else (at_b, at_a)
        read_by = "before" if which == "first" else "after"
        if loose[read_by]:
            return UNKNOWN, (f"{read_by}'s maps hold an element the other's do not, but they may "
                             f"hold more than it reads (a loop, or an op whose maps "
                             f"over-approximate): not decided"), None
        found_element = _element(mine, theirs, point)
        if found_element is None:
            continue
        element, every = found_element
        why = f"{read_by} reads an element the other does not, whatever values the runtime " \
              f"variables take"
        if not every:
            why += " (which element depends on them: this one at their lowest values)"
        return DIFFER, why, (values, point, element, read_by)
    if verdict.holds is None:
        return UNKNOWN, verdict.message or "the solver did not decide", None
    return UNKNOWN, ("no map of the other program equals it, and no point shows a difference: "
                     "not decided"), None


_FEWER_NOTE = " (legal only where the value does not depend on the elements no longer read)"


def _fewer_reads(before: Sequence[Side], after: Sequence[Side], timeout_ms: int,
                 loose: bool) -> str | None:
    """Why AFTER reads a subset of what BEFORE reads, or None when that is not shown (a
    subset of BEFORE's maps shows nothing where they hold more than it reads: `loose`)."""
    if all(is_empty(s.indexing.map, timeout_ms).holds is True for s in after):
        return "after reads no element of the parameter for this output"
    if loose:
        return None
    ma, mb = [s.indexing.map for s in before], [s.indexing.map for s in after]
    if not any(m.num_rt_vars for m in (*ma, *mb)) and \
            all(any(includes(m, x, timeout_ms).holds is True for x in ma) for m in mb):
        return "after reads a proper subset of the elements before reads"
    return None


def _regions(groups: Sequence[Sequence[_Alternative]], symbols: ValueSymbols
             ) -> list[tuple[_Alternative, ...]] | None:
    """One alternative per map, every combination whose constraints intervals do not show
    contradictory (the same select read by two maps takes one branch); None past
    MAX_REGIONS."""
    bounds: dict[Variable, Interval] = {Size(n): iv for n, iv in symbols.declared.items()}
    out: list[tuple[_Alternative, ...]] = [()]
    for g in groups:
        grown = []
        for combo in out:
            for alt in g:
                where = tuple(c for a in (*combo, alt) for c in a.where)
                if not alt.where or feasible(where, bounds):
                    grown.append((*combo, alt))
        if len(grown) > MAX_REGIONS:
            return None
        out = grown
    return out


def _magnitude(cx: Counterexample) -> int:
    return max((abs(v) for v in cx.values.values()), default=0)


def _pair(o: int, p: int, before: Sequence[OperandIndexing], after: Sequence[OperandIndexing],
          sides: Mapping[str, tuple[ValueKeys, ValueSymbols, tuple[int, ...] | None]],
          loose: Mapping[str, bool], timeout_ms: int) -> tuple[str, str,
                                                               Counterexample | None]:
    groups: list[list[_Alternative]] = []
    owners: list[str] = []
    for name, maps in (("before", before), ("after", after)):
        _keys, symbols, dims = sides[name]
        for m in maps:
            if m.is_undefined:
                return UNKNOWN, f"unknown indexing in {name}: nothing to compare", None
            alts = _valued(within(m, dims), symbols)
            if alts is None:
                return UNKNOWN, f"more than {MAX_REGIONS} pieces in {name}'s index values", None
            groups.append(alts)
            owners.append(name)
    combos = _regions(groups, sides["before"][1])
    if combos is None:
        return UNKNOWN, f"more than {MAX_REGIONS} regions of the index values' pieces", None
    verdicts: list[tuple[str, str]] = []
    best: tuple[str, Counterexample] | None = None
    for combo in combos:
        where = tuple(c for alt in combo for c in alt.where)
        region = _Region([], [])
        for alt, name in zip(combo, owners):
            keys, symbols, _dims = sides[name]
            s = Side(_in_region(alt.indexing, where, symbols), keys)
            (region.before if name == "before" else region.after).append(s)
        verdict, reason, found = _compare_region(region, loose, sides["before"][1], timeout_ms)
        if verdict == DIFFER and found is not None and found[3] == "before":
            fewer = _fewer_reads(region.before, region.after, timeout_ms, loose["before"])
            if fewer is not None:  # what after reads, before reads: the difference is less
                verdict, reason, found = FEWER, fewer + _FEWER_NOTE, None
        if verdict == DIFFER and found is not None:
            values, point, element, read_by = found
            cx = Counterexample(o, p, point, element, read_by,
                                {spelled_value(k): v for k, v in values.items()}, {})
            if best is None or _magnitude(cx) < _magnitude(best[1]):
                best = (reason, cx)  # the region with the smallest values reads best
            continue
        if verdict != SAME:
            fewer = _fewer_reads(region.before, region.after, timeout_ms, loose["before"])
            if fewer is not None:
                verdict, reason = FEWER, fewer + _FEWER_NOTE
        verdicts.append((verdict, reason))
    if best is not None:
        return DIFFER, best[0], best[1]
    for v in (UNKNOWN, FEWER):
        hit = [r for x, r in verdicts if x == v]
        if hit:
            return v, hit[0], None
    many = len(verdicts) > 1
    return SAME, verdicts[0][1] + (f" (in each of {len(verdicts)} regions of the index "
                                   "values)" if many else ""), None


def validate_programs(before: str | HloModule, after: str | HloModule, *, timeout_ms: int = 2000,
                      rlimit: int | None = None, chain: PassChain | None = None
                      ) -> ProgramValidation:
    """Compare BEFORE and AFTER pair by pair (module docstring). BEFORE may be HLO or
    StableHLO text, AFTER HLO text; their entry signatures must agree (`SignatureError`).
    `timeout_ms` is Z3's budget per query, in deterministic resource units
    (`smt_terms.RLIMIT_PER_MS` per ms); `rlimit`, when given, is that budget in units (verdicts
    never depend on the wall clock). `chain`, one per sequence of passes where each AFTER
    is the next BEFORE (`validate_dump` makes one), shares what the pairs have in common."""
    from verifidx.solve.smt_terms import RLIMIT_PER_MS

    if rlimit is not None:
        timeout_ms = max(1, rlimit // RLIMIT_PER_MS)
    a, b = read_program(before, "BEFORE"), read_program(after, "AFTER")
    sizes = bound_sizes(a, b)
    check_signatures(a, b, sizes)
    return _validate(a, b, timeout_ms, sizes, chain)


_RECENT: list[tuple[HloModule, dict[str, Any]]] = []
"""What was found of the last modules validated (their entry maps, reaches and pure copies),
with the modules (kept alive, so an id is never reused): pass by pass, each snapshot is the
AFTER of one pair and the BEFORE of the next."""


def _recent(module: HloModule, remember: bool = True) -> dict[str, Any]:
    """`module`'s entry of `_RECENT` (a new one, not kept, unless `remember`)."""
    for m, found in _RECENT:
        if m is module:
            return found
    facts: dict[str, Any] = {}
    if remember:
        _RECENT.append((module, facts))
        del _RECENT[:-2]
    return facts


def _entry_indexing(module: HloModule, remember: bool = True) -> ComputationIndexing:
    facts = _recent(module, remember)
    if "maps" not in facts:
        with exact_reads():
            facts["maps"] = computation_indexing(module, module.entry, "out2in")
    return cast(ComputationIndexing, facts["maps"])


def _validate(a: HloModule, b: HloModule, timeout_ms: int,
              sizes: Mapping[str, int] | None = None, chain: PassChain | None = None
              ) -> ProgramValidation:
    if sizes is None:
        chain = chain or PassChain()
        region = changed_region(a, b, chain)
        if isinstance(region, Region):
            found = _by_region(a, b, region, timeout_ms, chain)
            if found is not None:
                return found
    return _validate_whole(a, b, timeout_ms, sizes=sizes)


def _instantiated(ind: OperandIndexing, sizes: Mapping[str, int]) -> OperandIndexing:
    """`ind` and its runtime variables' maps at `sizes`."""
    out = instantiate_sizes(ind, sizes)
    if not out.map.is_undefined:  # (the sized clamps of starts become their bounds)
        out = OperandIndexing(out.map.simplify(), out.runtime, out.replica, out.notes)
    runtime = tuple(RuntimeVar(rv.source, instantiate_sizes(OperandIndexing(rv.map), sizes).map)
                    for rv in out.runtime)
    return OperandIndexing(out.map, runtime, out.replica, out.notes)


def _reaches(module: HloModule) -> dict[int, set[int]] | None:
    """Output leaf -> the entry parameters some path reaches it from (any operand, calls
    entered wholesale); None for a tuple root that is not a tuple op of arrays."""
    entry = module.entry
    seen: dict[str, int] = {}  # bit sets of parameter numbers
    for inst in entry.instructions:
        here = 0
        if inst.opcode == "parameter" and inst.parameter_number is not None:
            here = 1 << inst.parameter_number
        for n in inst.operands:
            here |= seen[n]
        seen[inst.name] = here

    def numbers(bits: int) -> set[int]:
        return {k for k in range(bits.bit_length()) if bits >> k & 1}

    root = entry.root
    if not root.shape.is_tuple:
        return {0: numbers(seen[root.name])}
    if root.opcode != "tuple" or any(entry.instruction(n).shape.is_tuple for n in root.operands):
        return None
    return {k: numbers(seen[n]) for k, n in enumerate(root.operands)}


def _facts(module: HloModule) -> dict[str, Any]:
    """`module`'s reaches and pure-copy memo, kept with its entry maps (`_recent`)."""
    facts = _recent(module)
    if "reaches" not in facts:
        facts["reaches"], facts["copies"] = _reaches(module), {}
    return facts


def _by_region(a: HloModule, b: HloModule, region: Region, timeout_ms: int, chain: PassChain
               ) -> ProgramValidation | None:
    """`same` for every pair when the changed region is `same` for every pair of its own
    (`verifidx.clients.pass_region`); None otherwise (then the whole modules decide)."""
    facts_a, facts_b = _facts(a), _facts(b)
    ra, rb = facts_a["reaches"], facts_b["reaches"]
    if ra is None or ra != rb:
        return None
    if region.before is None or region.after is None:
        why = ("the results are the same subgraph in both (the same ops, shapes, layouts and "
               "attributes up to names and metadata)")
    else:
        proven, again = 0, 0
        for part in region.parts:
            key = (part.key, timeout_ms)
            if key in chain.verdicts:
                again += 1
            else:
                inner = _validate_whole(part.before, part.after, timeout_ms, remember=False)
                chain.verdicts[key] = inner.verdict() == SAME, len(inner.pairs)
            same, n = chain.verdicts[key]
            if not same:
                return None
            proven += n
        repeat = (f"; {again} of its {len(region.parts)} parts are parts proven before up to "
                  "names" if again else "")
        why = (f"the pass changed {region.size[0]} instructions into {region.size[1]}; they "
               f"read the same elements of the values they take in for every value of the "
               f"value symbols ({proven} pairs proven{repeat}), the rest is the same ops on "
               f"the same operands, and no changed value chooses what an op reads")
    copies_a: dict[int, dict[str, _Sources]] = facts_a["copies"]
    copies_b: dict[int, dict[str, _Sources]] = facts_b["copies"]
    pairs = []
    for o in sorted(ra):
        for p in sorted(ra[o]):
            copy = _pure_copy(a, o, p, copies_a) and _pure_copy(b, o, p, copies_b)
            reason = why + ("; both are pure data movement: the values are equal" if copy
                            else "")
            pairs.append(PairVerdict(o, p, SAME, reason, None, copy))
    return ProgramValidation(tuple(pairs))


def _validate_whole(a: HloModule, b: HloModule, timeout_ms: int, remember: bool = True,
                    sizes: Mapping[str, int] | None = None) -> ProgramValidation:
    ia, ib = _entry_indexing(a, remember), _entry_indexing(b, remember)
    if sizes:  # BEFORE at the shape AFTER was compiled for
        ia = replace(ia, maps={k: tuple(_instantiated(m, sizes) for m in ms)
                               for k, ms in ia.maps.items()})
    names: dict[Hashable, int] = {}
    sides = {"before": (ValueKeys(a, {}, names), ValueSymbols(a),
                        parameter_dims(a, sizes or {})),
             "after": (ValueKeys(b, {}, names), ValueSymbols(b), parameter_dims(b, {}))}
    # one table of symbols' intervals for both: the same parameter, the same type (signatures)
    sides["after"][1].declared = sides["before"][1].declared
    sides["before"][1].bound = {size_name(k): v for k, v in (sizes or {}).items()}
    larger = {"before": loose_parameters(a), "after": loose_parameters(b)}
    keys = sorted({(o, p) for o, p, _l in ia.maps} | {(o, p) for o, p, _l in ib.maps})
    pairs = []
    copies_a: dict[int, dict[str, _Sources]] = {}
    copies_b: dict[int, dict[str, _Sources]] = {}
    for o, p in keys:
        dims = {n: (k, s, d.get(p)) for n, (k, s, d) in sides.items()}
        loose = {n: found is None or p in found for n, found in larger.items()}
        verdict, reason, cx = _pair(o, p, ia.maps_for(o, p), ib.maps_for(o, p),
                                    cast("Mapping[str, tuple[ValueKeys, ValueSymbols, "
                                         "tuple[int, ...] | None]]", dims), loose, timeout_ms)
        copy = verdict == SAME and _pure_copy(a, o, p, copies_a) and \
            _pure_copy(b, o, p, copies_b)
        if copy:
            reason += "; both are pure data movement: the values are equal"
        pairs.append(PairVerdict(o, p, verdict, reason, cx, copy))
    return ProgramValidation(tuple(pairs))


__all__ = ["DIFFER", "FEWER", "SAME", "UNKNOWN", "Counterexample", "PairVerdict",
           "ProgramValidation", "SignatureError", "bound_sizes", "check_signatures",
           "read_program",
           "validate_programs"]
