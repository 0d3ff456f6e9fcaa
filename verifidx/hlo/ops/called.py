"""Ops that call a computation (`fusion`, `call`): their maps are compositions along the body,
which the analysis `verifidx.computation_maps` computes from this table. That module sits two
layers up, so it registers its builders here (a declared seam) instead of being imported; the
top-level package, which may load any layer, loads it on first use."""

from __future__ import annotations

from verifidx import seams
from verifidx.hlo.ops.common import Builder, Malformed, Maps, OpContext

SEAM = "called computations"

_called: tuple[Builder, Builder] | None = None


def register_called_computations(out2in: Builder, in2out: Builder) -> None:
    """`verifidx.computation_maps` registers its two builders here when it loads."""
    global _called
    _called = (out2in, in2out)


def _called_builders() -> tuple[Builder, Builder]:
    if _called is None:
        seams.load(SEAM)  # the package names the analysis to load (verifidx.seams)
    if _called is None:
        raise Malformed("maps through a called computation need verifidx.computation_maps, "
                        "which did not register them")
    return _called


def called_o2i(ctx: OpContext, output_id: int) -> list[Maps]:
    return _called_builders()[0](ctx, output_id)


def called_i2o(ctx: OpContext, input_id: int) -> list[Maps]:
    return _called_builders()[1](ctx, input_id)
