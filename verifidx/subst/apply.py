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

The output is HLO text: untouched instructions keep their text, rewritten ones are printed
anew (no layouts, no metadata), parameters and the root's shape are unchanged.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifidx.errors import UnsupportedError
from verifidx.hlo.module import HloComputation, HloInstruction, PadDim, SliceDim
from verifidx.hlo.parser import parse_hlo
from verifidx.hlo.shape import Shape
from verifidx.subst.binding import Binding
from verifidx.subst.model import Node, Substitution, evaluate
from verifidx.subst.semantics import INTS, Graph, IllFormed, perm_value

DATA_MOVEMENT = frozenset({"transpose", "reshape", "bitcast", "broadcast", "slice", "concatenate",
                           "reverse", "pad", "copy", "gather", "dynamic-slice",
                           "dynamic-update-slice"})
"""The ops whose output sizes count as bytes moved (the issue's definition)."""


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


def _module_text(params: Sequence[tuple[str, Shape]], body: Sequence[_Inst]) -> str:
    lines = [f"  {p} = {s.without_layout()} parameter({k})" for k, (p, s) in enumerate(params)]
    for i, inst in enumerate(body):
        copy = _Inst(inst.name, inst.opcode, inst.shape.without_layout(), inst.operands,
                     inst.attrs, None, None, i == len(body) - 1)
        lines.append("  " + _line(copy))
    return "HloModule check\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def _validate(params: Sequence[tuple[str, Shape]], lhs: Sequence[_Inst], rhs: Sequence[_Inst],
              rhs_input: str | None) -> bool:
    from verifidx.computation_maps import output_to_input
    from verifidx.smt import equal_relations

    def maps(body: Sequence[_Inst]) -> dict[str, list[Any]]:
        module = parse_hlo(_module_text(params, body), check_shapes=True)
        found = output_to_input(module)
        assert isinstance(found, dict)
        per_param = found["e"][0]
        return {p: per_param.get(p, []) for p, _s in params}

    left = maps(lhs)
    if rhs_input is not None:  # the replacement is an input itself: the identity on it
        from verifidx.indexing_map import IndexingMap

        shape = dict(params)[rhs_input]
        right: dict[str, list[Any]] = {p: [] for p, _s in params}
        right[rhs_input] = [IndexingMap.identity(shape.dims)]
    else:
        right = maps(rhs)
    # The per-op map of a pad's scalar operand over-approximates (every output element; see
    # OVER_APPROXIMATIONS), all other maps here are exact. Every output element reads exactly
    # one element, so when the array inputs' relations agree, the elements reading a scalar
    # are the same on both sides; with one scalar read in all, they read the same value.
    scalars = {p for p, s in params if s.rank == 0 and (left[p] or right[p])}
    if len(scalars) > 1:
        return False
    for p, _s in params:
        lm, rm = left[p], right[p]
        if (not lm and not rm) or p in scalars:
            continue
        if any(m.is_undefined for m in (*lm, *rm)):  # type: ignore[attr-defined]
            return False
        if equal_relations(lm, rm).holds is not True:  # type: ignore[arg-type]
            return False
    return True


# -- the driver --------------------------------------------------------------------------------


@dataclass
class OptimizeResult:
    text: str
    applications: Counter[str]
    ops_before: int
    ops_after: int
    bytes_before: int
    bytes_after: int
    validations: int = 0
    rejected: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        applied = ", ".join(f"{k} x{n}" for k, n in sorted(self.applications.items())) or "none"
        text = (f"optimize: {sum(self.applications.values())} substitutions applied ({applied});"
                f" data-movement ops {self.ops_before} -> {self.ops_after} "
                f"({self.ops_before - self.ops_after} removed); bytes moved "
                f"{self.bytes_before} -> {self.bytes_after} "
                f"({self.bytes_before - self.bytes_after} saved); {self.validations} "
                f"translation validations, {self.rejected} rejected; {self.seconds:.2f}s")
        return "\n".join([text, *(f"note: {n}" for n in self.notes)])


def load_proven(paths: Sequence[str | Path]) -> list[Substitution]:
    """The substitutions of `paths` whose certificate is current and says proved."""
    from verifidx.subst.certificates import check_files
    from verifidx.subst.parser import load_substitution_file, substitution_files

    ok = {(r.file, r.name) for r in check_files(paths) if r.verdict == "proved"}
    return [s for f in substitution_files(paths) for s in load_substitution_file(f)
            if (s.file, s.name) in ok]


class _Optimizer:
    def __init__(self, subs: Sequence[Substitution]) -> None:
        self.by_root: dict[str, list[Substitution]] = {}
        for s in subs:
            self.by_root.setdefault(s.lhs.op, []).append(s)
        self.cache: dict[str, bool] = {}
        self.applications: Counter[str] = Counter()
        self.validations = 0
        self.rejected = 0

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
        bound = dict.fromkeys(b.inputs[n] for n, _s in sub.inputs if n in b.inputs)
        params = [(n, c.insts[n].shape) for n in bound]  # two inputs may bind one value
        key = repr((sub.name, [str(s) for _n, s in params], sorted(b.values.items()),
                    sorted(b.lists.items()), sorted(b.perms.items()),
                    [str(i.original and i.original.attributes) for i in removed]))
        if key not in self.cache:
            self.validations += 1
            lhs_body = [_Inst(i.name, i.opcode, i.shape, i.operands, i.attrs) for i in removed]
            self.cache[key] = _validate(params, lhs_body, new,
                                        None if rhs_input is None else b.inputs[rhs_input])
        if not self.cache[key]:
            self.rejected += 1
            return False
        self._replace(c, b, new, rhs_input)
        self.applications[sub.name] += 1
        return True

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
             substitutions: Sequence[str | Path] | Sequence[Substitution] = ()
             ) -> OptimizeResult:
    """Rewrite every computation of the module until no proven substitution applies."""
    start = time.perf_counter()
    module = parse_hlo(text, source, check_shapes=True)
    subs = [s for s in substitutions if isinstance(s, Substitution)]
    paths = [s for s in substitutions if not isinstance(s, Substitution)]
    if paths:
        subs += load_proven(paths)  # type: ignore[arg-type]
    if not subs:
        raise UnsupportedError("no proven substitutions to apply (run verifidx subst prove)")
    lines = text.splitlines()
    opt = _Optimizer(subs)
    before = [0, 0]
    after = [0, 0]
    replaced: dict[int, list[str]] = {}  # first line of a computation body -> new lines
    dropped: set[int] = set()
    notes: list[str] = []
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
                          before[1], after[1], opt.validations, opt.rejected,
                          time.perf_counter() - start, notes)
