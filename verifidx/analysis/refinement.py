"""Refinement, proven: the parametric maps of a dynamic program, instantiated at the sizes
StableHLO's refinement passes chose (`verifidx.stablehlo.refine`), against the maps of the
refined static program.

For each (output, parameter) of the entry computation, each map of one side must be proven equal
(`vx.equal`, Z3) to a map of the other, or, without runtime variables, the union of one side's
maps to the other's (pieces cut differently). An unknown answer, or unknown indexing on either
side, is never reported as a proof.

Sizes of dynamic dimensions are sizes of the maps (docs/semantics.md, Sizes), instantiated by
name at the refined values; a size the refinement does not fix (one the program computes) stays,
quantified universally, and never refutes. The two programs number their runtime variables (data
read at run time) independently, so the maps are compared as relations over one list of runtime
variables, not position by position (`align`): a variable of one map is the same variable as one
of the other only when both read the same value (same source value, the same element of it, the
same interval); every other variable is quantified on its own. Equality proven so holds whatever
values the unpaired variables take.

A runtime variable holds one value at each point, which the maps do not know: a difference
the solver finds at some values of them may be at values the program never computes. So a
difference is reported only with a witness that needs no value (`witness`): an output point
where one program reads, for every value of its runtime variables, an element the other reads
for none of its own; found by evaluating the maps, one point at a time. Without one the answer
is unknown, naming the variables without counterpart.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from verifidx.analysis.computation_maps import computation_indexing
from verifidx.core.errors import EvaluationError
from verifidx.core.expr import Add, Const, Expr, RtVar, Size, Symbol
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval, range_of
from verifidx.hlo.dynamic_dims import (
    SIZES_ATTRIBUTE,
    VALUE_ATTRIBUTE,
    SymSize,
    instantiate_sizes,
    leaf_sizes,
)
from verifidx.hlo.index_values import call_graph, value_at
from verifidx.hlo.module import HloInstruction, HloModule
from verifidx.hlo.runtime import OperandIndexing, fold_point_runtime, substitute_runtime
from verifidx.solve.smt import Verdict, equal, equal_relations
from verifidx.stablehlo.convert import LITERAL_KEPT


@dataclass(frozen=True)
class Check:
    """One (output, parameter) pair of the entry computation: proven equal or not."""

    output: int
    parameter: int
    holds: bool | None
    message: str = ""
    counterexample: Mapping[str, int] | None = None


_NOT_A_FUNCTION_OF_OPERANDS = frozenset({
    "rng", "rng-bit-generator", "rng-get-and-update-state", "custom-call", "infeed", "recv",
    "recv-done", "stablehlo.rng", "stablehlo.rng_bit_generator"})
"""Ops whose value is not determined by their operands and attributes: never paired."""


class ValueKeys:
    """Names the value an instruction computes by its structure, so that an instruction of the
    dynamic program and one of the refined program can be recognised as the same value: opcode,
    element type, sizes (symbolic sizes instantiated), attributes, literal and the keys of its
    operands; a parameter of the entry by its number; a parameter of another computation by the
    operand of its only call site (None with several: the value depends on the call). Names of
    instructions and computations do not enter (the two programs number them differently)."""

    def __init__(self, module: HloModule, values: Mapping[str, int],
                 names: dict[Hashable, int]) -> None:
        self.module = module
        self.values = values
        self.names = names  # shared by the two programs: one number per structure
        self.home, self.callers = call_graph(module)
        self.memo: dict[int, int | None] = {}

    def _sizes(self, inst: HloInstruction) -> Hashable | None:
        """Element type and sizes of each leaf, symbolic sizes at the refined values."""
        out: list[tuple[str | int, ...]] = []
        for k, leaf in enumerate(inst.shape.leaves()):
            dims = list(leaf.dims)
            for d, s in enumerate(leaf_sizes(inst, k) or ()):
                if s is not None:
                    value = s.value(self.values)
                    if value is None:
                        return None  # a size the refinement does not fix
                    dims[d] = value
            out.append((leaf.element_type, *dims))
        return tuple(out)

    def _integer(self, inst: HloInstruction) -> int | None:
        """A scalar integer's value where it is known: a constant, or a size the reader
        followed (`VALUE_ATTRIBUTE`) at the refined sizes."""
        value = inst.attributes.get(VALUE_ATTRIBUTE)
        if isinstance(value, SymSize):
            return value.value(self.values)
        v = inst.literal_value
        if inst.opcode == "constant" and inst.shape.rank == 0 and isinstance(v, int) and \
                not isinstance(v, bool):
            return v
        return None

    def key(self, inst: HloInstruction) -> int | None:
        """The value's structural name (a number), or None when the structure does not tell."""
        if id(inst) in self.memo:
            return self.memo[id(inst)]
        self.memo[id(inst)] = None  # a cycle (never in valid HLO) names nothing
        found = self._key(inst)
        number = None if found is None else self.names.setdefault(found, len(self.names))
        self.memo[id(inst)] = number
        return number

    def _key(self, inst: HloInstruction) -> Hashable | None:
        comp = self.home.get(id(inst))
        sizes = self._sizes(inst)
        if comp is None or sizes is None or inst.opcode in _NOT_A_FUNCTION_OF_OPERANDS:
            return None
        if inst.literal is not None and len(inst.literal) >= LITERAL_KEPT:
            return None  # the StableHLO reader keeps only the start of a large constant
        known = self._integer(inst)
        if known is not None:  # `b - 1` at b = 5 is the constant 4 of the refined program
            return ("integer", sizes, known)
        if inst.opcode == "parameter":
            if comp is self.module.entry:
                return ("parameter", inst.parameter_number, sizes)
            sites = self.callers.get(comp.name, [])
            if len(sites) != 1 or inst.parameter_number is None:
                return None
            caller, call = sites[0]
            if inst.parameter_number >= len(call.operands):
                return None
            outer = self.key(caller.instruction(call.operands[inst.parameter_number]))
            return None if outer is None else ("operand", outer)
        operands: list[Hashable] = []
        for name in inst.operands:
            k = self.key(comp.instruction(name))
            if k is None:
                return None
            operands.append(k)
        attributes: list[Hashable] = []
        called = set(inst.called_computations)
        for name, value in sorted(inst.attributes.items()):
            if name in (SIZES_ATTRIBUTE, VALUE_ATTRIBUTE):
                continue
            if isinstance(value, str) and value in called:
                root = self.key(self.module.computation(value).root)
                if root is None:
                    return None
                attributes.append((name, root))
            else:
                attributes.append((name, repr(value)))
        return (inst.opcode, sizes, tuple(attributes), inst.literal, tuple(operands))


@dataclass(frozen=True)
class Side:
    """One map with what each of its runtime variables reads."""

    indexing: OperandIndexing
    keys: ValueKeys

    def label(self, k: int) -> str:
        return self.indexing.runtime[k].label


def _same_value(a: Side, i: int, b: Side, j: int) -> bool:
    """Runtime variable i of `a` and j of `b` always hold the same value: both are data read
    from values with the same structural name, at the same element, with the same interval."""
    ra, rb = a.indexing.runtime[i], b.indexing.runtime[j]
    if _clamp_of(a.indexing.map, i) != _clamp_of(b.indexing.map, j):
        return False
    ka, kb = a.keys.key(ra.source), b.keys.key(rb.source)
    if ka is None or ka != kb:
        return False
    pa, pb = _index_function(ra.map, rb.map), _index_function(rb.map, ra.map)
    return pa is not None and pb is not None and equal(pa, pb).holds is True


def _clamp_of(m: IndexingMap, k: int) -> Interval:
    """The interval runtime variable `k` is clamped to: its bounds, cut by constraints
    `rt<k> + c in [lo, hi]` (a start clamped to a size, `rt - (N - s) <= 0`, at a size)."""
    out = m.rt_vars[k].bounds
    for e, iv in m.constraints.items():
        found = _shifted(e, RtVar(k))
        if found is not None:
            out = out.intersect(Interval(iv.lo - found, iv.hi - found))
    return out


def _size_clamped(m: IndexingMap) -> set[int]:
    """The runtime variables of `m` (with its sizes) that a constraint over sizes alone clamps
    (`rt - (N - s) in [.., 0]`, `verifidx.hlo.sized_ops`): their bounds at given sizes are cut
    by it."""
    out = set()
    for e in m.constraints:
        found = e.variables()
        rts = [v for v in found if isinstance(v, RtVar)]
        if len(rts) == 1 and len(found) > 1 and all(isinstance(v, (RtVar, Size)) for v in found):
            out.add(rts[0].index)
    return out


def _clamped(ind: OperandIndexing, values: Mapping[str, int]) -> OperandIndexing:
    """`ind` at the sizes `values`, each runtime variable clamped to a size taking the bounds
    of its clamp there (`_clamp_of`), one that can take one value only replaced by it, as the
    refined program's maps have them."""
    clamped = set() if ind.map.is_undefined else _size_clamped(ind.map)
    ind = instantiate_sizes(ind, values)
    m = ind.map
    if m.is_undefined or not clamped:
        return ind
    rts = tuple(Var(_clamp_of(m, k)) if k in clamped else m.rt_vars[k]
                for k in range(m.num_rt_vars))
    return fold_point_runtime(OperandIndexing(m.replace(rt_vars=rts), ind.runtime, ind.replica,
                                              ind.notes))


def _computed(ind: OperandIndexing, keys: ValueKeys, values: Mapping[str, int]
              ) -> OperandIndexing:
    """`ind` with each runtime variable whose value the program computes from iotas, constants
    and sizes (`verifidx.hlo.index_values`, sizes at `values`) replaced by that value, where the
    solver shows it inside the variable's interval at every point: the refined `x[::-1]` keeps
    its gather index `4 - d0` as data; folded, its map is the parametric one at b = 5. Inside
    the interval the op's clamp does nothing (`verifidx.hlo.runtime`), so the map is unchanged
    at the program's values."""
    from verifidx.solve.smt import is_empty

    m = ind.map
    if m.is_undefined or m.sizes or not ind.runtime:
        return ind
    known: dict[int, Expr] = {}
    sizes: dict[Expr, Expr] = {Size(n): Const(v) for n, v in values.items()}
    for k, rv in enumerate(ind.runtime):
        p, comp = rv.map, keys.home.get(id(rv.source))
        if comp is None or p.is_undefined or p.num_rt_vars or p.num_range_vars or \
                p.constraints or p.num_dims != m.num_dims:
            continue
        value = value_at(rv.source, p.results, comp, used=[])
        if value is None:
            continue
        value = value.substitute(sizes)
        if any(isinstance(v, (Size, RtVar, Symbol)) for v in value.variables()):
            continue
        iv = m.rt_vars[k].bounds
        r = range_of(value, m.bounds)
        if r.lo < -(2**31) or r.hi >= 2**31:
            continue  # the program's arithmetic may wrap (`verifidx.hlo.index_values`)
        below = m.add_constraint(value, (min(r.lo, iv.lo - 1), iv.lo - 1))
        above = m.add_constraint(value, (iv.hi + 1, max(r.hi, iv.hi + 1)))
        if (r.lo >= iv.lo or is_empty(below).holds is True) and \
                (r.hi <= iv.hi or is_empty(above).holds is True):
            known[k] = value
    return substitute_runtime(ind, known)


def _shifted(e: Expr, v: RtVar) -> int | None:
    """c where `e` is `v + c` (or `v`), else None."""
    if e == v:
        return 0
    if isinstance(e, Add) and len(e.terms) == 2:
        x, c = e.terms
        if isinstance(c, Const) and x == v:
            return c.value
        if isinstance(x, Const) and c == v:
            return x.value
    return None


def _index_function(p: IndexingMap, other: IndexingMap) -> IndexingMap | None:
    """Provenance map `p` as a function on the box both maps' dimensions share, without
    constraints: where it equals the other side's, both variables read the same element at
    every point the two maps have in common (the box holds them all; a superset only makes
    the question harder). None when the element read depends on range or runtime variables."""
    if p.is_undefined or other.is_undefined or p.num_range_vars or p.num_dims != other.num_dims \
            or any(isinstance(v, RtVar) for r in p.results for v in r.variables()):
        return None
    dims = tuple(Var(a.bounds.intersect(b.bounds)) for a, b in zip(p.dims, other.dims))
    if any(d.bounds.is_empty for d in dims):
        return None
    return IndexingMap(p.results, dims)


def _renumbered(m: IndexingMap, where: Sequence[int], rt_vars: tuple[Var, ...]) -> IndexingMap:
    """`m` over the runtime variables `rt_vars`, its variable k moved to position where[k]."""
    subst: dict[Expr, Expr] = {RtVar(k): RtVar(p) for k, p in enumerate(where)}
    out = IndexingMap(tuple(r.substitute(subst) for r in m.results), m.dims, m.range_vars,
                      rt_vars, {}, m.is_known_empty, sizes=m.sizes)
    for e, iv in m.constraints.items():
        out = out.add_constraint(e.substitute(subst), iv)
    return out


def align(a: Side, b: Side) -> tuple[IndexingMap, IndexingMap, list[str]]:
    """Both maps over one list of runtime variables: the pairs that read the same value first,
    then a's unpaired variables, then b's (each map ignores the other's). Also the labels of
    the unpaired variables."""
    ma, mb = a.indexing.map, b.indexing.map
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for i in range(ma.num_rt_vars):
        for j in range(mb.num_rt_vars):
            if j not in taken and _same_value(a, i, b, j):
                pairs[i] = j
                taken.add(j)
                break
    only_a = [i for i in range(ma.num_rt_vars) if i not in pairs]
    only_b = [j for j in range(mb.num_rt_vars) if j not in taken]
    rt_vars = tuple(ma.rt_vars[i] for i in pairs) + tuple(ma.rt_vars[i] for i in only_a) \
        + tuple(mb.rt_vars[j] for j in only_b)
    where_a = [0] * ma.num_rt_vars
    where_b = [0] * mb.num_rt_vars
    for p, (i, j) in enumerate(pairs.items()):
        where_a[i], where_b[j] = p, p
    for p, i in enumerate(only_a, start=len(pairs)):
        where_a[i] = p
    for p, j in enumerate(only_b, start=len(pairs) + len(only_a)):
        where_b[j] = p
    unpaired = [a.label(i) for i in only_a] + [b.label(j) for j in only_b]
    return _renumbered(ma, where_a, rt_vars), _renumbered(mb, where_b, rt_vars), unpaired


def equal_as_relations(a: Side, b: Side) -> Verdict:
    """Whether the two maps denote the same relation; runtime variables paired by what they
    read (`align`), never by position. False only for maps without runtime variables (the
    solver's point is then a difference of the two maps); with them a difference the solver
    finds may be at values the program never computes (a runtime variable holds one value at
    each point, unknown to the maps), so it is unknown, its point kept for `witness`."""
    x, y, unpaired = align(a, b)
    v = equal(x.simplify(), y.simplify())
    if v.holds is not False:
        return v
    left = [z.provenance or z.name for z in (*x.sizes, *y.sizes)]
    if left:  # the program holds one value of each; the difference may be at another
        return Verdict(None, message="the maps differ for some values of sizes the refinement "
                                     "does not fix (" + "; ".join(left) + "): not decided")
    if not x.num_rt_vars:
        return v
    if unpaired:
        return Verdict(None, v.counterexample, message=(
            "the maps differ for some values of runtime variables that have no counterpart "
            "in the other program (" + "; ".join(unpaired) + "): not decided"))
    return Verdict(None, v.counterexample, message=(
        "the maps differ for some values of their runtime variables, which the program may "
        "never compute: not decided"))


def find_equal(m: Side, others: Sequence[Side],
               compare: Callable[[Side, Side], Verdict] | None = None
               ) -> tuple[Verdict, list[dict[str, int]]]:
    """The first proof (by `compare`, `equal_as_relations` unless given) that `m` equals one
    of `others`, else the reason it is not decided (an unknown's reason before a difference of
    two maps, which may be two pieces of a union cut differently); with the points where the
    solver saw `m` differ."""
    found: list[Verdict] = []
    for o in others:
        v = (compare or equal_as_relations)(m, o)
        if v.holds:
            return v, []
        found.append(v)
    if not found:
        return Verdict(None, message="no map to compare with"), []
    unknown = [v for v in found if v.holds is None]
    return (unknown or found)[0], [v.counterexample for v in found if v.counterexample]


# -- a difference, shown -------------------------------------------------------------------------

_WITNESS_BUDGET = 30_000
"""Evaluations `witness` spends at most (points of runtime and range variables): about a
second in pure Python, spent only where no proof was found."""

_SMALL_BOX = 256
"""Output boxes up to this many points are searched whole for a witness."""


def witness(xs: Sequence[IndexingMap], ys: Sequence[IndexingMap],
             candidates: Sequence[Mapping[str, int] | None]) -> tuple[dict[str, int], str] | None:
    """An output point where one program surely reads an element the other cannot read, found
    by brute force, and which side reads it ("first" for `xs`, "second"). Surely: some map of
    that side reads, for every value of its runtime variables within their bounds, an element
    outside everything the other side's maps read at the point for any values of theirs. The
    programs' actual values are among those, so the programs differ there; no value is assumed.
    The candidates' points first, then the whole box when small; None when none is found
    within the budget (or a map has sizes left, or no relation)."""
    maps = (*xs, *ys)
    if not maps or any(m.is_undefined or m.sizes or m.num_dims != maps[0].num_dims
                       for m in maps):
        return None
    nd = maps[0].num_dims
    boxes = [range(min(m.dims[i].bounds.lo for m in maps), max(m.dims[i].bounds.hi
                                                                for m in maps) + 1)
             for i in range(nd)]
    points = [tuple(c[f"d{i}"] for i in range(nd)) for c in candidates
              if c is not None and all(f"d{i}" in c for i in range(nd))]
    if _count(boxes) <= _SMALL_BOX:
        points.extend(itertools.product(*boxes))
    cost = sum(_count(var_ranges(m.rt_vars)) * _count(var_ranges(m.range_vars)) for m in maps)
    budget = _WITNESS_BUDGET
    seen: set[tuple[int, ...]] = set()
    for point in points:
        if point in seen:
            continue
        seen.add(point)
        budget -= 2 * cost
        if budget < 0:
            return None
        try:
            for mine, theirs, which in ((xs, ys, "first"), (ys, xs, "second")):
                may: set[tuple[int, ...]] = set()
                for m in theirs:
                    for rts in itertools.product(*var_ranges(m.rt_vars)):
                        may |= reads_at(m, point, rts)
                if any(all(reads_at(m, point, rts) - may
                           for rts in itertools.product(*var_ranges(m.rt_vars))) for m in mine):
                    return {f"d{i}": c for i, c in enumerate(point)}, which
        except EvaluationError:
            continue  # undefined somewhere at this point: no witness here
    return None


def var_ranges(vs: Sequence[Var]) -> list[range]:
    return [range(v.bounds.lo, v.bounds.hi + 1) for v in vs]


def _count(ranges: Sequence[range]) -> int:
    n = 1
    for r in ranges:
        n *= len(r)
    return n


def reads_at(m: IndexingMap, point: tuple[int, ...], rts: tuple[int, ...]
              ) -> set[tuple[int, ...]]:
    """The elements `m` reads at output `point` with its runtime variables at `rts`."""
    if m.is_known_empty or any(c not in d.bounds for c, d in zip(point, m.dims)):
        return set()
    out = set()
    for s in itertools.product(*var_ranges(m.range_vars)):
        env: dict[Expr, int] = dict(zip(m.variables, (*point, *s, *rts)))
        if all(e.evaluate(env) in iv for e, iv in m.constraints.items()):
            out.add(tuple(r.evaluate(env) for r in m.results))
    return out


def within(ind: OperandIndexing, dims: Sequence[int] | None) -> OperandIndexing:
    """`ind` cut to the indices inside the parameter's shape `dims`: an index outside names
    no element, so it reads nothing (XLA's map of a dynamic-update-slice's update names such
    indices for the outputs outside the updated window, cut to a dynamic parameter's size in
    one program and not in the other)."""
    m = ind.map
    if dims is None or m.is_undefined or m.num_results != len(dims):
        return ind
    for r, n in zip(m.results, dims):
        m = m.add_constraint(r, (0, n - 1))
    return OperandIndexing(m, ind.runtime, ind.replica, ind.notes)


def parameter_dims(module: HloModule, values: Mapping[str, int]
                    ) -> dict[int, tuple[int, ...]]:
    """The array parameters' dimensions of the entry, by number, its dynamic ones at the sizes
    `values` (the bound where a size is not given): each side is cut to its own parameters,
    so a map instantiated at the wrong size still reads past the other's."""
    out = {}
    for q in module.entry.parameters:
        if q.shape.is_tuple:
            continue
        sizes = leaf_sizes(q) or (None,) * q.shape.rank
        at = [None if s is None else s.value(values) for s in sizes]
        out[cast(int, q.parameter_number)] = tuple(n if v is None else v
                                                   for n, v in zip(q.shape.dims, at))
    return out


def has_loop(module: HloModule) -> bool:
    return any(inst.opcode == "while" for c in module.computations.values()
               for inst in c.instructions)


def compare(dynamic: HloModule, static: HloModule, values: Mapping[str, int]) -> list[Check]:
    """Parametric maps of `dynamic`'s entry at `values` against `static`'s entry maps, each
    on the elements of its own program's parameters."""
    dyn = computation_indexing(dynamic, dynamic.entry, "out2in")
    sta = computation_indexing(static, static.entry, "out2in")
    dyn_dims, sta_dims = parameter_dims(dynamic, values), parameter_dims(static, {})
    names: dict[Hashable, int] = {}
    dyn_keys, sta_keys = ValueKeys(dynamic, values, names), ValueKeys(static, {}, names)
    keys = sorted({(o, p) for o, p, _l in dyn.maps} | {(o, p) for o, p, _l in sta.maps})
    # A side's maps witness a read only where they are exact: a while loop's are a superset of
    # what it reads (a trip count not followed lets a row read any row), so a side with one
    # never refutes by reading more; the other side may (its maps, though larger, lack it).
    loose = {True: has_loop(dynamic), False: has_loop(static)}
    checks: list[Check] = []
    for o, p in keys:
        a = [Side(within(_computed(_clamped(m, values), dyn_keys, values), dyn_dims.get(p)),
                       dyn_keys)
             for m in dyn.maps_for(o, p)]
        b = [Side(within(_computed(m, sta_keys, {}), sta_dims.get(p)), sta_keys)
             for m in sta.maps_for(o, p)]
        if any(s.indexing.is_undefined for s in (*a, *b)):
            checks.append(Check(o, p, None, "unknown indexing on one side: nothing to prove"))
            continue
        verdict: Verdict | None = None
        points: list[dict[str, int]] = []
        for xs, ys in ((a, b), (b, a)):
            for x in xs:
                v, seen = find_equal(x, ys)
                points.extend(seen)
                if not v.holds:
                    verdict = v
                    break
            if verdict is not None:
                break
        if verdict is None:
            checks.append(Check(o, p, True, "equal"))
            continue
        xs_, ys_ = [s.indexing.map for s in a], [s.indexing.map for s in b]
        if not any(m.num_rt_vars or m.sizes for m in (*xs_, *ys_)):
            union = equal_relations(xs_, ys_)
            if union.holds:  # the pieces are cut differently
                checks.append(Check(o, p, True, "equal as unions of maps"))
                continue
            if union.counterexample is not None:
                points.append(union.counterexample)
        found = witness(xs_, ys_, points)
        if found is not None and loose[found[1] == "first"]:
            first = "parametric" if found[1] == "first" else "refined"
            checks.append(Check(o, p, None, (
                f"the {first} program's maps read an element the other's do not, but they hold "
                f"a while loop's maps, which may read more than the loop does: not decided"),
                found[0]))
        elif found is not None:
            point, which = found
            first, second = ("parametric", "refined") if which == "first" else \
                ("refined", "parametric")
            checks.append(Check(o, p, False, (
                f"at this point the {first} program reads an element the {second} program "
                f"does not, whatever values the runtime variables take"), point))
        else:
            message = verdict.message if verdict.holds is None else \
                "no map of the other program equals it, and no point shows a difference: " \
                "not decided"
            checks.append(Check(o, p, None, message))
    return checks
