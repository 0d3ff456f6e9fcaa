"""`verifidx range MAP [--bits 32] [--unsigned] [--layout SHAPE] [--sizes ...] [--json]`: each
result's exact range for every size, and whether it fits the index type (exit 0 fits, 1
overflows, 3 unknown). `verifidx range --log LOG`: the same for every record of an Inductor
log: each record's expression and verifidx's simplification of it, and with `mask` / `extent`
fields whether the index stays in bounds where the mask holds (exit 1 when a record overflows
or is out of bounds, else 2 when one is malformed, else 3 when one is unknown, else 0:
`validate`'s order)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .common import (
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNKNOWN,
    Subparsers,
    UsageError,
    add_command,
    load_map,
    read_file,
)

if TYPE_CHECKING:  # the solver loads only when the command runs
    from ..analysis.ranges import Bounds, Extreme, Fit
    from ..clients.widths import RecordWidth
    from ..core.expr import Expr, Variable
    from ..core.interval import Interval


def register(sub: Subparsers) -> None:
    p = add_command(sub, "range", "exact range of each result for every size, and whether it "
                                  "fits a --bits integer", _run)
    p.add_argument("map", nargs="?", help="map text, @file, a file name, or - for stdin")
    p.add_argument("--log", metavar="LOG",
                   help="a log of Inductor records as `validate` reads them (JSON lines; - for "
                        "stdin): every record's range, and its simplification's")
    p.add_argument("--bits", type=int, default=32, help="width of the index type (default 32)")
    p.add_argument("--unsigned", action="store_true", help="an unsigned index type")
    p.add_argument("--layout", metavar="SHAPE",
                   help="the results index this shape (`f32[262144,8960]{1,0}`): check the "
                        "physical offset its layout gives instead")
    p.add_argument("--sizes", default="", metavar="N=LO:HI,...",
                   help="narrow sizes' intervals (within those the map declares): N=1:4096")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _run(args: argparse.Namespace) -> int:
    from ..analysis.ranges import fits

    if args.log is not None:
        if args.map is not None or args.layout is not None or args.sizes:
            raise UsageError("--log takes no MAP, --layout or --sizes (each record has its "
                             "own ranges)")
        return _run_log(args)
    if args.map is None:
        raise UsageError("range needs a MAP (or --log LOG)")
    m = load_map(args.map)
    layout = None
    if args.layout is not None:
        from ..hlo.layout import parse_shape

        layout = parse_shape(args.layout, "--layout")
    try:
        answer = fits(m, args.bits, not args.unsigned, layout=layout,
                      params=_intervals(args.sizes))
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.json:
        print(json.dumps(document(answer)))
    else:
        _print(answer)
    return {"fits": EXIT_OK, "overflows": EXIT_FAILED}.get(answer.verdict, EXIT_UNKNOWN)


def _intervals(text: str) -> dict[str, Interval]:
    """`--sizes N=1:4096,M=2:8` as intervals by name."""
    from ..core.interval import Interval

    out: dict[str, Interval] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, _, bounds = item.partition("=")
        lo, _, hi = bounds.partition(":")
        try:
            out[name.strip()] = Interval(int(lo), int(hi))
        except ValueError:
            raise UsageError(f"--sizes: expected NAME=LO:HI, found {item!r}") from None
    return out


def _print(answer: Fit) -> None:
    for rr in answer.ranges:
        head = f"result {rr.result} ({result_text(answer, rr.result)})"
        if rr.low is None or rr.high is None:
            print(f"{head}: empty domain")
            continue
        line = f"{head}: [{rr.low.text()}, {rr.high.text()}]"
        line += " exact" if rr.exact else " enclosure"
        if rr.low.text() != str(rr.low.value) or rr.high.text() != str(rr.high.value):
            line += f"; over every size: [{rr.low.value}, {rr.high.value}]"
        print(line + (f" ({rr.note})" if rr.note else ""))
    iv = answer.type_range
    kind = f"{'s' if answer.signed else 'u'}{answer.bits} [{iv.lo}, {iv.hi}]"
    first = answer.overflow
    if answer.verdict == "fits":
        print(f"{kind}: fits for every size")
    elif first is not None:
        at = f"at {names_text(first.sizes)} " if first.sizes else ""
        which = "the smallest sizes" if first.smallest else "not shown to be the smallest"
        print(f"{kind}: overflows: result {first.result} {at}"
              f"{'(' + which + ') ' if first.sizes else ''}is {first.value} at "
              f"{names_text(first.point) or 'the only point'}")
    if answer.reason:
        print(f"{kind}: unknown: {answer.reason}" if answer.verdict == "unknown" else
              f"  also unknown: {answer.reason}")


# -- shared with `indexing --widths` ----------------------------------------------------------


def _end(x: Extreme | None, rename: Callable[[str], str] = str) -> int | str | None:
    """An extreme in JSON: the expression's text when it depends on the sizes, else the
    number (null for an empty domain)."""
    if x is None:
        return None
    text = extreme_text(x, rename)
    return int(text) if text.lstrip("-").isdigit() else text


def extreme_text(x: Extreme, rename: Callable[[str], str] = str) -> str:
    """`Extreme.text`, the sizes named by `rename` (a sympy record's own names)."""
    if x.expr is None or not x.expr.variable_set():
        return x.text()
    return printed(x.expr, rename)


def printed(e: Expr, rename: Callable[[str], str] = str,
            names: Mapping[Variable, str] | None = None) -> str:
    """`e`'s text with each size named by `rename` (a sympy record's `s0` for `s0_`)."""
    import re

    from ..core.expr import Size
    from ..core.syntax import print_expr

    text = print_expr(e, names)
    for v in e.variable_set():
        if isinstance(v, Size) and rename(v.name) != v.name:
            text = re.sub(rf"(?<!\w){re.escape(v.name)}(?!\w)", rename(v.name), text)
    return text


def document(answer: Fit, rename: Callable[[str], str] = str) -> dict[str, object]:
    """The JSON of a `fits` answer (docs/contracts.md); `rename` names the sizes."""
    results = []
    for rr, holds, over in zip(answer.ranges, answer.result_fits, answer.overflows):
        doc: dict[str, object] = {
            "result": rr.result, "expr": result_text(answer, rr.result, rename),
            "min": _end(rr.low, rename), "max": _end(rr.high, rename),
            "min_value": None if rr.low is None else rr.low.value,
            "max_value": None if rr.high is None else rr.high.value,
            "exact": rr.exact, "method": rr.method, "fits": holds}
        if over is not None:
            doc.update(smallest=_renamed(over.sizes, rename), smallest_proven=over.smallest,
                       witness=over.point, value=over.value)
        results.append(doc)
    iv = answer.type_range
    out: dict[str, object] = {"verdict": answer.verdict, "bits": answer.bits,
                              "signed": answer.signed, "type_range": [iv.lo, iv.hi],
                              "results": results}
    first = answer.overflow
    if first is not None:
        out.update(smallest=_renamed(first.sizes, rename), smallest_proven=first.smallest,
                   witness=first.point, result=first.result, value=first.value)
    if answer.reason:
        out["reason"] = answer.reason
    return out


def _renamed(values: dict[str, int], rename: Callable[[str], str]) -> dict[str, int]:
    return {rename(k): v for k, v in values.items()}


def result_text(answer: Fit, i: int, rename: Callable[[str], str] = str) -> str:
    """The checked result's expression, with the map's variable names (sizes by `rename`)."""
    from ..core.syntax import variable_names

    assert answer.checked is not None
    return printed(answer.checked.results[i], rename, variable_names(answer.checked))


def names_text(values: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in values.items())


# -- `range --log` -----------------------------------------------------------------------------


def _run_log(args: argparse.Namespace) -> int:
    from ..clients.widths import ERROR, OVERFLOWS, UNKNOWN, VERDICTS, record_width

    if args.bits < 1:
        raise UsageError(f"--bits must be at least 1, not {args.bits}")
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
    from ..clients.widths import ERROR, UNSUPPORTED

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
