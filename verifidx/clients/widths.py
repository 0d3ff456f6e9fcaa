"""Index widths of another compiler's index expressions: each record's range and whether it fits.

A record is a line of the log `verifidx validate` reads: sympy text as Inductor prints it
(`expr`, `var_ranges`, optional `size_ranges`, optional `result`) or an XLA map (`input`, an
optional `output`). For each: the range of its expression over the loop ranges, for every size
in its range, and whether it fits a `bits`-bit index (`verifidx.analysis.ranges.fits`); the
same for verifidx's own (proven) simplification of it. Two optional fields ask the bounds
question of a masked load or store: `mask` (a condition, `x0 + 8960*x1 < 8960*s0`) and
`extent` (the buffer's element count, a term in the sizes): is `0 <= expr < extent` wherever
the mask holds (`ranges.in_bounds`)? A malformed record is an `error` with its line and column,
one per record, so one bad line never hides the others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.ranges import Bounds, Fit, fits, in_bounds
from ..core.errors import (
    DepthError,
    EvaluationError,
    MissingDependencyError,
    ParseError,
    UnsupportedError,
    VerifidxError,
)
from ..core.expr import Expr
from ..core.indexing_map import IndexingMap
from ..core.syntax import parse_map

#: What a record's check found: every result fits, one overflows / is out of bounds, undecided,
#: beyond what the bridge reads, malformed.
FITS, OVERFLOWS, UNKNOWN, UNSUPPORTED, ERROR = "fits", "overflows", "unknown", "unsupported", \
    "error"
VERDICTS = (FITS, OVERFLOWS, UNKNOWN, UNSUPPORTED, ERROR)


@dataclass
class RecordWidth:
    """One record's answer: `fit` of its expression, `simplified` (verifidx's simplification,
    its text) and `simplified_fit`; `bounds` when the record has a mask or an extent;
    `verdict` the worst of them; `reason` and `column` for an error or unsupported form."""

    verdict: str
    text: str = ""
    kind: str | None = None
    fit: Fit | None = None
    simplified: str | None = None
    simplified_fit: Fit | None = None
    bounds: Bounds | None = None
    reason: str = ""
    column: int | None = None
    sizes: list[str] = field(default_factory=list)


def record_width(line_text: str, bits: int = 32, signed: bool = True, source: str = "<string>",
                 line: int = 1) -> RecordWidth:
    """One JSON line of a log, always one answer (see the module docstring). Raises
    MissingDependencyError alone (a sympy record where sympy is not installed)."""
    try:
        kind, m, bound, mask = _read(line_text, source, line)
    except ParseError as err:
        return RecordWidth(ERROR, line_text.strip(), reason=err.message, column=err.column)
    except MissingDependencyError:
        raise
    except (VerifidxError, EvaluationError, DepthError, ValueError, RecursionError) as err:
        return RecordWidth(UNSUPPORTED, line_text.strip(), reason=str(err))
    out = RecordWidth(UNKNOWN, _text(line_text), kind, sizes=[z.name for z in m.sizes])
    if mask is not None:  # a lane the mask turns off computes an index nothing reads
        m = mask
    try:
        out.fit = fits(m, bits, signed)
        simplified = m.simplify()
        out.simplified = _shown(simplified, kind)
        # the same map is the same question: its answer is not computed twice
        out.simplified_fit = out.fit if simplified == m else fits(simplified, bits, signed)
        if bound is not None:
            out.bounds = in_bounds(m, bound)
    except (VerifidxError, ValueError) as err:
        out.verdict, out.reason = UNSUPPORTED, str(err)
        return out
    verdicts = [out.fit.verdict, out.simplified_fit.verdict]
    if out.bounds is not None:
        verdicts.append({"in bounds": FITS, "out of bounds": OVERFLOWS}.get(
            out.bounds.verdict, UNKNOWN))
    out.verdict = OVERFLOWS if OVERFLOWS in verdicts else UNKNOWN if UNKNOWN in verdicts \
        else FITS
    return out


def _text(line_text: str) -> str:
    try:
        record = json.loads(line_text)
        return str(record.get("expr", record.get("input", "")))
    except (json.JSONDecodeError, AttributeError):
        return line_text.strip()


def _shown(m: IndexingMap, kind: str) -> str:
    """A simplified map as its record spells it: sympy text for a sympy record."""
    if kind == "sympy":
        from .sympy_bridge import to_sympy

        try:
            return str(to_sympy(m))
        except UnsupportedError:
            pass
    return str(m)


def _read(line_text: str, source: str, line: int
          ) -> tuple[str, IndexingMap, Expr | None, IndexingMap | None]:
    """(kind, the map, the extent or None, the masked map or None), raising ParseError at the
    line (and column where known) for a malformed record."""
    try:
        record = json.loads(line_text)
    except json.JSONDecodeError as err:
        raise ParseError(f"expected a JSON object ({err.msg})", line, err.colno, source) from None
    if not isinstance(record, dict):
        raise ParseError("expected a JSON object", line, 1, source)
    if "input" in record:
        text = record["input"]
        if not isinstance(text, str):
            raise ParseError("expected 'input' as XLA map text", line, 1, source)
        try:
            m = parse_map(text, source)
        except ParseError as err:
            raise ParseError(f"input: {err.message}", line, err.column, source) from None
        if "mask" in record or "extent" in record:
            raise ParseError("mask and extent are read on sympy records only", line, 1, source)
        return "map", m, None, None
    return _read_sympy(record, source, line)


def _read_sympy(record: dict[str, Any], source: str, line: int
                ) -> tuple[str, IndexingMap, Expr | None, IndexingMap | None]:
    from .sympy_bridge import condition_cases, from_sympy, parse_text, record_ranges

    var_ranges, size_ranges, known = record_ranges(record, source, line)
    trees = {}
    for key, condition in (("expr", False), ("extent", False), ("mask", True)):
        if key not in record:
            continue
        text = record[key]
        if isinstance(text, int) and not isinstance(text, bool) and key == "extent":
            text = str(text)
        if not isinstance(text, str):
            raise ParseError(f"expected {key} as a string of sympy text", line, 1, source)
        try:
            trees[key] = parse_text(text, known, source, line, condition)
        except ParseError as err:
            raise ParseError(f"{key}: {err.message}", err.line, err.column, source) from None
    if "mask" in trees and "extent" not in trees:
        raise ParseError("a mask needs the extent it keeps the index below", line, 1, source)
    # with an extent, every size is the map's (the extent may use one the index does not)
    names = sorted(str(k) for k in size_ranges) if "extent" in trees else []
    try:
        m = from_sympy(trees["expr"], var_ranges, size_ranges, declare=names)
        bound: Expr | None = None
        masked = None
        if "extent" in trees:
            bound = from_sympy(trees["extent"], var_ranges, size_ranges,
                               declare=names).results[0]
        if "mask" in trees:
            cases = condition_cases(trees["mask"], True)
            if len(cases) != 1:
                raise UnsupportedError(f"a mask of {len(cases)} cases (one conjunction of "
                                       f"comparisons is read)")
            masked = from_sympy(trees["expr"], var_ranges, size_ranges, declare=names,
                                constraints=cases[0])
    except ParseError as err:  # an extent that is not a number, a symbol without a range
        raise ParseError(err.message, line, 1, source) from None
    return "sympy", m, bound, masked




# -- Inductor's index type --------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """One load or store of a kernel: the buffer, its index expression (sympy) and the loop
    variables' extents (Inductor's `MemoryDep`: `index`, `ranges`)."""

    buffer: str
    index: Any
    var_ranges: dict[Any, Any]


@dataclass(frozen=True)
class UnsafeAccess:
    """An access whose index is not proven to fit the 32-bit type Inductor chose: `verdict`
    "overflows" (at `sizes`, the smallest when `smallest`, the index is `value` at `point`) or
    "unknown" (`reason`: undecided, or a form the bridge does not read)."""

    access: Access
    verdict: str
    sizes: dict[str, int] = field(default_factory=dict)
    smallest: bool = False
    point: dict[str, int] = field(default_factory=dict)
    value: int | None = None
    reason: str = ""

    def __str__(self) -> str:
        what = f"{self.access.buffer}[{self.access.index}]"
        if self.verdict == OVERFLOWS:
            at = ", ".join(f"{k} = {v}" for k, v in self.sizes.items())
            which = "smallest" if self.smallest else "not shown smallest"
            return f"{what} overflows int32 at {at} ({which}): index {self.value} at " \
                   f"{', '.join(f'{k} = {v}' for k, v in self.point.items())}"
        return f"{what}: int32 not proven ({self.reason})"


def check_index_type(index_dtype: str, accesses: list[Access],
                     size_ranges: dict[str, list[str]], guards: Sequence[Any] = ()
                     ) -> list[UnsafeAccess]:
    """The accesses of a kernel whose index Inductor's `index_dtype` ("int32" or "int64") may
    not hold for some size in `size_ranges` (the shape environment's, by symbol name). Only
    an int32 choice is checked: int64 is the fallback the question is whether to avoid.
    `guards` (sympy conditions over the sizes: the shape environment's guards, such as the
    `8960*s0 <= 2147483647` Inductor installs with its int32 choice) restrict the sizes where
    verifidx reads them (one conjunction of comparisons over the access's sizes); a guard not
    read is left out, which can only turn a "fits" into a report, never the reverse."""
    from .sympy_bridge import condition_cases, from_sympy, symbol_name

    if index_dtype not in ("int32", "torch.int32"):
        return []
    out = []
    for a in accesses:
        try:
            try:
                m = from_sympy(a.index, a.var_ranges, size_ranges,
                               constraints=_guards_of(a, guards, condition_cases))
            except (VerifidxError, ValueError):  # a guard the bridge does not read: left out
                m = from_sympy(a.index, a.var_ranges, size_ranges)
            fit = fits(m, 32, True)
        except (VerifidxError, ValueError, RecursionError) as err:
            out.append(UnsafeAccess(a, UNKNOWN, reason=f"not read: {err}"))
            continue
        if fit.verdict == FITS:
            continue
        over = fit.overflow
        if over is None:
            out.append(UnsafeAccess(a, UNKNOWN, reason=fit.reason))
        else:
            out.append(UnsafeAccess(a, OVERFLOWS, {symbol_name(k): v for k, v in
                                                   over.sizes.items()}, over.smallest,
                                    over.point, over.value))
    return out


def _guards_of(a: Access, guards: Sequence[Any], cases_of: Any) -> list[Any]:
    """The guards over the sizes the access uses, each a single case of constraints."""
    used = {str(s) for e in (a.index, *a.var_ranges.values())
            for s in getattr(e, "free_symbols", ())} - {str(k) for k in a.var_ranges}
    out: list[Any] = []
    for g in guards:
        names = {str(s) for s in getattr(g, "free_symbols", ())}
        if not names or not names <= used:
            continue
        try:
            cases = cases_of(g, True)
        except (VerifidxError, ValueError):
            continue
        if len(cases) == 1:
            out += cases[0]
    return out


__all__ = ["ERROR", "FITS", "OVERFLOWS", "UNKNOWN", "UNSUPPORTED", "VERDICTS", "Access",
           "RecordWidth", "UnsafeAccess", "check_index_type", "record_width"]
