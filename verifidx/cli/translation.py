"""`verifidx validate BEFORE AFTER`: the program a compiler was given against the one it
produced, pair by (output, parameter) pair (`verifidx.clients.translation`).

Exit 0 when nothing differs (same or fewer reads), 1 on a difference, 3 when only unknowns
remain, 2 on bad input (one `error:` line). A difference is confirmed by running both
programs where a runtime hook is given (`confirm`); without one the line says "not
confirmed (no runtime)".
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET

from ..clients.translation import (
    DIFFER,
    FEWER,
    SAME,
    UNKNOWN,
    Confirm,
    PairVerdict,
    ProgramValidation,
    validate_programs,
)
from .common import EXIT_FAILED, EXIT_OK, EXIT_UNKNOWN, github_escape, read_file

NO_RUNTIME = "not confirmed (no runtime)"


def run_programs(args: argparse.Namespace, confirm: Confirm | None = None) -> int:
    """Validate `args.log` (BEFORE) against `args.after` and print in `args.format`."""
    before, before_source = read_file(args.log)
    after, after_source = read_file(args.after)
    result = validate_programs(_module(before, before_source), _module(after, after_source),
                               timeout_ms=args.timeout_ms)
    confirmed = {}
    for pv in result.pairs:
        if pv.counterexample is not None:
            confirmed[(pv.output, pv.parameter)] = NO_RUNTIME if confirm is None else \
                confirm(before, after, pv.counterexample)
    if args.format == "json":
        out = result.to_json()
        for row in out["pairs"]:  # type: ignore[attr-defined]
            key = (row["output"], row["parameter"])
            if key in confirmed:
                row["confirmation"] = confirmed[key]
        print(json.dumps(out, indent=1))
    elif args.format == "junit":
        print(_junit(result, confirmed, before_source, after_source))
    elif args.format == "github":
        for pv in result.pairs:
            if pv.verdict in (DIFFER, UNKNOWN):
                print(_github(pv, confirmed, after_source))
        print(summary_line(result))
    else:
        for pv in result.pairs:
            print(text_line(pv, confirmed.get((pv.output, pv.parameter))))
        print(summary_line(result))
    verdict = result.verdict()
    if verdict == DIFFER:
        return EXIT_FAILED
    return EXIT_UNKNOWN if verdict == UNKNOWN else EXIT_OK


def _module(text: str, source: str):  # type: ignore[no-untyped-def]
    from ..stablehlo import parse_module

    return parse_module(text, source)


def text_line(pv: PairVerdict, confirmation: str | None = None) -> str:
    """`output O, parameter P: VERDICT (reason)`, and the counterexample on the next line."""
    line = f"output {pv.output}, parameter {pv.parameter}: {pv.verdict}"
    if pv.verdict != SAME or pv.value_equality:
        line += f" ({pv.reason})"
    if pv.counterexample is not None:
        line += f"\n  counterexample: {pv.counterexample.describe()}"
        line += f"\n  {confirmation or NO_RUNTIME}"
    return line


def summary_line(result: ProgramValidation) -> str:
    s = result.summary()
    return (f"{len(result.pairs)} pairs: " + ", ".join(f"{s[k]} {k}" for k in
                                                      (SAME, FEWER, DIFFER, UNKNOWN))
            + f"; verdict: {result.verdict()}")


def _junit(result: ProgramValidation, confirmed: dict[tuple[int, int], str], before: str,
           after: str) -> str:
    """One testcase per pair: differ is a failure, unknown skipped with its reason."""
    s = result.summary()
    root = ET.Element("testsuites", name="verifidx validate", tests=str(len(result.pairs)),
                      failures=str(s[DIFFER]), errors="0")
    suite = ET.SubElement(root, "testsuite", name=f"{before} -> {after}",
                          tests=str(len(result.pairs)), failures=str(s[DIFFER]), errors="0",
                          skipped=str(s[UNKNOWN]))
    for pv in result.pairs:
        case = ET.SubElement(suite, "testcase", classname="translation",
                             name=f"output {pv.output}, parameter {pv.parameter}", file=after)
        if pv.verdict == DIFFER:
            fail = ET.SubElement(case, "failure", type=DIFFER, message=pv.reason)
            fail.text = text_line(pv, confirmed.get((pv.output, pv.parameter)))
        elif pv.verdict == UNKNOWN:
            ET.SubElement(case, "skipped", message=f"{UNKNOWN}: {pv.reason}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def _github(pv: PairVerdict, confirmed: dict[tuple[int, int], str], after: str) -> str:
    level = "error" if pv.verdict == DIFFER else "warning"
    title = github_escape(f"verifidx: output {pv.output}, parameter {pv.parameter} "
                          f"{pv.verdict}", prop=True)
    body = text_line(pv, confirmed.get((pv.output, pv.parameter)))
    return f"::{level} file={github_escape(after, True)},title={title}::{github_escape(body)}"
