"""`verifidx validate LOG`: prove another compiler's simplifications, or refute them.

LOG holds JSON lines: sympy text as Inductor prints it (`{"expr": ..., "var_ranges": {"x0":
"16"}, "size_ranges": {...}, "result": ...}`) or XLA map pairs (`{"input": MAP, "output":
MAP}`). One verdict per non-blank line, a malformed one included (`error`, with its line and
column). Exit 1 when a record is refuted, else 2 when one is an error (or the log cannot be
read), else 3 when one is unknown, else 0.

`verifidx validate BEFORE AFTER` compares two programs instead, pair by (output, parameter)
pair (`verifidx.clients.translation`): exit 0 when nothing differs (same or fewer reads), 1 on
a difference, 3 when only unknowns remain, 2 on bad input. A difference is confirmed by
running both programs where a runtime hook is given (`run_programs(args, confirm)`); without
one the line says "not confirmed (no runtime)".
"""

from __future__ import annotations

import argparse
import json
import os
import time
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from ..clients.translation import (
    DIFFER,
    FEWER,
    SAME,
    Confirm,
    PairVerdict,
    ProgramValidation,
    validate_programs,
)
from ..clients.translation import UNKNOWN as PAIR_UNKNOWN
from ..clients.validation import (
    ERROR,
    PROVED,
    REFUTED,
    UNKNOWN,
    UNSUPPORTED,
    Validation,
    validate_record,
)
from ..core.syntax import print_point, print_values
from ..hlo.module import HloModule
from .common import (
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNKNOWN,
    Subparsers,
    UsageError,
    add_command,
    github_escape,
    junit_document,
    read_file,
)

VERDICTS = (PROVED, REFUTED, UNKNOWN, UNSUPPORTED, ERROR)


def register(sub: Subparsers) -> None:
    p = add_command(sub, "validate", "prove or refute another compiler's simplifications "
                    "(Inductor sympy logs, XLA map pairs)", _run)
    p.add_argument("log", nargs="?", help="JSON lines file; - for stdin. With AFTER: the "
                   "program the compiler was given (HLO or StableHLO text)")
    p.add_argument("after", nargs="?", default=None,
                   help="the program it produced (HLO text): compare the two programs' reads "
                        "(verifidx.clients.translation)")
    p.add_argument("--format", choices=("text", "json", "junit", "github"), default="text")
    p.add_argument("--timeout-ms", type=int, default=2000,
                   help="Z3's budget per record, after the cheap decisions (an exhausted budget "
                        "is `unknown`, never `proved`)")
    p.add_argument("--xla-dump", metavar="DIR",
                   help="validate every pass of XLA's per-pass snapshots in DIR "
                        "(XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*)")
    p.add_argument("--rlimit", type=int, default=None,
                   help="Z3's resource limit per query (deterministic), with --xla-dump")


def _run(args: argparse.Namespace) -> int:
    if args.xla_dump is not None:
        return _run_dump(args)
    if args.log is None:
        raise UsageError("validate: give a LOG file, BEFORE AFTER, or --xla-dump DIR")
    if args.after is not None:
        from ..clients.xla_runtime import confirm

        return run_programs(args, confirm=confirm)
    text, source = read_file(args.log)
    rows: list[tuple[int, Validation]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rows.append((number, validate_record(line, source, number, args.timeout_ms)))
    if args.format == "json":
        print(json.dumps({"records": [{"line": n, **v.to_json()} for n, v in rows],
                          "summary": _summary(rows)}, indent=1))
    elif args.format == "junit":
        print(_junit(rows, source))
    elif args.format == "github":
        for n, v in rows:
            if v.verdict in (REFUTED, UNKNOWN, ERROR):
                print(_github(n, v, source))
        print(_summary_line(rows))
    else:
        for n, v in rows:
            print(_text(n, v, source))
        print(_summary_line(rows))
    verdicts = {v.verdict for _, v in rows}
    if REFUTED in verdicts:
        return EXIT_FAILED
    if ERROR in verdicts:
        return EXIT_ERROR
    return EXIT_UNKNOWN if UNKNOWN in verdicts else EXIT_OK


def _summary(rows: list[tuple[int, Validation]]) -> dict[str, int]:
    counts = Counter(v.verdict for _, v in rows)
    out = {k: counts.get(k, 0) for k in VERDICTS}
    out["fewer_divisions"] = sum(1 for _, v in rows if v.fewer_divisions)
    return out


def _summary_line(rows: list[tuple[int, Validation]]) -> str:
    s = _summary(rows)
    return (f"{len(rows)} records: " + ", ".join(f"{s[k]} {k}" for k in VERDICTS)
            + f"; verifidx keeps fewer divisions on {s['fewer_divisions']}")


def _point(v: Validation) -> str:
    def value(x: object) -> str:  # a map's results are a tuple, an expression's one number
        if x is None:  # a map outside its domain
            return "nothing (outside its domain)"
        return print_values(x) if isinstance(x, (list, tuple)) else str(x)

    return (f"{print_point(v.counterexample or {})}: input gives {value(v.expr_value)}, "
            f"result gives {value(v.result_value)}")


def _where(n: int, v: Validation, source: str) -> str:
    return f"{source}:{n}" + (f":{v.column}" if v.column is not None else "")


def _text(n: int, v: Validation, source: str) -> str:
    if v.verdict == ERROR:  # as the CLI's other errors read: file:line:column: what
        return f"{_where(n, v, source)}: error: {v.reason}"
    head = f"{source}:{n}: {v.verdict}"
    lines = [head + (f" ({v.reason})" if v.reason and v.verdict != PROVED else "")]
    if v.verdict == REFUTED:
        lines.append(f"  counterexample: {_point(v)}")
    if v.simplified is not None:
        d = v.divisions
        more = "fewer than the result" if v.fewer_divisions else "not fewer than the result"
        lines.append(f"  verifidx: {v.simplified}  (divisions: input {d['expr']}, result "
                     f"{d['result']}, verifidx {d['verifidx']}: {more})")
    return "\n".join(lines)


def _junit(rows: list[tuple[int, Validation]], source: str) -> str:
    """One testsuite for the log, one testcase per record: refuted is a failure, a malformed
    record an error, unknown and unsupported are skipped with the reason."""
    s = _summary(rows)
    root = ET.Element("testsuites", name="verifidx validate", tests=str(len(rows)),
                      failures=str(s[REFUTED]), errors=str(s[ERROR]))
    suite = ET.SubElement(root, "testsuite", name=source, tests=str(len(rows)),
                          failures=str(s[REFUTED]), errors=str(s[ERROR]),
                          skipped=str(s[UNKNOWN] + s[UNSUPPORTED]))
    classname = os.path.splitext(os.path.basename(source))[0]
    for n, v in rows:
        case = ET.SubElement(suite, "testcase", classname=classname, name=f"line {n}",
                             file=source, line=str(n), time=f"{v.seconds:.3f}")
        if v.verdict == REFUTED:
            fail = ET.SubElement(case, "failure", type=REFUTED, message=v.reason)
            fail.text = _text(n, v, source)
        elif v.verdict == ERROR:
            ET.SubElement(case, "error", type=ERROR, message=_text(n, v, source))
        elif v.verdict in (UNKNOWN, UNSUPPORTED):
            ET.SubElement(case, "skipped", message=f"{v.verdict}: {v.reason}")
    return junit_document(root)


def _github(n: int, v: Validation, source: str) -> str:
    """A GitHub Actions workflow command on the record's line: error when refuted or
    malformed, warning when unknown."""
    level = "warning" if v.verdict == UNKNOWN else "error"
    if v.verdict == ERROR:
        col = f",col={v.column}" if v.column is not None else ""
        return (f"::error file={github_escape(source, True)},line={n}{col},"
                f"title={github_escape('verifidx: malformed record', prop=True)}::"
                f"{github_escape(v.reason)}")
    title = github_escape(f"verifidx: simplification {v.verdict}", prop=True)
    body = f"{v.text}: {v.verdict}" + (f" ({v.reason})" if v.reason else "")
    if v.verdict == REFUTED:
        body += f"\ncounterexample: {_point(v)}"
    return (f"::{level} file={github_escape(source, True)},line={n},title={title}::"
            f"{github_escape(body)}")


# -- two programs (translation validation) -------------------------------------------------------

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
        print(_programs_junit(result, confirmed, before_source, after_source))
    elif args.format == "github":
        for pv in result.pairs:
            if pv.verdict in (DIFFER, PAIR_UNKNOWN):
                print(_programs_github(pv, confirmed, after_source))
        print(_programs_summary(result))
    else:
        for pv in result.pairs:
            print(_pair_line(pv, confirmed.get((pv.output, pv.parameter))))
        print(_programs_summary(result))
    verdict = result.verdict()
    if verdict == DIFFER:
        return EXIT_FAILED
    return EXIT_UNKNOWN if verdict == PAIR_UNKNOWN else EXIT_OK


def _module(text: str, source: str) -> HloModule:
    """HLO or StableHLO text, errors naming `source` and the line."""
    from ..stablehlo import parse_module

    return parse_module(text, source)


def _pair_line(pv: PairVerdict, confirmation: str | None = None) -> str:
    """`output O, parameter P: VERDICT (reason)`, and the counterexample on the next line."""
    line = f"output {pv.output}, parameter {pv.parameter}: {pv.verdict}"
    if pv.verdict != SAME or pv.value_equality:
        line += f" ({pv.reason})"
    if pv.counterexample is not None:
        line += f"\n  counterexample: {pv.counterexample.describe()}"
        line += f"\n  {confirmation or NO_RUNTIME}"
    return line


def _programs_summary(result: ProgramValidation) -> str:
    s = result.summary()
    return (f"{len(result.pairs)} pairs: " + ", ".join(f"{s[k]} {k}" for k in
                                                      (SAME, FEWER, DIFFER, PAIR_UNKNOWN))
            + f"; verdict: {result.verdict()}")


def _programs_junit(result: ProgramValidation, confirmed: dict[tuple[int, int], str],
                    before: str, after: str) -> str:
    """One testcase per pair: differ is a failure, unknown skipped with its reason."""
    s = result.summary()
    root = ET.Element("testsuites", name="verifidx validate", tests=str(len(result.pairs)),
                      failures=str(s[DIFFER]), errors="0")
    suite = ET.SubElement(root, "testsuite", name=f"{before} -> {after}",
                          tests=str(len(result.pairs)), failures=str(s[DIFFER]), errors="0",
                          skipped=str(s[PAIR_UNKNOWN]))
    for pv in result.pairs:
        case = ET.SubElement(suite, "testcase", classname="translation",
                             name=f"output {pv.output}, parameter {pv.parameter}", file=after)
        if pv.verdict == DIFFER:
            fail = ET.SubElement(case, "failure", type=DIFFER, message=pv.reason)
            fail.text = _pair_line(pv, confirmed.get((pv.output, pv.parameter)))
        elif pv.verdict == PAIR_UNKNOWN:
            ET.SubElement(case, "skipped", message=f"{PAIR_UNKNOWN}: {pv.reason}")
    return junit_document(root)


def _programs_github(pv: PairVerdict, confirmed: dict[tuple[int, int], str], after: str
                     ) -> str:
    level = "error" if pv.verdict == DIFFER else "warning"
    title = github_escape(f"verifidx: output {pv.output}, parameter {pv.parameter} "
                          f"{pv.verdict}", prop=True)
    body = _pair_line(pv, confirmed.get((pv.output, pv.parameter)))
    return f"::{level} file={github_escape(after, True)},title={title}::{github_escape(body)}"


# -- --xla-dump DIR: every pass of XLA's pipeline against its input -----------------------------


def _run_dump(args: argparse.Namespace) -> int:
    """Per module, each snapshot that changed against the one before; the first pass whose
    output reads differently from its input is named with its counterexample. Exit 1 on a
    difference, else 3 when a pass is unknown, else 0; 2 when DIR holds no snapshot."""
    from ..clients.xla_dump import VERDICTS, validate_dump
    from ..clients.xla_runtime import confirm

    start = time.process_time()
    try:
        modules = validate_dump(args.xla_dump, timeout_ms=args.timeout_ms, rlimit=args.rlimit,
                                confirm=confirm)
    except ImportError as e:  # the translation validator is not part of this build
        raise UsageError(f"--xla-dump: not yet supported here ({e})") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"--xla-dump {args.xla_dump}: {getattr(e, 'strerror', None) or e}") \
            from None
    passes = [p for m in modules for p in m.passes]
    counts = Counter(p.verdict for p in passes)
    summary = {"modules": len(modules), "passes": len(passes),
               **{k.replace(" ", "_"): counts.get(k, 0) for k in VERDICTS},
               "seconds": round(time.process_time() - start, 3)}
    line = (f"{summary['modules']} modules, {summary['passes']} passes compared: "
            + ", ".join(f"{counts.get(k, 0)} {k}" for k in VERDICTS)
            + f"; {summary['seconds']:.1f} s CPU")
    if args.format == "json":
        print(json.dumps({"modules": [{"module": m.name, "id": m.module_id,
                                       "first_difference": (m.first_difference.name
                                                            if m.first_difference else None),
                                       "passes": [p.to_json() for p in m.passes]}
                                      for m in modules], "summary": summary}, indent=1))
    elif args.format == "junit":
        print(_dump_junit(modules, summary))
    else:
        for m in modules:
            for p in m.passes:
                if args.format == "github":
                    if p.verdict in ("differ", "unknown"):
                        level = "error" if p.verdict == "differ" else "warning"
                        title = github_escape(f"verifidx: pass {p.name} {p.verdict}", prop=True)
                        print(f"::{level} file={github_escape(p.pair.after.path, True)},"
                              f"title={title}::{github_escape(_dump_text(m.name, p))}")
                elif p.verdict != "same" or p is m.first_difference:
                    print(_dump_text(m.name, p))
            if args.format == "text" and m.first_difference is not None:
                print(f"{m.name}: first pass that reads differently: {m.first_difference.name}")
        print(line)
    if counts.get("differ"):
        return EXIT_FAILED
    return EXIT_UNKNOWN if counts.get("unknown") else EXIT_OK


def _dump_text(module: str, p: Any) -> str:
    head = f"{module} {p.pair.after.sequence:04d} {p.name}: {p.verdict}"
    lines = [head + (f" ({p.reason})" if p.reason else "")]
    d = p.difference
    if d is not None:
        cx = d.counterexample
        lines.append(f"  output {d.output}, parameter {d.parameter}: {d.reason}")
        if cx is not None:
            at = ", ".join(f"{k} = {v}" for k, v in cx.values.items())
            lines.append(f"  counterexample: output {cx.output} element "
                         f"{print_values(cx.point)} reads parameter {cx.parameter} element "
                         f"{print_values(cx.element)} in the {cx.read_by} program only"
                         + (f" at {at}" if at else ""))
    if p.confirmation is not None:
        lines.append(f"  {p.confirmation}")
    return "\n".join(lines)


def _dump_junit(modules: list[Any], summary: dict[str, Any]) -> str:
    """A testsuite per module, a testcase per pass: differ is a failure, unknown skipped."""
    root = ET.Element("testsuites", name="verifidx validate --xla-dump",
                      tests=str(summary["passes"]), failures=str(summary["differ"]))
    for m in modules:
        failures = sum(p.verdict == "differ" for p in m.passes)
        suite = ET.SubElement(root, "testsuite", name=m.name, tests=str(len(m.passes)),
                              failures=str(failures),
                              skipped=str(sum(p.verdict == "unknown" for p in m.passes)))
        for p in m.passes:
            case = ET.SubElement(suite, "testcase", classname=m.name,
                                 name=f"{p.pair.after.sequence:04d} {p.name}",
                                 file=p.pair.after.path, time=f"{p.seconds:.3f}")
            if p.verdict == "differ":
                fail = ET.SubElement(case, "failure", type="differ", message=p.name)
                fail.text = _dump_text(m.name, p)
            elif p.verdict == "unknown":
                ET.SubElement(case, "skipped", message=f"unknown: {p.reason}")
    return junit_document(root)
