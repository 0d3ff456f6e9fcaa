"""`verifidx indexing FILE --widths [--bits 32] [--json]`: per fusion operand (an unfused
module: per entry parameter), the range of its physical offset and whether a `--bits` index is
safe for every size, else the smallest sizes at which it is not (exit 0 safe, 1 not, 3
unknown). The JSON is `indexing --json`'s, each operand with a `widths` member aligned with its
`maps`, and a top-level `widths` summary (docs/contracts.md)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from .common import EXIT_FAILED, EXIT_OK, EXIT_UNKNOWN, UsageError
from .range import extreme_text, names_text

if TYPE_CHECKING:
    from ..analysis.widths import ModuleWidths, OperandWidth
    from ..hlo.module import HloModule


def run_widths(args: argparse.Namespace, module: HloModule) -> int:
    from ..analysis.widths import checked_computations, module_widths
    from .batch import computation_json

    if args.bits < 1:
        raise UsageError(f"--bits must be at least 1, not {args.bits}")
    widths = module_widths(module, args.bits)
    if args.json:
        comps = [computation_json(ci) for ci in checked_computations(module)]
        by_place = {(o.computation, o.output, o.parameter, o.leaf): [] for o in widths.operands}
        for o in widths.operands:
            by_place[(o.computation, o.output, o.parameter, o.leaf)].append(_result(o))
        for comp in comps:
            for out in comp["outputs"]:
                for op in out["operands"]:
                    key = (comp["name"], out["output_index"], op["parameter_number"],
                           op.get("tuple_index", 0))
                    op["widths"] = by_place.get(key, [])
        print(json.dumps({"module": module.name, "computations": comps,
                          "widths": _summary(widths)}, indent=1))
    else:
        print(f"module {module.name}" if module.name else "module (unnamed)")
        for o in widths.operands:
            print(_line(o))
        print(_headline(widths))
    return {"fits": EXIT_OK, "overflows": EXIT_FAILED}.get(widths.verdict, EXIT_UNKNOWN)


def _result(o: OperandWidth) -> dict[str, Any]:
    """One map's width: min, max (of the offset), exact, fits, and smallest/witness."""
    if o.fit is None:
        return {"fits": None, "reason": o.reason}
    rr = o.fit.ranges[0]
    doc: dict[str, Any] = {
        "min": None if rr.low is None else _number(extreme_text(rr.low)),
        "max": None if rr.high is None else _number(extreme_text(rr.high)),
        "min_value": None if rr.low is None else rr.low.value,
        "max_value": None if rr.high is None else rr.high.value,
        "exact": rr.exact, "fits": o.fit.result_fits[0]}
    over = o.fit.overflow
    if over is not None:
        doc.update(smallest=over.sizes, smallest_proven=over.smallest, witness=over.point,
                   value=over.value)
    if o.fit.reason:
        doc["reason"] = o.fit.reason
    return doc


def _number(text: str) -> int | str:
    return int(text) if text.lstrip("-").isdigit() else text


def _summary(w: ModuleWidths) -> dict[str, Any]:
    out: dict[str, Any] = {"bits": w.bits, "signed": w.signed, "verdict": w.verdict,
                           "operands": len(w.operands)}
    first = w.first
    if first is not None:
        o, over = first
        out.update(smallest=over.sizes, smallest_proven=w.smallest_proven,
                   computation=o.computation, parameter_number=o.parameter,
                   output_index=o.output, witness=over.point, value=over.value)
    return out


def _line(o: OperandWidth) -> str:
    where = f"{o.computation} ({o.role}) output {o.output} parameter {o.parameter} " \
            f"({o.parameter_name}) {o.shape}" + (f" map {o.map_index}" if o.map_index else "")
    if o.fit is None:
        return f"{where}: unknown ({o.reason})"
    rr = o.fit.ranges[0]
    if rr.low is None or rr.high is None:
        return f"{where}: reads nothing"
    span = f"offset [{extreme_text(rr.low)}, {extreme_text(rr.high)}]" + \
        ("" if rr.exact else " (enclosure)")
    over = o.fit.overflow
    if o.fit.verdict == "fits":
        return f"{where}: {span}: fits"
    if over is not None:
        at = f" at {_sizes(over.sizes)}" if over.sizes else ""
        return f"{where}: {span}: overflows{at} ({over.value} at {names_text(over.point)})"
    return f"{where}: {span}: unknown ({o.fit.reason})"


def _sizes(values: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v:,}" for k, v in values.items())


def _headline(w: ModuleWidths) -> str:
    kind = f"{w.bits}-bit indexing"
    if w.verdict == "fits":
        return f"{kind} is safe for every size ({len(w.operands)} operand maps)"
    first = w.first
    if first is None:
        return f"{kind} is not proven safe: an operand is unknown"
    o, over = first
    where = f"{o.computation} parameter {o.parameter} ({o.parameter_name})"
    if not over.sizes:
        return f"{kind} is not safe: {where} reaches offset {over.value}"
    proven = "" if w.smallest_proven else " (not shown to be the smallest)"
    if len(over.sizes) == 1 and w.smallest_proven:
        (name, value), = over.sizes.items()
        return f"{kind} is safe up to {name} = {value - 1:,}; at {name} = {value:,} {where} " \
               f"reaches offset {over.value:,}"
    return f"{kind} is not safe at {_sizes(over.sizes)}{proven}: {where} reaches offset " \
           f"{over.value:,}"
