"""HLO text's bounded dynamic dimensions (`f32[<=16,8]`) as size variables.

In XLA a `<=N` dimension holds a runtime size in `[0, N]` and every op works on the first
`size` elements. The size may be 0 (the shape bounds it only from above; TensorFlow's XLA
lowering of tensor lists starts them at dynamic size 0), so the interval is `[0, N]`, not
StableHLO's `[1, N]`: a claim made for it holds for every size, empty included. The reader
gives each such dimension the symbolic size of `verifidx.hlo.dynamic_dims`, so the per-op maps
are cut to the sizes, and made unknown where that is not exact, as for StableHLO's bounded `?`
dimensions.

A dimension's size is the operand's where XLA's dynamic-dimension inference passes it through
unchanged (elementwise ops, broadcast, transpose, reduce, dot, a slice of the whole dimension,
a reshape that keeps the dimension whole, tuples) and into and out of a computation that one
`fusion` or `call` calls (`link_called_sizes`); elsewhere it is a fresh size variable of its
own. A fresh variable is never wrong (the map is exact at the variable's value at run time,
whatever the other sizes are) but knows less: maps that need two sizes known equal (broadcast,
reshape) become unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from verifidx.hlo.dynamic_dims import SIZES_ATTRIBUTE, SizeVar, SymSize
from verifidx.hlo.module import HloComputation, HloInstruction
from verifidx.hlo.ops.elementwise import ELEMENTWISE
from verifidx.hlo.shape import UNBOUNDED, Shape

Sizes = tuple[SymSize | None, ...]

_PASS_THROUGH = ELEMENTWISE | {"sort", "reverse", "bitcast-convert", "all-reduce",
                               "optimization-barrier", "opt-barrier"}
"""Ops whose output has the shape of operand 0 and its dynamic sizes."""

_CALLS = ("fusion", "call")
"""Ops whose callee's parameters are their operands and whose output is the callee's root."""


Linked = Callable[[HloInstruction, list["tuple[Sizes, ...] | None"], list[Shape]],
                  "tuple[Sizes, ...] | None"]
"""For a `fusion` or `call`: given its operands' sizes and shapes, the sizes of its output (its
callee's root's, the callee redone with those sizes as its parameters'), or None."""


def with_bounded_sizes(computation: str, instructions: Sequence[HloInstruction],
                       parameters: Mapping[int, tuple[Sizes, ...] | None] | None = None,
                       linked: Linked | None = None) -> list[HloInstruction]:
    """`instructions` (one computation, operands first) with `dynamic_sizes` recorded on every
    instruction whose shape has a `<=N` dimension; `parameters` gives a parameter (by number)
    the sizes of its caller's operand, `linked` the output of a call (`link_called_sizes`)."""
    if parameters is None and linked is None and not any(inst.shape.is_dynamic
                                                         for inst in instructions):
        return list(instructions)  # (nothing to record: every shape is static)
    known: dict[str, tuple[Sizes, ...]] = {}
    shapes: dict[str, Shape] = {}
    out: list[HloInstruction] = []
    for inst in instructions:
        shapes[inst.name] = inst.shape
        leaves = inst.shape.leaves()
        operands = [known.get(name) for name in inst.operands]
        operand_shapes = [shapes[name] for name in inst.operands if name in shapes]
        inferred: tuple[Sizes, ...] | None = None
        if linked is not None and inst.opcode in _CALLS:
            # redoes the callee, also when this call's own shape is static
            inferred = linked(inst, operands, operand_shapes)
        if parameters is not None and inst.opcode == "parameter":
            inferred = parameters.get(inst.parameter_number or 0)
        if SIZES_ATTRIBUTE in inst.attributes or not any(
                d and n != UNBOUNDED for leaf in leaves for n, d in zip(leaf.dims, leaf.dynamic)):
            known[inst.name] = tuple((None,) * leaf.rank for leaf in leaves)
            out.append(inst)
            continue
        if inferred is None:
            inferred = _infer(inst, operands, operand_shapes)
        per_leaf: list[Sizes] = []
        for li, leaf in enumerate(leaves):
            guess = inferred[li] if inferred is not None and li < len(inferred) else None
            sizes: list[SymSize | None] = []
            for d, (n, dynamic) in enumerate(zip(leaf.dims, leaf.dynamic)):
                if not dynamic or n == UNBOUNDED:
                    sizes.append(None)
                    continue
                g = guess[d] if guess is not None and d < len(guess) else None
                if g is not None and g.lo >= 0 and g.hi <= n:
                    sizes.append(g)
                    continue
                where = f" of leaf {li}" if inst.shape.is_tuple else ""
                key = f"{computation}/{inst.name}/{li}/{d}" if inst.shape.is_tuple \
                    else f"{computation}/{inst.name}/{d}"
                sizes.append(SymSize.of(SizeVar(
                    key,
                    f"dimension {d}{where} of %{inst.name} in {computation}", n, least=0)))
            per_leaf.append(tuple(sizes))
        known[inst.name] = tuple(per_leaf)
        attributes: dict[str, Any] = dict(inst.attributes)  # sizes are not parsed values
        attributes[SIZES_ATTRIBUTE] = tuple(per_leaf)
        out.append(dataclasses.replace(inst, attributes=attributes))
    return out


def _infer(inst: HloInstruction, ops: list[tuple[Sizes, ...] | None],
           operand_shapes: list[Shape]) -> tuple[Sizes, ...] | None:
    """The sizes XLA's dynamic-dimension inference gives the output, per leaf, where they are
    an operand's (None for a static dimension or one this does not follow)."""
    op = inst.opcode
    out = inst.shape
    if any(sizes is None for sizes in ops):
        return None
    known = [sizes for sizes in ops if sizes is not None]
    if op == "tuple":
        return tuple(leaf for sizes in known for leaf in sizes)
    if op == "get-tuple-element":
        index = inst.tuple_index
        tup = operand_shapes[0] if operand_shapes else None
        if index is None or tup is None or not 0 <= index < len(tup.tuple_shapes):
            return None
        start = sum(len(e.leaves()) for e in tup.tuple_shapes[:index])
        return known[0][start:start + len(tup.tuple_shapes[index].leaves())]
    if out.is_tuple or not known or len(known[0]) != 1:
        return None
    first = known[0][0]
    dims = inst.dimensions or ()
    if op in _PASS_THROUGH:
        # Operand 0 may be a scalar (`select`, `clamp`): the first operand of the output's rank.
        return next(((s[0],) for s in known if len(s) == 1 and len(s[0]) == out.rank), None)
    if op == "broadcast":
        result: list[SymSize | None] = [None] * out.rank
        for k, d in enumerate(dims):
            if k < len(first) and d < out.rank:
                result[d] = first[k]
        return (tuple(result),)
    if op == "transpose":
        return (tuple(first[p] if p < len(first) else None for p in dims),)
    if op == "reduce":
        return (tuple(s for k, s in enumerate(first) if k not in dims),)
    if op == "slice":
        return (_slice(inst, first),)
    if op == "dot" and len(known) == 2 and len(known[1]) == 1:
        return _dot(inst, first, known[1][0])
    if op == "reshape" and operand_shapes:
        return _reshape(operand_shapes[0], first, out)
    return None


def _slice(inst: HloInstruction, sizes: Sizes) -> Sizes:
    """A dimension sliced whole (`[0:N:1]` of a `<=N` dimension) keeps its size."""
    slices = inst.slice_dims or ()
    result: list[SymSize | None] = []
    for k, s in enumerate(sizes):
        sl = slices[k] if k < len(slices) else None
        whole = s is not None and sl is not None and sl.start == 0 and sl.stride == 1 and \
            k < inst.shape.rank and sl.limit == inst.shape.dims[k] and s.hi == sl.limit
        result.append(s if whole else None)
    return tuple(result)


def _dot(inst: HloInstruction, lhs: Sizes, rhs: Sizes) -> tuple[Sizes, ...] | None:
    """Batch dimensions, then the free dimensions of lhs, then those of rhs."""
    dn = inst.dot_dimension_numbers

    def free(sizes: Sizes, batch: Sequence[int], contracting: Sequence[int]
             ) -> list[SymSize | None]:
        return [s for a, s in enumerate(sizes) if a not in batch and a not in contracting]

    result = [lhs[a] if a < len(lhs) else None for a in dn.lhs_batch] + \
        free(lhs, dn.lhs_batch, dn.lhs_contracting) + free(rhs, dn.rhs_batch, dn.rhs_contracting)
    return (tuple(result),) if len(result) == inst.shape.rank else None


def _reshape(src: Shape, sizes: Sizes, out: Shape) -> tuple[Sizes, ...] | None:
    """A reshape that keeps every dynamic dimension whole, between runs of static dimensions
    of equal element counts on both sides (`[<=N,4] -> [<=N,2,2]`), keeps their sizes in order;
    others are not followed (their maps are unknown)."""

    def runs(dynamic: Sequence[bool], dims: Sequence[int]) -> list[int]:
        products, p = [], 1
        for is_dynamic, n in zip(dynamic, dims):
            if is_dynamic:
                products.append(p)
                p = 1
            else:
                p *= n
        return [*products, p]

    in_dynamic = [s is not None for s in sizes]
    if len(in_dynamic) != src.rank or in_dynamic.count(True) != out.dynamic.count(True) or \
            runs(in_dynamic, src.dims) != runs(out.dynamic, out.dims):
        return None
    carried = iter([s for s in sizes if s is not None])
    return (tuple(next(carried) if d else None for d in out.dynamic),)


def link_called_sizes(computations: Mapping[str, HloComputation]) -> dict[str, HloComputation]:
    """The computations with the sizes of each `fusion` and `call` passed on: a computation
    that one `fusion` or `call` calls, and nothing else, gets its caller's operand sizes as its
    parameters' (where the shapes agree), and the call's output its root's, so composed maps
    use the caller's size names instead of fresh ones. XLA passes a dynamic size through a
    call unchanged, so these are the sizes at run time. Computations called from several
    places keep sizes of their own (each call may pass different ones)."""
    comps = dict(computations)
    if not any(SIZES_ATTRIBUTE in i.attributes for c in comps.values() for i in c.instructions):
        return comps  # a static module: nothing to link
    sites: dict[str, list[tuple[str, HloInstruction]]] = {}
    for c in comps.values():
        for inst in c.instructions:
            for callee in inst.called_computations:
                sites.setdefault(callee, []).append((c.name, inst))

    def only_caller(callee: str, caller: str, inst: HloInstruction) -> bool:
        """`inst` in `caller` is the one call of `callee`, a fusion or call of it alone."""
        found = sites.get(callee, [])
        return callee in comps and len(found) == 1 and found[0][0] == caller and \
            found[0][1].name == inst.name and inst.opcode in _CALLS and \
            inst.called_computations == (callee,)

    def redo(name: str, parameters: Mapping[int, tuple[Sizes, ...] | None] | None
             ) -> HloComputation:
        comp = comps[name]
        plain = [dataclasses.replace(i, attributes={k: v for k, v in i.attributes.items()
                                                    if k != SIZES_ATTRIBUTE})
                 for i in comp.instructions]
        done = dataclasses.replace(comp, instructions=tuple(
            with_bounded_sizes(name, plain, parameters, lambda *a: linked(name, *a))))
        comps[name] = done
        return done

    def linked(caller: str, inst: HloInstruction, operands: list[tuple[Sizes, ...] | None],
               operand_shapes: list[Shape]) -> tuple[Sizes, ...] | None:
        callee = inst.called_computations[0] if inst.called_computations else ""
        if not only_caller(callee, caller, inst):
            return None
        params = {p.parameter_number: p.shape for p in comps[callee].instructions
                  if p.opcode == "parameter" and p.parameter_number is not None}
        given = {k: operands[k] for k, shape in params.items()
                 if k < min(len(operands), len(operand_shapes)) and operand_shapes[k] == shape}
        root = redo(callee, given).root
        if root.shape != inst.shape:
            return None
        value = root.attributes.get(SIZES_ATTRIBUTE)
        return cast("tuple[Sizes, ...]", value) if value is not None else None

    for name in list(comps):
        callers = sites.get(name, [])
        if not (len(callers) == 1 and only_caller(name, *callers[0])):
            redo(name, None)  # an entry or a shared callee: its calls pass sizes on
    return comps
