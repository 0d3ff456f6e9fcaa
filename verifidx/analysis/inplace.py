"""In-place fusions and their read-after-write hazards.

XLA gives some fusions the buffer of one of their operands as their output (`AliasInfo::
GetInPlaceInputOutputPairs`): a fusion whose root, through tuples and bitcasts, is a
dynamic-update-slice whose operand 0 is (through one bitcast) a fusion parameter, and a fusion
with an `output_to_operand_aliasing` attribute. Copy insertion then makes them share the buffer,
and the emitter overwrites the operand while it still reads it. XLA's CPU dynamic-update-slice
emitter runs one loop over the update shape, in the row-major order of the update's layout; at
iteration `u` it computes the update element (which may read the aliased operand, now the
output) and stores it at `start + u` (the start clamped as dynamic-update-slice clamps it).
The loop emitter of a fusion with `output_to_operand_aliasing` runs over the output shape and
stores element `d` after computing it.

A hazard is an element the iteration `u` reads from the aliased buffer that an earlier
iteration `w` (or, in the same iteration, an earlier output of a multi-output fusion) has
already overwritten. Reads come from verifidx's exact maps (update -> parameter), writes from
the dynamic-update-slice's own map composed with the bitcasts to the parameter, and one
emptiness query per order case decides it (`verifidx.solve.smt.is_empty`, under Z3's resource
limit). Runtime variables read from the same scalar are tied to one value and clamped as each op
clamps it. Verdicts:

- `safe`: no element one iteration reads is written by another one, in any order (parallel or
  vectorised execution included);
- `ordered`: no hazard in the emitter's sequential order, but another iteration writes an element
  this one reads, so a different order could see one;
- `hazard`: a witness (element, read iteration, earlier write iteration, the fusion's scalar
  operands), checked by plain evaluation of the maps and of the scalar computation of the starts;
- `unknown`: with the reason (a spent budget, an unmodelled emitter, a witness that needs start
  values the fusion cannot be shown to compute).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from verifidx.analysis.computation_maps import ComputationWalker, simplify_indexing
from verifidx.core.expr import Const, Dim, Expr, RtVar, Symbol, maximum, minimum
from verifidx.core.indexing_map import IndexingMap, Var
from verifidx.core.interval import Interval
from verifidx.hlo.indexing import input_to_output as instruction_input_to_output
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.parser import parse_hlo
from verifidx.hlo.runtime import OperandIndexing, compose_indexing
from verifidx.hlo.shape import Shape, integer_interval, wrap_integer
from verifidx.solve import smt

__all__ = ["Hazard", "InPlaceFusion", "inplace_hazards"]

#: Budget of each emptiness query, in milliseconds' worth of Z3's resource units (`rlimit`).
DEFAULT_BUDGET_MS = 2000

SAFE, ORDERED, HAZARD, UNKNOWN = "safe", "ordered", "hazard", "unknown"


@dataclass(frozen=True)
class Hazard:
    """Element `element` of fusion parameter `parameter` (the buffer the output shares) is read
    at iteration `read_at` of `reader` after iteration `written_at` of `writer` stored to it.
    `operands` gives the fusion's scalar operands the witness needs (operand number -> value)."""

    parameter: int
    element: tuple[int, ...]
    read_at: tuple[int, ...]
    written_at: tuple[int, ...]
    reader: str
    writer: str
    operands: Mapping[int, int] = field(default_factory=dict)

    def to_text(self) -> str:
        where = f" (reader {self.reader}, writer {self.writer})" if self.reader != self.writer \
            else ""
        text = (f"parameter {self.parameter} element {_tuple(self.element)} is written at "
                f"iteration {_tuple(self.written_at)} and read afterwards at iteration "
                f"{_tuple(self.read_at)}{where}")
        if self.operands:
            text += " when " + ", ".join(f"operand {k} = {v}"
                                         for k, v in sorted(self.operands.items()))
        return text

    def to_json(self) -> dict[str, object]:
        return {"parameter": self.parameter, "element": list(self.element),
                "read_at": list(self.read_at), "written_at": list(self.written_at),
                "reader": self.reader, "writer": self.writer,
                "operands": {str(k): v for k, v in sorted(self.operands.items())}}


@dataclass(frozen=True)
class InPlaceFusion:
    """One fusion that runs in place and the verdict on its hazards."""

    computation: str
    fusion: str
    kind: str
    #: (output leaf, fusion operand) pairs that share a buffer
    aliased: tuple[tuple[int, int], ...]
    status: str
    reason: str = ""
    hazard: Hazard | None = None
    queries: int = 0
    line: int = 0

    def to_text(self) -> str:
        pairs = ", ".join(f"output {o} = operand {p}" for o, p in self.aliased)
        head = f"{self.computation}/{self.fusion} ({self.kind}; {pairs}): {self.status}"
        if self.hazard is not None:
            head += ": " + self.hazard.to_text()
        if self.reason:
            head += f" ({self.reason})"
        return head

    def to_json(self) -> dict[str, object]:
        return {"computation": self.computation, "fusion": self.fusion, "kind": self.kind,
                "line": self.line,
                "aliased": [{"output": o, "operand": p} for o, p in self.aliased],
                "status": self.status, "reason": self.reason, "queries": self.queries,
                "hazard": None if self.hazard is None else self.hazard.to_json()}


def _tuple(xs: Sequence[int]) -> str:
    return "(" + ", ".join(str(x) for x in xs) + ")"


# -- finding the in-place fusions ---------------------------------------------------------------


def _strip_bitcasts(comp: HloComputation, inst: HloInstruction) -> HloInstruction:
    while inst.opcode == "bitcast" and inst.operands:
        inst = comp.instruction(inst.operands[0])
    return inst


def _root_leaves(comp: HloComputation) -> list[HloInstruction] | None:
    """The instructions that define each output leaf (tuple roots followed one level), or None
    for nested tuples."""
    root = comp.root
    if root.opcode != "tuple":
        return None if root.shape.is_tuple else [root]
    leaves = [comp.instruction(n) for n in root.operands]
    return None if any(x.shape.is_tuple for x in leaves) else leaves


@dataclass(frozen=True)
class _Writer:
    """One in-place dynamic-update-slice of a fusion: output leaf, the instruction, and the
    parameter whose buffer it writes."""

    leaf: int
    dus: HloInstruction
    parameter: HloInstruction


def _dus_writers(comp: HloComputation) -> tuple[list[_Writer], list[int]]:
    """The in-place dynamic-update-slices of a fused computation, and the leaves that are not
    one (XLA pairs a leaf when its source is a dynamic-update-slice whose operand 0 is a
    parameter, through at most bitcasts)."""
    leaves = _root_leaves(comp)
    if leaves is None:
        return [], []
    writers: list[_Writer] = []
    others: list[int] = []
    for k, leaf in enumerate(leaves):
        src = _strip_bitcasts(comp, leaf)
        if src.opcode == "dynamic-update-slice" and src.operands:
            base = _strip_bitcasts(comp, comp.instruction(src.operands[0]))
            if base.parameter_number is not None and not base.shape.is_tuple:
                writers.append(_Writer(k, src, base))
                continue
        others.append(k)
    return writers, others


_ALIAS = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}\s*(?:,[^)]*)?\)")


def aliasing_pairs(inst: HloInstruction) -> list[tuple[tuple[int, ...], int, tuple[int, ...]]]:
    """`output_to_operand_aliasing={{0}: (1, {})}` as (output index, operand, operand index)."""
    raw = inst.raw_attributes.get("output_to_operand_aliasing")
    if not raw:
        return []

    def ints(s: str) -> tuple[int, ...]:
        return tuple(int(x) for x in s.replace(" ", "").split(",") if x)

    return [(ints(a), int(b), ints(c)) for a, b, c in _ALIAS.findall(raw)]


# -- the problem: iterations, writes and reads as maps ------------------------------------------


@dataclass(frozen=True)
class _Access:
    """A write or read: which output (by its order in one iteration) and the map from the
    iteration index to an element of `parameter`."""

    name: str
    position: int
    parameter: int
    indexing: OperandIndexing


@dataclass
class _Problem:
    iteration: tuple[int, ...]
    order: tuple[int, ...]  # iteration dims, outermost loop first
    writes: list[_Access]
    reads: list[_Access]


def _layout_order(shape: Shape) -> tuple[int, ...]:
    """Dims from the outermost loop to the innermost: major to minor in the layout."""
    if shape.layout is not None and len(shape.layout.minor_to_major) == shape.rank:
        return tuple(reversed(shape.layout.minor_to_major))
    return tuple(range(shape.rank))


def _single_map(maps: Sequence[OperandIndexing]) -> OperandIndexing | None:
    if len(maps) != 1 or maps[0].is_undefined:
        return None
    return maps[0]


def _buffers(fusion: HloInstruction, comp: HloComputation, writers: list[_Writer]
             ) -> dict[str, int]:
    """The parameters that hold an overwritten buffer, by name, with the number of the
    writer's parameter: the writers' own, and any other parameter the caller passes the same
    value (XLA gives both the one buffer)."""
    owner = {fusion.operands[_number(w.parameter)]: _number(w.parameter) for w in writers
             if _number(w.parameter) < len(fusion.operands)}
    found = {w.parameter.name: _number(w.parameter) for w in writers}
    for p in comp.parameters:
        k = _number(p)
        if k < len(fusion.operands) and fusion.operands[k] in owner and not p.shape.is_tuple:
            found.setdefault(p.name, owner[fusion.operands[k]])
    return found


def _dus_problem(module: HloModule, fusion: HloInstruction, comp: HloComputation,
                 writers: list[_Writer]) -> _Problem | str:
    """The iteration space, writes and reads of the dynamic-update-slice emitter, or why they
    cannot be stated."""
    walker = ComputationWalker(module, comp)
    updates = [comp.instruction(w.dus.operands[1]) for w in writers]
    dims = updates[0].shape.dims
    if any(u.shape.is_dynamic or u.shape.dims != dims for u in updates):
        return "the dynamic-update-slices have different or dynamic update shapes"
    params = _buffers(fusion, comp, writers)
    writes: list[_Access] = []
    reads: list[_Access] = []
    for k, (w, update) in enumerate(zip(writers, updates)):
        placed = _single_map(instruction_input_to_output(w.dus, comp, 1, module=module).maps[0])
        base = comp.instruction(w.dus.operands[0])
        chain = _single_map(walker.walk_output_to_input(base).get((w.parameter.name, 0), []))
        if placed is None or chain is None or chain.map.num_range_vars:
            return f"{w.dus.name}: the stores have no single map to {w.parameter.name}"
        stored = simplify_indexing(compose_indexing(placed, chain))
        if stored.is_undefined:
            return f"{w.dus.name}: the stores have no map to {w.parameter.name}"
        writes.append(_Access(w.dus.name, k, _number(w.parameter), stored))
        for start in w.dus.operands[2:]:
            reached = walker.walk_output_to_input(comp.instruction(start))
            if any((p, 0) in reached for p in params):
                return (f"{w.dus.name}: a start index reads the aliased buffer (when the "
                        f"emitter reads it is not modelled)")
        reached = walker.walk_output_to_input(update)
        for pname, buffer in params.items():
            for m in reached.get((pname, 0), []):
                if m.is_undefined:
                    return f"{w.dus.name}: the update reads {pname} through unknown indexing"
                reads.append(_Access(w.dus.name, k, buffer, m))
    return _Problem(dims, _layout_order(updates[0].shape), writes, reads)


def _number(p: HloInstruction) -> int:
    assert p.parameter_number is not None
    return p.parameter_number


def _loop_problem(module: HloModule, comp: HloComputation, leaf: int, operand: int
                  ) -> _Problem | str:
    """A loop fusion writing output `leaf` into operand `operand`'s buffer, element by element."""
    leaves = _root_leaves(comp)
    params = [p for p in comp.parameters if p.parameter_number == operand]
    if leaves is None or not 0 <= leaf < len(leaves) or not params:
        return "the aliased output or operand is not an array of the fusion"
    out, param = leaves[leaf], params[0]
    if len(leaves) > 1:
        return "a multi-output loop fusion: the order of its stores is not modelled"
    if param.shape.is_tuple or out.shape.is_dynamic or param.shape.dims != out.shape.dims \
            or _layout_order(param.shape) != _layout_order(out.shape):
        return "the aliased operand and the output differ in shape or layout"
    walker = ComputationWalker(module, comp)
    maps = walker.walk_output_to_input(out).get((param.name, 0), [])
    if any(m.is_undefined for m in maps):
        return f"the output reads {param.name} through unknown indexing"
    rank = len(out.shape.dims)
    ident = IndexingMap(tuple(Dim(i) for i in range(rank)),
                        tuple(Var(Interval(0, n - 1)) for n in out.shape.dims))
    write = _Access(out.name, 0, operand, OperandIndexing(ident))
    reads = [_Access(out.name, 0, operand, m) for m in maps]
    return _Problem(out.shape.dims, _layout_order(out.shape), [write], reads)


# -- the queries -------------------------------------------------------------------------------

def _renumber(e: Expr, dims: int, ranges: int, rts: int) -> Expr:
    """Shifts dims, range and runtime variables of `e` by the given offsets."""
    subst: dict[Expr, Expr] = {}
    for v in e.variables():
        if isinstance(v, Dim):
            subst[v] = Dim(v.index + dims)
        elif isinstance(v, Symbol):
            subst[v] = Symbol(v.index + ranges)
        elif isinstance(v, RtVar):
            subst[v] = RtVar(v.index + rts)
    return e.substitute(subst) if subst else e


@dataclass(frozen=True)
class _Query:
    """One order case: the reader's iteration `u` (dims 0..r-1) and the writer's `w` (dims r..),
    `w` before `u` at loop level `level` (equal above it), or equal (`level` None)."""

    read: _Access
    write: _Access
    level: int | None
    after: bool = False  # w after u instead (for the order-independence question)


def _conflict_map(q: _Query, problem: _Problem) -> IndexingMap:
    """The points (u, w, range and runtime values) where iteration `u` reads the element
    iteration `w` writes, in the order case of `q`."""
    r, w = q.read.indexing, q.write.indexing
    rm, wm = r.map, w.map
    rank = len(problem.iteration)
    box = tuple(Var(Interval(0, n - 1)) for n in problem.iteration)
    ranges = rm.range_vars + wm.range_vars
    rts = rm.rt_vars + wm.rt_vars
    constraints: list[tuple[Expr, Interval]] = []
    # each map's own domain of iterations (a concatenate's operand covers part of it)
    constraints += [(Dim(i), v.bounds) for i, v in enumerate(rm.dims)]
    constraints += [(Dim(rank + i), v.bounds) for i, v in enumerate(wm.dims)]
    constraints += list(rm.constraints.items())
    constraints += [(_renumber(e, rank, rm.num_range_vars, rm.num_rt_vars), iv)
                    for e, iv in wm.constraints.items()]
    for a, b in zip(rm.results, wm.results):
        b2 = _renumber(b, rank, rm.num_range_vars, rm.num_rt_vars)
        constraints.append((a - b2, Interval(0, 0)))
    for t, d in enumerate(problem.order):
        n = problem.iteration[d]
        diff = Dim(rank + d) - Dim(d)  # w - u along d
        if q.level is None or t < q.level:
            constraints.append((diff, Interval(0, 0)))
        elif t == q.level:
            constraints.append((diff, Interval(1, n) if q.after else Interval(-n, -1)))
            break
    # runtime variables read from one scalar hold one value, each clamped to its own bounds
    raws: list[Var] = []
    runtime = list(r.runtime) + list(w.runtime)
    groups: dict[str, list[int]] = {}
    for k, rv in enumerate(runtime):
        if rv.source.shape.rank == 0 and not rv.source.shape.is_tuple:
            groups.setdefault(rv.source.name, []).append(k)
    for members in groups.values():
        bounds = integer_interval(runtime[members[0]].source.shape.element_type)
        if len(members) < 2 or bounds is None:
            continue
        raw = Symbol(len(ranges) + len(raws))
        raws.append(Var(bounds))
        for k in members:
            iv = rts[k].bounds
            constraints.append((RtVar(k) - maximum(minimum(raw, Const(iv.hi)), Const(iv.lo)),
                                Interval(0, 0)))
    m = IndexingMap(rm.results, box + box, ranges + tuple(raws), rts)
    return m.add_constraints(constraints)


def _order_cases(problem: _Problem, after: bool) -> Iterator[_Query]:
    """Every (read, write) pair on one buffer, in each order case where the write comes first
    (or, with `after`, where it comes later or in another output of the same iteration)."""
    for rd in problem.reads:
        for wr in problem.writes:
            if rd.parameter != wr.parameter:
                continue
            for level in range(len(problem.iteration)):
                yield _Query(rd, wr, level, after)
            if (wr.position > rd.position) if after else (wr.position < rd.position):
                yield _Query(rd, wr, None, after)


@dataclass
class _Search:
    queries: int = 0
    unknown: str = ""
    unconfirmed: str = ""


def _split_point(m: IndexingMap, point: Mapping[str, int]) -> tuple[list[int], list[int]]:
    values = [point[f"{v.prefix}{v.index}"] for v in m.variables]
    return values[:m.num_dims], values[m.num_dims:]


def _hazard_of(q: _Query, problem: _Problem, m: IndexingMap, point: Mapping[str, int],
               fusion: HloInstruction, caller: HloComputation, comp: HloComputation
               ) -> Hazard | str:
    """The witness checked by plain evaluation: the read map and the write map name the same
    element at the two iterations, in the order case, and the runtime values come from scalar
    operands of the fusion (`_operand_values`)."""
    rank = len(problem.iteration)
    dims, syms = _split_point(m, point)
    u, wi = dims[:rank], dims[rank:]
    rm, wm = q.read.indexing.map, q.write.indexing.map
    ranges, rts = syms[:len(m.range_vars)], syms[len(m.range_vars):]
    r_syms = ranges[:rm.num_range_vars] + rts[:rm.num_rt_vars]
    w_syms = ranges[rm.num_range_vars:rm.num_range_vars + wm.num_range_vars] \
        + rts[rm.num_rt_vars:]
    read_el = rm.evaluate(u, r_syms)
    write_el = wm.evaluate(wi, w_syms)
    inside = all(x in info.bounds for x, info in zip(u + r_syms, rm.all_vars)) and all(
        x in info.bounds for x, info in zip(wi + w_syms, wm.all_vars))
    if read_el != write_el or not inside or not rm.constraints_satisfied(u, r_syms) \
            or not wm.constraints_satisfied(wi, w_syms) or not _before(q, problem, u, wi):
        return "the solver's witness failed re-evaluation"
    runtime = list(q.read.indexing.runtime) + list(q.write.indexing.runtime)
    bounds = list(rm.rt_vars) + list(wm.rt_vars)
    wanted = [(rv.source, b.bounds, value) for rv, b, value in zip(runtime, bounds, rts)]
    operands = _operand_values(wanted, fusion, caller, comp)
    if isinstance(operands, str):
        return operands
    return Hazard(q.write.parameter, tuple(read_el), tuple(u), tuple(wi), q.read.name,
                  q.write.name, operands)


def _before(q: _Query, problem: _Problem, u: Sequence[int], w: Sequence[int]) -> bool:
    """Whether iteration `w` of the writer comes before iteration `u` of the reader."""
    ou = tuple(u[d] for d in problem.order)
    ow = tuple(w[d] for d in problem.order)
    if q.level is None:
        return ou == ow and q.write.position < q.read.position
    return ow < ou


# -- scalar values of the starts ---------------------------------------------------------------


_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "LT": operator.lt, "LE": operator.le, "GT": operator.gt, "GE": operator.ge,
    "EQ": operator.eq, "NE": operator.ne}
_BINARY: dict[str, Callable[[int, int], int]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "maximum": max,
    "minimum": min, "and": operator.and_, "or": operator.or_}


def scalar_value(comp: HloComputation, inst: HloInstruction, params: Mapping[int, int]
                 ) -> int | None:
    """The value of a scalar integer instruction for given scalar parameter values, by plain
    evaluation (integer ops, comparisons, select, clamp, min, max, convert); None where it
    reads anything else."""
    def ev(name: str) -> int | None:
        return scalar_value(comp, comp.instruction(name), params)

    if inst.shape.is_tuple or inst.shape.rank:
        return None
    op, et = inst.opcode, inst.shape.element_type
    if op == "parameter":
        return params.get(_number(inst))
    if op == "constant":
        v = inst.literal_value
        return int(v) if isinstance(v, (int, bool)) else None
    args = [ev(n) for n in inst.operands]
    if any(a is None for a in args):
        return None
    a = [int(x) for x in args if x is not None]
    if op in ("convert", "bitcast", "reshape", "copy") and len(a) == 1:
        return wrap_integer(a[0], et) if et != "pred" else int(a[0] != 0)
    if op == "compare" and len(a) == 2:
        fn = _COMPARE.get(inst.comparison_direction or "")
        return None if fn is None else int(fn(a[0], a[1]))
    if op == "select" and len(a) == 3:
        return a[1] if a[0] else a[2]
    if op == "clamp" and len(a) == 3:
        return min(max(a[1], a[0]), a[2])
    if op in _BINARY and len(a) == 2:
        return wrap_integer(_BINARY[op](a[0], a[1]), et)
    if op in ("divide", "remainder") and len(a) == 2 and a[1] != 0:
        q = abs(a[0]) // abs(a[1]) * (1 if (a[0] >= 0) == (a[1] >= 0) else -1)  # truncating
        return wrap_integer(q if op == "divide" else a[0] - q * a[1], et)
    if op == "negate" and len(a) == 1:
        return wrap_integer(-a[0], et)
    if op == "not" and len(a) == 1:
        return int(not a[0]) if et == "pred" else wrap_integer(~a[0], et)
    return None


def _scalar_parameters(comp: HloComputation, inst: HloInstruction) -> set[int]:
    seen: set[int] = set()
    stack = [inst]
    while stack:
        x = stack.pop()
        if x.parameter_number is not None:
            seen.add(x.parameter_number)
        stack.extend(comp.instruction(n) for n in x.operands)
    return seen


#: Candidate values tried for each scalar operand of the fusion: the witness's start values and
#: every integer within the start bounds' reach (plus this margin), at most `_CANDIDATE_REACH`
#: from zero for one, two or three operands, so the search stays small.
_CANDIDATE_SPAN = 2
_CANDIDATE_REACH = (4096, 64, 12)


def _operand_values(wanted: Sequence[tuple[HloInstruction, Interval, int]],
                    fusion: HloInstruction, caller: HloComputation, comp: HloComputation
                    ) -> dict[int, int] | str:
    """Values of the fusion's scalar operands under which every runtime variable takes the
    witness's value (`clamp(source, lo, hi) == value`), found by evaluating the scalar
    computation on candidates (the operand's constant value where the caller passes a constant);
    a reason when there is none."""
    if not wanted:
        return {}
    needed: set[int] = set()
    for src, _b, _v in wanted:
        if src.shape.rank or src.shape.is_tuple:
            return (f"a start read from an array element ({src.name}); the witness is not "
                    f"confirmed")
        needed |= _scalar_parameters(comp, src)
    spans: list[list[int]] = []
    order = sorted(needed)
    if len(order) > len(_CANDIDATE_REACH):
        return "more than three scalar operands feed the starts; the witness is not confirmed"
    reach = min(max([abs(b.lo) + abs(b.hi) for _s, b, _v in wanted] + [1]) + _CANDIDATE_SPAN,
                _CANDIDATE_REACH[len(order) - 1] if order else 0)
    for p in order:
        given = caller.instruction(fusion.operands[p]) if p < len(fusion.operands) else None
        if given is not None and given.opcode == "constant" and given.shape.rank == 0 \
                and isinstance(given.literal_value, int):
            spans.append([int(given.literal_value)])
        else:
            base = [v for _s, _b, v in wanted]
            spans.append(sorted(set(range(-reach, reach + 1)) | set(base), key=abs))
    for values in itertools.product(*spans):
        env = dict(zip(order, values))
        ok = True
        for src, b, v in wanted:
            got = scalar_value(comp, src, env)
            if got is None or min(max(got, b.lo), b.hi) != v:
                ok = False
                break
        if ok:
            return env
    return ("the witness needs start values no tried operand value gives (the fusion's scalar "
            "computation); not confirmed")


# -- verdicts ----------------------------------------------------------------------------------


def _search(problem: _Problem, after: bool, budget_ms: int, search: _Search,
            fusion: HloInstruction, caller: HloComputation, comp: HloComputation
            ) -> Hazard | bool | None:
    """Hazard found (confirmed), True (every case empty), False (a case has a point),
    None (a case unknown and none has a point)."""
    unknown = False
    found_point = False
    for q in _order_cases(problem, after):
        m = _conflict_map(q, problem)
        search.queries += 1
        v = smt.is_empty(m, budget_ms)
        if v.holds is True:
            continue
        if v.holds is None:
            unknown = True
            search.unknown = v.message
            continue
        found_point = True
        if after:
            return False
        assert v.counterexample is not None
        h = _hazard_of(q, problem, m, v.counterexample, fusion, caller, comp)
        if isinstance(h, Hazard):
            return h
        search.unconfirmed = h
    if found_point:
        return False
    return None if unknown else True


def _decide(problem: _Problem, budget_ms: int, fusion: HloInstruction,
            caller: HloComputation, comp: HloComputation) -> tuple[str, str, Hazard | None, int]:
    search = _Search()
    before = _search(problem, False, budget_ms, search, fusion, caller, comp)
    if isinstance(before, Hazard):
        return HAZARD, "", before, search.queries
    if before is False:
        return UNKNOWN, f"a conflict may exist: {search.unconfirmed}", None, search.queries
    if before is None:
        return UNKNOWN, f"a query was not decided: {search.unknown}", None, search.queries
    after = _search(problem, True, budget_ms, search, fusion, caller, comp)
    if after is True:
        return SAFE, "", None, search.queries
    why = ("another iteration writes an element this one reads" if after is False
           else f"whether another order is safe was not decided: {search.unknown}")
    return ORDERED, why, None, search.queries


def _analyse(module: HloModule, caller: HloComputation, inst: HloInstruction,
             budget_ms: int) -> InPlaceFusion | None:
    names = inst.called_computations
    aliasing = aliasing_pairs(inst)
    if inst.opcode != "fusion" or not names:
        if not aliasing:
            return None
        return InPlaceFusion(caller.name, inst.name, inst.opcode,
                             tuple((o[0] if o else 0, p) for o, p, _ in aliasing), UNKNOWN,
                             f"{inst.opcode} with output_to_operand_aliasing: what it reads "
                             f"and writes is not modelled", line=inst.line)
    comp = module.computation(names[0])
    writers, others = _dus_writers(comp)
    if writers:
        pairs = tuple((w.leaf, _number(w.parameter)) for w in writers)
        kind = "dynamic-update-slice"
        if others:
            return InPlaceFusion(caller.name, inst.name, kind, pairs, UNKNOWN,
                                 "not every output is a dynamic-update-slice: the loop emitter "
                                 "that runs it is not modelled", line=inst.line)
        problem = _dus_problem(module, inst, comp, writers)
    elif aliasing:
        pairs = tuple((o[0] if o else 0, p) for o, p, _ in aliasing)
        kind = "output_to_operand_aliasing"
        if len(aliasing) != 1 or aliasing[0][2]:
            return InPlaceFusion(caller.name, inst.name, kind, pairs, UNKNOWN,
                                 "more than one aliased pair, or a tuple operand: not modelled",
                                 line=inst.line)
        problem = _loop_problem(module, comp, pairs[0][0], pairs[0][1])
    else:
        return None
    if isinstance(problem, str):
        return InPlaceFusion(caller.name, inst.name, kind, pairs, UNKNOWN, problem,
                             line=inst.line)
    status, reason, hazard, queries = _decide(problem, budget_ms, inst, caller, comp)
    return InPlaceFusion(caller.name, inst.name, kind, pairs, status, reason, hazard, queries,
                         inst.line)


def _fused(module: HloModule) -> set[str]:
    return {n for c in module.computations.values() for i in c.instructions
            if i.opcode == "fusion" for n in i.called_computations}


def inplace_hazards(module_or_text: HloModule | str, budget_ms: int = DEFAULT_BUDGET_MS
                    ) -> list[InPlaceFusion]:
    """Every fusion of the module that runs in place, with its verdict (module docstring).
    `budget_ms` is each query's budget in milliseconds' worth of Z3 resource units."""
    module = parse_hlo(module_or_text) if isinstance(module_or_text, str) else module_or_text
    fused = _fused(module)
    out: list[InPlaceFusion] = []
    for comp in module.computations.values():
        if comp.name in fused:
            continue
        for inst in comp.instructions:
            found = _analyse(module, comp, inst, budget_ms)
            if found is not None:
                out.append(found)
    return out
