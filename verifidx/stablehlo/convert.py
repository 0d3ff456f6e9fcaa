"""StableHLO (an MLIR module) into verifidx's HLO IR, so the one per-op table applies.

Each `func.func` becomes a computation named after the function (`main` is the entry), its
arguments the parameters in order, its returned values the root (a `tuple` when there are several,
so outputs are numbered over the flattened results). Each op becomes the HLO instruction that
means the same (`stablehlo.transpose` -> `transpose`, `dot_general` -> `dot`,
`broadcast_in_dim` -> `broadcast` after a `reshape` that drops its size-1 expansions,
`func.call` -> `call`, ...); ops with several results become a tuple-shaped instruction and
`get-tuple-element`s; regions become computations. Ops without results (`jax.export`'s
`shape_assertion` custom call) define no value and are skipped. An op verifidx has no map for
keeps its MLIR name as opcode, so its maps say "unknown op stablehlo.xyz".

Dynamic dimensions (`?`) get symbolic sizes (`verifidx.hlo.dynamic_dims`): a function argument's
dimension is a size variable; sizes flow through ops, and integer shape values
(`get_dimension_size`, `reshape`/`concatenate` of them, constants, sums and products,
quotients by positive constants (derived sizes, `b floordiv 2`), and comparisons and
selections decided for every size) are followed so that
`dynamic_broadcast_in_dim`, `dynamic_reshape`, `dynamic_iota` and `set_dimension_size` get the
sizes their shape operands hold (and a `dynamic_gather` of one window at constant starts,
jax's `x[1:]` at a symbolic size, is the slice it is where the window lies inside the
operand at every size); a `4*b` argument dimension is `4 * b`, and one the entry
asserts equal to an expression of the dimension variables is that expression (`_export_sizes`).
A size that cannot be followed is a fresh, opaque size variable, which makes the maps that
depend on it unknown, never wrong.
Called functions are converted once per distinct call-site sizes (copies are suffixed `.1`, ...),
so a callee's sizes are always its caller's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from verifidx.core.errors import ParseError
from verifidx.core.expr import is_size_name
from verifidx.hlo.attribute_values import (
    AttributeValue,
    ConvolutionDimLabels,
    PadDim,
    SliceDim,
    WindowDim,
)
from verifidx.hlo.dynamic_dims import (
    SIZES_ATTRIBUTE,
    UNBOUNDED_SIZE,
    VALUE_ATTRIBUTE,
    SizeVar,
    SymSize,
)
from verifidx.hlo.module import HloComputation, HloInstruction, HloModule
from verifidx.hlo.shape import Shape, size_error
from verifidx.stablehlo.bindings import mlir, position

Size = int | SymSize
"""A dimension's size: a number, or a symbolic size for a dynamic dimension."""

_DYNAMIC = -9223372036854775808  # MLIR's ShapedType::kDynamic

LITERAL_KEPT = 200
"""Characters of an array constant's text kept in the IR (weights can be megabytes)."""

_RENAMED = {
    "broadcast_in_dim": "broadcast",
    "dot_general": "dot",
    "optimization_barrier": "opt-barrier",
}

_INT_TYPES = {"i1": "pred", "i2": "s2", "i4": "s4", "i8": "s8", "i16": "s16", "i32": "s32",
              "i64": "s64", "ui2": "u2", "ui4": "u4", "ui8": "u8", "ui16": "u16",
              "ui32": "u32", "ui64": "u64", "si8": "s8", "si16": "s16", "si32": "s32",
              "si64": "s64"}


def element_type(text: str) -> str:
    """MLIR element type text -> XLA's name (`i32` -> `s32`, `complex<f32>` -> `c64`)."""
    if text in _INT_TYPES:
        return _INT_TYPES[text]
    if text == "complex<f32>":
        return "c64"
    if text == "complex<f64>":
        return "c128"
    return text.lower()


def _ints(attr: Any) -> tuple[int, ...]:
    """Integers of a DenseI64ArrayAttr / DenseIntElementsAttr / ArrayAttr of IntegerAttr."""
    if attr is None:
        return ()
    ir = mlir()["ir"]
    for cls in (ir.DenseI64ArrayAttr, ir.DenseIntElementsAttr):
        if isinstance(attr, cls):
            return tuple(int(x) for x in cls(attr))
    if isinstance(attr, ir.DenseBoolArrayAttr):
        return tuple(int(bool(x)) for x in ir.DenseBoolArrayAttr(attr))
    if isinstance(attr, ir.IntegerAttr):
        return (ir.IntegerAttr(attr).value,)
    if isinstance(attr, ir.ArrayAttr):
        return tuple(ir.IntegerAttr(a).value for a in ir.ArrayAttr(attr))
    raise ValueError(f"expected integers, got {attr}")


def _int(attr: Any) -> int:
    return _ints(attr)[0]


def _attr(op: Any, name: str) -> Any:
    return op.attributes[name] if name in op.attributes else None


def _conv_labels(dn: Any) -> ConvolutionDimLabels:
    def spell(rank: int, first: tuple[int, str], second: tuple[int, str],
              spatial: Sequence[int]) -> str:
        chars = ["?"] * rank
        chars[first[0]], chars[second[0]] = first[1], second[1]
        for k, d in enumerate(spatial):
            chars[d] = str(k)
        return "".join(chars)

    nsp = len(dn.input_spatial_dimensions)
    lhs = spell(nsp + 2, (dn.input_batch_dimension, "b"), (dn.input_feature_dimension, "f"),
                dn.input_spatial_dimensions)
    rhs = spell(nsp + 2, (dn.kernel_input_feature_dimension, "i"),
                (dn.kernel_output_feature_dimension, "o"), dn.kernel_spatial_dimensions)
    out = spell(nsp + 2, (dn.output_batch_dimension, "b"), (dn.output_feature_dimension, "f"),
                dn.output_spatial_dimensions)
    return ConvolutionDimLabels(
        f"{lhs}_{rhs}->{out}", dn.input_batch_dimension, dn.input_feature_dimension,
        tuple(dn.input_spatial_dimensions), dn.kernel_input_feature_dimension,
        dn.kernel_output_feature_dimension, tuple(dn.kernel_spatial_dimensions),
        dn.output_batch_dimension, dn.output_feature_dimension,
        tuple(dn.output_spatial_dimensions))


def _window(sizes: Sequence[int], strides: Sequence[int], padding: Sequence[int],
            lhs: Sequence[int], rhs: Sequence[int], reversal: Sequence[int] = ()
            ) -> tuple[WindowDim, ...]:
    n = len(sizes)
    strides = strides or (1,) * n
    padding = padding or (0,) * (2 * n)
    lhs, rhs = lhs or (1,) * n, rhs or (1,) * n
    reversal = reversal or (0,) * n
    return tuple(WindowDim(sizes[k], strides[k], padding[2 * k], padding[2 * k + 1], lhs[k],
                           rhs[k], bool(reversal[k])) for k in range(n))


class _Function:
    """The state of converting one function body (or region) into one computation."""

    def __init__(self, conv: Converter, name: str, parent: _Function | None = None) -> None:
        self.conv = conv
        self.name = name
        self.parent = parent  # the function around a region
        self.at: Any = None  # the op being converted, for the position of an error
        self.insts: list[HloInstruction] = []
        self.names: dict[Any, str] = {}       # ir.Value -> instruction name
        self.sizes: dict[Any, tuple[Size, ...]] = {}
        self.ints: dict[Any, tuple[SymSize, ...]] = {}  # known contents of integer shape values
        self.shapes: dict[str, Shape] = {}
        self.used: set[str] = set()
        self.counter = 0

    # -- values and names ----------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = base.lstrip("%").replace("#", ".") or "v"
        name = base
        while name in self.used:
            self.counter += 1
            name = f"{base}.{self.counter}"
        self.used.add(name)
        return name

    def emit(self, name: str, opcode: str, shape: Shape, operands: Sequence[str] = (),
             sizes: Sequence[Size] | None = None, **attributes: AttributeValue) -> str:
        attrs: dict[str, Any] = dict(attributes)
        if sizes is not None and any(isinstance(s, SymSize) for s in sizes):
            attrs[SIZES_ATTRIBUTE] = (tuple(s if isinstance(s, SymSize) else None
                                            for s in sizes),)
        for leaf in shape.leaves():
            # a `?` dimension is counted as 1: its bound is an assumption (2^31 - 1), not a size
            too_large = size_error(tuple(1 if dyn else n for n, dyn in zip(leaf.dims,
                                                                           leaf.dynamic)))
            if too_large is not None:
                line, column = position(self.at) if self.at is not None else (1, 1)
                raise ParseError(f"StableHLO: {too_large}", line, column, self.conv.source)
        literal = attrs.pop("literal", None)
        literal_value = attrs.pop("literal_value", None)
        number = attrs.pop("parameter_number", None)
        self.insts.append(HloInstruction(
            name=name, opcode=opcode, shape=shape, operands=tuple(operands), attributes=attrs,
            parameter_number=number, literal=literal, literal_value=literal_value))
        self.shapes[name] = shape
        return name

    def operand(self, value: Any, user: Any) -> str:
        """The instruction that holds `value`, used by the op `user`. A region (comparator,
        reducer) may use a constant of the function around it, as `jax.export` prints
        `jnp.sort`'s comparator: the constant is converted again inside the region, which
        becomes a computation of its own."""
        name = self.names.get(value)
        if name is not None:
            return name
        outer = self.parent
        while outer is not None and value not in outer.names:
            outer = outer.parent
        owner = value.owner if outer is not None else None
        if getattr(owner, "name", None) == "stablehlo.constant":
            OpConverter(self.conv, self, owner).run()
            return self.names[value]
        line, column = position(user)
        what = "is not defined" if outer is None else \
            "is defined outside the region and is not a constant (not supported)"
        raise ParseError(f"StableHLO: value {value.get_name(self.conv.asm)} used by "
                         f"{user.name} in {self.name} {what}", line, column, self.conv.source)

    # -- types and sizes -------------------------------------------------------------------
    def type_sizes(self, t: Any, what: str, parameter: int | None = None
                   ) -> tuple[str, tuple[Size, ...]]:
        """Element type and per-dimension sizes; `?` dims get fresh size variables, named
        after the function's argument `parameter` when it is one."""
        ir = mlir()["ir"]
        if not isinstance(t, ir.RankedTensorType):
            return str(t), ()
        rt = ir.RankedTensorType(t)
        sizes: list[Size] = []
        for d, (n, bound) in enumerate(zip(rt.shape, _dim_bounds(rt))):
            if n != _DYNAMIC:
                sizes.append(int(n))
                continue
            label = f"dimension {d} of {what} in {self.name}"
            if parameter is not None:
                exported = self.conv.dim_sizes.get((parameter, d)) \
                    if self.conv.entry == self.name else None
                if exported is not None:
                    sizes.append(exported)
                    continue
                key = f"{self.name}_arg{parameter}_d{d}"
            else:  # every op result's `?` is its own size
                self.conv.opaque += 1
                key = f"size{self.conv.opaque}_d{d}"
            sizes.append(SymSize.of(SizeVar(key, label, bound)))
        return element_type(str(rt.element_type)), tuple(sizes)

    @staticmethod
    def shape_of(etype: str, sizes: Sequence[Size]) -> Shape:
        dims = tuple(s if isinstance(s, int) else s.hi for s in sizes)
        dynamic = tuple(isinstance(s, SymSize) for s in sizes)
        return Shape(etype, dims, dynamic)

    def result_sizes(self, t: Any, inferred: Sequence[Size | None] | None, what: str
                     ) -> tuple[str, tuple[Size, ...]]:
        """Sizes from the type, refined by what the op implies where the type says `?`."""
        etype, typed = self.type_sizes(t, what)
        if inferred is None or len(inferred) != len(typed):
            return etype, typed
        out: list[Size] = []
        for declared, known in zip(typed, inferred):
            if isinstance(declared, SymSize) and known is not None:
                out.append(_normal(known))
            else:
                out.append(declared)
        return etype, tuple(out)

    def record_value(self, name: str, vals: tuple[SymSize, ...]) -> None:
        """A scalar integer whose value is a size expression (jax.export's dimension variables
        and arithmetic on them) says so, for start indices computed from sizes
        (`verifidx.hlo.sized_ops`)."""
        if len(vals) != 1 or self.shapes[name].rank != 0:
            return
        k = next(k for k in range(len(self.insts) - 1, -1, -1) if self.insts[k].name == name)
        inst = self.insts[k]
        attributes: dict[str, Any] = dict(inst.attributes)  # sizes are not parsed values
        attributes[VALUE_ATTRIBUTE] = vals[0]
        self.insts[k] = replace(inst, attributes=attributes)

    def define(self, value: Any, name: str, sizes: tuple[Size, ...]) -> None:
        self.names[value] = name
        self.sizes[value] = sizes


def _normal(s: Size) -> Size:
    if isinstance(s, SymSize) and s.is_constant:
        return s.const
    return s


def _per_leaf(sizes: Sequence[tuple[Size, ...]]) -> dict[str, Any]:
    """The attributes that give a tuple's leaves their symbolic sizes (none when static)."""
    per_leaf = tuple(tuple(s if isinstance(s, SymSize) else None for s in sz) for sz in sizes)
    return {SIZES_ATTRIBUTE: per_leaf} if any(any(x is not None for x in leaf)
                                              for leaf in per_leaf) else {}


def _bound(s: Size) -> int:
    return s if isinstance(s, int) else s.hi


def _as_sym(s: Size) -> SymSize:
    return s if isinstance(s, SymSize) else SymSize(s)


_Converted = tuple[str, list[tuple[Size, ...]], list[tuple[SymSize, ...] | None]]
"""A converted function: computation name, result sizes, known integer contents of results."""


class Converter:
    """Converts one MLIR module; `convert()` gives the HloModule."""

    def __init__(self, module: Any, source: str) -> None:
        self.module = module
        self.source = source
        self.funcs: dict[str, Any] = {}
        self.computations: dict[str, HloComputation] = {}
        self.signatures: dict[tuple[object, ...], _Converted] = {}
        self.copies: dict[str, int] = {}
        self.region_count = 0
        self.opaque = 0
        self.entry = ""
        self.dim_sizes: dict[tuple[int, int], SymSize] = {}
        # one naming state for the module: value.get_name() alone renumbers the whole function
        # on every call
        self.asm = mlir()["ir"].AsmState(module.operation)

    def convert(self) -> HloModule:
        op = self.module.operation
        name = str(op.attributes["sym_name"]).strip('"') if "sym_name" in op.attributes else ""
        for f in self.module.body.operations:
            # a declaration (no body) runs code verifidx cannot see: calls to it stay unknown
            if f.operation.name == "func.func" and len(f.regions[0].blocks):
                self.funcs[str(f.attributes["sym_name"]).strip('"')] = f
        if not self.funcs:
            raise ParseError("StableHLO: the module has no func.func with a body",
                             source=self.source)
        entry = "main" if "main" in self.funcs else next(
            (n for n, f in self.funcs.items() if _visibility(f) != "private"),
            list(self.funcs)[-1])
        self.entry = entry
        self.dim_sizes = _export_sizes(self.funcs, entry)
        self.function(entry, None, None)
        for fname in self.funcs:
            if not any(key[0] == fname for key in self.signatures):
                self.function(fname, None, None)
        comps = dict(self.computations)
        main = comps.pop(entry)
        comps[entry] = replace(main, is_entry=True)
        return HloModule(name, comps, source=self.source)

    # -- functions -----------------------------------------------------------------------------
    def function(self, fname: str, arg_sizes: Sequence[tuple[Size, ...]] | None,
                 arg_ints: Sequence[tuple[SymSize, ...] | None] | None) -> _Converted:
        """Converts `fname` for these argument sizes (once per distinct sizes); returns the
        computation's name and the sizes and known integer contents of its results."""
        key = (fname, tuple(arg_sizes or ()), tuple(arg_ints or ()))
        done = self.signatures.get(key)
        if done is not None:
            return done
        n = self.copies.get(fname, 0)
        self.copies[fname] = n + 1
        comp_name = fname if n == 0 else f"{fname}.{n}"
        f = self.funcs[fname]
        block = f.regions[0].blocks[0]
        body = _Function(self, comp_name)
        result = self.block(body, block, arg_sizes, arg_ints)
        self.signatures[key] = (comp_name, *result)
        return self.signatures[key]

    def block(self, body: _Function, block: Any,
              arg_sizes: Sequence[tuple[Size, ...]] | None,
              arg_ints: Sequence[tuple[SymSize, ...] | None] | None,
              ) -> tuple[list[tuple[Size, ...]], list[tuple[SymSize, ...] | None]]:
        body.at = block.owner
        for i, arg in enumerate(block.arguments):
            etype, sizes = body.type_sizes(arg.type, f"parameter({i})", i)
            if arg_sizes is not None and i < len(arg_sizes) and len(arg_sizes[i]) == len(sizes):
                sizes = tuple(_normal(s) for s in arg_sizes[i])
            name = body.fresh(f"arg{i}")
            body.emit(name, "parameter", body.shape_of(etype, sizes), sizes=sizes,
                      parameter_number=i)
            body.define(arg, name, sizes)
            if arg_ints is not None and i < len(arg_ints) and arg_ints[i] is not None:
                body.ints[arg] = arg_ints[i]  # type: ignore[assignment]
                body.record_value(name, arg_ints[i])  # type: ignore[arg-type]
        return self.finish(body, *self.operations(body, block))

    def operations(self, body: _Function, block: Any) -> tuple[list[Any], Any]:
        """Converts the block's ops; returns the values it returns and its terminator."""
        returned: list[Any] = []
        terminator: Any = None
        for op in block.operations:
            name = op.operation.name
            if name in ("func.return", "stablehlo.return"):
                returned, terminator = list(op.operands), op.operation
                continue
            OpConverter(self, body, op).run()
        return returned, terminator

    def finish(self, body: _Function, returned: list[Any], terminator: Any
               ) -> tuple[list[tuple[Size, ...]], list[tuple[SymSize, ...] | None]]:
        names = [body.operand(v, terminator) for v in returned]
        sizes = [body.sizes.get(v, ()) for v in returned]
        ints = [body.ints.get(v) for v in returned]
        if len(names) == 1:
            root = names[0]
            body.insts = [replace(i, is_root=True) if i.name == root else i for i in body.insts]
        else:
            shape = Shape.tuple_of(*(body.shapes[n] for n in names))
            per_leaf = tuple(tuple(s if isinstance(s, SymSize) else None for s in sz)
                             for sz in sizes)
            attrs: dict[str, Any] = {}
            if any(any(x is not None for x in leaf) for leaf in per_leaf):
                attrs[SIZES_ATTRIBUTE] = per_leaf
            body.insts.append(HloInstruction(body.fresh("tuple"), "tuple", shape, tuple(names),
                                             attributes=attrs, is_root=True))
        comp = HloComputation(body.name, tuple(body.insts))
        self.computations[body.name] = comp
        return sizes, ints

    def branch(self, region: Any, around: _Function, captured: Sequence[tuple[Any, str]]
               ) -> tuple[str, list[tuple[Size, ...]]]:
        """A branch of `if`/`case` as a computation of its own, and the sizes of its results.
        Its regions take no arguments and use values of the function around them; HLO passes
        them in: the one parameter holds the `captured` values (value, name around), a tuple of
        them unless there is one."""
        self.region_count += 1
        name = f"{around.name}.region{self.region_count}"
        body = _Function(self, name, around)
        leaves = [(value, around.shapes[outer], around.sizes.get(value, ()))
                  for value, outer in captured]
        if len(leaves) == 1:
            value, shape, sizes = leaves[0]
            names = [body.emit(body.fresh("arg0"), "parameter", shape, sizes=sizes,
                               parameter_number=0)]
        else:
            state = body.emit(body.fresh("arg_tuple"), "parameter",
                              Shape.tuple_of(*(shape for _v, shape, _s in leaves)),
                              parameter_number=0)
            names = [body.emit(body.fresh(f"arg{i}"), "get-tuple-element", shape, (state,),
                               sizes, index=i) for i, (_v, shape, sizes) in enumerate(leaves)]
        for (value, _shape, sizes), inner in zip(leaves, names):
            body.define(value, inner, sizes)
            if value in around.ints:
                body.ints[value] = around.ints[value]
        results, _ints = self.finish(body, *self.operations(body, region.blocks[0]))
        return name, results

    def region(self, region: Any, around: _Function) -> str:
        """A region (reduce body, comparator, ...) as a computation of its own."""
        self.region_count += 1
        name = f"{around.name}.region{self.region_count}"
        body = _Function(self, name, around)
        self.block(body, region.blocks[0], None, None)
        return name

    def loop_region(self, region: Any, around: _Function, state: Sequence[tuple[Any, str]],
                    sizes: Sequence[tuple[Size, ...]],
                    ints: Sequence[tuple[SymSize, ...] | None], carries: bool
                    ) -> tuple[str, list[tuple[Size, ...]], list[tuple[SymSize, ...] | None]]:
        """A `while` condition or body as HLO has it: one parameter holding the loop state
        (value, name around: the region's arguments in order, then the values of the function
        around that the regions use, which HLO's loop carries unchanged), a tuple of them
        unless there is one, each with the given sizes and known integer contents. A body
        (`carries`) returns the carried values after its own results. Gives the computation's
        name and the sizes and integer contents it returns."""
        self.region_count += 1
        name = f"{around.name}.region{self.region_count}"
        body = _Function(self, name, around)
        block = region.blocks[0]
        body.at = block.owner
        shapes = [around.shapes[outer] for _v, outer in state]
        if len(state) == 1:
            inner = [body.emit(body.fresh("arg0"), "parameter", shapes[0], sizes=sizes[0],
                               parameter_number=0)]
        else:
            whole = body.emit(body.fresh("arg_tuple"), "parameter", Shape.tuple_of(*shapes),
                              parameter_number=0, **_per_leaf(sizes))
            inner = [body.emit(body.fresh(f"arg{i}"), "get-tuple-element", shape, (whole,),
                               sz, index=i) for i, (shape, sz) in enumerate(zip(shapes, sizes))]
        n = len(block.arguments)
        values = [*block.arguments, *(v for v, _outer in state[n:])]
        for i, (value, name_inside) in enumerate(zip(values, inner)):
            body.define(value, name_inside, sizes[i])
            if ints[i] is not None:
                body.ints[value] = ints[i]  # type: ignore[assignment]
                body.record_value(name_inside, ints[i])  # type: ignore[arg-type]
        returned, terminator = self.operations(body, block)
        if carries:
            returned = [*returned, *values[n:]]
        out_sizes, out_ints = self.finish(body, returned, terminator)
        return name, out_sizes, out_ints

    def save(self) -> tuple[object, ...]:
        """What converting a region adds to the module, to undo an attempt (`restore`)."""
        return (dict(self.computations), dict(self.signatures), dict(self.copies),
                self.region_count, self.opaque)

    def restore(self, saved: tuple[object, ...]) -> None:
        computations, signatures, copies, self.region_count, self.opaque = saved  # type: ignore
        self.computations = computations  # type: ignore[assignment]
        self.signatures = signatures  # type: ignore[assignment]
        self.copies = copies  # type: ignore[assignment]


_GENERATED = re.compile(r"(.*_arg\d+_d\d+|size\d+_d\d+)")
"""Keys the converter makes up for sizes: a dimension variable named so is not used as one."""


def _export_dim_names(funcs: dict[str, Any], entry: str) -> dict[tuple[int, int], tuple[str, int]]:
    """(argument, dimension) of the entry -> the `jax.export` dimension variable it defines and
    the dimension's factor. `jax.export`'s entry measures each dimension variable once and
    passes it to the wrapped function, whose parameter says which variable it is
    (`jax.global_constant = "b"`): `get_dimension_size` of an argument (maybe converted), the
    dimension is `b`; or (a `4*b` specification) the quotient of `divmod` of that by a constant
    `c`, whose remainder the entry asserts is 0 (`shape_assertion`), the dimension is `c * b`."""
    names: dict[tuple[int, int], tuple[str, int]] = {}
    block = funcs[entry].regions[0].blocks[0]
    args = list(block.arguments)
    asserted = _asserted_divisible(block)
    for op in block.operations:
        if op.operation.name != "func.call":
            continue
        callee = funcs.get(_callee(op))
        if callee is None or "arg_attrs" not in callee.attributes:
            continue
        arg_attrs = list(callee.attributes["arg_attrs"])
        for k, value in enumerate(op.operands):
            if k >= len(arg_attrs) or "jax.global_constant" not in arg_attrs[k]:
                continue
            name = str(arg_attrs[k]["jax.global_constant"]).strip('"')
            if not is_size_name(name) or _GENERATED.fullmatch(name) or \
                    name in (n for n, _f in names.values()):
                continue
            factor = 1
            call = value.owner
            if getattr(call, "name", None) == "func.call" and _callee(call) == "divmod" and \
                    value.result_number == 0:
                divisor = _int_constant(call.operands[1])
                if divisor is None or divisor < 1 or \
                        _measured(call.operands[0], args) is None or \
                        not any(_same_division(call, other, args) for other in asserted):
                    continue
                factor, value = divisor, call.operands[0]
            where = _measured(value, args)
            if where is not None:
                names.setdefault(where, (name, factor))
    return names


def _dim_bounds(rt: Any) -> list[int]:
    """Per dimension of a ranked tensor type, the largest size it may have: its
    `#stablehlo.bounds` entry, else `UNBOUNDED_SIZE` (a static dimension: its size)."""
    bounds: list[int] = []
    if rt.encoding is not None:
        try:
            bounds = list(mlir()["stablehlo"].TypeExtensions(rt.encoding).bounds)
        except Exception:
            bounds = []
    return [int(n) if n != _DYNAMIC else
            bounds[d] if d < len(bounds) and bounds[d] != _DYNAMIC else UNBOUNDED_SIZE
            for d, n in enumerate(rt.shape)]


def _export_sizes(funcs: dict[str, Any], entry: str) -> dict[tuple[int, int], SymSize]:
    """(argument, dimension) of the entry -> its size over `jax.export`'s dimension variables:
    the dimensions that define a variable (`_export_dim_names`), and every other dimension
    the entry asserts (`shape_assertion` of `compare EQ`) equal to an expression of them
    (`_asserted_equal`), so that `x: (b, s), y: (b, s)` share `b` and `s`. A variable's
    interval is what every such dimension implies: `b` in `[1, bound // 2]` where a
    dimension is `2 * b`."""
    block = funcs[entry].regions[0].blocks[0]
    args = list(block.arguments)
    names = _export_dim_names(funcs, entry)
    bounds: dict[str, int] = {}
    labels: dict[str, str] = {}
    for (a, d), (name, factor) in names.items():
        bound = _dim_bounds(mlir()["ir"].RankedTensorType(args[a].type))[d]
        bounds[name] = min(bounds.get(name, bound // factor), bound // factor)
        labels[name] = f"dimension {d} of parameter({a}) in {entry} (jax.export dimension " \
            f"variable {name}" + (f", the dimension {factor} * {name})" if factor != 1 else ")")

    def variables() -> dict[str, SymSize]:
        return {n: SymSize.of(SizeVar(n, labels[n], bounds[n])) for n in bounds}

    known = {where: variables()[name].times(factor) for where, (name, factor) in names.items()}
    for where, value, width in _asserted_equal(block, args):
        if where in known:
            continue
        size = _dimension_expression(value, args, known)
        bound = _dim_bounds(mlir()["ir"].RankedTensorType(args[where[0]].type))[where[1]]
        # the program compares modulo 2^width: inside these limits only `size` itself is
        # congruent to a dimension in [1, bound]
        if size is None or size.lo < 1 or size.hi > 2**width or size.lo <= bound - 2**width:
            continue
        single = [(m, c) for m, c in size.terms]
        if len(single) == 1 and len(single[0][0]) == 1 and single[0][1] > 0 and \
                isinstance(single[0][0][0], SizeVar) and single[0][0][0].key in bounds:
            (((var,), c),) = single
            # the dimension is at most `bound`, so the variable is at most this
            tight = (bound - size.const) // c
            if tight < 1:
                continue
            bounds[var.key] = min(bounds[var.key], tight)
        known = {w: _rebound(s, variables()) for w, s in known.items()}
        known[where] = _rebound(size, variables())
    return known


def _rebound(size: SymSize, variables: dict[str, SymSize]) -> SymSize:
    """`size` over `variables` (the same names, with their final intervals)."""
    out = SymSize(size.const)
    for mono, c in size.terms:
        term = SymSize(c)
        for atom in mono:
            assert isinstance(atom, SizeVar)
            term = term.mul(variables[atom.key])
        out = out.plus(term)
    return out


def _equality_assertions(block: Any) -> list[Any]:
    """The `compare EQ` ops that the block's `shape_assertion` custom calls assert, in order."""
    found = []
    for op in block.operations:
        if op.operation.name != "stablehlo.custom_call" or \
                str(op.attributes["call_target_name"]).strip('"') != "shape_assertion" or \
                not len(op.operands):
            continue
        cmp = op.operands[0].owner
        if getattr(cmp, "name", None) == "stablehlo.compare" and mlir()["stablehlo"]. \
                ComparisonDirectionAttr(cmp.attributes["comparison_direction"]).value == "EQ":
            found.append(cmp)
    return found


def _asserted_equal(block: Any, args: list[Any]) -> list[tuple[tuple[int, int], Any, int]]:
    """(dimension, value, bit width) for each `shape_assertion` of `compare EQ` of a measured
    argument dimension with another value (either side), in order."""
    found = []
    for cmp in _equality_assertions(block):
        width = {"i32": 32, "i64": 64}.get(_element(cmp.operands[0].type))
        if width is None:
            continue
        for a, b in ((0, 1), (1, 0)):
            where = _measured(cmp.operands[a], args)
            if where is not None:
                found.append((where, cmp.operands[b], width))
    return found


def _dimension_expression(value: Any, args: list[Any], known: dict[tuple[int, int], SymSize]
                          ) -> SymSize | None:
    """The value the entry computes, as a polynomial in the dimension variables, modulo the
    integer type's 2^width (ring operations only: constants, measured dimensions whose size
    is known, same-type converts, sums, differences and products), and `divmod`'s quotient
    of a measured dimension by a constant that divides its size exactly (no wrap there: a
    dimension is its value). None otherwise."""
    owner = value.owner
    name = getattr(owner, "name", None)
    where = _measured(value, args)
    if where is not None:
        return known.get(where)
    if name == "stablehlo.constant":
        c = _int_constant(value)
        return None if c is None else SymSize(c)
    if name == "stablehlo.convert" and _element(owner.operands[0].type) == _element(value.type):
        return _dimension_expression(owner.operands[0], args, known)
    if name in _ARITH:
        x, y = (_dimension_expression(v, args, known) for v in owner.operands)
        return None if x is None or y is None else _arith(name, x, y)
    if name == "func.call" and _callee(owner) == "divmod" and value.result_number == 0 and \
            len(owner.operands) == 2:
        where, k = _measured(owner.operands[0], args), _int_constant(owner.operands[1])
        size = known.get(where) if where is not None else None
        if size is None or k is None or k < 1 or size.const % k or \
                any(c % k for _m, c in size.terms):
            return None
        return size.floordiv(k)
    return None


def _captured(region: Any) -> list[Any]:
    """The values a region (and the regions inside it) uses but does not define, in order of
    first use; constants are left out (a region converts them again, `_Function.operand`)."""
    inside: set[Any] = set()
    used: list[Any] = []

    def visit(block: Any) -> None:
        inside.update(block.arguments)
        for op in block.operations:
            used.extend(op.operands)
            inside.update(op.results)
            for inner in op.regions:
                for b in inner.blocks:
                    visit(b)

    for block in region.blocks:
        visit(block)
    out = [v for v in used if v not in inside
           and getattr(v.owner, "name", None) != "stablehlo.constant"]
    return list(dict.fromkeys(out))


def _callee(call: Any) -> str:
    return str(call.attributes["callee"]).lstrip("@").strip('"')


def _measured(value: Any, args: list[Any]) -> tuple[int, int] | None:
    """(argument, dimension) when `value` is `get_dimension_size` of an entry argument (maybe
    converted to another 32- or 64-bit integer, which holds a dimension exactly)."""
    source = value.owner
    while getattr(source, "name", None) == "stablehlo.convert" and \
            _element(source.results[0].type) in _WIDE - {"i1"}:
        source = source.operands[0].owner
    if getattr(source, "name", None) != "stablehlo.get_dimension_size":
        return None
    measured = source.operands[0]
    if measured not in args:
        return None
    return args.index(measured), _int(source.attributes["dimension"])


def _int_constant(value: Any) -> int | None:
    owner = value.owner
    if getattr(owner, "name", None) != "stablehlo.constant":
        return None
    ints = _constant_ints(owner)
    return ints[0].const if ints and len(ints) == 1 and ints[0].is_constant else None


def _asserted_divisible(block: Any) -> list[Any]:
    """The `divmod` calls whose remainder (result 1) the block asserts to be 0: a
    `shape_assertion` custom call of `compare EQ` of it with the constant 0."""
    found = []
    for cmp in _equality_assertions(block):
        for a, b in ((0, 1), (1, 0)):
            rem, zero = cmp.operands[a], cmp.operands[b]
            call = rem.owner
            if _int_constant(zero) == 0 and getattr(call, "name", None) == "func.call" and \
                    _callee(call) == "divmod" and rem.result_number == 1:
                found.append(call)
    return found


def _same_division(a: Any, b: Any, args: list[Any]) -> bool:
    """Two `divmod` calls of the same measured dimension by the same constant."""
    if len(a.operands) != 2 or len(b.operands) != 2:
        return False
    where = _measured(a.operands[0], args)
    return where is not None and where == _measured(b.operands[0], args) and \
        _int_constant(a.operands[1]) == _int_constant(b.operands[1])


def _visibility(f: Any) -> str:
    return str(f.attributes["sym_visibility"]).strip('"') if "sym_visibility" in f.attributes \
        else "public"


_ARITH = {"stablehlo.add", "stablehlo.subtract", "stablehlo.multiply"}


class OpConverter:
    """One op -> instructions."""

    def __init__(self, conv: Converter, fn: _Function, op: Any) -> None:
        self.conv = conv
        self.fn = fn
        self.op = op
        self.opname = op.operation.name
        fn.at = op.operation

    @property
    def short(self) -> str:
        return self.opname.split(".", 1)[1] if "." in self.opname else self.opname

    def in_sizes(self, i: int) -> tuple[Size, ...]:
        return self.fn.sizes.get(self.op.operands[i], ())

    def operands(self) -> list[str]:
        return [self.fn.operand(v, self.op.operation) for v in self.op.operands]

    def result_name(self, k: int = 0) -> str:
        res = self.op.results
        try:
            base = res[k].get_name(self.conv.asm) if len(res) == 1 else f"{self.short}"
        except Exception:
            base = self.short
        return self.fn.fresh(base)

    def single(self, opcode: str, operands: Sequence[str], inferred: Sequence[Size | None] | None
               = None, **attrs: AttributeValue) -> None:
        res = self.op.results[0]
        etype, sizes = self.fn.result_sizes(res.type, inferred, f"%{self.short}")
        name = self.result_name()
        self.fn.emit(name, opcode, self.fn.shape_of(etype, sizes), operands, sizes, **attrs)
        self.fn.define(res, name, sizes)

    def multi(self, opcode: str, operands: Sequence[str],
              inferred: Sequence[Sequence[Size | None] | None] | None = None,
              **attrs: AttributeValue) -> None:
        """An op with several results: a tuple-shaped instruction and get-tuple-elements."""
        results = list(self.op.results)
        if len(results) == 1:
            self.single(opcode, operands, inferred[0] if inferred else None, **attrs)
            return
        leaves: list[tuple[str, tuple[Size, ...]]] = []
        for k, r in enumerate(results):
            leaves.append(self.fn.result_sizes(r.type, inferred[k] if inferred else None,
                                               f"%{self.short}#{k}"))
        shape = Shape.tuple_of(*(self.fn.shape_of(e, s) for e, s in leaves))
        name = self.fn.fresh(self.short)
        per_leaf = tuple(tuple(s if isinstance(s, SymSize) else None for s in sz)
                         for _e, sz in leaves)
        all_attrs: dict[str, Any] = dict(attrs)
        if any(any(x is not None for x in leaf) for leaf in per_leaf):
            all_attrs[SIZES_ATTRIBUTE] = per_leaf
        self.fn.emit(name, opcode, shape, operands, None, **all_attrs)
        for k, (r, (etype, sizes)) in enumerate(zip(results, leaves)):
            gte = self.fn.fresh(f"{name}.{k}")
            self.fn.emit(gte, "get-tuple-element", self.fn.shape_of(etype, sizes), (name,),
                         sizes, index=k)
            self.fn.define(r, gte, sizes)

    # -- dispatch ------------------------------------------------------------------------------
    def run(self) -> None:
        if not len(self.op.results):
            return  # shape assertions and other ops without results define no value
        handler = getattr(self, "op_" + self.short, None) if self.opname.startswith(
            ("stablehlo.", "func.")) else None
        if handler is not None:
            handler()
        elif self.opname.startswith("stablehlo.") and self.elementwise():
            pass
        else:
            self.generic(self.opname if not self.opname.startswith("stablehlo.")
                         else _RENAMED.get(self.short, self.short.replace("_", "-")))
        self.track_ints()

    def generic(self, opcode: str, **attrs: AttributeValue) -> None:
        self.multi(opcode, self.operands(), None, **attrs)

    def elementwise(self) -> bool:
        from verifidx.hlo.indexing import ELEMENTWISE

        opcode = self.short.replace("_", "-")
        if opcode not in ELEMENTWISE and opcode != "bitcast-convert":
            return False
        res = self.op.results[0]
        rank = len(mlir()["ir"].RankedTensorType(res.type).shape) \
            if isinstance(res.type, mlir()["ir"].RankedTensorType) else 0
        inferred: list[Size | None] = [None] * rank
        for i in range(len(self.op.operands)):
            sz = self.in_sizes(i)
            if len(sz) == rank:
                for d in range(rank):
                    if inferred[d] is None or (isinstance(inferred[d], SymSize)
                                               and isinstance(sz[d], int)):
                        inferred[d] = sz[d]
        attrs: dict[str, Any] = {}
        if opcode == "compare":
            cd = mlir()["stablehlo"].ComparisonDirectionAttr(self.op.attributes[
                "comparison_direction"])
            attrs["direction"] = cd.value
        self.single(opcode, self.operands(), inferred, **attrs)
        return True

    # -- integer shape values ------------------------------------------------------------------
    def track_ints(self) -> None:
        """Follow the contents of small integer tensors that hold sizes."""
        op, fn = self.op, self.fn
        if len(op.results) != 1:
            return
        res = op.results[0]
        vals: tuple[SymSize, ...] | None = None
        ins = [fn.ints.get(v) for v in op.operands]
        if self.opname == "stablehlo.constant":
            vals = _constant_ints(op)
        elif self.opname == "stablehlo.get_dimension_size":
            sz = self.in_sizes(0)
            d = _int(op.attributes["dimension"])
            if 0 <= d < len(sz):
                vals = (_as_sym(sz[d]),)
        elif self.opname in ("stablehlo.reshape", "stablehlo.convert") and ins and ins[0]:
            vals = ins[0]
        elif self.opname == "stablehlo.broadcast_in_dim" and ins and ins[0] and len(ins[0]) == 1:
            n = fn.shapes[fn.names[res]].dims
            vals = ins[0] * (n[0] if len(n) == 1 else 1)
        elif self.opname == "stablehlo.concatenate" and ins and all(x is not None for x in ins):
            vals = tuple(x for part in ins for x in part)  # type: ignore[union-attr]
        elif self.opname == "stablehlo.slice" and ins and ins[0]:
            start = _ints(_attr(op, "start_indices"))
            limit = _ints(_attr(op, "limit_indices"))
            stride = _ints(_attr(op, "strides")) or (1,)
            if len(start) == 1:
                vals = ins[0][start[0]:limit[0]:stride[0]]
        elif self.opname in _ARITH and len(ins) == 2 and ins[0] and ins[1]:
            a, b = ins[0], ins[1]
            if len(a) == 1 and len(b) > 1:
                a = a * len(b)
            if len(b) == 1 and len(a) > 1:
                b = b * len(a)
            done = [_arith(self.opname, x, y) for x, y in zip(a, b)]
            if len(a) == len(b) and all(x is not None for x in done):
                vals = tuple(x for x in done if x is not None)
        elif self.opname in _DECIDED and any(x is not None for x in ins):
            vals = self.decided(ins)
        if vals is not None:
            fn.ints[res] = vals
            fn.record_value(fn.names[res], vals)

    def decided(self, ins: list[tuple[SymSize, ...] | None]) -> tuple[SymSize, ...] | None:
        """Element-wise, the value of `divide`, `remainder`, `sign`, `compare`, boolean
        `and`/`or`/`not` and `select` where it is the same for every value of the sizes
        (`jax.export`'s `divmod` of `4 * b` by 4 is `(b, 0)`, of `b` by 2 `(b floordiv 2,
        b mod 2)`), else None; an operand whose contents are not known (None) decides nothing
        but where the others do (`x and 0`)."""
        n = max(len(x) for x in ins if x is not None)
        if any(x is not None and len(x) not in (1, n) for x in ins):
            return None
        boolean = str(self.op.results[0].type).endswith("xi1>") or \
            str(self.op.results[0].type) == "tensor<i1>"
        direction = ""
        if self.opname == "stablehlo.compare":
            direction = mlir()["stablehlo"].ComparisonDirectionAttr(
                self.op.attributes["comparison_direction"]).value
        wide = all(_element(v.type) in _WIDE for v in self.op.operands)
        out = []
        for k in range(n):
            args = [None if x is None else x[k if len(x) > 1 else 0] for x in ins]
            v = _decide(self.opname, args, boolean, direction, wide)
            if v is None:
                return None
            out.append(SymSize(v) if isinstance(v, int) else v)
        return tuple(out)

    def shape_operand(self, i: int, rank: int) -> list[Size | None]:
        vals = self.fn.ints.get(self.op.operands[i])
        if vals is None or len(vals) != rank:
            return [None] * rank
        return [_normal(v) if v.lo >= 0 else None for v in vals]

    # -- ops -----------------------------------------------------------------------------------
    def op_constant(self) -> None:
        attr = self.op.attributes["value"]
        ir = mlir()["ir"]
        literal = str(attr)
        value: int | float | bool | None = None
        if isinstance(attr, ir.DenseElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
            splat = ir.DenseElementsAttr(attr).get_splat_value()
            if isinstance(splat, ir.IntegerAttr):
                iv = ir.IntegerAttr(splat).value
                value = bool(iv) if str(ir.IntegerAttr(splat).type) == "i1" else iv
            elif isinstance(splat, ir.FloatAttr):
                value = ir.FloatAttr(splat).value
        rank = len(ir.RankedTensorType(self.op.results[0].type).shape)
        attrs: dict[str, Any] = {
            "literal": str(value) if rank == 0 and value is not None else literal[:LITERAL_KEPT],
            "literal_value": value if rank == 0 else None}
        self.single("constant", (), **attrs)

    def op_iota(self) -> None:
        self.single("iota", (), iota_dimension=_int(self.op.attributes["iota_dimension"]))

    def op_dynamic_iota(self) -> None:
        rank = len(mlir()["ir"].RankedTensorType(self.op.results[0].type).shape)
        self.single("iota", (), self.shape_operand(0, rank),
                    iota_dimension=_int(self.op.attributes["iota_dimension"]))

    def op_get_dimension_size(self) -> None:
        self.single("get-dimension-size", self.operands(),
                    dimensions=(_int(self.op.attributes["dimension"]),))

    def op_set_dimension_size(self) -> None:
        d = _int(self.op.attributes["dimension"])
        inferred: list[Size | None] = list(self.in_sizes(0))
        vals = self.fn.ints.get(self.op.operands[1])
        if 0 <= d < len(inferred):
            inferred[d] = _normal(vals[0]) if vals and len(vals) == 1 and vals[0].lo >= 0 \
                else None
        self.single("set-dimension-size", self.operands(), inferred, dimensions=(d,))

    def op_reshape(self) -> None:
        self.single("reshape", self.operands())

    def op_dynamic_reshape(self) -> None:
        rank = len(mlir()["ir"].RankedTensorType(self.op.results[0].type).shape)
        self.single("reshape", self.operands()[:1], self.shape_operand(1, rank))

    def op_transpose(self) -> None:
        perm = _ints(self.op.attributes["permutation"])
        src = self.in_sizes(0)
        inferred = [src[p] if p < len(src) else None for p in perm]
        self.single("transpose", self.operands(), inferred, dimensions=perm)

    def op_reverse(self) -> None:
        self.single("reverse", self.operands(), list(self.in_sizes(0)),
                    dimensions=_ints(self.op.attributes["dimensions"]))

    def _broadcast(self, out_sizes: Sequence[Size | None], dims: Sequence[int]) -> None:
        """broadcast_in_dim: operand dims of static size 1 that expand are dropped by a reshape
        first (HLO's broadcast never expands)."""
        src = list(self.in_sizes(0))
        operand = self.operands()[0]
        etype, typed = self.fn.result_sizes(self.op.results[0].type, out_sizes, "%broadcast")
        keep = [k for k, d in enumerate(dims)
                if not (src[k] == 1 and typed[d] != 1)]
        if len(keep) != len(src):
            in_shape = self.fn.shapes[operand]
            kept_sizes = [src[k] for k in keep]
            name = self.fn.fresh(f"{operand}.squeeze")
            operand = self.fn.emit(name, "reshape",
                                   self.fn.shape_of(in_shape.element_type, kept_sizes),
                                   (operand,), kept_sizes)
        self.single("broadcast", (operand,), typed,
                    dimensions=tuple(dims[k] for k in keep))

    def op_broadcast_in_dim(self) -> None:
        self._broadcast([None] * len(mlir()["ir"].RankedTensorType(
            self.op.results[0].type).shape), _ints(self.op.attributes["broadcast_dimensions"]))

    def op_dynamic_broadcast_in_dim(self) -> None:
        rank = len(mlir()["ir"].RankedTensorType(self.op.results[0].type).shape)
        self._broadcast(self.shape_operand(1, rank),
                        _ints(self.op.attributes["broadcast_dimensions"]))

    def op_broadcast(self) -> None:
        rank_in = len(self.in_sizes(0))
        n = len(_ints(self.op.attributes["broadcast_sizes"]))
        self.single("broadcast", self.operands(), None,
                    dimensions=tuple(range(n, n + rank_in)))

    def op_slice(self) -> None:
        start = _ints(self.op.attributes["start_indices"])
        limit = _ints(self.op.attributes["limit_indices"])
        strides = _ints(self.op.attributes["strides"]) or (1,) * len(start)
        self.single("slice", self.operands(), None,
                    slice=tuple(SliceDim(a, b, c) for a, b, c in zip(start, limit, strides)))

    def op_pad(self) -> None:
        lo = _ints(self.op.attributes["edge_padding_low"])
        hi = _ints(self.op.attributes["edge_padding_high"])
        inner = _ints(self.op.attributes["interior_padding"])
        self._pad(lo, hi, inner, self.operands())

    def _pad(self, lo: Sequence[int], hi: Sequence[int], inner: Sequence[int],
             operands: Sequence[str]) -> None:
        src = self.in_sizes(0)
        inferred: list[Size | None] = []
        for k, s in enumerate(src):
            if isinstance(s, SymSize) and inner[k] == 0:
                inferred.append(s.plus(lo[k] + hi[k]))
            elif isinstance(s, SymSize):
                inferred.append(s.times(inner[k] + 1).plus(lo[k] + hi[k] - inner[k]))
            else:
                inferred.append(None)
        self.single("pad", operands, inferred,
                    padding=tuple(PadDim(a, b, c) for a, b, c in zip(lo, hi, inner)))

    def op_dynamic_pad(self) -> None:
        """With constant low and interior paddings; the high padding (`jnp.pad` to a multiple
        of a dynamic size computes it) only sets the output's size, which may stay a size of
        its own: no element before it depends on it."""
        src = self.in_sizes(0)
        rank = len(src)
        low, high, interior = (self.fn.ints.get(self.op.operands[i]) for i in (2, 3, 4))
        if not all(p is not None and len(p) == rank and all(v.is_constant for v in p)
                   for p in (low, interior)):
            self.generic("stablehlo.dynamic_pad")
            return
        lo = [v.const for v in low or ()]
        inner = [v.const for v in interior or ()]
        if high is not None and len(high) == rank and all(v.is_constant for v in high):
            self._pad(lo, [v.const for v in high], inner, self.operands()[:2])
            return
        inferred: list[Size | None] = []
        for k, s in enumerate(src):
            h = high[k] if high is not None and len(high) == rank else None
            inferred.append(None if h is None or min(inner[k], lo[k]) < 0 else _normal(
                _as_sym(s).times(inner[k] + 1).plus(lo[k] - inner[k]).plus(h)))
        etype, typed = self.fn.result_sizes(self.op.results[0].type, inferred, "%dynamic_pad")
        padding = []
        for k in range(rank):
            n_in, n_out = _bound(src[k]), _bound(typed[k])
            hi = n_out - lo[k] - n_in - max(n_in - 1, 0) * inner[k]
            padding.append(PadDim(lo[k], hi, inner[k]))
        self.single("pad", self.operands()[:2], typed, padding=tuple(padding))

    def op_concatenate(self) -> None:
        d = _int(self.op.attributes["dimension"])
        first = list(self.in_sizes(0))
        if 0 <= d < len(first):
            total: SymSize = SymSize(0)
            for i in range(len(self.op.operands)):
                sz = self.in_sizes(i)
                total = total.plus(_as_sym(sz[d]) if d < len(sz) else SymSize(0))
            first[d] = _normal(total)
        self.single("concatenate", self.operands(), first, dimensions=(d,))

    def op_dot_general(self) -> None:
        dn = mlir()["stablehlo"].DotDimensionNumbers(self.op.attributes["dot_dimension_numbers"])
        lb, rb = tuple(dn.lhs_batching_dimensions), tuple(dn.rhs_batching_dimensions)
        lc, rc = tuple(dn.lhs_contracting_dimensions), tuple(dn.rhs_contracting_dimensions)
        lhs, rhs = self.in_sizes(0), self.in_sizes(1)
        inferred: list[Size | None] = [lhs[k] for k in lb]
        inferred += [s for k, s in enumerate(lhs) if k not in lb and k not in lc]
        inferred += [s for k, s in enumerate(rhs) if k not in rb and k not in rc]
        self.single("dot", self.operands(), inferred, lhs_batch_dims=lb, rhs_batch_dims=rb,
                    lhs_contracting_dims=lc, rhs_contracting_dims=rc)

    def op_dot(self) -> None:
        lhs, rhs = self.in_sizes(0), self.in_sizes(1)
        inferred = list(lhs[:-1]) + list(rhs[1:])
        self.single("dot", self.operands(), inferred, lhs_contracting_dims=(len(lhs) - 1,),
                    rhs_contracting_dims=(0,))

    def op_reduce(self) -> None:
        dims = _ints(self.op.attributes["dimensions"])
        src = self.in_sizes(0)
        kept = [s for k, s in enumerate(src) if k not in dims]
        body = self.conv.region(self.op.regions[0], self.fn)
        n = len(self.op.results)
        self.multi("reduce", self.operands(), [kept] * n, dimensions=dims, to_apply=body)

    def op_reduce_window(self) -> None:
        a = self.op.attributes
        sizes = _ints(a["window_dimensions"])
        pad = _ints(_attr(self.op, "padding"))
        window = _window(sizes, _ints(_attr(self.op, "window_strides")), pad,
                         _ints(_attr(self.op, "base_dilations")),
                         _ints(_attr(self.op, "window_dilations")))
        body = self.conv.region(self.op.regions[0], self.fn)
        self.multi("reduce-window", self.operands(), None, window=window, to_apply=body)

    def op_select_and_scatter(self) -> None:
        rank = len(self.in_sizes(0))
        sizes = _ints(_attr(self.op, "window_dimensions")) or (1,) * rank
        window = _window(sizes, _ints(_attr(self.op, "window_strides")),
                         _ints(_attr(self.op, "padding")), (), ())
        select = self.conv.region(self.op.regions[0], self.fn)
        scatter = self.conv.region(self.op.regions[1], self.fn)
        self.single("select-and-scatter", self.operands(), list(self.in_sizes(0)),
                    window=window, select=select, scatter=scatter)

    def op_fft(self) -> None:
        kind = str(self.op.attributes["fft_type"])  # `#stablehlo<fft_type RFFT>`
        word = kind.rstrip(">").split()[-1].split("<")[-1]
        self.single("fft", self.operands(), None, fft_type=word,
                    fft_length=_ints(self.op.attributes["fft_length"]))

    def op_convolution(self) -> None:
        a = self.op
        dn = mlir()["stablehlo"].ConvDimensionNumbers(a.attributes["dimension_numbers"])
        labels = _conv_labels(dn)
        rhs = self.fn.shapes[self.operands()[1]].dims
        sizes = [rhs[d] for d in labels.kernel_spatial]
        window = _window(sizes, _ints(_attr(a, "window_strides")), _ints(_attr(a, "padding")),
                         _ints(_attr(a, "lhs_dilation")), _ints(_attr(a, "rhs_dilation")),
                         _ints(_attr(a, "window_reversal")))
        self.single("convolution", self.operands(), None, window=window, dim_labels=labels,
                    feature_group_count=_int(a.attributes["feature_group_count"]),
                    batch_group_count=_int(a.attributes["batch_group_count"]))

    def op_gather(self) -> None:
        gd = mlir()["stablehlo"].GatherDimensionNumbers(self.op.attributes["dimension_numbers"])
        self._gather(gd, _ints(self.op.attributes["slice_sizes"]), self.operands())

    def _gather(self, gd: Any, sizes: Sequence[int], operands: Sequence[str]) -> None:
        # the result's batch dimensions are the start indices' (but the index vector's), in
        # order, between the offset dimensions (the slice sizes of the dimensions kept)
        indices = list(self.in_sizes(1))
        if gd.index_vector_dim < len(indices):
            del indices[gd.index_vector_dim]
        dropped = set(gd.collapsed_slice_dims) | set(gd.operand_batching_dims)
        offsets = [n for k, n in enumerate(sizes) if k not in dropped]
        inferred: list[Size | None] = []
        for d in range(len(indices) + len(offsets)):
            source = offsets if d in gd.offset_dims else indices
            inferred.append(source.pop(0) if source else None)
        self.single("gather", operands, inferred, offset_dims=tuple(gd.offset_dims),
                    collapsed_slice_dims=tuple(gd.collapsed_slice_dims),
                    start_index_map=tuple(gd.start_index_map),
                    index_vector_dim=gd.index_vector_dim,
                    operand_batching_dims=tuple(gd.operand_batching_dims),
                    start_indices_batching_dims=tuple(gd.start_indices_batching_dims),
                    slice_sizes=tuple(sizes))

    def op_dynamic_gather(self) -> None:
        vals = self.fn.ints.get(self.op.operands[2])
        gd = mlir()["stablehlo"].GatherDimensionNumbers(self.op.attributes["dimension_numbers"])
        if vals is not None and all(v.is_constant for v in vals):
            self._gather(gd, [v.const for v in vals], self.operands()[:2])
        elif vals is None or not self._window_as_slice(gd, vals):
            self.generic("stablehlo.dynamic_gather")

    def _window_as_slice(self, gd: Any, sizes: Sequence[SymSize]) -> bool:
        """A gather of one window at constant starts whose sizes follow from the sizes, as
        jax lowers `x[1:]` at a symbolic size: the slice `[s, s + n)` of every dimension, when
        the window lies inside the operand at every size (so the gather's clamp of the start
        leaves it); False when it is not that."""
        src = self.in_sizes(0)
        rank = len(src)
        starts = self.fn.ints.get(self.op.operands[1])
        if gd.collapsed_slice_dims or gd.operand_batching_dims or len(sizes) != rank or \
                list(gd.offset_dims) != list(range(rank)) or gd.index_vector_dim != 0 or \
                starts is None or len(starts) != len(gd.start_index_map) or \
                not all(v.is_constant for v in starts) or \
                _element(self.op.operands[2].type) not in _WIDE or \
                not all(_exact(n) for n in sizes):  # (the program's sizes are these)
            return False
        at = {k: starts[i].const for i, k in enumerate(gd.start_index_map)}
        for k in range(rank):
            start, n = at.get(k, 0), sizes[k]
            room = _as_sym(src[k]).plus(n.times(-1)).plus(-start)  # (size - window - start)
            if start < 0 or room.lo < 0 or n.lo < 0:
                return False
        self._slice([(at.get(k, 0), sizes[k].plus(at.get(k, 0)), 1) for k in range(rank)])
        return True

    def op_scatter(self) -> None:
        sd = mlir()["stablehlo"].ScatterDimensionNumbers(
            self.op.attributes["scatter_dimension_numbers"])
        body = self.conv.region(self.op.regions[0], self.fn)
        # each result has its input's shape (StableHLO's scatter), so its sizes
        self.multi("scatter", self.operands(),
                   [list(self.in_sizes(i)) for i in range(len(self.op.results))],
                   update_window_dims=tuple(sd.update_window_dims),
                   inserted_window_dims=tuple(sd.inserted_window_dims),
                   scatter_dims_to_operand_dims=tuple(sd.scattered_dims_to_operand_dims),
                   index_vector_dim=sd.index_vector_dim,
                   input_batching_dims=tuple(sd.input_batching_dims),
                   scatter_indices_batching_dims=tuple(sd.scatter_indices_batching_dims),
                   to_apply=body)

    def op_dynamic_slice(self) -> None:
        self.single("dynamic-slice", self.operands(), None,
                    dynamic_slice_sizes=_ints(self.op.attributes["slice_sizes"]))

    def op_dynamic_update_slice(self) -> None:
        self.single("dynamic-update-slice", self.operands(), list(self.in_sizes(0)))

    def op_real_dynamic_slice(self) -> None:
        rank = len(self.in_sizes(0))
        parts = [self.fn.ints.get(self.op.operands[i]) for i in (1, 2, 3)]
        if not all(p is not None and len(p) == rank for p in parts):
            self.generic("stablehlo.real_dynamic_slice")
            return
        start, limit, stride = (p or () for p in parts)
        if not all(start[k].is_constant and stride[k].is_constant and stride[k].const > 0
                   for k in range(rank)):
            self.generic("stablehlo.real_dynamic_slice")
            return
        self._slice([(start[k].const, limit[k], stride[k].const) for k in range(rank)])

    def _slice(self, dims: Sequence[tuple[int, SymSize, int]]) -> None:
        """The HLO slice of operand 0 by (start, limit, stride) per dimension, a limit that
        may be a size (`_slice_size`)."""
        src = self.in_sizes(0)
        windows: list[SliceDim] = []
        inferred: list[Size | None] = []
        for k, (s, limit, t) in enumerate(dims):
            sk = src[k]
            in_bound = sk if isinstance(sk, int) else sk.hi
            size = self._slice_size(k, limit, s, t, in_bound)
            inferred.append(size)
            bound = size if isinstance(size, int) else size.hi
            windows.append(SliceDim(s, min(s + bound * t, in_bound) if bound else s, t))
        self.single("slice", self.operands()[:1], inferred, slice=tuple(windows))

    def _slice_size(self, d: int, limit: SymSize, start: int, stride: int, in_bound: int
                    ) -> Size:
        """The size `ceil((limit - start) / stride)` of dimension `d` of a slice whose limit
        may be a size: with a stride above 1 the derived size
        `(limit - start + stride - 1) floordiv stride`, unless the limit may lie below the
        start (the program is invalid at such sizes) or may not be the program's value (past
        32 bits): then a size of its own, in `[0, ceil((in_bound - start) / stride)]`. The
        elements before it do not depend on it, so the slice's map is exact at its value."""
        n = limit.plus(-start)
        if stride == 1:
            return _normal(n)
        if n.is_constant:
            return -(-n.const // stride)
        if n.lo >= 0 and _exact(limit) and _element(self.op.operands[2].type) in _WIDE:
            return _normal(n.plus(stride - 1).floordiv(stride))
        self.conv.opaque += 1
        return SymSize.of(SizeVar(
            f"size{self.conv.opaque}_d{d}",
            f"dimension {d} of %real_dynamic_slice in {self.fn.name} (a quotient of sizes)",
            -(-(in_bound - start) // stride), least=0))

    def op_sort(self) -> None:
        body = self.conv.region(self.op.regions[0], self.fn)
        dim = _int(self.op.attributes["dimension"])
        n = len(self.op.results)
        self.multi("sort", self.operands(), [list(self.in_sizes(0))] * n, dimensions=(dim,),
                   to_apply=body)

    def op_while(self) -> None:
        """HLO's form: the state is one tuple operand (unless it is one value), which also
        carries, unchanged, the values of the function that the regions use (a StableHLO region
        may use them, an HLO loop's computations only see the state; `jax.export` passes its
        dimension variables so).

        Every iteration's state has the initial state's sizes, and a known integer content,
        when the body, converted with them, returns them (by induction over iterations); an
        integer content the body changes (a counter) is dropped and the regions converted
        again. When the body returns other sizes (one it cannot follow), the loop is not
        converted: its maps are unknown ("unknown op stablehlo.while")."""
        cond_region, body_region = self.op.regions[0], self.op.regions[1]
        carried = list(dict.fromkeys([*_captured(cond_region), *_captured(body_region)]))
        values = [*self.op.operands, *carried]
        state = [(v, self.fn.operand(v, self.op.operation)) for v in values]
        sizes = [tuple(_normal(s) for s in self.fn.sizes.get(v, ())) for v, _n in state]
        ints = [self.fn.ints.get(v) for v in values]
        n = len(self.op.operands)
        while True:
            saved = self.conv.save()
            cond, _s, _i = self.conv.loop_region(cond_region, self.fn, state, sizes, ints, False)
            body, out_sizes, out_ints = self.conv.loop_region(body_region, self.fn, state,
                                                              sizes, ints, True)
            if [tuple(_normal(s) for s in sz) for sz in out_sizes] != sizes:
                self.conv.restore(saved)
                self.generic(self.opname)
                return
            changed = [i for i in range(n) if ints[i] is not None and out_ints[i] != ints[i]]
            if not changed:
                break
            self.conv.restore(saved)
            for i in changed:
                ints[i] = None
        names = [name for _v, name in state]
        shapes = [self.fn.shapes[name] for name in names]
        if len(names) == 1:
            self.single("while", names, list(sizes[0]), condition=cond, body=body)
        else:
            attrs = _per_leaf(sizes)
            whole = self.fn.emit(self.fn.fresh("while.state"), "tuple", Shape.tuple_of(*shapes),
                                 names, **attrs)
            loop = self.fn.emit(self.fn.fresh(self.short), "while", Shape.tuple_of(*shapes),
                                (whole,), condition=cond, body=body, **attrs)
            for k, result in enumerate(self.op.results):
                gte = self.fn.emit(self.fn.fresh(f"{loop}.{k}"), "get-tuple-element",
                                   shapes[k], (loop,), sizes[k], index=k)
                self.fn.define(result, gte, sizes[k])
        for result, vals in zip(self.op.results, ints):
            if vals is not None:
                self.fn.ints[result] = vals

    def op_case(self) -> None:
        """HLO's `conditional`: operand 0 selects the branch (an index), operand k + 1 holds
        what branch k uses from around it (`Converter.branch`)."""
        self._branches(lambda names: {"branch_computations": tuple(names)})

    def op_if(self) -> None:
        """HLO's `conditional` with a pred selector: the true branch, then the false one."""
        self._branches(lambda names: {"true_computation": names[0],
                                      "false_computation": names[1]})

    def _branches(self, attributes: Any) -> None:
        operands = [self.fn.operand(self.op.operands[0], self.op.operation)]
        names: list[str] = []
        results: list[list[tuple[Size, ...]]] = []
        for region in self.op.regions:
            captured = [(v, self.fn.operand(v, self.op.operation)) for v in _captured(region)]
            outer = [n for _v, n in captured]
            operands.append(outer[0] if len(outer) == 1 else self.fn.emit(
                self.fn.fresh(f"{self.short}.operands"), "tuple",
                Shape.tuple_of(*(self.fn.shapes[n] for n in outer)), outer))
            name, sizes = self.conv.branch(region, self.fn, captured)
            names.append(name)
            results.append(sizes)
        # a result's sizes are known where every branch gives it the same ones
        inferred: list[Sequence[Size | None] | None] = [
            list(per[0]) if all(x == per[0] for x in per) else None for per in zip(*results)]
        self.multi("conditional", operands, inferred, **attributes(names))

    def op_select(self) -> None:
        inferred = list(self.in_sizes(1))
        self.single("select", self.operands(), inferred)

    def op_optimization_barrier(self) -> None:
        names = self.operands()
        if len(names) == 1:
            self.single("copy", names, list(self.in_sizes(0)))
            return
        shape = Shape.tuple_of(*(self.fn.shapes[n] for n in names))
        tup = self.fn.emit(self.fn.fresh("barrier.tuple"), "tuple", shape, names)
        self.multi("opt-barrier", (tup,),
                   [list(self.in_sizes(i)) for i in range(len(names))])

    def op_tuple(self) -> None:
        names = self.operands()
        shape = Shape.tuple_of(*(self.fn.shapes[n] for n in names))
        name = self.result_name()
        self.fn.emit(name, "tuple", shape, names)
        self.fn.define(self.op.results[0], name, ())

    def op_get_tuple_element(self) -> None:
        self.single("get-tuple-element", self.operands(),
                    index=_int(self.op.attributes["index"]))

    def op_custom_call(self) -> None:
        target = str(self.op.attributes["call_target_name"]).strip('"')
        self.multi("custom-call", self.operands(), None, custom_call_target=target)

    def op_call(self) -> None:
        self._call(str(self.op.attributes["callee"]).lstrip("@").strip('"'))

    def op_composite(self) -> None:
        self._call(str(self.op.attributes["decomposition"]).lstrip("@").strip('"'))

    def _call(self, callee: str) -> None:
        if callee not in self.conv.funcs:
            self.generic(self.opname)
            return
        arg_sizes = [self.fn.sizes.get(v, ()) for v in self.op.operands]
        arg_ints = [self.fn.ints.get(v) for v in self.op.operands]
        comp, sizes, ints = self.conv.function(callee, arg_sizes, arg_ints)
        self.multi("call", self.operands(), sizes, to_apply=comp)
        for r, vals in zip(self.op.results, ints):
            if vals is not None:
                self.fn.ints[r] = vals


_DECIDED = {"stablehlo.divide", "stablehlo.remainder", "stablehlo.sign", "stablehlo.compare",
            "stablehlo.and", "stablehlo.or", "stablehlo.not", "stablehlo.select"}


_WIDE = {"i1", "i32", "i64", "si32", "si64"}
"""Element types in which a size shown in `[-2^31, 2^31)` is the program's value (signed:
an unsigned integer would hold a negative one wrapped)."""


def _element(t: Any) -> str:
    ir = mlir()["ir"]
    return str(ir.RankedTensorType(t).element_type) if isinstance(t, ir.RankedTensorType) \
        else ""


def _exact(a: SymSize) -> bool:
    """The program's integer holds `a` itself: it lies in `[-2^31, 2^31)` at every size (sums
    and products wrap, but agree with `a` modulo 2^32, so inside that range they are `a`)."""
    return -(2**31) <= a.lo and a.hi < 2**31


def _truncated(a: int, b: int) -> int:
    """StableHLO's integer division: rounded towards zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _decide(opname: str, args: list[SymSize | None], boolean: bool, direction: str,
            wide: bool) -> SymSize | int | None:
    """One element of `OpConverter.decided`: a value that holds for every value of the sizes,
    None where an argument is not known (None) and the others do not decide it. A size that
    is not a constant is used only in 32- or 64-bit integers (`wide`) and where it is the
    program's value (`_exact`): divided by a constant `c`, exactly where `c` divides every
    coefficient, else, for `c > 0` and a size at least 0 (where truncation is floor), the
    derived size `floor(a / c)` (`a mod c` for `remainder`); compared where the difference
    of the two sides has the same sign at every size (ordered comparisons only of sides at
    least 0, whose signed and unsigned orders agree)."""
    known = [a.const if a is not None and a.is_constant else None for a in args]
    sized = all(a is not None and (a.is_constant or (wide and _exact(a))) for a in args)
    if opname in ("stablehlo.divide", "stablehlo.remainder") and len(args) == 2:
        a, c = args[0], known[1]
        if a is None or not c or not sized:
            return None
        divide = opname == "stablehlo.divide"
        if known[0] is not None:
            q = _truncated(known[0], c)
            return q if divide else known[0] - c * q
        if a.const % c == 0 and all(coef % c == 0 for _m, coef in a.terms):
            return SymSize(a.const // c, tuple((m, coef // c) for m, coef in a.terms)) \
                if divide else 0
        if c < 1 or a.lo < 0:
            return None
        return a.floordiv(c) if divide else a.mod(c)
    if opname == "stablehlo.sign" and len(args) == 1:
        a = args[0]
        if a is None or not sized:
            return None
        return 1 if a.lo >= 1 else -1 if a.hi <= -1 else 0 if a == SymSize(0) else None
    if opname == "stablehlo.select" and len(args) == 3:
        return None if known[0] is None else args[1] if known[0] else args[2]
    if opname == "stablehlo.and" and 0 in known:
        return 0  # whatever the other operand is (bitwise too)
    if opname == "stablehlo.or" and boolean and 1 in known:
        return 1
    if opname == "stablehlo.compare" and len(args) == 2 and boolean:
        a, b = args
        if a is None or b is None or not sized or \
                (direction not in ("EQ", "NE") and min(a.lo, b.lo) < 0):
            return None
        d = a.plus(b.times(-1))
        return _compared(direction, d.lo, d.hi)
    if any(v is None for v in known) or not boolean:
        return None
    x = [v for v in known if v is not None]
    if opname == "stablehlo.and" and len(x) == 2:
        return int(bool(x[0]) and bool(x[1]))
    if opname == "stablehlo.or" and len(x) == 2:
        return int(bool(x[0]) or bool(x[1]))
    if opname == "stablehlo.not" and len(x) == 1:
        return int(not x[0])
    return None


_TESTS: dict[str, Callable[[int], bool]] = {
    "EQ": lambda x: x == 0, "NE": lambda x: x != 0, "LT": lambda x: x < 0,
    "LE": lambda x: x <= 0, "GT": lambda x: x > 0, "GE": lambda x: x >= 0}


def _compared(direction: str, lo: int, hi: int) -> int | None:
    """`d <direction> 0` where it is the same for every `d` in `[lo, hi]`: the ordered tests
    are monotone in `d`, so their ends decide; EQ and NE only where `lo == hi` or 0 lies
    outside."""
    test = _TESTS.get(direction)
    if test is None or (direction in ("EQ", "NE") and lo < hi and lo <= 0 <= hi):
        return None
    return int(test(lo)) if test(lo) == test(hi) else None


def _arith(opname: str, a: SymSize, b: SymSize) -> SymSize | None:
    if opname == "stablehlo.add":
        return a.plus(b)
    if opname == "stablehlo.subtract":
        return a.plus(b.times(-1))
    return a.mul(b)


def _constant_ints(op: Any) -> tuple[SymSize, ...] | None:
    ir = mlir()["ir"]
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return None
    t = ir.RankedTensorType(op.results[0].type)
    if len(t.shape) > 1:
        return None
    d = ir.DenseIntElementsAttr(attr)
    n = t.shape[0] if t.shape else 1
    if n > 64:
        return None
    boolean = str(t.element_type) == "i1"  # true is 1, whatever sign the attribute reads
    if d.is_splat:
        v = ir.IntegerAttr(d.get_splat_value()).value
        return (SymSize(int(bool(v)) if boolean else v),) * n
    return tuple(SymSize(int(bool(x)) if boolean else int(x)) for x in d)


def convert_module(module: Any, source: str = "<string>") -> HloModule:
    """The HloModule of a parsed (and verified) MLIR module."""
    return Converter(module, source).convert()
