"""`verifidx indexing FILE.hlo`: indexing maps of an HLO module, readable or as JSON.

Without `--instruction`, every computation that is the entry, a fusion body or a `call` target
is reported with its root-to-parameter maps (`--direction out2in`, the default) or
parameter-to-root maps (`in2out`), composed along the graph (`verifidx.analysis.computation_maps`).
With `--instruction NAME`, the per-op maps of that instruction are printed in XLA's
`operand id = N ...` layout, for every output (out2in) or every operand (in2out).

The JSON layout is the contract in docs/contracts.md; `runtime_variables`, `replica_ids` and
`reasons` (why a map is UNDEFINED) are added to an operand only when one of its maps needs them,
aligned with `maps`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any

from ..analysis.computation_maps import (
    ComputationIndexing,
    computation_indexing,
    reported_computations,
    set_proven_dedup,
)
from ..core.work import Progress, show_progress
from ..hlo.indexing import HloInstructionIndexing, input_to_output, output_to_input
from ..hlo.module import HloComputation, HloInstruction, HloModule
from ..stablehlo import is_mlir_text, parse_module, parse_stablehlo
from .batch import computation_json as _computation_json
from .batch import operand_json as _operand_json
from .batch import (
    options_of,
)
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNKNOWN,
    Subparsers,
    UsageError,
    add_batch_flags,
    add_command,
    add_opcode_option,
    engine,
    read_file,
    run_batch,
)

if TYPE_CHECKING:
    from ..analysis.widths import ModuleWidths, OperandWidth


def register(sub: Subparsers) -> None:
    p = add_command(sub, "indexing",
                    "indexing maps of an HLO module: per computation, or per instruction", _run)
    p.add_argument("file", nargs="+", metavar="FILE",
                   help="HLO or StableHLO (MLIR) module text (XLA dump, JAX .as_text(), "
                        "jax.export); - for stdin. With --batch: files, directories (their "
                        "*.hlo, *.mlir, *.stablehlo) and @LIST files of paths")
    p.add_argument("--instruction", metavar="NAME", help="only this instruction's per-op maps")
    p.add_argument("--computation", metavar="NAME", help="only this computation")
    p.add_argument("--direction", choices=("out2in", "in2out"), default="out2in",
                   help="output-to-input (default) or input-to-output maps")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--explain-dedup", action="store_true",
                   help="list the maps merged because they were proved equal")
    p.add_argument("--textual-dedup", action="store_true",
                   help="merge only textually identical maps (XLA's behaviour)")
    add_opcode_option(p)
    p.add_argument("--refine", metavar="TYPES",
                   help="StableHLO only: refine to these argument types "
                        "('tensor<16x4xf32>,tensor<4xf32>') with StableHLO's passes, report the "
                        "static program's maps and prove the parametric maps equal them")
    p.add_argument("--inplace", action="store_true",
                   help="the fusions XLA runs in place (a dynamic-update-slice root, "
                        "output_to_operand_aliasing) and whether one reads an element it has "
                        "already overwritten: exit 1 on a hazard, 3 when only unknowns remain")
    p.add_argument("--widths", action="store_true",
                   help="per fusion operand (an unfused module: per entry parameter) and "
                        "output, the range of its physical offset and whether 32-bit indexing "
                        "is safe for every size, else the smallest sizes at which it is not")
    p.add_argument("--bits", type=int, default=32, help="with --widths: the index width")
    add_batch_flags(p)


# -- JSON --------------------------------------------------------------------------------------


def _instruction_json(module: HloModule, comp: HloComputation, inst: HloInstruction,
                      results: list[HloInstructionIndexing], direction: str) -> dict[str, Any]:
    entries = []
    for index, r in enumerate(results):
        groups = []
        for i, maps in enumerate(r.maps):
            g: dict[str, Any] = {"operand_id" if direction == "out2in" else "output_index": i}
            if direction == "out2in":
                g["operand_name"] = inst.operands[i]
            g.update(_operand_json(maps))
            groups.append(g)
        key = "output_index" if direction == "out2in" else "input_index"
        entries.append({key: index, "operands" if direction == "out2in" else "outputs": groups,
                        "notes": list(r.notes)})
    return {"module": module.name, "computation": comp.name, "instruction": inst.name,
            "opcode": inst.opcode, "direction": direction,
            "outputs" if direction == "out2in" else "inputs": entries}


# -- readable text -----------------------------------------------------------------------------


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _computation_text(ci: ComputationIndexing) -> str:
    comp = ci.computation
    arrow = "root -> parameter" if ci.direction == "out2in" else "parameter -> root"
    lines = [f"computation {comp.name} ({ci.role}), root {comp.root.name}, maps {arrow}:"]
    for o, shape in enumerate(ci.outputs):
        lines.append(f"  output {o}: {shape}")
        for p in comp.parameters:
            number = p.parameter_number or 0
            for leaf in range(len(p.shape.leaves())):
                where = f"[{leaf}]" if p.shape.is_tuple else ""
                maps = ci.maps_for(o, number, leaf)
                head = f"    parameter {number} ({p.name}{where}) {p.shape.leaves()[leaf]}:"
                if not maps:
                    lines.append(head + " not read")
                    continue
                lines.append(head)
                for m in maps:
                    lines.append(_indent(m.to_text(), "      "))
    for note in ci.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def _find_instruction(module: HloModule, name: str, computation: str | None
                      ) -> tuple[HloComputation, HloInstruction]:
    comps = [module.computation(computation)] if computation else \
        [module.entry] + [c for c in module.computations.values() if c is not module.entry]
    for comp in comps:
        if name in comp:
            return comp, comp.instruction(name)
    raise UsageError(f"no instruction {name!r} in {module.name or 'the module'}")


def _run(args: argparse.Namespace) -> int:
    if args.inplace and args.widths:
        raise UsageError("--inplace and --widths are two reports: ask for one at a time")
    if args.inplace and (args.batch or args.instruction or args.refine
                         or args.direction != "out2in" or args.explain_dedup):
        raise UsageError("--inplace reports the in-place fusions of one module: drop --batch, "
                         "--instruction, --refine, --direction and --explain-dedup")
    if args.batch:
        if args.widths:
            raise UsageError("--widths reads one FILE, not --batch")
        if args.instruction or args.computation or args.refine:
            raise UsageError("--batch reports every computation: drop --instruction, "
                             "--computation and --refine")
        return run_batch(args, args.file, options_of(args.direction, not args.textual_dedup,
                                          args.explain_dedup, args.allow_unknown_opcodes))
    if len(args.file) != 1:
        raise UsageError("give one FILE, or --batch to index several")
    if args.output:
        raise UsageError("--output is for --batch")
    engine(args)  # a usage check only: one module is one item, indexed here
    set_proven_dedup(not args.textual_dedup)
    text, source = read_file(args.file[0])
    if args.refine:
        if args.widths:
            raise UsageError("--widths and --refine are separate questions: give one")
        return _run_refine(args, text, source)
    module = parse_module(text, source, check_shapes=True,
                          allow_unknown_opcodes=args.allow_unknown_opcodes)
    if args.widths:
        if args.instruction or args.computation or args.direction != "out2in":
            raise UsageError("--widths checks every fusion operand and output: drop --instruction, "
                             "--computation and --direction")
        return run_widths(args, module)
    if args.computation and args.computation.removeprefix("%") not in module.computations:
        raise UsageError(f"no computation {args.computation!r} in the module")
    if args.inplace:
        return _run_inplace(args, module, source)
    if args.instruction:
        comp, inst = _find_instruction(module, args.instruction, args.computation)
        if args.direction == "out2in":
            results = [output_to_input(inst, comp, k, module=module)
                       for k in range(len(inst.shape.leaves()))]
        else:
            results = [input_to_output(inst, comp, k, module=module)
                       for k in range(len(inst.operands))]
        if args.json:
            print(json.dumps(_instruction_json(module, comp, inst, results, args.direction),
                             indent=1))
            return 0
        what = "output" if args.direction == "out2in" else "operand"
        print(f"instruction {inst.name} = {inst.opcode} in {comp.name}")
        for i, name in enumerate(inst.operands):
            print(f"  operand {i}: {name}")
        if not results:
            print(f"  (no {what}s)")
        for k, r in enumerate(results):
            print(f"{what} {k}:")
            body = r.to_text()
            print(_indent(body, "  ") if body else "  (no operands)")
            for note in r.notes:
                print(f"  note: {note}")
        return 0
    comps = [module.computation(args.computation)] if args.computation else \
        reported_computations(module)
    results_c = []
    with Progress(len(comps), "indexing", show_progress("json" if args.json else "text")) as bar:
        for c in comps:
            results_c.append(computation_indexing(module, c, args.direction))
            bar.advance()
    if args.json:
        doc = {"module": module.name, "computations": [_computation_json(ci) for ci in results_c]}
        if args.explain_dedup:
            doc["merges"] = [{"computation": ci.computation.name, "at": mg.where, "kept": mg.kept,
                              "dropped": mg.dropped, "reason": mg.reason}
                             for ci in results_c for mg in ci.merges]
        print(json.dumps(doc, indent=1))
        return 0
    print(f"module {module.name}" if module.name else "module (unnamed)")
    for ci in results_c:
        print(_computation_text(ci))
        if args.explain_dedup:
            if not ci.merges:
                print("  no maps merged by proof")
            for mg in ci.merges:
                print(_indent(str(mg), "  "))
    return 0


def _run_inplace(args: argparse.Namespace, module: HloModule, source: str) -> int:
    """`--inplace`: every in-place fusion with its verdict (`verifidx.analysis.inplace`); exit 1
    on a hazard (named on stderr with its position), 3 when only unknowns remain."""
    from ..analysis.inplace import HAZARD, UNKNOWN, inplace_hazards

    found = inplace_hazards(module)
    if args.computation:
        found = [f for f in found if f.computation == args.computation.removeprefix("%")]
    if args.json:
        print(json.dumps({"module": module.name, "fusions": [f.to_json() for f in found]},
                         indent=1))
    else:
        print(f"module {module.name or '(unnamed)'}: {len(found)} in-place "
              f"fusion{'' if len(found) == 1 else 's'}")
        for f in found:
            print(f"  {f.to_text()}")
    hazards = [f for f in found if f.status == HAZARD]
    if hazards:
        h = hazards[0]
        inst = module.computation(h.computation).instruction(h.fusion)
        assert h.hazard is not None
        print(f"error: {source}:{inst.line}:{inst.column}: fusion {h.fusion} runs in place and, "
              f"in the emitter's order as modelled, reads an element it has overwritten: "
              f"{h.hazard.to_text()} (not confirmed by running)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_UNKNOWN if any(f.status == UNKNOWN for f in found) else EXIT_OK


def _run_refine(args: argparse.Namespace, text: str, source: str) -> int:
    """`--refine`: the refined program's maps, and the proof that the parametric maps at the
    refined sizes equal them (exit 1 with the counterexample when refuted, 3 when unknown)."""
    from ..analysis.refinement import compare
    from ..stablehlo.refine import argument_sizes, refine, split_types

    if args.instruction or args.direction != "out2in" or args.computation:
        raise UsageError("--refine reports the root-to-parameter maps of every computation: "
                         "drop --instruction, --computation and --direction")
    if not is_mlir_text(text):
        raise UsageError("--refine needs StableHLO (MLIR) text")
    types = split_types(args.refine)
    dynamic = parse_stablehlo(text, source)
    if len(types) != len(dynamic.entry.parameters):
        raise UsageError(f"--refine gives {len(types)} types; {dynamic.entry.name} has "
                         f"{len(dynamic.entry.parameters)} arguments")
    static = refine(text, types, source)
    values = argument_sizes(dynamic, static)
    checks = compare(dynamic, static, values)
    results = [computation_indexing(static, c, "out2in") for c in reported_computations(static)]
    if args.json:
        doc = {"module": static.name,
               "computations": [_computation_json(ci) for ci in results],
               "refinement": {"types": types, "sizes": values,
                              "checks": [{"output_index": c.output, "parameter_number":
                                          c.parameter, "holds": c.holds, "message": c.message,
                                          "counterexample": c.counterexample}
                                         for c in checks]}}
        print(json.dumps(doc, indent=1))
    else:
        print(f"module {static.name} refined to {', '.join(types)}")
        for ci in results:
            print(_computation_text(ci))
        for c in checks:
            word = {True: "proved", False: "REFUTED", None: "unknown"}[c.holds]
            print(f"refinement output {c.output} parameter {c.parameter}: {word}"
                  + ("" if c.holds else f": {c.message}"))
    failed = [c for c in checks if c.holds is False]
    if failed:
        line, column = _function_position(text, dynamic.entry.name)
        print(f"error: {source}:{line}:{column}: the parametric maps of output "
              f"{failed[0].output}, parameter {failed[0].parameter} differ from the refined "
              f"program's: {failed[0].message}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_UNKNOWN if any(c.holds is None for c in checks) else EXIT_OK


def _function_position(text: str, name: str) -> tuple[int, int]:
    """(line, column) where function `name` is defined in MLIR text ((1, 1) if not found)."""
    found = re.search(r"func\.func\s+(?:(?:public|private|nested)\s+)?@" + re.escape(name)
                      + r"(?![\w.$-])", text)
    if found is None:
        return 1, 1
    before = text[:found.start()]
    return before.count("\n") + 1, found.start() - (before.rfind("\n") + 1) + 1


# -- --widths ----------------------------------------------------------------------------------


def run_widths(args: argparse.Namespace, module: HloModule) -> int:
    """`--widths`: per fusion operand (an unfused module: per entry parameter) and output, the
    range of its physical offset and whether a `--bits` index is safe for every size, else the
    smallest sizes at which it is not (exit 0 safe, 1 not, 3 unknown). The JSON is `--json`'s,
    each operand and output with a `widths` member (an operand's aligned with its `maps`), and
    a top-level `widths` summary."""
    from ..analysis.widths import checked_computations, module_widths

    if args.bits < 1:
        raise UsageError(f"--bits must be at least 1, not {args.bits}")
    checked = checked_computations(module)
    widths = module_widths(module, args.bits, computations=checked)
    if args.json:
        comps = [_computation_json(ci) for ci in checked]
        by_place: dict[tuple[str, int, int, int], list[dict[str, Any]]] = {}
        for o in widths.operands:
            by_place.setdefault((o.computation, o.output, o.parameter, o.leaf), []).append(
                _result(o))
        for comp in comps:
            for out in comp["outputs"]:
                key = (comp["name"], out["output_index"], -1, out["output_index"])
                out["widths"] = by_place.get(key, [])
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
    from .range import extreme_text

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
                           "maps": len(w.operands)}
    first = w.first
    if first is not None:
        o, over = first
        out.update(smallest=over.sizes, smallest_proven=w.smallest_proven,
                   computation=o.computation, access=o.access, output_index=o.output)
        if o.access == "read":
            out["parameter_number"] = o.parameter
        out.update(witness=over.point, value=over.value)
    return out


def _line(o: OperandWidth) -> str:
    from .range import extreme_text, names_text

    where = f"{o.computation} ({o.role}) output {o.output} " + (
        f"parameter {o.parameter} ({o.parameter_name}) {o.shape}" if o.access == "read" else
        f"written ({o.parameter_name}) {o.shape}") + (f" map {o.map_index}" if o.map_index
                                                     else "")
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
        return f"{kind} is safe for every size ({len(w.operands)} maps)"
    first = w.first
    if first is None:
        return f"{kind} is not proven safe: an operand is unknown"
    o, over = first
    where = f"{o.computation} parameter {o.parameter} ({o.parameter_name})" \
        if o.access == "read" else f"{o.computation} output {o.output} ({o.parameter_name})"
    if not over.sizes:
        return f"{kind} is not safe: {where} reaches offset {over.value}"
    proven = "" if w.smallest_proven else " (not shown to be the smallest)"
    if len(over.sizes) == 1 and w.smallest_proven:
        (name, value), = over.sizes.items()
        return f"{kind} is safe up to {name} = {value - 1:,}; at {name} = {value:,} {where} " \
               f"reaches offset {over.value:,}"
    return f"{kind} is not safe at {_sizes(over.sizes)}{proven}: {where} reaches offset " \
           f"{over.value:,}"
