"""The MLIR Python bindings that jaxlib ships (`jax.extend.mlir`), behind one door.

Everything that touches jaxlib goes through here: it is an optional extra
(`pip install 'verifidx[stablehlo]'`, versions pinned because that API promises no
compatibility across releases), so importing verifidx never needs it, and a missing install is
one clear error (`StableHloUnavailable`) instead of an ImportError.
"""

from __future__ import annotations

import re
from typing import Any

from verifidx.core.errors import ParseError, UnsupportedError

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


_LOC_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?<![\w$.#%@^!])loc\(')
_PAREN_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[()]')
_LOC_ALIAS = re.compile(r'^[ \t]*#[\w.$-]+[ \t]*=[ \t]*loc\(.*$', re.MULTILINE)


def without_locations(text: str) -> str:
    """`text` with its debug locations (`loc(...)`, `#loc3 = loc(...)` lines) blanked out,
    every other character where it was.

    JAX prints a location on every op (`loc(#loc12)`: the Python line that made it). MLIR keeps
    a printed location instead of the op's place in the text, so diagnostics and verifidx's own
    errors could not say where in the file an op is; without them every op is located at its
    line and column in this text."""
    if "loc(" not in text:
        return text
    text = _LOC_ALIAS.sub(lambda m: " " * len(m.group(0)), text)
    out: list[str] = []
    pos = 0
    for found in _LOC_TOKEN.finditer(text):
        if found.group(0).startswith('"') or found.start() < pos:
            continue
        depth, end = 1, found.end()
        for tok in _PAREN_TOKEN.finditer(text, found.end()):
            if tok.group(0) == "(":
                depth += 1
            elif tok.group(0) == ")":
                depth -= 1
            if depth == 0:
                end = tok.end()
                break
        else:
            continue  # unbalanced: left to the parser, which reports it
        out.append(text[pos:found.start()])
        out.append(" " * (end - found.start()))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def position(op: Any) -> tuple[int, int]:
    """(line, column) of an op in the text it was parsed from (1, 1 when unknown)."""
    found = _LOC.search(str(op.location))
    return (int(found.group(1)), int(found.group(2))) if found else (1, 1)


def parse(text: str, source: str = "<string>") -> tuple[Any, Any]:
    """(context, module): parsed and verified; ParseError with the diagnostic's position. Ops
    are located at their line and column in `text` (debug locations are dropped)."""
    m = mlir()
    ctx = new_context()
    with ctx, m["ir"].Location.unknown():
        try:
            module = m["ir"].Module.parse(without_locations(text))
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


#: The most functions `specialize_calls` may create (a call graph that shares callees deeply
#: grows as a tree when every call site gets its own copy).
MAX_SPECIALIZED_FUNCTIONS = 10_000


def specialize_calls(ctx: Any, module: Any, source: str = "<string>") -> None:
    """Gives every `func.call` site its own copy of the callee (`f`, `f.1`, ...), in place.

    `stablehlo-refine-shapes` refines a callee for the call it meets and drops the arguments
    JAX marks `jax.global_constant`; a callee shared by several call sites then no longer
    matches the others (MLIR: "'func.call' op incorrect number of operands for callee"). With
    one call site per function the refinement is consistent; the bindings register no inliner
    for `func`, so the copies are made here."""
    ir = mlir()["ir"]
    funcs = {str(f.attributes["sym_name"]).strip('"'): f for f in module.body.operations
             if f.operation.name == "func.func"}
    used: set[str] = set()
    created = 0

    def calls(op: Any) -> list[Any]:
        found: list[Any] = []
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name == "func.call":
                        found.append(inner.operation)
                    found.extend(calls(inner.operation))
        return found

    with ctx, ir.Location.unknown():
        pending = [f for f in funcs.values() if _is_public(f)]
        used.update(str(f.attributes["sym_name"]).strip('"') for f in pending)
        while pending:
            for call in calls(pending.pop().operation):
                name = str(call.attributes["callee"]).lstrip("@").strip('"')
                callee = funcs.get(name)
                if callee is None:
                    continue
                if name in used:
                    created += 1
                    if created > MAX_SPECIALIZED_FUNCTIONS:
                        raise UnsupportedError(
                            f"{source}: refining needs one copy of a function per call site, "
                            f"more than {MAX_SPECIALIZED_FUNCTIONS}")
                    k = 1
                    while f"{name}.{k}" in funcs:
                        k += 1
                    name = f"{name}.{k}"
                    callee = callee.operation.clone(ip=ir.InsertionPoint(module.body))
                    callee.attributes["sym_name"] = ir.StringAttr.get(name)
                    funcs[name] = callee
                    call.attributes["callee"] = ir.FlatSymbolRefAttr.get(name)
                used.add(name)
                pending.append(callee)


def _is_public(f: Any) -> bool:
    return "sym_visibility" not in f.attributes or \
        str(f.attributes["sym_visibility"]).strip('"') == "public"
