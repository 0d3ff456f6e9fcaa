"""StableHLO on the command line: `verifidx indexing FILE.mlir --refine TYPES`.

Reading StableHLO needs nothing here (the `indexing` and `graph` commands read either language
through `verifidx.stablehlo.parse_module`); this module adds `--refine` to `indexing`: the
program is refined to the given argument types by StableHLO's own passes, the static program's
maps are reported as usual, and the tool proves that the parametric maps at the refined sizes are
those maps (exit 1 with the counterexample when they are not, 3 when the solver cannot tell).
"""

from __future__ import annotations

import argparse
import json
import sys

from verifidx.cli import COMMANDS, UsageError


def _install() -> None:
    help_text, configure, run = COMMANDS["indexing"]

    def configure_with_refine(p: argparse.ArgumentParser) -> None:
        configure(p)
        p.add_argument("--refine", metavar="TYPES",
                       help="StableHLO only: refine to these argument types "
                            "('tensor<16x4xf32>,tensor<4xf32>') and prove the parametric maps "
                            "equal the refined program's")

    def run_with_refine(args: argparse.Namespace) -> int:
        if not getattr(args, "refine", None):
            return run(args)
        return _run_refine(args, run)

    COMMANDS["indexing"] = (help_text, configure_with_refine, run_with_refine)


def _run_refine(args: argparse.Namespace, run: object) -> int:
    from verifidx.hlo.cli import _computation_json, _read
    from verifidx.hlo.computation_maps import computation_indexing, reported_computations
    from verifidx.stablehlo import is_mlir_text, parse_stablehlo
    from verifidx.stablehlo.refine import argument_sizes, compare, refine, split_types

    if args.instruction or args.direction != "out2in":
        raise UsageError("--refine reports root-to-parameter maps: drop --instruction/--direction")
    text, source = _read(args.file)
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
    comps = reported_computations(static)
    results = [computation_indexing(static, c, "out2in") for c in comps]
    failed = [c for c in checks if c.holds is False]
    unknown = [c for c in checks if c.holds is None]
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
        from verifidx.hlo.cli import _computation_text

        print(f"module {static.name} refined to {', '.join(types)}")
        for ci in results:
            print(_computation_text(ci))
        for c in checks:
            word = {True: "proved", False: "REFUTED", None: "unknown"}[c.holds]
            print(f"refinement output {c.output} parameter {c.parameter}: {word}"
                  + ("" if c.holds else f": {c.message}"))
    if failed:
        print(f"error: {source}: the parametric maps differ from the refined program's "
              f"({failed[0].message})", file=sys.stderr)
        return 1
    return 3 if unknown else 0


_install()
