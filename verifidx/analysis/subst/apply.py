"""`optimize`: rewrite an HLO module with proven substitutions until none applies.

Each candidate application is a match of a substitution's left graph in a computation (every
op of the match except its root used only inside the match, so the whole match goes away),
instantiated at the concrete shapes. It is applied only when

- the measure (data-movement ops reachable from the root, then the bytes they write) strictly
  decreases, which makes the rewriting terminate; and
- translation validation succeeds: the root-to-input maps of the matched graph and of its
  replacement, computed by verifidx's per-op maps on the concrete shapes, are equal as unions
  of relations (`smt.equal_relations`). This, not the substitution's general proof (which may
  be bounded), licenses each rewrite.

Layouts: every op of a substitution reads its operands' logical values, but a `bitcast`
reinterprets its operand's bytes, and the root, a fusion's parameter or a tuple declare the
layout they get. When the replacement is an existing value with another layout than the value
it replaces (a `copy` that changes the layout, removed by `copy_noop`), a user that declares
the layout rejects the rewrite, and a bitcast user makes the validation compare the maps from
each memory offset of the value, through its layout, to the inputs' elements (`physical
maps`). Users that read logical values only (LAYOUT_BLIND) see no difference.

The output is HLO text: untouched instructions keep their text, rewritten ones are printed
anew (no metadata; a replacement's root keeps the layout of the instruction it replaces, inner
new instructions get none, so XLA's default), parameters and the root's shape are unchanged.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifidx.analysis.subst.binding import Binding
from verifidx.analysis.subst.model import Node, Substitution, evaluate
from verifidx.analysis.subst.semantics import INTS, Graph, IllFormed, perm_value
from verifidx.core.errors import UnsupportedError
from verifidx.hlo.attribute_values import PadDim, SliceDim
from verifidx.hlo.layout import TiledLayout, as_tiled_shape
from verifidx.hlo.module import HloComputation, HloInstruction
from verifidx.hlo.ops.elementwise import ELEMENTWISE
from verifidx.hlo.parser import parse_hlo
from verifidx.hlo.shape import Shape

DATA_MOVEMENT = frozenset({"transpose", "reshape", "bitcast", "broadcast", "slice", "concatenate",
                           "reverse", "pad", "copy", "gather", "dynamic-slice",
                           "dynamic-update-slice"})
"""The ops whose output sizes count as bytes moved (the issue's definition)."""

LAYOUT_BLIND = (ELEMENTWISE - {"map", "collective-permute", "domain"}) | frozenset({
    "transpose", "reshape", "broadcast", "slice", "concatenate", "reverse", "pad", "reduce",
    "reduce-window", "dot", "convolution", "gather", "scatter", "dynamic-slice",
    "dynamic-update-slice", "sort"})
"""Ops whose result depends on their operands' logical values only, never on their layouts.
Any other user (bitcast, fusion, call, tuple, custom-call, while, ...) and the computation's
root (whose bytes the caller reads) observe the layout of the value they receive."""


@dataclass
class _Inst:
    """A mutable instruction: the original (for its text) or a new one."""

    name: str
    opcode: str
    shape: Shape
    operands: list[str]
    attrs: dict[str, object]
    original: HloInstruction | None = None
    text: str | None = None  # the original line, while nothing about it changed
    is_root: bool = False


def _bytes(shape: Shape) -> int:
    return math.prod(shape.dims) * shape.element_bits // 8


class _Computation:
    def __init__(self, comp: HloComputation, lines: Sequence[str]) -> None:
        self.comp = comp
        self.insts: dict[str, _Inst] = {}
        self.order: list[str] = []
        for i in comp.instructions:
            line = lines[i.line - 1][i.column - 1:].rstrip() if i.line else None
            self.insts[i.name] = _Inst(i.name, i.opcode, i.shape, list(i.operands),
                                       dict(i.attributes), i, line, i.is_root)
            self.order.append(i.name)
        self.counter = 0

    @property
    def root(self) -> _Inst:
        return next(i for i in self.insts.values() if i.is_root)

    def users(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n: [] for n in self.order}
        for n in self.order:
            for o in self.insts[n].operands:
                out[o].append(n)
        return out

    def reachable(self) -> list[str]:
        seen: set[str] = set()
        stack = [self.root.name]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(self.insts[n].operands)
        return [n for n in self.order if n in seen]

    def measure(self) -> tuple[int, int]:
        dm = [self.insts[n] for n in self.reachable() if self.insts[n].opcode in DATA_MOVEMENT]
        return len(dm), sum(_bytes(i.shape) for i in dm)

    def fresh(self, base: str) -> str:
        while True:
            self.counter += 1
            name = f"{base}.vx{self.counter}"
            if name not in self.insts:
                return name


# -- matching ----------------------------------------------------------------------------------


def _concrete_attr(inst: _Inst, key: str) -> object:
    """The value of a substitution attribute read off an HLO instruction."""
    a = inst.attrs
    if inst.opcode in ("transpose", "reverse") and key in ("perm", "dims"):
        return tuple(a.get("dimensions") or ())  # type: ignore[arg-type]
    if inst.opcode == "broadcast":
        return tuple(inst.shape.dims) if key == "shape" else tuple(a.get("dimensions") or ())  # type: ignore[arg-type]
    if inst.opcode == "reshape":
        return tuple(inst.shape.dims)
    if inst.opcode == "concatenate":
        dims = a.get("dimensions") or ()
        return dims[0] if len(dims) == 1 else None  # type: ignore[arg-type,index]
    if inst.opcode == "slice":
        sl: tuple[SliceDim, ...] = a.get("slice") or ()  # type: ignore[assignment]
        return tuple({"start": s.start, "limit": s.limit, "stride": s.stride}[key] for s in sl)
    if inst.opcode == "pad":
        pad: tuple[PadDim, ...] = a.get("padding") or ()  # type: ignore[assignment]
        return tuple({"low": p.low, "high": p.high, "interior": p.interior}[key] for p in pad)
    return None


_DEFAULTS = {"stride": 1, "interior": 0}


def _match(node: Node, name: str, c: _Computation, sub: Substitution, b: Binding,
           users: dict[str, list[str]], top: bool) -> bool:
    inst = c.insts[name]
    if node.op == "input":
        if node.name in b.inputs:
            return b.inputs[node.name] == name
        if inst.shape.is_tuple or inst.shape.is_dynamic:
            return False
        b.inputs[node.name] = name
        return b.unify(sub.input_shapes[node.name], inst.shape.dims)
    if inst.opcode != node.op or len(inst.operands) != len(node.args):
        return False
    if inst.shape.is_tuple or inst.shape.is_dynamic or name in b.matched:
        return False
    if not top and (len(users[name]) != 1 or inst.is_root):
        return False
    for key, value in node.attrs:
        concrete = _concrete_attr(inst, key)
        if concrete is None:
            return False
        if key == "perm":
            if isinstance(value, str) and value not in b.perms:
                b.perms[value] = concrete  # type: ignore[assignment]
            else:
                b.equations.append((("perm", value), concrete))  # type: ignore[arg-type]
        elif key == "dim":
            if value != concrete:
                return False
        elif not b.unify(value, concrete):  # type: ignore[arg-type]
            return False
    optional = {"slice": "stride", "pad": "interior"}.get(node.op)
    if optional is not None and node.attr(optional) is None and \
            any(v != _DEFAULTS[optional] for v in _concrete_attr(inst, optional)):  # type: ignore[attr-defined]
        return False
    b.matched.insert(0, name)
    return all(_match(a, o, c, sub, b, users, False) for a, o in zip(node.args, inst.operands))


def _consistent(sub: Substitution, b: Binding) -> bool:
    env: dict[str, int] = dict(b.values)
    for name, vals in b.lists.items():
        env.update({f"{name}{k}": x for k, x in enumerate(vals)})
    try:
        for e, v in b.equations:
            if isinstance(e, tuple) and e[0] == "perm":
                if perm_value(e[1], b.perms) != tuple(v):  # type: ignore[arg-type]
                    return False
            elif evaluate(e, env) != v:  # type: ignore[arg-type]
                return False
        ops = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
               ">": int.__gt__, ">=": int.__ge__}
        return all(ops[cd.op](evaluate(cd.lhs, env), evaluate(cd.rhs, env))  # type: ignore[arg-type]
                   for cd in sub.conditions)
    except (KeyError, IllFormed):
        return False


# -- building the replacement ----------------------------------------------------------------


def _attrs_for(node: Node, g: Graph) -> dict[str, object]:
    """HLO attributes (parsed form) of a replacement instruction."""
    if node.op == "transpose":
        return {"dimensions": perm_value(node.attr("perm"), g.perms)}
    if node.op in ("reverse", "broadcast"):
        return {"dimensions": tuple(g.sizes(node.attr("dims")))}
    if node.op == "concatenate":
        return {"dimensions": (node.attr("dim"),)}
    r = len(g.shape(node.args[0]))
    if node.op == "slice":
        starts, limits = g.sizes(node.attr("start")), g.sizes(node.attr("limit"))
        strides = g.sizes(node.attr("stride")) if node.attr("stride") is not None else [1] * r
        return {"slice": tuple(SliceDim(s, lim, st) for s, lim, st in
                               zip(starts, limits, strides))}
    if node.op == "pad":
        lows, highs = g.sizes(node.attr("low")), g.sizes(node.attr("high"))
        inner = g.sizes(node.attr("interior")) if node.attr("interior") is not None else [0] * r
        return {"padding": tuple(PadDim(lo, hi, it) for lo, hi, it in zip(lows, highs, inner))}
    return {}


def _attr_text(opcode: str, attrs: dict[str, object]) -> str:
    if opcode in ("transpose", "reverse", "broadcast", "concatenate"):
        return f", dimensions={{{','.join(map(str, attrs['dimensions']))}}}"  # type: ignore[call-overload]
    if opcode == "slice":
        return ", slice={" + ", ".join(f"[{s.start}:{s.limit}:{s.stride}]"
                                       for s in attrs["slice"]) + "}"  # type: ignore[attr-defined]
    if opcode == "pad":
        return ", padding=" + "x".join(f"{p.low}_{p.high}_{p.interior}"
                                       for p in attrs["padding"])  # type: ignore[attr-defined]
    return ""


def _line(inst: _Inst) -> str:
    if inst.text is not None:
        return inst.text
    root = "ROOT " if inst.is_root else ""
    if inst.original is not None:
        o = inst.original
        attrs = "".join(f", {k}={v}" for k, v in o.raw_attributes.items())
        if o.opcode == "parameter":
            return f"{root}{inst.name} = {inst.shape} parameter({o.parameter_number}){attrs}"
        if o.opcode == "constant":
            return f"{root}{inst.name} = {inst.shape} constant({o.literal}){attrs}"
        return f"{root}{inst.name} = {inst.shape} {inst.opcode}({', '.join(inst.operands)}){attrs}"
    return (f"{root}{inst.name} = {inst.shape} {inst.opcode}({', '.join(inst.operands)})"
            f"{_attr_text(inst.opcode, inst.attrs)}")


# -- translation validation --------------------------------------------------------------------


@dataclass(frozen=True)
class _Query:
    """One translation validation, stated in full: both graphs as module text with every name
    replaced by its position (inputs `p0, p1, ...`, instructions `v0, v1, ...`), so that equal
    queries are equal questions and one solver run answers all of them.

    `identity` is the input the replacement is (`copy(x) => x`), else `rhs` is its module text.
    `physical` holds the shapes (with layouts) of the replaced value and of its replacement
    when a user observes the layout and the two layouts differ: then the maps compared start
    at the value's memory offsets instead of its logical index."""

    params: tuple[tuple[str, Shape], ...]
    lhs: str
    rhs: str | None
    identity: str | None
    physical: tuple[Shape, Shape] | None


def _module_text(params: Sequence[tuple[str, Shape]], body: Sequence[_Inst]) -> str:
    lines = [f"  {p} = {s.without_layout()} parameter({k})" for k, (p, s) in enumerate(params)]
    for i, inst in enumerate(body):
        copy = _Inst(inst.name, inst.opcode, inst.shape.without_layout(), inst.operands,
                     inst.attrs, None, None, i == len(body) - 1)
        lines.append("  " + _line(copy))
    return "HloModule check\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def _canonical_text(params: Sequence[tuple[str, Shape]], body: Sequence[_Inst]) -> str:
    names = {p: f"p{k}" for k, (p, _s) in enumerate(params)}
    names.update({inst.name: f"v{k}" for k, inst in enumerate(body)})
    renamed = [_Inst(names[i.name], i.opcode, i.shape, [names[o] for o in i.operands], i.attrs)
               for i in body]
    return _module_text([(names[p], s) for p, s in params], renamed)


def _layout(shape: Shape) -> TiledLayout | str:
    """The layout XLA gives the shape (its default, major-to-minor, when none is written), or
    the shape's text when verifidx.hlo.layout does not model it (then it equals only itself)."""
    try:
        return as_tiled_shape(shape).layout
    except (UnsupportedError, ValueError):
        return str(shape)


def _validate(q: _Query) -> str | None:
    """None when the replacement provably computes what the matched graph computes (at every
    memory offset, for `q.physical`); otherwise why that was not shown."""
    from verifidx.analysis.computation_maps import output_to_input
    from verifidx.core.indexing_map import IndexingMap, compose
    from verifidx.solve.smt import equal_relations

    def maps(text: str) -> dict[str, list[Any]]:
        found = output_to_input(parse_hlo(text, check_shapes=True))
        assert isinstance(found, dict)
        per_param = found["e"][0]
        return {p: list(per_param.get(p, [])) for p, _s in q.params}

    left = maps(q.lhs)
    if q.rhs is None:
        shape = dict(q.params)[q.identity]  # type: ignore[index]
        right: dict[str, list[Any]] = {p: [] for p, _s in q.params}
        right[q.identity] = [IndexingMap.identity(shape.dims)]  # type: ignore[index]
    else:
        right = maps(q.rhs)
    if q.physical is not None:
        try:
            value, replacement = (as_tiled_shape(s) for s in q.physical)
        except (UnsupportedError, ValueError) as err:
            return f"the layouts are observed and differ, and are not modelled: {err}"
        if (value.layout.memory_space, value.layout.element_size_in_bits) != \
                (replacement.layout.memory_space, replacement.layout.element_size_in_bits):
            return (f"the replacement's layout {replacement.layout} puts the value in another "
                    f"memory space or element size than {value.layout}")
        left = {p: [compose(value.from_offset_map(), m) for m in ms] for p, ms in left.items()}
        right = {p: [compose(replacement.from_offset_map(), m) for m in ms]
                 for p, ms in right.items()}
    # The per-op map of a pad's scalar operand over-approximates (every output element; see
    # OVER_APPROXIMATIONS), all other maps here are exact. Every output element (every offset
    # that holds one) reads exactly one element, so when the array inputs' relations agree,
    # the elements reading a scalar are the same on both sides; with one scalar read in all,
    # they read the same value.
    # On physical maps that needs the offsets holding an element to be the same on both
    # sides, which the array inputs' relations show only when no offset reads a scalar.
    scalars = {p for p, s in q.params if s.rank == 0 and (left[p] or right[p])}
    if len(scalars) > 1:
        return "the graphs read two different scalars"
    if scalars and q.physical is not None:
        return "a padding scalar is read and the observed layouts differ"
    for p, _s in q.params:
        lm, rm = left[p], right[p]
        if (not lm and not rm) or p in scalars:
            continue
        if any(m.is_undefined for m in (*lm, *rm)):
            return f"a map to input {p} is undefined"
        v = equal_relations(lm, rm)
        if v.holds is not True:
            what = "differ" if v.holds is False else "were not shown equal (solver: unknown)"
            space = "physical maps (offset to input)" if q.physical else "maps"
            return f"the {space} to input {p} {what}" + (f": {v.message}" if v.message else "")
    return None


# -- the driver --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Application:
    """One rewrite that was made, and the validation query that licensed it (`query`: its
    number in the order the queries were first solved; a later application with the same
    query is answered by that run)."""

    computation: str
    instruction: str
    substitution: str
    query: int
    physical: bool  # validated on physical maps: the layout is observed and changes


@dataclass(frozen=True)
class Rejection:
    """A candidate rewrite that translation validation did not license, and why."""

    computation: str
    instruction: str
    substitution: str
    reason: str


@dataclass
class OptimizeResult:
    """The rewritten module and its account: every application with the query that licensed
    it (`applied`), the number of distinct queries solved, every rejected candidate once."""

    text: str
    applications: Counter[str]
    ops_before: int
    ops_after: int
    bytes_before: int
    bytes_after: int
    applied: list[Application] = field(default_factory=list)
    queries: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return len(self.rejections)

    def summary(self) -> str:
        count = len(self.applied)
        applied = ", ".join(f"{k} x{n}" for k, n in sorted(self.applications.items())) or "none"
        fresh = len({a.query for a in self.applied})
        physical = sum(a.physical for a in self.applied)
        validated = (f"each of the {count} applications translation-validated ({self.queries} "
                     f"distinct validation queries solved; {count - fresh} applications asked "
                     f"a query solved before; {physical} on physical maps)") if count else \
            f"{self.queries} distinct validation queries solved"
        text = (f"optimize: {count} substitutions applied ({applied});"
                f" data-movement ops {self.ops_before} -> {self.ops_after} "
                f"({self.ops_before - self.ops_after} removed); bytes moved "
                f"{self.bytes_before} -> {self.bytes_after} "
                f"({self.bytes_before - self.bytes_after} saved); {validated}; "
                f"{self.rejected} candidates rejected; {self.seconds:.2f}s")
        rejected = [f"rejected {r.substitution} at {r.instruction} in {r.computation}: {r.reason}"
                    for r in self.rejections]
        return "\n".join([text, *(f"note: {line}" for line in [*rejected, *self.notes])])


def load_proven(paths: Sequence[str | Path], unused: list[str] | None = None
                ) -> list[Substitution]:
    """The substitutions of `paths` whose certificate is current and proves again now (or whose
    rebuilt queries the proof cache records as proved by an earlier run holding its secret): a
    certificate is evidence to re-check,
    never a verdict to believe, whether it came with verifidx or from the user. Each one left
    out is described in `unused`, with its file, line and verdict."""
    from verifidx.analysis.subst.certificates import check_files
    from verifidx.analysis.subst.parser import load_substitution_file, substitution_files
    from verifidx.rules.proof_cache import ProofCache

    ok = set()
    for r in check_files(paths, recheck=True, cache=ProofCache()):
        if r.verdict == "proved":
            ok.add((r.file, r.name))
        elif unused is not None:
            unused.append(f"{r.file}:{r.line}: substitution {r.name} is not used: {r.verdict}"
                          + (f" ({r.message})" if r.message else ""))
    return [s for f in substitution_files(paths) for s in load_substitution_file(f)
            if (s.file, s.name) in ok]


def _observers(c: _Computation, value: _Inst, users: list[str]) -> list[str]:
    """Who sees the layout of `value`: its users that are not LAYOUT_BLIND, and the caller
    (named "") when it is the root."""
    return [u for u in users if c.insts[u].opcode not in LAYOUT_BLIND] + [""] * value.is_root


def _declarers(c: _Computation, value: _Inst, users: list[str]) -> list[str]:
    """Observers that also state the value's layout in a shape of their own (a fused
    computation's parameter, a tuple's shape, the caller's shape of the root): a replacement
    must have exactly that layout, not just the same offsets. A bitcast states none."""
    return [o for o in _observers(c, value, users) if not o or c.insts[o].opcode != "bitcast"]


def _names(c: _Computation, observers: list[str]) -> str:
    return ", ".join(f"{c.insts[o].opcode} {o}" if o else "the caller (it is the root)"
                     for o in observers)


def _explain(c: _Computation, b: Binding, q: _Query, users: list[str], why_not: str) -> str:
    """A rejection's reason in the module's own names."""
    params = list(dict.fromkeys(b.inputs.values()))
    for k in reversed(range(len(params))):
        why_not = why_not.replace(f"input p{k}", f"input {params[k]}")
    if q.physical is None:
        return why_not
    value, replacement = (_layout(s) for s in q.physical)
    seen = _names(c, _observers(c, c.insts[b.matched[-1]], users))
    return (f"the value's layout {value} is observed by {seen} and the replacement's is "
            f"{replacement}; {why_not}")


class _Optimizer:
    def __init__(self, subs: Sequence[Substitution]) -> None:
        self.by_root: dict[str, list[Substitution]] = {}
        for s in subs:
            self.by_root.setdefault(s.lhs.op, []).append(s)
        self.verdicts: dict[_Query, tuple[int, str | None]] = {}  # -> (number, why not)
        self.applications: Counter[str] = Counter()
        self.applied: list[Application] = []
        self.rejections: dict[tuple[str, str, str], Rejection] = {}

    def run(self, c: _Computation) -> None:
        progress = True
        while progress:
            progress = False
            users = c.users()
            for name in list(c.reachable()):
                for sub in self.by_root.get(c.insts[name].opcode, ()):
                    if self._try(c, sub, name, users):
                        progress = True
                        break
                if progress:
                    break

    def _try(self, c: _Computation, sub: Substitution, name: str,
             users: dict[str, list[str]]) -> bool:
        b = Binding()
        if not _match(sub.lhs, name, c, sub, b, users, True) or not _consistent(sub, b):
            return False
        env, lists = b.env()
        g = Graph(INTS, env, lists, sub.input_shapes, b.perms)
        try:
            if not all(g.well_formed(sub.rhs)) or \
                    tuple(g.shape(sub.rhs)) != c.insts[name].shape.dims:
                return False
            new = self._build(c, sub.rhs, g, b, name)
        except (IllFormed, KeyError, ZeroDivisionError):
            return False
        rhs_input = sub.rhs.name if sub.rhs.op == "input" else None
        removed = [c.insts[n] for n in b.matched]
        before = (len(removed), sum(_bytes(i.shape) for i in removed))
        after = (len(new), sum(_bytes(i.shape) for i in new))
        if after >= before:
            return False
        if rhs_input is not None:
            declared = _declarers(c, c.insts[name], users[name])
            kept = _layout(c.insts[name].shape)
            given = _layout(c.insts[b.inputs[rhs_input]].shape)
            if declared and kept != given:
                self.rejections.setdefault((c.comp.name, name, sub.name), Rejection(
                    c.comp.name, name, sub.name, f"the layout {kept} would become {given}, "
                    f"but {_names(c, declared)} declares the value's layout"))
                return False
        query = self._query(c, b, removed, new, rhs_input, users[name])
        if query not in self.verdicts:
            self.verdicts[query] = (len(self.verdicts), _validate(query))
        number, why_not = self.verdicts[query]
        if why_not is not None:
            self.rejections.setdefault((c.comp.name, name, sub.name), Rejection(
                c.comp.name, name, sub.name, _explain(c, b, query, users[name], why_not)))
            return False
        self.applied.append(Application(c.comp.name, name, sub.name, number,
                                        query.physical is not None))
        self._replace(c, b, new, rhs_input)
        self.applications[sub.name] += 1
        return True

    @staticmethod
    def _query(c: _Computation, b: Binding, removed: list[_Inst], new: list[_Inst],
               rhs_input: str | None, users: list[str]) -> _Query:
        """The validation of replacing the matched graph `removed` by `new` (or by an input)."""
        bound = dict.fromkeys(b.inputs.values())
        params = [(n, c.insts[n].shape) for n in bound]  # two inputs may bind one value
        lhs = [_Inst(i.name, i.opcode, i.shape, i.operands, i.attrs) for i in removed]
        value = removed[-1]
        replacement = c.insts[b.inputs[rhs_input]] if rhs_input is not None else new[-1]
        physical = (value.shape, replacement.shape) if _observers(c, value, users) and \
            _layout(value.shape) != _layout(replacement.shape) else None
        position = {p: k for k, (p, _s) in enumerate(params)}
        return _Query(tuple((f"p{k}", s) for k, (_p, s) in enumerate(params)),
                      _canonical_text(params, lhs),
                      None if rhs_input is not None else _canonical_text(params, new),
                      None if rhs_input is None else f"p{position[b.inputs[rhs_input]]}",
                      physical)

    def _build(self, c: _Computation, node: Node, g: Graph, b: Binding, root: str
               ) -> list[_Inst]:
        """The replacement's instructions, operands first; the last keeps the root's name and
        shape (so its users and the module's output are untouched)."""
        out: list[_Inst] = []

        def emit(n: Node, is_top: bool) -> str:
            if n.op == "input":
                return b.inputs[n.name]
            operands = [emit(a, False) for a in n.args]
            element = c.insts[root].shape.element_type
            shape = c.insts[root].shape if is_top else \
                Shape(element, tuple(int(x) for x in g.shape(n)))
            out.append(_Inst(root if is_top else c.fresh(root), n.op, shape, operands,
                             _attrs_for(n, g)))
            return out[-1].name

        emit(node, True)
        return out

    def _replace(self, c: _Computation, b: Binding, new: list[_Inst], rhs_input: str | None
                 ) -> None:
        root = c.insts[b.matched[-1]]
        was_root = root.is_root
        for n in b.matched:
            del c.insts[n]
        c.order = [n for n in c.order if n not in b.matched or n == root.name]
        position = c.order.index(root.name)
        c.order[position:position + 1] = [i.name for i in new]
        for i in new:
            c.insts[i.name] = i
        if rhs_input is not None:
            target = b.inputs[rhs_input]
            for inst in c.insts.values():
                if root.name in inst.operands:
                    inst.operands = [target if o == root.name else o for o in inst.operands]
                    inst.text = None
            if was_root:
                c.insts[target].is_root = True
                c.insts[target].text = None
        elif was_root:
            new[-1].is_root = True


def optimize(text: str, source: str = "<string>",
             substitutions: Sequence[str | Path] | Sequence[Substitution] = (), *,
             allow_unknown_opcodes: bool = False) -> OptimizeResult:
    """Rewrite every computation of the module until no proven substitution applies. The module
    is validated as `verifidx indexing` validates it (declared shapes, opcodes: `parse_hlo`)."""
    start = time.perf_counter()
    module = parse_hlo(text, source, check_shapes=True,
                       allow_unknown_opcodes=allow_unknown_opcodes)
    subs = [s for s in substitutions if isinstance(s, Substitution)]
    paths = [s for s in substitutions if not isinstance(s, Substitution)]
    unused: list[str] = []
    if paths:
        subs += load_proven(paths, unused)  # type: ignore[arg-type]
    if not subs:
        why = f" ({'; '.join(unused)})" if unused else ""
        raise UnsupportedError(f"no proven substitutions to apply{why}; run verifidx subst prove")
    lines = text.splitlines()
    opt = _Optimizer(subs)
    before = [0, 0]
    after = [0, 0]
    replaced: dict[int, list[str]] = {}  # first line of a computation body -> new lines
    dropped: set[int] = set()
    notes: list[str] = unused
    for comp in module.computations.values():
        c = _Computation(comp, lines)
        m0 = c.measure()
        before = [before[0] + m0[0], before[1] + m0[1]]
        inst_lines = [i.line for i in comp.instructions]
        if len(set(inst_lines)) != len(inst_lines) or 0 in inst_lines:
            notes.append(f"computation {comp.name}: instructions share lines; left as is")
            after = [after[0] + m0[0], after[1] + m0[1]]
            continue
        opt.run(c)
        m1 = c.measure()
        after = [after[0] + m1[0], after[1] + m1[1]]
        if m1 == m0 and not any(i.text is None for i in c.insts.values()):
            continue
        indent = lines[comp.instructions[0].line - 1][: comp.instructions[0].column - 1]
        replaced[min(inst_lines)] = [indent + _line(c.insts[n]) for n in c.order]
        dropped |= set(inst_lines)
    out: list[str] = []
    for k, line in enumerate(lines, start=1):
        if k in replaced:
            out += replaced[k]
        elif k not in dropped:
            out.append(line)
    return OptimizeResult("\n".join(out) + "\n", opt.applications, before[0], after[0],
                          before[1], after[1], opt.applied, len(opt.verdicts),
                          list(opt.rejections.values()), time.perf_counter() - start, notes)
