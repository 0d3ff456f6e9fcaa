"""Whether a fusion's reads of each operand coalesce, and how many memory transactions a warp needs.

There is no GPU emitter in verifidx, so the thread-to-output mapping is a parameter. The default,
`loop_thread_order`, is the loop emitter's: thread `t` of block 0 handles the output elements
`t * unroll + u` for `u in [0, unroll)`, counted in the output's *physical* order (its layout), the
order in which the loop emitter walks the output. Each output element reads the operand through
the fusion's output-to-input maps; each operand index becomes a byte address through the
operand's physical layout (`verifidx.hlo.layout`, tiled layouts included).

A warp-wide load is one value of the innermost range variable of a map (the loop the emitter
runs; outer range variables sit at their first value, runtime variables at their lowest, as in
XLA's analysis, and the sizes of bounded dynamic dimensions at their bound), read by every
thread of the warp for all its output elements. Its element offsets are grouped into contiguous
runs; a run of `n` bytes costs `ceil(n / transaction_bytes)` transactions, the ideal is
`ceil(total bytes / transaction_bytes)`, and the load is coalesced when the ideal exceeds 0.9
times the estimate (XLA's threshold). An operand is coalesced when every one of its loads is
(an operand that is not read, or a scalar, is);
`transactions_per_warp` is the estimate of its most expensive load. Unlike XLA, which looks only
at the thread part of a map unless the range part is the bare range variable, every load is
evaluated in full, element by element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...core.errors import UnsupportedError
from ...hlo.layout import TiledShape, parse_shape
from ...hlo.module import HloInstruction, HloModule
from ...hlo.shape import Shape
from ..fusion import fusion_output_to_input

WARP_SIZE = 32
TRANSACTION_BYTES = 128
#: XLA's threshold: coalesced when ideal transactions > 0.9 * estimated transactions.
EFFICIENCY_THRESHOLD = 0.9

ThreadOrder = Callable[[TiledShape, int, int], list[tuple[int, ...]]]


def loop_thread_order(unroll: int = 1) -> ThreadOrder:
    """The loop emitter's mapping: thread t -> output elements t * unroll + u (physical order)."""

    def order(output: TiledShape, thread: int, _warp: int) -> list[tuple[int, ...]]:
        out = []
        for u in range(unroll):
            linear = thread * unroll + u
            if linear >= output.physical_elements:
                break
            idx = output.element_at(linear)
            if idx is not None:
                out.append(idx)
        return out

    return order


@dataclass(frozen=True)
class OperandCoalescing:
    operand_index: int
    parameter_name: str
    coalesced: bool
    transactions_per_warp: int
    ideal_transactions: int


@dataclass(frozen=True)
class FusionCoalescing:
    name: str
    computation: str
    operands: tuple[OperandCoalescing, ...]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "computation": self.computation, "operands": [
            {"operand_index": o.operand_index, "parameter_name": o.parameter_name,
             "coalesced": o.coalesced, "transactions_per_warp": o.transactions_per_warp}
            for o in self.operands]}


def _tiled(shape: Shape) -> TiledShape:
    if shape.is_tuple:
        raise UnsupportedError(f"tuple shape {shape} has no single layout")
    return parse_shape(str(shape))


def _runs(offsets: Sequence[int]) -> list[int]:
    """Lengths of the maximal runs of consecutive values in a sorted, distinct list."""
    runs: list[int] = []
    prev = None
    for o in offsets:
        if prev is not None and o == prev + 1:
            runs[-1] += 1
        else:
            runs.append(1)
        prev = o
    return runs


def _warp_loads(maps: Sequence[object], operand: TiledShape,
                outputs: Sequence[tuple[int, ...]]) -> list[set[int]]:
    """The element offsets of each warp-wide load: one load per map and per value of its
    innermost range variable (outer ones at their first value, runtime variables lowest, sizes
    of dynamic dimensions at their bound: the buffer as allocated)."""
    loads: list[set[int]] = []
    for oi in maps:
        m = oi.map  # type: ignore[attr-defined]
        if m.is_undefined:
            raise UnsupportedError("its map is undefined (verifidx could not model a read)")
        if m.num_results == 0:
            loads.append({0})
            continue
        outer = [v.bounds.lo for v in m.range_vars[:-1]]
        inner = ([range(m.range_vars[-1].bounds.lo, m.range_vars[-1].bounds.hi + 1)]
                 if m.num_range_vars else [range(0, 1)])
        rts = [v.bounds.lo for v in m.rt_vars]
        sizes = {z.name: z.bounds.hi for z in m.sizes}  # dynamic dimensions at their bound
        for s_inner in inner[0]:
            syms = [*outer, s_inner] if m.num_range_vars else []
            load: set[int] = set()
            for out in outputs:
                if not all(x in v.bounds for x, v in zip(out, m.dims)):
                    continue
                if not m.constraints_satisfied(out, [*syms, *rts], sizes):
                    continue
                idx = m.evaluate(out, [*syms, *rts], sizes)
                if all(0 <= i < n for i, n in zip(idx, operand.dims)):
                    load.add(operand.offset(idx))
            if load:
                loads.append(load)
    return loads


def fusion_coalescing(module: HloModule, fusion: HloInstruction, warp_size: int = WARP_SIZE,
                      transaction_bytes: int = TRANSACTION_BYTES,
                      thread_order: ThreadOrder | None = None) -> FusionCoalescing:
    """Per operand of one fusion instruction: coalesced or not, and transactions per warp."""
    order = thread_order or loop_thread_order()
    comp = module.computation(fusion.called_computations[0])
    out_shape = fusion.shape.tuple_shapes[0] if fusion.shape.is_tuple else fusion.shape
    output = _tiled(out_shape)
    outputs = [idx for t in range(warp_size) for idx in order(output, t, warp_size)]
    per_param = fusion_output_to_input(module, comp, output_leaf=0)
    entry_comp = _computation_of(module, fusion)
    results = []
    for i, operand_name in enumerate(fusion.operands):
        param = next(p for p in comp.parameters if p.parameter_number == i)
        operand_shape = entry_comp.instruction(operand_name).shape
        maps = per_param.get(param.name, ())
        if operand_shape.is_tuple:
            raise UnsupportedError(f"{_at(module, fusion)}: {fusion.name}: tuple-shaped operand "
                                   f"{operand_name}")
        operand = _tiled(operand_shape)
        try:
            loads = _warp_loads(maps, operand, outputs) if maps else []
        except UnsupportedError as exc:
            raise UnsupportedError(f"{_at(module, fusion)}: operand {i} ({param.name}) of "
                                   f"{fusion.name}: {exc}") from None
        elem_bytes = max(1, operand.element_bits // 8)
        coalesced, worst, worst_ideal = True, 0, 0
        for load in loads:
            offsets = sorted(load)
            estimated = sum(-(-n * elem_bytes // transaction_bytes) for n in _runs(offsets))
            ideal = -(-len(offsets) * elem_bytes // transaction_bytes)
            if not ideal > EFFICIENCY_THRESHOLD * estimated:
                coalesced = False
            if estimated > worst:
                worst, worst_ideal = estimated, ideal
        results.append(OperandCoalescing(i, param.name, coalesced, worst, worst_ideal))
    return FusionCoalescing(fusion.name, comp.name, tuple(results))


def _at(module: HloModule, inst: HloInstruction) -> str:
    """`file:line:column` of an instruction, for error messages."""
    return f"{module.source}:{inst.line}:{inst.column}"


def _computation_of(module: HloModule, inst: HloInstruction):  # type: ignore[no-untyped-def]
    for comp in module.computations.values():
        if any(i is inst for i in comp.instructions):
            return comp
    raise UnsupportedError(f"{inst.name} is in no computation")


def coalescing(module: HloModule, warp_size: int = WARP_SIZE,
               transaction_bytes: int = TRANSACTION_BYTES,
               thread_order: ThreadOrder | None = None) -> list[FusionCoalescing]:
    """One entry per fusion instruction of the module outside fused computations."""
    return [fusion_coalescing(module, inst, warp_size, transaction_bytes, thread_order)
            for inst in outer_fusions(module)]


def outer_fusions(module: HloModule) -> list[HloInstruction]:
    """The fusion instructions that are not themselves inside a fused computation: the kernels."""
    fused = {c for comp in module.computations.values() for inst in comp.instructions
             if inst.opcode == "fusion" for c in inst.called_computations}
    return [inst for comp in module.computations.values() if comp.name not in fused
            for inst in comp.instructions
            if inst.opcode == "fusion" and inst.called_computations]


def bandwidth_utilization(shape: Shape, tile_sizes: Sequence[int], tile_strides: Sequence[int],
                          transaction_bytes: int = 64) -> float:
    """Useful fraction of the DRAM bytes moved to read one tile: the contiguous part of the tile
    (minor dimensions, in layout order, with stride 1, up to the first one only partly covered)
    rounded up to whole transactions (XLA's heuristic for tiled memory access)."""
    tiled = _tiled(shape)
    contiguous = 1
    for d in tiled.layout.minor_to_major:
        if tile_strides[d] != 1:
            break
        contiguous *= min(tile_sizes[d], tiled.dims[d])
        if tile_sizes[d] < tiled.dims[d]:
            break
    used = contiguous * max(1, tiled.element_bits // 8)
    moved = transaction_bytes * -(-used // transaction_bytes)
    return used / moved


def _transposes_minor_dimension(module: HloModule, inst: HloInstruction) -> bool:
    if inst.opcode != "transpose":
        return False
    perm = inst.attributes.get("dimensions")
    operand = _computation_of(module, inst).instruction(inst.operands[0])
    out_minor = _tiled(inst.shape).layout.minor_to_major[0]
    in_minor = _tiled(operand.shape).layout.minor_to_major[0]
    return bool(perm) and perm[out_minor] != in_minor  # type: ignore[index]


def _from_broadcast(module: HloModule, inst: HloInstruction) -> bool:
    """Through single-operand bitcasts and elementwise ops, the value is a broadcast or iota."""
    elementwise = {"abs", "negate", "exponential", "log", "convert", "copy", "sqrt", "rsqrt",
                   "tanh", "sign", "floor", "ceil", "not", "cosine", "sine"}
    comp = _computation_of(module, inst)
    while True:
        if inst.opcode in ("broadcast", "iota"):
            return True
        if len(inst.operands) != 1 or (inst.opcode != "bitcast" and
                                       inst.opcode not in elementwise):
            return False
        inst = comp.instruction(inst.operands[0])


def read_coalesced_heuristic(module: HloModule, producer: HloInstruction,
                             consumer: HloInstruction | None = None) -> bool:
    """XLA's structural heuristic for non-transpose emitters: a transpose of the minor dimension
    breaks coalescing unless it transposes a broadcast or iota (fusions are searched inside)."""

    def bad(inst: HloInstruction) -> bool:
        insts = [inst]
        if inst.opcode == "fusion":
            insts = list(module.computation(inst.called_computations[0]).instructions)
        return any(_transposes_minor_dimension(module, i) and not _from_broadcast(
            module, _computation_of(module, i).instruction(i.operands[0])) for i in insts)

    return not bad(producer) and not (consumer is not None and bad(consumer))
