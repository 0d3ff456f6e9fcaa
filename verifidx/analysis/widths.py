"""Index widths of an HLO or StableHLO module: is 32-bit indexing safe for every size (issue 37)?

For every operand a fusion reads (for a module without fusions, every parameter the entry
reads), each of its root-to-parameter maps is composed with the operand's physical layout: the
value checked is the offset in elements of the element read (`ranges.fits` on the offset map);
and for every output the fusion writes, the offset of each element written.
A static dimension's stride comes from the shape's layout (tiles included, `verifidx.hlo.layout`).
A dynamic dimension (StableHLO's `?`, jax.export's symbolic `b`) is dense in its actual size:
the strides are products of the dimensions' symbolic sizes, in layout order, so the offset of
`f32[b, 8960]` is `d0 * 8960 + d1` with `d0 < b`, and the answer is "safe up to b = 239,674".
A tiled layout over a dynamic dimension is not read (the operand is unknown, with the reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.expr import Const, Expr, add, mul
from ..core.indexing_map import IndexingMap
from ..hlo.module import HloInstruction, HloModule
from ..hlo.shape import Shape
from .computation_maps import ComputationIndexing, computation_indexing, reported_computations
from .ranges import Fit, Overflow, fits, offset_map


@dataclass(frozen=True)
class OperandWidth:
    """One map of one operand: where it is (`computation`, `output`, `parameter`, `leaf`,
    `map_index`), the operand's shape, and `fit` of its physical offset (None: the map is
    unknown or its offset is not read, `reason` says why). `access` "write" is the store of
    output `output` itself (`parameter` -1, `parameter_name` the root)."""

    computation: str
    role: str
    output: int
    parameter: int
    parameter_name: str
    leaf: int
    map_index: int
    shape: str
    fit: Fit | None
    reason: str = ""
    access: str = "read"

    @property
    def verdict(self) -> str:
        return "unknown" if self.fit is None else self.fit.verdict


@dataclass(frozen=True)
class ModuleWidths:
    """Every operand's widths, and the verdict over all of them: "fits" when each is proven,
    "overflows" (with `first`: the operand whose overflow comes at the lexicographically
    smallest sizes) when one is witnessed, else "unknown"."""

    bits: int
    signed: bool
    operands: tuple[OperandWidth, ...]

    @property
    def verdict(self) -> str:
        verdicts = {o.verdict for o in self.operands}
        return "overflows" if "overflows" in verdicts else "unknown" if "unknown" in verdicts \
            else "fits"

    @property
    def first(self) -> tuple[OperandWidth, Overflow] | None:
        """The operand whose overflow comes at the lexicographically smallest sizes of the
        module (sizes by name; a size an operand's map does not have takes its lower end:
        that map overflows at every value of it), with those sizes."""
        lows: dict[str, int] = {}
        for o in self.operands:
            if o.fit is not None and o.fit.checked is not None:
                for z in o.fit.checked.sizes:
                    lows[z.name] = min(lows.get(z.name, z.bounds.lo), z.bounds.lo)
        names = sorted(lows)
        found = []
        for o in self.operands:
            over = None if o.fit is None else o.fit.overflow
            if over is not None:
                sizes = {k: over.sizes.get(k, lows[k]) for k in names}
                found.append((o, Overflow(over.result, sizes, over.smallest, over.point,
                                          over.value)))
        if not found:
            return None
        return min(found, key=lambda p: tuple(p[1].sizes.values()))

    @property
    def smallest_proven(self) -> bool:
        """The first overflow's sizes are the smallest of the module: every operand decided,
        each minimisation finished."""
        return self.verdict == "overflows" and all(
            o.fit is not None and o.fit.verdict != "unknown" and (
                o.fit.overflow is None or o.fit.overflow.smallest) for o in self.operands)


def checked_computations(module: HloModule) -> list[ComputationIndexing]:
    """The fusion bodies' root-to-parameter maps; the entry's when there is no fusion."""
    from .computation_maps import _roles

    roles = _roles(module)
    fused = [c for c in reported_computations(module) if roles.get(c.name) == "fusion"]
    return [computation_indexing(module, c, "out2in") for c in fused or [module.entry]]


def module_widths(module: HloModule, bits: int = 32, signed: bool = True,
                  computations: Sequence[ComputationIndexing] | None = None) -> ModuleWidths:
    """Every checked operand's offset against a `bits`-bit index (see the module docstring);
    `computations` are `checked_computations(module)` where the caller has them."""
    out: list[OperandWidth] = []
    for ci in checked_computations(module) if computations is None else computations:
        comp = ci.computation
        for o in range(len(ci.outputs)):
            for p in comp.parameters:
                number = p.parameter_number or 0
                for leaf, shape in enumerate(p.shape.leaves()):
                    for k, ind in enumerate(ci.maps_for(o, number, leaf)):
                        out.append(_operand(ci, o, p, number, leaf, shape, k, ind.map,
                                            bits, signed))
            out.append(_store(ci, o, bits, signed))
    return ModuleWidths(bits, signed, tuple(out))


def _store(ci: ComputationIndexing, output: int, bits: int, signed: bool) -> OperandWidth:
    """The offset of every element output `output` writes (the identity on the root's leaf,
    cut to its dynamic sizes)."""
    from ..hlo.dynamic_dims import start_indexing

    root, shape = ci.computation.root, ci.outputs[output]
    try:
        m = start_indexing(root, output, shape).map
        fit: Fit | None = fits(physical_offset(m, root, output, shape), bits, signed)
        reason = ""
    except (ValueError, NotImplementedError) as err:
        fit, reason = None, str(err)
    return OperandWidth(ci.computation.name, ci.role, output, -1, root.name, output, 0,
                        str(shape), fit, reason, "write")


def _operand(ci: ComputationIndexing, output: int, p: HloInstruction, number: int, leaf: int,
             shape: Shape, k: int, m: IndexingMap, bits: int, signed: bool) -> OperandWidth:
    def made(fit: Fit | None, reason: str = "") -> OperandWidth:
        return OperandWidth(ci.computation.name, ci.role, output, number, p.name, leaf, k,
                            str(shape), fit, reason)

    if m.is_undefined:
        return made(None, "unknown indexing: no offset to check")
    try:
        offset = physical_offset(m, p, leaf, shape)
        return made(fits(offset, bits, signed))
    except (ValueError, NotImplementedError) as err:
        return made(None, str(err))


def physical_offset(m: IndexingMap, p: HloInstruction, leaf: int, shape: Shape) -> IndexingMap:
    """`m` (a logical index into leaf `leaf` of `p`) with its results replaced by the physical
    offset of that element (see the module docstring for dynamic dimensions)."""
    from ..core.errors import UnsupportedError
    from ..hlo.dynamic_dims import declare, leaf_sizes

    sizes = leaf_sizes(p, leaf)
    if sizes is None:
        try:
            return offset_map(m, shape)
        except UnsupportedError as err:
            raise ValueError(str(err)) from None
    layout = shape.layout
    if layout is not None and (layout.tiles or getattr(layout, "other_items", ())):
        raise ValueError(f"a tiled layout over a dynamic dimension is not read: {shape}")
    rank = len(shape.dims)
    if m.num_results != rank:
        raise ValueError(f"the map has {m.num_results} results; {shape} has rank {rank}")
    order: Sequence[int] = tuple(layout.minor_to_major) if layout is not None else \
        tuple(range(rank - 1, -1, -1))
    extents: list[Expr] = [Const(int(d)) if s is None else s.expr()
                           for d, s in zip(shape.dims, sizes)]
    stride: Expr = Const(1)
    terms: list[Expr] = []
    for dim in order:
        terms.append(mul(m.results[dim], stride))
        stride = mul(stride, extents[dim])
    return declare(m, list(sizes)).with_results((add(*terms),))
