"""What every subcommand shares: input reading, usage errors, verdict output and exit codes.

Subcommand modules raise `VerifidxError`s (`ParseError`, `UsageError`, ...) and return an exit
code; `verifidx.cli.main` is the one place that turns errors into `error: ...` lines and codes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.errors import ParseError, VerifidxError, decode_text
from ..core.indexing_map import IndexingMap
from ..core.syntax import parse_affine_map, parse_map
from ..core.work import Engine, Progress, engine_for, run, show_progress
from ..hlo.module import HloModule
from ..hlo.parser import parse_hlo
from .batch import expand, file_key, index_item, read_records, summarize, unknown_record

EXIT_OK = 0
EXIT_FAILED = 1  # a check, proof or comparison failed
EXIT_ERROR = 2  # bad input or usage: one `error: ...` line on stderr
EXIT_UNKNOWN = 3  # the solver could not decide
EXIT_INTERNAL = 70  # a bug in verifidx (EX_SOFTWARE)

Run = Callable[[argparse.Namespace], int]

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction


class UsageError(VerifidxError):
    """Bad command-line usage (exit 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is a UsageError (one line, exit 2), not argparse's exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def add_command(sub: Subparsers, name: str, help_text: str, run: Run) -> argparse.ArgumentParser:
    """A subcommand parser whose `run(args) -> exit code` the dispatcher calls."""
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.set_defaults(run=run)
    return p


def read_text(arg: str | None, what: str = "map") -> tuple[str, str]:
    """Text from an argument, a file path (`@path` or an existing file), or stdin (`-`/none)."""
    if arg is None or arg == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError(f"no {what} given (pass it as an argument or on stdin)")
        return read_stdin(), "<stdin>"
    path = arg[1:] if arg.startswith("@") else arg
    if arg.startswith("@") or ("\n" not in arg and len(arg) < 4096 and os.path.isfile(path)):
        try:
            with open(path, "rb") as fh:
                return decode_text(fh.read(), path), path
        except OSError as err:
            raise UsageError(f"cannot read {path}: {err.strerror}") from None
    return arg, "<argument>"


def read_stdin() -> str:
    """stdin as UTF-8 text whatever the locale (its bytes, where there are bytes to read)."""
    raw = getattr(sys.stdin, "buffer", None)
    return decode_text(raw.read(), "<stdin>") if raw is not None else sys.stdin.read()


def read_file(path: str) -> tuple[str, str]:
    """A whole input file (`-` is stdin) as UTF-8 text, with the name errors should cite."""
    if path == "-":
        return read_stdin(), "<stdin>"
    try:
        with open(path, "rb") as fh:
            return decode_text(fh.read(), path), path
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None


def load_map(arg: str | None, args: argparse.Namespace | None = None) -> IndexingMap:
    """A map from text, a file or stdin. An MLIR `affine_map<...>` without a domain comment
    takes its bounds from `--dim-sizes`/`--symbol-sizes` (`[0, size - 1]`, as XLA's
    FromTensorSizes) where the command has them."""
    text, source = read_text(arg)
    dim_sizes = getattr(args, "dim_sizes", None)
    symbol_sizes = getattr(args, "symbol_sizes", None)
    if dim_sizes is None and symbol_sizes is None or "//" in text \
            or not text.lstrip().startswith("affine_map<"):
        return parse_map(text, source)
    affine = parse_affine_map(text, source)
    dims, syms = ints(dim_sizes or "", "dim-sizes"), ints(symbol_sizes or "", "symbol-sizes")
    for flag, sizes, wanted in (("dim-sizes", dims, affine.num_dims),
                                ("symbol-sizes", syms, affine.num_symbols)):
        if len(sizes) != wanted or any(n < 1 for n in sizes):
            raise UsageError(f"--{flag}: the affine_map of {source} needs {wanted} sizes of at "
                             f"least 1, got {len(sizes)}: {','.join(map(str, sizes))}")
    return IndexingMap.from_tensor_sizes(affine, dims, syms)


def add_affine_sizes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dim-sizes", metavar="N,...",
                   help="bounds of an affine_map<...> without a domain: d_i in [0, N_i - 1]")
    p.add_argument("--symbol-sizes", metavar="N,...",
                   help="likewise for its symbols (range variables)")


def ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--{what} takes comma-separated integers, got {text!r}") from None


class Verdict(Protocol):
    """What `verdict_json` reads of a `verifidx.solve.smt.Verdict` (named here so that the commands
    that never ask the solver do not load it)."""

    holds: bool | None
    counterexample: dict[str, int] | None
    lhs_value: object
    rhs_value: object
    message: str
    seconds: float


def verdict_json(v: Verdict) -> dict[str, object]:
    return {"holds": v.holds, "counterexample": v.counterexample, "lhs_value": v.lhs_value,
            "rhs_value": v.rhs_value, "message": v.message, "seconds": round(v.seconds, 6)}


def junit_document(root: ET.Element) -> str:
    """A JUnit XML report as `--format junit` prints it: indented, with its declaration."""
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def github_escape(text: str, prop: bool = False) -> str:
    """Text for a GitHub Actions workflow command (`prop`: a property such as title=)."""
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return out.replace(":", "%3A").replace(",", "%2C") if prop else out


def verdicts_exit(holds: list[bool | None]) -> int:
    """1 when any answer is no, else 3 when any is unknown, else 0."""
    if any(h is False for h in holds):
        return EXIT_FAILED
    if any(h is None for h in holds):
        return EXIT_UNKNOWN
    return EXIT_OK


# -- HLO input shared by the commands that read modules ------------------------------------------

#: whitespace and comments (`// ...`, `/* ... */`) before the first token of a text
_LEADING = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
#: the first token of HLO text: the header, an entry, or a computation `name {` / `name (`
_HLO_START = re.compile(r"(?:HloModule|ENTRY)\b|%?[A-Za-z_][\w.\-]*\s*[({]")


def add_opcode_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-unknown-opcodes", action="store_true",
                   help="treat a word that is no HLO opcode as an unmodelled op instead of an "
                        "error, e.g. for text from a newer XLA")


def looks_like_hlo(text: str) -> bool:
    """HLO text, after leading comments; map text starts with `(` (or a keyword) instead."""
    start = _LEADING.match(text)
    rest = text[start.end():] if start else text
    return _HLO_START.match(rest) is not None


def read_hlo(text: str, source: str, allow_unknown_opcodes: bool = False) -> HloModule:
    """The module, validated as `verifidx indexing` validates it (ParseError with the place),
    so that a module `indexing` refuses as malformed is refused by `tile` and `coalescing` too:
    declared shapes checked against the ops' rules, opcodes checked."""
    return parse_hlo(text, source, check_shapes=True, allow_unknown_opcodes=allow_unknown_opcodes)


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """Where independent work items run (`verifidx.core.work`): in this process by default."""
    p.add_argument("--workers", type=int, metavar="N",
                   help="run the work items on a local Dask cluster of N worker processes "
                        "(needs verifidx[distributed])")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the work items on the Dask scheduler at ADDRESS (default: "
                        "$DASK_SCHEDULER_ADDRESS when set; needs verifidx[distributed])")


def engine(args: argparse.Namespace) -> Engine:
    return engine_for(getattr(args, "workers", None), getattr(args, "scheduler", None))


def add_batch_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", action="store_true",
                   help="every FILE (directories: their *.hlo, *.mlir, *.stablehlo; @LIST: the "
                        "paths in LIST): one JSON Lines record per file in --output, a summary "
                        "on stdout; a rerun reuses the records that are current")
    p.add_argument("-o", "--output", metavar="OUT.jsonl",
                   help="--batch: where the records go (only a file an earlier --batch run "
                        "wrote is ever replaced)")
    add_engine_flags(p)


# -- --batch: many files, one record each (verifidx.cli.batch) --------------------------------


def run_batch(args: argparse.Namespace, paths: list[str], options: dict[str, object]) -> int:
    """Every file's record, in the order of the files, whatever ran where; the records already
    in --output (or in its `.partial` file, from an interrupted run) that are current are kept."""
    if not args.output:
        raise UsageError("--batch needs --output OUT.jsonl (where the records go)")
    where = engine(args)
    files = expand(paths)
    if not files:
        raise UsageError("no module files found")
    out = Path(args.output)
    partial = out.with_name(out.name + ".partial")
    if out.resolve() in {Path(f).resolve() for f in files}:
        raise UsageError(f"--output {out} is one of the input files")
    known: dict[str, str] = {}
    for path in (out, partial):
        found = read_records(path)
        if found is None:
            raise UsageError(f"{path} exists and is not verifidx --batch output; choose "
                             "another --output or remove it")
        known.update(found)
    start = time.perf_counter()
    lines: list[str | None] = []
    todo: list[tuple[int, str, str]] = []  # (position, file, key) of the items to run
    items: list[str] = []
    reused = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError as err:
            lines.append(json.dumps({"file": f, "key": None, "status": "error", "error": {
                "message": f"cannot read: {err.strerror}", "line": None, "column": None}},
                separators=(",", ":")))
            continue
        key = file_key(data, options)
        cached = known.get(key)
        if cached is not None and json.loads(cached)["file"] == f:
            lines.append(cached)
            reused += 1
            continue
        try:
            text = decode_text(data, f)
        except ParseError as err:
            lines.append(json.dumps({"file": f, "key": key, "status": "error", "error": {
                "message": err.message, "line": err.line, "column": err.column}},
                separators=(",", ":")))
            continue
        todo.append((len(lines), f, key))
        items.append(json.dumps({"file": f, "key": key, "text": text, "options": options}))
        lines.append(None)
    text_out = not args.json
    with Progress(len(items), str(options["kind"]), show_progress("text" if text_out else "json")
                  ) as bar, open(partial, "a", encoding="utf-8") as log:
        for outcome in run(index_item, items, where, bar):
            position, f, key = todo[outcome.index]
            line = outcome.text if outcome.text is not None else \
                unknown_record(f, key, outcome.error or "no answer")
            lines[position] = line
            log.write(line + "\n")
            log.flush()
            if text_out:
                bar.echo(_record_line(json.loads(line)))
    done = [ln for ln in lines if ln is not None]
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(ln + "\n" for ln in done), encoding="utf-8")
    os.replace(tmp, out)
    partial.unlink()
    summary = summarize(done, time.perf_counter() - start, reused)
    summary["output"] = str(out)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        unknown = ", ".join(f"{op} {n}" for op, n in summary["unknown_indexing"].items())
        print(f"{summary['files']} files: {summary['ok']} done, {summary['error']} "
              f"errors, {summary['unknown']} unknown ({reused} reused); {summary['ops']} ops; "
              + (f"unknown indexing: {unknown or 'none'}; " if options["kind"] == "indexing"
                 else "") + f"{summary['seconds']:.1f}s; records in "
              f"{out}")
    if summary["unknown"]:
        return EXIT_UNKNOWN
    return EXIT_FAILED if summary["error"] else EXIT_OK


def _record_line(rec: dict[str, Any]) -> str:
    if rec["status"] == "ok" and "tiles" in rec:
        t = rec["tiles"]
        proved = sum(1 for i in t["instructions"] if i["proof"] == "proved")
        return (f"{rec['file']}: {t['computation']}: {len(t['instructions'])} tiles "
                f"({proved} proved), {len(t['untiled'])} values without a tile")
    if rec["status"] == "ok" and "fusions" in rec:
        operands = [o for f in rec["fusions"] for o in f["operands"]]
        slow = sum(1 for o in operands if not o["coalesced"])
        return (f"{rec['file']}: {len(rec['fusions'])} fusions, {slow} of {len(operands)} "
                f"operands not coalesced")
    if rec["status"] == "ok":
        unknown = sum(rec["unknown_indexing"].values())
        return f"{rec['file']}: {rec['ops']} ops, {unknown} with unknown indexing"
    if rec["status"] == "error":
        err = rec["error"]
        place = f":{err['line']}:{err['column']}" if err["line"] is not None else ""
        return f"{rec['file']}{place}: error: {err['message']}"
    return f"{rec['file']}: unknown: {rec['reason']}"
