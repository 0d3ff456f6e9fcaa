"""Ops that call computations (`fusion`, `call`, `conditional`): their maps are compositions
along the called bodies (for a `conditional`, the union over its branches), which the analysis
`verifidx.analysis.computation_maps` computes from this table. That module sits two layers up, so it
registers its builders here, per opcode (a declared seam), instead of being imported; the
top-level package, which may load any layer, loads it on first use."""

from __future__ import annotations

from collections.abc import Mapping

from verifidx.core import seams
from verifidx.hlo.ops.common import Builder, Malformed, Maps, OpContext

SEAM = "called computations"

_called: dict[str, tuple[Builder, Builder]] = {}


def register_called_computations(builders: Mapping[str, tuple[Builder, Builder]]) -> None:
    """`verifidx.analysis.computation_maps` registers its (out2in, in2out) builders per opcode here
    when it loads."""
    _called.update(builders)


def _called_builders(opcode: str) -> tuple[Builder, Builder]:
    if opcode not in _called:
        seams.load(SEAM)  # the package names the analysis to load (verifidx.core.seams)
    found = _called.get(opcode)
    if found is None:
        raise Malformed(f"maps through the computations of {opcode} need "
                        "verifidx.analysis.computation_maps, which did not register them")
    return found


def called_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return _called_builders(ctx.opcode)[0](ctx, output_id)


def called_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return _called_builders(ctx.opcode)[1](ctx, input_id)
