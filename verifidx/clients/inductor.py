"""A hook in PyTorch Inductor's index simplification (tested with torch 2.13.0, CPU).

`install(mode)` wraps `torch._inductor.sizevars.SizeVarAllocator._simplify_with_ranges`, the
work behind every `sizevars.simplify_with_ranges(expr, var_ranges)` call (the public name is a
per-instance cache around it), until `uninstall()` puts Inductor's function back:

- `check`: each result Inductor computes is validated against its input
  (`verifidx.clients.validation`); a refuted one raises `SimplificationRefuted` (or, with
  `on_refuted="log"`, is logged with its counterexample and Inductor goes on).
- `simplify`: where verifidx reads the expression, its proven simplification replaces
  Inductor's result when it keeps no more divisions, and only after the sympy expression
  handed back has been read again and proven equal to Inductor's input; otherwise Inductor's.
- `record`: appends `{expr, var_ranges, size_ranges, result}` (the log `verifidx validate`
  reads) to a list you pass (`tools/capture_inductor.py` uses it).
- `widths`: wraps `SIMDKernelFeatures.select_index_dtype` instead, where Inductor's GPU
  (Triton) backends choose each kernel's index type (`SIMDScheduling.can_use_32bit_indexing`:
  numel and buffer sizes against hints and guards, never the index expressions). When the
  choice is int32, every load and store of the kernel's nodes (their `MemoryDep` index
  expressions and loop ranges) is checked for every size the shape environment allows
  (`verifidx.clients.widths.check_index_type`); an access witnessed to overflow raises
  `UnsafeIndexType` with the smallest sizes and the expression (or, with `on_unsafe="log"`, is
  logged); one not proven either way (a form the bridge does not read, an indirect index) is
  logged as a warning. Both are kept in `stats.unsafe`. Inductor's choice is never changed.

Only the outermost call of a simplification is checked (Inductor recurses on its own
intermediate forms). torch is imported by this module alone, and only inside `install`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ..core.errors import UnsupportedError, VerifidxError
from ..core.syntax import print_point
from .validation import PROVED, REFUTED, UNSUPPORTED, Validation, validate_sympy

TESTED_TORCH = ("2.13.0",)
MODES = ("check", "simplify", "record", "widths")

log = logging.getLogger("verifidx.clients.inductor")


class SimplificationRefuted(VerifidxError):
    """Inductor simplified an index expression to an unequal one (with a counterexample)."""

    def __init__(self, expr: Any, result: Any, validation: Validation) -> None:
        self.expr, self.result, self.validation = expr, result, validation
        super().__init__(
            f"Inductor simplified {expr} to {result}, which differs at "
            f"{print_point(validation.counterexample or {})}: {validation.expr_value} != "
            f"{validation.result_value}")


class UnsafeIndexType(VerifidxError):
    """Inductor chose int32 indexing for a kernel with an access not proven to fit."""

    def __init__(self, unsafe: list[Any]) -> None:
        self.unsafe = unsafe
        super().__init__("Inductor chose int32 indexing, but " + "; ".join(map(str, unsafe)))


@dataclass
class Stats:
    """What the hook saw since `install` (seconds are wall clock, for reports only)."""

    calls: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    replaced: int = 0
    inductor_seconds: float = 0.0
    verifidx_seconds: float = 0.0
    refutations: list[Validation] = field(default_factory=list)
    #: `widths`: kernels whose index type was chosen, and the accesses not proven to fit
    kernels: dict[str, int] = field(default_factory=dict)
    unsafe: list[Any] = field(default_factory=list)


_original: Callable[..., Any] | None = None
_depth = 0
stats = Stats()


def install(mode: str = "check", *, on_refuted: str = "raise",
            records: list[dict[str, Any]] | None = None, on_unsafe: str = "raise") -> Stats:
    """Wrap Inductor's simplification, or with `widths` its choice of index type (see the
    module docstring); returns the live `Stats`."""
    global _original, stats
    if mode not in MODES:
        raise UnsupportedError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if on_refuted not in ("raise", "log"):
        raise UnsupportedError(f"on_refuted must be 'raise' or 'log', not {on_refuted!r}")
    if on_unsafe not in ("raise", "log"):
        raise UnsupportedError(f"on_unsafe must be 'raise' or 'log', not {on_unsafe!r}")
    if mode == "widths":
        return _install_widths(on_unsafe)
    if mode == "record" and records is None:
        raise UnsupportedError("mode='record' needs a list to append to (records=)")
    _require_torch()
    from torch._inductor.sizevars import SizeVarAllocator  # type: ignore[import-not-found]

    uninstall()
    original = SizeVarAllocator._simplify_with_ranges
    stats = Stats()

    def wrapped(self: Any, expr: Any, var_ranges: Any) -> Any:
        global _depth
        if _depth:
            return original(self, expr, var_ranges)
        _depth += 1
        try:
            start = time.perf_counter()
            result = original(self, expr, var_ranges)
            stats.inductor_seconds += time.perf_counter() - start
            stats.calls += 1
            sizes = _size_ranges(self, expr, var_ranges)
            if mode == "record":
                assert records is not None
                records.append(_record(expr, var_ranges, sizes, result))
                return result
            start = time.perf_counter()
            try:
                if mode == "check":
                    _check(expr, result, var_ranges, sizes, on_refuted)
                    return result
                return _simplified(expr, result, var_ranges, sizes)
            finally:
                stats.verifidx_seconds += time.perf_counter() - start
        finally:
            _depth -= 1

    SizeVarAllocator._simplify_with_ranges = wrapped  # type: ignore[method-assign]
    _original = original
    return stats


def uninstall() -> None:
    """Put Inductor's own function back (nothing if the hook is not in)."""
    global _original, _original_dtype
    if _original is not None:
        from torch._inductor.sizevars import SizeVarAllocator

        SizeVarAllocator._simplify_with_ranges = _original  # type: ignore[method-assign]
        _original = None
    if _original_dtype is not None:
        from torch._inductor.codegen.simd_kernel_features import (  # type: ignore[import-not-found]
            SIMDKernelFeatures,
        )

        cast(Any, SIMDKernelFeatures).select_index_dtype = _original_dtype
        _original_dtype = None


_original_dtype: Callable[..., Any] | None = None


def _require_torch() -> None:
    """torch is an optional extra: a missing one is said with the line that installs it."""
    try:
        import torch._inductor  # noqa: F401  # type: ignore[import-not-found]
    except ImportError:
        raise UnsupportedError("the Inductor hook needs torch (pip install "
                               "'verifidx[inductor]')") from None


def _install_widths(on_unsafe: str) -> Stats:
    global _original_dtype, stats
    _require_torch()
    from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures

    uninstall()
    original: Any = SIMDKernelFeatures.select_index_dtype  # (a cached method in torch 2.13)
    stats = Stats()

    def wrapped(self: Any) -> Any:
        dtype = original(self)
        name = str(dtype).removeprefix("torch.")
        stats.kernels[name] = stats.kernels.get(name, 0) + 1
        if name == "int32":
            _check_widths(self.scheduler_nodes(), on_unsafe)
        return dtype

    cast(Any, SIMDKernelFeatures).select_index_dtype = wrapped
    _original_dtype = original
    return stats


def kernel_accesses(nodes: Any) -> list[Any]:
    """The loads and stores of a kernel's scheduler nodes: each `MemoryDep`'s buffer, index
    expression and loop ranges (`StarDep`s and `WeakDep`s have no index)."""
    from .widths import Access

    out = []
    for node in nodes:
        rw = node.read_writes
        for dep in (*rw.reads, *rw.writes):
            index = getattr(dep, "index", None)
            ranges = getattr(dep, "ranges", None)
            if index is None or ranges is None:
                continue
            out.append(Access(str(dep.name), index, dict(ranges)))
    return out


def _check_widths(nodes: Any, on_unsafe: str) -> None:
    from torch._inductor.virtualized import V  # type: ignore[import-not-found]

    from .widths import check_index_type

    accesses = kernel_accesses(nodes)
    known = getattr(V.graph.sizevars.shape_env, "var_to_range", {})
    sizes: dict[str, list[str]] = {}
    for a in accesses:
        for e in (a.index, *a.var_ranges.values()):
            for s in getattr(e, "free_symbols", ()):
                if s not in a.var_ranges and str(s) not in sizes:
                    r = known.get(s)
                    sizes[str(s)] = [str(r.lower), str(r.upper)] if r is not None \
                        else ["0", "int_oo"]
    guards = [g.expr for g in getattr(V.graph.sizevars.shape_env, "guards", ())]
    unsafe = check_index_type("int32", accesses, sizes, guards)
    if not unsafe:
        return
    stats.unsafe.extend(unsafe)
    witnessed = [u for u in unsafe if u.verdict == "overflows"]
    if witnessed and on_unsafe == "raise":
        raise UnsafeIndexType(witnessed)
    for u in unsafe:  # an unread form (an indirect index) never breaks a compile
        (log.error if u.verdict == "overflows" else log.warning)(
            "Inductor chose int32 indexing: %s", u)


def _size_ranges(allocator: Any, expr: Any, var_ranges: Any) -> dict[str, list[str]]:
    """The shape environment's range of every free symbol of the expression and of the loop
    extents that is not a loop variable (unknown: `[0, int_oo]`, which the bridge refuses
    for a size where it is used)."""
    out: dict[str, list[str]] = {}
    known = getattr(getattr(allocator, "shape_env", None), "var_to_range", {})
    free = set(getattr(expr, "free_symbols", ()))
    for extent in var_ranges.values():
        free |= set(getattr(extent, "free_symbols", ()))
    for s in sorted(free, key=str):
        if s not in var_ranges:
            r = known.get(s)
            out[str(s)] = [str(r.lower), str(r.upper)] if r is not None else ["0", "int_oo"]
    return out


def _record(expr: Any, var_ranges: Any, sizes: dict[str, list[str]], result: Any
            ) -> dict[str, Any]:
    return {"expr": str(expr), "var_ranges": {str(k): str(v) for k, v in var_ranges.items()},
            "size_ranges": sizes, "result": str(result)}


def _check(expr: Any, result: Any, var_ranges: Any, sizes: dict[str, list[str]],
           on_refuted: str) -> None:
    try:
        v = validate_sympy(expr, result, var_ranges, sizes)
    except (VerifidxError, ValueError, RecursionError) as err:
        # a form the bridge does not read (or a range it refuses): Inductor's result stands
        v = Validation(UNSUPPORTED, str(err))
    stats.verdicts[v.verdict] = stats.verdicts.get(v.verdict, 0) + 1
    if v.verdict == REFUTED:
        stats.refutations.append(v)
        if on_refuted == "raise":
            raise SimplificationRefuted(expr, result, v)
        log.error("Inductor simplified %s to %s, which differs at %s: %s != %s", expr, result,
                  v.counterexample, v.expr_value, v.result_value)
    elif v.verdict != PROVED:
        log.debug("%s: %s (%s)", expr, v.verdict, v.reason)


def _simplified(expr: Any, result: Any, var_ranges: Any, sizes: dict[str, list[str]]) -> Any:
    """verifidx's simplification written back with Inductor's classes, if it is read, keeps no
    more divisions than Inductor's result, and reads back proven equal to the input."""
    from ..simplifier.equality import equal
    from .sympy_bridge import count_divisions, from_sympy, symbol_name, to_sympy

    try:
        f = from_sympy(expr, var_ranges, sizes)
        g = from_sympy(result, var_ranges, sizes)
        mine = f.simplify()
        if count_divisions(mine.results[0]) > count_divisions(g.results[0]):
            return result
        symbols = {str(s): s for e in (expr, *var_ranges.values())
                   for s in getattr(e, "free_symbols", ())}
        out = to_sympy(mine, list(var_ranges), symbols)
        back = from_sympy(out, var_ranges, sizes, declare=[symbol_name(z.name)
                                                            for z in f.sizes])
    except (VerifidxError, ValueError, RecursionError):
        stats.verdicts["unsupported"] = stats.verdicts.get("unsupported", 0) + 1
        return result
    if not equal(f, back).holds:
        stats.verdicts["unknown"] = stats.verdicts.get("unknown", 0) + 1
        return result
    stats.verdicts[PROVED] = stats.verdicts.get(PROVED, 0) + 1
    stats.replaced += 1
    return out


__all__ = ["MODES", "TESTED_TORCH", "SimplificationRefuted", "Stats", "UnsafeIndexType", "install",
           "kernel_accesses", "stats", "uninstall"]
