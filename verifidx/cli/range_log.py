"""`verifidx range --log LOG [--bits 32] [--unsigned] [--json]`: every record of an Inductor log
(as `validate` reads it) with the range of its expression and of verifidx's simplification of
it, whether each fits the index type, and with `mask`/`extent` fields whether the index stays
in bounds where the mask holds. Exit 1 when a record overflows (or is out of bounds), else 2
when one is malformed, else 3 when one is unknown, else 0 (`validate`'s order)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clients.widths import ERROR, FITS, OVERFLOWS, UNKNOWN, UNSUPPORTED, record_width
from .common import EXIT_ERROR, EXIT_FAILED, EXIT_OK, EXIT_UNKNOWN, read_file
from .range import document, extreme_text, names_text, printed

if TYPE_CHECKING:
    from ..analysis.ranges import Bounds, Fit
    from ..clients.widths import RecordWidth

VERDICTS = (FITS, OVERFLOWS, UNKNOWN, UNSUPPORTED, ERROR)


def run_log(args: argparse.Namespace) -> int:
    text, source = read_file(args.log)
    rows: list[tuple[int, RecordWidth]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rows.append((number, record_width(line, args.bits, not args.unsigned, source,
                                              number)))
    counts = Counter(r.verdict for _, r in rows)
    summary = {k: counts.get(k, 0) for k in VERDICTS}
    if args.json:
        print(json.dumps({"bits": args.bits, "signed": not args.unsigned,
                          "records": [_document(n, r) for n, r in rows], "summary": summary},
                         indent=1))
    else:
        for n, r in rows:
            print(_text(n, r, source))
        print(f"{len(rows)} records: " + ", ".join(f"{summary[k]} {k}" for k in VERDICTS))
    if summary[OVERFLOWS]:
        return EXIT_FAILED
    if summary[ERROR]:
        return EXIT_ERROR
    return EXIT_UNKNOWN if summary[UNKNOWN] else EXIT_OK


def _rename(r: RecordWidth) -> Callable[[str], str]:
    """A sympy record's sizes by their sympy names (`s0_` is verifidx's name of `s0`)."""
    if r.kind != "sympy":
        return str
    from ..clients.sympy_bridge import symbol_name

    return symbol_name


def _document(n: int, r: RecordWidth) -> dict[str, object]:
    rename = _rename(r)
    out: dict[str, object] = {"line": n, "kind": r.kind, "input": r.text,
                              "verdict": r.verdict}
    if r.reason:
        out["reason"] = r.reason
    if r.column is not None:
        out["column"] = r.column
    if r.fit is not None:
        out["expr"] = document(r.fit, rename)
    if r.simplified_fit is not None:
        out["simplified"] = {"text": r.simplified,
                             **document(r.simplified_fit, rename)}
    if r.bounds is not None:
        out["bounds"] = _bounds_document(r.bounds, rename)
    return out


def _bounds_document(b: Bounds, rename: Callable[[str], str]) -> dict[str, object]:
    doc: dict[str, object] = {"verdict": b.verdict, "extent": printed(b.extent, rename)}
    if b.range.low is not None and b.range.high is not None:
        doc.update(min=b.range.low.value, max=b.range.high.value, exact=b.range.exact)
    v = b.violation
    if v is not None:
        doc.update(smallest={rename(k): x for k, x in v.sizes.items()},
                   smallest_proven=v.smallest, witness=v.point, value=v.value)
    if b.reason:
        doc["reason"] = b.reason
    return doc


def _range_text(fit: Fit, rename: Callable[[str], str]) -> str:
    """`[lo, hi] exact; s32: fits` or `...: overflows at s0 = 239675 (smallest), x1 = ...`."""
    parts = []
    for rr in fit.ranges:
        if rr.low is None or rr.high is None:
            parts.append("empty domain")
            continue
        ends = [extreme_text(e, rename) for e in (rr.low, rr.high)]
        parts.append(f"[{ends[0]}, {ends[1]}] {'exact' if rr.exact else 'enclosure'}")
    kind = f"{'s' if fit.signed else 'u'}{fit.bits}"
    first = fit.overflow
    if fit.verdict == "fits":
        tail = f"{kind} fits for every size"
    elif first is not None:
        sizes = {rename(k): x for k, x in first.sizes.items()}
        at = f" at {names_text(sizes)} ({'smallest' if first.smallest else 'not shown smallest'})" \
            if sizes else ""
        tail = f"{kind} overflows{at}: {first.value} at {names_text(first.point) or 'the point'}"
    else:
        tail = f"{kind} unknown: {fit.reason}"
    return f"{', '.join(parts)}; {tail}"


def _text(n: int, r: RecordWidth, source: str) -> str:
    if r.verdict == ERROR:
        col = f":{r.column}" if r.column is not None else ""
        return f"{source}:{n}{col}: error: {r.reason}"
    if r.verdict == UNSUPPORTED and r.fit is None:
        return f"{source}:{n}: unsupported ({r.reason})"
    rename = _rename(r)
    lines = [f"{source}:{n}: {r.verdict}" + (f" ({r.reason})" if r.reason else "")]
    if r.fit is not None:
        lines.append(f"  {r.text}: {_range_text(r.fit, rename)}")
    if r.simplified_fit is not None:
        lines.append(f"  verifidx: {r.simplified}: {_range_text(r.simplified_fit, rename)}")
    b = r.bounds
    if b is not None:
        line = f"  bounds: 0 <= index < {_bounds_document(b, rename)['extent']}: {b.verdict}"
        if b.violation is not None:
            sizes = {rename(k): x for k, x in b.violation.sizes.items()}
            line += f" at {names_text(sizes)}, {names_text(b.violation.point)}: index " \
                    f"{b.violation.value}"
        lines.append(line + (f" ({b.reason})" if b.reason else ""))
    return "\n".join(lines)
