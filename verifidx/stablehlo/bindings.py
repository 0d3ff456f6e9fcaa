"""The MLIR Python bindings that jaxlib ships (`jax.extend.mlir`), behind one door.

Everything that touches jaxlib goes through here: it is an optional extra
(`pip install 'verifidx[stablehlo]'`, versions pinned because that API promises no
compatibility across releases), so importing verifidx never needs it, and a missing install is
one clear error (`StableHloUnavailable`) instead of an ImportError.
"""

from __future__ import annotations

import re
from typing import Any

from verifidx.errors import ParseError, UnsupportedError

INSTALL_HINT = "install the extra: pip install 'verifidx[stablehlo]'"


class StableHloUnavailable(UnsupportedError):
    """The text is StableHLO (MLIR) but jax/jaxlib are not installed."""


_MLIR: dict[str, Any] = {}


def mlir() -> dict[str, Any]:
    """`ir`, `passmanager`, `stablehlo` and a context maker, imported once."""
    if _MLIR:
        return _MLIR
    try:
        from jax.extend.mlir import ir, passmanager
        from jax.extend.mlir.dialects import stablehlo
    except ImportError as err:
        raise StableHloUnavailable(
            f"this is StableHLO (MLIR) text, which needs jax and jaxlib ({INSTALL_HINT}): "
            f"{err}") from None
    stablehlo.register_stablehlo_passes()
    _MLIR.update(ir=ir, passmanager=passmanager, stablehlo=stablehlo)
    return _MLIR


def new_context() -> Any:
    """An MLIR context with the dialects JAX prints (func, stablehlo, chlo, sdy, ...).

    `jax.extend.mlir` exposes no context maker, and a bare `ir.Context` lacks the upstream
    dialects (`func`); JAX's own `make_ir_context` registers exactly the dialects of the text it
    prints, so it is used here (its module path is private: the pin on jax keeps it stable)."""
    mlir()
    from jax._src.interpreters.mlir import make_ir_context

    return make_ir_context()


_LOC = re.compile(r':(\d+):(\d+)')


def parse_error(err: Exception, source: str) -> ParseError:
    """An MLIR diagnostic as a ParseError with the first line and column it names."""
    diags = getattr(err, "error_diagnostics", None) or []
    message = str(err).strip().splitlines()[-1] if str(err).strip() else "invalid MLIR"
    line, column = 1, 1
    for d in diags:
        message = d.message
        found = _LOC.search(str(d.location))
        if found:
            line, column = int(found.group(1)), int(found.group(2))
        break
    return ParseError(f"StableHLO: {message.strip()}", line, column, source)


def parse(text: str, source: str = "<string>") -> tuple[Any, Any]:
    """(context, module): parsed and verified; ParseError with the diagnostic's position."""
    m = mlir()
    ctx = new_context()
    with ctx, m["ir"].Location.unknown():
        try:
            module = m["ir"].Module.parse(text)
        except Exception as err:  # MLIRError carries the diagnostics
            raise parse_error(err, source) from None
        try:
            module.operation.verify()
        except Exception as err:
            raise parse_error(err, source) from None
    return ctx, module


def run_passes(ctx: Any, module: Any, pipeline: str, source: str = "<string>",
               verify_each: bool = True) -> None:
    """Run a textual pass pipeline (`builtin.module(...)`) in place; with `verify_each` off,
    the module is verified once, after the last pass."""
    m = mlir()
    with ctx:
        try:
            pm = m["passmanager"].PassManager.parse(pipeline)
            pm.enable_verifier(verify_each)
            pm.run(module.operation)
            module.operation.verify()
        except Exception as err:
            raise parse_error(err, source) from None


def drop_bounds(ctx: Any, module: Any) -> None:
    """Removes `#stablehlo.bounds` encodings from every type in the module, in place (the
    result may not verify until shapes are refined)."""
    ir = mlir()["ir"]

    def plain(t: Any) -> Any:
        if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
            return ir.RankedTensorType.get(list(t.shape), t.element_type)
        return t

    def walk(op: Any) -> None:
        for r in op.results:
            r.set_type(plain(r.type))
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    arg.set_type(plain(arg.type))
                for inner in block.operations:
                    walk(inner.operation)
        if op.name == "func.func":
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
                [plain(t) for t in ft.inputs], [plain(t) for t in ft.results]))

    with ctx, ir.Location.unknown():
        walk(module.operation)
